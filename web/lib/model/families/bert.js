// BERT (transformers' BertModel / BertForMaskedLM): config.json keys, tensor
// names and layouts onto the block graph, and the per-layer state-dict
// format 'hf-bert'.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, configValue, int, num, divisible, standardSizes, blocks } from './config-keys.js';
import { t, norm, POST, anchorOf } from './layer-format.js';

/** config.json keys beyond the standard sizes. */
const KEYS = {
  eps: ['layer_norm_eps'],
  typeVocab: ['type_vocab_size'],
  activation: ['hidden_act'],
};
/** The names of one layer under its prefix `encoder.layer.<l>.`. */
export const LAYER = {
  attention: 'attention', q: 'attention.self.query', k: 'attention.self.key', v: 'attention.self.value',
  o: 'attention.output.dense', norm1: 'attention.output.LayerNorm',
  fc: 'intermediate.dense', proj: 'output.dense', norm2: 'output.LayerNorm',
};
export const layerPrefix = (l) => `encoder.layer.${l}.`;
/** The MLM head's first tensor: its presence makes a BertForMaskedLM. */
const MLM_DENSE = 'cls.predictions.transform.dense';

/** A LayerNorm's weight and bias (older checkpoints: gamma/beta) into the block graph's `to`. */
export function lnTensors(c, file, to) {
  const E = c.embedDim;
  return [
    { file: `${file}.weight`, alias: `${file}.gamma`, op: 'copy', to: [`${to}.weight`], shape: [E] },
    { file: `${file}.bias`, alias: `${file}.beta`, op: 'copy', to: [`${to}.bias`], shape: [E] },
  ];
}

/** A torch Linear's weight [out, in] and bias [out] into the block graph's w and bias. */
export function linTensors(file, w, bias, shape) {
  return [
    { file: `${file}.weight`, op: 'copy', to: [w], shape },
    { file: `${file}.bias`, op: 'copy', to: [bias], shape: [shape[0]] },
  ];
}

/**
 * A post-LN encoder's layers (BERT's BertLayer and the encoders built like
 * it): `prefix(l)` the file prefix of layer l, `names` its tensors' names
 * { q, k, v, o, norm1, fc, proj, norm2 }.
 */
export function bertLayers(c, prefix, names) {
  const E = c.embedDim, F = c.ffnDim;
  const L = names;
  return blocks(c.numLayers, (l, b) => {
    const p = prefix(l);
    return [
      ...linTensors(`${p}${L.q}`, `${b}attn.wq`, `${b}attn.bq`, [E, E]),
      ...linTensors(`${p}${L.k}`, `${b}attn.wk`, `${b}attn.bk`, [E, E]),
      ...linTensors(`${p}${L.v}`, `${b}attn.wv`, `${b}attn.bv`, [E, E]),
      ...linTensors(`${p}${L.o}`, `${b}attn.wo`, `${b}attn.bo`, [E, E]),
      ...lnTensors(c, `${p}${L.norm1}`, `${b}norm1`),
      ...linTensors(`${p}${L.fc}`, `${b}ffn.w1`, `${b}ffn.b1`, [F, E]),
      ...linTensors(`${p}${L.proj}`, `${b}ffn.w2`, `${b}ffn.b2`, [E, F]),
      ...lnTensors(c, `${p}${L.norm2}`, `${b}norm2`),
    ];
  });
}

/**
 * The MLM head (the block graph's mlmHead: dense → erf GELU → LayerNorm →
 * the tied decoder + bias), its file names outside the model's prefix:
 * { dense, norm, bias: { file, alias? } }.
 */
export function mlmHeadTensors(c, { dense, norm: n, bias }) {
  const E = c.embedDim;
  return [
    ...linTensors(dense, 'mlm.dense.weight', 'mlm.dense.bias', [E, E]),
    ...lnTensors(c, n, 'mlm.norm'),
    { ...bias, op: 'copy', to: ['head.bias'], shape: [c.vocabSize] },
  ].map((t) => ({ ...t, absolute: true }));
}

/** The block graph's fields of a post-LN BERT-style encoder (typeVocab 0: no token types). */
export function encoderCore(c, mlm) {
  return {
    positional: 'learned', causal: false, prenorm: false, norm: 'layernorm', activation: 'gelu',
    typeVocab: c.typeVocab, embedNorm: true, mlmHead: mlm, hasHead: mlm, tieEmbeddings: true, headBias: true,
  };
}

export const bert = {
  keys: KEYS,
  prefixes: ['bert.', ''],
  savePrefix: 'bert.',
  ignore: [/^(bert\.)?pooler\./, /^(bert\.)?embeddings\.position_ids$/, /^cls\.predictions\.decoder\.weight$/, /^cls\.seq_relationship\./],
  config(hf, names, type = 'bert') {
    /** @type {any} */
    const c = {
      ...standardSizes(hf),
      eps: num(hf, KEYS.eps, 1e-12),
      typeVocab: int(hf, KEYS.typeVocab, { fallback: 2 }),
    };
    c.numKvHeads = c.numHeads;
    divisible(c);
    const act = configValue(hf, KEYS.activation, 'gelu');
    if (act !== 'gelu') throw rangeError(WHERE, `config.json hidden_act ${describe(act)} is not supported for ${type}; allowed: gelu`);
    const pe = own(hf, 'position_embedding_type');
    if (pe !== undefined && pe !== 'absolute') throw rangeError(WHERE, `config.json position_embedding_type ${describe(pe)} is not supported; allowed: absolute`);
    const mlm = names.has(`${MLM_DENSE}.weight`);
    c.core = encoderCore(c, mlm);
    // model.fillMask's mask token
    c.maskToken = '[MASK]';
    return c;
  },
  tensors(c) {
    const list = [
      { file: 'embeddings.word_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, c.embedDim] },
      { file: 'embeddings.position_embeddings.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, c.embedDim] },
      { file: 'embeddings.token_type_embeddings.weight', op: 'copy', to: ['type.weight'], shape: [c.typeVocab, c.embedDim] },
      ...lnTensors(c, 'embeddings.LayerNorm', 'embed_norm'),
      ...bertLayers(c, layerPrefix, LAYER),
    ];
    if (c.core.mlmHead) {
      list.push(...mlmHeadTensors(c, {
        // The head's tensors sit outside the `bert.` prefix.
        dense: MLM_DENSE, norm: 'cls.predictions.transform.LayerNorm',
        bias: { file: 'cls.predictions.bias', alias: 'cls.predictions.decoder.bias' },
      }));
    }
    return list;
  },

  // The per-layer state-dict format 'hf-bert': transformers BertLayer's
  // BertSelfAttention + BertSelfOutput, LayerNorm(dense(context) + x), eps
  // 1e-12 (post-LN, as selfAttentionLayer).
  layerFormat: {
    anchor: anchorOf(`${LAYER.q}.weight`),
    starts: (p) => [`${p}${LAYER.attention}.`],
    shapes({ dim }, p) {
      const E = dim(`${p}${LAYER.q}.weight`, 1);
      return { embedDim: E, kdim: E, vdim: E, bias: true, numHeads: null, norm: POST };
    },
    read({ need, get }, p, c) {
      const E = c.embedDim;
      const w = {};
      for (const [k, n] of [['q', LAYER.q], ['k', LAYER.k], ['v', LAYER.v]]) {
        w[`w${k}`] = need(`${p}${n}.weight`, [E, E]);
        w[`b${k}`] = need(`${p}${n}.bias`, [E]);
      }
      w.wo = need(`${p}${LAYER.o}.weight`, [E, E]);
      w.bo = need(`${p}${LAYER.o}.bias`, [E]);
      // Older checkpoints name the LayerNorm parameters gamma/beta.
      const n1 = `${p}${LAYER.norm1}`;
      const g = get(`${n1}.weight`) ? 'weight' : 'gamma';
      const b = g === 'weight' ? 'bias' : 'beta';
      return { weights: w, norm: norm(need(`${n1}.${g}`, [E]), need(`${n1}.${b}`, [E]), 1e-12, 'post') };
    },
    write(w, c, p, n) {
      const E = c.embedDim;
      const out = {};
      for (const [k, nm] of [['q', LAYER.q], ['k', LAYER.k], ['v', LAYER.v]]) {
        out[`${p}${nm}.weight`] = t(w[`w${k}`].data, [E, E]);
        out[`${p}${nm}.bias`] = t(w[`b${k}`].data, [E]);
      }
      out[`${p}${LAYER.o}.weight`] = t(w.wo.data, [E, E]);
      out[`${p}${LAYER.o}.bias`] = t(w.bo.data, [E]);
      if (n) {
        out[`${p}${LAYER.norm1}.weight`] = t(n.gamma.data, [E]);
        out[`${p}${LAYER.norm1}.bias`] = t(n.beta.data, [E]);
      }
      return out;
    },
  },
};
