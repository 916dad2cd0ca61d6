// lab.transformer: a tiny transformer trained in the wasm core, one call per
// step (src/train/transformer.cpp). The model owns its weights, AdamW state
// and activations in wasm memory; dispose() frees them (a FinalizationRegistry
// also does, eventually).
import { describe, typeError, rangeError, checkInt, checkNumber, checkBool, checkOptions, disposedError } from '../errors.js';
import { withArena, checkStatus } from './heap.js';
import { toTokens, toLossMask } from './tokens.js';
import { saveModel, gpt2Config, gpt2Normalized } from '../model/save.js';

// The core's Positional ids (src/train/train.h); 'rope' rotates Q and K in every block.
const POSITIONAL = { none: 0, sinusoidal: 1, learned: 2, rope: 3 };
const CONFIG_KEYS = new Set(['vocabSize', 'maxLength', 'embedDim', 'numHeads', 'numLayers', 'ffnDim', 'causal', 'positional', 'dropout', 'eps', 'seed',
  'architecture', 'prenorm', 'activation', 'tieEmbeddings', 'headBias']);
// The core's NormKind and Activation ids (src/train/train.h).
export const NORMS = { layernorm: 0, rmsnorm: 1 };
export const ACTIVATIONS = { gelu: 0, gelu_new: 1, swiglu: 2 };
// Architecture fields of the core's TransformerConfig that only model
// checkpoints set (web/lib/model/architectures.js); their defaults here.
const ARCH_DEFAULTS = {
  numKvHeads: 0, prenorm: false, norm: 'layernorm', activation: 'gelu', qkvBias: true, outBias: true, ffnBias: true,
  tieEmbeddings: false, headBias: true, hasHead: true, ropeTheta: 10000, typeVocab: 0, embedNorm: false, mlmHead: false, initStd: 0,
  initWeights: true, packedWeights: false, packedHalf: 0,
};
// architecture: 'gpt2' is GPT-2's block (pre-LayerNorm with a final norm,
// gelu_new, the head tied to the token embedding, no head bias, learned
// positions, causal, GPT-2's init), saved with GPT-2's names by model.save().
const ARCHITECTURES = {
  default: {},
  gpt2: { prenorm: true, activation: 'gelu_new', tieEmbeddings: true, headBias: false, positional: 'learned', causal: true, initStd: 0.02 },
};
const TRAINER_KEYS = new Set(['optimizer', 'lr', 'betas', 'eps', 'weightDecay', 'warmup', 'clip']);

const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((release) => release())
  : null;

function checkKeys(where, what, obj, known) {
  for (const key of Object.keys(obj)) {
    if (!known.has(key)) throw typeError(where, `unknown ${what} ${describe(key)}; allowed: ${[...known].join(', ')}`);
  }
}

/**
 * Training stopped because the loss or the gradient became non-finite; the
 * model keeps the weights of the last good step. An Error named
 * 'TrainingStoppedError'; `instanceof` also recognises instances of the
 * CommonJS entry's copy (by the name).
 */
export class TrainingStoppedError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'TrainingStoppedError';
  }

  /** @param {unknown} value */
  static [Symbol.hasInstance](value) {
    return value instanceof Error && /** @type {Error} */ (value).name === 'TrainingStoppedError';
  }
}

function normalizeConfig(config, arch) {
  const where = 'transformer';
  const c0 = checkOptions(where, 'config', config);
  if (!arch) checkKeys(where, 'config key', c0, CONFIG_KEYS);
  const architecture = c0.architecture ?? 'default';
  if (typeof architecture !== 'string' || !Object.hasOwn(ARCHITECTURES, architecture)) {
    throw rangeError(where, `architecture must be 'default' or 'gpt2', got ${describe(architecture)}`);
  }
  const c = { ...ARCHITECTURES[architecture], ...c0 };
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
  if (out.embedDim % out.numHeads !== 0) {
    throw rangeError(where, `embedDim (${out.embedDim}) must be divisible by numHeads (${out.numHeads})`);
  }
  out.architecture = architecture;
  out.prenorm = checkBool(where, 'prenorm', c.prenorm ?? false);
  const activation = c.activation ?? 'gelu';
  if (typeof activation !== 'string' || !Object.hasOwn(ACTIVATIONS, activation)) {
    throw rangeError(where, `activation must be 'gelu', 'gelu_new' or 'swiglu', got ${describe(activation)}`);
  }
  out.activation = activation;
  out.tieEmbeddings = checkBool(where, 'tieEmbeddings', c.tieEmbeddings ?? false);
  out.headBias = checkBool(where, 'headBias', c.headBias ?? true);
  // Checkpoint-only fields (arch, from web/lib/model/) are trusted: the
  // architecture tables built them from a validated config.json.
  for (const [key, value] of Object.entries(ARCH_DEFAULTS)) {
    if (!(key in out)) out[key] = arch && key in arch ? arch[key] : c[key] ?? value;
  }
  return out;
}

/** The core's TransformerConfig value object for a normalised config. */
function coreConfig(c) {
  return { ...c, positional: POSITIONAL[c.positional], norm: NORMS[c.norm], activation: ACTIVATIONS[c.activation] };
}

export class Transformer {
  /** @param {object} Module the wasm module; @param {object} config; @param {object} [arch] checkpoint fields (web/lib/model/) */
  constructor(Module, config, arch) {
    const c = normalizeConfig(config, arch);
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
        batch: B, length: L, keep: 0, tokens: tp, logits: lp, attention: ap, hidden: 0, layerInputs: 0, cached: false, lastOnly: false,
      }));
      const attention = [];
      for (let l = 0; wantMaps && l < N; l++) {
        attention.push({ data: arena.readF32(ap + l * per * 4, per), shape: [B, H, L, L] });
      }
      return { logits: { data: arena.readF32(lp, B * L * V), shape: [B, L, V] }, attention };
    });
  }

  /** A trainer (AdamW). The model holds one optimizer state: a new trainer resets it. */
  trainer(options) {
    return new Trainer(this, options);
  }

  /** Every parameter by name, torch layout: { 'blocks.0.attn.wq': { data, shape }, … }. */
  getWeights() {
    const where = 'model.getWeights';
    const handle = this._live(where);
    const Module = this._Module;
    return withArena(Module, where, (arena) => {
      const p = arena.f32(this.parameterCount);
      Module.transformerGetParams(handle, p);
      const flat = arena.readF32(p, this.parameterCount);
      const out = {};
      for (const info of this._params) {
        const n = info.shape.reduce((a, b) => a * b, 1);
        out[info.name] = { data: flat.slice(info.offset, info.offset + n), shape: info.shape.slice() };
      }
      return out;
    });
  }

  /** The gradient of the last training step, by name (same layout as getWeights). */
  getGradients() {
    const where = 'model.getGradients';
    const handle = this._live(where);
    const Module = this._Module;
    return withArena(Module, where, (arena) => {
      const p = arena.f32(this.parameterCount);
      Module.transformerGetGradients(handle, p);
      const flat = arena.readF32(p, this.parameterCount);
      const out = {};
      for (const info of this._params) {
        const n = info.shape.reduce((a, b) => a * b, 1);
        out[info.name] = { data: flat.slice(info.offset, info.offset + n), shape: info.shape.slice() };
      }
      return out;
    });
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

  /** Switches a head off (ablation: its context becomes zeros) or back on. */
  setHeadEnabled(layer, head, enabled) {
    const where = 'model.setHeadEnabled';
    const handle = this._live(where);
    checkInt(where, 'layer', layer, 0, this.config.numLayers - 1);
    checkInt(where, 'head', head, 0, this.config.numHeads - 1);
    checkBool(where, 'enabled', enabled);
    checkStatus(this._Module, where, this._Module.transformerSetHeadEnabled(handle, layer, head, enabled));
  }

  /**
   * The Hugging Face files of a model built with architecture 'gpt2':
   * { 'config.json', 'model.safetensors', 'tokenizer.json'? } with GPT-2's
   * names, which lab.loadModel and transformers' GPT2LMHeadModel read.
   * @param {{ tokenizer?: object, dtype?: 'F32' | 'F16' }} [options] a parsed tokenizer.json to save beside; the weights' dtype
   */
  save(options) {
    const where = 'model.save';
    this._live(where);
    const o = checkOptions(where, 'options', options);
    checkKeys(where, 'option', o, new Set(['tokenizer', 'dtype']));
    if (this.config.architecture !== 'gpt2') {
      throw typeError(where, `save() writes Hugging Face files for architecture 'gpt2' (GPT2LMHeadModel); this model's architecture is '${this.config.architecture}', which no Hugging Face class matches: use getWeights() and writeSafetensors()`);
    }
    const hfConfig = gpt2Config(this.config);
    return saveModel(where, this, { modelType: 'gpt2', hfConfig, c: gpt2Normalized(this.config), tokenizerJson: o.tokenizer ?? null }, o.dtype ?? 'F32');
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

export class Trainer {
  constructor(model, options) {
    const where = 'model.trainer';
    model._live(where);
    const o = checkOptions(where, 'options', options);
    checkKeys(where, 'option', o, TRAINER_KEYS);
    const optimizer = o.optimizer ?? 'adamw';
    if (optimizer !== 'adamw') throw rangeError(where, `optimizer must be 'adamw', got ${describe(optimizer)}`);
    if (o.lr !== undefined && typeof o.lr !== 'number') throw typeError(where, `lr must be a number, got ${describe(o.lr)}`);
    const betas = o.betas ?? [0.9, 0.999];
    if (!Array.isArray(betas) || betas.length !== 2) throw typeError(where, `betas must be [beta1, beta2], got ${describe(betas)}`);
    this.options = Object.freeze({
      optimizer,
      lr: checkNumber(where, 'lr', o.lr ?? 1e-3, { min: 0 }),
      betas: [
        checkNumber(where, 'betas[0]', betas[0], { min: 0, max: 1, maxExclusive: true }),
        checkNumber(where, 'betas[1]', betas[1], { min: 0, max: 1, maxExclusive: true }),
      ],
      eps: checkNumber(where, 'eps', o.eps ?? 1e-8, { min: 0, minExclusive: true }),
      weightDecay: checkNumber(where, 'weightDecay', o.weightDecay ?? 0.01, { min: 0 }),
      warmup: checkInt(where, 'warmup', o.warmup ?? 0, 0),
      clip: checkNumber(where, 'clip', o.clip ?? 1, { min: 0 }),
    });
    this.model = model;
    this.stopped = null;
    this._configure();
  }

  _configure(where = 'model.trainer', reset = true) {
    const m = this.model;
    const o = this.options;
    checkStatus(m._Module, where, m._Module.transformerConfigureOptimizer(m._live(where), {
      lr: o.lr, beta1: o.betas[0], beta2: o.betas[1], eps: o.eps, weightDecay: o.weightDecay, warmup: o.warmup, clip: o.clip,
    }));
    if (reset) m._Module.transformerResetOptimizer(m._handle);
  }

  /** Sets the base lr of the next steps (a schedule's), keeping the AdamW moments and step count. */
  setLearningRate(lr) {
    this.options = Object.freeze({ ...this.options, lr: checkNumber('trainer.setLearningRate', 'lr', lr, { min: 0 }) });
    this._configure('trainer.setLearningRate', false);
  }

  _run(where, fn, tokens, targets, options) {
    const m = this.model;
    const handle = m._live(where);
    const o = checkOptions(where, 'options', options);
    checkKeys(where, 'option', o, new Set(['lossMask']));
    if (targets === undefined) throw typeError(where, 'targets are missing: step(tokens, targets, { lossMask })');
    const { t, y, B, L } = m._batch(where, tokens, targets);
    const mask = toLossMask(where, o.lossMask, [B, L]);
    if (mask) {
      let sum = 0;
      for (let i = 0; i < mask.length; i++) {
        if (!(mask[i] >= 0) || !Number.isFinite(mask[i])) throw rangeError(where, `lossMask must hold finite numbers >= 0; lossMask[${i}] is ${mask[i]}`);
        sum += mask[i];
      }
      if (!(sum > 0)) throw rangeError(where, 'lossMask is all zeros: at least one position must count toward the loss');
    }
    const Module = m._Module;
    return withArena(Module, where, (arena) => {
      const r = Module[fn](handle, {
        batch: B, length: L, tokens: arena.fromI32(t.data), targets: arena.fromI32(y.data), lossMask: arena.fromF32(mask),
      });
      if (r.code === 3) {
        this.stopped = `${where}: ${Module.trainLastError().replace(/^[A-Za-z.]+: /, '')}`;
        throw new TrainingStoppedError(this.stopped);
      }
      checkStatus(Module, where, r.code);
      return r;
    });
  }

  /**
   * One training step (forward, backward, AdamW) in one wasm call.
   * @returns {{ loss: number, accuracy: number, sequenceAccuracy: number, gradNorm: number, lr: number, step: number }}
   */
  step(tokens, targets, options) {
    const r = this._run('trainer.step', 'transformerStep', tokens, targets, options);
    return { loss: r.loss, accuracy: r.accuracy, sequenceAccuracy: r.sequenceAccuracy, gradNorm: r.gradNorm, lr: r.lr, step: r.step };
  }

  /** Loss and accuracy without updating (dropout off). */
  evaluate(tokens, targets, options) {
    const r = this._run('trainer.evaluate', 'transformerEvaluate', tokens, targets, options);
    return { loss: r.loss, accuracy: r.accuracy, sequenceAccuracy: r.sequenceAccuracy };
  }

  /** Forgets the optimizer state (moments and step count) and a stop. */
  reset() {
    this.stopped = null;
    this._configure();
  }
}
