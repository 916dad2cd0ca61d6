// The base of MultiHeadAttention and SelfAttentionLayer: a backend handle
// that holds weights, its lifetime (dispose, FinalizationRegistry), and the
// weight accessors (setWeights / getWeights in 'torch' or 'keras' layout).
// Classes live at module scope and take their backend through the
// constructor, so `instanceof` holds across labs.
import { describe, typeError, rangeError, checkOptions, checkKeys, disposedError } from './errors.js';
import { toTensor, makeTensor, shapeString, product } from './tensor.js';
import { WEIGHT_KEYS, checkLayout, OPTION_KEYS } from './validate.js';
import { checkFiniteData, finiteOption } from './finite.js';
import { loadStateDict, moduleStateDict } from './io/index.js';

/** Frees backend objects that were garbage-collected without dispose(). */
export const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((release) => /** @type {() => void} */ (release)())
  : null;

export class AttentionModule {
  /**
   * @param {import('./backend.js').Backend} backend
   * @param {string} where the public name, for messages ('multiHeadAttention', …)
   * @param {import('./backend.js').MhaConfigArgs} c validated configuration
   * @param {{ checkFinite?: boolean }} [settings] the lab's settings (init options)
   */
  constructor(backend, where, c, settings = {}) {
    /** @type {import('./backend.js').Backend} */
    this._backend = backend;
    this._settings = settings;
    /** The layout of the last setWeights (the trace's formulas are written in it). */
    this._layout = /** @type {import('./backend.js').WeightLayout} */ ('torch');
    this._where = where;
    this._obj = null;
    this._token = {};
    /** E */
    this.embedDim = c.embedDim;
    /** H */
    this.numHeads = c.numHeads;
    this.kdim = c.kdim;
    this.vdim = c.vdim;
    this.bias = c.bias;
    this.seed = c.seed;
    /** D = E / H */
    this.headDim = c.embedDim / c.numHeads;
  }

  _track(obj) {
    this._obj = obj;
    const backend = this._backend;
    const release = () => backend.destroy(obj);
    if (registry) registry.register(this, release, this._token);
  }

  _live(method) {
    if (!this._obj) {
      throw disposedError(`${this._where}.${method}`, 'this object', 'create a new one');
    }
    return this._obj;
  }

  /** Frees the weights and buffers. Safe to call more than once. */
  dispose() {
    if (!this._obj) return;
    if (registry) registry.unregister(this._token);
    this._backend.destroy(this._obj);
    this._obj = null;
  }

  get disposed() {
    return this._obj === null;
  }

  /** Bytes held by weights and reusable buffers. */
  heldBytes() {
    return this._backend.heldBytes(this._live('heldBytes'));
  }

  /** The shape of weight `key` in `layout`. */
  _weightShape(key, layout) {
    // K and V project to numKvHeads·D (GQA/MQA); everything else to E.
    const kv = /** @type {any} */ (this).numKvHeads;
    const E = (key[1] === 'k' || key[1] === 'v') && kv ? kv * (this.embedDim / this.numHeads) : this.embedDim;
    if (key[0] === 'b') return [E];
    const inDim = key === 'wk' ? this.kdim : key === 'wv' ? this.vdim : E;
    return layout === 'torch' ? [E, inDim] : [inDim, E];
  }

  /** Weight keys beyond the MHA's (the layer's gamma, beta). */
  _extraWeightKeys() {
    return [];
  }

  setWeights(weights, options) {
    const where = `${this._where}.setWeights`;
    const obj = this._live('setWeights');
    if (weights === null || typeof weights !== 'object' || Array.isArray(weights)) {
      throw typeError(where, `weights must be an object such as { wq, bq, wk, bk, wv, bv, wo, bo }, got ${describe(weights)}`);
    }
    const opts = checkOptions(where, 'options', options, OPTION_KEYS.setWeights);
    const layout = checkLayout(where, opts);
    const finite = finiteOption(where, opts, this._settings.checkFinite);
    const extra = this._extraWeightKeys();
    checkKeys(where, 'weights', weights, [...WEIGHT_KEYS, ...extra]);
    // Validate everything before changing anything.
    const staged = [];
    for (const key of [...WEIGHT_KEYS, ...extra]) {
      if (weights[key] === undefined) continue;
      if (key[0] === 'b' && key.length === 2 && !this.bias) {
        throw rangeError(where, `${key}: this layer was created with bias: false, so it has no biases`);
      }
      const shape = this._weightShape(key, layout);
      const value = weights[key];
      let t;
      if (Array.isArray(value) && !Array.isArray(value[0])) {
        t = toTensor(where, key, { data: value, shape: [value.length] });
      } else if (ArrayBuffer.isView(value)) {
        t = toTensor(where, key, { data: value, shape: [/** @type {Float32Array} */ (value).length] });
      } else {
        t = toTensor(where, key, value);
      }
      const flatOk = t.shape.length === 1 && t.shape[0] === product(shape);
      const shapeOk = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
      if (!flatOk && !shapeOk) {
        throw rangeError(where, `${key} must have shape ${shapeString(shape)} in '${layout}' layout, got ${shapeString(t.shape)}`);
      }
      if (finite) checkFiniteData(where, key, t.data, shapeOk ? shape : t.shape);
      staged.push([key, t.data]);
    }
    let gamma = null;
    let beta = null;
    for (const [key, data] of staged) {
      if (key === 'gamma') gamma = data;
      else if (key === 'beta') beta = data;
      else this._backend.setWeight(obj, key, data, layout);
    }
    if (gamma || beta) this._backend.setNorm(obj, gamma, beta);
    if (staged.some(([key]) => key[0] === 'w')) this._layout = layout;
    return this;
  }

  getWeights(options) {
    const where = `${this._where}.getWeights`;
    const obj = this._live('getWeights');
    const opts = checkOptions(where, 'options', options, OPTION_KEYS.getWeights);
    const layout = checkLayout(where, opts);
    const out = {};
    for (const key of WEIGHT_KEYS) {
      if (key[0] === 'b' && !this.bias) continue;
      const shape = this._weightShape(key, layout);
      out[key] = makeTensor(this._backend.getWeight(obj, key, layout, product(shape)), shape);
    }
    return out;
  }

  /**
   * Loads one attention layer of a PyTorch / Hugging Face / Keras state dict
   * ({ name: tensor }, e.g. readSafetensors(bytes).tensors): options
   * { format, prefix } as in docs/weights.md. Returns this.
   */
  loadStateDict(tensors, options) {
    this._live('loadStateDict');
    return loadStateDict(this, tensors, options, { where: `${this._where}.loadStateDict`, layer: this._extraWeightKeys().includes('gamma') });
  }

  /** The weights as a state dict of options.format ('torch', 'hf-bert', …), names after options.prefix. */
  stateDict(options) {
    this._live('stateDict');
    return moduleStateDict(this, options, { where: `${this._where}.stateDict`, layer: this._extraWeightKeys().includes('gamma') });
  }
}

/** fn(value), or value.then(fn) when the backend answered with a Promise. */
export function then(value, fn) {
  return value && typeof value.then === 'function' ? value.then(fn) : fn(value);
}
