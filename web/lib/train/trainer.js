// lab.transformer: the block graph's handle (web/lib/graph/transformer.js)
// with what training adds: trainer() (AdamW, one wasm call per step) and, for
// the 'gpt2' preset, save() as Hugging Face files (web/lib/model/save.js).
import { describe, typeError, rangeError, checkInt, checkNumber, checkOptions } from '../errors.js';
import { withArena, checkStatus } from '../graph/arena.js';
import { Transformer, checkKeys } from '../graph/transformer.js';
import { toLossMask } from '../graph/tokens.js';
import { saveModel, gpt2Config, gpt2Normalized } from '../model/save.js';
import { presetConfig } from './presets.js';

const TRAINER_KEYS = new Set(['optimizer', 'lr', 'betas', 'eps', 'weightDecay', 'warmup', 'clip']);

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

// The block graph's fields that GPT-2's files do not have, at their defaults.
const GRAPH_FIELD_DEFAULTS = {
  headDim: 0, qkNorm: false, attnScale: 0, attnSoftcap: 0, finalSoftcap: 0, slidingWindow: 0, layerKinds: '',
  ropeLocalTheta: 0, rotaryDim: 0, parallelResidual: false, sandwichNorm: false, embedScale: 1,
  normBias: true, firstNorm1: true, gateBias: false,
};

/** A model of lab.transformer: the block graph plus its trainer and GPT-2 save. */
export class TrainableTransformer extends Transformer {
  /** @param {object} Module the wasm module; @param {object} config lab.transformer's config (keys checked, preset merged here) */
  constructor(Module, config) {
    super(Module, presetConfig(config));
  }

  /** A trainer (AdamW). The model holds one optimizer state: a new trainer resets it. */
  trainer(options) {
    return new Trainer(this, options);
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
    // GPT-2's files have none of the block graph's newer fields (docs/training.md).
    const set = Object.keys(GRAPH_FIELD_DEFAULTS).filter((k) => this.config[k] !== undefined && this.config[k] !== GRAPH_FIELD_DEFAULTS[k]);
    if (this.config.activation === 'geglu' || this.config.activation === 'geglu_tanh') set.push('activation');
    if (set.length) {
      throw typeError(where, `save() writes GPT-2's Hugging Face files, which cannot express ${set.map((k) => `${k} ${JSON.stringify(this.config[k])}`).join(', ')}; use getWeights() and writeSafetensors()`);
    }
    const hfConfig = gpt2Config(this.config);
    return saveModel(where, this, { modelType: 'gpt2', hfConfig, c: gpt2Normalized(this.config), tokenizerJson: o.tokenizer ?? null }, o.dtype ?? 'F32');
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
