// quant-weights.test.js — writeParamQuant on the block graph's handle
// (web/lib/graph/transformer.js → Transformer::WriteParamQuant), on both wasm
// backends:
//   * a model whose projections are kept as GGML blocks (packedWeights, the
//     loaded-model path) gives the logits of the same model written from the
//     dequantized floats (this file's own decoding of ggml-common.h's
//     block_q8_0 / block_q4_0) within 1e-5, for 1, 2 (GEMV) and 7 rows
//     (GEMM); getWeights returns the dequantized values exactly;
//   * the same on the threaded build (2 threads), past the GEMV's threshold;
//   * a trainable model's weights take the dequantized values;
//   * bad input (wrong byte length, rows not a multiple of 32, unknown kind,
//     not a Uint8Array, unknown option, unknown weight, rows past the end, a
//     non-finite scale) gives a clear Error, and the heap is back after.
import { init } from '../../web/node.js';
import { Transformer } from '../../web/lib/graph/transformer.js';
import { BACKENDS } from './helpers.js';

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const BLOCK = { Q8_0: 34, Q4_0: 18 };

function halfValue(h) {
  const e = (h >> 10) & 31, m = h & 1023;
  const v = e === 0 ? m * 2 ** -24 : (1024 + m) * 2 ** (e - 25);
  return h & 0x8000 ? -v : v;
}

// R rows of C values as random blocks (|w| up to about 0.25) and their values.
function randomRows(kind, R, C, seed) {
  let s = seed >>> 0;
  const rnd = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
  const bb = BLOCK[kind];
  const bytes = new Uint8Array(R * (C / 32) * bb);
  const values = new Float64Array(R * C);
  const [e0, e1] = kind === 'Q8_0' ? [3, 5] : [7, 9];
  for (let b = 0; b < R * C / 32; b++) {
    const o = b * bb;
    const d = ((rnd() >>> 31) << 15) | ((e0 + (rnd() % (e1 - e0 + 1))) << 10) | (rnd() & 1023);
    bytes[o] = d & 255;
    bytes[o + 1] = d >> 8;
    for (let i = 2; i < bb; i++) bytes[o + i] = rnd() >>> 24;
    const dv = halfValue(d);
    for (let i = 0; i < 32; i++) {
      let q;
      if (kind === 'Q8_0') q = (bytes[o + 2 + i] << 24) >> 24;
      else q = i < 16 ? (bytes[o + 2 + i] & 15) - 8 : (bytes[o + 2 + i - 16] >> 4) - 8;
      values[b * 32 + i] = dv * q;
    }
  }
  return { bytes, values };
}

const config = {
  vocabSize: 13, maxLength: 8, embedDim: 64, numHeads: 4, numLayers: 2, ffnDim: 96, causal: true,
  positional: 'rope', prenorm: true, activation: 'swiglu', norm: 'rmsnorm', tieEmbeddings: false, headBias: false,
};
const flags = { qkvBias: false, outBias: false, ffnBias: false, numKvHeads: 2, norm: 'rmsnorm', initWeights: false };

// Writes every weight of `quant` (kept as blocks) and `plain` (their floats).
function writeBoth(quant, plain, kind) {
  const floats = {};
  quant._params.forEach((p, i) => {
    const C = p.shape.length === 2 ? p.shape[1] : p.shape[0];
    const R = p.shape.length === 2 ? p.shape[0] : 1;
    const { bytes, values } = randomRows(kind, R, C, 100 + i);
    floats[p.name] = { data: Float32Array.from(values), shape: p.shape };
    quant.writeParamQuant(p.name, kind, bytes);
  });
  plain.setWeights(floats);
}

test.each(['Q8_0', 'Q4_0'])('%s on 2 threads: the logits of the floats (threaded GEMV and GEMM)', async (kind) => {
  const lab = await init({ threads: 2 });
  try {
    const Module = lab._backend.wasmModule;
    // (W1 [512, 256] and the head [300, 256]: past the GEMV's threading threshold)
    const big = { ...config, vocabSize: 300, embedDim: 256, ffnDim: 512, numLayers: 1 };
    const quant = new Transformer(Module, big, { ...flags, packedWeights: true });
    const plain = new Transformer(Module, big, { ...flags });
    writeBoth(quant, plain, kind);
    for (const L of [1, 7]) {
      const tokens = [[5, 77, 3, 299, 0, 150, 42].slice(0, L)];
      const a = plain.forward(tokens, { attention: false }).logits.data;
      const b = quant.forward(tokens, { attention: false }).logits.data;
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(a[i])));
    }
    quant.dispose();
    plain.dispose();
  } finally {
    lab.dispose();
  }
});

describe.each(BACKENDS)('%s: writeParamQuant', (backend) => {
  test.each(['Q8_0', 'Q4_0'])('%s blocks kept in a loaded model give the logits of their floats', (kind) => {
    const Module = labs[backend]._backend.wasmModule;
    const quant = new Transformer(Module, config, { ...flags, packedWeights: true });
    const plain = new Transformer(Module, config, { ...flags });
    const floats = {};
    quant._params.forEach((p, i) => {
      const C = p.shape.length === 2 ? p.shape[1] : p.shape[0];
      const R = p.shape.length === 2 ? p.shape[0] : 1;
      const { bytes, values } = randomRows(kind, R, C, 100 + i);
      floats[p.name] = { data: Float32Array.from(values), shape: p.shape };
      if (i % 2 === 0) {
        quant.writeParamQuant(p.name, kind, bytes);
      } else { // by index, in two calls
        const half = Math.floor(R / 2) * (C / 32) * BLOCK[kind];
        if (half > 0) quant.writeParamQuant(i, kind === 'Q8_0' ? 8 : 2, bytes.subarray(0, half));
        quant.writeParamQuant(i, kind, bytes.subarray(half), { first: Math.floor(R / 2) });
      }
    });
    plain.setWeights(floats);
    const back = quant.getWeights();
    for (const [name, t] of Object.entries(floats)) expect(back[name].data).toEqual(t.data);
    const tokens = [3, 1, 4, 1, 5, 9, 2];
    for (const L of [1, 2, 7]) {
      const a = plain.forward([tokens.slice(0, L)], { attention: false }).logits.data;
      const b = quant.forward([tokens.slice(0, L)], { attention: false }).logits.data;
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(a[i])));
    }
    expect(() => quant.setWeights(floats)).toThrow(/GGML blocks/);
    quant.dispose();
    plain.dispose();
  });

  test('a trainable model takes the dequantized values', () => {
    const lab = labs[backend];
    const model = lab.transformer({ vocabSize: 5, maxLength: 4, embedDim: 32, numHeads: 2, numLayers: 1 });
    const weights = model.getWeights();
    const name = Object.keys(weights).find((n) => weights[n].shape.length === 2 && weights[n].shape[1] % 32 === 0);
    const shape = weights[name].shape;
    const { bytes, values } = randomRows('Q4_0', shape[0], shape[1], 7);
    model.writeParamQuant(name, 'Q4_0', bytes);
    expect(model.getWeights()[name].data).toEqual(Float32Array.from(values));
    model.dispose();
  });

  test('bad input gives clear Errors and leaves the heap as it was', () => {
    const Module = labs[backend]._backend.wasmModule;
    const round = () => {
      const t = new Transformer(Module, { ...config, ffnDim: 80 }, { ...flags, packedWeights: true });
      const wq = t._params.find((p) => p.name.endsWith('attn.wq')).name;
      const w2 = t._params.find((p) => p.name.endsWith('ffn.w2')).name;
      const { bytes } = randomRows('Q8_0', 64, 64, 1);
      expect(() => t.writeParamQuant(wq, 'Q8_0', bytes.subarray(1))).toThrow(/multiple of 68 bytes \(2 blocks of 34\)/);
      expect(() => t.writeParamQuant(wq, 'Q8_0', new Uint8Array(65 * 68))).toThrow(/at most 4352, got 4420/);
      expect(() => t.writeParamQuant(wq, 'Q8_0', bytes, { first: 1 })).toThrow(/from row 1/);
      expect(() => t.writeParamQuant(w2, 'Q8_0', new Uint8Array(85))).toThrow(/rows of 80 values, not a multiple of 32/);
      expect(() => t.writeParamQuant(wq, 'Q5_K', bytes)).toThrow(/kind must be 'Q8_0', 'Q4_0', 'Q4_K' or 'Q6_K'.*got "Q5_K"/);
      expect(() => t.writeParamQuant(wq, 3, bytes)).toThrow(RangeError);
      expect(() => t.writeParamQuant(wq, 'Q8_0', Array.from(bytes))).toThrow(/data must be a Uint8Array/);
      expect(() => t.writeParamQuant(wq, 'Q8_0', bytes, { frist: 0 })).toThrow(/options has an unknown key "frist"; allowed: first/);
      expect(() => t.writeParamQuant('nope', 'Q8_0', bytes)).toThrow(/unknown weight "nope"/);
      const inf = bytes.slice();
      inf[34] = 0;
      inf[35] = 0x7e; // row 0, block 1: d = NaN
      expect(() => t.writeParamQuant(wq, 'Q8_0', inf)).toThrow(/must be finite: the scale of block 1 of .*attn.wq is NaN/);
      t.writeParamQuant(wq, 'Q8_0', bytes.subarray(0, 68));
      expect(() => t.writeParamQuant(wq, 'Q4_0', new Uint8Array(36), { first: 1 })).toThrow(/already holds Q8_0 rows/);
      t.dispose();
    };
    round(); // (the first round also sizes the last-error message's buffer)
    const before = Module.heapBytesInUse();
    round();
    expect(Module.heapBytesInUse()).toBe(before);
  });
});
