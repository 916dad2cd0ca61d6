// GPT-NeoX / Pythia (transformers' GPTNeoXForCausalLM,
// models/gpt_neox/modeling_gpt_neox.py, configuration_gpt_neox.py):
//   - gpt_neox.embed_in, gpt_neox.layers.<l>.*, gpt_neox.final_layer_norm,
//     and the untied head embed_out (tie_word_embeddings default false);
//   - LayerNorm with bias (layer_norm_eps, default 1e-5), pre-norm;
//   - attention.query_key_value [3E, E] (+ bias [3E]): the projection viewed as
//     [..., H, 3·D] and chunked, so head h owns rows [3hD, 3hD + D) of q, then
//     k, then v (the layout op split-heads); attention.dense; biases when
//     attention_bias (default true); scale D^-0.5;
//   - RoPE (rotate_half) on the first rotary_ndims = int(D · rotary_pct)
//     dims of each head (rotary_pct default 0.25), base rotary_emb_base
//     (default 10000); transformers ≥ 5 writes rope_parameters
//     { rope_theta, partial_rotary_factor } instead;
//   - use_parallel_residual (default true): x + attn(ln1 x) + mlp(ln2 x),
//     else x' = x + attn(ln1 x); x' + mlp(ln2 x');
//   - GPTNeoXMLP: dense_h_to_4h, act (hidden_act, default "gelu": erf),
//     dense_4h_to_h, with biases.
// rope_scaling (linear, dynamic) is refused by name.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, num, standardSizes, blocks, divisible } from './config-keys.js';
import { ropeBase, rotaryFactor, rotaryDimOf, activationOf, tiedOf, flagOf } from './decoder.js';

const FAMILY = 'gpt_neox';
/** The names of one block under its prefix `layers.<l>.` (below `gpt_neox.`). */
const LAYER = {
  norm1: 'input_layernorm', qkv: 'attention.query_key_value', out: 'attention.dense',
  norm2: 'post_attention_layernorm', up: 'mlp.dense_h_to_4h', down: 'mlp.dense_4h_to_h',
};
const layerPrefix = (l) => `layers.${l}.`;
/**
 * GGUF (families/gguf.js; general.architecture gptneox): convert_hf_to_gguf.py's
 * GPTNeoXModel writes context_length, embedding_length, block_count,
 * feed_forward_length, rope.dimension_count = int(rotary_pct · D),
 * attention.head_count, use_parallel_residual and
 * attention.layer_norm_epsilon (no rope.freq_base: llama.cpp's 10000, as
 * rotary_emb_base's default), and regroups query_key_value from per-head
 * [H][q|k|v][D] rows into q | k | v row blocks (weight and bias), which
 * llama.cpp's gptneox then views as three thirds. The file has no hidden_act:
 * the MLP runs GPTNeoXConfig's default "gelu" (erf), as transformers runs
 * Pythia; llama.cpp's LLM_FFN_GELU is the tanh approximation.
 */
const GGUF = {
  architectures: ['gptneox'],
  config: {
    num_hidden_layers: 'block_count', hidden_size: 'embedding_length', intermediate_size: 'feed_forward_length',
    num_attention_heads: 'attention.head_count', max_position_embeddings: 'context_length',
    layer_norm_eps: 'attention.layer_norm_epsilon', use_parallel_residual: 'use_parallel_residual',
    rotary_emb_base: 'rope.freq_base', vocab_size: 'vocab_size',
  },
  derive(meta, names) {
    const out = { tie_word_embeddings: !names.has('output.weight'), attention_bias: names.has('blk.0.attn_qkv.bias') };
    const H = Number(meta('attention.head_count')), E = Number(meta('embedding_length')), rot = meta('rope.dimension_count');
    if (rot !== undefined && Number.isSafeInteger(H) && H > 0 && E % H === 0) {
      const D = E / H;
      let f = Number(rot) / D;
      if (Math.floor(D * f) !== Number(rot)) f = (Number(rot) + 1e-9) / D; // int(D · rotary_pct) gives rot back
      out.rotary_pct = f;
    }
    const scaling = meta('rope.scaling.type');
    if (scaling !== undefined && scaling !== 'none') out.rope_scaling = { rope_type: scaling };
    return out;
  },
  names: { embed_in: 'token_embd', final_layer_norm: 'output_norm', embed_out: 'output' },
  layer: {
    prefix: 'layers.',
    names: {
      [LAYER.norm1]: 'attn_norm', [LAYER.qkv]: 'attn_qkv', [LAYER.out]: 'attn_output', [LAYER.norm2]: 'ffn_norm',
      [LAYER.up]: 'ffn_up', [LAYER.down]: 'ffn_down',
    },
  },
  qkvBlocks: [LAYER.qkv],
};
/** GPT-NeoX's MLP activations → the block graph's. */
const ACTIVATIONS = { gelu: 'gelu', gelu_new: 'gelu_new', gelu_pytorch_tanh: 'gelu_new', gelu_fast: 'gelu_new' };

export const gptNeox = {
  keys: {
    eps: ['layer_norm_eps'], rotaryPct: ['rotary_pct', 'partial_rotary_factor'], ropeTheta: ['rotary_emb_base', 'rope_theta'],
    parallelResidual: ['use_parallel_residual'], activation: ['hidden_act'], attentionBias: ['attention_bias'], tieEmbeddings: ['tie_word_embeddings'],
  },
  prefixes: ['gpt_neox.', ''],
  savePrefix: 'gpt_neox.',
  gguf: GGUF,
  ignore: [/^(gpt_neox\.)?layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)$/],
  extraIgnore(c) {
    return c.core.tieEmbeddings ? [/^embed_out\.weight$/] : [];
  },
  config(hf) {
    /** @type {any} */
    const c = { ...standardSizes(hf), eps: num(hf, ['layer_norm_eps'], 1e-5) };
    c.numKvHeads = c.numHeads;
    divisible(c);
    c.headDim = c.embedDim / c.numHeads;
    if (own(hf, 'num_key_value_heads') !== undefined && own(hf, 'num_key_value_heads') !== null && own(hf, 'num_key_value_heads') !== c.numHeads) {
      throw rangeError(WHERE, `config.json num_key_value_heads ${describe(own(hf, 'num_key_value_heads'))} is not a gpt_neox key: GPT-NeoX's query_key_value holds every head's q, k and v (allowed: num_attention_heads or absent)`);
    }
    c.ropeTheta = ropeBase(hf, FAMILY, { keys: ['rotary_emb_base', 'rope_theta'], fallback: 10000 });
    const rotaryDim = rotaryDimOf(c.headDim, rotaryFactor(hf, { keys: ['rotary_pct', 'partial_rotary_factor'], fallback: 0.25 }), 'rotary_pct', FAMILY);
    const bias = flagOf(hf, 'attention_bias', true);
    c.core = {
      positional: 'rope', ropeTheta: c.ropeTheta, causal: true, prenorm: true, norm: 'layernorm',
      activation: activationOf(hf, FAMILY, ['hidden_act'], ACTIVATIONS, 'gelu'),
      numKvHeads: c.numHeads, qkvBias: bias, outBias: bias, ffnBias: true, tieEmbeddings: tiedOf(hf, false), headBias: false,
      ...(rotaryDim ? { rotaryDim } : {}),
      ...(flagOf(hf, 'use_parallel_residual', true) ? { parallelResidual: true } : {}),
    };
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim, H = c.numHeads;
    const bias = c.core.qkvBias;
    const L = LAYER;
    const list = [
      { file: 'embed_in.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      ...blocks(c.numLayers, (l, b) => {
        const p = layerPrefix(l);
        const t = [
          { file: `${p}${L.norm1}.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
          { file: `${p}${L.norm1}.bias`, op: 'copy', to: [`${b}norm1.bias`], shape: [E] },
          { file: `${p}${L.qkv}.weight`, op: 'split-heads', heads: H, to: [`${b}attn.wq`, `${b}attn.wk`, `${b}attn.wv`], shape: [3 * E, E] },
        ];
        if (bias) t.push({ file: `${p}${L.qkv}.bias`, op: 'split-heads', heads: H, to: [`${b}attn.bq`, `${b}attn.bk`, `${b}attn.bv`], shape: [3 * E] });
        t.push({ file: `${p}${L.out}.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, E] });
        if (c.core.outBias) t.push({ file: `${p}${L.out}.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] });
        t.push(
          { file: `${p}${L.norm2}.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
          { file: `${p}${L.norm2}.bias`, op: 'copy', to: [`${b}norm2.bias`], shape: [E] },
          { file: `${p}${L.up}.weight`, op: 'copy', to: [`${b}ffn.w1`], shape: [F, E] },
          { file: `${p}${L.up}.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
          { file: `${p}${L.down}.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] },
          { file: `${p}${L.down}.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
        );
        return t;
      }),
      { file: 'final_layer_norm.weight', op: 'copy', to: ['final_norm.weight'], shape: [E] },
      { file: 'final_layer_norm.bias', op: 'copy', to: ['final_norm.bias'], shape: [E] },
    ];
    if (!c.core.tieEmbeddings) list.push({ file: 'embed_out.weight', absolute: true, op: 'copy', to: ['head.weight'], shape: [c.vocabSize, E] });
    return list;
  },
};
