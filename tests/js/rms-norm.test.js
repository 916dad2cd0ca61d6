// rms-norm.test.js — lab.rmsNorm (an op of the op table, web/lib/ops.js)
// through the public API on both wasm backends, against the float64
// reference (tests/reference/reference.mjs rmsNorm); SIMD and scalar give the
// same bits; bad input is a TypeError/RangeError naming the problem and
// leaks nothing.
import { init } from '../../web/node.js';
import { ref, BACKENDS, expectTensorClose, expectTensorsEqual, rand } from './helpers.js';

// One float32 rounding of x·inv and of ·weight, inputs O(1).
const TOL = { abs: 2e-6, rel: 1e-6 };

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const rng = ref.mulberry32(2024);
// Odd sizes: [B 2, L 3, E 7] (the pre-norm of a block) and per-head QK-norm
// [B 2, H 3, L 5, D 9].
const X = rand(rng, [2, 3, 7]);
const W = rand(rng, [7]);
const QK = rand(rng, [2, 3, 5, 9]);
const WD = rand(rng, [9]);

describe.each(BACKENDS)('rmsNorm on %s', (backend) => {
  test('[B, L, E] with a weight, default eps 1e-5', () => {
    const y = labs[backend].rmsNorm(X, { weight: W });
    expectTensorClose(y, ref.rmsNorm(X, W.data), TOL, 'rmsNorm [2,3,7]');
  });

  test('per-head QK-norm [B, H, L, D], eps 1e-6, weight as a plain array', () => {
    const y = labs[backend].rmsNorm(QK, { weight: Array.from(WD.data), eps: 1e-6 });
    expectTensorClose(y, ref.rmsNorm(QK, WD.data, 1e-6), TOL, 'rmsNorm [2,3,5,9]');
  });

  test('without a weight; a nested array; a row of zeros stays zero (eps keeps it finite)', () => {
    const y = labs[backend].rmsNorm([[1, -2, 3, 0.5], [0, 0, 0, 0]]);
    const want = ref.rmsNorm({ data: [1, -2, 3, 0.5, 0, 0, 0, 0], shape: [2, 4] });
    expectTensorClose(y, want, TOL, 'rmsNorm [2,4]');
    expect(Array.from(y.data.slice(4))).toEqual([0, 0, 0, 0]);
  });

  test('bad input: clear errors, nothing leaked', () => {
    const lab = labs[backend];
    const bad = () => {
      expect(() => lab.rmsNorm(X, { weight: [1, 2] })).toThrow(RangeError);
      expect(() => lab.rmsNorm(X, { weight: [1, 2] })).toThrow(/weight must have shape \[E\] = \[7\]/);
      expect(() => lab.rmsNorm(X, { eps: 0 })).toThrow(RangeError);
      expect(() => lab.rmsNorm(X, { eps: 0 })).toThrow(/rmsNorm: eps must be a finite number > 0 \(got 0\)/);
      expect(() => lab.rmsNorm(X, { eps: '1e-5' })).toThrow(TypeError);
      expect(() => lab.rmsNorm(X, { epsilon: 1e-5 })).toThrow(TypeError);
      expect(() => lab.rmsNorm(X, { epsilon: 1e-5 })).toThrow(/"epsilon".*allowed: weight, eps/);
      expect(() => lab.rmsNorm(undefined)).toThrow(TypeError);
    };
    bad(); // the first C++ error sizes the core's lastError message buffer
    const before = lab._backend.heapBytesInUse();
    bad();
    expect(lab._backend.heapBytesInUse()).toBe(before);
    // Still usable.
    expectTensorClose(lab.rmsNorm(X, { weight: W }), ref.rmsNorm(X, W.data), TOL, 'after errors');
  });
});

test('wasm SIMD and wasm scalar give the same bits', () => {
  expectTensorsEqual(labs.wasm.rmsNorm(QK, { weight: WD }), labs['wasm-scalar'].rmsNorm(QK, { weight: WD }), 'SIMD vs scalar');
});
