// The gguf section (families/gguf.js) shared by the Llama-shaped decoders of
// decoder.js (qwen3.js, gemma.js, gemma2.js, gemma3-text.js, phi3.js): the
// llama.cpp names of decoderTensors' tensors and the metadata keys that
// convert_hf_to_gguf.py's TextModel writes for them.
import { rangeError, describe } from '../../errors.js';
import { WHERE } from './config-keys.js';
import { DECODER_LAYER } from './decoder.js';

/** A GGUF metadata number (u64/i64 values come as bigint). */
const metaNum = (v) => (typeof v === 'bigint' ? Number(v) : v);

/**
 * The gguf section (families/gguf.js) of a Llama-shaped decoder over
 * decoderTensors' names, for llama.cpp's architecture `arch`:
 *   - metadata keys (src/llama-arch.cpp LLM_KV_NAMES under `${arch}.`) as
 *     convert_hf_to_gguf.py's TextModel.set_gguf_parameters writes them;
 *   - tensor names (gguf-py constants.py TENSOR_NAMES; tensor_mapping.py):
 *     token_embd, output_norm, output; blk.N.attn_norm, attn_q/k/v,
 *     attn_output, attn_qkv (Phi-3's qkv_proj), attn_q_norm/attn_k_norm,
 *     ffn_gate/ffn_up/ffn_down, ffn_up also for Phi-3's fused gate_up_proj
 *     (llama.cpp's LLM_FFN_SWIGLU on it takes the first half as the gate, as
 *     Phi3MLP's chunk does); post_attention_layernorm is ffn_norm, or with
 *     `sandwich` (Gemma 2/3) post_attention_norm, pre_feedforward_layernorm
 *     ffn_norm and post_feedforward_layernorm post_ffw_norm;
 *   - head_dim: attention.key_length, else E/H (llama.cpp's n_embd_head_k
 *     default), whatever the family's config.json default is;
 *   - tied when the file has no output.weight (llama.cpp then reads
 *     token_embd); rope.scaling.type other than none becomes rope_scaling,
 *     which the family refuses by name;
 *   - rope.dimension_count other than head_dim: `rotaryKey`'s fraction of
 *     head_dim (phi3's partial_rotary_factor), else refused.
 * These converter classes keep the Hugging Face row order of q/k (llama.cpp
 * runs them with NEOX RoPE, as the block graph does): nothing is permuted.
 * `applied` and `derive` are the family's own (families/gguf.js).
 * @param {string} arch
 * @param {{ sandwich?: boolean, config?: Record<string, string>, applied?: string[], rotaryKey?: string | null,
 *   derive?: (meta: (key: string) => any, names: Set<string>, sizes: { D: any, E: any, H: any }) => Record<string, any> }} [options]
 */
export function decoderGguf(arch, { sandwich = false, config = {}, derive = () => ({}), applied = [], rotaryKey = null } = {}) {
  const L = DECODER_LAYER;
  const norms = sandwich
    ? { [L.norm2]: 'post_attention_norm', [L.preFfn]: 'ffn_norm', [L.postFfn]: 'post_ffw_norm' }
    : { [L.norm2]: 'ffn_norm' };
  return {
    architectures: [arch],
    config: {
      num_hidden_layers: 'block_count', hidden_size: 'embedding_length', intermediate_size: 'feed_forward_length',
      num_attention_heads: 'attention.head_count', num_key_value_heads: 'attention.head_count_kv',
      max_position_embeddings: 'context_length', rms_norm_eps: 'attention.layer_norm_rms_epsilon',
      rope_theta: 'rope.freq_base', vocab_size: 'vocab_size', head_dim: 'attention.key_length', ...config,
    },
    derive(meta, names) {
      const H = metaNum(meta('attention.head_count')), E = metaNum(meta('embedding_length'));
      const given = metaNum(meta('attention.key_length'));
      const D = given ?? (Number.isSafeInteger(H) && H > 0 && Number.isSafeInteger(E) && E % H === 0 ? E / H : undefined);
      const out = { tie_word_embeddings: !names.has('output.weight') };
      if (D !== undefined) out.head_dim = D;
      const scaling = meta('rope.scaling.type');
      if (scaling !== undefined && scaling !== 'none') out.rope_scaling = { rope_type: scaling };
      const rot = metaNum(meta('rope.dimension_count'));
      if (rot !== undefined && D !== undefined && rot !== D) {
        if (!rotaryKey || !Number.isSafeInteger(rot) || rot <= 0 || rot > D) {
          throw rangeError(WHERE, `the GGUF ${arch}.rope.dimension_count (${describe(rot)}) is not the head dim (${D}); only full rotary is supported for ${arch}`);
        }
        // rot / D, nudged so that int(D · factor) gives rot back (the family's rotaryDimOf).
        let f = rot / D;
        if (Math.floor(D * f) !== rot) f = (rot + 1e-9) / D;
        out[rotaryKey] = f;
      }
      return { ...out, ...derive(meta, names, { D, E, H }) };
    },
    names: { 'model.embed_tokens': 'token_embd', 'model.norm': 'output_norm', lm_head: 'output' },
    layer: {
      prefix: 'model.layers.',
      names: {
        [L.norm1]: 'attn_norm', [L.q]: 'attn_q', [L.k]: 'attn_k', [L.v]: 'attn_v', [L.o]: 'attn_output', [L.qkv]: 'attn_qkv',
        [L.qNorm]: 'attn_q_norm', [L.kNorm]: 'attn_k_norm', ...norms,
        [L.gate]: 'ffn_gate', [L.up]: 'ffn_up', [L.down]: 'ffn_down', [L.gateUp]: 'ffn_up',
      },
    },
    applied,
  };
}

/**
 * Gemma 2/3's query_pre_attn_scalar as llama.cpp reads a GGUF file, which
 * does not hold it (llama_model gemma2/gemma3 load_hparams:
 * f_attention_scale = type == LLM_TYPE_27B ? 1/sqrt(n_embd / n_head) :
 * 1/sqrt(n_embd_head_k), the 27B being told by its layer count: 46 for
 * Gemma 2, 62 for Gemma 3). For the released models this is their config's
 * value (27B: 4608/32 = 144, 5376/32 = 168; else head_dim 256 or 128).
 */
export function gemmaQueryScalar(meta, D, E, H, layers27b) {
  return metaNum(meta('block_count')) === layers27b && Number.isSafeInteger(E) && Number.isSafeInteger(H) && H > 0 ? Math.trunc(E / H) : D;
}
