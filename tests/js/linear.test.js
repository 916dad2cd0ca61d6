// linear.test.js — lab.linear (an op of the op table, web/lib/ops.js) on
// both wasm backends against the float64 reference (tests/reference/
// reference.mjs linear), in both layouts, at row counts on both sides of the
// GEMV/GEMM switch (R <= 4 decodes with the GEMV, more rows pack W), with
// and without a bias; bad input names the problem and leaks nothing.
import { init } from '../../web/node.js';
import { ref, BACKENDS, expectTensorClose, rand } from './helpers.js';

// Float32 dot products of length <= 200 of O(1) values.
const TOL = { abs: 2e-5, rel: 1e-5 };

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const rng = ref.mulberry32(77);

function transpose(w) {
  const [r, c] = w.shape;
  const out = new Float32Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = w.data[i * c + j];
  return { data: out, shape: [c, r] };
}

describe.each(BACKENDS)('linear on %s', (backend) => {
  test.each([[1, 5, 3], [3, 17, 9], [4, 64, 33], [5, 64, 33], [2 * 7, 200, 130]])('rows %i, in %i, out %i', (rows, inDim, outDim) => {
    const lab = labs[backend];
    const x = rand(rng, rows === 14 ? [2, 7, inDim] : [rows, inDim]);
    const w = rand(rng, [outDim, inDim]);
    const b = rand(rng, [outDim]);
    const want = ref.linear(x, w, b.data, 'torch');
    expectTensorClose(lab.linear(x, w, b), want, TOL, 'torch');
    expectTensorClose(lab.linear(x, transpose(w), b, { layout: 'keras' }), want, TOL, 'keras');
    expectTensorClose(lab.linear(x, w), ref.linear(x, w, null), TOL, 'no bias');
    expect(lab.linear(x, w, null).shape).toEqual([...x.shape.slice(0, -1), outDim]);
  });

  test('bad input: clear errors, nothing leaked', () => {
    const lab = labs[backend];
    const heap = lab._backend.heapBytesInUse();
    const x = rand(rng, [2, 4]);
    expect(() => lab.linear(x, rand(rng, [3, 5]))).toThrow(/weight \[3,5\] does not fit x \[2,4\]: with layout 'torch' the weight is \[out, in\] = \[out, 4\]/);
    expect(() => lab.linear(x, rand(rng, [3, 4]), null, { layout: 'keras' })).toThrow(RangeError);
    expect(() => lab.linear(x, rand(rng, [3, 4]), [1, 2])).toThrow(/bias must have shape \[out\] = \[3\], got \[2\]/);
    expect(() => lab.linear(x, rand(rng, [3]))).toThrow(/weight must be a matrix/);
    expect(() => lab.linear(x, rand(rng, [3, 4]), null, { layout: 'dense' })).toThrow(/layout must be 'torch'/);
    expect(() => lab.linear(x, rand(rng, [3, 4]), null, { transpose: true })).toThrow(TypeError);
    expect(() => lab.linear(x, rand(rng, [3, 4]), null, { transpose: true })).toThrow(/unknown key "transpose"; allowed: layout, checkFinite/);
    expect(() => lab.linear({ data: [NaN, 0, 0, 0], shape: [1, 4] }, rand(rng, [3, 4]), null, { checkFinite: true })).toThrow(/finite/);
    expect(lab._backend.heapBytesInUse()).toBe(heap);
  });
});
