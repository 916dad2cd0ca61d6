// models-onnx.test.js — the second engine of issue 21: the tiny GPT-2 of
// tests/golden/models/gpt2 as an ONNX graph (bench/onnx-models.mjs
// buildGpt2Onnx, the graph `npm run bench -- --only lm` times) run on
// onnxruntime-web (wasm, one thread), against the float64 reference
// (expected.json) and against ours (lab.loadModel), within 1e-3; with the
// key/value cache: prefill 5 tokens, then decode 3 one by one, against one
// full forward (and the last-position graphs: lastOnly, lastBlockRow).
// Every attention op the builder offers (com.microsoft Attention,
// MultiHeadAttention, GroupQueryAttention) and both GELU forms.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { init } from '../../web/node.js';
import { buildGpt2Onnx, readSafetensorsF32, gpt2CacheNames, GPT2_ATTENTION_OPS } from '../../bench/onnx-models.mjs';

const require = createRequire(import.meta.url);
const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'models', 'gpt2');
const config = JSON.parse(readFileSync(join(DIR, 'config.json'), 'utf8'));
const weightBytes = readFileSync(join(DIR, 'model.safetensors'));
const tensors = readSafetensorsF32(weightBytes);
const expected = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));
const { n_layer: N, n_head: H, n_embd: E, vocab_size: V } = config;
const D = E / H;
const TOL = 1e-3;
const PREFILL = 5;
const DECODE = 3;

let ort;
let lab;
let model;
const ours = []; // ours' logits [L·V] per case
const worst = {};

function maxDiffRows(got, want, rows, gotRow0 = 0) {
  // got: Float32Array rows×V from row gotRow0; want: [L][V] (array) or Float32Array L×V
  let m = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    for (let j = 0; j < V; j++) {
      const w = Array.isArray(want) ? want[r][j] : want[r * V + j];
      const d = Math.abs(got[(gotRow0 + i) * V + j] - w);
      if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
    }
  }
  return m;
}
const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
function note(name, v) {
  worst[name] = Math.max(worst[name] ?? 0, v);
}

beforeAll(async () => {
  ort = await import('onnxruntime-web');
  const dist = dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
  ort.env.wasm.wasmPaths = pathToFileURL(dist + sep).href;
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.logLevel = 'error';
  lab = await init({ backend: 'wasm' });
  model = await lab.loadModel({ config, weights: weightBytes });
  for (const c of expected.cases) ours.push(model.forwardSync(c.ids, { attentions: false }).logits.data);
});

afterAll(() => {
  model?.dispose();
  // eslint-disable-next-line no-console
  console.log(`GPT-2 on onnxruntime-web (tiny checkpoint), max |Δ|:\n${Object.entries(worst).map(([k, v]) => `  ${k}: ${v.toExponential(2)}`).join('\n')}`);
});

const session = (opts) => ort.InferenceSession.create(buildGpt2Onnx(config, tensors, opts), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
const idsTensor = (ids) => new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);

test('ours (lab.loadModel) agrees with the float64 reference', () => {
  expected.cases.forEach((c, k) => {
    const d = maxDiffRows(ours[k], c.logits, range(0, c.ids.length));
    note('ours vs float64', d);
    expect(d).toBeLessThan(TOL);
  });
});

describe.each(GPT2_ATTENTION_OPS)('attention %s', (attention) => {
  test('full forward (no cache): vs float64 and vs ours', async () => {
    for (const gelu of ['fast', 'tanh']) {
      const s = await session({ past: false, attention, gelu });
      for (const [k, c] of expected.cases.entries()) {
        const out = await s.run({ input_ids: idsTensor(c.ids) });
        expect(out.logits.dims).toEqual([1, c.ids.length, V]);
        const rows = range(0, c.ids.length);
        const dRef = maxDiffRows(out.logits.data, c.logits, rows);
        const dOurs = maxDiffRows(out.logits.data, ours[k], rows);
        note(`ORT ${attention} ${gelu} full vs float64`, dRef);
        note(`ORT ${attention} ${gelu} full vs ours`, dOurs);
        expect(dRef).toBeLessThan(TOL);
        expect(dOurs).toBeLessThan(TOL);
      }
      await s.release();
    }
  });

  test(`with the cache: prefill ${PREFILL}, then ${DECODE} tokens one by one = one full forward`, async () => {
    const s = await session({ past: true, attention });
    const full = await session({ past: false, attention });
    const last = await session({ past: true, attention, lastOnly: true });
    const lastRow = await session({ past: true, attention, lastOnly: true, lastBlockRow: true });
    const empty = new ort.Tensor('float32', new Float32Array(0), attention === 'attn' ? [2, 1, H, 0, D] : [1, H, 0, D]);
    const names = range(0, N).map((l) => gpt2CacheNames(attention, l));
    const feeds = (ids, prev) => {
      const f = { input_ids: idsTensor(ids) };
      for (const nm of names) nm.past.forEach((p, i) => { f[p] = prev ? prev[nm.present[i]] : empty; });
      return f;
    };
    for (const [k, c] of expected.cases.entries()) {
      const L = PREFILL + DECODE;
      expect(c.ids.length).toBeGreaterThanOrEqual(L - 1);
      const n = Math.min(L, c.ids.length);
      const ids = c.ids.slice(0, n);
      const once = (await full.run({ input_ids: idsTensor(ids) })).logits.data;
      // prefill: all PREFILL rows, and the cache it returns
      let o = await s.run(feeds(ids.slice(0, PREFILL), null));
      expect(o.logits.dims).toEqual([1, PREFILL, V]);
      const cacheDims = names[0].present.map((p) => o[p].dims);
      expect(cacheDims[0]).toEqual(attention === 'attn' ? [2, 1, H, PREFILL, D] : [1, H, PREFILL, D]);
      let dOnce = maxDiffRows(o.logits.data, once, range(0, PREFILL));
      let dRef = maxDiffRows(o.logits.data, c.logits, range(0, PREFILL));
      let dOurs = maxDiffRows(o.logits.data, ours[k], range(0, PREFILL));
      // the last-position graph gives the prefill's last row
      const lo = await last.run(feeds(ids.slice(0, PREFILL), null));
      expect(lo.logits.dims).toEqual([1, 1, V]);
      const dLast = maxDiffRows(lo.logits.data, once, [PREFILL - 1]);
      note(`ORT ${attention} lastOnly vs full row`, dLast);
      expect(dLast).toBeLessThan(TOL);
      // the last block on the last row alone: the same row, and presents of every row
      const lr = await lastRow.run(feeds(ids.slice(0, PREFILL), null));
      expect(lr.logits.dims).toEqual([1, 1, V]);
      expect(lr[names[N - 1].present[0]].dims).toEqual(cacheDims[0]);
      const dLastRow = maxDiffRows(lr.logits.data, once, [PREFILL - 1]);
      note(`ORT ${attention} lastBlockRow vs full row`, dLastRow);
      expect(dLastRow).toBeLessThan(TOL);
      for (let t = PREFILL; t < n; t++) {
        o = await s.run(feeds([ids[t]], o));
        expect(o.logits.dims).toEqual([1, 1, V]);
        dOnce = Math.max(dOnce, maxDiffRows(o.logits.data, once, [t]));
        dRef = Math.max(dRef, maxDiffRows(o.logits.data, c.logits, [t]));
        dOurs = Math.max(dOurs, maxDiffRows(o.logits.data, ours[k], [t]));
      }
      expect(o[names[0].present[0]].dims).toEqual(attention === 'attn' ? [2, 1, H, n, D] : [1, H, n, D]);
      note(`ORT ${attention} cached vs ORT one forward`, dOnce);
      note(`ORT ${attention} cached vs float64`, dRef);
      note(`ORT ${attention} cached vs ours`, dOurs);
      expect(dOnce).toBeLessThan(TOL);
      expect(dRef).toBeLessThan(TOL);
      expect(dOurs).toBeLessThan(TOL);
    }
    await Promise.all([s.release(), full.release(), last.release(), lastRow.release()]);
  });
});

test('buildGpt2Onnx names a missing or misshapen tensor', () => {
  const partial = new Map(tensors);
  partial.delete('h.1.mlp.c_fc.bias');
  expect(() => buildGpt2Onnx(config, partial)).toThrow(/h\.1\.mlp\.c_fc\.bias missing/);
  const wrong = new Map(tensors);
  wrong.set('h.0.attn.c_attn.weight', { shape: [3 * E, E], data: tensors.get('h.0.attn.c_attn.weight').data });
  expect(() => buildGpt2Onnx(config, wrong)).toThrow(/h\.0\.attn\.c_attn\.weight has shape \[96,32\], expected \[32,96\]/);
  // the `transformer.` prefix of GPT2LMHeadModel.save_pretrained
  const prefixed = new Map([...tensors].map(([k, v]) => [`transformer.${k}`, v]));
  expect(buildGpt2Onnx(config, prefixed, { past: false }).byteLength).toBe(buildGpt2Onnx(config, tensors, { past: false }).byteLength);
});
