// Gemma 2 (transformers' Gemma2ForCausalLM, models/gemma2/modeling_gemma2.py,
// configuration_gemma2.py): Gemma's table (gemma.js: x·(1 + w) norms, the
// embedding scale, GeGLU, head_dim, tied) with
//   - Gemma2Attention.scaling = query_pre_attn_scalar^-0.5 (default 256);
//   - attn_logit_softcapping (default 50.0): scores c·tanh(s/c) after the
//     scale, before the mask; final_logit_softcapping (default 30.0) on the
//     logits; null turns either off;
//   - layer_types (default: "sliding_attention" when (i + 1) % 2, layers 0,
//     2, …) with sliding_window (default 4096);
//   - Gemma2DecoderLayer's four norms: input_layernorm, post_attention_layernorm
//     on the attention output, pre_feedforward_layernorm and
//     post_feedforward_layernorm around the MLP (sandwichNorm).
// Gemma2MLP reads hidden_activation (default gelu_pytorch_tanh).
import { num } from './config-keys.js';
import {
  DECODER_TABLE, DECODER_KEYS, decoderSizes, decoderCore, decoderTensors, ropeBase, activationOf, tiedOf, flagOf,
  refuseBidirectional, gemmaEmbedScale, roundToDtype, optionalPositive, layerKindsOf, windowFields, windowOf,
} from './decoder.js';
import { decoderGguf, gemmaQueryScalar } from './decoder-gguf.js';
import { GEGLU } from './gemma.js';

/**
 * What Gemma 2 and Gemma 3 share: sizes, the score scale, the softcaps, the
 * four norms, the embedding scale, GeGLU; layer i is sliding when
 * (i + 1) % pattern unless layer_types says; returns { c, kinds }.
 */
export function gemma2Like(hf, family, { softcaps, pattern, ropeFallback }) {
  const c = decoderSizes(hf, family, { eps: 1e-6, headDim: 256 });
  refuseBidirectional(hf, family);
  const scalar = num(hf, ['query_pre_attn_scalar'], 256);
  const attnSoftcap = optionalPositive(hf, 'attn_logit_softcapping', softcaps[0]);
  const finalSoftcap = optionalPositive(hf, 'final_logit_softcapping', softcaps[1]);
  const kinds = layerKindsOf(hf, family, c.numLayers, (i) => (i + 1) % pattern !== 0);
  c.ropeTheta = ropeBase(hf, family, { fallback: ropeFallback, layerType: 'full_attention' });
  const bias = flagOf(hf, 'attention_bias', false);
  c.core = {
    ...decoderCore(c, { activation: activationOf(hf, family, ['hidden_activation'], GEGLU, 'gelu_pytorch_tanh'), qkvBias: bias, outBias: bias, tieEmbeddings: tiedOf(hf, true) }),
    embedScale: roundToDtype(Math.sqrt(c.embedDim), 'F32'),
    attnScale: scalar ** -0.5,
    ...(attnSoftcap ? { attnSoftcap } : {}),
    ...(finalSoftcap ? { finalSoftcap } : {}),
    sandwichNorm: true,
    ...windowFields(kinds, windowOf(hf, 'sliding_window', 4096), family),
  };
  return { c, kinds };
}

const FAMILY = 'gemma2';

export const gemma2 = {
  ...DECODER_TABLE,
  keys: {
    ...DECODER_KEYS, activation: ['hidden_activation'], attentionBias: ['attention_bias'], queryPreAttnScalar: ['query_pre_attn_scalar'],
    attnSoftcap: ['attn_logit_softcapping'], finalSoftcap: ['final_logit_softcapping'], slidingWindow: ['sliding_window'], layerTypes: ['layer_types'],
  },
  config(hf) {
    return gemma2Like(hf, FAMILY, { softcaps: [50, 30], pattern: 2, ropeFallback: 10000 }).c;
  },
  withFileDtypes: gemmaEmbedScale,
  // GGUF: convert_hf_to_gguf.py's Gemma2Model writes Gemma's keys (gemma.js)
  // and attn_logit_softcapping, final_logit_softcapping and
  // attention.sliding_window; the norms hold 1 + w. llama.cpp's gemma2 reads
  // the layers as alternating (set_swa_pattern(2): layer 0 sliding, as
  // layer_types' default) and the window 4096 when absent; the file has no
  // query_pre_attn_scalar, which llama.cpp takes as head_dim (or E/H for the
  // 46-layer 27B: gemmaQueryScalar).
  gguf: decoderGguf('gemma2', {
    sandwich: true,
    applied: ['add-one'],
    config: { attn_logit_softcapping: 'attn_logit_softcapping', final_logit_softcapping: 'final_logit_softcapping', sliding_window: 'attention.sliding_window' },
    derive: (meta, names, { D, E, H }) => ({ query_pre_attn_scalar: gemmaQueryScalar(meta, D, E, H, 46) }),
  }),
  tensors: (c) => decoderTensors(c, { normOp: 'add-one' }),
};
