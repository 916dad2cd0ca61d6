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
import { decoderGguf, gemmaQueryScalar } from './decoder-gguf.js';
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
  // GGUF (general.architecture gemma3): convert_hf_to_gguf.py's Gemma3Model
  // writes TextModel's sizes, key_length = head_dim, rope.freq_base (the
  // global layers' rope_theta), final_logit_softcapping when set and
  // attention.sliding_window unless sliding_window_pattern is 1; every
  // *norm.weight, q_norm and k_norm too, holds 1 + w. What the file does not
  // hold, llama.cpp's gemma3 load_hparams fixes: five sliding layers in six
  // (set_swa_pattern(6), whatever the config's layer_types were), the local
  // RoPE base 10000 (rope_freq_base_train_swa), no sliding layers when the
  // file has no window, rope.freq_base 10000 when absent, and the query scale
  // of gemmaQueryScalar (62 layers: the 27B).
  gguf: decoderGguf('gemma3', {
    sandwich: true,
    applied: ['add-one'],
    config: { final_logit_softcapping: 'final_logit_softcapping', sliding_window: 'attention.sliding_window' },
    derive(meta, names, { D, E, H }) {
      const n = Number(meta('block_count'));
      const out = {
        query_pre_attn_scalar: gemmaQueryScalar(meta, D, E, H, 62), sliding_window_pattern: 6, rope_local_base_freq: 10000,
        attn_logit_softcapping: null, final_logit_softcapping: meta('final_logit_softcapping') ?? null,
      };
      if (meta('rope.freq_base') === undefined) out.rope_theta = 10000;
      // (a block_count outside 1…256 is left to config()'s own refusal)
      if (meta('attention.sliding_window') === undefined && Number.isSafeInteger(n) && n >= 1 && n <= 256) out.layer_types = Array.from({ length: n }, () => 'full_attention');
      return out;
    },
  }),
  tensors: (c) => decoderTensors(c, { normOp: 'add-one' }),
};
