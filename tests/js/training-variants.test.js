// training-variants.test.js — the backward passes of today's attention
// variants and the transformer's positional 'rope', on both wasm backends
// (SIMD and scalar), against central finite differences of float64
// references written from the documented semantics (reference.mjs's
// attentionModern, rotaryEmbedding; backward.mjs's mhaF64, transformerLogits):
//   * SDPA: GQA/MQA, softcap, sliding windows (both alignments, offsets),
//     causal bottom-right and offsets, ALiBi, padding, maskFill -Infinity;
//     wholly masked rows give zero dq (and finite grads, never NaN);
//   * mha.backward with window + ALiBi masks and maskFill -Infinity, and with
//     GQA/MQA (numKvHeads) and rope (the same forward as mha.forward);
//   * lab.transformer({ positional: 'rope' }): the whole step's gradient.
// ‖g − g_fd‖₂ / ‖g_fd‖₂ ≤ 1e-3 per gradient tensor, on odd sizes.
import { init } from '../../web/node.js';
import { ref, BACKENDS, rand } from './helpers.js';
import { numericGradient, relativeError, dot, maskedCrossEntropy, transformerLogits, mhaF64 } from '../reference/backward.mjs';

const TOL = 1e-3;
const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const f64 = (t) => Float64Array.from(t.data);

// The API's mask specs → attentionModern's options (B, H, the tensor's 4-d shape).
function modernOptions(mask, { H, softcap, maskFill }) {
  const o = { softcap, fill: maskFill ?? -1e9 };
  for (const m of mask ?? []) {
    if (m.kind === 'causal') {
      o.causal = m.align ?? 'top-left';
      o.causalOffset = m.offset ?? 0;
    } else if (m.kind === 'window') {
      o.window = { left: m.left ?? -1, right: m.right ?? -1, align: m.align ?? 'top-left', offset: m.offset ?? 0 };
    } else if (m.kind === 'alibi') {
      o.slopes = m.slopes ?? ref.alibiSlopes(H);
    } else if (m.kind === 'padding') {
      o.lengths = m.lengths;
    } else {
      o.tensor = { kind: m.kind, data: m.data, shape: m.shape };
    }
  }
  return o;
}

describe.each(BACKENDS)('%s: scaledDotProductAttentionBackward, variants', (backend) => {
  const inf = -Infinity;
  // name, [B, H, Hkv, Lq, Lk, D, Dv], options (mask, softcap, maskFill)
  const cases = [
    ['GQA', [2, 6, 2, 5, 7, 3, 5], {}],
    ['MQA, causal', [1, 3, 1, 7, 7, 5, 3], { mask: [{ kind: 'causal' }] }],
    ['softcap', [2, 2, 2, 5, 9, 3, 3], { softcap: 2 }],
    ['softcap, causal, GQA', [1, 4, 2, 7, 7, 3, 3], { softcap: 1.5, mask: [{ kind: 'causal' }] }],
    ['window top-left', [2, 2, 2, 9, 9, 3, 3], { mask: [{ kind: 'window', left: 2, right: 1 }] }],
    ['window bottom-right + padding', [2, 2, 1, 5, 11, 3, 3], { mask: [{ kind: 'window', left: 2, right: 0, align: 'bottom-right' }, { kind: 'padding', lengths: [11, 6] }] }],
    ['window offset', [1, 2, 2, 5, 9, 3, 3], { mask: [{ kind: 'window', left: 1, right: 1, offset: 3 }] }],
    ['causal bottom-right, Lq > Lk (masked rows)', [1, 2, 2, 9, 5, 3, 3], { mask: [{ kind: 'causal', align: 'bottom-right' }] }],
    ['causal bottom-right, Lq > Lk, maskFill -inf', [1, 2, 2, 9, 5, 3, 3], { mask: [{ kind: 'causal', align: 'bottom-right' }], maskFill: inf }],
    ['causal offset', [2, 2, 2, 5, 9, 3, 3], { mask: [{ kind: 'causal', offset: 3 }] }],
    ['ALiBi, causal', [2, 3, 3, 7, 7, 3, 3], { mask: [{ kind: 'alibi' }, { kind: 'causal' }] }],
    ['ALiBi slopes, bottom-right, padding', [3, 5, 5, 4, 7, 3, 3], { mask: [{ kind: 'alibi', slopes: [0.5, 0.25, 0.3, 1, 0.1] }, { kind: 'causal', align: 'bottom-right' }, { kind: 'padding', lengths: [7, 3, 0] }] }],
    ['keep, maskFill -inf', [2, 2, 2, 5, 7, 3, 3], { mask: 'keep', maskFill: inf }],
    ['everything', [3, 4, 2, 7, 9, 5, 3], { softcap: 1.5, mask: ['additive', { kind: 'window', left: 3, right: 1, align: 'bottom-right' }, { kind: 'causal', align: 'bottom-right' }, { kind: 'alibi' }, { kind: 'padding', lengths: [9, 3, 6] }] }],
  ];
  test.each(cases)('%s', (name, [B, H, Hkv, Lq, Lk, D, Dv], options) => {
    const lab = labs[backend];
    const rng = ref.mulberry32(Lq * 17 + Lk * 3 + H);
    const q = rand(rng, [B, H, Lq, D], { lo: -1.5, hi: 1.5 });
    const k = rand(rng, [B, Hkv, Lk, D], { lo: -1.5, hi: 1.5 });
    const v = rand(rng, [B, Hkv, Lk, Dv]);
    const dOut = rand(rng, [B, H, Lq, Dv]);
    const expand = (m) => {
      if (m !== 'keep' && m !== 'additive') return m;
      const data = new Float32Array(B * Lq * Lk);
      for (let i = 0; i < data.length; i++) data[i] = m === 'keep' ? (rng() < 0.35 ? 0 : 1) : (rng() < 0.1 ? -Infinity : 6 * rng() - 3);
      return { kind: m, data, shape: [B, 1, Lq, Lk] };
    };
    const mask = options.mask === undefined ? undefined : [options.mask].flat().map(expand);
    const r = lab.scaledDotProductAttentionBackward(q, k, v, dOut, { ...options, mask });
    for (const g of [r.dq, r.dk, r.dv]) expect(g.data.every(Number.isFinite)).toBe(true);
    expect(r.dk.shape).toEqual([B, Hkv, Lk, D]);
    const qd = f64(q), kd = f64(k), vd = f64(v);
    const opts = modernOptions(mask, { H, softcap: options.softcap, maskFill: options.maskFill });
    const fwd = () => ref.attentionModern({ data: qd, shape: q.shape }, { data: kd, shape: k.shape }, { data: vd, shape: v.shape }, opts).output.data;
    expect(relativeError(r.output.data, fwd())).toBeLessThan(1e-5);
    const f = () => dot(fwd(), dOut.data);
    expect(relativeError(r.dq.data, numericGradient(f, qd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dk.data, numericGradient(f, kd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dv.data, numericGradient(f, vd))).toBeLessThanOrEqual(TOL);
  });

  test('wholly masked rows give zero dq and finite grads (maskFill -1e9 and -Infinity)', () => {
    const lab = labs[backend];
    const rng = ref.mulberry32(5);
    const [B, H, Lq, Lk, D] = [1, 2, 6, 3, 4];
    const q = rand(rng, [B, H, Lq, D]);
    const k = rand(rng, [B, H, Lk, D]);
    const v = rand(rng, [B, H, Lk, D]);
    const dOut = rand(rng, [B, H, Lq, D]);
    for (const maskFill of [-1e9, -Infinity]) {
      // Bottom-right causal with Lq > Lk: query rows 0..2 see no key.
      const r = lab.scaledDotProductAttentionBackward(q, k, v, dOut, { mask: [{ kind: 'causal', align: 'bottom-right' }], maskFill });
      for (const g of [r.dq, r.dk, r.dv]) expect(g.data.every(Number.isFinite)).toBe(true);
      for (let h = 0; h < H; h++) for (let i = 0; i < Lq - Lk; i++) for (let d = 0; d < D; d++) {
        expect(r.dq.data[((h * Lq) + i) * D + d]).toBe(0);
      }
      if (maskFill === -Infinity) for (let i = 0; i < (Lq - Lk) * D; i++) expect(r.output.data[i]).toBe(0);
    }
  });

  test('bad variants get clear errors', () => {
    const lab = labs[backend];
    const t = (shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });
    expect(() => lab.scaledDotProductAttentionBackward(t([1, 3, 4, 2]), t([1, 2, 4, 2]), t([1, 2, 4, 2]), t([1, 3, 4, 2])))
      .toThrow(/multiple of Hkv/);
    expect(() => lab.scaledDotProductAttentionBackward(t([1, 2, 4, 2]), t([1, 2, 4, 2]), t([1, 2, 4, 2]), t([1, 2, 4, 2]), { softcap: -1 }))
      .toThrow(/softcap must be a finite number > 0/);
    expect(() => lab.scaledDotProductAttentionBackward(t([1, 2, 4, 2]), t([1, 2, 4, 2]), t([1, 2, 4, 2]), t([1, 2, 4, 2]), { softcap: '2' }))
      .toThrow(TypeError);
  });
});

describe.each(BACKENDS)('%s: mha.backward with window, ALiBi and maskFill -Infinity', (backend) => {
  test.each([
    ['window + alibi', [{ kind: 'window', left: 2, right: 1 }, { kind: 'alibi' }], undefined],
    ['causal bottom-right, -inf', [{ kind: 'causal', align: 'bottom-right' }], -Infinity],
  ])('%s', (name, mask, maskFill) => {
    const lab = labs[backend];
    const E = 6, H = 3, B = 2, Lq = 5, Lk = 7;
    const rng = ref.mulberry32(41);
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 5 });
    const query = rand(rng, [B, Lq, E]);
    const key = rand(rng, [B, Lk, E]);
    const value = rand(rng, [B, Lk, E]);
    const dOut = rand(rng, [B, Lq, E]);
    const r = mha.backward(query, key, value, dOut, { mask, maskFill });
    const w = mha.getWeights({ layout: 'torch' });
    const wd = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, f64(t)]));
    const qd = f64(query), kd = f64(key), vd = f64(value);
    const modern = modernOptions(mask, { H, maskFill });
    const f = () => dot(mhaF64({ E, H, B, Lq, Lk, modern }, wd, qd, kd, vd), dOut.data);
    expect(relativeError(r.output.data, mhaF64({ E, H, B, Lq, Lk, modern }, wd, qd, kd, vd))).toBeLessThan(1e-5);
    expect(relativeError(r.dQuery.data, numericGradient(f, qd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dKey.data, numericGradient(f, kd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dValue.data, numericGradient(f, vd))).toBeLessThanOrEqual(TOL);
    for (const n of ['wq', 'wk', 'wv', 'wo', 'bq', 'bv', 'bo']) {
      expect(relativeError(r.dWeights[n].data, numericGradient(f, wd[n]))).toBeLessThanOrEqual(TOL);
    }
    mha.dispose();
  });
});

describe.each(BACKENDS)('%s: mha.backward with GQA/MQA and rope', (backend) => {
  test.each([
    ['GQA (H 4, Hkv 2), rope, causal', { embedDim: 8, numHeads: 4, numKvHeads: 2, rope: true }, [{ kind: 'causal' }]],
    ['MQA, rope { rotaryDim 2, interleaved, base 500 }', { embedDim: 12, numHeads: 3, numKvHeads: 1, rope: { rotaryDim: 2, interleaved: true, base: 500 } }, undefined],
    ['GQA without rope, no bias', { embedDim: 12, numHeads: 6, numKvHeads: 3, bias: false }, [{ kind: 'window', left: 1, right: 2 }]],
  ])('%s', (name, cfg, mask) => {
    const lab = labs[backend];
    const E = cfg.embedDim, H = cfg.numHeads, Hkv = cfg.numKvHeads, B = 2, Lq = 5, Lk = 7;
    const rng = ref.mulberry32(E * 7 + H);
    const mha = lab.multiHeadAttention({ ...cfg, seed: 9 });
    const query = rand(rng, [B, Lq, E]);
    const key = rand(rng, [B, Lk, E]);
    const value = rand(rng, [B, Lk, E]);
    const dOut = rand(rng, [B, Lq, E]);
    const r = mha.backward(query, key, value, dOut, { mask });
    const w = mha.getWeights({ layout: 'torch' });
    expect(w.wk.shape).toEqual([Hkv * (E / H), E]);
    const wd = Object.fromEntries(Object.entries(w).map(([n, t]) => [n, f64(t)]));
    const qd = f64(query), kd = f64(key), vd = f64(value);
    const spec = { E, H, Hkv, B, Lq, Lk, rope: cfg.rope ?? false, modern: modernOptions(mask, { H }) };
    expect(relativeError(r.output.data, mhaF64(spec, wd, qd, kd, vd))).toBeLessThan(1e-5);
    // The training forward agrees with the inference forward.
    expect(relativeError(r.output.data, mha.forwardSync(query, key, value, { mask, needWeights: false }).output.data)).toBeLessThan(1e-5);
    const f = () => dot(mhaF64(spec, wd, qd, kd, vd), dOut.data);
    expect(relativeError(r.dQuery.data, numericGradient(f, qd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dKey.data, numericGradient(f, kd))).toBeLessThanOrEqual(TOL);
    expect(relativeError(r.dValue.data, numericGradient(f, vd))).toBeLessThanOrEqual(TOL);
    for (const n of Object.keys(w)) {
      if (n === 'bk' && !cfg.rope) continue; // exact gradient 0 without rope (shift invariance)
      const err = relativeError(r.dWeights[n].data, numericGradient(f, wd[n]));
      expect([n, err <= TOL ? 'ok' : err]).toEqual([n, 'ok']);
    }
    mha.dispose();
  });
});

describe.each(BACKENDS)("%s: transformer with positional 'rope'", (backend) => {
  const config = { vocabSize: 5, maxLength: 6, embedDim: 8, numHeads: 2, numLayers: 2, ffnDim: 7, causal: true, positional: 'rope', seed: 3 };

  test('forward matches the float64 model; the step gradient matches finite differences', () => {
    const lab = labs[backend];
    const model = lab.transformer(config);
    const B = 2, L = 5;
    const { tokens, targets } = lab.tasks.shift({ length: L, vocab: 5, batch: B, seed: 9 });
    const lossMask = new Float32Array(B * L).fill(1);
    lossMask[3] = 0;
    const weights = model.getWeights();
    expect(Object.keys(weights).some((n) => n.startsWith('pos'))).toBe(false);
    const wd = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, f64(t)]));
    const logits = model.forward(tokens, { attention: false }).logits.data;
    const want = transformerLogits(config, wd, tokens.data, B, L);
    expect(relativeError(logits, want)).toBeLessThan(1e-5);
    const trainer = model.trainer({ lr: 0, weightDecay: 0, clip: 0 });
    trainer.step(tokens, targets, { lossMask });
    const grads = model.getGradients();
    const f = () => maskedCrossEntropy(transformerLogits(config, wd, tokens.data, B, L), targets.data, lossMask, config.vocabSize);
    for (const name of Object.keys(weights)) {
      const err = relativeError(grads[name].data, numericGradient(f, wd[name]));
      expect([name, err <= TOL ? 'ok' : err]).toEqual([name, 'ok']);
    }
    model.dispose();
  });

  test('rope positions matter (a permuted input changes the logits) and bad configs are refused', () => {
    const lab = labs[backend];
    const model = lab.transformer({ ...config, causal: false, numLayers: 1 });
    const a = model.forward([[1, 2, 3, 4]], { attention: false }).logits.data;
    const b = model.forward([[2, 1, 3, 4]], { attention: false }).logits.data;
    // Without positions, swapping tokens 0 and 1 would swap the rows of the
    // non-causal model's logits; with rope it does not.
    const V = config.vocabSize;
    let diff = 0;
    for (let j = 0; j < V; j++) diff += Math.abs(a[j] - b[V + j]);
    expect(diff).toBeGreaterThan(1e-4);
    model.dispose();
    expect(() => lab.transformer({ ...config, embedDim: 6 })).toThrow(/positional 'rope' needs an even head dim/);
    expect(() => lab.transformer({ ...config, positional: 'rotary' })).toThrow(/'sinusoidal', 'learned', 'rope' or 'none'/);
  });
});
