// Llama (transformers' LlamaForCausalLM; Mistral-style checkpoints with the
// same names): config.json keys, tensor names and layouts onto the block
// graph, and the per-layer state-dict format 'hf-llama'.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, configValue, int, num, divisible, standardSizes, blocks } from './config-keys.js';
import { t, norm, anchorOf } from './layer-format.js';

/** config.json keys beyond the standard sizes. */
const KEYS = {
  eps: ['rms_norm_eps'],
  ropeTheta: ['rope_theta'],
  numKvHeads: ['num_key_value_heads'],
  activation: ['hidden_act'],
  tieEmbeddings: ['tie_word_embeddings'],
};
/** The names of one block under its prefix `model.layers.<l>.`. */
const LAYER = {
  norm1: 'input_layernorm', attn: 'self_attn', q: 'self_attn.q_proj', k: 'self_attn.k_proj', v: 'self_attn.v_proj', o: 'self_attn.o_proj',
  norm2: 'post_attention_layernorm', gate: 'mlp.gate_proj', up: 'mlp.up_proj', down: 'mlp.down_proj',
};
const LAYER_PREFIX = 'model.layers.';
const layerPrefix = (l) => `${LAYER_PREFIX}${l}.`;

/**
 * GGUF (families/gguf.js): llama.cpp's metadata keys (src/llama-arch.cpp
 * LLM_KV_NAMES, under `llama.`) and tensor names (gguf-py constants.py
 * TENSOR_NAMES) of the keys and names above. convert_hf_to_gguf.py's
 * LlamaModel permutes the rows of q_proj and k_proj (LlamaModel.permute);
 * the head is tied when the file has no output.weight (llama.cpp then reads
 * token_embd), and the vocabulary is llama.vocab_size or the token list.
 */
const GGUF = {
  architectures: ['llama'],
  config: {
    num_hidden_layers: 'block_count', hidden_size: 'embedding_length', intermediate_size: 'feed_forward_length',
    num_attention_heads: 'attention.head_count', num_key_value_heads: 'attention.head_count_kv',
    max_position_embeddings: 'context_length', rms_norm_eps: 'attention.layer_norm_rms_epsilon',
    rope_theta: 'rope.freq_base', vocab_size: 'vocab_size', head_dim: 'attention.key_length',
  },
  derive(meta, names) {
    const out = { tie_word_embeddings: !names.has('output.weight') };
    const scaling = meta('rope.scaling.type');
    if (scaling !== undefined && scaling !== 'none') out.rope_scaling = { rope_type: scaling };
    const rot = meta('rope.dimension_count');
    const H = meta('attention.head_count');
    const D = meta('attention.key_length') ?? (Number.isSafeInteger(H) && H > 0 ? meta('embedding_length') / H : undefined);
    if (rot !== undefined && D !== undefined && rot !== D) {
      throw rangeError(WHERE, `the GGUF rope.dimension_count (${rot}) is not the head dim (${D}); only full rotary is supported`);
    }
    return out;
  },
  names: { 'model.embed_tokens': 'token_embd', 'model.norm': 'output_norm', lm_head: 'output' },
  layer: {
    prefix: LAYER_PREFIX,
    names: {
      [LAYER.norm1]: 'attn_norm', [LAYER.q]: 'attn_q', [LAYER.k]: 'attn_k', [LAYER.v]: 'attn_v', [LAYER.o]: 'attn_output',
      [LAYER.norm2]: 'ffn_norm', [LAYER.gate]: 'ffn_gate', [LAYER.up]: 'ffn_up', [LAYER.down]: 'ffn_down',
    },
  },
  permuted: { [LAYER.q]: 'numHeads', [LAYER.k]: 'numKvHeads' },
};

export const llama = {
  keys: KEYS,
  prefixes: [''],
  savePrefix: '',
  ignore: [/^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/],
  gguf: GGUF,
  config(hf, names, family = 'llama') {
    /** @type {any} */
    const c = {
      ...standardSizes(hf),
      eps: num(hf, KEYS.eps, 1e-6),
      ropeTheta: num(hf, KEYS.ropeTheta, 10000),
    };
    c.numKvHeads = int(hf, KEYS.numKvHeads, { fallback: c.numHeads });
    divisible(c);
    const headDim = own(hf, 'head_dim');
    if (headDim !== undefined && headDim !== null && headDim !== c.embedDim / c.numHeads) {
      throw rangeError(WHERE, `config.json head_dim ${describe(headDim)} differs from hidden_size / num_attention_heads (${c.embedDim / c.numHeads}); only head_dim = E/H is supported`);
    }
    if ((c.embedDim / c.numHeads) % 2 !== 0) throw rangeError(WHERE, `config.json: the head dim (${c.embedDim / c.numHeads}) must be even for RoPE`);
    const scaling = own(hf, 'rope_scaling');
    if (scaling !== undefined && scaling !== null) {
      const type = scaling && typeof scaling === 'object' ? (own(scaling, 'rope_type') ?? own(scaling, 'type')) : scaling;
      if (type !== 'default') throw rangeError(WHERE, `config.json rope_scaling ${describe(type)} is not supported (only plain RoPE with rope_theta)`);
    }
    const act = configValue(hf, KEYS.activation, 'silu');
    if (act !== 'silu') throw rangeError(WHERE, `config.json hidden_act ${describe(act)} is not supported for ${family}; allowed: silu`);
    const tied = configValue(hf, KEYS.tieEmbeddings, false) === true;
    c.core = {
      positional: 'rope', ropeTheta: c.ropeTheta, causal: true, prenorm: true, norm: 'rmsnorm', activation: 'swiglu',
      numKvHeads: c.numKvHeads, qkvBias: own(hf, 'attention_bias') === true, outBias: own(hf, 'attention_bias') === true, ffnBias: own(hf, 'mlp_bias') === true,
      tieEmbeddings: tied, headBias: false,
    };
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim, Ekv = c.numKvHeads * (E / c.numHeads);
    const qb = c.core.qkvBias, ob = c.core.outBias, fb = c.core.ffnBias;
    const L = LAYER;
    const list = [
      { file: 'model.embed_tokens.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      ...blocks(c.numLayers, (l, b) => {
        const p = layerPrefix(l);
        const t = [
          { file: `${p}${L.norm1}.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
          { file: `${p}${L.q}.weight`, op: 'copy', to: [`${b}attn.wq`], shape: [E, E] },
          { file: `${p}${L.k}.weight`, op: 'copy', to: [`${b}attn.wk`], shape: [Ekv, E] },
          { file: `${p}${L.v}.weight`, op: 'copy', to: [`${b}attn.wv`], shape: [Ekv, E] },
          { file: `${p}${L.o}.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, E] },
          { file: `${p}${L.norm2}.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
          { file: `${p}${L.gate}.weight`, op: 'copy', to: [`${b}ffn.wg`], shape: [F, E] },
          { file: `${p}${L.up}.weight`, op: 'copy', to: [`${b}ffn.w1`], shape: [F, E] },
          { file: `${p}${L.down}.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] },
        ];
        if (qb) {
          t.push(
            { file: `${p}${L.q}.bias`, op: 'copy', to: [`${b}attn.bq`], shape: [E] },
            { file: `${p}${L.k}.bias`, op: 'copy', to: [`${b}attn.bk`], shape: [Ekv] },
            { file: `${p}${L.v}.bias`, op: 'copy', to: [`${b}attn.bv`], shape: [Ekv] },
          );
        }
        if (ob) t.push({ file: `${p}${L.o}.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] });
        if (fb) {
          t.push(
            { file: `${p}${L.up}.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
            { file: `${p}${L.down}.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
          );
        }
        return t;
      }),
      { file: 'model.norm.weight', op: 'copy', to: ['final_norm.weight'], shape: [E] },
    ];
    if (!c.core.tieEmbeddings) list.push({ file: 'lm_head.weight', op: 'copy', to: ['head.weight'], shape: [c.vocabSize, E] });
    return list;
  },
  extraIgnore(c) {
    return c.core.tieEmbeddings ? [/^lm_head\.weight$/] : [];
  },

  // The per-layer state-dict format 'hf-llama': LlamaDecoderLayer's self_attn
  // (also Mistral, Qwen2 with q/k/v biases): nn.Linear q/k/v/o_proj, GQA (k/v
  // [Hkv·D, E]), RoPE (rotate_half), causal. input_layernorm is an RMSNorm
  // before attention ('pre').
  layerFormat: {
    anchor: anchorOf(`${LAYER.q}.weight`),
    starts: (p) => [`${p}${LAYER.attn}.`, `${p}${LAYER.norm1}.`],
    shapes({ dim, get }, p) {
      const [q, k] = [`${p}${LAYER.q}`, `${p}${LAYER.k}`];
      const E = dim(`${q}.weight`, 1);
      return {
        embedDim: E, kdim: E, vdim: E, qDim: dim(`${q}.weight`, 0), kvDim: dim(`${k}.weight`, 0),
        bias: Boolean(get(`${q}.bias`)), numHeads: null, causal: true, rope: true,
        norm: get(`${p}${LAYER.norm1}.weight`) ? { placement: 'pre', kind: 'rms' } : null,
      };
    },
    read({ need, get }, p, c) {
      const [q, k, v, o] = [LAYER.q, LAYER.k, LAYER.v, LAYER.o].map((n) => `${p}${n}`);
      const E = c.embedDim;
      const kv = c.kvDim;
      const w = {
        wq: need(`${q}.weight`, [c.qDim, E]), wk: need(`${k}.weight`, [kv, E]),
        wv: need(`${v}.weight`, [kv, E]), wo: need(`${o}.weight`, [E, c.qDim]),
      };
      if (c.bias) {
        w.bq = need(`${q}.bias`, [c.qDim]);
        w.bk = need(`${k}.bias`, [kv]);
        w.bv = need(`${v}.bias`, [kv]);
        w.bo = get(`${o}.bias`) ? need(`${o}.bias`, [E]) : t(new Float32Array(E), [E]);
      }
      const n1 = `${p}${LAYER.norm1}.weight`;
      const g = get(n1);
      return { weights: w, norm: g ? norm(need(n1, [E]), null, 1e-6, 'pre', 'rms') : null };
    },
    write(w, c, p, n) {
      const out = {};
      if (n) out[`${p}${LAYER.norm1}.weight`] = t(n.gamma.data, n.gamma.shape);
      for (const [k, name] of [['q', LAYER.q], ['k', LAYER.k], ['v', LAYER.v], ['o', LAYER.o]]) {
        out[`${p}${name}.weight`] = t(w[`w${k}`].data, w[`w${k}`].shape);
        if (c.bias) out[`${p}${name}.bias`] = t(w[`b${k}`].data, w[`b${k}`].shape);
      }
      return out;
    },
  },
};
