// GPT-2 (transformers' GPT2LMHeadModel): config.json keys, tensor names and
// layouts onto the block graph, the per-layer state-dict format 'hf-gpt2',
// lab.transformer's 'gpt2' preset and the config.json that model.save writes.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, configValue, gpt2StyleSizes, blocks } from './config-keys.js';
import { LAYOUT_OPS } from './layout.js';
import { t, norm, anchorOf } from './layer-format.js';

/** config.json keys, the name model.save writes first. */
const KEYS = {
  numLayers: ['n_layer', 'num_hidden_layers'],
  numHeads: ['n_head', 'num_attention_heads'],
  embedDim: ['n_embd', 'hidden_size'],
  vocabSize: ['vocab_size'],
  maxPositions: ['n_positions', 'max_position_embeddings'],
  eps: ['layer_norm_epsilon'],
  ffnDim: ['n_inner'],
  activation: ['activation_function'],
};
/** The names of one block under its prefix `h.<l>.`. */
const LAYER = { norm1: 'ln_1', qkv: 'attn.c_attn', out: 'attn.c_proj', norm2: 'ln_2', fc: 'mlp.c_fc', proj: 'mlp.c_proj' };
const LAYER_PREFIX = 'h.';
const layerPrefix = (l) => `${LAYER_PREFIX}${l}.`;

/**
 * GGUF (families/gguf.js): llama.cpp's keys under `gpt2.` and its tensor
 * names (gguf-py constants.py TENSOR_NAMES for MODEL_ARCH.GPT2).
 * convert_hf_to_gguf.py's GPT2Model transposes the Conv1D weights (c_attn,
 * c_proj, c_fc) to [out, in] and writes feed_forward_length = 4·n_embd; the
 * head is always the word table (an output.weight is not read).
 */
const GGUF = {
  architectures: ['gpt2'],
  config: {
    n_layer: 'block_count', n_embd: 'embedding_length', n_inner: 'feed_forward_length', n_head: 'attention.head_count',
    n_positions: 'context_length', layer_norm_epsilon: 'attention.layer_norm_epsilon', vocab_size: 'vocab_size',
  },
  names: { wte: 'token_embd', wpe: 'position_embd', ln_f: 'output_norm' },
  layer: {
    prefix: LAYER_PREFIX,
    names: {
      [LAYER.norm1]: 'attn_norm', [LAYER.qkv]: 'attn_qkv', [LAYER.out]: 'attn_output', [LAYER.norm2]: 'ffn_norm',
      [LAYER.fc]: 'ffn_up', [LAYER.proj]: 'ffn_down',
    },
  },
  transposed: [LAYER.qkv, LAYER.out, LAYER.fc, LAYER.proj],
  ignore: [/^output\.weight$/],
};
const GPT2_ACTIVATIONS = { gelu_new: 'gelu_new', gelu_pytorch_tanh: 'gelu_new', gelu_fast: 'gelu_new', gelu: 'gelu' };
/** GPT-2's initializer_range: lab.transformer's 'gpt2' init. */
const INIT_STD = 0.02;

export const gpt2 = {
  keys: KEYS,
  prefixes: ['', 'transformer.'],
  savePrefix: '',
  ignore: [/^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$/, /^lm_head\.weight$/],
  gguf: GGUF,
  config(hf) {
    /** @type {any} */
    const c = gpt2StyleSizes(hf, KEYS);
    const act = configValue(hf, KEYS.activation, 'gelu_new');
    if (!Object.hasOwn(GPT2_ACTIVATIONS, act)) {
      throw rangeError(WHERE, `config.json activation_function ${describe(act)} is not supported; allowed: ${Object.keys(GPT2_ACTIVATIONS).join(', ')}`);
    }
    if (own(hf, 'scale_attn_by_inverse_layer_idx') === true || own(hf, 'scale_attn_weights') === false) {
      throw rangeError(WHERE, 'config.json: scale_attn_by_inverse_layer_idx / scale_attn_weights: false are not supported (attention is scaled by 1/sqrt(D))');
    }
    c.core = {
      positional: 'learned', causal: true, prenorm: true, norm: 'layernorm', activation: GPT2_ACTIVATIONS[act],
      tieEmbeddings: true, headBias: false, qkvBias: true, outBias: true, ffnBias: true,
    };
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim;
    const L = LAYER;
    return [
      { file: 'wte.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      { file: 'wpe.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
      ...blocks(c.numLayers, (l, b) => {
        const h = layerPrefix(l);
        return [
          { file: `${h}${L.norm1}.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
          { file: `${h}${L.norm1}.bias`, op: 'copy', to: [`${b}norm1.bias`], shape: [E] },
          { file: `${h}${L.qkv}.weight`, op: 'split', to: [`${b}attn.wq`, `${b}attn.wk`, `${b}attn.wv`], shape: [E, 3 * E] },
          { file: `${h}${L.qkv}.bias`, op: 'split', to: [`${b}attn.bq`, `${b}attn.bk`, `${b}attn.bv`], shape: [3 * E] },
          { file: `${h}${L.out}.weight`, op: 'transpose', to: [`${b}attn.wo`], shape: [E, E] },
          { file: `${h}${L.out}.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] },
          { file: `${h}${L.norm2}.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
          { file: `${h}${L.norm2}.bias`, op: 'copy', to: [`${b}norm2.bias`], shape: [E] },
          { file: `${h}${L.fc}.weight`, op: 'transpose', to: [`${b}ffn.w1`], shape: [E, F] },
          { file: `${h}${L.fc}.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
          { file: `${h}${L.proj}.weight`, op: 'transpose', to: [`${b}ffn.w2`], shape: [F, E] },
          { file: `${h}${L.proj}.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
        ];
      }),
      { file: 'ln_f.weight', op: 'copy', to: ['final_norm.weight'], shape: [E] },
      { file: 'ln_f.bias', op: 'copy', to: ['final_norm.bias'], shape: [E] },
    ];
  },

  // The per-layer state-dict format 'hf-gpt2' (transformers GPT2Block's
  // attention): Conv1D layers (W [in, out], y = x·W + b); c_attn [E, 3E]
  // holds q | k | v by columns. Pre-LN: x + attn(ln_1(x)), so ln_1 is
  // returned as a 'pre' norm (selfAttentionLayer, which is post-LN, refuses it).
  layerFormat: {
    anchor: anchorOf(`${LAYER.qkv}.weight`),
    starts: (p) => [`${p}${LAYER.qkv.split('.')[0]}.c_`, `${p}${LAYER.norm1}.`],
    shapes({ dim, get }, p) {
      const E = dim(`${p}${LAYER.qkv}.weight`, 0);
      return { embedDim: E, kdim: E, vdim: E, bias: true, numHeads: null, causal: true, norm: get(`${p}${LAYER.norm1}.weight`) ? { placement: 'pre', kind: 'layer' } : null };
    },
    read({ need, get }, p, c) {
      const E = c.embedDim;
      const [wq, wk, wv] = LAYOUT_OPS.split.torch([E, 3 * E], need(`${p}${LAYER.qkv}.weight`, [E, 3 * E]).data);
      const [bq, bk, bv] = LAYOUT_OPS.split.torch([3 * E], need(`${p}${LAYER.qkv}.bias`, [3 * E]).data);
      const w = {
        wq, wk, wv, bq, bk, bv,
        wo: LAYOUT_OPS.transpose.torch([E, E], need(`${p}${LAYER.out}.weight`, [E, E]).data)[0],
        bo: need(`${p}${LAYER.out}.bias`, [E]),
      };
      const n1 = `${p}${LAYER.norm1}`;
      const n = get(`${n1}.weight`) ? norm(need(`${n1}.weight`, [E]), need(`${n1}.bias`, [E]), 1e-5, 'pre') : null;
      return { weights: w, norm: n };
    },
    write(w, c, p, n) {
      const E = c.embedDim;
      const out = {};
      if (n) {
        out[`${p}${LAYER.norm1}.weight`] = t(n.gamma.data, [E]);
        out[`${p}${LAYER.norm1}.bias`] = t(n.beta.data, [E]);
      }
      const fused = (shape, parts) => LAYOUT_OPS.split.file({ shape }, parts);
      out[`${p}${LAYER.qkv}.weight`] = fused([E, 3 * E], [w.wq.data, w.wk.data, w.wv.data]);
      out[`${p}${LAYER.qkv}.bias`] = fused([3 * E], [w.bq.data, w.bk.data, w.bv.data]);
      out[`${p}${LAYER.out}.weight`] = LAYOUT_OPS.transpose.file({ shape: [E, E] }, [w.wo.data]);
      out[`${p}${LAYER.out}.bias`] = t(w.bo.data, [E]);
      return out;
    },
  },

  /** The config.json of a lab.transformer built with the 'gpt2' preset (c: its normalised config). */
  configJson(c) {
    return {
      model_type: 'gpt2',
      architectures: ['GPT2LMHeadModel'],
      [KEYS.vocabSize[0]]: c.vocabSize,
      [KEYS.maxPositions[0]]: c.maxLength,
      n_ctx: c.maxLength,
      [KEYS.embedDim[0]]: c.embedDim,
      [KEYS.numLayers[0]]: c.numLayers,
      [KEYS.numHeads[0]]: c.numHeads,
      [KEYS.ffnDim[0]]: c.ffnDim,
      [KEYS.activation[0]]: 'gelu_new',
      [KEYS.eps[0]]: c.eps,
      resid_pdrop: c.dropout,
      embd_pdrop: 0,
      attn_pdrop: 0,
      initializer_range: INIT_STD,
      tie_word_embeddings: true,
      torch_dtype: 'float32',
    };
  },
};

/**
 * lab.transformer's 'gpt2' preset: the block graph's flags of this table
 * (read from a smallest config.json) and GPT-2's init.
 */
export function gpt2Preset() {
  const core = gpt2.config({ [KEYS.numLayers[0]]: 1, [KEYS.numHeads[0]]: 1, [KEYS.embedDim[0]]: 1, [KEYS.vocabSize[0]]: 2, [KEYS.maxPositions[0]]: 1 }).core;
  const out = {};
  for (const k of ['prenorm', 'activation', 'tieEmbeddings', 'headBias', 'positional', 'causal']) out[k] = core[k];
  return { ...out, initStd: INIT_STD };
}
