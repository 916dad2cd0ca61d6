// simd-vs-scalar.test.js — the SIMD128 backend ('wasm') and the scalar
// reference kernels ('wasm-scalar') give closely agreeing results on the same
// random inputs, at sizes around the SIMD widths (4, 8, 16) and their tails.
import { init } from '../../web/node.js';
import { ref, TOL, expectTensorsAgree, expectTensorsEqual, rand, bits, unblockKey, f32Weights } from './helpers.js';

let simd;
let scalar;
beforeAll(async () => {
  simd = await init({ backend: 'wasm' });
  scalar = await init({ backend: 'wasm-scalar' });
});

test('backends and kernel arches', () => {
  expect(simd.backend).toBe('wasm');
  expect(scalar.backend).toBe('wasm-scalar');
  expect(scalar.kernelArch).toBe('scalar');
  expect(simd.kernelArch).not.toBe('scalar');
});

test('init with the same backend twice works and agrees', async () => {
  const again = await init({ backend: 'wasm' });
  expect(again.backend).toBe('wasm');
  const x = rand(ref.mulberry32(1), [5, 12]);
  expectTensorsEqual(again.selfAttention(x).output, simd.selfAttention(x).output, 'same backend');
});

test.each([[1, 1], [3, 5], [7, 9], [33, 17], [64, 64], [200, 513]])('positionalEncoding %i × %i', (L, E) => {
  expectTensorsAgree(simd.positionalEncoding(L, E), scalar.positionalEncoding(L, E), TOL.pe, 'pe');
});

const SDPA = [
  [[], 1, 1, 1, 1], [[], 3, 3, 3, 3], [[], 4, 4, 4, 4], [[], 5, 5, 5, 5], [[2], 8, 8, 8, 8],
  [[2], 7, 9, 9, 7], [[1, 3], 16, 16, 16, 16], [[1, 2], 15, 17, 17, 15], [[2, 2], 32, 31, 33, 64],
  [[1, 1], 1, 65, 64, 12], [[1, 4], 64, 64, 64, 64],
];
test.each(SDPA.map((s) => [`lead [${s[0]}] Lq=${s[1]} Lk=${s[2]} D=${s[3]} Dv=${s[4]}`, ...s]))('sdpa %s', (_, lead, Lq, Lk, D, Dv) => {
  const rng = ref.mulberry32(100 + Lq * 7 + Lk * 13 + D);
  const q = rand(rng, [...lead, Lq, D]), k = rand(rng, [...lead, Lk, D]), v = rand(rng, [...lead, Lk, Dv]);
  const masks = [undefined, { kind: 'causal' }];
  const [B] = ref.leadingAsBH(lead);
  masks.push([{ kind: 'padding', lengths: Array.from({ length: B }, (_, b) => Math.max(0, Lk - b)) },
    { kind: 'block', ...bits(rng, [Lq, Lk], 0.3, (d) => unblockKey(d, Lk)) }]);
  masks.push({ kind: 'additive', ...rand(rng, [Lq, Lk], { lo: -2, hi: 2 }) });
  for (const mask of masks) {
    const a = simd.scaledDotProductAttention(q, k, v, { mask });
    const b = scalar.scaledDotProductAttention(q, k, v, { mask });
    expectTensorsAgree(a.output, b.output, TOL.backends, `output, mask ${JSON.stringify(mask?.kind ?? mask?.length ?? 'none')}`);
    expectTensorsAgree(a.weights, b.weights, TOL.backends, 'weights');
  }
});

test.each([[4, 8], [9, 17], [16, 64], [3, 33]])('selfAttention [%i, %i]', (L, E) => {
  const x = rand(ref.mulberry32(L * 100 + E), [2, L, E]);
  const a = simd.selfAttention(x), b = scalar.selfAttention(x);
  expectTensorsAgree(a.output, b.output, TOL.backends, 'output');
  expectTensorsAgree(a.weights, b.weights, TOL.backends, 'weights');
});

const MHA = [
  { E: 8, H: 2, B: 2, Lq: 5, Lk: 5 },
  { E: 15, H: 5, B: 1, Lq: 4, Lk: 9, kdim: 7, vdim: 17 },
  { E: 64, H: 8, B: 2, Lq: 16, Lk: 16 },
  { E: 96, H: 4, B: 2, Lq: 17, Lk: 3, bias: false },
  { E: 256, H: 8, B: 1, Lq: 33, Lk: 33 },
];
test.each(MHA.map((c) => [`E=${c.E} H=${c.H} B=${c.B} Lq=${c.Lq} Lk=${c.Lk}`, c]))('multiHeadAttention %s', async (_, c) => {
  const rng = ref.mulberry32(c.E * 31 + c.Lq);
  const kdim = c.kdim ?? c.E, vdim = c.vdim ?? c.E;
  const cfg = { embedDim: c.E, numHeads: c.H, kdim, vdim, bias: c.bias ?? true };
  const w = f32Weights(ref.randomMhaWeights(rng, { embedDim: c.E, kdim, vdim, bias: cfg.bias }));
  const q = rand(rng, [c.B, c.Lq, c.E]), k = rand(rng, [c.B, c.Lk, kdim]), v = rand(rng, [c.B, c.Lk, vdim]);
  const ma = simd.multiHeadAttention(cfg), mb = scalar.multiHeadAttention(cfg);
  try {
    ma.setWeights(w);
    mb.setWeights(w);
    for (const opts of [{}, { mask: { kind: 'causal' }, averageWeights: true }]) {
      const a = await ma.forward(q, k, v, opts), b = await mb.forward(q, k, v, opts);
      expectTensorsAgree(a.output, b.output, TOL.backends, 'output');
      expectTensorsAgree(a.weights, b.weights, TOL.backends, 'weights');
    }
  } finally {
    ma.dispose();
    mb.dispose();
  }
});

test('default weights are the same on both backends (same seed)', () => {
  const a = simd.multiHeadAttention({ embedDim: 24, numHeads: 4, seed: 11 });
  const b = scalar.multiHeadAttention({ embedDim: 24, numHeads: 4, seed: 11 });
  try {
    const wa = a.getWeights(), wb = b.getWeights();
    for (const n of Object.keys(wa)) expectTensorsAgree(wa[n], wb[n], { abs: 1e-7, rel: 1e-6 }, n);
  } finally {
    a.dispose();
    b.dispose();
  }
});

test.each([[16, 4, 2, 7], [33, 3, 1, 16], [128, 8, 2, 9]])('selfAttentionLayer E=%i H=%i B=%i L=%i, eval and training', async (E, H, B, L) => {
  const rng = ref.mulberry32(E + H + L);
  const w = ref.randomMhaWeights(rng, { embedDim: E });
  w.gamma = rand(rng, [E], { lo: 0.5, hi: 1.5 });
  w.beta = rand(rng, [E], { lo: -0.5, hi: 0.5 });
  const x = rand(rng, [B, L, E]);
  const cfg = { embedDim: E, numHeads: H, dropout: 0.3 };
  const la = simd.selfAttentionLayer(cfg), lb = scalar.selfAttentionLayer(cfg);
  try {
    la.setWeights(f32Weights(w));
    lb.setWeights(f32Weights(w));
    for (const opts of [{}, { training: true, dropoutSeed: 77, mask: { kind: 'causal' } }]) {
      const a = await la.forward(x, opts), b = await lb.forward(x, opts);
      expectTensorsAgree(a.output, b.output, TOL.layer, 'output');
      expectTensorsAgree(a.weights, b.weights, TOL.backends, 'weights');
    }
  } finally {
    la.dispose();
    lb.dispose();
  }
});
