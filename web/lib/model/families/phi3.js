// Phi-3 / Phi-3.5 (transformers' Phi3ForCausalLM, models/phi3/modeling_phi3.py,
// configuration_phi3.py): Llama's block with two fused projections.
// Phi3Attention.qkv_proj [H·D + 2·Hkv·D, E] holds q, k, v as consecutive row
// blocks (query_pos = H·D; k then v of Hkv·D rows each); Phi3MLP.gate_up_proj
// [2F, E] holds the gate first (`gate, up_states = up_states.chunk(2, dim=-1)`;
// up_states * act(gate)). RoPE on the first int(D · partial_rotary_factor)
// dims of each head (the default rope's dim). Sliding-window attention on
// every layer when sliding_window is not null (Phi3Model's mask function;
// Phi-3-mini-4k: 2047). rope_scaling "longrope" (Phi-3.5, the 128k models) is
// refused: its inv_freq depends on the sequence length (short_factor up to
// original_max_position_embeddings, long_factor beyond) and scales cos/sin,
// which the block graph's RoPE has no field for.
import {
  DECODER_TABLE, DECODER_KEYS, decoderSizes, decoderCore, decoderTensors, ropeBase, activationOf, tiedOf,
  rotaryFactor, rotaryDimOf, windowFields, windowOf,
} from './decoder.js';
import { decoderGguf } from './decoder-gguf.js';

const FAMILY = 'phi3';

export const phi3 = {
  ...DECODER_TABLE,
  keys: { ...DECODER_KEYS, activation: ['hidden_act'], slidingWindow: ['sliding_window'], partialRotaryFactor: ['partial_rotary_factor'] },
  config(hf) {
    const c = decoderSizes(hf, FAMILY, { eps: 1e-5 });
    c.ropeTheta = ropeBase(hf, FAMILY, { fallback: 10000 });
    const rotaryDim = rotaryDimOf(c.headDim, rotaryFactor(hf), 'partial_rotary_factor', FAMILY);
    const window = windowOf(hf, 'sliding_window', null);
    c.core = {
      ...decoderCore(c, { activation: activationOf(hf, FAMILY, ['hidden_act'], { silu: 'swiglu' }, 'silu'), tieEmbeddings: tiedOf(hf, false) }),
      ...(rotaryDim ? { rotaryDim } : {}),
      ...(window === null ? {} : windowFields('l'.repeat(c.numLayers), window, FAMILY)),
    };
    return c;
  },
  // GGUF: convert_hf_to_gguf.py's Phi3MiniModel writes the sizes,
  // rope.dimension_count = int(partial_rotary_factor · E) // H, rope.freq_base
  // and attention.sliding_window (0 for null); qkv_proj (attn_qkv) and
  // gate_up_proj (ffn_up) stay fused in the HF layout. The window is applied
  // as Phi3Model applies it, although llama.cpp's phi3 switches it off ("Phi
  // SWA is currently disabled - results might be suboptimal", PR 13676).
  // rope_factors_long/short (longrope, the 128k models) are refused by name.
  gguf: decoderGguf('phi3', {
    config: { sliding_window: 'attention.sliding_window' },
    rotaryKey: 'partial_rotary_factor',
    derive(meta, names) {
      const out = {};
      if (meta('attention.sliding_window') === 0) out.sliding_window = null;
      if (names.has('rope_factors_long.weight') || names.has('rope_factors_short.weight')) out.rope_scaling = { rope_type: 'longrope' };
      return out;
    },
  }),
  tensors: (c) => decoderTensors(c, { fused: true }),
};
