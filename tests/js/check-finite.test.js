// checkFinite: off by default (NaN and ±Infinity propagate); with
// init({ checkFinite: true }) or a call's { checkFinite: true } every tensor
// argument of every function is scanned and the first non-finite element is
// a RangeError naming the argument and the element. One test per function,
// for NaN, +Infinity and -Infinity in each of its tensor arguments.
import { init } from '../../web/node.js';
import { BACKENDS } from './helpers.js';

const BAD = [['NaN', NaN], ['+Infinity', Infinity], ['-Infinity', -Infinity]];
const E = 8;
const H = 2;

function tensor(shape, seed = 1) {
  const n = shape.reduce((a, b) => a * b, 1);
  return { data: Float32Array.from({ length: n }, (_, i) => Math.sin(seed + 0.7 * i) * 0.5), shape };
}
/** A copy of `t` with element `at` set to `value`. */
function poisoned(t, at, value) {
  const data = Float32Array.from(t.data);
  data[at] = value;
  return { data, shape: t.shape.slice() };
}
const unravel = (i, shape) => shape.reduceRight((acc, d) => { acc.idx.unshift(acc.rest % d); acc.rest = Math.floor(acc.rest / d); return acc; }, { idx: [], rest: i }).idx;

/**
 * For each argument and each bad value: the call refuses with a RangeError
 * that names the argument, the value, the flat index and the multi-index.
 * `call(args, options)` runs the function (may return a promise);
 * `args` maps argument names to valid tensors.
 */
async function expectAllRefused(where, args, call, { optionsOn = { checkFinite: true } } = {}) {
  const names = Object.keys(args);
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) {
    const t = args[name];
    const at = Math.min(t.data.length - 1, 5);
    for (const [label, value] of BAD) {
      const bad = { ...args, [name]: poisoned(t, at, value) };
      let err = null;
      try {
        await call(bad, optionsOn);
      } catch (e) {
        err = e;
      }
      const what = `${where}: ${name} = ${label}`;
      expect([what, err && err.constructor.name]).toEqual([what, 'RangeError']);
      expect(err).toBeInstanceOf(RangeError);
      const argName = name.replace(/^mask$/, 'mask');
      expect(err.message).toContain(where);
      expect(err.message).toContain(argName);
      expect(err.message).toContain(`${label.replace('+', '')} at element ${at}`);
      if (t.shape.length > 1) expect(err.message).toContain(`[${unravel(at, t.shape).join(', ')}]`);
    }
  }
}

/** Without checkFinite the same inputs are accepted (they propagate). */
async function expectAccepted(args, call, options) {
  for (const name of Object.keys(args)) {
    const bad = { ...args, [name]: poisoned(args[name], 0, NaN) };
    await expect(Promise.resolve().then(() => call(bad, options))).resolves.toBeDefined();
  }
}

describe.each(BACKENDS)('checkFinite — %s', (backend) => {
  let lab; // default: off
  let strict; // init({ checkFinite: true })
  beforeAll(async () => {
    lab = await init({ backend });
    strict = await init({ backend, checkFinite: true });
  });

  // A 'block' mask (1 = masked): every non-finite value in it is refused (an
  // additive mask may hold -Infinity: its own test below).
  const maskOf = (t) => ({ kind: 'block', data: t.data, shape: t.shape });

  test('selfAttention: x and a tensor mask', async () => {
    const args = { x: tensor([2, 4, E]), mask: tensor([4, 4], 2) };
    const call = (l) => (a, o) => l.selfAttention(a.x, { mask: maskOf(a.mask), ...o });
    await expectAllRefused('selfAttention', args, call(lab));
    await expectAllRefused('selfAttention', args, call(strict), { optionsOn: {} });
    await expectAccepted(args, call(lab), {});
    await expectAccepted(args, call(strict), { checkFinite: false });
  });

  test('scaledDotProductAttention: q, k, v and a tensor mask', async () => {
    const args = { q: tensor([2, 3, 4]), k: tensor([2, 5, 4], 2), v: tensor([2, 5, 6], 3), mask: tensor([3, 5], 4) };
    const call = (l) => (a, o) => l.scaledDotProductAttention(a.q, a.k, a.v, { mask: maskOf(a.mask), ...o });
    await expectAllRefused('scaledDotProductAttention', args, call(lab));
    await expectAllRefused('scaledDotProductAttention', args, call(strict), { optionsOn: {} });
    await expectAccepted(args, call(lab), {});
  });

  for (const method of ['forward', 'forwardSync']) {
    test(`multiHeadAttention.${method}: query, key, value and a tensor mask (also with a KV cache)`, async () => {
      for (const l of [lab, strict]) {
        const mha = l.multiHeadAttention({ embedDim: E, numHeads: H, kdim: 5, vdim: 7 });
        try {
          const args = { query: tensor([2, 3, E]), key: tensor([2, 4, 5], 2), value: tensor([2, 4, 7], 3), mask: tensor([3, 4], 4) };
          const on = l === lab ? { checkFinite: true } : {};
          await expectAllRefused(`multiHeadAttention.${method === 'forward' ? 'forward' : 'forward'}`, args,
            (a, o) => mha[method](a.query, a.key, a.value, { mask: maskOf(a.mask), ...o }), { optionsOn: on });
          if (l === lab) await expectAccepted(args, (a, o) => mha[method](a.query, a.key, a.value, { mask: maskOf(a.mask), ...o }), {});
        } finally {
          mha.dispose();
        }
      }
      const m2 = lab.multiHeadAttention({ embedDim: E, numHeads: H });
      try {
        const cache = m2.createKVCache({ maxLength: 8 });
        const args = { query: tensor([1, 1, E]), key: tensor([1, 1, E], 2), value: tensor([1, 1, E], 3) };
        await expectAllRefused('multiHeadAttention.forward', args,
          (a, o) => m2[method](a.query, a.key, a.value, { kvCache: cache, ...o }));
        expect(cache.length).toBe(0); // refused calls leave the cache unchanged
      } finally {
        m2.dispose();
      }
    });
  }

  for (const method of ['forward', 'forwardSync']) {
    test(`selfAttentionLayer.${method}: x and a tensor mask`, async () => {
      const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: H });
      try {
        const args = { x: tensor([2, 3, E]), mask: tensor([3, 3], 2) };
        const call = (a, o) => layer[method](a.x, { mask: maskOf(a.mask), ...o });
        await expectAllRefused('selfAttentionLayer.forward', args, call);
        await expectAccepted(args, call, {});
      } finally {
        layer.dispose();
      }
    });
  }

  test('multiHeadAttention.setWeights: every weight and bias (torch and keras layouts)', async () => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, kdim: 5, vdim: 7 });
    try {
      const w = { wq: tensor([E, E]), bq: tensor([E]), wk: tensor([E, 5]), bk: tensor([E]), wv: tensor([E, 7]), bv: tensor([E]), wo: tensor([E, E]), bo: tensor([E]) };
      await expectAllRefused('setWeights', w, (a, o) => mha.setWeights({ ...a }, o));
      const keras = { wk: tensor([5, E]), wv: tensor([7, E]) };
      await expectAllRefused('setWeights', keras, (a, o) => mha.setWeights({ ...a }, { layout: 'keras', ...o }));
      // the refused calls changed nothing: the weights are still finite
      expect(Object.values(mha.getWeights()).every((t) => t.data.every(Number.isFinite))).toBe(true);
    } finally {
      mha.dispose();
    }
  });

  test('selfAttentionLayer.setWeights: projections, gamma and beta', async () => {
    const layer = strict.selfAttentionLayer({ embedDim: E, numHeads: H });
    try {
      const w = { wq: tensor([E, E]), bo: tensor([E]), gamma: tensor([E]), beta: tensor([E]) };
      await expectAllRefused('setWeights', w, (a, o) => layer.setWeights({ ...a }, o), { optionsOn: {} });
    } finally {
      layer.dispose();
    }
  });

  test('rmsNorm: x and weight', async () => {
    const args = { x: tensor([3, 5]), weight: tensor([5], 2) };
    const call = (l) => (a, o) => l.rmsNorm(a.x, { weight: a.weight, ...o });
    await expectAllRefused('rmsNorm', args, call(lab));
    await expectAllRefused('rmsNorm', args, call(strict), { optionsOn: {} });
    await expectAccepted(args, call(lab), {});
    await expectAccepted(args, call(strict), { checkFinite: false });
  });

  test('rotaryEmbedding: x, cos and sin', async () => {
    const args = { x: tensor([1, 2, 3, 4]), cos: tensor([6, 2], 2), sin: tensor([6, 2], 3) };
    const call = (l) => (a, o) => l.rotaryEmbedding(a.x, { positionIds: [[0, 2, 5]], cos: a.cos, sin: a.sin, ...o });
    await expectAllRefused('rotaryEmbedding', args, call(lab));
    await expectAllRefused('rotaryEmbedding', args, call(strict), { optionsOn: {} });
    await expectAccepted(args, call(lab), {});
    // computed tables: only x is a tensor argument
    await expectAllRefused('rotaryEmbedding', { x: args.x }, (a, o) => strict.rotaryEmbedding(a.x, o), { optionsOn: {} });
  });

  test('an additive mask may hold -Infinity (a masked position); NaN and +Infinity in it are refused', () => {
    const mask = new Float32Array(16);
    mask.fill(-Infinity, 4, 8);
    const r = strict.selfAttention(tensor([4, E]), { mask: { kind: 'additive', data: mask, shape: [4, 4] } });
    expect(Array.from(r.weights.data.subarray(4, 8))).toEqual([0.25, 0.25, 0.25, 0.25]);
  });

  test('checkFinite must be a boolean', async () => {
    expect(() => lab.selfAttention(tensor([2, E]), { checkFinite: 1 })).toThrow(TypeError);
    await expect(init({ backend, checkFinite: 'yes' })).rejects.toThrow(TypeError);
  });

  test('without checkFinite a NaN propagates to the output (the default)', () => {
    const r = lab.selfAttention(poisoned(tensor([3, E]), 0, NaN));
    expect(Array.from(r.output.data).some(Number.isNaN)).toBe(true);
  });
});
