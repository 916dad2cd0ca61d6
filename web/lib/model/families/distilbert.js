// DistilBERT (transformers' DistilBertModel / DistilBertForMaskedLM,
// models/distilbert/modeling_distilbert.py): BERT's post-LN encoder
// (bert.js) under its own names and config.json keys.
//   Embeddings        word + position (0 … L-1), no token types, then
//                     LayerNorm(eps 1e-12)
//   TransformerBlock  sa_layer_norm(attention(x) + x), then
//                     output_layer_norm(ffn(h) + h), every LayerNorm eps 1e-12
//                     (fixed in the modeling code, no config key)
//   the MLM head      vocab_projector(vocab_layer_norm(activation(
//                     vocab_transform(h)))), vocab_projector tied to the word
//                     embeddings (tie_word_embeddings, default true; the
//                     file need not hold vocab_projector.weight)
// sinusoidal_pos_embds: true only decides how transformers initialises the
// position table; the table is a parameter that save_pretrained writes and
// from_pretrained loads over the initial values, so the file's table is the
// model's either way and is read as a learned one.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, configValue, int, divisible } from './config-keys.js';
import { encoderCore, bertLayers, lnTensors, mlmHeadTensors } from './bert.js';

/** config.json keys (DistilBertConfig). */
const KEYS = {
  numLayers: ['n_layers'],
  numHeads: ['n_heads'],
  embedDim: ['dim'],
  ffnDim: ['hidden_dim'],
  vocabSize: ['vocab_size'],
  maxPositions: ['max_position_embeddings'],
  activation: ['activation'],
  sinusoidal: ['sinusoidal_pos_embds'],
};
/** The names of one layer under its prefix `transformer.layer.<l>.`. */
const LAYER = {
  q: 'attention.q_lin', k: 'attention.k_lin', v: 'attention.v_lin', o: 'attention.out_lin',
  norm1: 'sa_layer_norm', fc: 'ffn.lin1', proj: 'ffn.lin2', norm2: 'output_layer_norm',
};
const layerPrefix = (l) => `transformer.layer.${l}.`;
/** The MLM head's first tensor: its presence makes a DistilBertForMaskedLM. */
const MLM_DENSE = 'vocab_transform';
/** DistilBERT's LayerNorms: nn.LayerNorm(dim, eps=1e-12) everywhere. */
const EPS = 1e-12;

export const distilbert = {
  keys: KEYS,
  prefixes: ['distilbert.', ''],
  savePrefix: 'distilbert.',
  ignore: [/^(distilbert\.)?embeddings\.position_ids$/, /^vocab_projector\.weight$/],
  config(hf, names) {
    /** @type {any} */
    const c = {
      numLayers: int(hf, KEYS.numLayers, { max: 256 }),
      numHeads: int(hf, KEYS.numHeads),
      embedDim: int(hf, KEYS.embedDim),
      ffnDim: int(hf, KEYS.ffnDim),
      vocabSize: int(hf, KEYS.vocabSize, { min: 2 }),
      maxPositions: int(hf, KEYS.maxPositions),
      eps: EPS,
      typeVocab: 0,
    };
    c.numKvHeads = c.numHeads;
    divisible(c);
    // The FFN and the MLM head both use config.activation; the block graph's
    // MLM head is erf GELU.
    const act = configValue(hf, KEYS.activation, 'gelu');
    if (act !== 'gelu') throw rangeError(WHERE, `config.json activation ${describe(act)} is not supported for distilbert; allowed: gelu`);
    const sin = own(hf, KEYS.sinusoidal[0]);
    if (sin !== undefined && typeof sin !== 'boolean') throw rangeError(WHERE, `config.json sinusoidal_pos_embds must be true or false, got ${describe(sin)}`);
    if (own(hf, 'tie_word_embeddings') === false) {
      throw rangeError(WHERE, 'config.json tie_word_embeddings: false is not supported for distilbert (the MLM head is tied to the word embeddings); allowed: true');
    }
    c.core = encoderCore(c, names.has(`${MLM_DENSE}.weight`));
    c.maskToken = '[MASK]';
    return c;
  },
  tensors(c) {
    const E = c.embedDim;
    const list = [
      { file: 'embeddings.word_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      { file: 'embeddings.position_embeddings.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
      ...lnTensors(c, 'embeddings.LayerNorm', 'embed_norm'),
      ...bertLayers(c, layerPrefix, LAYER),
    ];
    if (c.core.mlmHead) {
      list.push(...mlmHeadTensors(c, { dense: MLM_DENSE, norm: 'vocab_layer_norm', bias: { file: 'vocab_projector.bias' } }));
    }
    return list;
  },
};
