// training.test.js — the training API on both wasm backends:
//   * every backward (SDPA with each mask kind and the scale, MHA with
//     kdim/vdim and biases, the self-attention layer with dropout, the whole
//     transformer) against central finite differences of the float64
//     references (tests/reference/backward.mjs over reference.mjs):
//     ‖g − g_fd‖₂ / ‖g_fd‖₂ ≤ 1e-3 per gradient tensor, on odd sizes;
//   * determinism (same seed and config → bit-identical losses);
//   * the seeded tasks (checked against their definitions);
//   * bad input → clear RangeError / TypeError; a NaN loss stops the step
//     and keeps the last good weights.
import { init, TrainingStoppedError, DisposedError } from '../../web/node.js';
import { createRequire } from 'node:module';

const cjs = createRequire(import.meta.url)('../../web/node.cjs');
import { ref, BACKENDS, rand } from './helpers.js';
import { numericGradient, relativeError, dot, maskedCrossEntropy, transformerLogits, asTensor, sdpaF64 } from '../reference/backward.mjs';

const TOL = 1e-3;
const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

function f64(t) {
  return Float64Array.from(t.data);
}

// { name: Float64Array } → { name: reference tensor } (the arrays shared, so
// finite differences that perturb them are seen).
function tensors(wd) {
  return Object.fromEntries(Object.entries(wd).map(([n, a]) => [n, asTensor(a)]));
}

describe.each(BACKENDS)('%s: scaledDotProductAttentionBackward', (backend) => {
  const cases = [
    ['no mask', [2, 3, 5, 3], [2, 3, 7, 3], 5, undefined, undefined],
    ['scale', [1, 2, 7, 5], [1, 2, 5, 5], 3, undefined, 0.37],
    ['causal', [2, 2, 9, 3], [2, 2, 9, 3], 3, [{ kind: 'causal' }], undefined],
    ['padding', [3, 2, 5, 3], [3, 2, 7, 3], 3, [{ kind: 'padding', lengths: [7, 2, 4] }], undefined],
    ['keep', [2, 1, 5, 3], [2, 1, 7, 3], 3, 'keep', undefined],
    ['block', [2, 2, 7, 3], [2, 2, 5, 3], 5, 'block', undefined],
    ['additive', [2, 2, 5, 3], [2, 2, 9, 3], 3, 'additive', undefined],
    ['causal + padding + keep + scale', [3, 2, 6, 3], [3, 2, 6, 3], 3, 'all', 0.5],
    ['rank 3, causal', [3, 6, 3], [3, 6, 3], 3, [{ kind: 'causal' }], undefined],
  ];
  test.each(cases)('%s', (name, qs, ks, dv, maskSpec, scale) => {
    const lab = labs[backend];
    const rng = ref.mulberry32(qs.length * 100 + qs[qs.length - 2] * 7 + ks[ks.length - 2]);
    const q = rand(rng, qs);
    const k = rand(rng, ks);
    const vShape = [...ks.slice(0, -1), dv];
    const v = rand(rng, vShape);
    const oShape = [...qs.slice(0, -1), dv];
    const dOut = rand(rng, oShape);
    const Lq = qs[qs.length - 2];
    const Lk = ks[ks.length - 2];
    let mask = maskSpec;
    if (typeof maskSpec === 'string') {
      const B = qs[0];
      const kind = maskSpec === 'all' ? 'keep' : maskSpec;
      const data = new Float32Array(B * Lq * Lk);
      for (let i = 0; i < data.length; i++) {
        if (kind === 'additive') data[i] = rng() < 0.1 ? -Infinity : 6 * rng() - 3;
        else if (kind === 'keep') data[i] = rng() < 0.35 ? 0 : 1;
        else data[i] = i % Lk !== 0 && rng() < 0.35 ? 1 : 0; // block: key 0 never blocked
      }
      mask = [{ kind, data, shape: [B, 1, Lq, Lk] }];
      if (maskSpec === 'all') mask.push({ kind: 'causal' }, { kind: 'padding', lengths: [6, 3, 1] });
    }
    const r = lab.scaledDotProductAttentionBackward(q, k, v, dOut, { mask, scale });
    const qd = f64(q), kd = f64(k), vd = f64(v);
    const lead = qs.slice(0, -2);
    const dims = { B: lead[0] ?? 1, H: lead.length > 1 ? lead[1] : 1, Lq, Lk, D: qs[qs.length - 1], Dv: dv, scale, mask };
    const f = () => dot(sdpaF64(qd, kd, vd, dims), dOut.data);
    // The forward agrees with reference.mjs (which rounds masked scores to float32).
    const fwd = ref.scaledDotProductAttention(q, k, v, { mask, scale, needWeights: false }).output.data;
    expect(relativeError(r.output.data, fwd)).toBeLessThan(1e-5);
    expect(relativeError(r.dq.data, numericGradient(f, qd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dk.data, numericGradient(f, kd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dv.data, numericGradient(f, vd))).toBeLessThanOrEqual(TOL);
    expect(r.dq.shape).toEqual(qs);
  });
});

describe.each(BACKENDS)('%s: mha.backward and layer.backward', (backend) => {
  test.each([
    ['self, bias, causal', 6, 2, 6, 6, true, 5, 5, [{ kind: 'causal' }]],
    ['kdim/vdim, padding', 6, 3, 5, 7, true, 3, 5, [{ kind: 'padding', lengths: [5, 2] }]],
    ['no bias', 9, 3, 9, 9, false, 4, 7, undefined],
  ])('mha %s', (name, E, H, kdim, vdim, bias, Lq, Lk, mask) => {
    const lab = labs[backend];
    const rng = ref.mulberry32(E * 31 + Lq);
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim, bias, seed: 3 });
    const B = 2;
    const query = rand(rng, [B, Lq, E]);
    const key = rand(rng, [B, Lk, kdim]);
    const value = rand(rng, [B, Lk, vdim]);
    const dOut = rand(rng, [B, Lq, E]);
    const r = mha.backward(query, key, value, dOut, { mask });
    const w = mha.getWeights({ layout: 'torch' });
    const wd = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, f64(t)]));
    const qd = f64(query), kd = f64(key), vd = f64(value);
    const f = () => {
      const o = ref.multiHeadAttention({ embedDim: E, numHeads: H, kdim, vdim }, tensors(wd),
        { data: qd, shape: query.shape }, { data: kd, shape: key.shape }, { data: vd, shape: value.shape }, { mask, needWeights: false });
      return dot(o.output.data, dOut.data);
    };
    expect(relativeError(r.dQuery.data, numericGradient(f, qd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dKey.data, numericGradient(f, kd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dValue.data, numericGradient(f, vd))).toBeLessThanOrEqual(TOL);
    for (const n of Object.keys(w)) {
      const g = numericGradient(f, wd[n]);
      if (n === 'bk') {
        // Softmax is shift-invariant per row: the exact gradient of bk is 0.
        for (let i = 0; i < g.length; i++) {
          expect(Math.abs(g[i])).toBeLessThan(1e-6);
          expect(Math.abs(r.dWeights.bk.data[i])).toBeLessThan(1e-5);
        }
      } else {
        expect(relativeError(r.dWeights[n].data, g)).toBeLessThanOrEqual(TOL);
      }
    }
    mha.dispose();
  });

  test('layer with dropout (training), causal', () => {
    const lab = labs[backend];
    const rng = ref.mulberry32(77);
    const E = 6, H = 2, B = 2, L = 5;
    const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.25, seed: 4 });
    layer.setWeights({ gamma: rand(rng, [E], { lo: 0.5, hi: 1.5 }), beta: rand(rng, [E]) });
    const x = rand(rng, [B, L, E]);
    const dOut = rand(rng, [B, L, E]);
    const mask = [{ kind: 'causal' }];
    const r = layer.backward(x, dOut, { mask, training: true, dropoutSeed: 99 });
    const w = layer.getWeights({ layout: 'torch' });
    const wd = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, f64(t)]));
    const xd = f64(x);
    const f = () => {
      const o = ref.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0.25 }, tensors(wd), { data: xd, shape: x.shape },
        { mask, training: true, dropoutSeed: 99, needWeights: false });
      return dot(o.output.data, dOut.data);
    };
    expect(relativeError(r.dx.data, numericGradient(f, xd))).toBeLessThanOrEqual(TOL);
    for (const n of ['wq', 'wv', 'wo', 'bv', 'bo', 'gamma', 'beta']) {
      expect(relativeError(r.dWeights[n].data, numericGradient(f, wd[n]))).toBeLessThanOrEqual(TOL);
    }
    layer.dispose();
  });
});

describe.each(BACKENDS)('%s: transformer', (backend) => {
  const config = { vocabSize: 5, maxLength: 6, embedDim: 6, numHeads: 2, numLayers: 2, ffnDim: 7, causal: true, positional: 'learned', seed: 3 };

  test('the step gradient matches finite differences of the float64 model', () => {
    const lab = labs[backend];
    const model = lab.transformer(config);
    const B = 2, L = 5;
    const { tokens, targets } = lab.tasks.shift({ length: L, vocab: 5, batch: B, seed: 9 });
    const lossMask = new Float32Array(B * L).fill(1);
    lossMask[3] = 0;
    lossMask[7] = 0.5;
    const trainer = model.trainer({ lr: 0, weightDecay: 0, clip: 0 });
    trainer.step(tokens, targets, { lossMask });
    const grads = model.getGradients();
    const weights = model.getWeights();
    const wd = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, f64(t)]));
    const f = () => maskedCrossEntropy(transformerLogits(config, wd, tokens.data, B, L), targets.data, lossMask, config.vocabSize);
    for (const name of Object.keys(weights)) {
      if (name.endsWith('attn.bk')) continue; // exact gradient 0 (see the mha test)
      const err = relativeError(grads[name].data, numericGradient(f, wd[name]));
      expect([name, err <= TOL ? 'ok' : err]).toEqual([name, 'ok']);
    }
    model.dispose();
  });

  test('forward: logits and one [B,H,L,L] map per layer, rows summing to 1', () => {
    const lab = labs[backend];
    const model = lab.transformer({ ...config, causal: false, positional: 'sinusoidal' });
    const { tokens } = lab.tasks.copy({ length: 4, vocab: 5, batch: 3, seed: 1 });
    const out = model.forward(tokens);
    expect(out.logits.shape).toEqual([3, 4, 5]);
    expect(out.attention).toHaveLength(2);
    expect(out.attention[0].shape).toEqual([3, 2, 4, 4]);
    const w = model.getWeights();
    const wd = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, f64(t)]));
    const want = transformerLogits({ ...config, causal: false, positional: 'sinusoidal' }, wd, tokens.data, 3, 4);
    for (let i = 0; i < want.length; i++) expect(Math.abs(out.logits.data[i] - want[i])).toBeLessThan(1e-4 + 1e-4 * Math.abs(want[i]));
    for (let r = 0; r < 3 * 2 * 4; r++) {
      let s = 0;
      for (let j = 0; j < 4; j++) s += out.attention[1].data[r * 4 + j];
      expect(s).toBeCloseTo(1, 5);
    }
    model.dispose();
  });

  test('training is deterministic and the loss falls', () => {
    const lab = labs[backend];
    const run = () => {
      const model = lab.transformer({ vocabSize: 7, maxLength: 6, embedDim: 16, numHeads: 2, numLayers: 1, ffnDim: 32, dropout: 0.1, seed: 11 });
      const trainer = model.trainer({ lr: 1e-2, warmup: 5 });
      const losses = [];
      for (let s = 0; s < 40; s++) {
        const b = lab.tasks.copy({ length: 6, vocab: 7, batch: 16, seed: s });
        losses.push(trainer.step(b.tokens, b.targets, { lossMask: b.lossMask }).loss);
      }
      model.dispose();
      return losses;
    };
    const a = run();
    const b = run();
    expect(b).toEqual(a);
    expect(a[a.length - 1]).toBeLessThan(0.5 * a[0]);
  });

  test('weights round-trip through getWeights/setWeights; head ablation changes the output', () => {
    const lab = labs[backend];
    const m1 = lab.transformer({ ...config, seed: 1 });
    const m2 = lab.transformer({ ...config, seed: 2 });
    const { tokens } = lab.tasks.copy({ length: 5, vocab: 5, batch: 2, seed: 4 });
    m2.setWeights(m1.getWeights());
    expect(m2.forward(tokens).logits.data).toEqual(m1.forward(tokens).logits.data);
    const before = m1.forward(tokens, { attention: false }).logits.data;
    m1.setHeadEnabled(0, 1, false);
    expect(m1.forward(tokens, { attention: false }).logits.data).not.toEqual(before);
    m1.setHeadEnabled(0, 1, true);
    expect(m1.forward(tokens, { attention: false }).logits.data).toEqual(before);
    m1.dispose();
    m2.dispose();
  });
});

describe.each(BACKENDS)('%s: tasks', (backend) => {
  test('definitions and seeds', () => {
    const lab = labs[backend];
    const L = 7;
    const c = lab.tasks.copy({ length: L, vocab: 9, batch: 4, seed: 5 });
    const r = lab.tasks.reverse({ length: L, vocab: 9, batch: 4, seed: 5 });
    const s = lab.tasks.sort({ length: L, vocab: 9, batch: 4, seed: 5 });
    const sh = lab.tasks.shift({ length: L, vocab: 9, batch: 4, seed: 5 });
    expect(r.tokens.data).toEqual(c.tokens.data); // same seed, same tokens
    expect(lab.tasks.copy({ length: L, vocab: 9, batch: 4, seed: 6 }).tokens.data).not.toEqual(c.tokens.data);
    for (let b = 0; b < 4; b++) {
      const t = Array.from(c.tokens.data.subarray(b * L, (b + 1) * L));
      expect(t.every((x) => x >= 0 && x < 9)).toBe(true);
      expect(Array.from(c.targets.data.subarray(b * L, (b + 1) * L))).toEqual(t);
      expect(Array.from(r.targets.data.subarray(b * L, (b + 1) * L))).toEqual(t.slice().reverse());
      expect(Array.from(s.targets.data.subarray(b * L, (b + 1) * L))).toEqual(t.slice().sort((x, y) => x - y));
      expect(Array.from(sh.targets.data.subarray(b * L, (b + 1) * L))).toEqual(t.map((_, i) => t[(i + L - 1) % L]));
    }
    const ind = lab.tasks.induction({ length: 32, vocab: 20, batch: 8, seed: 2 });
    for (let b = 0; b < 8; b++) {
      const t = ind.tokens.data.subarray(b * 32, (b + 1) * 32);
      const m = ind.lossMask.data.subarray(b * 32, (b + 1) * 32);
      const counted = [];
      for (let i = 0; i < 32; i++) if (m[i] > 0) counted.push(i);
      expect(counted.length).toBe(32 / 4 - 1);
      for (const i of counted) {
        expect(ind.targets.data[b * 32 + i]).toBe(t[i + 1]);
        // the token at i and its successor appeared earlier in the same order
        let seen = false;
        for (let j = 0; j + 1 < i; j++) if (t[j] === t[i] && t[j + 1] === t[i + 1]) seen = true;
        expect(seen).toBe(true);
      }
    }
  });
});

describe.each(BACKENDS)('%s: bad input', (backend) => {
  const config = { vocabSize: 5, maxLength: 4, embedDim: 4, numHeads: 2, ffnDim: 8 };
  test('clear errors, and the model stays usable', () => {
    const lab = labs[backend];
    const model = lab.transformer(config);
    const trainer = model.trainer({ lr: 1e-3 });
    const ok = { data: new Int32Array([0, 1, 2, 3]), shape: [1, 4] };
    expect(() => trainer.step({ data: new Int32Array([0, 1, 2, 5]), shape: [1, 4] }, ok)).toThrow(/tokens must be integers in \[0, 4\].*is 5/);
    expect(() => trainer.step([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])).toThrow(RangeError);
    expect(() => trainer.step([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])).toThrow(/longer than maxLength \(4\)/);
    expect(() => trainer.step(ok, ok, { lossMask: [0, 0, 0, 0] })).toThrow(/lossMask is all zeros/);
    expect(() => trainer.step(ok, ok, { lossMask: [0, 0, 0, 0] })).toThrow(RangeError);
    expect(() => model.trainer({ lr: NaN })).toThrow(RangeError);
    expect(() => model.trainer({ lr: -1 })).toThrow(/lr must be a finite number in \[0/);
    expect(() => model.trainer({ lr: '1e-3' })).toThrow(TypeError);
    expect(() => model.trainer({ learningRate: 1 })).toThrow(TypeError);
    expect(() => lab.transformer({ ...config, positional: 'rotary' })).toThrow(RangeError);
    expect(() => lab.transformer({ ...config, embedDim: 5 })).toThrow(/divisible/);
    expect(() => model.forward([[0, 1.5]])).toThrow(RangeError);
    expect(() => lab.tasks.induction({ length: 4 })).toThrow(/length must be >= 8/);
    expect(() => lab.scaledDotProductAttentionBackward([[1, 2]], [[1, 2]], [[1]], [[1, 2]])).toThrow(RangeError);
    expect(trainer.step(ok, ok).loss).toBeGreaterThan(0);
    model.dispose();
  });

  test('a NaN loss stops the step with a message and keeps the last good weights', () => {
    const lab = labs[backend];
    const model = lab.transformer(config);
    const trainer = model.trainer({ lr: 1e-3 });
    const ok = { data: new Int32Array([0, 1, 2, 3]), shape: [1, 4] };
    trainer.step(ok, ok);
    const w = model.getWeights();
    const huge = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, { data: t.data.map((x) => x * 1e30), shape: t.shape }]));
    model.setWeights(huge);
    const before = model.getWeights();
    expect(() => trainer.step(ok, ok)).toThrow(/became (NaN|inf|-nan|nan).*weights of the last good step are kept/i);
    let caught = null;
    try {
      trainer.step(ok, ok);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TrainingStoppedError);
    expect(caught instanceof cjs.TrainingStoppedError).toBe(true);
    expect(trainer.stopped).toMatch(/trainer.step/);
    expect(model.getWeights()).toEqual(before);
    model.setWeights(w);
    trainer.reset();
    expect(Number.isFinite(trainer.step(ok, ok).loss)).toBe(true);
    model.dispose();
  });

  test('the heap is the same after many steps and a dispose', () => {
    const lab = labs[backend];
    const Module = lab._backend.wasmModule;
    const model0 = lab.transformer(config);
    model0.dispose();
    const before = Module.heapBytesInUse();
    const model = lab.transformer(config);
    const trainer = model.trainer();
    for (let s = 0; s < 5; s++) {
      const b = lab.tasks.copy({ length: 4, vocab: 5, batch: 3, seed: s });
      trainer.step(b.tokens, b.targets, { lossMask: b.lossMask });
      model.forward(b.tokens);
    }
    model.dispose();
    expect(Module.heapBytesInUse()).toBe(before);
    expect(() => model.forward([0, 1])).toThrow(DisposedError);
    expect(() => trainer.step([0, 1], [0, 1])).toThrow(/disposed/);
  });
});
