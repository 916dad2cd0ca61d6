// errors.test.js — every documented error: a TypeError (wrong type, missing
// field) or RangeError (bad size, shape, value) whose message names the
// argument; forward rejects instead of throwing; after each error the module
// keeps working and a valid call still gives the right answer.
import { init } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, rand, f32Weights } from './helpers.js';

/** Calls fn, expects it to throw `type` ('TypeError' | 'RangeError' | 'Error' | [..]) with a message matching `re`. */
function expectError(fn, type, re) {
  let err = null;
  let ret;
  try {
    ret = fn();
  } catch (e) {
    err = e;
  }
  if (!err) throw new Error(`expected a ${type} matching ${re}, but the call returned ${ret && typeof ret === 'object' ? 'an object' : ret}`);
  checkError(err, type, re);
}

function checkError(err, type, re) {
  const types = Array.isArray(type) ? type : [type];
  const name = err && err.name;
  const msg = err && err.message;
  if (!(err instanceof Object) || typeof msg !== 'string') throw new Error(`expected an Error object, got ${String(err)}`);
  if (!types.includes('Error') && !types.includes(name)) {
    throw new Error(`expected ${types.join(' or ')}, got ${name}: ${msg}`);
  }
  if (!re.test(msg)) throw new Error(`${name} message does not name the argument (${re}): "${msg}"`);
}

/** fn must return a promise that rejects (not throw synchronously). */
async function expectRejects(fn, type, re) {
  let p;
  try {
    p = fn();
  } catch (e) {
    throw new Error(`threw synchronously instead of rejecting: ${e && e.name}: ${e && e.message}`);
  }
  if (!p || typeof p.then !== 'function') throw new Error('did not return a promise');
  let err = null;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  if (!err) throw new Error(`expected the promise to reject with ${type} matching ${re}, but it resolved`);
  checkError(err, type, re);
}

const rng0 = ref.mulberry32(9000);
const Q = rand(rng0, [2, 2, 4, 6]);
const K = rand(rng0, [2, 2, 5, 6]);
const V = rand(rng0, [2, 2, 5, 3]);
const SDPA_EXP = ref.scaledDotProductAttention(Q, K, V, { mask: { kind: 'causal' } });
const MHA_W = ref.randomMhaWeights(rng0, { embedDim: 8, kdim: 5, vdim: 7 });
const MHA_CFG = { embedDim: 8, numHeads: 2, kdim: 5, vdim: 7 };
const MQ = rand(rng0, [2, 3, 8]);
const MK = rand(rng0, [2, 4, 5]);
const MV = rand(rng0, [2, 4, 7]);
const MHA_EXP = ref.multiHeadAttention(MHA_CFG, MHA_W, MQ, MK, MV);

describe.each(BACKENDS)('errors — %s', (backend) => {
  let lab;
  let mha; // a long-lived module that must survive every error
  beforeAll(async () => {
    lab = await init({ backend });
    mha = lab.multiHeadAttention(MHA_CFG);
    mha.setWeights(f32Weights(MHA_W));
  });
  afterAll(() => mha?.dispose());

  /** A valid call after an error still returns the right answer. */
  async function expectStillWorks() {
    const s = lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'causal' } });
    expectTensorClose(s.output, SDPA_EXP.output, TOL.attention, 'sdpa after error');
    const m = await mha.forward(MQ, MK, MV);
    expectTensorClose(m.output, MHA_EXP.output, TOL.attention, 'mha after error');
    expectTensorClose(m.weights, MHA_EXP.weights, TOL.attention, 'mha weights after error');
  }

  test('embedDim not divisible by numHeads', async () => {
    expectError(() => lab.multiHeadAttention({ embedDim: 10, numHeads: 3 }), 'RangeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: 10, numHeads: 3 }), 'RangeError', /numHeads/);
    expectError(() => lab.selfAttentionLayer({ embedDim: 10, numHeads: 4 }), 'RangeError', /embedDim/);
    await expectStillWorks();
  });

  test('missing or non-numeric config fields', async () => {
    expectError(() => lab.multiHeadAttention({ numHeads: 2 }), 'TypeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: '8', numHeads: 2 }), 'TypeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: 8 }), 'TypeError', /numHeads/);
    await expectStillWorks();
  });

  test('NaN, negative, zero and fractional sizes', async () => {
    expectError(() => lab.positionalEncoding(NaN, 8), 'RangeError', /seqLen/);
    expectError(() => lab.positionalEncoding(-1, 8), 'RangeError', /seqLen/);
    expectError(() => lab.positionalEncoding(0, 8), 'RangeError', /seqLen/);
    expectError(() => lab.positionalEncoding(2.5, 8), 'RangeError', /seqLen/);
    expectError(() => lab.positionalEncoding(4, NaN), 'RangeError', /dModel/);
    expectError(() => lab.positionalEncoding(4, -8), 'RangeError', /dModel/);
    expectError(() => lab.positionalEncoding(4, 0), 'RangeError', /dModel/);
    expectError(() => lab.positionalEncoding(4, 7.5), 'RangeError', /dModel/);
    expectError(() => lab.positionalEncoding(4, 8, { base: NaN }), 'RangeError', /base/);
    expectError(() => lab.positionalEncoding(4, 8, { base: -5 }), 'RangeError', /base/);
    expectError(() => lab.positionalEncoding('4', 8), 'TypeError', /seqLen/);
    expectError(() => lab.multiHeadAttention({ embedDim: NaN, numHeads: 2 }), 'RangeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: -8, numHeads: 2 }), 'RangeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: 8.5, numHeads: 1 }), 'RangeError', /embedDim/);
    expectError(() => lab.multiHeadAttention({ embedDim: 8, numHeads: 0 }), 'RangeError', /numHeads/);
    expectError(() => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: 0 }), 'RangeError', /kdim/);
    expectError(() => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, vdim: 2.5 }), 'RangeError', /vdim/);
    expectError(() => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: 1 }), 'RangeError', /dropout/);
    expectError(() => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: -0.1 }), 'RangeError', /dropout/);
    expectError(() => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: NaN }), 'RangeError', /dropout/);
    // tensor shapes
    expectError(() => lab.scaledDotProductAttention({ data: new Float32Array(0), shape: [2, -3] }, K, V), 'RangeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention({ data: new Float32Array(6), shape: [2.5, 3] }, K, V), 'RangeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention({ data: new Float32Array(6), shape: [NaN, 3] }, K, V), 'RangeError', /\bq\b/);
    await expectStillWorks();
  });

  test('wrong data length', async () => {
    expectError(() => lab.scaledDotProductAttention({ data: new Float32Array(5), shape: [2, 3] }, K, V), 'RangeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention(Q, { data: new Float32Array(K.data.length - 1), shape: K.shape }, V), 'RangeError', /\bk\b/);
    expectError(() => lab.scaledDotProductAttention(Q, K, { data: [1, 2, 3], shape: V.shape }), 'RangeError', /\bv\b/);
    expectError(() => lab.selfAttention({ data: new Float32Array(7), shape: [2, 4] }), 'RangeError', /\bx\b/);
    expectError(() => lab.selfAttention([[1, 2, 3], [4, 5]]), ['TypeError', 'RangeError'], /\bx\b/); // ragged nested array
    await expectRejects(() => mha.forward({ data: new Float32Array(10), shape: [2, 3, 8] }), 'RangeError', /query/);
    expectError(() => mha.forwardSync({ data: new Float32Array(10), shape: [2, 3, 8] }), 'RangeError', /query/);
    await expectStillWorks();
  });

  test('non-numeric data and wrong types', async () => {
    expectError(() => lab.scaledDotProductAttention({ data: ['a', 'b', 'c', 'd'], shape: [2, 2] }, K, V), 'TypeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention([[1, 'x'], [2, 3]], [[1, 0], [0, 1]], [[1, 0], [0, 1]]), 'TypeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention({ shape: [2, 2] }, K, V), 'TypeError', /\bq\b/);
    expectError(() => lab.scaledDotProductAttention(Q, 'k', V), 'TypeError', /\bk\b/);
    expectError(() => lab.scaledDotProductAttention(Q, K, null), 'TypeError', /\bv\b/);
    expectError(() => lab.selfAttention('hello'), 'TypeError', /\bx\b/);
    expectError(() => lab.selfAttention(undefined), 'TypeError', /\bx\b/);
    expectError(() => lab.selfAttention({ data: { length: 4 }, shape: [2, 2] }), 'TypeError', /\bx\b/);
    await expectRejects(() => mha.forward('query'), 'TypeError', /query/);
    await expectRejects(() => mha.forward(MQ, { data: 'abc', shape: [2, 4, 5] }), 'TypeError', /key/);
    await expectStillWorks();
  });

  test('q/k/v shape mismatch', async () => {
    const q = rand(ref.mulberry32(1), [2, 3, 4]);
    expectError(() => lab.scaledDotProductAttention(q, rand(ref.mulberry32(2), [2, 5, 6]), rand(ref.mulberry32(3), [2, 5, 6])),
      'RangeError', /\bk\b|\bq\b/); // D differs
    expectError(() => lab.scaledDotProductAttention(q, rand(ref.mulberry32(2), [2, 5, 4]), rand(ref.mulberry32(3), [2, 6, 4])),
      'RangeError', /\bv\b|\bk\b/); // Lk differs
    expectError(() => lab.scaledDotProductAttention(q, rand(ref.mulberry32(2), [3, 5, 4]), rand(ref.mulberry32(3), [3, 5, 4])),
      'RangeError', /\bk\b|\bq\b/); // leading dims differ
    expectError(() => lab.scaledDotProductAttention(q, rand(ref.mulberry32(2), [1, 2, 5, 4]), rand(ref.mulberry32(3), [1, 2, 5, 4])),
      'RangeError', /\bk\b|\bq\b/); // ranks differ
    expectError(() => lab.scaledDotProductAttention({ data: [1, 2, 3], shape: [3] }, { data: [1, 2, 3], shape: [3] }, { data: [1, 2, 3], shape: [3] }),
      'RangeError', /\bq\b/); // rank 1
    // MHA
    await expectRejects(() => mha.forward(rand(ref.mulberry32(4), [2, 3, 9]), MK, MV), 'RangeError', /query/); // E
    await expectRejects(() => mha.forward(MQ, rand(ref.mulberry32(4), [2, 4, 8]), MV), 'RangeError', /key/); // kdim
    await expectRejects(() => mha.forward(MQ, MK, rand(ref.mulberry32(4), [2, 4, 5])), 'RangeError', /value/); // vdim
    await expectRejects(() => mha.forward(MQ, MK, rand(ref.mulberry32(4), [2, 6, 7])), 'RangeError', /value|key/); // Lk
    await expectRejects(() => mha.forward(MQ, rand(ref.mulberry32(4), [3, 4, 5]), rand(ref.mulberry32(5), [3, 4, 7])), 'RangeError', /key|query/); // B
    await expectRejects(() => mha.forward(rand(ref.mulberry32(4), [3, 8]), MK, MV), 'RangeError', /key|query/); // unbatched vs batched
    expectError(() => mha.forwardSync(rand(ref.mulberry32(4), [1, 2, 3, 8])), 'RangeError', /query/); // rank 4
    await expectStillWorks();
  });

  test('mask not broadcastable or malformed', async () => {
    const bad = (mask) => () => lab.scaledDotProductAttention(Q, K, V, { mask });
    expectError(bad({ kind: 'keep', data: new Float32Array(15), shape: [3, 5] }), 'RangeError', /mask/); // Lq 3 vs 4
    expectError(bad({ kind: 'block', data: new Float32Array(24), shape: [4, 6] }), 'RangeError', /mask/); // Lk 6 vs 5
    expectError(bad({ kind: 'additive', data: new Float32Array(60), shape: [3, 1, 4, 5] }), 'RangeError', /mask/); // B 3 vs 2
    expectError(bad({ kind: 'keep', data: new Float32Array(40), shape: [1, 2, 1, 4, 5] }), 'RangeError', /mask/); // rank 5
    expectError(bad({ kind: 'keep', data: new Float32Array(7), shape: [4, 5] }), 'RangeError', /mask/); // data length
    expectError(bad({ kind: 'sideways' }), ['TypeError', 'RangeError'], /mask|kind/);
    expectError(bad([{ kind: 'causal' }, { kind: 'causal' }]), ['TypeError', 'RangeError'], /mask|causal/);
    expectError(bad({ kind: 'keep', data: ['a', 'b'], shape: [1, 2] }), 'TypeError', /mask/);
    await expectRejects(() => mha.forward(MQ, MK, MV, { mask: { kind: 'keep', data: new Float32Array(9), shape: [3, 3] } }), 'RangeError', /mask/);
    await expectStillWorks();
  });

  test('padding lengths out of range', async () => {
    const bad = (lengths) => () => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'padding', lengths } });
    expectError(bad([6, 1]), 'RangeError', /lengths/); // > Lk = 5
    expectError(bad([-1, 2]), 'RangeError', /lengths/);
    expectError(bad([1.5, 2]), 'RangeError', /lengths/);
    expectError(bad([NaN, 2]), 'RangeError', /lengths/);
    expectError(bad([5]), 'RangeError', /lengths/); // B = 2 entries needed
    expectError(bad([5, 5, 5]), 'RangeError', /lengths/);
    expectError(bad(undefined), 'TypeError', /lengths/);
    await expectRejects(() => mha.forward(MQ, MK, MV, { mask: { kind: 'padding', lengths: [4, 5] } }), 'RangeError', /lengths/);
    await expectStillWorks();
  });

  test('wrong weight shapes, biases with bias: false, bad layout', async () => {
    const m = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: 5, vdim: 7 });
    const nb = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, bias: false });
    try {
      const before = m.getWeights();
      expectError(() => m.setWeights({ wq: { data: new Float32Array(72), shape: [8, 9] } }), 'RangeError', /wq/);
      expectError(() => m.setWeights({ wk: { data: new Float32Array(40), shape: [5, 8] } }), 'RangeError', /wk/); // keras shape in torch layout
      expectError(() => m.setWeights({ wk: { data: new Float32Array(40), shape: [8, 5] } }, { layout: 'keras' }), 'RangeError', /wk/);
      expectError(() => m.setWeights({ wv: Array.from({ length: 55 }, () => 0) }), 'RangeError', /wv/); // flat, wrong length
      expectError(() => m.setWeights({ bq: [1, 2, 3] }), 'RangeError', /bq/);
      expectError(() => m.setWeights({ wo: 'nope' }), 'TypeError', /wo/);
      expectError(() => m.setWeights({ wq: before.wq }, { layout: 'tensorflow' }), ['TypeError', 'RangeError'], /layout/);
      expectError(() => nb.setWeights({ bq: new Array(8).fill(0) }), 'RangeError', /bq/);
      // nothing was changed by the failed calls
      const after = m.getWeights();
      for (const n of Object.keys(before)) expect(Array.from(after[n].data)).toEqual(Array.from(before[n].data));
    } finally {
      m.dispose();
      nb.dispose();
    }
    await expectStillWorks();
  });

  test('bad dropoutSeed and training options on the layer', async () => {
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    try {
      const x = rand(ref.mulberry32(6), [2, 3, 8]);
      await expectRejects(() => layer.forward(x, { training: true, dropoutSeed: -1 }), 'RangeError', /dropoutSeed/);
      await expectRejects(() => layer.forward(x, { training: true, dropoutSeed: 2 ** 32 }), 'RangeError', /dropoutSeed/);
      await expectRejects(() => layer.forward(x, { training: true, dropoutSeed: 1.5 }), 'RangeError', /dropoutSeed/);
      await expectRejects(() => layer.forward(rand(ref.mulberry32(6), [2, 3, 9])), 'RangeError', /\bx\b/);
      expectError(() => layer.setWeights({ gamma: [1, 2] }), 'RangeError', /gamma/);
      const ok = layer.forwardSync(x);
      expect(ok.output.shape).toEqual([2, 3, 8]);
    } finally {
      layer.dispose();
    }
    await expectStillWorks();
  });

  test('calls after dispose throw an Error saying so; dispose is idempotent', async () => {
    const m = lab.multiHeadAttention({ embedDim: 4, numHeads: 2 });
    const layer = lab.selfAttentionLayer({ embedDim: 4, numHeads: 2 });
    const x = rand(ref.mulberry32(7), [1, 2, 4]);
    m.dispose();
    expect(() => m.dispose()).not.toThrow();
    expectError(() => m.forwardSync(x), 'Error', /dispos/i);
    await expectRejects(() => m.forward(x), 'Error', /dispos/i);
    expectError(() => m.setWeights({ bq: [0, 0, 0, 0] }), 'Error', /dispos/i);
    expectError(() => m.getWeights(), 'Error', /dispos/i);
    layer.dispose();
    layer.dispose();
    expectError(() => layer.forwardSync(x), 'Error', /dispos/i);
    await expectRejects(() => layer.forward(x), 'Error', /dispos/i);
    expectError(() => layer.getWeights(), 'Error', /dispos/i);
    await expectStillWorks();
  });

  test('many failing calls in a row do not break the module', async () => {
    for (let i = 0; i < 200; i++) {
      expectError(() => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'padding', lengths: [9, 9] } }), 'RangeError', /lengths/);
      await expectRejects(() => mha.forward(MQ, MK, rand(ref.mulberry32(i), [2, 4, 6])), 'RangeError', /value/);
    }
    await expectStillWorks();
  });
});
