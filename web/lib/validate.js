// Validation shared by the public API (lab.js and the module classes): the
// configuration of a module, the forward options, the weight layout and the
// size budgets. The argument checks of single values (checkInt, checkBool, …)
// live in errors.js; tensors in tensor.js; masks in mask.js.
//
// Extending: a new config key goes into readConfig (and MhaConfigArgs in
// backend.d.ts); a new forward option into forwardOptions (and the op's bag).
import { describe, typeError, rangeError, checkInt, checkNumber, checkBool, checkOptions } from './errors.js';
import { shapeString, product, MAX_ELEMENTS } from './tensor.js';

/**
 * The keys each options or config object accepts (docs/errors.md): any other
 * key is a TypeError that names it and lists these. A new option goes into
 * its function's list here (and into index.d.ts). The ops of the op table
 * (ops.js) declare their keys there, in their entry.
 */
export const OPTION_KEYS = {
  init: ['backend', 'locateFile', 'wasmBinary', 'warmUp', 'checkFinite', 'threads'],
  selfAttention: ['mask', 'scale', 'trace', 'checkFinite', 'softcap', 'maskFill'],
  scaledDotProductAttention: ['mask', 'scale', 'needWeights', 'trace', 'checkFinite', 'softcap', 'maskFill'],
  multiHeadAttention: ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'seed', 'numKvHeads', 'rope'],
  selfAttentionLayer: ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'seed', 'dropout', 'eps'],
  mhaForward: ['mask', 'needWeights', 'averageWeights', 'trace', 'kvCache', 'checkFinite', 'maskFill'],
  layerForward: ['mask', 'needWeights', 'averageWeights', 'trace', 'training', 'dropoutSeed', 'checkFinite', 'maskFill'],
  setWeights: ['layout', 'checkFinite'],
  getWeights: ['layout'],
  createKVCache: ['maxLength', 'batch'],
  shapeTrace: ['batch', 'lq', 'seqLen', 'lk', 'embedDim', 'numHeads', 'kdim', 'vdim', 'mask', 'layer', 'unbatched', 'training', 'layout'],
};

/** The weight keys of an MHA, in the order of the C++ core's weight ids. */
export const WEIGHT_KEYS = /** @type {import('./backend.js').WeightKey[]} */ (['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo']);

/** Most bytes of buffers one call may need (one wasm heap block is at most 2 GiB; the heap 4 GB). */
export const MAX_CALL_BYTES = 1.5 * 2 ** 30;

/** The scale is used as a float32: larger magnitudes would become ±Infinity. */
export const FLOAT32_MAX = 3.4028234663852886e38;

/** 'torch' (default) or 'keras'. */
export function checkLayout(where, opts) {
  const layout = opts.layout ?? 'torch';
  if (layout !== 'torch' && layout !== 'keras') {
    throw rangeError(where, `layout must be 'torch' ([out, in], y = x·Wᵀ + b) or 'keras' ([in, out], y = x·W + b), got ${describe(layout)}`);
  }
  return /** @type {import('./backend.js').WeightLayout} */ (layout);
}

/**
 * Refuses calls whose buffers add up to more than MAX_CALL_BYTES.
 * @param {string} where
 * @param {number[]} counts float counts of the buffers
 * @param {() => string} what describes the arguments whose sizes add up,
 *   e.g. "q [2,4,8], k …"; called only on failure (this check runs on every call)
 */
export function checkBytes(where, counts, what) {
  let floats = 0;
  for (const n of counts) floats += n;
  const bytes = floats * 4;
  if (bytes > MAX_CALL_BYTES) {
    throw rangeError(where, `${what()} need about ${(bytes / 2 ** 20).toFixed(0)} MiB of buffers in one call; at most ${MAX_CALL_BYTES / 2 ** 20} MiB are allowed per call (wasm memory is limited to 4 GiB). Use smaller sizes, or needWeights: false to skip the [B,H,Lq,Lk] weights`);
  }
}

/** Refuses a tensor of more than MAX_ELEMENTS elements; returns its element count. */
export function checkElements(where, name, shape) {
  const n = product(shape);
  if (n > MAX_ELEMENTS) {
    throw rangeError(where, `${name} would have shape ${shapeString(shape)} = ${n} elements; at most ${MAX_ELEMENTS} are allowed`);
  }
  return n;
}

/**
 * The configuration of a multiHeadAttention (layer: false) or a
 * selfAttentionLayer (layer: true), validated, with defaults filled in.
 * @returns {import('./backend.js').LayerConfigArgs} (dropout and eps only for a layer)
 */
export function readConfig(where, config, { layer }) {
  const c = checkOptions(where, 'config', config, layer ? OPTION_KEYS.selfAttentionLayer : OPTION_KEYS.multiHeadAttention);
  if (config === undefined || config === null) throw typeError(where, 'config is missing: expected { embedDim, numHeads, … }');
  if (c.embedDim === undefined) throw typeError(where, 'config.embedDim is missing (the model width E)');
  if (c.numHeads === undefined) throw typeError(where, 'config.numHeads is missing (the number of heads H)');
  const embedDim = checkInt(where, 'embedDim', c.embedDim, 1, 65536);
  const numHeads = checkInt(where, 'numHeads', c.numHeads, 1, 65536);
  if (embedDim % numHeads !== 0) {
    throw rangeError(where, `embedDim (${embedDim}) must be divisible by numHeads (${numHeads}): head_dim = embedDim / numHeads must be an integer`);
  }
  const out = /** @type {import('./backend.js').LayerConfigArgs} */ ({
    embedDim,
    numHeads,
    kdim: checkInt(where, 'kdim', c.kdim ?? embedDim, 1, 65536),
    vdim: checkInt(where, 'vdim', c.vdim ?? embedDim, 1, 65536),
    bias: checkBool(where, 'bias', c.bias ?? true),
    seed: checkInt(where, 'seed', c.seed ?? 0, 0, 2 ** 32 - 1),
  });
  if (!layer) {
    const kv = checkInt(where, 'numKvHeads', c.numKvHeads ?? numHeads, 1, 65536);
    if (numHeads % kv !== 0) {
      throw rangeError(where, `numKvHeads (${kv}) must divide numHeads (${numHeads}) (GQA/MQA: query head h reads kv head floor(h·numKvHeads/numHeads))`);
    }
    /** @type {any} */ (out).numKvHeads = kv;
    /** @type {any} */ (out).rope = readRope(where, c.rope, embedDim / numHeads);
  } else if (c.numKvHeads !== undefined || c.rope !== undefined) {
    throw rangeError(where, 'numKvHeads and rope are options of multiHeadAttention; a selfAttentionLayer has neither');
  }
  checkElements(where, 'the projection weight [max(embedDim, kdim, vdim), 3·embedDim]', [Math.max(out.embedDim, out.kdim, out.vdim), 3 * out.embedDim]);
  // The bytes of the weights and their packed copies are checked once, by
  // MultiHeadAttention::Create in the C++ core (the webgpu backend asks it too).
  if (layer) {
    if (c.kdim !== undefined || c.vdim !== undefined) {
      if (out.kdim !== embedDim || out.vdim !== embedDim) {
        throw rangeError(where, 'kdim and vdim must equal embedDim in a self-attention layer');
      }
    }
    out.dropout = checkNumber(where, 'dropout', c.dropout ?? 0.1, { min: 0, max: 1, maxExclusive: true });
    out.eps = checkNumber(where, 'eps', c.eps ?? 1e-5, { min: 0, minExclusive: true });
  }
  return out;
}

/**
 * rope: true, or { base = 10000, rotaryDim = D, interleaved = false } → the
 * normalised object, or null. Value ranges (rotaryDim even <= D, base > 1)
 * are checked by the C++ core.
 */
function readRope(where, rope, headDim) {
  if (rope === undefined || rope === false || rope === null) return null;
  const r = rope === true ? {} : rope;
  if (typeof r !== 'object' || Array.isArray(r)) {
    throw typeError(where, `rope must be true or an object { base, rotaryDim, interleaved }, got ${describe(rope)}`);
  }
  for (const key of Object.keys(r)) {
    if (!['base', 'rotaryDim', 'interleaved'].includes(key)) {
      throw typeError(where, `rope: unknown option ${JSON.stringify(key)}; allowed: base, rotaryDim, interleaved`);
    }
  }
  const base = r.base ?? 10000;
  if (typeof base !== 'number') throw typeError(where, `rope.base must be a number > 1, got ${describe(base)}`);
  const rotaryDim = r.rotaryDim ?? headDim;
  if (typeof rotaryDim !== 'number') throw typeError(where, `rope.rotaryDim must be an even integer in [2, D = ${headDim}], got ${describe(rotaryDim)}`);
  if (!Number.isInteger(rotaryDim)) throw rangeError(where, `rope.rotaryDim must be an even integer in [2, D = ${headDim}], got ${rotaryDim}`);
  return { base, rotaryDim, interleaved: checkBool(where, 'rope.interleaved', r.interleaved ?? false) };
}

/**
 * The options every forward takes (each op reads its own extras from `opts`).
 * trace: true (the shape trace) or 'values' (each step with its value).
 * @param {string} where
 * @param {unknown} options
 * @param {readonly string[]} allowed the op's keys (OPTION_KEYS.mhaForward, …)
 */
export function forwardOptions(where, options, allowed) {
  const opts = checkOptions(where, 'options', options, allowed);
  const trace = checkTrace(where, opts.trace);
  return {
    opts,
    needWeights: checkBool(where, 'needWeights', opts.needWeights ?? true),
    averageWeights: checkBool(where, 'averageWeights', opts.averageWeights ?? false),
    trace: trace !== false,
    traceValues: trace === 'values',
  };
}

/** The trace option: false (default), true (shapes) or 'values'. */
export function checkTrace(where, trace) {
  if (trace === undefined || trace === false) return false;
  if (trace === true || trace === 'values') return trace;
  throw typeError(where, `trace must be true (the shape trace), false or 'values' (every step with its value), got ${describe(trace)}`);
}

/** The optional scale of an SDPA call (a finite float32), or undefined. */
export function checkScale(where, scale) {
  if (scale === undefined) return undefined;
  return checkNumber(where, 'scale', scale, { min: -FLOAT32_MAX, max: FLOAT32_MAX });
}

/** A uint32 seed (dropoutSeed, seed). */
export function checkSeed(where, name, value) {
  return checkInt(where, name, value, 0, 2 ** 32 - 1);
}
