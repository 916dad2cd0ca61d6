// kv-cache.test.js — incremental decoding with mha.createKVCache(), on both
// wasm backends, against the float64 reference (tests/reference/) run on the
// whole sequence at once: a sequence fed in chunks through a cache must give
// the rows of one causal forward over the whole sequence, and weights equal
// to those rows' first Lk_total columns. Also cross attention over cached
// keys, errors (each a clear Error; the cache unchanged and still usable),
// reset, dispose and the wasm heap after many steps.
import { init } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, rand } from './helpers.js';

// Rows [t0, t0 + n) of a [B, L, W] reference tensor, as a float64 tensor.
function rows(t, t0, n) {
  const [B, L, W] = t.shape;
  const out = new Float64Array(B * n * W);
  for (let b = 0; b < B; b++) {
    out.set(t.data.subarray((b * L + t0) * W, (b * L + t0 + n) * W), b * n * W);
  }
  return { data: out, shape: [B, n, W] };
}

// Rows [t0, t0 + n) and columns [0, total) of reference weights [B, H, L, L].
function weightRows(w, t0, n, total) {
  const [B, H, L] = w.shape;
  const out = new Float64Array(B * H * n * total);
  for (let bh = 0; bh < B * H; bh++) {
    for (let i = 0; i < n; i++) {
      const src = (bh * L + t0 + i) * L;
      out.set(w.data.subarray(src, src + total), (bh * n + i) * total);
    }
  }
  return { data: out, shape: [B, H, n, total] };
}

const f32 = (t) => ({ data: Float32Array.from(t.data), shape: t.shape });

describe.each(BACKENDS)('KV cache — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  const CASES = [
    { E: 16, H: 4, B: 2, chunks: [3, 1, 1, 4, 1, 1] },
    { E: 24, H: 3, B: 1, chunks: [1, 1, 1, 9, 1] },
    { E: 9, H: 3, B: 3, chunks: [5, 5, 1], bias: false },
    { E: 64, H: 8, B: 1, chunks: [12, 1, 1, 1] },
  ];
  test.each(CASES.map((c, i) => [`E${c.E} H${c.H} B${c.B} chunks ${c.chunks.join('+')}`, c, i]))(
    'chunked causal decoding equals one causal forward: %s', async (_, c, i) => {
      const rng = ref.mulberry32(9100 + i);
      const L = c.chunks.reduce((a, n) => a + n, 0);
      const cfg = { embedDim: c.E, numHeads: c.H, bias: c.bias ?? true };
      const weights = ref.randomMhaWeights(rng, { embedDim: c.E, bias: cfg.bias });
      const x = rand(rng, [c.B, L, c.E]);
      const exp = ref.multiHeadAttention(cfg, weights, x, x, x, { mask: { kind: 'causal' } });
      const mha = lab.multiHeadAttention(cfg);
      try {
        mha.setWeights(Object.fromEntries(Object.entries(weights).filter(([, v]) => v).map(([k, v]) => [k, f32(v)])));
        const cache = mha.createKVCache({ maxLength: L + 3, batch: c.B });
        expect(cache.length).toBe(0);
        expect(cache.maxLength).toBe(L + 3);
        expect(cache.batch).toBe(c.B);
        // K and V [B, maxLength, E], each rounded up to 64 bytes.
        expect(cache.heldBytes()).toBeGreaterThanOrEqual(2 * c.B * (L + 3) * c.E * 4);
        expect(cache.heldBytes()).toBeLessThan(2 * c.B * (L + 3) * c.E * 4 + 128);
        let t0 = 0;
        for (const [k, n] of c.chunks.entries()) {
          const xt = f32(rows(x, t0, n));
          const opts = { mask: { kind: 'causal' }, kvCache: cache };
          // Alternate the sync and async calls, and the self / separate-tensor paths.
          const got = k % 2 === 0
            ? mha.forwardSync(xt, undefined, undefined, opts)
            : await mha.forward(xt, { data: xt.data.slice(), shape: xt.shape }, { data: xt.data.slice(), shape: xt.shape }, opts);
          const total = t0 + n;
          expect(cache.length).toBe(total);
          expectTensorClose(got.output, rows(exp.output, t0, n), TOL.attention, `output rows ${t0}..${total - 1}`);
          expectTensorClose(got.weights, weightRows(exp.weights, t0, n, total), TOL.attention, `weights rows ${t0}..${total - 1}`);
          t0 = total;
        }
        // Reset: the same memory serves a new sequence from position 0.
        cache.reset();
        expect(cache.length).toBe(0);
        const again = mha.forwardSync(f32(rows(x, 0, 2)), undefined, undefined, { mask: { kind: 'causal' }, kvCache: cache, needWeights: false });
        expectTensorClose(again.output, rows(exp.output, 0, 2), TOL.attention, 'output after reset');
        expect(again.weights).toBeNull();
        cache.dispose();
        expect(cache.disposed).toBe(true);
      } finally {
        mha.dispose();
      }
    });

  test('cross attention over cached keys (kdim, vdim != embedDim, no mask), unbatched inputs, averaged weights', () => {
    const rng = ref.mulberry32(9200);
    const cfg = { embedDim: 12, numHeads: 3, kdim: 7, vdim: 5, bias: true };
    const weights = ref.randomMhaWeights(rng, { embedDim: 12, kdim: 7, vdim: 5 });
    const LK = 13;
    const key = rand(rng, [1, LK, 7]);
    const value = rand(rng, [1, LK, 5]);
    const mha = lab.multiHeadAttention(cfg);
    const cache = mha.createKVCache({ maxLength: 20 });
    try {
      mha.setWeights(Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)])));
      let seen = 0;
      for (const step of [4, 1, 8]) {
        const query = rand(rng, [3, 12]);
        const kNew = rows(key, seen, step);
        const vNew = rows(value, seen, step);
        seen += step;
        const unb = (t) => ({ data: Float32Array.from(t.data), shape: t.shape.slice(1) });
        const got = mha.forwardSync(query, unb(kNew), unb(vNew), { kvCache: cache, averageWeights: true });
        const exp = ref.multiHeadAttention(cfg, weights, { data: query.data, shape: [1, 3, 12] }, rows(key, 0, seen), rows(value, 0, seen), { averageWeights: true });
        expect(got.output.shape).toEqual([3, 12]);
        expect(got.weights.shape).toEqual([3, seen]);
        expectTensorClose(got.output, { data: exp.output.data, shape: [3, 12] }, TOL.attention, `output after ${seen} keys`);
        expectTensorClose(got.weights, { data: exp.weights.data, shape: [3, seen] }, TOL.attention, `weights after ${seen} keys`);
      }
    } finally {
      cache.dispose();
      mha.dispose();
    }
  });

  test('a padding mask and a tensor mask cover all cached keys [.., Lq, Lk_total]', () => {
    const rng = ref.mulberry32(9300);
    const cfg = { embedDim: 8, numHeads: 2, bias: true };
    const weights = ref.randomMhaWeights(rng, { embedDim: 8 });
    const x = rand(rng, [2, 6, 8]);
    const mha = lab.multiHeadAttention(cfg);
    const cache = mha.createKVCache({ maxLength: 6, batch: 2 });
    try {
      mha.setWeights(Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)])));
      mha.forwardSync(f32(rows(x, 0, 4)), undefined, undefined, { kvCache: cache, mask: { kind: 'causal' } });
      const lengths = [5, 3];
      const keep = { kind: 'keep', data: Float32Array.from([1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]), shape: [2, 1, 1, 6] };
      const mask = [{ kind: 'causal' }, { kind: 'padding', lengths }, keep];
      const got = mha.forwardSync(f32(rows(x, 4, 2)), undefined, undefined, { kvCache: cache, mask });
      const full = ref.multiHeadAttention(cfg, weights, x, x, x, { mask });
      expectTensorClose(got.output, rows(full.output, 4, 2), TOL.attention, 'output');
      expectTensorClose(got.weights, weightRows(full.weights, 4, 2, 6), TOL.attention, 'weights');
    } finally {
      cache.dispose();
      mha.dispose();
    }
  });

  test('truncate to a prompt, then continue with other tokens', () => {
    const rng = ref.mulberry32(9400);
    const cfg = { embedDim: 16, numHeads: 4, bias: true };
    const weights = ref.randomMhaWeights(rng, { embedDim: 16 });
    const P = 5, N = 3;
    const prompt = rand(rng, [1, P, 16]);
    const first = rand(rng, [1, N, 16]);
    const second = rand(rng, [1, N, 16]);
    const mha = lab.multiHeadAttention(cfg);
    const cache = mha.createKVCache({ maxLength: P + N });
    try {
      mha.setWeights(Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)])));
      const opts = { kvCache: cache, mask: { kind: 'causal' } };
      mha.forwardSync(prompt, undefined, undefined, opts);
      mha.forwardSync(first, undefined, undefined, opts);
      expect(() => cache.truncate(P + N + 1)).toThrow(/length must be an integer in \[0, 8\]|length/);
      expect(() => cache.truncate(-1)).toThrow(RangeError);
      cache.truncate(P);
      expect(cache.length).toBe(P);
      const got = mha.forwardSync(second, undefined, undefined, opts);
      const seq = { data: Float64Array.from([...prompt.data, ...second.data]), shape: [1, P + N, 16] };
      const exp = ref.multiHeadAttention(cfg, weights, seq, seq, seq, { mask: { kind: 'causal' } });
      expectTensorClose(got.output, rows(exp.output, P, N), TOL.attention, 'output after truncate');
      expectTensorClose(got.weights, weightRows(exp.weights, P, N, P + N), TOL.attention, 'weights after truncate');
    } finally {
      cache.dispose();
      mha.dispose();
    }
  });

  test('bad use gives clear errors and leaves the cache usable', async () => {
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, seed: 1 });
    const other = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, seed: 1 });
    const x = (B, L) => ({ data: new Float32Array(B * L * 8).map((_, i) => Math.sin(i)), shape: [B, L, 8] });
    try {
      expect(() => mha.createKVCache()).toThrow(/options\.maxLength is missing/);
      expect(() => mha.createKVCache({ maxLength: 0 })).toThrow(RangeError);
      expect(() => mha.createKVCache({ maxLength: 4, batch: 1.5 })).toThrow(/batch/);
      expect(() => mha.createKVCache({ maxLength: 2 ** 26, batch: 2 ** 10 })).toThrow(/at most/);
      const cache = mha.createKVCache({ maxLength: 5, batch: 2 });
      mha.forwardSync(x(2, 4), undefined, undefined, { kvCache: cache });
      expect(() => mha.forwardSync(x(2, 2), undefined, undefined, { kvCache: cache })).toThrow(/2 new key\(s\) do not fit: it holds 4 of at most 5 positions/);
      expect(() => mha.forwardSync(x(1, 1), undefined, undefined, { kvCache: cache })).toThrow(/holds batch 2 but the inputs have batch B = 1/);
      expect(() => other.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache })).toThrow(/belongs to another multiHeadAttention/);
      expect(() => mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: {} })).toThrow(TypeError);
      const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
      expect(() => layer.forwardSync(x(2, 1), { kvCache: cache })).toThrow(/selfAttentionLayer has no key\/value cache/);
      layer.dispose();
      // A tensor mask must cover all Lk_total = 5 keys.
      expect(() => mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache, mask: { kind: 'keep', data: new Float32Array(1), shape: [1, 1] } })).not.toThrow();
      expect(cache.length).toBe(5);
      cache.reset();
      expect(() => mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache, mask: { kind: 'keep', data: new Float32Array(4), shape: [1, 4] } })).toThrow(RangeError);
      expect(cache.length).toBe(0);
      // An unfinished async step blocks the next one and reset().
      const pending = mha.forward(x(2, 1), undefined, undefined, { kvCache: cache });
      expect(() => mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache })).toThrow(/in use by a forward that has not finished/);
      expect(() => cache.reset()).toThrow(/has not finished/);
      await pending;
      expect(cache.length).toBe(1);
      mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache });
      expect(cache.length).toBe(2);
      cache.dispose();
      cache.dispose();
      expect(cache.heldBytes()).toBe(0);
      expect(() => mha.forwardSync(x(2, 1), undefined, undefined, { kvCache: cache })).toThrow(/kvCache has been disposed/);
      expect(() => cache.reset()).toThrow(/disposed/);
    } finally {
      mha.dispose();
      other.dispose();
    }
  });

  test('decoding 300 steps leaves the wasm heap as it was once the cache is disposed', () => {
    const be = lab._backend;
    const mha = lab.multiHeadAttention({ embedDim: 32, numHeads: 4, seed: 2 });
    const x = { data: new Float32Array(32).fill(0.25), shape: [1, 1, 32] };
    mha.forwardSync(x); // scratch sized once
    const before = be.heapBytesInUse();
    const cache = mha.createKVCache({ maxLength: 300 });
    for (let t = 0; t < 300; t++) mha.forwardSync(x, x, x, { kvCache: cache, mask: { kind: 'causal' }, needWeights: t % 50 === 0 });
    expect(cache.length).toBe(300);
    cache.dispose();
    // The attention scratch may have grown with Lk; a second sequence reuses it.
    const grown = be.heapBytesInUse();
    const cache2 = mha.createKVCache({ maxLength: 300 });
    for (let t = 0; t < 300; t++) mha.forwardSync(x, x, x, { kvCache: cache2, mask: { kind: 'causal' }, needWeights: t % 50 === 0 });
    cache2.dispose();
    expect(be.heapBytesInUse()).toBe(grown);
    expect(grown - before).toBeLessThan(300 * 1024);
    mha.dispose();
  });
});
