// ModernBERT (transformers' ModernBertModel / ModernBertForMaskedLM,
// models/modernbert/modeling_modernbert.py and configuration_modernbert.py;
// answerdotai/ModernBERT-base and -large) onto the block graph, in eval mode
// with eager attention:
//   Embeddings    norm(tok_embeddings[ids]): no positions (RoPE), no token
//                 types; nn.LayerNorm(eps=norm_eps, bias=norm_bias)
//   EncoderLayer  pre-norm: h = x + attn(attn_norm(x)),
//                 x' = h + mlp(mlp_norm(h)); layer 0's attn_norm is
//                 nn.Identity (firstNorm1 false)
//   Attention     Wqkv [3·E, E] viewed as [L, 3, H, D]: rows q | k | v
//                 (split-rows), rotate_half RoPE, scores ·D^-0.5, Wo;
//                 biases attention_bias. Layer l is local when
//                 l % global_attn_every_n_layers != 0: its mask keeps
//                 |i − j| <= local_attention // 2 (_update_attention_mask's
//                 sliding_window_mask), the block graph's bidirectional
//                 slidingWindow local_attention // 2 + 1; RoPE base
//                 global_rope_theta (default 160000) on global layers,
//                 local_rope_theta (default 10000; null: the global base,
//                 as transformers v4) on local ones; transformers >= 5's
//                 rope_parameters.{full,sliding}_attention.rope_theta too
//   MLP           input, gate = Wi(x).chunk(2): Wo(act(input) · gate), so
//                 Wi's first intermediate_size rows are the activated half
//                 (the block graph's gate ffn.wg) and the second the linear
//                 one (ffn.w1); act = hidden_activation (gelu → geglu,
//                 gelu_pytorch_tanh / gelu_new → geglu_tanh); biases
//                 mlp_bias (Wi's bias splits the same way: ffn.bg, ffn.b1)
//   final_norm    after the last layer (the hidden state reported)
//   MLM head      decoder(head.norm(act(head.dense(h)))): head.dense bias
//                 classifier_bias (mlmBias), act classifier_activation (the
//                 block graph's erf gelu: "gelu" only), head.norm norm_bias;
//                 decoder tied to tok_embeddings (tie_word_embeddings,
//                 default true; decoder.weight, when the file holds it, is
//                 the tied copy), decoder.bias when decoder_bias (headBias)
// Every LayerNorm has norm_eps and no bias unless norm_bias (normBias).
// transformers' output_hidden_states ends with the last layer's output
// before final_norm; model.forward's hiddenStates 'all' ends with the last
// hidden state after it, as for every family.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, int, num, standardSizes, divisible, blocks } from './config-keys.js';
import { activationOf, flagOf, ropeBase, layerKindsOf } from './decoder.js';

const FAMILY = 'modernbert';
/** config.json keys beyond the standard sizes (ModernBertConfig). */
const KEYS = {
  eps: ['norm_eps'],
  activation: ['hidden_activation'],
  headActivation: ['classifier_activation'],
  normBias: ['norm_bias'],
  attentionBias: ['attention_bias'],
  mlpBias: ['mlp_bias'],
  classifierBias: ['classifier_bias'],
  decoderBias: ['decoder_bias'],
  everyN: ['global_attn_every_n_layers'],
  localAttention: ['local_attention'],
  ropeTheta: ['global_rope_theta'],
  ropeLocalTheta: ['local_rope_theta'],
  layerTypes: ['layer_types'],
};
/** hidden_activation (ACT2FN) → the block graph's GLU activation. */
const GEGLU = { gelu: 'geglu', gelu_pytorch_tanh: 'geglu_tanh', gelu_new: 'geglu_tanh' };
/** The MLM head's first tensor: its presence makes a ModernBertForMaskedLM. */
const MLM_DENSE = 'head.dense';

/** A LayerNorm's weight (and its bias with norm_bias). */
function normTensors(c, file, to) {
  const E = c.embedDim;
  const t = [{ file: `${file}.weight`, op: 'copy', to: [`${to}.weight`], shape: [E] }];
  if (c.core.normBias) t.push({ file: `${file}.bias`, op: 'copy', to: [`${to}.bias`], shape: [E] });
  return t;
}

/** The layer kinds: local ('l') when l % global_attn_every_n_layers != 0 (ModernBertAttention). */
function kindsOf(hf, n) {
  const every = int(hf, KEYS.everyN, { fallback: 3 });
  const kinds = Array.from({ length: n }, (_, l) => (l % every !== 0 ? 'l' : 'g')).join('');
  // transformers >= 5 writes layer_types as well; the attention's window
  // still follows global_attn_every_n_layers, so the two must agree.
  const types = own(hf, 'layer_types');
  if (types !== undefined && types !== null) {
    const given = layerKindsOf(hf, FAMILY, n, () => false);
    if (given !== kinds) {
      throw rangeError(WHERE, `config.json layer_types (${describe(types)}) disagrees with global_attn_every_n_layers ${every}, which decides modernbert's local layers (${[...kinds].map((k) => (k === 'l' ? 'sliding_attention' : 'full_attention')).join(', ')})`);
    }
  }
  return kinds;
}

export const modernbert = {
  keys: KEYS,
  prefixes: ['model.', ''],
  savePrefix: 'model.',
  ignore: [/^decoder\.weight$/],
  config(hf, names) {
    /** @type {any} */
    const c = { ...standardSizes(hf), eps: num(hf, KEYS.eps, 1e-5) };
    c.numKvHeads = c.numHeads;
    divisible(c);
    if ((c.embedDim / c.numHeads) % 2 !== 0) {
      throw rangeError(WHERE, `config.json: the head dim hidden_size / num_attention_heads (${c.embedDim / c.numHeads}) must be even for RoPE`);
    }
    const activation = activationOf(hf, FAMILY, KEYS.activation, GEGLU, 'gelu');
    const headAct = own(hf, 'classifier_activation') ?? 'gelu';
    if (headAct !== 'gelu') {
      throw rangeError(WHERE, `config.json classifier_activation ${describe(headAct)} is not supported for ${FAMILY} (the block graph's MLM head runs the erf GELU); allowed: gelu`);
    }
    const tied = flagOf(hf, 'tie_word_embeddings', true);
    const kinds = kindsOf(hf, c.numLayers);
    const local = kinds.includes('l');
    const localAttention = int(hf, KEYS.localAttention, { fallback: 128 });
    c.ropeTheta = ropeBase(hf, FAMILY, { keys: KEYS.ropeTheta, fallback: 160000, layerType: 'full_attention' });
    const mlm = names.has(`${MLM_DENSE}.weight`);
    const mlpBias = flagOf(hf, 'mlp_bias', false);
    c.core = {
      positional: 'rope', ropeTheta: c.ropeTheta, causal: false, prenorm: true, norm: 'layernorm', activation,
      embedNorm: true, firstNorm1: false, normBias: flagOf(hf, 'norm_bias', false),
      qkvBias: flagOf(hf, 'attention_bias', false), outBias: flagOf(hf, 'attention_bias', false),
      ffnBias: mlpBias, gateBias: mlpBias,
      mlmHead: mlm, hasHead: mlm, mlmBias: flagOf(hf, 'classifier_bias', false),
      tieEmbeddings: tied, headBias: flagOf(hf, 'decoder_bias', true),
    };
    if (local) {
      // |i − j| <= local_attention // 2, the bidirectional window's |i − j| < W
      c.core.slidingWindow = Math.floor(localAttention / 2) + 1;
      c.core.layerKinds = kinds;
      // local_rope_theta null: the global base (transformers v4's ModernBertAttention)
      const localTheta = own(hf, 'local_rope_theta') === null
        ? c.ropeTheta
        : ropeBase(hf, FAMILY, { keys: KEYS.ropeLocalTheta, fallback: 10000, layerType: 'sliding_attention' });
      if (localTheta !== c.ropeTheta) c.core.ropeLocalTheta = localTheta;
    }
    // model.fillMask's mask token
    c.maskToken = '[MASK]';
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim, k = c.core;
    const list = [
      { file: 'embeddings.tok_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      ...normTensors(c, 'embeddings.norm', 'embed_norm'),
      ...blocks(c.numLayers, (l, b) => {
        const p = `layers.${l}.`;
        const t = l === 0 ? [] : normTensors(c, `${p}attn_norm`, `${b}norm1`);
        const why = `3 × hidden_size ${E}`;
        t.push({ file: `${p}attn.Wqkv.weight`, op: 'split-rows', sizes: [E, E, E], to: [`${b}attn.wq`, `${b}attn.wk`, `${b}attn.wv`], shape: [3 * E, E], why });
        if (k.qkvBias) t.push({ file: `${p}attn.Wqkv.bias`, op: 'split-rows', sizes: [E, E, E], to: [`${b}attn.bq`, `${b}attn.bk`, `${b}attn.bv`], shape: [3 * E], why });
        t.push({ file: `${p}attn.Wo.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, E] });
        if (k.outBias) t.push({ file: `${p}attn.Wo.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] });
        t.push(...normTensors(c, `${p}mlp_norm`, `${b}norm2`));
        // chunk(2): the first half is act()'s input (the gate), the second the linear half
        const whyF = `2 × intermediate_size ${F}`;
        t.push({ file: `${p}mlp.Wi.weight`, op: 'split-rows', sizes: [F, F], to: [`${b}ffn.wg`, `${b}ffn.w1`], shape: [2 * F, E], why: whyF });
        if (k.ffnBias) t.push({ file: `${p}mlp.Wi.bias`, op: 'split-rows', sizes: [F, F], to: [`${b}ffn.bg`, `${b}ffn.b1`], shape: [2 * F], why: whyF });
        t.push({ file: `${p}mlp.Wo.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] });
        if (k.ffnBias) t.push({ file: `${p}mlp.Wo.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] });
        return t;
      }),
      ...normTensors(c, 'final_norm', 'final_norm'),
    ];
    if (k.mlmHead) {
      // The head's tensors sit outside the `model.` prefix.
      const head = [{ file: `${MLM_DENSE}.weight`, op: 'copy', to: ['mlm.dense.weight'], shape: [E, E] }];
      if (k.mlmBias) head.push({ file: `${MLM_DENSE}.bias`, op: 'copy', to: ['mlm.dense.bias'], shape: [E] });
      head.push(...normTensors(c, 'head.norm', 'mlm.norm'));
      if (!k.tieEmbeddings) head.push({ file: 'decoder.weight', op: 'copy', to: ['head.weight'], shape: [c.vocabSize, E] });
      if (k.headBias) head.push({ file: 'decoder.bias', op: 'copy', to: ['head.bias'], shape: [c.vocabSize] });
      list.push(...head.map((t) => ({ ...t, absolute: true })));
    }
    return list;
  },
};
