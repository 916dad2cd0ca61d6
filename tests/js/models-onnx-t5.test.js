// models-onnx-t5.test.js — the second engine of issue 34's speed report: the
// tiny T5 folders of tests/golden/models (t5: relu, tied head; t5-v1_1:
// gated-gelu, untied lm_head) as the two ONNX graphs that
// `npm run bench -- --only lm --model t5` times (bench/onnx-models.mjs
// buildT5EncoderOnnx: the encoder and every decoder layer's cross keys and
// values; buildT5DecoderOnnx: the decoder with past), on onnxruntime-web
// (wasm, one thread), against the float64 reference (expected.json, from
// tests/reference/hf_encdec.py after transformers' modeling_t5.py): the
// logits of every decoder position, fed one token a step on the cache and
// all at once, and the greedy continuation.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildT5EncoderOnnx, buildT5DecoderOnnx, readSafetensorsF32, t5RelativeBucket } from '../../bench/onnx-models.mjs';

const require = createRequire(import.meta.url);
const MODELS = join(dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'models');
const TOL = 1e-4;

let ort;
const worst = {};
const note = (name, v) => { worst[name] = Math.max(worst[name] ?? 0, v); };

beforeAll(async () => {
  ort = await import('onnxruntime-web');
  const dist = dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
  ort.env.wasm.wasmPaths = pathToFileURL(dist + sep).href;
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.logLevel = 'error';
});

afterAll(() => {
  // eslint-disable-next-line no-console
  console.log(`T5 on onnxruntime-web (tiny checkpoints), max |Δ| vs float64:\n${Object.entries(worst).map(([k, v]) => `  ${k}: ${v.toExponential(2)}`).join('\n')}`);
});

test('t5RelativeBucket: transformers\' buckets (t5-small: 32 buckets, max distance 128)', () => {
  // _relative_position_bucket(relative_position, bidirectional, 32, 128), by hand from its formula:
  // bidirectional: 16 a side, 8 exact; memory after the query → +16.
  expect([0, -1, -7, -8, -12, -16, -127, -128, -500].map((r) => t5RelativeBucket(r, true, 32, 128))).toEqual([0, 1, 7, 8, 9, 10, 15, 15, 15]);
  expect([1, 7, 8, 16].map((r) => t5RelativeBucket(r, true, 32, 128))).toEqual([17, 23, 24, 26]);
  // causal: 32 buckets for the past, 16 exact; the future is bucket 0.
  expect([0, 3, -3, -15, -16, -32, -127, -128, -1000].map((r) => t5RelativeBucket(r, false, 32, 128))).toEqual([0, 0, 3, 15, 16, 21, 31, 31, 31]);
});

describe.each(['t5', 't5-v1_1'])('%s', (name) => {
  const dir = join(MODELS, name);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
  const tensors = readSafetensorsF32(readFileSync(join(dir, 'model.safetensors')));
  const N = config.num_decoder_layers ?? config.num_layers, H = config.num_heads, D = config.d_kv, V = config.vocab_size;
  const ids = (a) => new ort.Tensor('int64', BigInt64Array.from(a.map(BigInt)), [1, a.length]);
  const opts = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };

  test('encoder + decoder with past: every position\'s logits (a token a step, and all at once) and the greedy continuation', async () => {
    const enc = await ort.InferenceSession.create(buildT5EncoderOnnx(config, tensors), opts);
    const dec = await ort.InferenceSession.create(buildT5DecoderOnnx(config, tensors), opts);
    const empty = new ort.Tensor('float32', new Float32Array(0), [1, H, 0, D]);
    const maxDiff = (got, want) => got.reduce((m, x, j) => Math.max(m, Math.abs(x - want[j])), 0);
    for (const c of expected.cases) {
      const e = await enc.run({ input_ids: ids(c.ids) });
      expect(e.cross_key_0.dims).toEqual([1, H, c.ids.length, D]);
      const first = (input) => {
        const f = { input_ids: ids(input) };
        for (let l = 0; l < N; l++) {
          f[`past_key_${l}`] = empty;
          f[`past_value_${l}`] = empty;
          f[`cross_key_${l}`] = e[`cross_key_${l}`];
          f[`cross_value_${l}`] = e[`cross_value_${l}`];
        }
        return f;
      };
      const step = (f, o, id) => {
        f.input_ids = ids([id]);
        for (let l = 0; l < N; l++) {
          f[`past_key_${l}`] = o[`present_key_${l}`];
          f[`past_value_${l}`] = o[`present_value_${l}`];
        }
      };
      // a token a step on the cache: the logits of each decoder position
      const f = first([c.decoder_input_ids[0]]);
      let last = null;
      for (let i = 0; i < c.decoder_input_ids.length; i++) {
        if (i > 0) step(f, last, c.decoder_input_ids[i]);
        last = await dec.run(f);
        expect(last.logits.dims).toEqual([1, 1, V]);
        expect(last.present_key_0.dims).toEqual([1, H, i + 1, D]);
        const d = maxDiff(last.logits.data, c.logits[i]);
        note(`${name} cached step`, d);
        expect(d).toBeLessThan(TOL);
      }
      // all at once (causal self-attention with the bias over several rows): the last row
      const all = await dec.run(first(c.decoder_input_ids));
      const dAll = maxDiff(all.logits.data, c.logits.at(-1));
      note(`${name} all at once`, dAll);
      expect(dAll).toBeLessThan(TOL);
      // greedy from the start token, as the reference (stops after the eos, yielded)
      const g = first([config.decoder_start_token_id]);
      const got = [];
      let o = await dec.run(g);
      for (;;) {
        let best = 0;
        for (let j = 1; j < V; j++) if (o.logits.data[j] > o.logits.data[best]) best = j;
        got.push(best);
        if (got.length === c.greedy.length || best === config.eos_token_id) break;
        step(g, o, best);
        o = await dec.run(g);
      }
      expect(got).toEqual(c.greedy);
    }
    await enc.release();
    await dec.release();
  });
});
