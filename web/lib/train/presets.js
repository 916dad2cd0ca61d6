// lab.transformer's config: the keys a user may pass and the presets its
// `architecture` names. The values are checked by the block graph's handle
// (web/lib/graph/transformer.js).
import { describe, rangeError, checkOptions } from '../errors.js';
import { checkKeys } from '../graph/transformer.js';
import { gpt2Preset } from '../model/families/gpt2.js';

const CONFIG_KEYS = new Set(['vocabSize', 'maxLength', 'embedDim', 'numHeads', 'numLayers', 'ffnDim', 'causal', 'positional', 'dropout', 'eps', 'seed',
  'architecture', 'prenorm', 'activation', 'tieEmbeddings', 'headBias',
  // the block graph's attention, norm and embedding fields (docs/training.md)
  'headDim', 'qkNorm', 'attnScale', 'attnSoftcap', 'finalSoftcap', 'slidingWindow', 'layerKinds', 'ropeLocalTheta',
  'rotaryDim', 'parallelResidual', 'sandwichNorm', 'embedScale', 'normBias', 'firstNorm1', 'gateBias']);

// architecture: 'gpt2' is GPT-2's block as its family table sets it
// (web/lib/model/families/gpt2.js: pre-LayerNorm with a final norm, gelu_new,
// the head tied to the token embedding, no head bias, learned positions,
// causal) with GPT-2's init, saved with GPT-2's names by model.save().
export const TRANSFORMER_PRESETS = {
  default: {},
  gpt2: gpt2Preset(),
};

/** lab.transformer's config with its keys checked and its preset's fields under the user's. */
export function presetConfig(config) {
  const where = 'transformer';
  const c0 = checkOptions(where, 'config', config);
  checkKeys(where, 'config key', c0, CONFIG_KEYS);
  const architecture = c0.architecture ?? 'default';
  if (typeof architecture !== 'string' || !Object.hasOwn(TRANSFORMER_PRESETS, architecture)) {
    throw rangeError(where, `architecture must be 'default' or 'gpt2', got ${describe(architecture)}`);
  }
  return { ...TRANSFORMER_PRESETS[architecture], ...c0, architecture };
}
