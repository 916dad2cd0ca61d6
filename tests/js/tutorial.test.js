// tutorial.test.js — the examples of the source tutorials (docs: /work/shared/MISSION.md)
// computed with the library and checked against the float64 reference.
//   Tutorial 1: self-attention basics in five steps.
//   Tutorial 2: multi-head attention shapes for B=2, L=5, E=512, H=8.
//   Tutorial 3: multi-head = split heads → sdpa per head → dense.
import { init } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, expectTensorsAgree, rand, f32Weights } from './helpers.js';

/** torch.randn-like float32 tensor. */
const randn = (rng, shape) => rand(rng, shape, { dist: 'normal' });

/** x·W for x [m,k], W [k,n] in float64, rounded to float32 (torch.matmul in fp32). */
function project(x, w) {
  const [m, k] = x.shape, n = w.shape[1];
  return { data: Float32Array.from(ref.matmul(x.data, w.data, m, k, n)), shape: [m, n] };
}

/** torch nn.Linear default init range ±1/√in for weights and biases. */
const linearWeights = (rng, E) => ref.randomMhaWeights(rng, { embedDim: E });

describe.each(BACKENDS)('tutorials — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  describe('tutorial 1: self-attention in five steps', () => {
    test('step 1: bare self-attention softmax(X Xᵀ/√8) X on X [4, 8]', () => {
      const X = randn(ref.mulberry32(1), [4, 8]);
      const r = lab.selfAttention(X);
      expect(r.output.shape).toEqual([4, 8]);
      expect(r.weights.shape).toEqual([4, 4]);
      const exp = ref.selfAttention(X);
      expectTensorClose(r.output, exp.output, TOL.attention, 'output');
      expectTensorClose(r.weights, exp.weights, TOL.attention, 'weights');
      for (let i = 0; i < 4; i++) {
        const s = r.weights.data.slice(i * 4, i * 4 + 4).reduce((a, b) => a + b, 0);
        expect(Math.abs(s - 1)).toBeLessThan(1e-5);
      }
    });

    test('steps 2–3: Q = X W_Q, K = X W_K, V = X W_V (d_model 64 → d_k = d_v = 32), then sdpa', () => {
      const rng = ref.mulberry32(2);
      const X = randn(rng, [6, 64]);
      const WQ = randn(rng, [64, 32]), WK = randn(rng, [64, 32]), WV = randn(rng, [64, 32]);
      const Q = project(X, WQ), K = project(X, WK), V = project(X, WV);
      // The table of step 2: Q [seq_len, d_k], K [seq_len, d_k], V [seq_len, d_v]
      expect([Q.shape, K.shape, V.shape]).toEqual([[6, 32], [6, 32], [6, 32]]);
      const r = lab.scaledDotProductAttention(Q, K, V);
      expect(r.output.shape).toEqual([6, 32]);
      expect(r.weights.shape).toEqual([6, 6]);
      const exp = ref.scaledDotProductAttention(Q, K, V);
      // torch.randn projections (no 1/√d init) give |Q|,|K|,|V| ~ 8 and scaled
      // scores ~ 64: float32 rounding of a score is then ~64·6e-8·√32 ≈ 2e-5,
      // and the output is a weighted sum of values ~ 8, so the bounds scale
      // with those magnitudes.
      expectTensorClose(r.weights, exp.weights, { abs: 1e-4, rel: 1e-4 }, 'weights');
      expectTensorClose(r.output, exp.output, { abs: 1e-3, rel: 1e-4 }, 'output');
    });

    test('step 3: dividing by √d_k keeps softmax out of saturation', () => {
      const rng = ref.mulberry32(3);
      const X = randn(rng, [6, 64]);
      const W = [randn(rng, [64, 32]), randn(rng, [64, 32]), randn(rng, [64, 32])].map((w) => ({
        data: w.data.map((t) => t / 8), shape: w.shape, // nn.Linear-like scale 1/√d_model
      }));
      const [Q, K, V] = W.map((w) => project(X, w));
      const meanMax = (w) => {
        let s = 0;
        for (let i = 0; i < 6; i++) s += Math.max(...w.data.slice(i * 6, i * 6 + 6));
        return s / 6;
      };
      const scaled = lab.scaledDotProductAttention(Q, K, V);
      const unscaled = lab.scaledDotProductAttention(Q, K, V, { scale: 1 });
      expect(meanMax(unscaled.weights)).toBeGreaterThan(meanMax(scaled.weights));
      expectTensorClose(unscaled.weights, ref.scaledDotProductAttention(Q, K, V, { scale: 1 }).weights, TOL.attention, 'unscaled weights');
    });

    test('step 4: multi-head attention, d_model 512 divisible by 8 heads, nn.Linear with bias, separate Q/K/V inputs', async () => {
      const rng = ref.mulberry32(4);
      const w = linearWeights(rng, 512);
      const q = randn(rng, [2, 5, 512]), k = randn(rng, [2, 5, 512]), v = randn(rng, [2, 5, 512]);
      const mha = lab.multiHeadAttention({ embedDim: 512, numHeads: 8, bias: true });
      try {
        mha.setWeights(f32Weights(w));
        const r = await mha.forward(q, k, v);
        expect(r.output.shape).toEqual([2, 5, 512]);
        expect(r.weights.shape).toEqual([2, 8, 5, 5]);
        const exp = ref.multiHeadAttention({ embedDim: 512, numHeads: 8 }, w, q, k, v);
        // E = 512 > 256 and inputs ~ N(0,1): projections sum 512 products, so
        // allow twice the E ≤ 256 bound.
        expectTensorClose(r.output, exp.output, { abs: 4e-5, rel: 2e-4 }, 'output');
        expectTensorClose(r.weights, exp.weights, { abs: 4e-5, rel: 2e-4 }, 'weights');
      } finally {
        mha.dispose();
      }
      expect(() => lab.multiHeadAttention({ embedDim: 512, numHeads: 7 })).toThrow(RangeError);
    });

    test('step 5: positional encoding max_len 5000 × d_model 512', () => {
      const pe = lab.positionalEncoding(5000, 512);
      expect(pe.shape).toEqual([5000, 512]);
      expectTensorClose(pe, ref.positionalEncoding(5000, 512), TOL.pe, 'pe 5000×512');
    });

    test('step 5: x + PE[:L] through SelfAttentionLayer (MHA → dropout 0.1 → residual → LayerNorm)', async () => {
      const rng = ref.mulberry32(5);
      const L = 10, E = 512, H = 8;
      const x = randn(rng, [2, L, E]);
      const pe = lab.positionalEncoding(L, E); // pe[:, :x.size(1)]
      const xp = { data: new Float32Array(x.data.length), shape: x.shape };
      for (let b = 0; b < 2; b++) for (let t = 0; t < L * E; t++) xp.data[b * L * E + t] = x.data[b * L * E + t] + pe.data[t];
      // the reference adds its own float64 PE, rounded to float32 like the library's output
      const refPe = ref.positionalEncoding(L, E);
      for (let b = 0; b < 2; b++) for (let t = 0; t < L * E; t++) {
        expect(Math.abs(xp.data[b * L * E + t] - Math.fround(x.data[b * L * E + t] + Math.fround(refPe.data[t])))).toBeLessThan(1e-5);
      }
      const w = linearWeights(rng, E); // gamma/beta default ones/zeros (nn.LayerNorm)
      const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.1 });
      try {
        layer.setWeights(f32Weights(w));
        const ev = await layer.forward(xp);
        expect(ev.output.shape).toEqual([2, L, E]);
        expect(ev.weights.shape).toEqual([2, H, L, L]);
        const tol = { abs: 1e-4, rel: 2e-4 }; // E = 512 (see step 4) through LayerNorm
        expectTensorClose(ev.output, ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.1 }, w, xp).output, tol, 'eval output');
        const tr = await layer.forward(xp, { training: true, dropoutSeed: 31337 });
        expectTensorClose(tr.output, ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.1 }, w, xp,
          { training: true, dropoutSeed: 31337 }).output, tol, 'training output');
      } finally {
        layer.dispose();
      }
    });
  });

  describe('tutorial 2: dimension flow for B=2, L=5, E=512, H=8', () => {
    test('the test case prints output [2, 5, 512] and attention [2, 8, 5, 5]', async () => {
      const model = lab.multiHeadAttention({ embedDim: 512, numHeads: 8 });
      try {
        const inputs = randn(ref.mulberry32(6), [2, 5, 512]);
        const { output, weights } = await model.forward(inputs, inputs, inputs);
        expect(`${output.shape}`).toBe('2,5,512');
        expect(`${weights.shape}`).toBe('2,8,5,5');
        expect(model.headDim).toBe(64);
        // and it is the right answer for the module's own (default) weights
        const exp = ref.multiHeadAttention({ embedDim: 512, numHeads: 8 }, model.getWeights(), inputs);
        expectTensorClose(output, exp.output, { abs: 4e-5, rel: 2e-4 }, 'output');
        expectTensorClose(weights, exp.weights, { abs: 4e-5, rel: 2e-4 }, 'weights');
      } finally {
        model.dispose();
      }
    });

    test('masking: PyTorch masked_fill(mask == 0, -1e9) and TensorFlow scores += mask·-1e9 agree for padding', async () => {
      const rng = ref.mulberry32(7);
      const w = linearWeights(rng, 64);
      const x = randn(rng, [2, 5, 64]);
      const lengths = [5, 3];
      const keep = new Float32Array(10), block = new Float32Array(10);
      for (let b = 0; b < 2; b++) for (let j = 0; j < 5; j++) { keep[b * 5 + j] = j < lengths[b] ? 1 : 0; block[b * 5 + j] = 1 - keep[b * 5 + j]; }
      const mha = lab.multiHeadAttention({ embedDim: 64, numHeads: 8 });
      try {
        mha.setWeights(f32Weights(w));
        const pt = await mha.forward(x, x, x, { mask: { kind: 'keep', data: keep, shape: [2, 1, 1, 5] } });
        const tf = await mha.forward(x, x, x, { mask: { kind: 'block', data: block, shape: [2, 1, 1, 5] } });
        const pad = await mha.forward(x, x, x, { mask: { kind: 'padding', lengths } });
        expectTensorsAgree(tf.output, pt.output, TOL.backends, 'block vs keep');
        expectTensorsAgree(pad.output, pt.output, TOL.backends, 'padding vs keep');
        expectTensorClose(pt.output, ref.multiHeadAttention({ embedDim: 64, numHeads: 8 }, w, x, x, x,
          { mask: { kind: 'padding', lengths } }).output, TOL.attention, 'vs reference');
        // padded keys get (numerically) zero weight
        for (let h = 0; h < 8; h++) for (let i = 0; i < 5; i++) for (let j = 3; j < 5; j++) {
          expect(pt.weights.data[((1 * 8 + h) * 5 + i) * 5 + j]).toBeLessThan(1e-30);
        }
      } finally {
        mha.dispose();
      }
    });
  });

  describe('tutorial 3: multi-head is split_heads → sdpa per head → dense', () => {
    test('MHA equals the library sdpa on split projections, merged and projected', async () => {
      const rng = ref.mulberry32(8);
      const E = 32, H = 4, D = 8, B = 2, L = 6;
      const w = linearWeights(rng, E);
      const x = randn(rng, [B, L, E]);
      const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H });
      try {
        mha.setWeights(f32Weights(w));
        const got = await mha.forward(x);
        // projections and split heads (float64, rounded to float32)
        const lin = (X, W, b) => ref.linearTorch(X, B * L, E, W.data, b.data, E);
        const split = (P) => {
          const out = new Float32Array(B * H * L * D);
          for (let bb = 0; bb < B; bb++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) {
            out[((bb * H + h) * L + i) * D + d] = P[(bb * L + i) * E + h * D + d];
          }
          return { data: out, shape: [B, H, L, D] };
        };
        const q = split(lin(x.data, w.wq, w.bq)), k = split(lin(x.data, w.wk, w.bk)), v = split(lin(x.data, w.wv, w.bv));
        const heads = lab.scaledDotProductAttention(q, k, v);
        expectTensorClose(got.weights, { data: Float64Array.from(heads.weights.data), shape: heads.weights.shape }, TOL.attention, 'per-head weights');
        const concat = new Float64Array(B * L * E);
        for (let bb = 0; bb < B; bb++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < D; d++) {
          concat[(bb * L + i) * E + h * D + d] = heads.output.data[((bb * H + h) * L + i) * D + d];
        }
        const out = ref.linearTorch(concat, B * L, E, w.wo.data, w.bo.data, E);
        expectTensorClose(got.output, { data: out, shape: [B, L, E] }, TOL.attention, 'dense(concat(heads))');
      } finally {
        mha.dispose();
      }
    });
  });
});
