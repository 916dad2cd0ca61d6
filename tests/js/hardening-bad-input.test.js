// hardening-bad-input.test.js — the bad-input matrix. Every public function
// meets every class of bad argument that applies to it:
//
//   wrong type · missing field · wrong rank · bad size (zero, negative,
//   fractional, NaN, ±Infinity, huge) · data shorter or longer than its shape ·
//   mask that does not broadcast · padding lengths out of range · embedDim not
//   divisible by numHeads · weights of the wrong shape or layout · calls after
//   dispose() · sizes whose buffers would exceed the wasm memory limit ·
//   unknown option keys · non-finite elements under checkFinite
//
// Each case must throw (forward/init: reject) the error CLASS the written rule
// gives (docs/errors.md, web/lib/errors.js): TypeError for a wrong kind
// (including unknown option keys), RangeError for a value, shape or size,
// DisposedError (a TypeError) for a call after dispose(). The class is checked
// by name, by constructor and by instanceof, and the message must name the
// argument. Each bad call runs three times: the wasm heap in use after the
// third equals the heap after the first (nothing leaks per failed call), and
// sizes over the limits are refused before anything is allocated (the heap and
// the wasm memory do not grow). After every case a valid call of every
// function still gives the right answer (checked against the float64
// reference). NaN and Inf input values are not errors: they propagate (the
// last describe block).
import { init, DisposedError } from '../../web/node.js';
import { ref, BACKENDS, TOL, expectTensorClose, rand, f32Weights } from './helpers.js';

// ---------------------------------------------------------------------------
// Fixtures (shared by both backends)

const rng = ref.mulberry32(4242);
const Q = rand(rng, [2, 2, 4, 6]);
const K = rand(rng, [2, 2, 5, 6]);
const V = rand(rng, [2, 2, 5, 3]);
const SX = rand(rng, [3, 4]); // selfAttention input [L, E]
const MHA_CFG = { embedDim: 8, numHeads: 2, kdim: 5, vdim: 7 };
const MHA_W = ref.randomMhaWeights(rng, { embedDim: 8, kdim: 5, vdim: 7 });
const MQ = rand(rng, [2, 3, 8]);
const MK = rand(rng, [2, 4, 5]);
const MV = rand(rng, [2, 4, 7]);
const LAYER_CFG = { embedDim: 8, numHeads: 2, dropout: 0.25 };
const LAYER_W = { ...ref.randomMhaWeights(rng, { embedDim: 8 }), gamma: rand(rng, [8], { lo: 0.5, hi: 1.5 }), beta: rand(rng, [8]) };
const LX = rand(rng, [2, 3, 8]);

const EXP = {
  sdpa: ref.scaledDotProductAttention(Q, K, V, { mask: { kind: 'causal' } }),
  self: ref.selfAttention(SX),
  mha: ref.multiHeadAttention(MHA_CFG, MHA_W, MQ, MK, MV),
  layer: ref.selfAttentionLayer(LAYER_CFG, LAYER_W, LX),
  pe: ref.positionalEncoding(5, 7),
};

const f32 = (n, v = 0.5) => new Float32Array(n).fill(v);
const T = (shape, n = shape.reduce((a, b) => a * b, 1)) => ({ data: f32(n), shape });

// ---------------------------------------------------------------------------
// The matrix. A case: [function, class, label, call(ctx), type, message regex].
// `call` gets { lab, mha, layer, deadMha, deadLayer, mha0 (bias-free MHA) }.

const TYPE = 'wrong type';
const MISSING = 'missing field';
const RANK = 'wrong rank';
const SIZE = 'bad size';
const LENGTH = 'data length';
const MASK = 'mask broadcast';
const PAD = 'padding lengths';
const HEADS = 'E not divisible by H';
const WEIGHTS = 'weights shape/layout';
const DISPOSED = 'after dispose';
const MEMORY = 'memory limit';
const UNKNOWN = 'unknown option key';
const NONFINITE = 'non-finite (checkFinite)';

/** The class each case expects, by name: exact constructor and instanceof. */
const CLASSES = { TypeError, RangeError, DisposedError };
/** The parent class of each (a DisposedError is a TypeError). */
const PARENT = { DisposedError: TypeError };

const BAD_SIZES = [
  ['zero', 0], ['negative', -3], ['fractional', 2.5], ['NaN', NaN], ['Infinity', Infinity], ['-Infinity', -Infinity],
  ['2^31', 2 ** 31], ['1e300', 1e300],
];

function buildCases() {
  const cases = [];
  const add = (fn, cls, label, call, type, re) => cases.push({ fn, cls, label, call, type, re });
  // An unknown key in an options/config object: a TypeError naming it and the allowed keys.
  const unknownKey = (fn, label, call, key, allowedRe) => add(fn, UNKNOWN, label, call, 'TypeError', new RegExp(`unknown key "${key}".*allowed: ${allowedRe}`));
  // checkFinite: NaN, +Infinity and -Infinity in a tensor argument (element 1).
  const poison = (t, v) => ({ data: Float32Array.from(t.data).fill(v, 1, 2), shape: t.shape.slice() });
  const finiteCases = (fn, arg, t, call) => {
    for (const [label, v] of [['NaN', NaN], ['+Infinity', Infinity], ['-Infinity', -Infinity]]) {
      add(fn, NONFINITE, `checkFinite: ${arg} holds ${label}`, (c) => call(c, poison(t, v)), 'RangeError', new RegExp(`\\b${arg} holds -?(NaN|Infinity) at element 1\\b`));
    }
  };

  // ---- init -------------------------------------------------------------
  add('init', TYPE, 'options is a number', () => init(5), 'TypeError', /options/);
  add('init', TYPE, 'options is a string', () => init('wasm'), 'TypeError', /options/);
  add('init', TYPE, 'options is an array', () => init(['wasm']), 'TypeError', /options/);
  add('init', TYPE, 'backend is a number', () => init({ backend: 5 }), 'TypeError', /backend/);
  add('init', SIZE, "backend 'cuda'", () => init({ backend: 'cuda' }), 'RangeError', /backend/);
  add('init', TYPE, 'locateFile is a string', () => init({ locateFile: '/x.wasm' }), 'TypeError', /locateFile/);
  add('init', TYPE, 'wasmBinary is a string', () => init({ wasmBinary: 'AGFzbQ==' }), 'TypeError', /wasmBinary/);
  add('init', TYPE, 'wasmBinary is a plain array', () => init({ wasmBinary: [0, 97, 115, 109] }), 'TypeError', /wasmBinary/);
  add('init', LENGTH, 'wasmBinary is 8 zero bytes', () => init({ backend: 'wasm-scalar', wasmBinary: new Uint8Array(8) }), 'RangeError', /wasmBinary/);
  add('init', LENGTH, 'wasmBinary is a truncated module', () => init({ backend: 'wasm-scalar', wasmBinary: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1]) }), 'RangeError', /wasmBinary/);
  unknownKey('init', 'options { backnd }', () => init({ backnd: 'wasm' }), 'backnd', 'backend, locateFile, wasmBinary, warmUp, checkFinite');
  add('init', TYPE, 'checkFinite is 1', () => init({ checkFinite: 1 }), 'TypeError', /checkFinite/);
  add('init', TYPE, "warmUp is 'yes'", () => init({ warmUp: 'yes' }), 'TypeError', /warmUp/);
  add('init', UNKNOWN, 'warmUp { seqlen }', () => init({ warmUp: { seqlen: 8 } }), 'TypeError', /unknown key "seqlen"/);
  add('init', SIZE, 'warmUp { seqLen: 0 }', () => init({ warmUp: { seqLen: 0 } }), 'RangeError', /seqLen/);

  // ---- positionalEncoding ----------------------------------------------
  for (const [label, v] of BAD_SIZES) {
    add('positionalEncoding', SIZE, `seqLen ${label}`, ({ lab }) => lab.positionalEncoding(v, 8), 'RangeError', /seqLen/);
    add('positionalEncoding', SIZE, `dModel ${label}`, ({ lab }) => lab.positionalEncoding(4, v), 'RangeError', /dModel/);
  }
  add('positionalEncoding', TYPE, 'seqLen is a string', ({ lab }) => lab.positionalEncoding('4', 8), 'TypeError', /seqLen/);
  add('positionalEncoding', TYPE, 'dModel is a bigint', ({ lab }) => lab.positionalEncoding(4, 8n), 'TypeError', /dModel/);
  add('positionalEncoding', TYPE, 'options is a number', ({ lab }) => lab.positionalEncoding(4, 8, 10000), 'TypeError', /options/);
  add('positionalEncoding', TYPE, 'base is a string', ({ lab }) => lab.positionalEncoding(4, 8, { base: '10000' }), 'TypeError', /base/);
  for (const base of [1, 0.5, 0, -5, NaN, Infinity]) {
    add('positionalEncoding', SIZE, `base ${base}`, ({ lab }) => lab.positionalEncoding(4, 8, { base }), 'RangeError', /base/);
  }
  add('positionalEncoding', MISSING, 'no arguments', ({ lab }) => lab.positionalEncoding(), 'TypeError', /seqLen/);
  add('positionalEncoding', MISSING, 'dModel missing', ({ lab }) => lab.positionalEncoding(4), 'TypeError', /dModel/);
  add('positionalEncoding', MEMORY, '[16385, 16384] > 2^28 elements', ({ lab }) => lab.positionalEncoding(16385, 16384), 'RangeError', /seqLen, dModel/);
  unknownKey('positionalEncoding', 'options { bas }', ({ lab }) => lab.positionalEncoding(4, 8, { bas: 100 }), 'bas', 'base');

  // ---- tensors: shared by selfAttention, sdpa, forward --------------------
  // tensorCases(fn, argName, callWith(tensor), { ranks })
  const tensorCases = (fn, arg, callWith, validShape, { rankBad, undefinedMeansDefault = false }) => {
    const re = new RegExp(`\\b${arg}\\b`);
    add(fn, TYPE, `${arg} is a string`, (c) => callWith(c, 'hello'), 'TypeError', re);
    add(fn, TYPE, `${arg} is a number`, (c) => callWith(c, 42), 'TypeError', re);
    add(fn, TYPE, `${arg} is a bare Float32Array`, (c) => callWith(c, f32(8)), 'TypeError', re);
    add(fn, TYPE, `${arg}.data is a string`, (c) => callWith(c, { data: 'abc', shape: validShape }), 'TypeError', re);
    add(fn, TYPE, `${arg}.data is a BigInt64Array`, (c) => callWith(c, { data: new BigInt64Array(8), shape: [2, 4] }), 'TypeError', re);
    add(fn, TYPE, `${arg}.data is a DataView`, (c) => callWith(c, { data: new DataView(new ArrayBuffer(32)), shape: [2, 4] }), 'TypeError', re);
    add(fn, TYPE, `${arg}.data holds a string`, (c) => callWith(c, { data: ['1', 2, 3, 4, 5, 6, 7, 8], shape: [2, 4] }), 'TypeError', re);
    add(fn, TYPE, `${arg}.data has a hole`, (c) => callWith(c, { data: [1, , 3, 4, 5, 6, 7, 8], shape: [2, 4] }), 'TypeError', re); // eslint-disable-line no-sparse-arrays
    add(fn, TYPE, `${arg}.shape is a string`, (c) => callWith(c, { data: f32(8), shape: '2,4' }), 'TypeError', re);
    add(fn, TYPE, `${arg}.shape holds a string`, (c) => callWith(c, { data: f32(8), shape: [2, '4'] }), 'TypeError', re);
    add(fn, TYPE, `${arg} nested with a string`, (c) => callWith(c, [[1, 'x'], [2, 3]]), 'TypeError', re);
    // (mha.forward: an undefined key/value means "the same as query/key")
    if (!undefinedMeansDefault) add(fn, MISSING, `${arg} missing`, (c) => callWith(c, undefined), 'TypeError', re);
    add(fn, MISSING, `${arg} null`, (c) => callWith(c, null), 'TypeError', re);
    add(fn, MISSING, `${arg}.data missing`, (c) => callWith(c, { shape: validShape }), 'TypeError', re);
    add(fn, MISSING, `${arg}.shape missing`, (c) => callWith(c, { data: f32(8) }), 'TypeError', re);
    for (const shape of rankBad) {
      add(fn, RANK, `${arg} of shape [${shape}]`, (c) => callWith(c, T(shape)), 'RangeError', re);
    }
    add(fn, RANK, `${arg} nested rank 1`, (c) => callWith(c, [1, 2, 3]), 'RangeError', re);
    for (const [label, v] of BAD_SIZES) {
      add(fn, SIZE, `${arg}.shape[0] ${label}`, (c) => callWith(c, { data: f32(8), shape: [v, ...validShape.slice(1)] }), 'RangeError', re);
    }
    add(fn, SIZE, `${arg} nested with an empty dim`, (c) => callWith(c, [[]]), 'RangeError', re);
    add(fn, SIZE, `${arg}.shape [2^30, 2^30, …] (overflowing product)`, (c) => callWith(c, { data: f32(8), shape: [2 ** 30, 2 ** 30, ...validShape.slice(2)] }), 'RangeError', re);
    const n = validShape.reduce((a, b) => a * b, 1);
    add(fn, LENGTH, `${arg}.data one short`, (c) => callWith(c, { data: f32(n - 1), shape: validShape }), 'RangeError', re);
    add(fn, LENGTH, `${arg}.data one long`, (c) => callWith(c, { data: f32(n + 1), shape: validShape }), 'RangeError', re);
    add(fn, LENGTH, `${arg}.data empty`, (c) => callWith(c, { data: [], shape: validShape }), 'RangeError', re);
    add(fn, LENGTH, `${arg} ragged nested`, (c) => callWith(c, [[1, 2, 3], [4, 5]]), 'RangeError', re);
  };

  // options objects shared by the attention calls
  const optionCases = (fn, callWithOpts) => {
    add(fn, TYPE, 'options is a string', (c) => callWithOpts(c, 'causal'), 'TypeError', /options/);
    add(fn, TYPE, 'options is an array', (c) => callWithOpts(c, [{ kind: 'causal' }]), 'TypeError', /options/);
    add(fn, TYPE, 'needWeights is a string', (c) => callWithOpts(c, { needWeights: 'yes' }), 'TypeError', /needWeights/);
    add(fn, TYPE, 'mask is a string', (c) => callWithOpts(c, { mask: 'causal' }), 'TypeError', /mask/);
    add(fn, TYPE, 'mask[1] is null', (c) => callWithOpts(c, { mask: [{ kind: 'causal' }, null] }), 'TypeError', /mask\[1\]/);
    add(fn, MISSING, 'mask.kind missing', (c) => callWithOpts(c, { mask: {} }), 'TypeError', /mask\.kind/);
    add(fn, SIZE, "mask.kind 'sideways'", (c) => callWithOpts(c, { mask: { kind: 'sideways' } }), 'RangeError', /mask\.kind/);
    add(fn, MISSING, 'keep mask without data', (c) => callWithOpts(c, { mask: { kind: 'keep' } }), 'TypeError', /mask/);
    add(fn, TYPE, 'keep mask data holds strings', (c) => callWithOpts(c, { mask: { kind: 'keep', data: ['a', 'b'], shape: [1, 2] } }), 'TypeError', /mask/);
    add(fn, SIZE, 'causal mask twice', (c) => callWithOpts(c, { mask: [{ kind: 'causal' }, { kind: 'causal' }] }), 'RangeError', /mask\[1\]/);
    add(fn, SIZE, 'two tensor masks', (c) => callWithOpts(c, { mask: [{ kind: 'keep', data: [[1]] }, { kind: 'block', data: [[0]] }] }), 'RangeError', /mask\[1\]/);
    add(fn, RANK, 'mask of rank 5', (c) => callWithOpts(c, { mask: { kind: 'keep', data: f32(1), shape: [1, 1, 1, 1, 1] } }), 'RangeError', /mask/);
    add(fn, LENGTH, 'mask data one short', (c) => callWithOpts(c, { mask: { kind: 'block', data: f32(0), shape: [1, 1] } }), 'RangeError', /mask/);
    add(fn, LENGTH, 'mask data one long', (c) => callWithOpts(c, { mask: { kind: 'additive', data: f32(2), shape: [1, 1] } }), 'RangeError', /mask/);
    add(fn, SIZE, 'mask.shape with a zero', (c) => callWithOpts(c, { mask: { kind: 'keep', data: f32(1), shape: [0, 1] } }), 'RangeError', /mask/);
    add(fn, TYPE, 'padding lengths is a string', (c) => callWithOpts(c, { mask: { kind: 'padding', lengths: '3,3' } }), 'TypeError', /lengths/);
    add(fn, MISSING, 'padding lengths missing', (c) => callWithOpts(c, { mask: { kind: 'padding' } }), 'TypeError', /lengths/);
    unknownKey(fn, 'options { maks }', (c) => callWithOpts(c, { maks: { kind: 'causal' } }), 'maks', 'mask');
    add(fn, TYPE, "checkFinite is 'yes'", (c) => callWithOpts(c, { checkFinite: 'yes' }), 'TypeError', /checkFinite/);
    add(fn, NONFINITE, 'checkFinite: block mask holds NaN', (c) => callWithOpts(c, { mask: { kind: 'block', data: [[NaN]] }, checkFinite: true }), 'RangeError', /mask holds NaN at element 0/);
  };

  // ---- selfAttention ----------------------------------------------------
  const selfCall = (c, x) => c.lab.selfAttention(x);
  tensorCases('selfAttention', 'x', selfCall, [3, 4], { rankBad: [[12], [1, 1, 3, 4]] });
  optionCases('selfAttention', (c, o) => c.lab.selfAttention(SX, o));
  add('selfAttention', TYPE, 'scale is a string', ({ lab }) => lab.selfAttention(SX, { scale: '0.5' }), 'TypeError', /scale/);
  finiteCases('selfAttention', 'x', SX, ({ lab }, t) => lab.selfAttention(t, { checkFinite: true }));
  for (const scale of [NaN, Infinity, -Infinity, 1e39]) {
    add('selfAttention', SIZE, `scale ${scale}`, ({ lab }) => lab.selfAttention(SX, { scale }), 'RangeError', /scale/);
  }
  add('selfAttention', MASK, 'keep mask [2,3] vs scores [3,3]', ({ lab }) => lab.selfAttention(SX, { mask: { kind: 'keep', data: f32(6), shape: [2, 3] } }), 'RangeError', /mask/);
  add('selfAttention', MASK, 'keep mask [3,4] vs scores [3,3]', ({ lab }) => lab.selfAttention(SX, { mask: { kind: 'keep', data: f32(12), shape: [3, 4] } }), 'RangeError', /mask/);
  add('selfAttention', MASK, 'batched x, mask [3,1,1,3]', ({ lab }) => lab.selfAttention(T([2, 3, 4]), { mask: { kind: 'block', data: f32(9), shape: [3, 1, 1, 3] } }), 'RangeError', /mask/);
  add('selfAttention', PAD, 'lengths [4] > L = 3', ({ lab }) => lab.selfAttention(SX, { mask: { kind: 'padding', lengths: [4] } }), 'RangeError', /lengths/);
  add('selfAttention', PAD, 'lengths [-1]', ({ lab }) => lab.selfAttention(SX, { mask: { kind: 'padding', lengths: [-1] } }), 'RangeError', /lengths/);
  add('selfAttention', PAD, 'lengths [2, 2] for B = 1', ({ lab }) => lab.selfAttention(SX, { mask: { kind: 'padding', lengths: [2, 2] } }), 'RangeError', /lengths/);
  add('selfAttention', MEMORY, 'weights [20000,20000] > 2^28 elements', ({ lab }) => lab.selfAttention(T([20000, 1])), 'RangeError', /weights/);
  add('selfAttention', MEMORY, 'x [16384,1600]: buffers > 1.5 GiB', ({ lab }) => lab.selfAttention(bigX()), 'RangeError', /\bq \[16384,1600\].*weights \[16384,16384\]/);

  // ---- scaledDotProductAttention ---------------------------------------
  for (const [arg, i] of [['q', 0], ['k', 1], ['v', 2]]) {
    const valid = [Q, K, V];
    tensorCases('scaledDotProductAttention', arg, (c, t) => {
      const a = valid.slice();
      a[i] = t;
      return c.lab.scaledDotProductAttention(...a);
    }, valid[i].shape, { rankBad: [] });
  }
  add('scaledDotProductAttention', RANK, 'q of rank 1', ({ lab }) => lab.scaledDotProductAttention(T([6]), T([6]), T([6])), 'RangeError', /\bq\b/);
  add('scaledDotProductAttention', RANK, 'k of rank 3 vs q rank 4', ({ lab }) => lab.scaledDotProductAttention(Q, T([2, 5, 6]), V), 'RangeError', /\bk\b/);
  add('scaledDotProductAttention', RANK, 'v of rank 5 vs q rank 4', ({ lab }) => lab.scaledDotProductAttention(Q, K, T([1, 2, 2, 5, 3])), 'RangeError', /\bv\b/);
  add('scaledDotProductAttention', SIZE, "k's D 7 vs q's D 6", ({ lab }) => lab.scaledDotProductAttention(Q, T([2, 2, 5, 7]), V), 'RangeError', /\bk\b/);
  add('scaledDotProductAttention', SIZE, "v's Lk 6 vs k's Lk 5", ({ lab }) => lab.scaledDotProductAttention(Q, K, T([2, 2, 6, 3])), 'RangeError', /\bv\b/);
  add('scaledDotProductAttention', SIZE, "k's leading dims [3,2] vs q's [2,2]", ({ lab }) => lab.scaledDotProductAttention(Q, T([3, 2, 5, 6]), T([3, 2, 5, 3])), 'RangeError', /\bk\b/);
  optionCases('scaledDotProductAttention', (c, o) => c.lab.scaledDotProductAttention(Q, K, V, o));
  finiteCases('scaledDotProductAttention', 'q', Q, ({ lab }, t) => lab.scaledDotProductAttention(t, K, V, { checkFinite: true }));
  finiteCases('scaledDotProductAttention', 'k', K, ({ lab }, t) => lab.scaledDotProductAttention(Q, t, V, { checkFinite: true }));
  finiteCases('scaledDotProductAttention', 'v', V, ({ lab }, t) => lab.scaledDotProductAttention(Q, K, t, { checkFinite: true }));
  for (const scale of [NaN, Infinity, 1e39, -1e39]) {
    add('scaledDotProductAttention', SIZE, `scale ${scale}`, ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { scale }), 'RangeError', /scale/);
  }
  add('scaledDotProductAttention', TYPE, 'scale is null', ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { scale: null }), 'TypeError', /scale/);
  for (const [label, shape] of [['[3,5] (Lq 3 vs 4)', [3, 5]], ['[4,6] (Lk 6 vs 5)', [4, 6]], ['[3,1,4,5] (B 3 vs 2)', [3, 1, 4, 5]], ['[2,3,4,5] (H 3 vs 2)', [2, 3, 4, 5]], ['[2,2] vs [4,5]', [2, 2]]]) {
    for (const kind of ['keep', 'block', 'additive']) {
      add('scaledDotProductAttention', MASK, `${kind} mask ${label}`, ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind, data: f32(shape.reduce((a, b) => a * b, 1)), shape } }), 'RangeError', /mask/);
    }
  }
  add('scaledDotProductAttention', MASK, 'nested mask data [[1,0],[0,1]] vs [4,5]', ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'keep', data: [[1, 0], [0, 1]] } }), 'RangeError', /mask/);
  add('scaledDotProductAttention', MASK, 'nested data vs a different shape', ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'keep', data: [[1, 1, 1, 1, 1]], shape: [5, 1] } }), 'RangeError', /mask/);
  for (const [label, lengths, type] of [
    ['[6, 1] (> Lk 5)', [6, 1], 'RangeError'], ['[-1, 2]', [-1, 2], 'RangeError'], ['[1.5, 2]', [1.5, 2], 'RangeError'],
    ['[NaN, 2]', [NaN, 2], 'RangeError'], ['[Infinity, 2]', [Infinity, 2], 'RangeError'], ['[5] (B = 2)', [5], 'RangeError'],
    ['[5, 5, 5] (B = 2)', [5, 5, 5], 'RangeError'], ["['3', 2]", ['3', 2], 'TypeError'], ['[null, 2]', [null, 2], 'TypeError'],
    ['Int32Array [2, 9]', Int32Array.from([2, 9]), 'RangeError'], ['Float64Array [2, 0.5]', Float64Array.from([2, 0.5]), 'RangeError'],
    ['[2 ** 31, 1]', [2 ** 31, 1], 'RangeError'], ['[]', [], 'RangeError'],
  ]) {
    add('scaledDotProductAttention', PAD, `lengths ${label}`, ({ lab }) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'padding', lengths } }), type, /lengths/);
  }
  add('scaledDotProductAttention', MEMORY, 'weights [1,20000,20000] > 2^28 elements', ({ lab }) => lab.scaledDotProductAttention(T([1, 20000, 1]), T([1, 20000, 1]), T([1, 20000, 1])), 'RangeError', /weights/);
  add('scaledDotProductAttention', MEMORY, 'output [16384,16385] > 2^28 elements', ({ lab }) => lab.scaledDotProductAttention(T([16384, 1]), T([1, 1]), T([1, 16385])), 'RangeError', /output/);

  // ---- multiHeadAttention (constructor) --------------------------------
  const mhaLike = (fn, ctor) => {
    add(fn, MISSING, 'no config', ({ lab }) => lab[ctor](), 'TypeError', /config/);
    add(fn, MISSING, 'null config', ({ lab }) => lab[ctor](null), 'TypeError', /config/);
    add(fn, TYPE, 'config is a number', ({ lab }) => lab[ctor](8), 'TypeError', /config/);
    add(fn, TYPE, 'config is an array', ({ lab }) => lab[ctor]([8, 2]), 'TypeError', /config/);
    add(fn, MISSING, 'embedDim missing', ({ lab }) => lab[ctor]({ numHeads: 2 }), 'TypeError', /embedDim/);
    add(fn, MISSING, 'numHeads missing', ({ lab }) => lab[ctor]({ embedDim: 8 }), 'TypeError', /numHeads/);
    add(fn, TYPE, 'embedDim is a string', ({ lab }) => lab[ctor]({ embedDim: '8', numHeads: 2 }), 'TypeError', /embedDim/);
    add(fn, TYPE, 'numHeads is a boolean', ({ lab }) => lab[ctor]({ embedDim: 8, numHeads: true }), 'TypeError', /numHeads/);
    add(fn, TYPE, 'bias is a string', ({ lab }) => lab[ctor]({ embedDim: 8, numHeads: 2, bias: 'no' }), 'TypeError', /bias/);
    add(fn, TYPE, 'seed is a string', ({ lab }) => lab[ctor]({ embedDim: 8, numHeads: 2, seed: '1' }), 'TypeError', /seed/);
    for (const [label, v] of [...BAD_SIZES, ['65537', 65537]]) {
      add(fn, SIZE, `embedDim ${label}`, ({ lab }) => lab[ctor]({ embedDim: v, numHeads: 1 }), 'RangeError', /embedDim/);
      add(fn, SIZE, `numHeads ${label}`, ({ lab }) => lab[ctor]({ embedDim: 8, numHeads: v }), 'RangeError', /numHeads/);
    }
    for (const seed of [-1, 0.5, 2 ** 32, NaN]) {
      add(fn, SIZE, `seed ${seed}`, ({ lab }) => lab[ctor]({ embedDim: 8, numHeads: 2, seed }), 'RangeError', /seed/);
    }
    for (const [e, h] of [[10, 3], [8, 3], [7, 2], [512, 6], [2, 4]]) {
      add(fn, HEADS, `embedDim ${e}, numHeads ${h}`, ({ lab }) => lab[ctor]({ embedDim: e, numHeads: h }), 'RangeError', /embedDim.*numHeads/);
    }
    add(fn, MEMORY, 'embedDim 8192: weights > 1.5 GiB', ({ lab }) => lab[ctor]({ embedDim: 8192, numHeads: 8 }), 'RangeError', /embedDim 8192/);
    add(fn, MEMORY, 'embedDim 6000: weights > 1.5 GiB', ({ lab }) => lab[ctor]({ embedDim: 6000, numHeads: 8 }), 'RangeError', /embedDim 6000/);
    add(fn, MEMORY, 'embedDim 65536: projection > 2^28 elements', ({ lab }) => lab[ctor]({ embedDim: 65536, numHeads: 1 }), 'RangeError', /embedDim/);
  };
  mhaLike('multiHeadAttention', 'multiHeadAttention');
  unknownKey('multiHeadAttention', 'config { kDim }', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kDim: 5 }), 'kDim', 'embedDim, numHeads, kdim, vdim, bias, seed');
  for (const [label, v] of BAD_SIZES) {
    add('multiHeadAttention', SIZE, `kdim ${label}`, ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: v }), 'RangeError', /kdim/);
    add('multiHeadAttention', SIZE, `vdim ${label}`, ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, vdim: v }), 'RangeError', /vdim/);
  }
  add('multiHeadAttention', TYPE, 'kdim is a string', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: '5' }), 'TypeError', /kdim/);
  add('multiHeadAttention', MEMORY, 'embedDim 4000, kdim = vdim = 22000: weights > 1.5 GiB', ({ lab }) => lab.multiHeadAttention({ embedDim: 4000, numHeads: 8, kdim: 22000, vdim: 22000 }), 'RangeError', /kdim 22000/);
  add('multiHeadAttention', MEMORY, 'kdim 65536 with embedDim 4096: projection > 2^28 elements', ({ lab }) => lab.multiHeadAttention({ embedDim: 4096, numHeads: 8, kdim: 65536 }), 'RangeError', /kdim/);

  // ---- selfAttentionLayer (constructor) ----------------------------------
  mhaLike('selfAttentionLayer', 'selfAttentionLayer');
  unknownKey('selfAttentionLayer', 'config { dropOut }', ({ lab }) => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropOut: 0.1 }), 'dropOut', 'embedDim, numHeads, kdim, vdim, bias, seed, dropout, eps');
  for (const dropout of [-0.1, 1, 1.5, NaN, Infinity]) {
    add('selfAttentionLayer', SIZE, `dropout ${dropout}`, ({ lab }) => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout }), 'RangeError', /dropout/);
  }
  add('selfAttentionLayer', TYPE, 'dropout is a string', ({ lab }) => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: '0.1' }), 'TypeError', /dropout/);
  for (const eps of [0, -1e-5, NaN, Infinity]) {
    add('selfAttentionLayer', SIZE, `eps ${eps}`, ({ lab }) => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, eps }), 'RangeError', /eps/);
  }
  add('selfAttentionLayer', SIZE, 'kdim 5 != embedDim', ({ lab }) => lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, kdim: 5 }), 'RangeError', /kdim/);

  // ---- mha.forward / forwardSync ----------------------------------------
  for (const method of ['forward', 'forwardSync']) {
    const fn = `mha.${method}`;
    for (const [arg, i] of [['query', 0], ['key', 1], ['value', 2]]) {
      const valid = [MQ, MK, MV];
      tensorCases(fn, arg, (c, t) => {
        const a = valid.slice();
        a[i] = t;
        return c.mha[method](...a);
      }, valid[i].shape, { rankBad: [[24], [1, 2, 3, 8]], undefinedMeansDefault: i > 0 });
    }
    add(fn, SIZE, "query's last dim 9 vs embedDim 8", ({ mha }) => mha[method](T([2, 3, 9]), MK, MV), 'RangeError', /query/);
    add(fn, SIZE, "key's last dim 8 vs kdim 5", ({ mha }) => mha[method](MQ, T([2, 4, 8]), MV), 'RangeError', /\bkey\b/);
    add(fn, SIZE, "value's last dim 5 vs vdim 7", ({ mha }) => mha[method](MQ, MK, T([2, 4, 5])), 'RangeError', /value/);
    add(fn, SIZE, "value's Lk 6 vs key's 4", ({ mha }) => mha[method](MQ, MK, T([2, 6, 7])), 'RangeError', /value/);
    add(fn, SIZE, "key's B 3 vs query's 2", ({ mha }) => mha[method](MQ, T([3, 4, 5]), T([3, 4, 7])), 'RangeError', /query.*key/);
    add(fn, RANK, 'unbatched query with batched key', ({ mha }) => mha[method](T([3, 8]), MK, MV), 'RangeError', /query.*key/);
    optionCases(fn, (c, o) => c.mha[method](MQ, MK, MV, o));
    add(fn, TYPE, 'averageWeights is 1', ({ mha }) => mha[method](MQ, MK, MV, { averageWeights: 1 }), 'TypeError', /averageWeights/);
    add(fn, TYPE, "trace is 'true'", ({ mha }) => mha[method](MQ, MK, MV, { trace: 'true' }), 'TypeError', /trace/);
    unknownKey(fn, 'options { needWeight }', ({ mha }) => mha[method](MQ, MK, MV, { needWeight: false }), 'needWeight', 'mask, needWeights, averageWeights, trace, kvCache, checkFinite');
    finiteCases(fn, 'query', MQ, ({ mha }, t) => mha[method](t, MK, MV, { checkFinite: true }));
    finiteCases(fn, 'key', MK, ({ mha }, t) => mha[method](MQ, t, MV, { checkFinite: true }));
    finiteCases(fn, 'value', MV, ({ mha }, t) => mha[method](MQ, MK, t, { checkFinite: true }));
    for (const [label, shape] of [['[2,5] (Lq 2 vs 3)', [2, 4]], ['[3,5] (Lk 5 vs 4)', [3, 5]], ['[2,3,3,4] (H 3 vs 2)', [2, 3, 3, 4]], ['[3,1,1,4] (B 3 vs 2)', [3, 1, 1, 4]], ['[1,1,1,1,4] (rank 5)', [1, 1, 1, 1, 4]]]) {
      add(fn, MASK, `keep mask ${label}`, ({ mha }) => mha[method](MQ, MK, MV, { mask: { kind: 'keep', data: f32(shape.reduce((a, b) => a * b, 1)), shape } }), 'RangeError', /mask/);
    }
    for (const [label, lengths] of [['[5, 1] (> Lk 4)', [5, 1]], ['[-1, 1]', [-1, 1]], ['[0.5, 1]', [0.5, 1]], ['[4] (B = 2)', [4]]]) {
      add(fn, PAD, `lengths ${label}`, ({ mha }) => mha[method](MQ, MK, MV, { mask: { kind: 'padding', lengths } }), 'RangeError', /lengths/);
    }
    add(fn, DISPOSED, 'disposed MHA', ({ deadMha }) => deadMha[method](MQ, MK, MV), 'DisposedError', /forward.*disposed/);
    add(fn, MEMORY, 'weights [1,2,16384,16384] > 2^28 elements', ({ mha }) => mha[method](T([1, 16384, 8]), T([1, 16384, 5]), T([1, 16384, 7])), 'RangeError', /weights/);
  }

  // ---- mha.setWeights / getWeights / heldBytes ---------------------------
  const weightCases = (fn, obj, { kdim, vdim }) => {
    const set = (c, w, o) => c[obj].setWeights(w, o);
    add(fn, MISSING, 'no weights', (c) => set(c), 'TypeError', /weights/);
    add(fn, TYPE, 'weights is null', (c) => set(c, null), 'TypeError', /weights/);
    add(fn, TYPE, 'weights is an array', (c) => set(c, [T([8, 8])]), 'TypeError', /weights/);
    add(fn, TYPE, 'weights is a string', (c) => set(c, 'wq'), 'TypeError', /weights/);
    add(fn, TYPE, 'wq is a string', (c) => set(c, { wq: 'w' }), 'TypeError', /\bwq\b/);
    add(fn, TYPE, 'wo.data holds a string', (c) => set(c, { wo: { data: new Array(64).fill('1'), shape: [8, 8] } }), 'TypeError', /\bwo\b/);
    add(fn, TYPE, 'bq nested with a boolean', (c) => set(c, { bq: [[true, 1, 1, 1, 1, 1, 1, 1]] }), 'TypeError', /\bbq\b/);
    add(fn, UNKNOWN, 'unknown weight "wz"', (c) => set(c, { wz: T([8, 8]) }), 'TypeError', /weights has an unknown key "wz"; allowed: wq, bq/);
    add(fn, UNKNOWN, 'options { layot }', (c) => set(c, {}, { layot: 'keras' }), 'TypeError', /unknown key "layot"; allowed: layout, checkFinite/);
    for (const [label, v] of [['NaN', NaN], ['+Infinity', Infinity], ['-Infinity', -Infinity]]) {
      add(fn, NONFINITE, `checkFinite: wq holds ${label}`, (c) => set(c, { wq: { data: f32(64).fill(v, 9, 10), shape: [8, 8] } }, { checkFinite: true }), 'RangeError', /wq holds -?(NaN|Infinity) at element 9 \(index \[1, 1\]/);
    }
    add(fn, TYPE, 'options is a string', (c) => set(c, { bq: f32(8) }, 'keras'), 'TypeError', /options/);
    add(fn, WEIGHTS, "layout 'tensorflow'", (c) => set(c, { bq: f32(8) }, { layout: 'tensorflow' }), 'RangeError', /layout/);
    add(fn, WEIGHTS, 'layout 1', (c) => set(c, { bq: f32(8) }, { layout: 1 }), 'RangeError', /layout/);
    add(fn, WEIGHTS, 'wq [8,9]', (c) => set(c, { wq: T([8, 9]) }), 'RangeError', /\bwq\b/);
    add(fn, WEIGHTS, 'wq [9,8]', (c) => set(c, { wq: T([9, 8]) }), 'RangeError', /\bwq\b/);
    add(fn, WEIGHTS, 'wq rank 3 [1,8,8]', (c) => set(c, { wq: T([1, 8, 8]) }), 'RangeError', /\bwq\b/);
    add(fn, WEIGHTS, 'wq flat, 63 values', (c) => set(c, { wq: f32(63) }), 'RangeError', /\bwq\b/);
    add(fn, WEIGHTS, 'wq flat, 65 values', (c) => set(c, { wq: new Array(65).fill(0) }), 'RangeError', /\bwq\b/);
    add(fn, WEIGHTS, 'wo nested 8×7', (c) => set(c, { wo: Array.from({ length: 8 }, () => new Array(7).fill(0)) }), 'RangeError', /\bwo\b/);
    add(fn, WEIGHTS, 'bo [8,1]', (c) => set(c, { bo: T([8, 1]) }), 'RangeError', /\bbo\b/);
    add(fn, WEIGHTS, 'bk 7 values', (c) => set(c, { bk: f32(7) }), 'RangeError', /\bbk\b/);
    add(fn, LENGTH, 'wq.data one short for [8,8]', (c) => set(c, { wq: { data: f32(63), shape: [8, 8] } }), 'RangeError', /\bwq\b/);
    add(fn, LENGTH, 'wq.data one long for [8,8]', (c) => set(c, { wq: { data: f32(65), shape: [8, 8] } }), 'RangeError', /\bwq\b/);
    if (kdim !== 8) {
      add(fn, WEIGHTS, `wk in keras shape [${kdim},8] with layout torch`, (c) => set(c, { wk: T([kdim, 8]) }), 'RangeError', /\bwk\b/);
      add(fn, WEIGHTS, `wk in torch shape [8,${kdim}] with layout keras`, (c) => set(c, { wk: T([8, kdim]) }, { layout: 'keras' }), 'RangeError', /\bwk\b/);
      add(fn, WEIGHTS, `wv in keras shape [${vdim},8] with layout torch`, (c) => set(c, { wv: T([vdim, 8]) }), 'RangeError', /\bwv\b/);
    } else {
      add(fn, WEIGHTS, 'wk [8,5]', (c) => set(c, { wk: T([8, 5]) }), 'RangeError', /\bwk\b/);
    }
    add(fn, DISPOSED, 'setWeights on a disposed object', (c) => c[`dead${obj[0].toUpperCase()}${obj.slice(1)}`].setWeights({ bq: f32(8) }), 'DisposedError', /setWeights.*disposed/);
    const get = `${fn.split('.')[0]}.getWeights`;
    add(get, TYPE, 'options is a string', (c) => c[obj].getWeights('keras'), 'TypeError', /options/);
    add(get, WEIGHTS, "layout 'jax'", (c) => c[obj].getWeights({ layout: 'jax' }), 'RangeError', /layout/);
    unknownKey(get, 'options { layot }', (c) => c[obj].getWeights({ layot: 'keras' }), 'layot', 'layout');
    add(get, DISPOSED, 'getWeights on a disposed object', (c) => c[`dead${obj[0].toUpperCase()}${obj.slice(1)}`].getWeights(), 'DisposedError', /getWeights.*disposed/);
    const held = `${fn.split('.')[0]}.heldBytes`;
    add(held, DISPOSED, 'heldBytes on a disposed object', (c) => c[`dead${obj[0].toUpperCase()}${obj.slice(1)}`].heldBytes(), 'DisposedError', /heldBytes.*disposed/);
  };
  weightCases('mha.setWeights', 'mha', { kdim: 5, vdim: 7 });
  add('mha.setWeights', WEIGHTS, 'bq on a bias: false MHA', ({ mha0 }) => mha0.setWeights({ bq: f32(8) }), 'RangeError', /\bbq\b.*bias/);
  add('mha.setWeights', UNKNOWN, 'gamma on an MHA', ({ mha }) => mha.setWeights({ gamma: f32(8) }), 'TypeError', /unknown key "gamma"/);

  // ---- the layer ---------------------------------------------------------
  weightCases('layer.setWeights', 'layer', { kdim: 8, vdim: 8 });
  add('layer.setWeights', WEIGHTS, 'gamma 7 values', ({ layer }) => layer.setWeights({ gamma: f32(7) }), 'RangeError', /gamma/);
  add('layer.setWeights', WEIGHTS, 'beta [1,8]', ({ layer }) => layer.setWeights({ beta: T([1, 8]) }), 'RangeError', /beta/);
  add('layer.setWeights', TYPE, 'beta is a number', ({ layer }) => layer.setWeights({ beta: 0 }), 'TypeError', /beta/);
  for (const method of ['forward', 'forwardSync']) {
    const fn = `layer.${method}`;
    tensorCases(fn, 'x', (c, t) => c.layer[method](t), LX.shape, { rankBad: [[24], [1, 2, 3, 8]] });
    add(fn, SIZE, "x's last dim 9 vs embedDim 8", ({ layer }) => layer[method](T([2, 3, 9])), 'RangeError', /\bx\b/);
    optionCases(fn, (c, o) => c.layer[method](LX, o));
    add(fn, TYPE, 'training is 1', ({ layer }) => layer[method](LX, { training: 1 }), 'TypeError', /training/);
    unknownKey(fn, 'options { train }', ({ layer }) => layer[method](LX, { train: true }), 'train', 'mask, needWeights, averageWeights, trace, training, dropoutSeed, checkFinite');
    add(fn, UNKNOWN, 'options { kvCache } (an MHA option)', ({ layer }) => layer[method](LX, { kvCache: {} }), 'TypeError', /unknown key "kvCache".*no key\/value cache/);
    finiteCases(fn, 'x', LX, ({ layer }, t) => layer[method](t, { checkFinite: true }));
    add(fn, TYPE, "dropoutSeed is '7'", ({ layer }) => layer[method](LX, { training: true, dropoutSeed: '7' }), 'TypeError', /dropoutSeed/);
    for (const dropoutSeed of [-1, 1.5, 2 ** 32, NaN, Infinity]) {
      add(fn, SIZE, `dropoutSeed ${dropoutSeed}`, ({ layer }) => layer[method](LX, { training: true, dropoutSeed }), 'RangeError', /dropoutSeed/);
    }
    add(fn, MASK, 'keep mask [3,4] vs [3,3]', ({ layer }) => layer[method](LX, { mask: { kind: 'keep', data: f32(12), shape: [3, 4] } }), 'RangeError', /mask/);
    add(fn, MASK, 'keep mask [2,3,3,3] (H 3 vs 2)', ({ layer }) => layer[method](LX, { mask: { kind: 'keep', data: f32(54), shape: [2, 3, 3, 3] } }), 'RangeError', /mask/);
    add(fn, PAD, 'lengths [4, 1] (> L 3)', ({ layer }) => layer[method](LX, { mask: { kind: 'padding', lengths: [4, 1] } }), 'RangeError', /lengths/);
    add(fn, PAD, 'lengths [1] (B = 2)', ({ layer }) => layer[method](LX, { mask: { kind: 'padding', lengths: [1] } }), 'RangeError', /lengths/);
    add(fn, DISPOSED, 'disposed layer', ({ deadLayer }) => deadLayer[method](LX), 'DisposedError', /forward.*disposed/);
    add(fn, MEMORY, 'weights [1,2,16384,16384] > 2^28 elements', ({ layer }) => layer[method](T([1, 16384, 8])), 'RangeError', /weights/);
  }

  // ---- shapeTrace --------------------------------------------------------
  const st = { batch: 2, lq: 5, embedDim: 8, numHeads: 2 };
  add('shapeTrace', TYPE, 'params is a string', ({ lab }) => lab.shapeTrace('x'), 'TypeError', /params/);
  add('shapeTrace', MISSING, 'no params', ({ lab }) => lab.shapeTrace(), 'TypeError', /embedDim/);
  add('shapeTrace', MISSING, 'lq missing', ({ lab }) => lab.shapeTrace({ embedDim: 8, numHeads: 2 }), 'TypeError', /\blq\b/);
  add('shapeTrace', MISSING, 'numHeads missing', ({ lab }) => lab.shapeTrace({ lq: 5, embedDim: 8 }), 'TypeError', /numHeads/);
  for (const key of ['batch', 'lq', 'lk', 'embedDim', 'numHeads', 'kdim', 'vdim']) {
    for (const [label, v] of BAD_SIZES) {
      add('shapeTrace', SIZE, `${key} ${label}`, ({ lab }) => lab.shapeTrace({ ...st, [key]: v }), 'RangeError', new RegExp(`\\b${key}\\b`));
    }
    add('shapeTrace', TYPE, `${key} is a string`, ({ lab }) => lab.shapeTrace({ ...st, [key]: '4' }), 'TypeError', new RegExp(`\\b${key}\\b`));
  }
  add('shapeTrace', HEADS, 'embedDim 10, numHeads 4', ({ lab }) => lab.shapeTrace({ ...st, embedDim: 10, numHeads: 4 }), 'RangeError', /embedDim.*numHeads/);
  unknownKey('shapeTrace', 'params { heads }', ({ lab }) => lab.shapeTrace({ ...st, heads: 2 }), 'heads', 'batch, lq');
  add('shapeTrace', WEIGHTS, "layout 'jax'", ({ lab }) => lab.shapeTrace({ ...st, layout: 'jax' }), 'RangeError', /layout/);

  // ---- createKVCache -------------------------------------------------------
  unknownKey('mha.createKVCache', 'options { maxLen }', ({ mha }) => mha.createKVCache({ maxLen: 4 }), 'maxLen', 'maxLength, batch');
  add('mha.createKVCache', DISPOSED, 'createKVCache on a disposed MHA', ({ deadMha }) => deadMha.createKVCache({ maxLength: 4 }), 'DisposedError', /createKVCache.*disposed/);

  // ---- attention variants (GQA, softcap, windows, ALiBi, maskFill, RoPE) --
  const VAR = 'attention variants';
  const sd = (o, k = K, v = V) => ({ lab }) => lab.scaledDotProductAttention(Q, k, v, o);
  const Q3 = T([2, 3, 4, 6]);
  add('scaledDotProductAttention', VAR, 'H 3 not a multiple of Hkv 2', ({ lab }) => lab.scaledDotProductAttention(Q3, K, V), 'RangeError', /multiple of Hkv/);
  add('scaledDotProductAttention', VAR, 'k and v with different head counts', ({ lab }) => lab.scaledDotProductAttention(Q, T([2, 1, 5, 6]), V), 'RangeError', /same number of heads/);
  for (const softcap of [0, -1, NaN, Infinity]) {
    add('scaledDotProductAttention', VAR, `softcap ${softcap}`, sd({ softcap }), 'RangeError', /softcap/);
  }
  add('scaledDotProductAttention', VAR, "softcap '2'", sd({ softcap: '2' }), 'TypeError', /softcap/);
  for (const side of ['left', 'right']) {
    add('scaledDotProductAttention', VAR, `window ${side} -2`, sd({ mask: { kind: 'window', [side]: -2 } }), 'RangeError', new RegExp(`window ${side}`));
    add('scaledDotProductAttention', VAR, `window ${side} 1.5`, sd({ mask: { kind: 'window', [side]: 1.5 } }), 'RangeError', new RegExp(`${side}`));
    add('scaledDotProductAttention', VAR, `window ${side} '3'`, sd({ mask: { kind: 'window', [side]: '3' } }), 'TypeError', new RegExp(`${side}`));
  }
  add('scaledDotProductAttention', VAR, "causal align 'center'", sd({ mask: { kind: 'causal', align: 'center' } }), 'RangeError', /align/);
  add('scaledDotProductAttention', VAR, 'ALiBi slopes of length 3 (H 2)', sd({ mask: { kind: 'alibi', slopes: [1, 2, 3] } }), 'RangeError', /slopes/);
  add('scaledDotProductAttention', VAR, 'ALiBi slopes a string', sd({ mask: { kind: 'alibi', slopes: 'x' } }), 'TypeError', /slopes/);
  add('scaledDotProductAttention', VAR, 'ALiBi slope NaN', sd({ mask: { kind: 'alibi', slopes: [NaN, 1] } }), 'RangeError', /slopes/);
  add('scaledDotProductAttention', VAR, 'maskFill NaN', sd({ maskFill: NaN }), 'RangeError', /maskFill/);
  add('scaledDotProductAttention', VAR, 'maskFill +Infinity', sd({ maskFill: Infinity }), 'RangeError', /maskFill/);
  add('scaledDotProductAttention', VAR, "maskFill '-inf'", sd({ maskFill: '-inf' }), 'TypeError', /maskFill/);
  add('scaledDotProductAttention', VAR, 'unknown causal field', sd({ mask: { kind: 'causal', aling: 'bottom-right' } }), 'TypeError', /"aling".*allowed: kind, align, offset/);
  add('scaledDotProductAttention', VAR, 'unknown window field', sd({ mask: { kind: 'window', size: 3 } }), 'TypeError', /"size".*allowed: kind, left, right, align, offset/);
  add('scaledDotProductAttention', VAR, 'unknown padding field', sd({ mask: { kind: 'padding', lengths: [1, 2], length: 3 } }), 'TypeError', /"length".*allowed/);
  const X4 = T([1, 2, 3, 8]);
  const ro = (o, x = X4) => ({ lab }) => lab.rotaryEmbedding(x, o);
  add('rotaryEmbedding', VAR, 'odd rotaryDim 3', ro({ rotaryDim: 3 }), 'RangeError', /rotaryDim/);
  add('rotaryEmbedding', VAR, 'rotaryDim 10 > D 8', ro({ rotaryDim: 10 }), 'RangeError', /rotaryDim/);
  add('rotaryEmbedding', VAR, 'rotaryDim 2.5', ro({ rotaryDim: 2.5 }), 'RangeError', /rotaryDim/);
  add('rotaryEmbedding', VAR, 'positionIds beyond the table', ro({ positionIds: [0, 1, 9], cos: T([9, 4]), sin: T([9, 4]) }), 'RangeError', /positionIds\[0\]\[2\] = 9/);
  add('rotaryEmbedding', VAR, 'positionIds -1', ro({ positionIds: [0, -1, 2] }), 'RangeError', /positionIds/);
  add('rotaryEmbedding', VAR, 'positionIds of the wrong size', ro({ positionIds: [0, 1] }), 'RangeError', /positionIds/);
  add('rotaryEmbedding', VAR, 'cos without sin', ro({ cos: T([9, 4]) }), 'TypeError', /cos and sin/);
  add('rotaryEmbedding', VAR, 'cos of the wrong width', ro({ positionIds: [0, 1, 2], cos: T([9, 3]), sin: T([9, 3]) }), 'RangeError', /cos/);
  add('rotaryEmbedding', VAR, 'base 1', ro({ base: 1 }), 'RangeError', /base/);
  add('rotaryEmbedding', VAR, '3-D x without numHeads', ro({}, T([1, 3, 8])), 'TypeError', /numHeads/);
  add('rotaryEmbedding', VAR, 'unknown option', ro({ rotary_dim: 4 }), 'TypeError', /"rotary_dim".*allowed: positionIds/);
  add('rotaryCache', VAR, 'odd rotaryDim', ({ lab }) => lab.rotaryCache(8, 5), 'RangeError', /rotaryDim/);
  add('rotaryCache', VAR, 'unknown option', ({ lab }) => lab.rotaryCache(8, 4, { theta: 1 }), 'TypeError', /"theta".*allowed: base/);
  add('multiHeadAttention', VAR, 'numKvHeads 3 does not divide numHeads 4', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 4, numKvHeads: 3 }), 'RangeError', /numKvHeads/);
  add('multiHeadAttention', VAR, 'rope rotaryDim 3 (odd)', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, rope: { rotaryDim: 3 } }), 'RangeError', /rotaryDim/);
  add('multiHeadAttention', VAR, 'rope rotaryDim 6 > D 4', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, rope: { rotaryDim: 6 } }), 'RangeError', /rotaryDim/);
  add('multiHeadAttention', VAR, 'rope unknown option', ({ lab }) => lab.multiHeadAttention({ embedDim: 8, numHeads: 2, rope: { theta: 5 } }), 'TypeError', /"theta".*allowed: base/);

  return cases;
}

// A 16384 × 1600 input (100 MiB), made once: selfAttention on it needs the
// [16384,16384] weights (1 GiB) plus ~0.6 GiB of other buffers.
let bigXTensor = null;
function bigX() {
  bigXTensor ??= { data: new Float32Array(16384 * 1600), shape: [16384, 1600] };
  return bigXTensor;
}

const CASES = buildCases();

// ---------------------------------------------------------------------------
// Runner

function checkError(err, type, re, label) {
  if (!err || typeof err.message !== 'string') throw new Error(`${label}: expected an Error object, got ${String(err)}`);
  if (err.name !== type) throw new Error(`${label}: expected ${type}, got ${err.name}: ${err.message}`);
  // The class itself, not just its name: exact constructor, and instanceof its parents.
  const cls = CLASSES[type];
  if (!cls || err.constructor !== cls || !(err instanceof cls)) throw new Error(`${label}: expected an instance of ${type}, got ${err.constructor && err.constructor.name}`);
  if (PARENT[type] && !(err instanceof PARENT[type])) throw new Error(`${label}: a ${type} must also be a ${PARENT[type].name}`);
  if (!re.test(err.message)) throw new Error(`${label}: ${err.name} message does not name the argument (${re}): "${err.message}"`);
}

/** Runs a bad call: sync throw, or (for forward and init) a rejected promise — never both. */
async function expectFailure(fn, c, type, re, label, isAsync) {
  let ret;
  try {
    ret = fn(c);
  } catch (e) {
    if (isAsync) throw new Error(`${label}: threw synchronously instead of rejecting: ${e && e.name}: ${e && e.message}`);
    checkError(e, type, re, label);
    return e;
  }
  if (!ret || typeof ret.then !== 'function') throw new Error(`${label}: expected a ${type}, but the call returned ${ret && typeof ret}`);
  if (!isAsync) throw new Error(`${label}: returned a promise instead of throwing synchronously`);
  try {
    await ret;
  } catch (e) {
    checkError(e, type, re, label);
    return e;
  }
  throw new Error(`${label}: expected the promise to reject with a ${type}, but it resolved`);
}

const isAsyncFn = (fn) => fn === 'init' || fn.endsWith('.forward');
const counts = {};

describe.each(BACKENDS)('bad-input matrix — %s', (backend) => {
  const c = {};
  let backendObj;
  beforeAll(async () => {
    c.lab = await init({ backend });
    backendObj = c.lab._backend;
    c.mha = c.lab.multiHeadAttention(MHA_CFG);
    c.mha.setWeights(f32Weights(MHA_W));
    c.mha0 = c.lab.multiHeadAttention({ embedDim: 8, numHeads: 2, bias: false });
    c.layer = c.lab.selfAttentionLayer(LAYER_CFG);
    c.layer.setWeights(f32Weights(LAYER_W));
    c.deadMha = c.lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    c.deadMha.dispose();
    c.deadLayer = c.lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    c.deadLayer.dispose();
    stillWorks();
  });
  afterAll(() => {
    c.mha?.dispose();
    c.mha0?.dispose();
    c.layer?.dispose();
  });

  /** A valid call of every function still gives the right answer. */
  function stillWorks() {
    const { lab } = c;
    expectTensorClose(lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'causal' } }).output, EXP.sdpa.output, TOL.attention, 'sdpa');
    expectTensorClose(lab.selfAttention(SX).weights, EXP.self.weights, TOL.attention, 'selfAttention');
    const m = c.mha.forwardSync(MQ, MK, MV);
    expectTensorClose(m.output, EXP.mha.output, TOL.attention, 'mha output');
    expectTensorClose(m.weights, EXP.mha.weights, TOL.attention, 'mha weights');
    expectTensorClose(c.layer.forwardSync(LX).output, EXP.layer.output, TOL.layer, 'layer');
    expectTensorClose(lab.positionalEncoding(5, 7), EXP.pe, TOL.pe, 'pe');
  }

  test.each(CASES.map((k) => [`${k.fn} · ${k.cls} · ${k.label}`, k]))('%s', async (label, k) => {
    counts[backend] = (counts[backend] ?? 0) + 1;
    const isAsync = isAsyncFn(k.fn);
    const mem0 = backendObj.memoryBytes();
    const heap0 = backendObj.heapBytesInUse();
    const t0 = Date.now();
    await expectFailure(k.call, c, k.type, k.re, label, isAsync);
    const elapsed = Date.now() - t0;
    const heap1 = backendObj.heapBytesInUse();
    // Twice more: the same error, and the heap does not move (nothing leaks).
    for (let i = 0; i < 2; i++) await expectFailure(k.call, c, k.type, k.re, label, isAsync);
    const heap3 = backendObj.heapBytesInUse();
    expect(heap3).toBe(heap1);
    if (k.cls === MEMORY) {
      // Refused before anything was allocated: no growth of the wasm memory,
      // nothing new in the heap, and no time spent computing.
      expect(backendObj.memoryBytes()).toBe(mem0);
      expect(heap1 - heap0).toBeLessThan(1024); // at most lastError's message
      expect(elapsed).toBeLessThan(1000);
    }
    stillWorks();
  });
});

// ---------------------------------------------------------------------------
// NaN and Inf values are not rejected: they propagate (docs/js-api.md).

describe.each(BACKENDS)('NaN and Inf propagate — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  const rowNaN = (t, rowLen, row) => {
    const data = Float32Array.from(t.data);
    data.fill(NaN, row * rowLen, (row + 1) * rowLen);
    return { data, shape: t.shape.slice() };
  };
  const slice = (t, from, to) => ({ data: Float64Array.from(t.data.subarray(from, to)), shape: [to - from] });

  test('sdpa: an all-NaN query row gives a NaN output row and NaN weights; other rows are exact', () => {
    const q = rowNaN(Q, 6, 1); // [b0, h0, row 1]
    const r = lab.scaledDotProductAttention(q, K, V);
    const exp = ref.scaledDotProductAttention({ data: Float64Array.from(Q.data), shape: Q.shape }, K, V);
    expect(Array.from(r.output.data.subarray(3, 6)).every(Number.isNaN)).toBe(true);
    expect(Array.from(r.weights.data.subarray(5, 10)).every(Number.isNaN)).toBe(true);
    // every other row is untouched by the NaN row
    expectTensorClose({ data: r.output.data.subarray(6), shape: [r.output.data.length - 6] }, slice(exp.output, 6, exp.output.data.length), TOL.attention, 'other rows');
    expectTensorClose({ data: r.output.data.subarray(0, 3), shape: [3] }, slice(exp.output, 0, 3), TOL.attention, 'row 0');
  });

  test('sdpa: NaN or Inf in a key or value propagates to the rows that see it', () => {
    const k = Float32Array.from(K.data);
    k[0] = NaN; // key 0 of (b0, h0): every query row of that head sees it
    const r1 = lab.scaledDotProductAttention(Q, { data: k, shape: K.shape }, V);
    expect(Array.from(r1.output.data.subarray(0, 12)).every(Number.isNaN)).toBe(true);
    expect(Array.from(r1.output.data.subarray(12)).every(Number.isFinite)).toBe(true);
    const v = Float32Array.from(V.data);
    v[0] = Infinity;
    const r2 = lab.scaledDotProductAttention(Q, K, { data: v, shape: V.shape });
    expect(Array.from(r2.output.data.subarray(0, 12)).some((x) => !Number.isFinite(x))).toBe(true);
    expect(Array.from(r2.output.data.subarray(12)).every(Number.isFinite)).toBe(true);
    const q = Float32Array.from(Q.data);
    q[0] = -Infinity;
    const r3 = lab.scaledDotProductAttention({ data: q, shape: Q.shape }, K, V);
    expect(Array.from(r3.output.data.subarray(0, 3)).some((x) => !Number.isFinite(x))).toBe(true);
  });

  test('masks: a NaN in an additive mask makes that row NaN; an all -Infinity row is uniform, not NaN', () => {
    const mask = new Float32Array(20);
    mask[5] = NaN; // row 1
    mask.fill(-Infinity, 10, 15); // row 2: every key -inf
    const r = lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'additive', data: mask, shape: [4, 5] } });
    expect(Array.from(r.weights.data.subarray(5, 10)).every(Number.isNaN)).toBe(true);
    expect(Array.from(r.weights.data.subarray(10, 15))).toEqual([0.2, 0.2, 0.2, 0.2, 0.2].map(Math.fround));
    expect(Array.from(r.weights.data.subarray(0, 5)).every(Number.isFinite)).toBe(true);
  });

  test('selfAttention, MHA and the layer: NaN in one batch row leaves the other batch rows exact', async () => {
    const x = rowNaN(LX, 8, 1); // batch 0, position 1
    const self = lab.selfAttention(x);
    expect(Array.from(self.output.data.subarray(0, 24)).some(Number.isNaN)).toBe(true);
    const selfExp = ref.selfAttention(LX);
    expectTensorClose({ data: self.output.data.subarray(24), shape: [24] }, slice(selfExp.output, 24, 48), TOL.attention, 'self batch 1');

    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    try {
      const { gamma, beta, ...mhaOnly } = LAYER_W; // eslint-disable-line no-unused-vars
      mha.setWeights(f32Weights(mhaOnly));
      layer.setWeights(f32Weights(LAYER_W));
      const m = await mha.forward(x);
      const mExp = ref.multiHeadAttention({ embedDim: 8, numHeads: 2 }, LAYER_W, LX);
      expect(Array.from(m.output.data.subarray(0, 24)).every(Number.isNaN)).toBe(true);
      expectTensorClose({ data: m.output.data.subarray(24), shape: [24] }, slice(mExp.output, 24, 48), TOL.attention, 'mha batch 1');
      const l = layer.forwardSync(x);
      const lExp = ref.selfAttentionLayer({ ...LAYER_CFG }, LAYER_W, LX);
      expect(Array.from(l.output.data.subarray(0, 24)).every(Number.isNaN)).toBe(true);
      expectTensorClose({ data: l.output.data.subarray(24), shape: [24] }, slice(lExp.output, 24, 48), TOL.layer, 'layer batch 1');
      // NaN weights propagate everywhere; valid weights restore exact answers
      mha.setWeights({ bo: new Float32Array(8).fill(NaN) });
      expect(Array.from(mha.forwardSync(LX).output.data).every(Number.isNaN)).toBe(true);
      mha.setWeights(f32Weights(mhaOnly));
      expectTensorClose(mha.forwardSync(LX).output, mExp.output, TOL.attention, 'mha after NaN weights');
    } finally {
      mha.dispose();
      layer.dispose();
    }
  });
});

afterAll(() => {
  // One line for the report: how many bad inputs each backend met.
  // eslint-disable-next-line no-console
  const byClass = {};
  for (const k of CASES) byClass[k.cls] = (byClass[k.cls] ?? 0) + 1;
  const fns = new Set(CASES.map((k) => k.fn));
  console.log(`bad-input matrix: ${CASES.length} cases per backend over ${fns.size} functions; run: ${JSON.stringify(counts)}; by class: ${JSON.stringify(byClass)}`);
});
