// Qwen3 (transformers' Qwen3ForCausalLM, models/qwen3/modeling_qwen3.py,
// configuration_qwen3.py): Llama's names with an explicit head_dim (Qwen3Config
// default 128; it need not be hidden / heads) and Qwen3Attention's q_norm and
// k_norm, a Qwen3RMSNorm (x·w) over head_dim of each head's q and k after the
// projection, before RoPE. q/k/v/o biases only when attention_bias (default
// false). Sliding-window layers only when use_sliding_window: then
// layer_types, else "sliding_attention" from max_window_layers on
// (Qwen3Config.__post_init__), with sliding_window (default 4096).
import { rangeError } from '../../errors.js';
import { WHERE, int } from './config-keys.js';
import {
  DECODER_TABLE, DECODER_KEYS, decoderSizes, decoderCore, decoderTensors, ropeBase, activationOf, tiedOf, flagOf,
  layerKindsOf, windowFields, windowOf,
} from './decoder.js';
import { decoderGguf } from './decoder-gguf.js';

const FAMILY = 'qwen3';

/**
 * Qwen2/Qwen3's layer kinds: with use_sliding_window, layer_types or
 * 'sliding_attention' for layers ≥ max_window_layers; without it every layer
 * is full (Qwen3Config sets sliding_window to None).
 */
export function qwenWindow(hf, family, n) {
  const use = flagOf(hf, 'use_sliding_window', false);
  if (!use) {
    const kinds = layerKindsOf(hf, family, n, () => false);
    if (kinds.includes('l')) {
      throw rangeError(WHERE, `config.json layer_types has "sliding_attention" layers but use_sliding_window is false, which sets sliding_window to None for ${family}; allowed: only "full_attention", or use_sliding_window: true`);
    }
    return {};
  }
  const from = int(hf, ['max_window_layers'], { min: 0, fallback: 28 });
  const kinds = layerKindsOf(hf, family, n, (i) => i >= from);
  return windowFields(kinds, windowOf(hf, 'sliding_window', 4096), family);
}

export const qwen3 = {
  ...DECODER_TABLE,
  keys: { ...DECODER_KEYS, attentionBias: ['attention_bias'], activation: ['hidden_act'], useSlidingWindow: ['use_sliding_window'], slidingWindow: ['sliding_window'], maxWindowLayers: ['max_window_layers'], layerTypes: ['layer_types'] },
  config(hf) {
    const c = decoderSizes(hf, FAMILY, { eps: 1e-6, headDim: 128 });
    c.ropeTheta = ropeBase(hf, FAMILY, { fallback: 10000 });
    const bias = flagOf(hf, 'attention_bias', false);
    c.core = {
      ...decoderCore(c, { activation: activationOf(hf, FAMILY, ['hidden_act'], { silu: 'swiglu' }, 'silu'), qkvBias: bias, outBias: bias, tieEmbeddings: tiedOf(hf, false) }),
      qkNorm: true,
      ...qwenWindow(hf, FAMILY, c.numLayers),
    };
    return c;
  },
  // GGUF: convert_hf_to_gguf.py's Qwen3Model (a Qwen2Model: TextModel's keys,
  // attention.key_length from head_dim, HF row order of q/k for NEOX RoPE;
  // q_norm/k_norm → attn_q_norm/attn_k_norm). It writes no sliding window and
  // llama.cpp's qwen3 runs none, so every layer is full (use_sliding_window
  // stays false).
  gguf: decoderGguf('qwen3'),
  tensors: (c) => decoderTensors(c),
};
