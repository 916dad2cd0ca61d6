// error-classes.test.js — the written rule (docs/errors.md, web/lib/errors.js):
// TypeError for a value of the wrong kind (including unknown option keys),
// RangeError for a value that is not allowed (sizes, shapes, names),
// DisposedError (a TypeError) for a disposed object, Error for what the
// environment cannot do. One test per public error; every options object of
// every function refuses an unknown key, naming it and the allowed ones.
import { init, DisposedError } from '../../web/node.js';
import { createRequire } from 'node:module';
import { BACKENDS } from './helpers.js';

const require = createRequire(import.meta.url);
const E = 8;
const x3 = { data: new Float32Array(2 * 3 * E).fill(0.25), shape: [2, 3, E] };

/** The error a call throws or (for a promise) rejects with. */
async function caught(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail');
}

describe('DisposedError', () => {
  test('is a TypeError named DisposedError, exported by the ESM and CommonJS entries', () => {
    const e = new DisposedError('x: disposed');
    expect(e).toBeInstanceOf(TypeError);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('DisposedError');
    expect(String(e)).toBe('DisposedError: x: disposed');
    expect(new TypeError('other')).not.toBeInstanceOf(DisposedError);
    const cjs = require('../../web/node.cjs');
    expect(typeof cjs.DisposedError).toBe('function');
    expect(e).toBeInstanceOf(cjs.DisposedError); // instanceof across the two copies
    expect(new cjs.DisposedError('y')).toBeInstanceOf(DisposedError);
    expect(new cjs.DisposedError('y')).toBeInstanceOf(TypeError);
  });
});

describe.each(BACKENDS)('error classes — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  test('TypeError: a value of the wrong kind names the argument', async () => {
    for (const [fn, re] of [
      [() => lab.positionalEncoding('4', 8), /seqLen/],
      [() => lab.multiHeadAttention({ embedDim: E }), /numHeads is missing/],
      [() => lab.selfAttention('x'), /\bx\b/],
      [() => lab.scaledDotProductAttention(x3, x3, x3, { needWeights: 'no' }), /needWeights/],
      [() => init({ backend: 7 }), /backend/],
    ]) {
      const e = await caught(fn);
      expect(e.constructor).toBe(TypeError);
      expect(e.message).toMatch(re);
    }
  });

  test('RangeError: a value that is not allowed names the argument', async () => {
    for (const [fn, re] of [
      [() => lab.positionalEncoding(0, 8), /seqLen/],
      [() => lab.multiHeadAttention({ embedDim: 10, numHeads: 3 }), /divisible/],
      [() => lab.selfAttention({ data: new Float32Array(5), shape: [2, 3] }), /\bx\b/],
      [() => init({ backend: 'cuda' }), /backend/],
      [() => lab.multiHeadAttention({ embedDim: E, numHeads: 2 }).getWeights({ layout: 'jax' }), /layout/],
    ]) {
      const e = await caught(fn);
      expect(e.constructor).toBe(RangeError);
      expect(e.message).toMatch(re);
    }
  });

  test('DisposedError: every method of a disposed multiHeadAttention, selfAttentionLayer and KV cache', async () => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 2 });
    const cache = mha.createKVCache({ maxLength: 4 });
    const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: 2 });
    const deadCache = mha.createKVCache({ maxLength: 4 });
    deadCache.dispose();
    const calls = [
      ['mha.forward', () => (mha.dispose(), mha.forward(x3))],
      ['mha.forwardSync', () => mha.forwardSync(x3)],
      ['mha.setWeights', () => mha.setWeights({ bq: new Float32Array(E) })],
      ['mha.getWeights', () => mha.getWeights()],
      ['mha.heldBytes', () => mha.heldBytes()],
      ['mha.createKVCache', () => mha.createKVCache({ maxLength: 2 })],
      ['layer.forward', () => (layer.dispose(), layer.forward(x3))],
      ['layer.forwardSync', () => layer.forwardSync(x3)],
      ['layer.setWeights', () => layer.setWeights({ gamma: new Float32Array(E) })],
      ['layer.getWeights', () => layer.getWeights()],
      ['cache.reset', () => deadCache.reset()],
      ['cache.truncate', () => deadCache.truncate(0)],
    ];
    for (const [name, fn] of calls) {
      const e = await caught(fn);
      expect([name, e.name]).toEqual([name, 'DisposedError']);
      expect(e).toBeInstanceOf(DisposedError);
      expect(e).toBeInstanceOf(TypeError);
      expect(e.message).toMatch(/disposed/);
    }
    // A forward with a disposed cache (on a live MHA).
    const mha2 = lab.multiHeadAttention({ embedDim: E, numHeads: 2 });
    const c2 = mha2.createKVCache({ maxLength: 4 });
    c2.dispose();
    const e = await caught(() => mha2.forwardSync(x3.data.length ? { data: new Float32Array(E), shape: [1, 1, E] } : x3, undefined, undefined, { kvCache: c2 }));
    expect(e).toBeInstanceOf(DisposedError);
    expect(e.message).toMatch(/kvCache/);
    mha2.dispose();
    // dispose stays idempotent, and a disposed object's dispose is not an error
    expect(() => { mha.dispose(); layer.dispose(); cache.dispose(); deadCache.dispose(); }).not.toThrow();
  });

  test('TypeError: a KV cache in use by an unfinished forward (like a locked stream)', async () => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 2 });
    const cache = mha.createKVCache({ maxLength: 8 });
    const tok = { data: new Float32Array(E).fill(0.5), shape: [1, 1, E] };
    const pending = mha.forward(tok, tok, tok, { kvCache: cache });
    // (synchronously, before the pending forward's continuation runs)
    const errors = [() => cache.reset(), () => cache.truncate(0), () => mha.forwardSync(tok, tok, tok, { kvCache: cache })].map((fn) => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return null;
    });
    await pending;
    for (const e of errors) {
      expect(e && e.constructor).toBe(TypeError);
      expect(e.message).toMatch(/not finished/);
    }
    expect(cache.length).toBe(1);
    mha.dispose();
  });

  test("Error: what the environment cannot do (backend 'webgpu' in Node)", async () => {
    const e = await caught(() => init({ backend: 'webgpu' }));
    expect(e.constructor).toBe(Error);
    expect(e.message).toMatch(/webgpu/);
  });

  // ---- unknown option keys: every options object of every function ----------

  const unknownKeyCases = () => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 2 });
    const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: 2 });
    return {
      cases: [
        ['init', () => init({ backend, backnd: 'wasm' }), ['backend', 'locateFile', 'wasmBinary', 'warmUp', 'checkFinite']],
        ['positionalEncoding', () => lab.positionalEncoding(4, 8, { bas: 10 }), ['base']],
        ['selfAttention', () => lab.selfAttention(x3, { scal: 1 }), ['mask', 'scale', 'checkFinite']],
        ['scaledDotProductAttention', () => lab.scaledDotProductAttention(x3, x3, x3, { needWeight: false }), ['mask', 'scale', 'needWeights', 'checkFinite']],
        ['multiHeadAttention', () => lab.multiHeadAttention({ embedDim: E, numHeads: 2, kDim: 4 }), ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'seed']],
        ['selfAttentionLayer', () => lab.selfAttentionLayer({ embedDim: E, numHeads: 2, dropOut: 0.1 }), ['embedDim', 'numHeads', 'dropout', 'eps']],
        ['shapeTrace', () => lab.shapeTrace({ lq: 5, embedDim: E, numHeads: 2, heads: 3 }), ['batch', 'lq', 'lk', 'embedDim', 'numHeads']],
        ['multiHeadAttention.forward', () => mha.forward(x3, x3, x3, { needWeight: false }), ['mask', 'needWeights', 'averageWeights', 'trace', 'kvCache', 'checkFinite']],
        ['multiHeadAttention.forward', () => mha.forwardSync(x3, x3, x3, { averageWeight: true }), ['averageWeights']],
        ['selfAttentionLayer.forward', () => layer.forward(x3, { train: true }), ['mask', 'training', 'dropoutSeed', 'needWeights', 'checkFinite']],
        ['selfAttentionLayer.forward', () => layer.forwardSync(x3, { kvCache: null, seed: 1 }), ['training']],
        ['setWeights', () => mha.setWeights({}, { layot: 'keras' }), ['layout', 'checkFinite']],
        ['setWeights', () => mha.setWeights({ wz: new Float32Array(E * E) }), ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']],
        ['setWeights', () => layer.setWeights({ gama: new Float32Array(E) }), ['wq', 'gamma', 'beta']],
        ['getWeights', () => mha.getWeights({ layot: 'keras' }), ['layout']],
        ['createKVCache', () => mha.createKVCache({ maxLen: 4 }), ['maxLength', 'batch']],
        ['warmUp', () => lab.warmUp({ embedDims: 8 }), ['embedDim', 'numHeads', 'seqLen', 'batch', 'budgetMs']],
      ],
      done: () => { mha.dispose(); layer.dispose(); },
    };
  };

  test('an unknown option key is a TypeError naming it and the allowed keys, in every function', async () => {
    const { cases, done } = unknownKeyCases();
    try {
      for (const [where, fn, allowed] of cases) {
        const e = await caught(fn);
        expect([where, e.constructor.name, e.message]).toEqual([where, 'TypeError', expect.stringContaining(where)]);
        expect(e.message).toMatch(/unknown key "[^"]+"/);
        for (const k of allowed) expect([where, e.message]).toEqual([where, expect.stringMatching(new RegExp(`allowed:.*\\b${k}\\b`))]);
      }
    } finally {
      done();
    }
  });

  test('a key whose value is undefined is not an unknown key', async () => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 2, extra: undefined });
    expect(mha.forwardSync(x3, x3, x3, { mask: undefined, other: undefined }).output.shape).toEqual([2, 3, E]);
    mha.dispose();
  });
});
