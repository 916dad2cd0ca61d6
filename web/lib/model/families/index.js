// The family tables (llama.cpp's LLM_TENSOR_NAMES, transformers.js's
// getNormalizedConfig), one file each: gpt2.js, llama.js, qwen2.js, bert.js,
// and the decoders of issue 32: qwen3.js, mistral.js, gemma.js, gemma2.js,
// gemma3-text.js, phi3.js (over decoder.js, Llama's names with head_dim,
// q/k norms, four norms and fused projections; decoder-gguf.js their GGUF
// names), gpt-neox.js, gpt-neo.js. Each maps
// its Hugging Face config.json keys and tensor names onto the one block graph
// of the core (src/train/transformer_graph.cpp, TransformerConfig in
// src/train/train.h). A new family costs one file and one line below.
//
//   config(hf, names) → the normalised config: numLayers (N), numHeads (H),
//                  numKvHeads (Hkv), embedDim (E), ffnDim (F), vocabSize (V),
//                  maxPositions, eps, ropeTheta, headDim (D), plus `core`:
//                  the block graph's architecture fields (a field the
//                  family does not use is left out: the core's default)
//   tensors(c)   → [{ file, op, to, shape }]: every tensor the file must
//                  hold, and where it goes; `op` is a layout op of layout.js
//                  (copy, transpose, split, split-heads, rows-from,
//                  rope-unpermute, split-rows, add-one), defined once for the
//                  core, the GPU and the file; `why` says how config.json
//                  implies the shape
//   withFileDtypes(c, dtypeOf)  optional: the fields that follow the file's
//                  dtypes (Gemma's embedding scale), after the plan
//   ignore       names a file may hold that the model does not use
//   keys         the config.json keys the family reads
//   layerFormat  the per-layer state-dict format ('hf-<family>') of
//                web/lib/io/state-dict-formats.js, over the same names
//   gguf         (optional) llama.cpp's metadata keys and tensor names of
//                the same config and tensors, and what its converter
//                rearranged (families/gguf.js)
// This folder is a room below the weight files (web/lib/io), which read the
// layer formats from here: it imports errors.js and itself only.
import { rangeError, typeError, describe } from '../../errors.js';
import { WHERE, own, STANDARD_KEYS } from './config-keys.js';
import { gpt2 } from './gpt2.js';
import { llama } from './llama.js';
import { qwen2 } from './qwen2.js';
import { bert } from './bert.js';
import { distilbert } from './distilbert.js';
import { roberta } from './roberta.js';
import { xlmRoberta } from './xlm-roberta.js';
import { modernbert } from './modernbert.js';
import { qwen3 } from './qwen3.js';
import { mistral } from './mistral.js';
import { gemma } from './gemma.js';
import { gemma2 } from './gemma2.js';
import { gemma3Text } from './gemma3-text.js';
import { phi3 } from './phi3.js';
import { gptNeox } from './gpt-neox.js';
import { gptNeo } from './gpt-neo.js';
import { marian } from './marian.js';
import { bart } from './bart.js';
import { t5 } from './t5.js';

export { own, configValue, int, num, divisible, standardSizes, blocks, STANDARD_KEYS } from './config-keys.js';
export { LAYOUT_OPS, layoutOp } from './layout.js';
import { ggufFamily as ggufFamilyOf, ggufArchitectures, ggufViewOf as ggufViewOfFamilies } from './gguf.js';

export const FAMILIES = {
  gpt2, llama, qwen2, bert, qwen3, mistral, gemma, gemma2, gemma3_text: gemma3Text, phi3, gpt_neox: gptNeox, gpt_neo: gptNeo,
};

// The encoders over bert.js's post-LN block graph (issue 34).
Object.assign(FAMILIES, { distilbert, roberta, 'xlm-roberta': xlmRoberta, modernbert });
// The encoder-decoders over seq2seq.js and t5.js: an encoder graph and a
// decoder graph with cross-attention (issue 34 item 2).
Object.assign(FAMILIES, { marian, bart, t5 });

export const SUPPORTED = Object.freeze(Object.keys(FAMILIES));

/**
 * A GGUF file's family, from general.architecture: { type, arch, table (the
 * GGUF view of the family table), hfConfig (the config.json its metadata
 * stands for) }, or a clear Error that names the supported architectures.
 * @param {Map<string, unknown>} metadata @param {Set<string>} names the file's tensor names
 */
export function ggufFamily(metadata, names) {
  return ggufFamilyOf(FAMILIES, metadata, names);
}

/** The GGUF view of a model type's family (families/gguf.js ggufViewOf), or null. */
export function ggufView(type) {
  return ggufViewOfFamilies(FAMILIES, type);
}

/** The general.architecture values that load (those of the families with a gguf section). */
export function ggufSupported() {
  return [...ggufArchitectures(FAMILIES).keys()];
}

/** The per-layer state-dict formats of the families, in io's order: 'hf-bert', 'hf-gpt2', 'hf-llama'. */
export const LAYER_FORMATS = { 'hf-bert': bert.layerFormat, 'hf-gpt2': gpt2.layerFormat, 'hf-llama': llama.layerFormat };

/**
 * The config.json keys of the attention's head counts and RoPE base, over
 * every family (transformers' standard names first), for readers that only
 * need those (the page's readConfig).
 */
export const ATTENTION_KEYS = Object.freeze({
  numHeads: [...new Set([...STANDARD_KEYS.numHeads, ...gpt2.keys.numHeads, ...gptNeo.keys.numHeads])],
  numKvHeads: llama.keys.numKvHeads,
  ropeTheta: [...new Set([...llama.keys.ropeTheta, ...gptNeox.keys.ropeTheta])],
});

/** The architecture table for a config.json's model_type, or a clear Error. */
export function architectureOf(hf) {
  if (hf === null || typeof hf !== 'object' || Array.isArray(hf)) {
    throw typeError(WHERE, `config must be the parsed config.json (an object), got ${describe(hf)}`);
  }
  const type = own(hf, 'model_type');
  if (type === undefined) throw rangeError(WHERE, `config.json has no "model_type"; supported: ${SUPPORTED.join(', ')}`);
  if (typeof type !== 'string' || !Object.hasOwn(FAMILIES, type)) {
    throw rangeError(WHERE, `model_type ${describe(type)} is not supported; supported: ${SUPPORTED.join(', ')}`);
  }
  return { type, arch: FAMILIES[type] };
}
