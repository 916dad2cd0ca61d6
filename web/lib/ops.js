// The op table: the lab's free-function ops that a binding computes, each
// declared ONCE here: its option keys, its validation (through errors.js,
// tensor.js, validate.js), its argument bag (OpTypes below, the fields of its
// binding's value_object) and the shapes of its outputs. createLab (lab.js)
// installs one lab method per entry; no other JS file names the op:
//   - the wasm backend passes the bag to the Embind function of the same name
//     (`backend.op(name, args, outputs)`, wasm-backend.js: typed arrays
//     copied in as pointers, one buffer per output field);
//   - the webgpu backend answers every op from its wasm backend (an op with
//     a WGSL kernel would be answered there instead).
// `npm run typecheck` checks each bag against OpTypes: a missing or
// misnamed field fails the type check, not a run.
//
// Adding an op (docs/architecture-details.md "Adding an op"): an entry here and its
// line in OpTypes; the C++ op, its binding (a value_object with the bag's
// fields, output fields included), the public type in web/index.d.ts, the
// float64 reference, the test and docs/js-api.md.
//
// Value rules (ranges, positions, eps > 0) are checked once, by the C++
// core, and reach JS as RangeErrors; the wrapper checks kinds, shapes and
// option keys (TypeError for a wrong kind or an unknown key).
import { describe, typeError, rangeError, checkInt, checkNumber, checkOptions } from './errors.js';
import { toTensor, makeTensor, shapeString } from './tensor.js';
import { then } from './attention-module.js';
import { checkElements, checkLayout } from './validate.js';
import { readRotaryArgs } from './rotary.js';
import { finiteOption, checkFiniteArgs } from './finite.js';

/**
 * @typedef {object} RotaryArgs a rotary embedding call (rotary.js)
 * @property {number} batch
 * @property {number} heads
 * @property {number} seqLen
 * @property {number} headDim
 * @property {boolean} seqMajor x [B, L, H·D] instead of [B, H, L, D]
 * @property {number} rotaryDim 0: D
 * @property {boolean} interleaved
 * @property {Float32Array} x
 * @property {Int32Array | null} positionIds [B·L] or null
 * @property {Float32Array | null} cos
 * @property {Float32Array | null} sin
 * @property {number} maxPosition rows of cos/sin when positionIds is given
 * @property {number} base
 */

/**
 * @typedef {object} RmsNormArgs RMSNorm over the last dim of x [rows, dim]
 * @property {number} rows
 * @property {number} dim
 * @property {Float32Array} x
 * @property {Float32Array | null} weight [dim], or null for ones
 * @property {number} eps
 */

/**
 * @typedef {object} LinearArgs y [rows, out] = x [rows, in]·op(weight) + bias
 * @property {number} rows
 * @property {number} in
 * @property {number} out
 * @property {Float32Array} x
 * @property {Float32Array} weight [out, in] (layout 0, torch) or [in, out] (1, keras)
 * @property {Float32Array | null} bias [out] or null
 * @property {number} layout 0 torch, 1 keras (the core's WeightLayout)
 */

/**
 * Each op's argument bag (`args`) and output fields (`out`): what
 * `backend.op(name, args, outputs)` takes and returns (backend.d.ts).
 * @typedef {object} OpTypes
 * @property {{ args: { seqLen: number, dModel: number, base: number }, out: 'out' }} positionalEncoding
 * @property {{ args: RotaryArgs, out: 'out' }} rotaryEmbedding
 * @property {{ args: { maxPosition: number, rotaryDim: number, base: number }, out: 'cos' | 'sin' }} rotaryCache
 * @property {{ args: { heads: number }, out: 'out' }} alibiSlopes
 * @property {{ args: RmsNormArgs, out: 'y' }} rmsNorm
 * @property {{ args: LinearArgs, out: 'y' }} linear
 */

/**
 * What an op's `run` gets from its lab (lab.js).
 * @typedef {object} OpContext
 * @property {import('./backend.js').Backend} backend
 * @property {boolean} checkFinite the lab's checkFinite setting (init): ops
 *   with tensor arguments scan them when it is on or their call's
 *   `checkFinite` option says so (finite.js)
 */

/**
 * @typedef {object} OpEntry
 * @property {readonly string[]} keys the keys its options object accepts
 *   (any other key is a TypeError naming it and listing these)
 * @property {(lab: OpContext, ...args: any[]) => any} run
 *   validates the arguments, calls the backend, shapes the result
 * @property {() => any[]} example the arguments of a small call (the webgpu
 *   browser test runs every op with them on webgpu and on wasm)
 */

/** n values in (-1, 1), for the examples. */
const ramp = (n) => Float32Array.from({ length: n }, (_, i) => Math.sin(1 + 2.5 * i));

/** @type {Record<string, OpEntry>} */
export const OPS = {
  /** The sinusoidal positional encoding [seqLen, dModel] (Vaswani et al.). */
  positionalEncoding: {
    keys: ['base'],
    run({ backend }, seqLen, dModel, options) {
      const where = 'positionalEncoding';
      checkInt(where, 'seqLen', seqLen, 1);
      checkInt(where, 'dModel', dModel, 1);
      const opts = checkOptions(where, 'options', options, this.keys);
      const base = checkNumber(where, 'base', opts.base ?? 10000, { min: 1, minExclusive: true });
      const n = checkElements(where, 'the encoding [seqLen, dModel]', [seqLen, dModel]);
      return then(backend.op('positionalEncoding', { seqLen, dModel, base }, { out: n }), (r) => makeTensor(r.out, [seqLen, dModel]));
    },
    example: () => [7, 6, { base: 100 }],
  },

  /**
   * Rotary position embedding (ONNX RotaryEmbedding) of x [B, H, L, D], or
   * [B, L, H·D] with numHeads → the rotated x (same shape).
   */
  rotaryEmbedding: {
    keys: ['positionIds', 'cos', 'sin', 'base', 'rotaryDim', 'interleaved', 'numHeads', 'checkFinite'],
    run({ backend, checkFinite }, x, options) {
      const where = 'rotaryEmbedding';
      const opts = checkOptions(where, 'options', options, this.keys);
      const { args, shape, tensors } = readRotaryArgs(where, x, opts);
      if (finiteOption(where, opts, checkFinite)) checkFiniteArgs(where, tensors);
      return then(backend.op('rotaryEmbedding', args, { out: args.x.length }), (r) => makeTensor(r.out, shape));
    },
    example: () => [{ data: ramp(24), shape: [1, 2, 3, 4] }, { positionIds: [[0, 2, 5]] }],
  },

  /** cos/sin tables [maxPosition, rotaryDim/2] of angle p·base^(−2i/rotaryDim). */
  rotaryCache: {
    keys: ['base'],
    run({ backend }, maxPosition, rotaryDim, options) {
      const where = 'rotaryCache';
      checkInt(where, 'maxPosition', maxPosition, 1);
      checkInt(where, 'rotaryDim', rotaryDim, 1);
      const opts = checkOptions(where, 'options', options, this.keys);
      const base = opts.base ?? 10000;
      if (typeof base !== 'number') throw typeError(where, `base must be a number > 1, got ${describe(base)}`);
      const shape = [maxPosition, rotaryDim >> 1];
      const n = shape[0] * shape[1];
      return then(backend.op('rotaryCache', { maxPosition, rotaryDim, base }, { cos: n, sin: n }), (r) => ({
        cos: makeTensor(r.cos, shape),
        sin: makeTensor(r.sin, shape),
      }));
    },
    example: () => [5, 4, { base: 100 }],
  },

  /** The ALiBi paper's default slopes for `heads` heads (a Float32Array). */
  alibiSlopes: {
    keys: [],
    run({ backend }, heads) {
      checkInt('alibiSlopes', 'heads', heads, 1, 65536);
      return then(backend.op('alibiSlopes', { heads }, { out: heads }), (r) => r.out);
    },
    example: () => [6],
  },

  /**
   * RMSNorm over the last dim of x [..., E]: x / sqrt(mean(x²) + eps) · weight
   * (Llama's pre-norm, the per-head QK-norm of Qwen3 / OLMo 2 / Gemma 3).
   */
  rmsNorm: {
    keys: ['weight', 'eps', 'checkFinite'],
    run({ backend, checkFinite }, x, options) {
      const where = 'rmsNorm';
      const t = toTensor(where, 'x', x);
      if (!t.shape.length) throw rangeError(where, 'x must have rank >= 1 (it is normalized over its last dim), got shape []');
      const opts = checkOptions(where, 'options', options, this.keys);
      const dim = t.shape[t.shape.length - 1];
      let weight = null;
      /** @type {[string, { data: Float32Array, shape: number[] }][]} */
      const tensors = [['x', t]];
      if (opts.weight !== undefined) {
        const w = toTensor(where, 'weight', opts.weight);
        if (w.shape.length !== 1 || w.shape[0] !== dim) {
          throw rangeError(where, `weight must have shape [E] = [${dim}] (x's last dim), got ${shapeString(w.shape)}`);
        }
        weight = w.data;
        tensors.push(['weight', w]);
      }
      if (finiteOption(where, opts, checkFinite)) checkFiniteArgs(where, tensors);
      const eps = opts.eps ?? 1e-5;
      if (typeof eps !== 'number') throw typeError(where, `eps must be a number > 0, got ${describe(eps)}`);
      const n = t.data.length;
      return then(backend.op('rmsNorm', { rows: n / dim, dim, x: t.data, weight, eps }, { y: n }), (r) => makeTensor(r.y, t.shape));
    },
    example: () => [{ data: ramp(15), shape: [3, 5] }, { weight: Array.from(ramp(5)) }],
  },

  /**
   * A linear layer, as torch.nn.Linear or a Keras Dense: x [..., in] →
   * x·Wᵀ + b [..., out] with weight [out, in] (layout 'torch'), or x·W + b
   * with weight [in, out] (layout 'keras': a Dense kernel, GPT-2's Conv1D).
   * The models' projections (Q = X·W_Q, the MLP, the LM head) are this op.
   */
  linear: {
    keys: ['layout', 'checkFinite'],
    run({ backend, checkFinite }, x, weight, bias, options) {
      const where = 'linear';
      const t = toTensor(where, 'x', x);
      if (!t.shape.length) throw rangeError(where, 'x must have rank >= 1 ([..., in]), got shape []');
      const opts = checkOptions(where, 'options', options, this.keys);
      const layout = checkLayout(where, opts);
      const w = toTensor(where, 'weight', weight);
      const inDim = t.shape[t.shape.length - 1];
      if (w.shape.length !== 2) throw rangeError(where, `weight must be a matrix (${layout === 'torch' ? '[out, in]' : '[in, out]'}), got ${shapeString(w.shape)}`);
      const [outDim, wIn] = layout === 'torch' ? w.shape : [w.shape[1], w.shape[0]];
      if (wIn !== inDim) {
        throw rangeError(where, `weight ${shapeString(w.shape)} does not fit x ${shapeString(t.shape)}: with layout '${layout}' the weight is ${layout === 'torch' ? `[out, in] = [out, ${inDim}]` : `[in, out] = [${inDim}, out]`}`);
      }
      /** @type {[string, { data: Float32Array, shape: number[] }][]} */
      const tensors = [['x', t], ['weight', w]];
      let b = null;
      if (bias !== undefined && bias !== null) {
        const bt = toTensor(where, 'bias', bias);
        if (bt.shape.length !== 1 || bt.shape[0] !== outDim) throw rangeError(where, `bias must have shape [out] = [${outDim}], got ${shapeString(bt.shape)}`);
        b = bt.data;
        tensors.push(['bias', bt]);
      }
      if (finiteOption(where, opts, checkFinite)) checkFiniteArgs(where, tensors);
      const rows = t.data.length / inDim;
      const n = checkElements(where, 'the output [..., out]', [rows, outDim]);
      const shape = [...t.shape.slice(0, -1), outDim];
      return then(backend.op('linear', { rows, in: inDim, out: outDim, x: t.data, weight: w.data, bias: b, layout: layout === 'torch' ? 0 : 1 }, { y: n }),
        (r) => makeTensor(r.y, shape));
    },
    example: () => [{ data: ramp(15), shape: [3, 5] }, { data: ramp(10), shape: [2, 5] }, [0.5, -0.25]],
  },
};
