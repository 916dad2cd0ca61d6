// forward(…, { trace: 'values' }): every step's value, computed by the
// backend, against the float64 reference (tests/reference/reference.mjs
// forwardTraceReference / scaledDotProductAttention), on both wasm backends.
// The shape-only trace (trace: true) is covered by trace.test.js.
import { init } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, rand } from './helpers.js';

const f32 = (t) => ({ data: Float32Array.from(t.data), shape: t.shape });
const T = (data, shape) => ({ data, shape });
const byStep = (trace) => Object.fromEntries(trace.map((s) => [s.step, s]));

// Masked positions hold -1e9: compare them with a relative tolerance.
const SCORES = { abs: 2e-5, rel: 1e-4 };

const MASKS = [
  ['no mask', null],
  ['causal', { kind: 'causal' }],
  ['padding + keep tensor', (B, L) => [
    { kind: 'padding', lengths: Array.from({ length: B }, (_, b) => L - b) },
    { kind: 'keep', data: Array.from({ length: L * L }, (_, i) => (i % 3 === 1 ? 0 : 1)), shape: [L, L] },
  ]],
  ['additive', (B, L) => ({ kind: 'additive', data: Array.from({ length: L * L }, (_, i) => ((i * 7) % 5) * 0.25 - 0.5), shape: [L, L] })],
];

describe.each(BACKENDS)("trace: 'values' — %s", (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  test.each(MASKS)('multiHeadAttention, %s: every step equals the float64 reference', (_, maskSpec) => {
    const rng = ref.mulberry32(7300);
    const B = 2, L = 5, E = 16, H = 4, D = E / H;
    const cfg = { embedDim: E, numHeads: H };
    const weights = ref.randomMhaWeights(rng, { embedDim: E });
    const x = rand(rng, [B, L, E]);
    const mask = typeof maskSpec === 'function' ? maskSpec(B, L) : maskSpec;
    const exp = ref.forwardTraceReference(cfg, weights, x, x, x, { mask });
    const mha = lab.multiHeadAttention(cfg);
    mha.setWeights(Object.fromEntries(Object.entries(weights).filter(([, v]) => v).map(([k, v]) => [k, f32(v)])));
    const r = mha.forwardSync(f32(x), undefined, undefined, { mask: mask ?? undefined, trace: 'values', needWeights: true, averageWeights: true });
    const s = byStep(r.trace);
    expect(r.trace.map((t) => t.step)).toEqual(['input', 'linear_qkv', 'split_heads', 'scores', ...(mask ? ['mask'] : []),
      'softmax', 'weighted_sum', 'merge_heads', 'output_linear']);
    for (const step of r.trace) {
      expect(step.value.data).toBeInstanceOf(Float32Array);
      expect(step.value.shape).toEqual(step.shape);
    }
    expectTensorClose(s.input.value, T(x.data, [B, L, E]), { abs: 0, rel: 0 }, 'input');
    expectTensorClose(s.linear_qkv.value, T(exp.q, [B, L, E]), TOL.attention, 'linear_qkv (Q first)');
    expectTensorClose(s.linear_qkv.values.k, T(exp.k, [B, L, E]), TOL.attention, 'linear_qkv k');
    expectTensorClose(s.linear_qkv.values.v, T(exp.v, [B, L, E]), TOL.attention, 'linear_qkv v');
    expectTensorClose(s.split_heads.value, T(exp.heads.q, [B, H, L, D]), TOL.attention, 'split_heads q');
    expectTensorClose(s.split_heads.values.k, T(exp.heads.k, [B, H, L, D]), TOL.attention, 'split_heads k');
    expectTensorClose(s.split_heads.values.v, T(exp.heads.v, [B, H, L, D]), TOL.attention, 'split_heads v');
    expectTensorClose(s.scores.value, T(exp.scores, [B, H, L, L]), SCORES, 'scores');
    if (mask) expectTensorClose(s.mask.value, T(exp.masked, [B, H, L, L]), SCORES, 'masked scores');
    expectTensorClose(s.softmax.value, T(exp.weights, [B, H, L, L]), TOL.attention, 'softmax');
    expectTensorClose(s.weighted_sum.value, T(exp.weighted, [B, H, L, D]), TOL.attention, 'weighted_sum');
    expectTensorClose(s.merge_heads.value, T(exp.context, [B, L, E]), TOL.attention, 'merge_heads');
    expectTensorClose(s.output_linear.value, T(exp.attention, [B, L, E]), TOL.attention, 'output_linear');
    // The call's own results are unchanged by the trace.
    const plain = mha.forwardSync(f32(x), undefined, undefined, { mask: mask ?? undefined, averageWeights: true });
    expect(Array.from(r.output.data)).toEqual(Array.from(plain.output.data));
    expectTensorClose(r.weights, { data: Float64Array.from(plain.weights.data), shape: plain.weights.shape }, { abs: 1e-7, rel: 0 }, 'averaged weights');
    mha.dispose();
  });

  test('multiHeadAttention, cross attention (Lq != Lk, kdim, vdim), unbatched', () => {
    const rng = ref.mulberry32(7301);
    const Lq = 3, Lk = 6, E = 12, H = 3, kdim = 5, vdim = 7;
    const cfg = { embedDim: E, numHeads: H, kdim, vdim };
    const weights = ref.randomMhaWeights(rng, { embedDim: E, kdim, vdim });
    const q = rand(rng, [1, Lq, E]);
    const k = rand(rng, [1, Lk, kdim]);
    const v = rand(rng, [1, Lk, vdim]);
    const exp = ref.forwardTraceReference(cfg, weights, q, k, v);
    const mha = lab.multiHeadAttention(cfg);
    mha.setWeights(Object.fromEntries(Object.entries(weights).filter(([, w]) => w).map(([n, w]) => [n, f32(w)])));
    const un = (t) => ({ data: Float32Array.from(t.data), shape: t.shape.slice(1) });
    const r = mha.forwardSync(un(q), un(k), un(v), { trace: 'values', needWeights: false });
    expect(r.weights).toBeNull();
    const s = byStep(r.trace);
    expectTensorClose(s.linear_qkv.values.k, T(exp.k, [Lk, E]), TOL.attention, 'k');
    expectTensorClose(s.scores.value, T(exp.scores, [H, Lq, Lk]), SCORES, 'scores');
    expectTensorClose(s.softmax.value, T(exp.weights, [H, Lq, Lk]), TOL.attention, 'softmax');
    expectTensorClose(s.output_linear.value, T(exp.attention, [Lq, E]), TOL.attention, 'output');
    mha.dispose();
  });

  test.each([[false], [true]])('selfAttentionLayer (training %s): dropout, residual, layer_norm', (training) => {
    const rng = ref.mulberry32(7302);
    const B = 2, L = 4, E = 8, H = 2;
    const cfg = { embedDim: E, numHeads: H, dropout: 0.25 };
    const weights = ref.randomMhaWeights(rng, { embedDim: E });
    const gamma = rand(rng, [E]);
    const beta = rand(rng, [E]);
    const x = rand(rng, [B, L, E]);
    const exp = ref.forwardTraceReference(cfg, weights, x, x, x,
      { mask: { kind: 'causal' }, layer: { dropout: 0.25, training, dropoutSeed: 1234, gamma, beta } });
    const layer = lab.selfAttentionLayer(cfg);
    layer.setWeights({ ...Object.fromEntries(Object.entries(weights).filter(([, v]) => v).map(([k, v]) => [k, f32(v)])), gamma: f32(gamma), beta: f32(beta) });
    const r = layer.forwardSync(f32(x), { mask: { kind: 'causal' }, trace: 'values', training, dropoutSeed: 1234 });
    const s = byStep(r.trace);
    expect(r.trace.map((t) => t.step).slice(-3)).toEqual(['dropout', 'residual', 'layer_norm']);
    expectTensorClose(s.mask.value, T(exp.masked, [B, H, L, L]), SCORES, 'masked');
    expectTensorClose(s.output_linear.value, T(exp.attention, [B, L, E]), TOL.attention, 'output_linear');
    expectTensorClose(s.dropout.value, T(exp.dropout, [B, L, E]), TOL.layer, 'dropout');
    expectTensorClose(s.residual.value, T(exp.residual, [B, L, E]), TOL.layer, 'residual');
    expectTensorClose(s.layer_norm.value, T(exp.output, [B, L, E]), TOL.layer, 'layer_norm');
    expect(Array.from(s.layer_norm.value.data)).toEqual(Array.from(r.output.data));
    layer.dispose();
  });

  test('scaledDotProductAttention and selfAttention', () => {
    const rng = ref.mulberry32(7303);
    const q = rand(rng, [2, 3, 4, 5]);
    const k = rand(rng, [2, 3, 6, 5]);
    const v = rand(rng, [2, 3, 6, 7]);
    const mask = { kind: 'padding', lengths: [6, 2] };
    const exp = ref.scaledDotProductAttention(q, k, v, { mask });
    const r = lab.scaledDotProductAttention(f32(q), f32(k), f32(v), { mask, trace: 'values', needWeights: false });
    expect(r.weights).toBeNull();
    expect(r.trace.map((t) => t.step)).toEqual(['scores', 'mask', 'softmax', 'weighted_sum']);
    const s = byStep(r.trace);
    // Scaled scores Q·Kᵀ/√D in float64; masked: the same, keys past the padding length -1e9.
    const scores = new Float64Array(2 * 3 * 4 * 6);
    const masked = new Float64Array(scores.length);
    for (let n = 0; n < 6; n++) for (let i = 0; i < 4; i++) for (let j = 0; j < 6; j++) {
      let acc = 0;
      for (let d = 0; d < 5; d++) acc += q.data[(n * 4 + i) * 5 + d] * k.data[(n * 6 + j) * 5 + d];
      const idx = (n * 4 + i) * 6 + j;
      scores[idx] = acc / Math.sqrt(5);
      masked[idx] = j >= mask.lengths[Math.floor(n / 3)] ? -1e9 : scores[idx];
    }
    expectTensorClose(s.scores.value, T(scores, [2, 3, 4, 6]), SCORES, 'scores');
    expectTensorClose(s.mask.value, T(masked, [2, 3, 4, 6]), SCORES, 'masked');
    expectTensorClose(s.softmax.value, exp.weights, TOL.attention, 'softmax');
    expectTensorClose(s.weighted_sum.value, exp.output, TOL.attention, 'weighted_sum');

    const x = rand(rng, [5, 4]);
    const ex = ref.selfAttention(x);
    const rs = lab.selfAttention(f32(x), { trace: 'values' });
    const ss = byStep(rs.trace);
    expectTensorClose(ss.softmax.value, ex.weights, TOL.attention, 'selfAttention softmax');
    expectTensorClose(ss.weighted_sum.value, ex.output, TOL.attention, 'selfAttention weighted_sum');
    // Shape-only: trace: true has the steps without values.
    const shapes = lab.selfAttention(f32(x), { trace: true });
    expect(shapes.trace.map((t) => t.step)).toEqual(['scores', 'softmax', 'weighted_sum']);
    expect(shapes.trace.every((t) => !('value' in t))).toBe(true);
  });

  test('the shape-only trace keeps its form; bad trace values are refused', () => {
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const x = { data: new Float32Array(3 * 8), shape: [3, 8] };
    const r = mha.forwardSync(x, undefined, undefined, { trace: true });
    expect(r.trace.every((t) => !('value' in t))).toBe(true);
    expect(() => mha.forwardSync(x, undefined, undefined, { trace: 'all' })).toThrow(TypeError);
    expect(() => mha.forwardSync(x, undefined, undefined, { trace: 'all' })).toThrow(/trace must be true \(the shape trace\), false or 'values'/);
    expect(() => lab.scaledDotProductAttention(x, x, x, { trace: 1 })).toThrow(TypeError);
    mha.dispose();
  });
});
