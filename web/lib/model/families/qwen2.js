// Qwen2 / Qwen2.5 (transformers' Qwen2ForCausalLM, models/qwen2/modeling_qwen2.py):
// Llama's block graph and tensor names (llama.js) with Qwen2Attention's
// projections: q_proj, k_proj and v_proj with a bias (`bias=True`), o_proj
// without (`bias=False`); Qwen2MLP without biases. The head is tied or not
// (tie_word_embeddings: Qwen2.5-0.5B is tied). Layers are sliding-window
// attention only when use_sliding_window is true (Qwen2Config: sliding_window
// is None otherwise; layer_types, else "sliding_attention" for layers ≥
// max_window_layers, default 28, with sliding_window, default 4096), which
// the released checkpoints leave false: qwen3.js's qwenWindow, the same rule.
import { rangeError } from '../../errors.js';
import { WHERE, own } from './config-keys.js';
import { llama } from './llama.js';
import { qwenWindow } from './qwen3.js';

export const qwen2 = {
  ...llama,
  keys: { ...llama.keys, useSlidingWindow: ['use_sliding_window'], slidingWindow: ['sliding_window'], maxWindowLayers: ['max_window_layers'], layerTypes: ['layer_types'] },
  // GGUF: llama's names and keys under `qwen2.`; Qwen2Model keeps the HF
  // row order of q/k (NEOX RoPE, as the block graph's), so nothing is permuted.
  gguf: { ...llama.gguf, architectures: ['qwen2'], permuted: {} },
  config(hf, names) {
    if (own(hf, 'attention_bias') !== undefined && own(hf, 'attention_bias') !== null) {
      throw rangeError(WHERE, 'config.json attention_bias is not a qwen2 key: Qwen2 always has q/k/v biases and no o_proj bias');
    }
    const c = llama.config(hf, names, 'qwen2');
    c.core = { ...c.core, qkvBias: true, outBias: false, ...qwenWindow(hf, 'qwen2', c.numLayers) };
    return c;
  },
};
