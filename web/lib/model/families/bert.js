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
const LAYER = {
  attention: 'attention', q: 'attention.self.query', k: 'attention.self.key', v: 'attention.self.value',
  o: 'attention.output.dense', norm1: 'attention.output.LayerNorm',
  fc: 'intermediate.dense', proj: 'output.dense', norm2: 'output.LayerNorm',
};
const layerPrefix = (l) => `encoder.layer.${l}.`;
/** The MLM head's first tensor: its presence makes a BertForMaskedLM. */
const MLM_DENSE = 'cls.predictions.transform.dense';

export const bert = {
  keys: KEYS,
  prefixes: ['bert.', ''],
  savePrefix: 'bert.',
  ignore: [/^(bert\.)?pooler\./, /^(bert\.)?embeddings\.position_ids$/, /^cls\.predictions\.decoder\.weight$/, /^cls\.seq_relationship\./],
  config(hf, names) {
    /** @type {any} */
    const c = {
      ...standardSizes(hf),
      eps: num(hf, KEYS.eps, 1e-12),
      typeVocab: int(hf, KEYS.typeVocab, { fallback: 2 }),
    };
    c.numKvHeads = c.numHeads;
    divisible(c);
    const act = configValue(hf, KEYS.activation, 'gelu');
    if (act !== 'gelu') throw rangeError(WHERE, `config.json hidden_act ${describe(act)} is not supported for bert; allowed: gelu`);
    const pe = own(hf, 'position_embedding_type');
    if (pe !== undefined && pe !== 'absolute') throw rangeError(WHERE, `config.json position_embedding_type ${describe(pe)} is not supported; allowed: absolute`);
    const mlm = names.has(`${MLM_DENSE}.weight`);
    c.core = {
      positional: 'learned', causal: false, prenorm: false, norm: 'layernorm', activation: 'gelu',
      typeVocab: c.typeVocab, embedNorm: true, mlmHead: mlm, hasHead: mlm, tieEmbeddings: true, headBias: true,
    };
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim;
    const L = LAYER;
    const ln = (file, to) => [
      { file: `${file}.weight`, alias: `${file}.gamma`, op: 'copy', to: [`${to}.weight`], shape: [E] },
      { file: `${file}.bias`, alias: `${file}.beta`, op: 'copy', to: [`${to}.bias`], shape: [E] },
    ];
    const lin = (file, w, bias, shape) => [
      { file: `${file}.weight`, op: 'copy', to: [w], shape },
      { file: `${file}.bias`, op: 'copy', to: [bias], shape: [shape[0]] },
    ];
    const list = [
      { file: 'embeddings.word_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      { file: 'embeddings.position_embeddings.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
      { file: 'embeddings.token_type_embeddings.weight', op: 'copy', to: ['type.weight'], shape: [c.typeVocab, E] },
      ...ln('embeddings.LayerNorm', 'embed_norm'),
      ...blocks(c.numLayers, (l, b) => {
        const p = layerPrefix(l);
        return [
          ...lin(`${p}${L.q}`, `${b}attn.wq`, `${b}attn.bq`, [E, E]),
          ...lin(`${p}${L.k}`, `${b}attn.wk`, `${b}attn.bk`, [E, E]),
          ...lin(`${p}${L.v}`, `${b}attn.wv`, `${b}attn.bv`, [E, E]),
          ...lin(`${p}${L.o}`, `${b}attn.wo`, `${b}attn.bo`, [E, E]),
          ...ln(`${p}${L.norm1}`, `${b}norm1`),
          ...lin(`${p}${L.fc}`, `${b}ffn.w1`, `${b}ffn.b1`, [F, E]),
          ...lin(`${p}${L.proj}`, `${b}ffn.w2`, `${b}ffn.b2`, [E, F]),
          ...ln(`${p}${L.norm2}`, `${b}norm2`),
        ];
      }),
    ];
    if (c.core.mlmHead) {
      list.push(
        // The head's tensors sit outside the `bert.` prefix.
        ...lin(MLM_DENSE, 'mlm.dense.weight', 'mlm.dense.bias', [E, E]).map((t) => ({ ...t, absolute: true })),
        ...ln('cls.predictions.transform.LayerNorm', 'mlm.norm').map((t) => ({ ...t, absolute: true })),
        { file: 'cls.predictions.bias', alias: 'cls.predictions.decoder.bias', op: 'copy', to: ['head.bias'], shape: [c.vocabSize], absolute: true },
      );
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
