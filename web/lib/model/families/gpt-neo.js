// GPT-Neo / TinyStories (transformers' GPTNeoForCausalLM,
// models/gpt_neo/modeling_gpt_neo.py, configuration_gpt_neo.py):
//   - transformer.wte, transformer.wpe (learned positions), transformer.h.<l>.*,
//     transformer.ln_f; the head tied to wte (tie_word_embeddings default true);
//   - pre-LayerNorm blocks (layer_norm_epsilon, default 1e-5);
//   - GPTNeoSelfAttention: q_proj, k_proj, v_proj without bias, out_proj with
//     bias, all nn.Linear [out, in]; no 1/√D (attnScale 1); "local" layers
//     see the last window_size positions (the causal bias xor
//     tril(ones, -window_size): key j from query i when i − window < j ≤ i);
//   - attention_types [[["global", "local"], n], …] expanded to one kind per
//     layer (GPTNeoConfig.expand_attention_types_params); a config.json's
//     attention_layers, which GPTNeoConfig lets win, must agree;
//   - GPTNeoMLP: c_fc, act (activation_function, default gelu_new), c_proj,
//     nn.Linear with biases; intermediate_size null means 4·hidden.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, int, gpt2StyleSizes, blocks } from './config-keys.js';
import { activationOf, tiedOf, windowFields } from './decoder.js';

const FAMILY = 'gpt_neo';
const KEYS = {
  numLayers: ['num_layers'], numHeads: ['num_heads'], embedDim: ['hidden_size'], vocabSize: ['vocab_size'],
  maxPositions: ['max_position_embeddings'], ffnDim: ['intermediate_size'], eps: ['layer_norm_epsilon'],
  activation: ['activation_function'], attentionTypes: ['attention_types', 'attention_layers'], window: ['window_size'],
  tieEmbeddings: ['tie_word_embeddings'],
};
/** The names of one block under its prefix `h.<l>.` (below `transformer.`). */
const LAYER = {
  norm1: 'ln_1', q: 'attn.attention.q_proj', k: 'attn.attention.k_proj', v: 'attn.attention.v_proj', out: 'attn.attention.out_proj',
  norm2: 'ln_2', fc: 'mlp.c_fc', proj: 'mlp.c_proj',
};
const layerPrefix = (l) => `h.${l}.`;
const ACTIVATIONS = { gelu_new: 'gelu_new', gelu_pytorch_tanh: 'gelu_new', gelu_fast: 'gelu_new', gelu: 'gelu' };

/** attention_types → one 'g' or 'l' per layer (GPTNeoConfig.expand_attention_types_params). */
function layerKinds(hf, n) {
  const types = own(hf, 'attention_types') ?? [[['global', 'local'], 12]]; // GPTNeoConfig's default
  const bad = (what) => rangeError(WHERE, `config.json attention_types ${what}; each item is [["global" | "local", …], repeats]`);
  if (!Array.isArray(types)) throw bad(`must be a list, got ${describe(types)}`);
  const kinds = [];
  for (const item of types) {
    if (!Array.isArray(item) || item.length !== 2 || !Array.isArray(item[0]) || !Number.isSafeInteger(item[1]) || item[1] < 0) throw bad(`item ${describe(item)} is malformed`);
    for (let r = 0; r < item[1]; r++) {
      for (const t of item[0]) {
        if (t !== 'global' && t !== 'local') throw rangeError(WHERE, `config.json attention_types entry ${describe(t)} is not supported for gpt_neo; allowed: "global", "local"`);
        kinds.push(t);
      }
    }
  }
  const layers = own(hf, 'attention_layers');
  if (layers !== undefined && layers !== null && JSON.stringify(layers) !== JSON.stringify(kinds)) {
    throw rangeError(WHERE, `config.json attention_layers ${JSON.stringify(layers)} disagrees with attention_types, which expand to ${JSON.stringify(kinds)}`);
  }
  if (kinds.length !== n) throw rangeError(WHERE, `config.json attention_types give ${kinds.length} layers, but num_layers is ${n}`);
  return kinds.map((t) => (t === 'local' ? 'l' : 'g')).join('');
}

export const gptNeo = {
  keys: KEYS,
  prefixes: ['transformer.', ''],
  savePrefix: 'transformer.',
  ignore: [/^(transformer\.)?h\.\d+\.attn\.attention\.(bias|masked_bias)$/],
  extraIgnore(c) {
    return c.core.tieEmbeddings ? [/^lm_head\.weight$/] : [];
  },
  config(hf) {
    /** @type {any} */
    const c = gpt2StyleSizes(hf, KEYS);
    c.headDim = c.embedDim / c.numHeads;
    const kinds = layerKinds(hf, c.numLayers);
    c.core = {
      positional: 'learned', causal: true, prenorm: true, norm: 'layernorm',
      activation: activationOf(hf, FAMILY, KEYS.activation, ACTIVATIONS, 'gelu_new'),
      numKvHeads: c.numHeads, qkvBias: false, outBias: true, ffnBias: true, tieEmbeddings: tiedOf(hf, true), headBias: false,
      attnScale: 1,
      ...(kinds.includes('l') ? windowFields(kinds, int(hf, KEYS.window, { fallback: 256 }), FAMILY, 'window_size') : {}),
    };
    return c;
  },
  tensors(c) {
    const E = c.embedDim, F = c.ffnDim;
    const L = LAYER;
    const list = [
      { file: 'wte.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
      { file: 'wpe.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
      ...blocks(c.numLayers, (l, b) => {
        const h = layerPrefix(l);
        return [
          { file: `${h}${L.norm1}.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
          { file: `${h}${L.norm1}.bias`, op: 'copy', to: [`${b}norm1.bias`], shape: [E] },
          { file: `${h}${L.q}.weight`, op: 'copy', to: [`${b}attn.wq`], shape: [E, E] },
          { file: `${h}${L.k}.weight`, op: 'copy', to: [`${b}attn.wk`], shape: [E, E] },
          { file: `${h}${L.v}.weight`, op: 'copy', to: [`${b}attn.wv`], shape: [E, E] },
          { file: `${h}${L.out}.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, E] },
          { file: `${h}${L.out}.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] },
          { file: `${h}${L.norm2}.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
          { file: `${h}${L.norm2}.bias`, op: 'copy', to: [`${b}norm2.bias`], shape: [E] },
          { file: `${h}${L.fc}.weight`, op: 'copy', to: [`${b}ffn.w1`], shape: [F, E] },
          { file: `${h}${L.fc}.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
          { file: `${h}${L.proj}.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] },
          { file: `${h}${L.proj}.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
        ];
      }),
      { file: 'ln_f.weight', op: 'copy', to: ['final_norm.weight'], shape: [E] },
      { file: 'ln_f.bias', op: 'copy', to: ['final_norm.bias'], shape: [E] },
    ];
    if (!c.core.tieEmbeddings) list.push({ file: 'lm_head.weight', absolute: true, op: 'copy', to: ['head.weight'], shape: [c.vocabSize, E] });
    return list;
  },
};
