// Gemma 3's text model (model_type gemma3_text: transformers'
// Gemma3ForCausalLM, models/gemma3/modeling_gemma3.py, configuration_gemma3.py
// Gemma3TextConfig; gemma-3-270m, gemma-3-1b): Gemma 2's table (gemma2.js)
// with
//   - Gemma3Attention's q_norm and k_norm, Gemma3RMSNorm x·(1 + w) over
//     head_dim of each head's q and k, before RoPE (qkNorm, add-one);
//   - layer_types, else "sliding_attention" when (i + 1) %
//     sliding_window_pattern (default 6);
//   - RoPE base rope_local_base_freq (default 10000) on sliding layers
//     (Gemma3TextModel.rotary_emb_local) and rope_theta (default 1e6) on full
//     ones (ropeLocalTheta);
//   - no softcaps by default (attn_ and final_logit_softcapping null).
// rope_scaling (gemma-3-4b and larger: linear, factor 8, on the global
// layers) is refused by name; use_bidirectional_attention: true too.
import { int } from './config-keys.js';
import { DECODER_KEYS, DECODER_TABLE, decoderTensors, gemmaEmbedScale, ropeBase } from './decoder.js';
import { gemma2Like } from './gemma2.js';

const FAMILY = 'gemma3_text';

export const gemma3Text = {
  ...DECODER_TABLE,
  keys: {
    ...DECODER_KEYS, activation: ['hidden_activation'], attentionBias: ['attention_bias'], queryPreAttnScalar: ['query_pre_attn_scalar'],
    attnSoftcap: ['attn_logit_softcapping'], finalSoftcap: ['final_logit_softcapping'], slidingWindow: ['sliding_window'], layerTypes: ['layer_types'],
    slidingWindowPattern: ['sliding_window_pattern'], ropeLocalTheta: ['rope_local_base_freq'],
  },
  config(hf) {
    const pattern = int(hf, ['sliding_window_pattern'], { fallback: 6 });
    const { c, kinds } = gemma2Like(hf, FAMILY, { softcaps: [null, null], pattern, ropeFallback: 1000000 });
    c.core.qkNorm = true;
    // rope_local_base_freq, or rope_parameters.sliding_attention.rope_theta (transformers ≥ 5)
    if (kinds.includes('l')) c.core.ropeLocalTheta = ropeBase(hf, FAMILY, { keys: ['rope_local_base_freq'], fallback: 10000, layerType: 'sliding_attention' });
    return c;
  },
  withFileDtypes: gemmaEmbedScale,
  tensors: (c) => decoderTensors(c, { normOp: 'add-one' }),
};
