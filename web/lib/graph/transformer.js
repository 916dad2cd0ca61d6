// The block graph's handle (src/train/transformer.cpp, the API over transformer_graph.cpp): one Transformer owns
// its weights, optimizer state and activations in wasm memory; dispose()
// frees them (a FinalizationRegistry also does, eventually). lab.transformer
// (web/lib/train/, which adds trainer() and save()) and lab.loadModel
// (web/lib/model/) both build on it.
import { typeError, rangeError, checkInt, checkNumber, checkBool, checkOptions, disposedError, describe } from '../errors.js';
import { withArena, checkStatus } from './arena.js';
import { toTokens } from './tokens.js';

// The core's Positional ids (src/train/train.h); 'rope' rotates Q and K in every block.
const POSITIONAL = { none: 0, sinusoidal: 1, learned: 2, rope: 3 };
// The core's NormKind and Activation ids (src/train/train.h).
export const NORMS = { layernorm: 0, rmsnorm: 1 };
export const ACTIVATIONS = { gelu: 0, gelu_new: 1, swiglu: 2, geglu: 3, geglu_tanh: 4, relu: 5, silu: 6 };
// The other fields of the core's TransformerConfig (packing, init and the
// families' flags, which only checkpoints and lab.transformer's presets set)
// take their defaults from the core's one field list
// (ATTNLAB_TRANSFORMER_CONFIG_FIELDS in src/train/train.h, read through
// transformerConfigDefaults()); enum fields come back as their names.
// writeParamQuant's GGML block types by name: their ggml type ids, values and bytes a block.
const QUANT_TYPES = { Q8_0: [8, 32, 34], Q4_0: [2, 32, 18], Q4_K: [12, 256, 144], Q6_K: [14, 256, 210] };
const QUANT_OPTIONS = ['first'];
const ENUM_NAMES = { norm: NORMS, activation: ACTIVATIONS, positional: POSITIONAL };
const coreDefaults = new WeakMap();

/** The core's TransformerConfig defaults under their JS names, once per module. */
function checkpointDefaults(Module) {
  let d = coreDefaults.get(Module);
  if (!d) {
    d = { ...Module.transformerConfigDefaults() };
    for (const [key, names] of Object.entries(ENUM_NAMES)) {
      d[key] = Object.keys(names).find((name) => names[name] === d[key]);
    }
    coreDefaults.set(Module, Object.freeze(d));
  }
  return d;
}
const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((release) => release())
  : null;

/** Throws a TypeError for a key of `obj` not in `known`. */
export function checkKeys(where, what, obj, known) {
  for (const key of Object.keys(obj)) {
    if (!known.has(key)) throw typeError(where, `unknown ${what} ${describe(key)}; allowed: ${[...known].join(', ')}`);
  }
}

/**
 * The types of the block graph's attention, norm and embedding fields
 * (src/train/train.h; docs/training.md) where `c` gives them; their ranges
 * and combinations are the core's CheckConfig's (the same messages).
 */
function checkGraphFields(where, c) {
  for (const key of ['headDim', 'slidingWindow', 'rotaryDim']) {
    if (c[key] !== undefined) checkInt(where, key, c[key], 0, 2 ** 30);
  }
  for (const key of ['qkNorm', 'parallelResidual', 'sandwichNorm', 'normBias', 'firstNorm1', 'gateBias']) {
    if (c[key] !== undefined) checkBool(where, key, c[key]);
  }
  for (const key of ['attnScale', 'attnSoftcap', 'finalSoftcap', 'ropeLocalTheta']) {
    if (c[key] !== undefined) checkNumber(where, key, c[key], { min: 0 });
  }
  if (c.embedScale !== undefined) checkNumber(where, 'embedScale', c.embedScale, { min: 0, minExclusive: true });
  if (c.layerKinds !== undefined && (typeof c.layerKinds !== 'string' || !/^[gl]*$/.test(c.layerKinds))) {
    throw rangeError(where, `layerKinds must be a string of 'g' (global) and 'l' (local), one a layer, or '', got ${describe(c.layerKinds)}`);
  }
}

/**
 * The normalised config. `config` arrives key-checked (lab.transformer checks
 * the user's keys and merges its preset, web/lib/train/presets.js; loadModel
 * builds it from a validated config.json); its values are checked here.
 * `checkpointFlags` (loadModel's) win over `config` for the fields checked
 * nowhere here, whose defaults are the core's.
 */
function normalizeConfig(Module, config, checkpointFlags) {
  const where = 'transformer';
  const c = checkOptions(where, 'config', config);
  /** @type {any} */
  const out = {
    vocabSize: checkInt(where, 'vocabSize', c.vocabSize, 2, 2 ** 24),
    maxLength: checkInt(where, 'maxLength', c.maxLength, 1, 65536),
    embedDim: checkInt(where, 'embedDim', c.embedDim ?? 64, 1, 65536),
    numHeads: checkInt(where, 'numHeads', c.numHeads ?? 4, 1, 65536),
    numLayers: checkInt(where, 'numLayers', c.numLayers ?? 1, 1, 64),
    ffnDim: checkInt(where, 'ffnDim', c.ffnDim ?? 4 * (c.embedDim ?? 64), 1, 2 ** 20),
    causal: checkBool(where, 'causal', c.causal ?? false),
    dropout: checkNumber(where, 'dropout', c.dropout ?? 0, { min: 0, max: 1, maxExclusive: true }),
    eps: checkNumber(where, 'eps', c.eps ?? 1e-5, { min: 0, minExclusive: true }),
    seed: checkInt(where, 'seed', c.seed ?? 0, 0, 2 ** 32 - 1),
  };
  const positional = c.positional ?? 'sinusoidal';
  if (typeof positional !== 'string' || !Object.hasOwn(POSITIONAL, positional)) {
    throw rangeError(where, `positional must be 'sinusoidal', 'learned', 'rope' or 'none', got ${describe(positional)}`);
  }
  out.positional = positional;
  checkGraphFields(where, c);
  const headDim = checkpointFlags?.headDim ?? c.headDim ?? 0;
  if (!headDim && out.embedDim % out.numHeads !== 0) {
    throw rangeError(where, `embedDim (${out.embedDim}) must be divisible by numHeads (${out.numHeads}), or headDim must be given`);
  }
  // The preset lab.transformer was built from (a label; 'default' for loaded models).
  out.architecture = c.architecture ?? 'default';
  out.prenorm = checkBool(where, 'prenorm', c.prenorm ?? false);
  const activation = c.activation ?? 'gelu';
  if (typeof activation !== 'string' || !Object.hasOwn(ACTIVATIONS, activation)) {
    throw rangeError(where, `activation must be 'gelu', 'gelu_new', 'swiglu', 'geglu', 'geglu_tanh', 'relu' or 'silu', got ${describe(activation)}`);
  }
  out.activation = activation;
  out.tieEmbeddings = checkBool(where, 'tieEmbeddings', c.tieEmbeddings ?? false);
  out.headBias = checkBool(where, 'headBias', c.headBias ?? true);
  // Checkpoint flags (from web/lib/model/) are trusted: the architecture
  // tables built them from a validated config.json.
  for (const [key, value] of Object.entries(checkpointDefaults(Module))) {
    if (!(key in out)) out[key] = checkpointFlags && key in checkpointFlags ? checkpointFlags[key] : c[key] ?? value;
  }
  return out;
}

/** The core's TransformerConfig value object for a normalised config. */
function coreConfig(c) {
  return { ...c, positional: POSITIONAL[c.positional], norm: NORMS[c.norm], activation: ACTIVATIONS[c.activation] };
}

export class Transformer {
  /**
   * @param {object} Module the wasm module
   * @param {object} config the block graph's sizes and options (key-checked by the caller)
   * @param {object} [checkpointFlags] a checkpoint's packing, init and family flags (web/lib/model/load.js)
   */
  constructor(Module, config, checkpointFlags) {
    const c = normalizeConfig(Module, config, checkpointFlags);
    this._Module = Module;
    this.config = Object.freeze(c);
    const { architecture, ...fields } = coreConfig(c);
    void architecture;
    const handle = Module.transformerCreate(fields);
    if (!handle) checkStatus(Module, 'transformer', 1);
    this._handle = handle;
    this._params = JSON.parse(Module.transformerParamInfo(handle));
    this.parameterCount = Module.transformerParamCount(handle);
    this._token = {};
    if (registry) registry.register(this, () => Module.transformerDestroy(handle), this._token);
  }

  _live(where) {
    if (!this._handle) throw disposedError(where, 'this model', 'create a new one with lab.transformer()');
    return this._handle;
  }

  _batch(where, tokens, targets) {
    const t = toTokens(where, 'tokens', tokens);
    const [B, L] = t.shape;
    if (L > this.config.maxLength) {
      throw rangeError(where, `tokens have length ${L}, longer than maxLength (${this.config.maxLength})`);
    }
    const V = this.config.vocabSize;
    for (let i = 0; i < t.data.length; i++) {
      if (t.data[i] < 0 || t.data[i] >= V) {
        throw rangeError(where, `tokens must be integers in [0, ${V - 1}] (vocabSize ${V}); tokens[${Math.floor(i / L)}][${i % L}] is ${t.data[i]}`);
      }
    }
    let y = null;
    if (targets !== undefined) {
      y = toTokens(where, 'targets', targets);
      if (y.shape[0] !== B || y.shape[1] !== L) {
        throw rangeError(where, `targets must have the tokens' shape [${B},${L}], got [${y.shape.join(',')}]`);
      }
    }
    return { t, y, B, L };
  }

  /**
   * Logits [B, L, vocab] and one attention map [B, H, L, L] per layer.
   * @param tokens [B, L] token ids
   * @param {{ attention?: boolean }} [options] attention: false skips the maps
   */
  forward(tokens, options) {
    const where = 'model.forward';
    const handle = this._live(where);
    const o = checkOptions(where, 'options', options);
    checkKeys(where, 'option', o, new Set(['attention']));
    const wantMaps = checkBool(where, 'attention', o.attention ?? true);
    const { t, B, L } = this._batch(where, tokens);
    const { vocabSize: V, numHeads: H, numLayers: N } = this.config;
    const Module = this._Module;
    return withArena(Module, where, (arena) => {
      const tp = arena.fromI32(t.data);
      const lp = arena.f32(B * L * V);
      const per = B * H * L * L;
      const ap = wantMaps ? arena.f32(N * per) : 0;
      checkStatus(Module, where, Module.transformerRun(handle, {
        batch: B, length: L, keep: 0, tokens: tp, logits: lp, attention: ap, hidden: 0, layerInputs: 0, cross: 0, cached: false, lastOnly: false,
      }));
      const attention = [];
      for (let l = 0; wantMaps && l < N; l++) {
        attention.push({ data: arena.readF32(ap + l * per * 4, per), shape: [B, H, L, L] });
      }
      return { logits: { data: arena.readF32(lp, B * L * V), shape: [B, L, V] }, attention };
    });
  }

  /** Reads every parameter-sized vector (`getter`: a binding filling a flat buffer) by name. */
  _readByName(where, getter) {
    const handle = this._live(where);
    const Module = this._Module;
    return withArena(Module, where, (arena) => {
      const p = arena.f32(this.parameterCount);
      Module[getter](handle, p);
      const flat = arena.readF32(p, this.parameterCount);
      const out = {};
      for (const info of this._params) {
        const n = info.shape.reduce((a, b) => a * b, 1);
        out[info.name] = { data: flat.slice(info.offset, info.offset + n), shape: info.shape.slice() };
      }
      return out;
    });
  }

  /** Every parameter by name, torch layout: { 'blocks.0.attn.wq': { data, shape }, … }. */
  getWeights() {
    return this._readByName('model.getWeights', 'transformerGetParams');
  }

  /** The gradient of the last training step, by name (same layout as getWeights). */
  getGradients() {
    return this._readByName('model.getGradients', 'transformerGetGradients');
  }

  /** Sets some or all parameters by name (same names and shapes as getWeights). */
  setWeights(weights) {
    const where = 'model.setWeights';
    const handle = this._live(where);
    if (weights === null || typeof weights !== 'object' || Array.isArray(weights)) {
      throw typeError(where, `weights must be an object { name: { data, shape } } as getWeights returns, got ${describe(weights)}`);
    }
    const byName = new Map(this._params.map((p) => [p.name, p]));
    for (const name of Object.keys(weights)) {
      if (!byName.has(name)) throw typeError(where, `unknown weight ${describe(name)}; the model's weights are ${[...byName.keys()].join(', ')}`);
    }
    const Module = this._Module;
    withArena(Module, where, (arena) => {
      const p = arena.f32(this.parameterCount);
      Module.transformerGetParams(handle, p);
      const flat = arena.readF32(p, this.parameterCount);
      for (const [name, value] of Object.entries(weights)) {
        const info = byName.get(name);
        const n = info.shape.reduce((a, b) => a * b, 1);
        const data = value && typeof value === 'object' && 'data' in value ? value.data : value;
        if (!data || typeof data.length !== 'number') throw typeError(where, `${name} must be a tensor { data, shape }, got ${describe(value)}`);
        if (data.length !== n) throw rangeError(where, `${name} must have ${n} elements (shape [${info.shape.join(',')}]), got ${data.length}`);
        if (value.shape && (value.shape.length !== info.shape.length || value.shape.some((d, i) => d !== info.shape[i]))) {
          throw rangeError(where, `${name} must have shape [${info.shape.join(',')}], got [${value.shape.join(',')}]`);
        }
        flat.set(data, info.offset);
      }
      Module.HEAPF32.set(flat, p >>> 2);
      checkStatus(Module, where, Module.transformerSetParams(handle, p));
    });
  }

  /**
   * Writes a weight, or rows [first, first + n) of it, from GGML blocks as a
   * GGUF file holds a Q8_0, Q4_0, Q4_K or Q6_K tensor [R rows of C]
   * (ggml-common.h: a block of 32 values is an F16 scale d and 32 int8, or
   * 16 bytes of nibbles with offset 8, 34 or 18 bytes; the K-quants' blocks
   * hold 256 values in 144 or 210 bytes; C / block values a row). A loaded
   * model's projections keep the blocks (decoding reads them as they are);
   * every other weight, and every weight of a trainable model, takes their
   * dequantized values d·q (ggml's dequantize_row_*).
   * @param {string|number} param the weight's name (as getWeights) or index
   * @param {'Q8_0'|'Q4_0'|'Q4_K'|'Q6_K'|8|2|12|14} kind the block type (or its ggml type id)
   * @param {Uint8Array} data whole rows of blocks
   * @param {{ first?: number }} [options] first: the first row written (default 0)
   */
  writeParamQuant(param, kind, data, options) {
    const where = 'model.writeParamQuant';
    const handle = this._live(where);
    const opts = checkOptions(where, 'options', options, QUANT_OPTIONS);
    let index;
    if (typeof param === 'string') {
      index = this._params.findIndex((p) => p.name === param);
      if (index < 0) throw typeError(where, `unknown weight ${describe(param)}; the model's weights are ${this._params.map((p) => p.name).join(', ')}`);
    } else {
      index = checkInt(where, 'param', param, 0, this._params.length - 1);
    }
    const type = Object.entries(QUANT_TYPES).find(([n, [id]]) => kind === n || kind === id);
    if (type === undefined) {
      throw rangeError(where, `kind must be 'Q8_0', 'Q4_0', 'Q4_K' or 'Q6_K' (or their ggml type ids 8, 2, 12 and 14), got ${describe(kind)}`);
    }
    const [code, values, blockBytes] = type[1];
    if (!(data instanceof Uint8Array)) {
      throw typeError(where, `data must be a Uint8Array of GGML blocks, got ${describe(data)}`);
    }
    const info = this._params[index];
    const rows = info.shape.length === 2 ? info.shape[0] : 1;
    const cols = info.shape.length === 2 ? info.shape[1] : info.shape[0];
    const name = `${info.name} [${info.shape.join(',')}]`;
    if (cols % values !== 0) {
      throw rangeError(where, `${name} has rows of ${cols} values, not a multiple of ${values} (a ${type[0]} block); write it from floats`);
    }
    const rowBytes = (cols / values) * blockBytes;
    const first = checkInt(where, 'first', opts.first ?? 0, 0, rows - 1);
    if (data.length === 0 || data.length % rowBytes !== 0 || first + data.length / rowBytes > rows) {
      throw rangeError(where, `data must hold whole rows of ${name} from row ${first}: a multiple of ${rowBytes} bytes (${cols / values} blocks of ${blockBytes}), at most ${(rows - first) * rowBytes}, got ${data.length}`);
    }
    const Module = this._Module;
    withArena(Module, where, (arena) => {
      const src = arena.alloc(data.length);
      Module.HEAPU8.set(data, src);
      checkStatus(Module, where, Module.transformerWriteParamQuant(handle, {
        index, first, rows: data.length / rowBytes, kind: code, src, bytes: data.length,
      }));
    });
  }

  /** Switches a head off (ablation: its context becomes zeros) or back on. */
  setHeadEnabled(layer, head, enabled) {
    const where = 'model.setHeadEnabled';
    const handle = this._live(where);
    checkInt(where, 'layer', layer, 0, this.config.numLayers - 1);
    checkInt(where, 'head', head, 0, this.config.numHeads - 1);
    checkBool(where, 'enabled', enabled);
    checkStatus(this._Module, where, this._Module.transformerSetHeadEnabled(handle, layer, head, enabled));
  }

  /** Bytes of wasm memory held (weights, optimizer state, activations). */
  heldBytes() {
    return this._Module.transformerHeldBytes(this._live('model.heldBytes'));
  }

  dispose() {
    if (!this._handle) return;
    if (registry) registry.unregister(this._token);
    this._Module.transformerDestroy(this._handle);
    this._handle = 0;
  }

  get disposed() {
    return !this._handle;
  }
}
