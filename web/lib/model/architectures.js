// One table per architecture (llama.cpp's LLM_TENSOR_NAMES, transformers.js's
// getNormalizedConfig): each maps its Hugging Face config.json keys and
// tensor names onto the one block graph of the core
// (src/train/transformer.cpp, TransformerConfig in src/train/train.h).
// A new family costs one entry here.
//
//   config(hf)   → the normalised config: numLayers (N), numHeads (H),
//                  numKvHeads (Hkv), embedDim (E), ffnDim (F), vocabSize (V),
//                  maxPositions, eps, ropeTheta, plus `core`: the block
//                  graph's architecture fields
//   tensors(c, has) → [{ file, op, to, shape }]: every tensor the file must
//                  (or, with optional: true, may) hold, and where it goes:
//                  op 'copy'      the file's layout is torch's [out, in]
//                  op 'transpose' Conv1D [in, out] → [out, in]
//                  op 'split'     GPT-2's fused c_attn: [E, 3E] (Conv1D) or
//                                 [3E] → wq, wk, wv / bq, bk, bv
//   ignore       names a file may hold that the model does not use
// Key lookups read own properties only, so `__proto__` or `constructor` in
// a config.json changes nothing.
import { rangeError, typeError, describe } from '../errors.js';

const WHERE = 'loadModel';

function own(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** The first of `keys` present in the config; `fallback` (a value) when none is, else an Error. */
function pick(hf, keys, fallback) {
  for (const k of keys) {
    const v = own(hf, k);
    if (v !== undefined && v !== null) return v;
  }
  if (fallback !== undefined) return fallback;
  throw rangeError(WHERE, `config.json has no ${keys.map((k) => JSON.stringify(k)).join(' or ')} (model_type ${JSON.stringify(own(hf, 'model_type'))} needs it)`);
}

// Bounds far above any real model, so that a damaged config.json cannot
// make the tables loop over 2^53 layers before the size check refuses it.
const MAX_INT = 2 ** 24;

/**
 * @param {object} hf
 * @param {string[]} keys
 * @param {{ min?: number, max?: number, fallback?: number }} [options]
 */
function int(hf, keys, { min = 1, max = MAX_INT, fallback = undefined } = {}) {
  const v = pick(hf, keys, fallback);
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw rangeError(WHERE, `config.json ${JSON.stringify(keys[0])} must be an integer in [${min}, ${max}], got ${describe(v)}`);
  }
  return v;
}

function num(hf, keys, fallback) {
  const v = pick(hf, keys, fallback);
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw rangeError(WHERE, `config.json ${JSON.stringify(keys[0])} must be a finite number > 0, got ${describe(v)}`);
  }
  return v;
}

function divisible(c) {
  if (c.embedDim % c.numHeads !== 0) {
    throw rangeError(WHERE, `config.json: the hidden size (${c.embedDim}) must be divisible by the head count (${c.numHeads})`);
  }
  if (c.numHeads % c.numKvHeads !== 0) {
    throw rangeError(WHERE, `config.json: num_key_value_heads (${c.numKvHeads}) must divide num_attention_heads (${c.numHeads})`);
  }
}

/** The sizes under transformers' standard key names (llama, bert; GPT-2 has its own). */
function standardSizes(hf) {
  return {
    numLayers: int(hf, ['num_hidden_layers'], { max: 256 }),
    numHeads: int(hf, ['num_attention_heads']),
    embedDim: int(hf, ['hidden_size']),
    ffnDim: int(hf, ['intermediate_size']),
    vocabSize: int(hf, ['vocab_size'], { min: 2 }),
    maxPositions: int(hf, ['max_position_embeddings']),
  };
}

/** Per-block tensors: (l) => [{ file, op, to, shape }]. */
function blocks(n, perLayer) {
  const out = [];
  for (let l = 0; l < n; l++) out.push(...perLayer(l, `blocks.${l}.`));
  return out;
}

const GPT2_ACTIVATIONS = { gelu_new: 'gelu_new', gelu_pytorch_tanh: 'gelu_new', gelu_fast: 'gelu_new', gelu: 'gelu' };

export const ARCHITECTURES = {
  gpt2: {
    prefixes: ['', 'transformer.'],
    savePrefix: '',
    ignore: [/^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$/, /^lm_head\.weight$/],
    config(hf) {
      const c = {
        numLayers: int(hf, ['n_layer', 'num_hidden_layers'], { max: 256 }),
        numHeads: int(hf, ['n_head', 'num_attention_heads']),
        embedDim: int(hf, ['n_embd', 'hidden_size']),
        vocabSize: int(hf, ['vocab_size'], { min: 2 }),
        maxPositions: int(hf, ['n_positions', 'max_position_embeddings']),
        eps: num(hf, ['layer_norm_epsilon'], 1e-5),
      };
      c.numKvHeads = c.numHeads;
      c.ffnDim = int(hf, ['n_inner'], { fallback: 4 * c.embedDim });
      divisible(c);
      const act = pick(hf, ['activation_function'], 'gelu_new');
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
      return [
        { file: 'wte.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
        { file: 'wpe.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
        ...blocks(c.numLayers, (l, b) => [
          { file: `h.${l}.ln_1.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
          { file: `h.${l}.ln_1.bias`, op: 'copy', to: [`${b}norm1.bias`], shape: [E] },
          { file: `h.${l}.attn.c_attn.weight`, op: 'split', to: [`${b}attn.wq`, `${b}attn.wk`, `${b}attn.wv`], shape: [E, 3 * E] },
          { file: `h.${l}.attn.c_attn.bias`, op: 'split', to: [`${b}attn.bq`, `${b}attn.bk`, `${b}attn.bv`], shape: [3 * E] },
          { file: `h.${l}.attn.c_proj.weight`, op: 'transpose', to: [`${b}attn.wo`], shape: [E, E] },
          { file: `h.${l}.attn.c_proj.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] },
          { file: `h.${l}.ln_2.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
          { file: `h.${l}.ln_2.bias`, op: 'copy', to: [`${b}norm2.bias`], shape: [E] },
          { file: `h.${l}.mlp.c_fc.weight`, op: 'transpose', to: [`${b}ffn.w1`], shape: [E, F] },
          { file: `h.${l}.mlp.c_fc.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
          { file: `h.${l}.mlp.c_proj.weight`, op: 'transpose', to: [`${b}ffn.w2`], shape: [F, E] },
          { file: `h.${l}.mlp.c_proj.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
        ]),
        { file: 'ln_f.weight', op: 'copy', to: ['final_norm.weight'], shape: [E] },
        { file: 'ln_f.bias', op: 'copy', to: ['final_norm.bias'], shape: [E] },
      ];
    },
  },

  llama: {
    prefixes: [''],
    savePrefix: '',
    ignore: [/^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/],
    config(hf) {
      /** @type {any} */
      const c = {
        ...standardSizes(hf),
        eps: num(hf, ['rms_norm_eps'], 1e-6),
        ropeTheta: num(hf, ['rope_theta'], 10000),
      };
      c.numKvHeads = int(hf, ['num_key_value_heads'], { fallback: c.numHeads });
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
      const act = pick(hf, ['hidden_act'], 'silu');
      if (act !== 'silu') throw rangeError(WHERE, `config.json hidden_act ${describe(act)} is not supported for llama; allowed: silu`);
      const tied = pick(hf, ['tie_word_embeddings'], false) === true;
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
      const list = [
        { file: 'model.embed_tokens.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
        ...blocks(c.numLayers, (l, b) => {
          const p = `model.layers.${l}.`;
          const t = [
            { file: `${p}input_layernorm.weight`, op: 'copy', to: [`${b}norm1.weight`], shape: [E] },
            { file: `${p}self_attn.q_proj.weight`, op: 'copy', to: [`${b}attn.wq`], shape: [E, E] },
            { file: `${p}self_attn.k_proj.weight`, op: 'copy', to: [`${b}attn.wk`], shape: [Ekv, E] },
            { file: `${p}self_attn.v_proj.weight`, op: 'copy', to: [`${b}attn.wv`], shape: [Ekv, E] },
            { file: `${p}self_attn.o_proj.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, E] },
            { file: `${p}post_attention_layernorm.weight`, op: 'copy', to: [`${b}norm2.weight`], shape: [E] },
            { file: `${p}mlp.gate_proj.weight`, op: 'copy', to: [`${b}ffn.wg`], shape: [F, E] },
            { file: `${p}mlp.up_proj.weight`, op: 'copy', to: [`${b}ffn.w1`], shape: [F, E] },
            { file: `${p}mlp.down_proj.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] },
          ];
          if (qb) {
            t.push(
              { file: `${p}self_attn.q_proj.bias`, op: 'copy', to: [`${b}attn.bq`], shape: [E] },
              { file: `${p}self_attn.k_proj.bias`, op: 'copy', to: [`${b}attn.bk`], shape: [Ekv] },
              { file: `${p}self_attn.v_proj.bias`, op: 'copy', to: [`${b}attn.bv`], shape: [Ekv] },
            );
          }
          if (ob) t.push({ file: `${p}self_attn.o_proj.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] });
          if (fb) {
            t.push(
              { file: `${p}mlp.up_proj.bias`, op: 'copy', to: [`${b}ffn.b1`], shape: [F] },
              { file: `${p}mlp.down_proj.bias`, op: 'copy', to: [`${b}ffn.b2`], shape: [E] },
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
  },

  bert: {
    prefixes: ['bert.', ''],
    savePrefix: 'bert.',
    ignore: [/^(bert\.)?pooler\./, /^(bert\.)?embeddings\.position_ids$/, /^cls\.predictions\.decoder\.weight$/, /^cls\.seq_relationship\./],
    config(hf, names) {
      /** @type {any} */
      const c = {
        ...standardSizes(hf),
        eps: num(hf, ['layer_norm_eps'], 1e-12),
        typeVocab: int(hf, ['type_vocab_size'], { fallback: 2 }),
      };
      c.numKvHeads = c.numHeads;
      divisible(c);
      const act = pick(hf, ['hidden_act'], 'gelu');
      if (act !== 'gelu') throw rangeError(WHERE, `config.json hidden_act ${describe(act)} is not supported for bert; allowed: gelu`);
      const pe = own(hf, 'position_embedding_type');
      if (pe !== undefined && pe !== 'absolute') throw rangeError(WHERE, `config.json position_embedding_type ${describe(pe)} is not supported; allowed: absolute`);
      const mlm = names.has('cls.predictions.transform.dense.weight');
      c.core = {
        positional: 'learned', causal: false, prenorm: false, norm: 'layernorm', activation: 'gelu',
        typeVocab: c.typeVocab, embedNorm: true, mlmHead: mlm, hasHead: mlm, tieEmbeddings: true, headBias: true, qkvBias: true, outBias: true,
      };
      return c;
    },
    tensors(c) {
      const E = c.embedDim, F = c.ffnDim;
      const ln = (file, to) => [
        { file: `${file}.weight`, alias: `${file}.gamma`, op: 'copy', to: [`${to}.weight`], shape: [E] },
        { file: `${file}.bias`, alias: `${file}.beta`, op: 'copy', to: [`${to}.bias`], shape: [E] },
      ];
      const lin = (file, w, bias, shape) => [
        { file: `${file}.weight`, op: 'copy', to: [w], shape },
        { file: `${file}.bias`, op: 'copy', to: [bias], shape: [shape[0]] },
      ];
      const list = [
        { file: 'embeddings.word_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
        { file: 'embeddings.position_embeddings.weight', op: 'copy', to: ['pos.weight'], shape: [c.maxPositions, E] },
        { file: 'embeddings.token_type_embeddings.weight', op: 'copy', to: ['type.weight'], shape: [c.typeVocab, E] },
        ...ln('embeddings.LayerNorm', 'embed_norm'),
        ...blocks(c.numLayers, (l, b) => {
          const p = `encoder.layer.${l}.`;
          return [
            ...lin(`${p}attention.self.query`, `${b}attn.wq`, `${b}attn.bq`, [E, E]),
            ...lin(`${p}attention.self.key`, `${b}attn.wk`, `${b}attn.bk`, [E, E]),
            ...lin(`${p}attention.self.value`, `${b}attn.wv`, `${b}attn.bv`, [E, E]),
            ...lin(`${p}attention.output.dense`, `${b}attn.wo`, `${b}attn.bo`, [E, E]),
            ...ln(`${p}attention.output.LayerNorm`, `${b}norm1`),
            ...lin(`${p}intermediate.dense`, `${b}ffn.w1`, `${b}ffn.b1`, [F, E]),
            ...lin(`${p}output.dense`, `${b}ffn.w2`, `${b}ffn.b2`, [E, F]),
            ...ln(`${p}output.LayerNorm`, `${b}norm2`),
          ];
        }),
      ];
      if (c.core.mlmHead) {
        list.push(
          // The head's tensors sit outside the `bert.` prefix.
          ...lin('cls.predictions.transform.dense', 'mlm.dense.weight', 'mlm.dense.bias', [E, E]).map((t) => ({ ...t, absolute: true })),
          ...ln('cls.predictions.transform.LayerNorm', 'mlm.norm').map((t) => ({ ...t, absolute: true })),
          { file: 'cls.predictions.bias', alias: 'cls.predictions.decoder.bias', op: 'copy', to: ['head.bias'], shape: [c.vocabSize], absolute: true },
        );
      }
      return list;
    },
  },
};

export const SUPPORTED = Object.freeze(Object.keys(ARCHITECTURES));

/** The architecture table for a config.json's model_type, or a clear Error. */
export function architectureOf(hf) {
  if (hf === null || typeof hf !== 'object' || Array.isArray(hf)) {
    throw typeError(WHERE, `config must be the parsed config.json (an object), got ${describe(hf)}`);
  }
  const type = own(hf, 'model_type');
  if (type === undefined) throw rangeError(WHERE, `config.json has no "model_type"; supported: ${SUPPORTED.join(', ')}`);
  if (typeof type !== 'string' || !Object.hasOwn(ARCHITECTURES, type)) {
    throw rangeError(WHERE, `model_type ${describe(type)} is not supported; supported: ${SUPPORTED.join(', ')}`);
  }
  return { type, arch: ARCHITECTURES[type] };
}
