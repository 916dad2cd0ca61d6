// graph-fields.test.js — the block graph's config fields of issue 32
// (headDim, qkNorm, attnScale, attnSoftcap, finalSoftcap, slidingWindow,
// layerKinds, ropeLocalTheta, rotaryDim, parallelResidual, sandwichNorm,
// embedScale, activation 'geglu' / 'geglu_tanh'; issue 34's bidirectional
// window, normBias, firstNorm1, gateBias) through lab.transformer, on both
// wasm backends:
//   * the logits of four configs equal the float64 numpy reference's
//     (tests/reference/graph_fields.py → tests/golden/graph-fields.json), with
//     the reference's weights set by name (so the parameter names and shapes
//     are the documented ones);
//   * every such config trains: a few steps lower the loss, the gradient of
//     every parameter is finite and some nonzero;
//   * bad values are refused with an Error naming the field.
// The gradients against finite differences, and the KV cache against one
// forward, are native tests (tests/native/model_test.cpp).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS } from './helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const golden = JSON.parse(fs.readFileSync(path.join(here, '../golden/graph-fields.json'), 'utf8'));

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

describe.each(BACKENDS)('%s: lab.transformer with the graph fields', (backend) => {
  test.each(golden.cases.map((c) => [c.name, c]))('%s: logits equal the numpy reference', (_, c) => {
    const lab = labs[backend];
    const model = lab.transformer(c.config);
    const names = Object.keys(model.getWeights()).sort();
    expect(names).toEqual(Object.keys(c.weights).sort());
    model.setWeights(Object.fromEntries(Object.entries(c.weights).map(([n, w]) => [n, { data: Float32Array.from(w.data), shape: w.shape }])));
    const L = c.tokens.length;
    const { logits, attention } = model.forward({ data: Int32Array.from(c.tokens), shape: [1, L] });
    expect(logits.shape).toEqual([1, ...c.logits.shape]);
    let worst = 0;
    for (let i = 0; i < logits.data.length; i++) {
      const want = c.logits.data[i];
      worst = Math.max(worst, Math.abs(logits.data[i] - want) / (1 + Math.abs(want)));
    }
    expect(worst).toBeLessThan(2e-5);
    // The window as the weights show it: a local layer's query i sees i − W < j ≤ i (bidirectional: |i − j| < W).
    const W = c.config.slidingWindow ?? 0;
    const causal = c.config.causal;
    const kinds = c.config.layerKinds || (W > 0 ? 'l' : 'g').repeat(c.config.numLayers);
    const H = c.config.numHeads;
    for (let l = 0; l < c.config.numLayers; l++) {
      for (let i = 0; i < L; i++) {
        for (let j = 0; j < L; j++) {
          const seen = (!causal || j <= i) && (kinds[l] === 'g' || (causal ? j > i - W : Math.abs(i - j) < W));
          const w = attention[l].data[(0 * L + i) * L + j];
          if (seen) expect(w).toBeGreaterThan(0); else expect(w).toBe(0);
        }
      }
      expect(attention[l].shape).toEqual([1, H, L, L]);
    }
    model.dispose();
  });

  test.each(golden.cases.map((c) => [c.name, c]))('%s: trains', (_, c) => {
    const lab = labs[backend];
    const model = lab.transformer({ ...c.config, seed: 5 });
    const trainer = model.trainer({ lr: 1e-2 });
    const L = c.tokens.length, V = c.config.vocabSize;
    const tokens = { data: Int32Array.from({ length: 2 * L }, (_, i) => (i * 5 + 1) % V), shape: [2, L] };
    const targets = { data: Int32Array.from({ length: 2 * L }, (_, i) => (i * 5 + 6) % V), shape: [2, L] };
    const first = trainer.step(tokens, targets).loss;
    const grads = model.getGradients();
    for (const [name, g] of Object.entries(grads)) {
      expect(g.data.every(Number.isFinite)).toBe(true);
      expect(g.data.some((v) => v !== 0)).toBe(true);
      void name;
    }
    let last = first;
    for (let s = 0; s < 30; s++) last = trainer.step(tokens, targets).loss;
    expect(last).toBeLessThan(first * 0.8);
    model.dispose();
  });
});

describe('lab.transformer refuses bad graph fields', () => {
  const base = { vocabSize: 7, maxLength: 8, embedDim: 8, numHeads: 2, causal: true, positional: 'rope', prenorm: true };
  test.each([
    [{ headDim: -1 }, /headDim/],
    [{ headDim: 1.5 }, /headDim/],
    [{ numHeads: 3 }, /divisible by numHeads \(3\), or headDim must be given/],
    [{ qkNorm: 1 }, /qkNorm/],
    [{ attnScale: -1 }, /attnScale/],
    [{ attnSoftcap: Infinity }, /attnSoftcap/],
    [{ finalSoftcap: '2' }, /finalSoftcap/],
    [{ firstNorm1: false, prenorm: false }, /firstNorm1 false \(block 0 without norm1\) needs prenorm blocks/],
    [{ gateBias: true }, /gateBias needs a gated activation/],
    [{ normBias: 1 }, /normBias/],
    [{ slidingWindow: 2, layerKinds: 'lx' }, /layerKinds/],
    [{ slidingWindow: 2, layerKinds: 'lg' }, /layerKinds must have numLayers \(1\) chars/],
    [{ layerKinds: 'l' }, /needs slidingWindow > 0/],
    [{ ropeLocalTheta: -3 }, /ropeLocalTheta/],
    [{ rotaryDim: 3 }, /rotaryDim must be an even integer in \[2, 4\]/],
    [{ rotaryDim: 2, positional: 'learned' }, /rotaryDim needs positional 'rope'/],
    [{ parallelResidual: true, prenorm: false }, /parallelResidual needs prenorm/],
    [{ sandwichNorm: true, prenorm: false }, /sandwichNorm needs prenorm/],
    [{ sandwichNorm: true, parallelResidual: true }, /cannot both be set/],
    [{ embedScale: 0 }, /embedScale/],
    [{ activation: 'reglu' }, /'geglu', 'geglu_tanh', 'relu' or 'silu'/],
    [{ qkNorms: true }, /unknown config key "qkNorms"/],
  ])('%j', (extra, message) => {
    expect(() => labs.wasm.transformer({ ...base, ...extra })).toThrow(message);
  });
});

// The encoder-decoders' fields (issue 34 item 2), which the webgpu model path does not run yet.
const ENCDEC_FIELDS = ['crossAttention', 'sinusoidHalves', 'relativeBuckets', 'headScale', 'activation'];

describe('the webgpu model path runs every graph field but the encoder-decoders\'', () => {
  // Its values against wasm and the float64 references: tests/browser/models-webgpu-families.browser.mjs.
  test('GPU_UNSUPPORTED_FIELDS lists the encoder-decoder fields alone, and modelCreate takes every field of issue 32 and ModernBERT\'s', async () => {
    const { GPU_UNSUPPORTED_FIELDS } = await import('../../web/lib/webgpu-graph-fields.js');
    const { checkGpuRuns } = await import('../../web/lib/model/gpu.js');
    const { createGpuModels } = await import('../../web/lib/webgpu-model.js');
    expect(GPU_UNSUPPORTED_FIELDS.map((f) => f.field)).toEqual(ENCDEC_FIELDS);
    const gpu = createGpuModels({}, { state: {}, run: null, loadWasm: null }).methods;
    const fields = [
      { headDim: 8 }, { qkNorm: true }, { attnScale: 0.25 }, { attnSoftcap: 50 }, { finalSoftcap: 30 },
      { slidingWindow: 4, layerKinds: 'lg' }, { ropeLocalTheta: 10 }, { rotaryDim: 2 }, { parallelResidual: true },
      { sandwichNorm: true }, { embedScale: 2 }, { activation: 'geglu' }, { activation: 'geglu_tanh' },
      // ModernBERT's (issue 34)
      { normBias: false }, { firstNorm1: false }, { mlmBias: false }, { gateBias: true }, { slidingWindow: 3, causal: false },
    ];
    for (const f of fields) {
      const spec = { modelType: 'x', numLayers: 2, embedDim: 8, numHeads: 2, maxLength: 4, core: { positional: 'learned', activation: 'gelu', ...f } };
      expect(() => checkGpuRuns(spec)).not.toThrow();
      await expect(gpu.modelCreate(spec)).resolves.toBeTruthy();
    }
    // the encoder-decoders' fields: both checks refuse them by name
    const uses = [{ crossAttention: true }, { sinusoidHalves: true }, { relativeBuckets: 8 }, { headScale: 0.5 }, { activation: 'relu' }, { activation: 'silu' }];
    for (const f of uses) {
      const spec = { modelType: 'x', numLayers: 2, embedDim: 8, numHeads: 2, maxLength: 4, core: { positional: 'learned', activation: 'gelu', ...f } };
      const [field, value] = Object.entries(f)[0];
      expect(() => checkGpuRuns(spec)).toThrow(new RegExp(`does not run ${field}`));
      await expect(gpu.modelCreate(spec)).rejects.toThrow(`${field} ${JSON.stringify(value)}`);
    }
  });
});

test('one rule (webgpu-graph-fields.js): loadModel\'s checkGpuRuns and modelCreate refuse the same listed fields, and pass the same values', async () => {
  // A synthetic entry stands for a future field the GPU path does not run yet.
  const { GPU_UNSUPPORTED_FIELDS } = await import('../../web/lib/webgpu-graph-fields.js');
  const { checkGpuRuns } = await import('../../web/lib/model/gpu.js');
  const { createGpuModels } = await import('../../web/lib/webgpu-model.js');
  const gpu = createGpuModels({}, { state: {}, run: null, loadWasm: null }).methods;
  const both = async (fields) => {
    const spec = { modelType: 'x', embedDim: 8, numHeads: 2, maxLength: 4, core: { positional: 'learned', activation: 'gelu', ropeTheta: 1e4, ...fields } };
    let a = null;
    try {
      checkGpuRuns(spec);
    } catch (err) {
      a = err;
    }
    const b = await gpu.modelCreate(spec).then(() => null, (err) => err);
    return [a, b];
  };
  GPU_UNSUPPORTED_FIELDS.push({ field: 'futureField', label: 'futureField (a later graph field)', used: (k) => k.futureField > 1 });
  try {
    const [a, b] = await both({ futureField: 3 });
    expect(a.message).toMatch(/the webgpu backend's model path does not run futureField \(a later graph field\), which model_type "x" uses here; load it on backend 'wasm'/);
    expect(b.message).toMatch(/the webgpu backend does not run futureField 3 yet; load this model on a wasm lab/);
    // a value the GPU path computes anyway is not a use
    expect(await both({ futureField: 1 })).toEqual([null, null]);
    expect(await both({})).toEqual([null, null]);
  } finally {
    GPU_UNSUPPORTED_FIELDS.pop();
  }
  expect(GPU_UNSUPPORTED_FIELDS.map((f) => f.field)).toEqual(ENCDEC_FIELDS);
});

test("save() of an architecture 'gpt2' model refuses the fields GPT-2's files cannot hold", async () => {
  const lab = await init({ backend: 'wasm' });
  const model = lab.transformer({ architecture: 'gpt2', vocabSize: 7, maxLength: 6, embedDim: 8, numHeads: 2, attnScale: 1, embedScale: 2 });
  expect(() => model.save()).toThrow(/cannot express attnScale 1, embedScale 2/);
  model.dispose();
  const plain = lab.transformer({ architecture: 'gpt2', vocabSize: 7, maxLength: 6, embedDim: 8, numHeads: 2 });
  expect(plain.save()['config.json']).toBeTruthy();
  plain.dispose();
});
