// Qwen2 / Qwen2.5 (transformers' Qwen2ForCausalLM, models/qwen2/modeling_qwen2.py):
// Llama's block graph and tensor names (llama.js) with Qwen2Attention's
// projections: q_proj, k_proj and v_proj with a bias (`bias=True`), o_proj
// without (`bias=False`); Qwen2MLP without biases. The head is tied or not
// (tie_word_embeddings: Qwen2.5-0.5B is tied). Layers are sliding-window
// attention only when use_sliding_window is true (Qwen2Config.layer_types:
// "sliding_attention" from max_window_layers on), which the released
// checkpoints leave false; the block graph has no window yet, so such a
// config is refused by name.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own } from './config-keys.js';
import { llama } from './llama.js';

export const qwen2 = {
  ...llama,
  keys: { ...llama.keys, useSlidingWindow: ['use_sliding_window'], layerTypes: ['layer_types'] },
  // GGUF: llama's names and keys under `qwen2.`; Qwen2Model keeps the HF
  // row order of q/k (NEOX RoPE, as the block graph's), so nothing is permuted.
  gguf: { ...llama.gguf, architectures: ['qwen2'], permuted: {} },
  config(hf, names) {
    if (own(hf, 'use_sliding_window') === true) {
      throw rangeError(WHERE, 'config.json use_sliding_window: true is not supported for qwen2 (the block graph has no sliding-window attention yet); allowed: false');
    }
    const types = own(hf, 'layer_types');
    if (Array.isArray(types)) {
      const bad = types.find((t) => t !== 'full_attention');
      if (bad !== undefined) throw rangeError(WHERE, `config.json layer_types entry ${describe(bad)} is not supported for qwen2; allowed: "full_attention"`);
    }
    if (own(hf, 'attention_bias') !== undefined && own(hf, 'attention_bias') !== null) {
      throw rangeError(WHERE, 'config.json attention_bias is not a qwen2 key: Qwen2 always has q/k/v biases and no o_proj bias');
    }
    const c = llama.config(hf, names, 'qwen2');
    c.core = { ...c.core, qkvBias: true, outBias: false };
    return c;
  },
};
