// The key readers every family table reads its config.json with. Lookups
// read own properties only, so `__proto__` or `constructor` in a config.json
// changes nothing.
import { rangeError, describe } from '../../errors.js';

export const WHERE = 'loadModel';

export function own(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** The first of `keys` present in the config; `fallback` (a value) when none is, else an Error. */
export function configValue(hf, keys, fallback) {
  for (const k of keys) {
    const v = own(hf, k);
    if (v !== undefined && v !== null) return v;
  }
  if (fallback !== undefined) return fallback;
  throw rangeError(WHERE, `config.json has no ${keys.map((k) => JSON.stringify(k)).join(' or ')} (model_type ${JSON.stringify(own(hf, 'model_type'))} needs it)`);
}

// Bounds far above any real model, so that a damaged config.json cannot
// make the tables loop over 2^53 layers before the size check refuses it.
const MAX_INT = 2 ** 24;

/**
 * @param {object} hf
 * @param {string[]} keys
 * @param {{ min?: number, max?: number, fallback?: number }} [options]
 */
export function int(hf, keys, { min = 1, max = MAX_INT, fallback = undefined } = {}) {
  const v = configValue(hf, keys, fallback);
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw rangeError(WHERE, `config.json ${JSON.stringify(keys[0])} must be an integer in [${min}, ${max}], got ${describe(v)}`);
  }
  return v;
}

export function num(hf, keys, fallback) {
  const v = configValue(hf, keys, fallback);
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw rangeError(WHERE, `config.json ${JSON.stringify(keys[0])} must be a finite number > 0, got ${describe(v)}`);
  }
  return v;
}

export function divisible(c) {
  if (c.embedDim % c.numHeads !== 0) {
    throw rangeError(WHERE, `config.json: the hidden size (${c.embedDim}) must be divisible by the head count (${c.numHeads})`);
  }
  if (c.numHeads % c.numKvHeads !== 0) {
    throw rangeError(WHERE, `config.json: num_key_value_heads (${c.numKvHeads}) must divide num_attention_heads (${c.numHeads})`);
  }
}

/** transformers' standard key names (llama, bert; GPT-2 has its own, gpt2.js). */
export const STANDARD_KEYS = {
  numLayers: ['num_hidden_layers'],
  numHeads: ['num_attention_heads'],
  embedDim: ['hidden_size'],
  ffnDim: ['intermediate_size'],
  vocabSize: ['vocab_size'],
  maxPositions: ['max_position_embeddings'],
};

/** The sizes under transformers' standard key names. */
export function standardSizes(hf) {
  return {
    numLayers: int(hf, STANDARD_KEYS.numLayers, { max: 256 }),
    numHeads: int(hf, STANDARD_KEYS.numHeads),
    embedDim: int(hf, STANDARD_KEYS.embedDim),
    ffnDim: int(hf, STANDARD_KEYS.ffnDim),
    vocabSize: int(hf, STANDARD_KEYS.vocabSize, { min: 2 }),
    maxPositions: int(hf, STANDARD_KEYS.maxPositions),
  };
}

/**
 * The sizes of a GPT-2-style config (gpt2, gpt_neo) under the family's own
 * key lists: multi-head attention (Hkv = H), F defaulting to 4·E, E divisible
 * by H (`divisible`), LayerNorm eps default 1e-5.
 */
export function gpt2StyleSizes(hf, keys) {
  const c = {
    numLayers: int(hf, keys.numLayers, { max: 256 }),
    numHeads: int(hf, keys.numHeads),
    embedDim: int(hf, keys.embedDim),
    vocabSize: int(hf, keys.vocabSize, { min: 2 }),
    maxPositions: int(hf, keys.maxPositions),
    eps: num(hf, keys.eps, 1e-5),
  };
  c.numKvHeads = c.numHeads;
  c.ffnDim = int(hf, keys.ffnDim, { fallback: 4 * c.embedDim });
  divisible(c);
  return c;
}

/** Per-block tensors: (l, b) => [{ file, op, to, shape }], b the block graph's 'blocks.l.' prefix. */
export function blocks(n, perLayer) {
  const out = [];
  for (let l = 0; l < n; l++) out.push(...perLayer(l, `blocks.${l}.`));
  return out;
}
