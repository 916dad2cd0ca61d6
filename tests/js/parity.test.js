// parity.test.js — every API function against the independent float64
// reference (tests/reference/reference.mjs), on both wasm backends, over
// random shapes from a seeded PRNG: sizes equal to, below, above and multiples
// of the SIMD widths 4, 8 and 16; L = 1; Lq ≠ Lk; odd E; D not a multiple of 4;
// every mask kind and their combinations; both weight layouts; bias false;
// kdim/vdim ≠ E; averaged weights; unbatched inputs.
import { init } from '../../web/node.js';
import {
  ref, BACKENDS, TOL, expectTensorClose, expectTensorsEqual, expectTensorsAgree,
  rand, bits, unblockKey, f32Weights, kerasWeights,
} from './helpers.js';

const SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33];
const DIMS = [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 64, 65];

// ---------------------------------------------------------------------------
// Case tables (deterministic)

const PE_CASES = [
  [1, 1], [1, 8], [2, 3], [3, 4], [4, 7], [5, 8], [7, 9], [9, 15], [9, 16], [8, 17],
  [33, 17], [50, 64], [16, 65], [128, 512], [1000, 32],
];

const SELF_ATTENTION_CASES = [
  [1, 1], [1, 5], [4, 8], [3, 7], [5, 3], [8, 16], [9, 17], [16, 4], [17, 33], [31, 64],
  [2, 5, 12], [3, 1, 4], [2, 9, 7], [1, 16, 16],
];

function sdpaShapeCases() {
  const rng = ref.mulberry32(1001);
  const cases = [
    { lead: [], Lq: 1, Lk: 1, D: 1, Dv: 1 },
    { lead: [], Lq: 4, Lk: 4, D: 4, Dv: 4 },
    { lead: [], Lq: 5, Lk: 7, D: 8, Dv: 3 },
    { lead: [2], Lq: 8, Lk: 8, D: 8, Dv: 8 },
    { lead: [1, 2], Lq: 16, Lk: 16, D: 16, Dv: 16 },
    { lead: [2, 3], Lq: 3, Lk: 17, D: 15, Dv: 9 },
    { lead: [2, 1], Lq: 17, Lk: 3, D: 17, Dv: 5 },
    { lead: [1, 1], Lq: 1, Lk: 33, D: 64, Dv: 7 },
    { lead: [3, 2], Lq: 32, Lk: 32, D: 32, Dv: 32 },
    { lead: [2, 2, 2], Lq: 5, Lk: 6, D: 7, Dv: 3 }, // rank 5 (no mask)
  ];
  for (let t = 0; t < 16; t++) {
    const rank = ref.randInt(rng, 2, 4);
    const lead = [];
    for (let i = 0; i < rank - 2; i++) lead.push(ref.randInt(rng, 1, 3));
    cases.push({ lead, Lq: ref.pick(rng, SIZES), Lk: ref.pick(rng, SIZES), D: ref.pick(rng, DIMS), Dv: ref.pick(rng, DIMS) });
  }
  return cases;
}

// Mask cases for sdpa. Rank 4 inputs [B,H,..] for tensor masks, so masks of
// every broadcast form apply. Rows fully masked only by fill (causal, padding,
// keep) or by an all-ones block/all -inf additive row, never by a mix of fill
// and additive values (whose result the contract leaves to float32 rounding).
function sdpaMaskCases() {
  const rng = ref.mulberry32(2002);
  const C = [];
  const add = (name, lead, Lq, Lk, mask, D = 8, Dv = 8) => C.push({ name, lead, Lq, Lk, D, Dv, mask });
  const B = 2, H = 3, Lq = 4, Lk = 5;
  const TENSOR_SHAPES = [[Lq, Lk], [B, 1, 1, Lk], [B, 1, Lq, Lk], [B, H, Lq, Lk], [H, 1, Lk], [Lk], [1, 1, 1, 1], [Lq, 1], [1, H, Lq, 1]];

  add('causal, Lq = Lk, rank 4', [2, 3], 6, 6, { kind: 'causal' });
  add('causal, Lq < Lk (top-left aligned)', [2, 2], 3, 7, { kind: 'causal' });
  add('causal, Lq > Lk, rank 3', [2], 7, 3, { kind: 'causal' });
  add('causal, rank 2, L = 1', [], 1, 1, { kind: 'causal' });
  add('causal given as an array of one spec, rank 2', [], 9, 9, [{ kind: 'causal' }], 5, 3);
  add('causal, L = 17, D = 33', [1, 2], 17, 17, { kind: 'causal' }, 33, 16);
  add('padding, rank 4, lengths include 0 and Lk', [3, 2], 4, 5, { kind: 'padding', lengths: [5, 0, 2] });
  add('padding, rank 3', [2], 5, 9, { kind: 'padding', lengths: [1, 9] }, 16, 4);
  add('padding, rank 2', [], 4, 6, { kind: 'padding', lengths: [3] });
  for (const s of TENSOR_SHAPES) {
    add(`keep [${s}]`, [B, H], Lq, Lk, { kind: 'keep', ...bits(rng, s, 0.7) }, 7, 9);
  }
  for (const s of TENSOR_SHAPES) {
    const m = bits(rng, s, 0.35, (d) => s[s.length - 1] === Lk && unblockKey(d, Lk, 0));
    if (s[s.length - 1] === 1) m.data.fill(0);
    if (s.length === 4 && s[3] === 1) m.data[0] = 1; // one whole row blocked in [1,H,Lq,1]
    add(`block [${s}]`, [B, H], Lq, Lk, { kind: 'block', ...m }, 4, 5);
  }
  for (const s of [[Lq, Lk], [B, 1, 1, Lk], [B, H, Lq, Lk], [H, 1, Lk]]) {
    add(`additive [${s}]`, [B, H], Lq, Lk, { kind: 'additive', ...rand(rng, s, { lo: -3, hi: 3 }) }, 16, 3);
  }
  {
    const m = rand(rng, [Lq, Lk], { lo: -1, hi: 1 });
    m.data[0 * Lk + 2] = -Infinity;
    for (let j = 0; j < Lk; j++) m.data[2 * Lk + j] = -Infinity; // row 2 all -inf → uniform
    add('additive with -Infinity entries and an all -inf row', [B, H], Lq, Lk, { kind: 'additive', ...m });
  }
  add('block all ones → every row uniform', [B, H], Lq, Lk, { kind: 'block', data: new Float32Array([1]), shape: [1, 1, 1, 1] });
  add('keep with values other than 0/1 (nonzero keeps)', [B, H], Lq, Lk,
    { kind: 'keep', data: Float32Array.from({ length: Lq * Lk }, (_, i) => [0, 1, 2, -0.5][i % 4]), shape: [Lq, Lk] });
  add('keep as nested arrays without shape', [B, H], Lq, Lk,
    { kind: 'keep', data: ref.toNested(bits(rng, [Lq, Lk], 0.7).data, [Lq, Lk]).map((r) => r.map(Number)) });
  add('block [B,1,1,Lk] as nested arrays without shape', [B, H], Lq, Lk,
    { kind: 'block', data: ref.toNested(bits(rng, [B, 1, 1, Lk], 0.4, (d) => unblockKey(d, Lk)).data, [B, 1, 1, Lk]) });
  // Combinations
  add('causal + padding (length 0 row)', [B, H], 5, 5, [{ kind: 'causal' }, { kind: 'padding', lengths: [3, 0] }]);
  add('causal + keep [B,1,Lq,Lk]', [B, H], 6, 6, [{ kind: 'causal' }, { kind: 'keep', ...bits(rng, [B, 1, 6, 6], 0.7) }]);
  add('padding + block [B,1,1,Lk]', [B, H], Lq, 7, [{ kind: 'padding', lengths: [7, 2] },
    { kind: 'block', ...bits(rng, [B, 1, 1, 7], 0.4, (d) => unblockKey(d, 7)) }]);
  add('causal + padding + additive [Lq,Lk]', [B, H], 6, 6, [{ kind: 'causal' }, { kind: 'padding', lengths: [6, 4] },
    { kind: 'additive', ...rand(rng, [6, 6], { lo: -2, hi: 2 }) }]);
  add('causal + padding + keep [B,H,Lq,Lk], Lq ≠ Lk', [B, H], 4, 6, [{ kind: 'keep', ...bits(rng, [B, H, 4, 6], 0.7) },
    { kind: 'padding', lengths: [0, 5] }, { kind: 'causal' }]);
  return C;
}

const MHA_CONFIGS = [
  { E: 8, H: 2, B: 2, Lq: 5 },
  { E: 4, H: 4, B: 1, Lq: 3 }, // D = 1
  { E: 7, H: 1, B: 2, Lq: 4 }, // odd E
  { E: 12, H: 3, B: 3, Lq: 1 }, // L = 1
  { E: 16, H: 4, B: 2, Lq: 8, Lk: 9 }, // cross attention
  { E: 20, H: 5, B: 1, Lq: 17, Lk: 16 },
  { E: 24, H: 8, B: 2, Lq: 4, kdim: 5, vdim: 9 }, // D = 3, kdim/vdim ≠ E
  { E: 33, H: 3, B: 2, Lq: 7, Lk: 3, bias: false }, // D = 11
  { E: 64, H: 4, B: 2, Lq: 9, kdim: 17, vdim: 31, bias: false },
  { E: 96, H: 6, B: 1, Lq: 15, Lk: 33 },
  { E: 128, H: 8, B: 2, Lq: 5 },
  { E: 256, H: 8, B: 1, Lq: 12, Lk: 7 },
  { E: 30, H: 10, B: 2, Lq: 16, kdim: 4, vdim: 4 },
];

const cfgName = (c) => `E=${c.E} H=${c.H} B=${c.B} Lq=${c.Lq} Lk=${c.Lk ?? c.Lq}`
  + `${c.kdim ? ` kdim=${c.kdim}` : ''}${c.vdim ? ` vdim=${c.vdim}` : ''}${c.bias === false ? ' bias=false' : ''}`;

function makeMhaCase(c, seed) {
  const rng = ref.mulberry32(seed);
  const kdim = c.kdim ?? c.E, vdim = c.vdim ?? c.E, Lk = c.Lk ?? c.Lq, bias = c.bias ?? true;
  const weights = ref.randomMhaWeights(rng, { embedDim: c.E, kdim, vdim, bias });
  const query = rand(rng, [c.B, c.Lq, c.E]);
  const self = Lk === c.Lq && kdim === c.E && vdim === c.E && !c.cross;
  const key = self ? query : rand(rng, [c.B, Lk, kdim]);
  const value = self ? query : rand(rng, [c.B, Lk, vdim]);
  return { cfg: { embedDim: c.E, numHeads: c.H, kdim, vdim, bias }, weights, query, key, value, self, Lk, rng };
}

const LAYER_CONFIGS = [
  { E: 8, H: 2, B: 2, L: 5 },
  { E: 16, H: 4, B: 1, L: 1 },
  { E: 7, H: 7, B: 2, L: 3 },
  { E: 64, H: 8, B: 2, L: 9 },
  { E: 33, H: 11, B: 1, L: 17 },
];

function makeLayerCase(c, seed) {
  const rng = ref.mulberry32(seed);
  const weights = ref.randomMhaWeights(rng, { embedDim: c.E });
  weights.gamma = rand(rng, [c.E], { lo: 0.5, hi: 1.5 });
  weights.beta = rand(rng, [c.E], { lo: -0.5, hi: 0.5 });
  const x = rand(rng, [c.B, c.L, c.E]);
  return { weights, x, rng };
}

// ---------------------------------------------------------------------------

describe.each(BACKENDS)('parity with the float64 reference — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  test('init selects the requested backend', () => {
    expect(lab.backend).toBe(backend);
    expect(typeof lab.kernelArch).toBe('string');
    if (backend === 'wasm-scalar') expect(lab.kernelArch).toBe('scalar');
  });

  // -------------------------------------------------------------------------
  describe('positionalEncoding', () => {
    test.each(PE_CASES)('seqLen %i, dModel %i', (L, E) => {
      const got = lab.positionalEncoding(L, E);
      expectTensorClose(got, ref.positionalEncoding(L, E), TOL.pe, `PE(${L},${E})`);
    });

    test.each([[100, 6, 8], [2.5, 5, 7], [1e6, 10, 12]])('base %d (seqLen %i, dModel %i)', (base, L, E) => {
      const got = lab.positionalEncoding(L, E, { base });
      expectTensorClose(got, ref.positionalEncoding(L, E, base), TOL.pe, `PE base ${base}`);
    });

    test('known values: PE(0,even) = 0, PE(0,odd) = 1, PE(1,0) = sin 1, PE(1,1) = cos 1', () => {
      const { data } = lab.positionalEncoding(3, 9);
      for (let j = 0; j < 9; j++) expect(data[j]).toBe(j % 2 === 0 ? 0 : 1);
      expect(data[9]).toBeCloseTo(Math.sin(1), 6);
      expect(data[10]).toBeCloseTo(Math.cos(1), 6);
      expect(data[9 + 8]).toBeCloseTo(Math.sin(1 / Math.pow(10000, 8 / 9)), 6); // odd dModel: last column is a sin
    });
  });

  // -------------------------------------------------------------------------
  describe('selfAttention', () => {
    test.each(SELF_ATTENTION_CASES.map((s) => [s.join('×'), s]))('x [%s]', (_, shape) => {
      const rng = ref.mulberry32(3000 + shape.reduce((a, b) => a * 31 + b, 7));
      const x = rand(rng, shape);
      const got = lab.selfAttention(x);
      const exp = ref.selfAttention(x);
      expectTensorClose(got.output, exp.output, TOL.attention, 'output');
      expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
    });

    test('scale option', () => {
      const x = rand(ref.mulberry32(31), [6, 10]);
      const got = lab.selfAttention(x, { scale: 0.05 });
      const exp = ref.selfAttention(x, { scale: 0.05 });
      expectTensorClose(got.output, exp.output, TOL.attention, 'output');
      expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
    });

    test.each([
      ['causal, [L,E]', [7, 6], { kind: 'causal' }],
      ['causal + padding, [B,L,E]', [2, 5, 6], [{ kind: 'causal' }, { kind: 'padding', lengths: [5, 2] }]],
      ['keep [L,L], [B,L,E]', [2, 4, 3], { kind: 'keep', data: new Float32Array([1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1]), shape: [4, 4] }],
    ])('mask: %s', (_, shape, mask) => {
      const x = rand(ref.mulberry32(32), shape);
      const got = lab.selfAttention(x, { mask });
      const exp = ref.selfAttention(x, { mask });
      expectTensorClose(got.output, exp.output, TOL.attention, 'output');
      expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
    });

    test('nested-array input gives the same result as a Float32Array tensor', () => {
      const x = rand(ref.mulberry32(33), [3, 5]);
      const a = lab.selfAttention(x);
      const b = lab.selfAttention(ref.toNested(Array.from(x.data), [3, 5]));
      expectTensorsEqual(b.output, a.output, 'output');
      expectTensorsEqual(b.weights, a.weights, 'weights');
    });
  });

  // -------------------------------------------------------------------------
  describe('scaledDotProductAttention', () => {
    const shapeCases = sdpaShapeCases();
    test.each(shapeCases.map((c, i) => [`lead [${c.lead}] Lq=${c.Lq} Lk=${c.Lk} D=${c.D} Dv=${c.Dv}`, c, i]))('%s', (_, c, i) => {
      const rng = ref.mulberry32(4000 + i);
      const q = rand(rng, [...c.lead, c.Lq, c.D]);
      const k = rand(rng, [...c.lead, c.Lk, c.D]);
      const v = rand(rng, [...c.lead, c.Lk, c.Dv]);
      const got = lab.scaledDotProductAttention(q, k, v);
      const exp = ref.scaledDotProductAttention(q, k, v);
      expectTensorClose(got.output, exp.output, TOL.attention, 'output');
      expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
    });

    const maskCases = sdpaMaskCases();
    test.each(maskCases.map((c, i) => [c.name, c, i]))('mask: %s', (_, c, i) => {
      const rng = ref.mulberry32(5000 + i);
      const q = rand(rng, [...c.lead, c.Lq, c.D]);
      const k = rand(rng, [...c.lead, c.Lk, c.D]);
      const v = rand(rng, [...c.lead, c.Lk, c.Dv]);
      const got = lab.scaledDotProductAttention(q, k, v, { mask: c.mask });
      const exp = ref.scaledDotProductAttention(q, k, v, { mask: c.mask });
      expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
      expectTensorClose(got.output, exp.output, TOL.attention, 'output');
      for (const w of got.weights.data) expect(Number.isNaN(w)).toBe(false);
    });

    test('scale option', () => {
      const rng = ref.mulberry32(41);
      const q = rand(rng, [2, 5, 12]), k = rand(rng, [2, 7, 12]), v = rand(rng, [2, 7, 3]);
      for (const scale of [0.01, 1, 3]) {
        const got = lab.scaledDotProductAttention(q, k, v, { scale });
        const exp = ref.scaledDotProductAttention(q, k, v, { scale });
        expectTensorClose(got.output, exp.output, TOL.attention, `output scale ${scale}`);
        expectTensorClose(got.weights, exp.weights, TOL.attention, `weights scale ${scale}`);
      }
    });

    test('needWeights: false returns weights null and the same output', () => {
      const rng = ref.mulberry32(42);
      const q = rand(rng, [2, 3, 6, 8]), k = rand(rng, [2, 3, 6, 8]), v = rand(rng, [2, 3, 6, 8]);
      const a = lab.scaledDotProductAttention(q, k, v, { needWeights: false, mask: { kind: 'causal' } });
      expect(a.weights).toBeNull();
      const exp = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'causal' } });
      expectTensorClose(a.output, exp.output, TOL.attention, 'output');
    });

    test('inputs as nested arrays, plain arrays and Float64Array agree with Float32Array', () => {
      const rng = ref.mulberry32(43);
      const q = rand(rng, [2, 3, 4]), k = rand(rng, [2, 5, 4]), v = rand(rng, [2, 5, 2]);
      const base = lab.scaledDotProductAttention(q, k, v);
      const nested = lab.scaledDotProductAttention(
        ref.toNested(Array.from(q.data), q.shape), ref.toNested(Array.from(k.data), k.shape), ref.toNested(Array.from(v.data), v.shape));
      const plain = lab.scaledDotProductAttention({ data: Array.from(q.data), shape: q.shape },
        { data: Array.from(k.data), shape: k.shape }, { data: Array.from(v.data), shape: v.shape });
      const f64 = lab.scaledDotProductAttention({ data: Float64Array.from(q.data), shape: q.shape },
        { data: Float64Array.from(k.data), shape: k.shape }, { data: Float64Array.from(v.data), shape: v.shape });
      for (const r of [nested, plain, f64]) {
        expectTensorsEqual(r.output, base.output, 'output');
        expectTensorsEqual(r.weights, base.weights, 'weights');
      }
    });

    test('mask spec order does not matter', () => {
      const rng = ref.mulberry32(44);
      const q = rand(rng, [2, 2, 5, 4]), k = rand(rng, [2, 2, 5, 4]), v = rand(rng, [2, 2, 5, 4]);
      const keep = { kind: 'keep', ...bits(rng, [2, 1, 1, 5], 0.7) };
      const a = lab.scaledDotProductAttention(q, k, v, { mask: [{ kind: 'causal' }, { kind: 'padding', lengths: [4, 2] }, keep] });
      const b = lab.scaledDotProductAttention(q, k, v, { mask: [keep, { kind: 'padding', lengths: [4, 2] }, { kind: 'causal' }] });
      expectTensorsEqual(b.output, a.output, 'output');
      expectTensorsEqual(b.weights, a.weights, 'weights');
    });

    test('NaN and Infinity in the input propagate (not rejected)', () => {
      const q = { data: new Float32Array([NaN, 1, 0, 1]), shape: [2, 2] };
      const k = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };
      const v = { data: new Float32Array([1, 2, 3, 4]), shape: [2, 2] };
      const r = lab.scaledDotProductAttention(q, k, v);
      expect(Number.isNaN(r.output.data[0])).toBe(true);
      expect(Number.isNaN(r.output.data[2])).toBe(false);
      expect(r.output.data[2]).toBeCloseTo(ref.scaledDotProductAttention(q, k, v).output.data[2], 5);
    });
  });

  // -------------------------------------------------------------------------
  describe('multiHeadAttention', () => {
    test.each(MHA_CONFIGS.map((c, i) => [cfgName(c), c, i]))('%s: forward and forwardSync', async (_, c, i) => {
      const t = makeMhaCase(c, 6000 + i);
      const mha = lab.multiHeadAttention(t.cfg);
      try {
        expect(mha.embedDim).toBe(c.E);
        expect(mha.numHeads).toBe(c.H);
        expect(mha.headDim).toBe(c.E / c.H);
        expect(mha.kdim).toBe(t.cfg.kdim);
        expect(mha.vdim).toBe(t.cfg.vdim);
        expect(mha.bias).toBe(t.cfg.bias);
        mha.setWeights(f32Weights(t.weights));
        const exp = ref.multiHeadAttention(t.cfg, t.weights, t.query, t.key, t.value);
        const sync = t.self ? mha.forwardSync(t.query) : mha.forwardSync(t.query, t.key, t.value);
        expectTensorClose(sync.output, exp.output, TOL.attention, 'forwardSync output');
        expectTensorClose(sync.weights, exp.weights, TOL.attention, 'forwardSync weights');
        const asyncRes = t.self ? await mha.forward(t.query) : await mha.forward(t.query, t.key, t.value);
        expectTensorsEqual(asyncRes.output, sync.output, 'forward vs forwardSync output');
        expectTensorsEqual(asyncRes.weights, sync.weights, 'forward vs forwardSync weights');
        // averaged weights
        const avg = mha.forwardSync(t.query, t.key, t.value, { averageWeights: true });
        const expAvg = ref.multiHeadAttention(t.cfg, t.weights, t.query, t.key, t.value, { averageWeights: true });
        expectTensorClose(avg.weights, expAvg.weights, TOL.attention, 'averaged weights');
        expectTensorClose(avg.output, exp.output, TOL.attention, 'output with averaged weights');
      } finally {
        mha.dispose();
      }
    });

    const MASKS = [
      ['causal', () => ({ kind: 'causal' })],
      ['padding (a length 0)', (B, Lq, Lk) => ({ kind: 'padding', lengths: Array.from({ length: B }, (_, b) => (b === 1 ? 0 : Math.max(1, Lk - b))) })],
      ['keep [B,1,1,Lk]', (B, Lq, Lk, H, rng) => ({ kind: 'keep', ...bits(rng, [B, 1, 1, Lk], 0.7) })],
      ['block [Lq,Lk]', (B, Lq, Lk, H, rng) => ({ kind: 'block', ...bits(rng, [Lq, Lk], 0.3, (d) => unblockKey(d, Lk)) })],
      ['additive [B,H,Lq,Lk]', (B, Lq, Lk, H, rng) => ({ kind: 'additive', ...rand(rng, [B, H, Lq, Lk], { lo: -2, hi: 2 }) })],
      ['causal + padding + keep [B,1,Lq,Lk]', (B, Lq, Lk, H, rng) => [{ kind: 'causal' },
        { kind: 'padding', lengths: Array.from({ length: B }, (_, b) => Lk - b) }, { kind: 'keep', ...bits(rng, [B, 1, Lq, Lk], 0.8) }]],
      ['padding + block [B,1,1,Lk]', (B, Lq, Lk, H, rng) => [{ kind: 'padding', lengths: Array.from({ length: B }, () => Lk) },
        { kind: 'block', ...bits(rng, [B, 1, 1, Lk], 0.4, (d) => unblockKey(d, Lk)) }]],
    ];
    const MASK_CONFIGS = [
      { E: 16, H: 4, B: 2, Lq: 6 },
      { E: 24, H: 3, B: 3, Lq: 5, Lk: 9, kdim: 10, vdim: 6 },
      { E: 9, H: 3, B: 2, Lq: 7, Lk: 4, bias: false },
    ];
    const maskTable = [];
    MASK_CONFIGS.forEach((c, ci) => MASKS.forEach(([mn, mk], mi) => maskTable.push([`${cfgName(c)}, mask ${mn}`, c, mk, 7000 + ci * 100 + mi])));
    test.each(maskTable)('%s', (_, c, mk, seed) => {
      const t = makeMhaCase({ ...c, cross: true }, seed);
      const mask = mk(c.B, c.Lq, t.Lk, c.H, t.rng);
      const mha = lab.multiHeadAttention(t.cfg);
      try {
        mha.setWeights(f32Weights(t.weights));
        for (const averageWeights of [false, true]) {
          const got = mha.forwardSync(t.query, t.key, t.value, { mask, averageWeights });
          const exp = ref.multiHeadAttention(t.cfg, t.weights, t.query, t.key, t.value, { mask, averageWeights });
          expectTensorClose(got.output, exp.output, TOL.attention, `output (averageWeights ${averageWeights})`);
          expectTensorClose(got.weights, exp.weights, TOL.attention, `weights (averageWeights ${averageWeights})`);
        }
      } finally {
        mha.dispose();
      }
    });

    test('unbatched inputs: output [Lq,E], weights [H,Lq,Lk] / [Lq,Lk]', async () => {
      const rng = ref.mulberry32(71);
      const cfg = { embedDim: 12, numHeads: 4, kdim: 5, vdim: 7, bias: true };
      const w = ref.randomMhaWeights(rng, { embedDim: 12, kdim: 5, vdim: 7 });
      const q = rand(rng, [3, 12]), k = rand(rng, [6, 5]), v = rand(rng, [6, 7]);
      const mha = lab.multiHeadAttention(cfg);
      try {
        mha.setWeights(f32Weights(w));
        for (const mask of [undefined, { kind: 'causal' }, [{ kind: 'padding', lengths: [4] }, { kind: 'keep', ...bits(rng, [3, 6], 0.7) }]]) {
          for (const averageWeights of [false, true]) {
            const got = await mha.forward(q, k, v, { mask, averageWeights });
            const exp = ref.multiHeadAttention(cfg, w, q, k, v, { mask, averageWeights });
            expect(got.output.shape).toEqual([3, 12]);
            expect(got.weights.shape).toEqual(averageWeights ? [3, 6] : [4, 3, 6]);
            expectTensorClose(got.output, exp.output, TOL.attention, 'output');
            expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
          }
        }
      } finally {
        mha.dispose();
      }
    });

    test('needWeights: false returns weights null', async () => {
      const t = makeMhaCase({ E: 8, H: 2, B: 2, Lq: 4 }, 72);
      const mha = lab.multiHeadAttention(t.cfg);
      try {
        mha.setWeights(f32Weights(t.weights));
        const got = await mha.forward(t.query, t.query, t.query, { needWeights: false });
        expect(got.weights).toBeNull();
        expectTensorClose(got.output, ref.multiHeadAttention(t.cfg, t.weights, t.query).output, TOL.attention, 'output');
      } finally {
        mha.dispose();
      }
    });

    test('key defaults to query and value defaults to key', () => {
      const rng = ref.mulberry32(73);
      const cfg = { embedDim: 8, numHeads: 2, kdim: 6, vdim: 6 };
      const w = ref.randomMhaWeights(rng, { embedDim: 8, kdim: 6, vdim: 6 });
      const q = rand(rng, [2, 3, 8]), k = rand(rng, [2, 5, 6]);
      const mha = lab.multiHeadAttention(cfg);
      try {
        mha.setWeights(f32Weights(w));
        const got = mha.forwardSync(q, k);
        expectTensorClose(got.output, ref.multiHeadAttention(cfg, w, q, k, k).output, TOL.attention, 'value = key');
      } finally {
        mha.dispose();
      }
    });

    test('layouts: torch ↔ keras on set and get, and keras weights give the torch output', () => {
      const rng = ref.mulberry32(74);
      const cfg = { embedDim: 12, numHeads: 3, kdim: 5, vdim: 9, bias: true };
      const w = ref.randomMhaWeights(rng, { embedDim: 12, kdim: 5, vdim: 9 });
      const q = rand(rng, [2, 4, 12]), k = rand(rng, [2, 6, 5]), v = rand(rng, [2, 6, 9]);
      const torchMha = lab.multiHeadAttention(cfg);
      const kerasMha = lab.multiHeadAttention(cfg);
      try {
        torchMha.setWeights(f32Weights(w)); // default layout is torch
        kerasMha.setWeights(kerasWeights(w), { layout: 'keras' });
        const kw = kerasWeights(w), tw = f32Weights(w);
        for (const [m, name] of [[torchMha, 'set torch'], [kerasMha, 'set keras']]) {
          const gotT = m.getWeights(); // torch by default
          const gotK = m.getWeights({ layout: 'keras' });
          for (const n of ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']) {
            expectTensorsEqual(gotT[n], tw[n], `${name}, get torch ${n}`);
            expectTensorsEqual(gotK[n], kw[n], `${name}, get keras ${n}`);
          }
        }
        expect(kerasMha.getWeights({ layout: 'keras' }).wk.shape).toEqual([5, 12]);
        expect(kerasMha.getWeights({ layout: 'torch' }).wv.shape).toEqual([12, 9]);
        const a = torchMha.forwardSync(q, k, v);
        const b = kerasMha.forwardSync(q, k, v);
        expectTensorsAgree(b.output, a.output, TOL.backends, 'keras vs torch output');
        expectTensorClose(b.output, ref.multiHeadAttention(cfg, w, q, k, v).output, TOL.attention, 'keras vs reference');
      } finally {
        torchMha.dispose();
        kerasMha.dispose();
      }
    });

    test('setWeights accepts a subset, nested arrays and flat arrays', () => {
      const rng = ref.mulberry32(75);
      const cfg = { embedDim: 6, numHeads: 2 };
      const w = ref.randomMhaWeights(rng, { embedDim: 6 });
      const mha = lab.multiHeadAttention(cfg);
      try {
        const before = mha.getWeights();
        mha.setWeights({ wq: ref.toNested(Array.from(w.wq.data), [6, 6]) });
        const after = mha.getWeights();
        expectTensorsEqual(after.wq, f32Weights(w).wq, 'wq from nested array');
        for (const n of ['bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']) expectTensorsEqual(after[n], before[n], `${n} unchanged`);
        mha.setWeights({ wk: Array.from(w.wk.data), bo: Array.from(w.bo.data) }); // flat arrays of the right length
        const after2 = mha.getWeights();
        expectTensorsEqual(after2.wk, f32Weights(w).wk, 'wk from flat array');
        expectTensorsEqual(after2.bo, f32Weights(w).bo, 'bo from flat array');
        expectTensorsEqual(after2.wv, before.wv, 'wv unchanged');
      } finally {
        mha.dispose();
      }
    });

    test('getWeights returns fresh copies; bias: false has no biases', () => {
      const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, bias: false });
      try {
        const w = mha.getWeights();
        for (const n of ['bq', 'bk', 'bv', 'bo']) expect(w[n]).toBeUndefined();
        expect(w.wq.shape).toEqual([8, 8]);
        const copy = Float32Array.from(w.wq.data);
        w.wq.data.fill(123);
        expect(Array.from(mha.getWeights().wq.data)).toEqual(Array.from(copy));
      } finally {
        mha.dispose();
      }
    });

    test('results are fresh Float32Arrays, not views of wasm memory', () => {
      const t = makeMhaCase({ E: 16, H: 2, B: 2, Lq: 5 }, 76);
      const mha = lab.multiHeadAttention(t.cfg);
      try {
        mha.setWeights(f32Weights(t.weights));
        const r1 = mha.forwardSync(t.query);
        const keep = Float32Array.from(r1.output.data), keepW = Float32Array.from(r1.weights.data);
        const other = rand(ref.mulberry32(77), [2, 5, 16]);
        mha.forwardSync(other);
        lab.positionalEncoding(64, 64); // more allocations
        expect(Array.from(r1.output.data)).toEqual(Array.from(keep));
        expect(Array.from(r1.weights.data)).toEqual(Array.from(keepW));
      } finally {
        mha.dispose();
      }
    });

    test('default init: seeded Xavier-uniform weights, zero biases; forward matches the reference on them', () => {
      const cfg = { embedDim: 16, numHeads: 4, kdim: 10, vdim: 12 };
      const a = lab.multiHeadAttention({ ...cfg, seed: 5 });
      const b = lab.multiHeadAttention({ ...cfg, seed: 5 });
      const c = lab.multiHeadAttention({ ...cfg, seed: 6 });
      try {
        const wa = a.getWeights(), wb = b.getWeights(), wc = c.getWeights();
        for (const n of ['wq', 'wk', 'wv', 'wo']) {
          expectTensorsEqual(wb[n], wa[n], `same seed ${n}`);
          expect(Array.from(wc[n].data)).not.toEqual(Array.from(wa[n].data));
          const [out, inn] = wa[n].shape;
          const bound = Math.sqrt(6 / (out + inn)) * (1 + 1e-6);
          for (const x of wa[n].data) expect(Math.abs(x)).toBeLessThanOrEqual(bound);
          expect(wa[n].data.some((x) => x !== 0)).toBe(true);
        }
        for (const n of ['bq', 'bk', 'bv', 'bo']) expect(Array.from(wa[n].data).every((x) => x === 0)).toBe(true);
        const rng = ref.mulberry32(78);
        const q = rand(rng, [2, 3, 16]), k = rand(rng, [2, 4, 10]), v = rand(rng, [2, 4, 12]);
        const got = a.forwardSync(q, k, v);
        const exp = ref.multiHeadAttention(cfg, wa, q, k, v);
        expectTensorClose(got.output, exp.output, TOL.attention, 'output');
        expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
      } finally {
        a.dispose(); b.dispose(); c.dispose();
      }
    });
  });

  // -------------------------------------------------------------------------
  describe('selfAttentionLayer', () => {
    test.each(LAYER_CONFIGS.map((c, i) => [`E=${c.E} H=${c.H} B=${c.B} L=${c.L}`, c, i]))('eval: %s', async (_, c, i) => {
      const t = makeLayerCase(c, 8000 + i);
      const cfg = { embedDim: c.E, numHeads: c.H, dropout: 0.1 };
      const layer = lab.selfAttentionLayer(cfg);
      try {
        layer.setWeights(f32Weights(t.weights));
        const exp = ref.selfAttentionLayer(cfg, t.weights, t.x);
        const got = await layer.forward(t.x);
        expectTensorClose(got.output, exp.output, TOL.layer, 'output');
        expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
        const sync = layer.forwardSync(t.x, { training: false });
        expectTensorsEqual(sync.output, got.output, 'forwardSync vs forward');
      } finally {
        layer.dispose();
      }
    });

    test.each([[0.1, 12345], [0.5, 1], [0.9, 0xffffffff], [0.25, 0]])('training, dropout %d, dropoutSeed %i', async (p, seed) => {
      const c = { E: 16, H: 4, B: 2, L: 6 };
      const t = makeLayerCase(c, 8100);
      const cfg = { embedDim: c.E, numHeads: c.H, dropout: p };
      const layer = lab.selfAttentionLayer(cfg);
      try {
        layer.setWeights(f32Weights(t.weights));
        const exp = ref.selfAttentionLayer(cfg, t.weights, t.x, { training: true, dropoutSeed: seed });
        const got = await layer.forward(t.x, { training: true, dropoutSeed: seed });
        expectTensorClose(got.output, exp.output, TOL.layer, 'output');
        expectTensorClose(got.weights, exp.weights, TOL.attention, 'weights');
        const again = layer.forwardSync(t.x, { training: true, dropoutSeed: seed });
        expectTensorsEqual(again.output, got.output, 'same dropoutSeed, same output');
        const frac = exp.dropped.reduce((a, b) => a + b, 0) / exp.dropped.length;
        expect(Math.abs(frac - p)).toBeLessThan(0.12); // sanity of the reference mask itself
      } finally {
        layer.dispose();
      }
    });

    test('training with dropout 0 equals eval; eval ignores dropoutSeed', () => {
      const c = { E: 8, H: 2, B: 2, L: 4 };
      const t = makeLayerCase(c, 8200);
      const l0 = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: 0 });
      const l1 = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: 0.5 });
      try {
        l0.setWeights(f32Weights(t.weights));
        l1.setWeights(f32Weights(t.weights));
        const ev = l1.forwardSync(t.x);
        expectTensorsEqual(l1.forwardSync(t.x, { dropoutSeed: 99 }).output, ev.output, 'eval with dropoutSeed');
        expectTensorsAgree(l0.forwardSync(t.x, { training: true }).output, ev.output, TOL.backends, 'p = 0 training');
      } finally {
        l0.dispose(); l1.dispose();
      }
    });

    test('training without dropoutSeed: a fresh seed per call from the layer stream (seeded by seed)', () => {
      const c = { E: 8, H: 2, B: 2, L: 5 };
      const t = makeLayerCase(c, 8300);
      const cfg = { embedDim: 8, numHeads: 2, dropout: 0.5, seed: 42 };
      const a = lab.selfAttentionLayer(cfg), b = lab.selfAttentionLayer(cfg);
      try {
        a.setWeights(f32Weights(t.weights));
        b.setWeights(f32Weights(t.weights));
        const a1 = a.forwardSync(t.x, { training: true }), a2 = a.forwardSync(t.x, { training: true });
        const b1 = b.forwardSync(t.x, { training: true }), b2 = b.forwardSync(t.x, { training: true });
        expect(Array.from(a1.output.data)).not.toEqual(Array.from(a2.output.data));
        expectTensorsEqual(b1.output, a1.output, 'same layer seed, first call');
        expectTensorsEqual(b2.output, a2.output, 'same layer seed, second call');
      } finally {
        a.dispose(); b.dispose();
      }
    });

    test('mask, averaged weights, unbatched input and keras layout', async () => {
      const rng = ref.mulberry32(8400);
      const E = 12, H = 3, L = 5;
      const w = ref.randomMhaWeights(rng, { embedDim: E });
      w.gamma = rand(rng, [E], { lo: 0.5, hi: 1.5 });
      w.beta = rand(rng, [E], { lo: -0.5, hi: 0.5 });
      const cfg = { embedDim: E, numHeads: H, dropout: 0.2 };
      const layer = lab.selfAttentionLayer(cfg);
      try {
        layer.setWeights(kerasWeights(w), { layout: 'keras' });
        const gw = layer.getWeights();
        expectTensorsEqual(gw.wk, f32Weights(w).wk, 'get torch wk after set keras');
        expectTensorsEqual(gw.gamma, f32Weights(w).gamma, 'gamma');
        expectTensorsEqual(gw.beta, f32Weights(w).beta, 'beta');
        const xb = rand(rng, [2, L, E]);
        const mask = [{ kind: 'causal' }, { kind: 'padding', lengths: [5, 3] }];
        for (const [x, m, averageWeights, training] of [
          [xb, mask, true, false], [xb, mask, false, true],
          [rand(rng, [L, E]), { kind: 'causal' }, false, false], [rand(rng, [L, E]), undefined, true, true],
        ]) {
          const opts = { mask: m, averageWeights, training, dropoutSeed: 2024 };
          const got = await layer.forward(x, opts);
          const exp = ref.selfAttentionLayer(cfg, w, x, opts);
          expectTensorClose(got.output, exp.output, TOL.layer, `output [${x.shape}] avg=${averageWeights} training=${training}`);
          expectTensorClose(got.weights, exp.weights, TOL.attention, `weights [${x.shape}] avg=${averageWeights}`);
        }
      } finally {
        layer.dispose();
      }
    });

    test('default gamma/beta are ones/zeros', () => {
      const layer = lab.selfAttentionLayer({ embedDim: 6, numHeads: 3 });
      try {
        const w = layer.getWeights();
        expect(Array.from(w.gamma.data)).toEqual([1, 1, 1, 1, 1, 1]);
        expect(Array.from(w.beta.data)).toEqual([0, 0, 0, 0, 0, 0]);
        expect(w.wq.shape).toEqual([6, 6]);
      } finally {
        layer.dispose();
      }
    });
  });
});
