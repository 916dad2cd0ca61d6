// The readers and the tensor list shared by the decoder families over Llama's
// names (qwen3.js, mistral.js, gemma.js, gemma2.js, gemma3-text.js, phi3.js):
// transformers' <Family>ForCausalLM saves model.embed_tokens,
// model.layers.<l>.{input_layernorm, self_attn.*, post_attention_layernorm,
// mlp.*}, model.norm and lm_head, with an explicit head_dim (Wq [H·D, E],
// Wk/Wv [Hkv·D, E], Wo [E, H·D]). Each family file reads what differs and
// sets the block graph's fields (TransformerConfig, src/train/train.h) in
// c.core; a field the family does not use is left out (its default).
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, configValue, int, num, standardSizes, blocks } from './config-keys.js';

/** The names of one block under its prefix `model.layers.<l>.`. */
export const DECODER_LAYER = {
  norm1: 'input_layernorm',
  q: 'self_attn.q_proj', k: 'self_attn.k_proj', v: 'self_attn.v_proj', o: 'self_attn.o_proj',
  qkv: 'self_attn.qkv_proj', qNorm: 'self_attn.q_norm', kNorm: 'self_attn.k_norm',
  norm2: 'post_attention_layernorm', preFfn: 'pre_feedforward_layernorm', postFfn: 'post_feedforward_layernorm',
  gate: 'mlp.gate_proj', up: 'mlp.up_proj', down: 'mlp.down_proj', gateUp: 'mlp.gate_up_proj',
};
const layerPrefix = (l) => `model.layers.${l}.`;

/** A finite number > 0 under `key`, `fallback` when absent (undefined); null when the file says null. */
export function optionalPositive(hf, key, fallback) {
  const v = own(hf, key);
  if (v === null) return null;
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw rangeError(WHERE, `config.json ${JSON.stringify(key)} must be a finite number > 0 or null, got ${describe(v)}`);
  }
  return v;
}

/**
 * The RoPE parameters of transformers ≥ 5 (`rope_parameters`: one dict, or
 * one per layer type as Gemma 3 writes them), or null.
 */
function ropeParameters(hf, layerType) {
  const p = own(hf, 'rope_parameters');
  if (p === undefined || p === null) return null;
  if (typeof p !== 'object' || Array.isArray(p)) throw rangeError(WHERE, `config.json rope_parameters must be an object or null, got ${describe(p)}`);
  const per = layerType !== undefined ? own(p, layerType) : undefined;
  return per && typeof per === 'object' && !Array.isArray(per) ? per : p;
}

/** Refuses a RoPE variant the block graph does not run (only the default inv_freq = θ^(-2i/R)). */
function checkRopeType(spec, key, family) {
  if (spec === undefined || spec === null) return;
  const type = spec && typeof spec === 'object' && !Array.isArray(spec) ? (own(spec, 'rope_type') ?? own(spec, 'type') ?? 'default') : spec;
  if (type !== 'default') {
    throw rangeError(WHERE, `config.json ${key} type ${describe(type)} is not supported for ${family} (the block graph runs plain RoPE, inv_freq = rope_theta^(-2i/d), without scaling); allowed: "default" or null`);
  }
}

/**
 * The RoPE base: `rope_parameters.rope_theta` (transformers ≥ 5) or the
 * first of `keys`, else `fallback` (the family's config default). Refuses
 * rope_scaling / rope_parameters types other than "default".
 */
export function ropeBase(hf, family, { keys = ['rope_theta'], fallback = 10000, layerType = undefined } = {}) {
  checkRopeType(own(hf, 'rope_scaling'), 'rope_scaling', family);
  const p = ropeParameters(hf, layerType);
  checkRopeType(p, 'rope_parameters', family);
  if (p && own(p, 'rope_theta') !== undefined && own(p, 'rope_theta') !== null) return num(p, ['rope_theta'], undefined);
  return num(hf, keys, fallback);
}

/** `partial_rotary_factor` (or `rope_parameters.partial_rotary_factor`, or `keys`), a number in (0, 1]. */
export function rotaryFactor(hf, { keys = ['partial_rotary_factor'], fallback = 1 } = {}) {
  const p = ropeParameters(hf);
  let key = keys.find((k) => own(hf, k) !== undefined && own(hf, k) !== null);
  let v = key !== undefined ? own(hf, key) : undefined;
  if (v === undefined && p && own(p, 'partial_rotary_factor') !== undefined) {
    key = 'rope_parameters.partial_rotary_factor';
    v = own(p, 'partial_rotary_factor');
  }
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !(v > 0 && v <= 1)) throw rangeError(WHERE, `config.json ${key} must be a number in (0, 1], got ${describe(v)}`);
  return v;
}

/**
 * The rotary width R = int(D · factor) (transformers' rotary_ndims /
 * `dim = int(head_dim * partial_rotary_factor)`), even and > 0; the block
 * graph's rotaryDim (0 when R = D).
 */
export function rotaryDimOf(D, factor, key, family) {
  const R = Math.floor(D * factor);
  if (R <= 0 || R % 2 !== 0) {
    throw rangeError(WHERE, `config.json ${key} ${factor} gives ${R} rotary dims of the head's ${D} for ${family}; the block graph needs an even number > 0`);
  }
  return R === D ? 0 : R;
}

/**
 * The standard sizes, eps, the KV heads and the head dim D (`head_dim`,
 * else `headDim`, the family's default, else hidden/heads).
 */
export function decoderSizes(hf, family, { eps = 1e-6, headDim = undefined } = {}) {
  /** @type {any} */
  const c = { ...standardSizes(hf), eps: num(hf, ['rms_norm_eps'], eps) };
  c.numKvHeads = int(hf, ['num_key_value_heads'], { fallback: c.numHeads });
  if (c.numHeads % c.numKvHeads !== 0) {
    throw rangeError(WHERE, `config.json: num_key_value_heads (${c.numKvHeads}) must divide num_attention_heads (${c.numHeads})`);
  }
  const given = own(hf, 'head_dim');
  if ((given === undefined || given === null) && headDim === undefined && c.embedDim % c.numHeads !== 0) {
    throw rangeError(WHERE, `config.json has no "head_dim" and hidden_size (${c.embedDim}) is not divisible by num_attention_heads (${c.numHeads}) (model_type ${JSON.stringify(family)} needs one of them)`);
  }
  c.headDim = int(hf, ['head_dim'], { fallback: headDim ?? c.embedDim / c.numHeads, max: 65536 });
  if (c.headDim % 2 !== 0) throw rangeError(WHERE, `config.json: the head dim (${c.headDim}) must be even for RoPE`);
  return c;
}

/** The MLP activation of `keys` (the first present), mapped through `allowed` to the block graph's. */
export function activationOf(hf, family, keys, allowed, fallback) {
  const key = keys.find((k) => own(hf, k) !== undefined && own(hf, k) !== null) ?? keys[0];
  const v = configValue(hf, keys, fallback);
  if (typeof v !== 'string' || !Object.hasOwn(allowed, v)) {
    throw rangeError(WHERE, `config.json ${key} ${describe(v)} is not supported for ${family}; allowed: ${Object.keys(allowed).join(', ')}`);
  }
  return allowed[v];
}

/** tie_word_embeddings (the family's default when absent), a boolean. */
export function tiedOf(hf, fallback) {
  const v = configValue(hf, ['tie_word_embeddings'], fallback);
  if (typeof v !== 'boolean') throw rangeError(WHERE, `config.json tie_word_embeddings must be true or false, got ${describe(v)}`);
  return v;
}

/** A boolean key, `fallback` when absent or null. */
export function flagOf(hf, key, fallback) {
  const v = configValue(hf, [key], fallback);
  if (typeof v !== 'boolean') throw rangeError(WHERE, `config.json ${key} must be true or false, got ${describe(v)}`);
  return v;
}

/**
 * transformers' layer_types: one 'full_attention' or 'sliding_attention' per
 * layer, else `fallback(i)` → the block graph's layer kinds, 'g' (global)
 * or 'l' (local) per layer.
 */
export function layerKindsOf(hf, family, n, fallback) {
  const types = own(hf, 'layer_types');
  if (types === undefined || types === null) return Array.from({ length: n }, (_, i) => (fallback(i) ? 'l' : 'g')).join('');
  if (!Array.isArray(types) || types.length !== n) {
    throw rangeError(WHERE, `config.json layer_types must be a list of ${n} entries (num_hidden_layers), got ${describe(types)}`);
  }
  return types.map((t, i) => {
    if (t === 'full_attention') return 'g';
    if (t === 'sliding_attention') return 'l';
    throw rangeError(WHERE, `config.json layer_types entry ${describe(t)} (layer ${i}) is not supported for ${family}; allowed: "full_attention", "sliding_attention"`);
  }).join('');
}

/**
 * The block graph's window fields for layer kinds and a window: none when
 * no layer is local; else slidingWindow, and layerKinds unless every layer is
 * local ('' means all local).
 */
export function windowFields(kinds, window, family, key = 'sliding_window') {
  if (!kinds.includes('l')) return {};
  if (window === null || window === undefined) {
    throw rangeError(WHERE, `config.json ${key} is null, but layers ${[...kinds].flatMap((k, i) => (k === 'l' ? [i] : [])).join(', ')} are sliding-window layers for ${family}; give the window`);
  }
  if (!Number.isSafeInteger(window) || window < 1) throw rangeError(WHERE, `config.json ${key} must be an integer ≥ 1 or null, got ${describe(window)}`);
  return /g/.test(kinds) ? { slidingWindow: window, layerKinds: kinds } : { slidingWindow: window };
}

/** An integer window under `key`: `fallback` when absent, null when null. */
export function windowOf(hf, key, fallback) {
  const v = own(hf, key);
  if (v === undefined) return fallback;
  if (v === null) return null;
  if (!Number.isSafeInteger(v) || v < 1) throw rangeError(WHERE, `config.json ${key} must be an integer ≥ 1 or null, got ${describe(v)}`);
  return v;
}

/** Refuses use_bidirectional_attention: true (Gemma's encoder use; the families run causal). */
export function refuseBidirectional(hf, family) {
  const v = own(hf, 'use_bidirectional_attention');
  if (v !== undefined && v !== null && v !== false) {
    throw rangeError(WHERE, `config.json use_bidirectional_attention ${describe(v)} is not supported for ${family} (the decoder runs causal attention); allowed: false or null`);
  }
}

/** The block graph fields every Llama-shaped decoder shares; headDim only when D ≠ E/H. */
export function decoderCore(c, { activation, qkvBias = false, outBias = false, tieEmbeddings }) {
  return {
    positional: 'rope', ropeTheta: c.ropeTheta, causal: true, prenorm: true, norm: 'rmsnorm', activation,
    numKvHeads: c.numKvHeads, qkvBias, outBias, ffnBias: false, tieEmbeddings, headBias: false,
    ...(c.headDim !== c.embedDim / c.numHeads ? { headDim: c.headDim } : {}),
  };
}

/**
 * Round a number to a file dtype's nearest value (to float32 first, as the
 * reference does; then round to nearest even at the dtype's precision).
 * @param {number} v
 * @param {string} dtype 'F32' | 'F16' | 'BF16' | 'F64'
 */
export function roundToDtype(v, dtype) {
  const f = Math.fround(v);
  if (dtype === 'BF16') return roundMantissa(f, 7, -126);
  if (dtype === 'F16') return roundMantissa(f, 10, -14);
  return f; // F32; F64 too, as the block graph holds float
}

function roundMantissa(v, bits, minExp) {
  if (v === 0 || !Number.isFinite(v)) return v;
  const a = Math.abs(v);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (Math.max(e, minExp) - bits);
  const q = a / ulp; // exact: a power-of-two quotient
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && r % 2 === 1)) r++;
  return Math.sign(v) * r * ulp;
}

/**
 * Gemma's embedding scale: √hidden rounded to the embedding's dtype, as
 * transformers' GemmaModel does (`torch.tensor(hidden_size**0.5,
 * dtype=hidden_states.dtype)`; Gemma3TextScaledWordEmbedding:
 * `embed_scale.to(self.weight.dtype)`); bf16: √2048 → 45.25.
 */
export function gemmaEmbedScale(c, dtypeOf) {
  c.core.embedScale = roundToDtype(Math.sqrt(c.embedDim), dtypeOf('model.embed_tokens.weight') ?? 'F32');
}

/**
 * The tensors of a Llama-shaped decoder (c: the normalised config with
 * headDim and core):
 *   normOp  the layout op of every RMSNorm weight ('copy', or 'add-one' for
 *           Gemma's x·(1 + w))
 *   fused   Phi-3's qkv_proj [H·D + 2·Hkv·D, E] and gate_up_proj [2F, E]
 * q/k norms when core.qkNorm; the four norms of Gemma 2/3 when
 * core.sandwichNorm (norm2 is then pre_feedforward_layernorm).
 */
export function decoderTensors(c, { normOp = 'copy', fused = false } = {}) {
  const E = c.embedDim, F = c.ffnDim, D = c.headDim, H = c.numHeads, Hkv = c.numKvHeads;
  const q = H * D, kv = Hkv * D;
  const k = c.core;
  const L = DECODER_LAYER;
  const whyQ = `num_attention_heads ${H} × head_dim ${D}`;
  const whyKv = `num_key_value_heads ${Hkv} × head_dim ${D}`;
  const list = [
    { file: 'model.embed_tokens.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
    ...blocks(c.numLayers, (l, b) => {
      const p = layerPrefix(l);
      const nrm = (name, to, n = E) => ({ file: `${p}${name}.weight`, op: normOp, to: [`${b}${to}.weight`], shape: [n] });
      const t = [nrm(L.norm1, 'norm1')];
      if (fused) {
        t.push({
          file: `${p}${L.qkv}.weight`, op: 'split-rows', sizes: [q, kv, kv], to: [`${b}attn.wq`, `${b}attn.wk`, `${b}attn.wv`],
          shape: [q + 2 * kv, E], why: `(num_attention_heads ${H} + 2 × num_key_value_heads ${Hkv}) × head_dim ${D}`,
        });
      } else {
        t.push(
          { file: `${p}${L.q}.weight`, op: 'copy', to: [`${b}attn.wq`], shape: [q, E], why: whyQ },
          { file: `${p}${L.k}.weight`, op: 'copy', to: [`${b}attn.wk`], shape: [kv, E], why: whyKv },
          { file: `${p}${L.v}.weight`, op: 'copy', to: [`${b}attn.wv`], shape: [kv, E], why: whyKv },
        );
        if (k.qkvBias) {
          t.push(
            { file: `${p}${L.q}.bias`, op: 'copy', to: [`${b}attn.bq`], shape: [q], why: whyQ },
            { file: `${p}${L.k}.bias`, op: 'copy', to: [`${b}attn.bk`], shape: [kv], why: whyKv },
            { file: `${p}${L.v}.bias`, op: 'copy', to: [`${b}attn.bv`], shape: [kv], why: whyKv },
          );
        }
      }
      t.push({ file: `${p}${L.o}.weight`, op: 'copy', to: [`${b}attn.wo`], shape: [E, q], why: whyQ });
      if (k.outBias) t.push({ file: `${p}${L.o}.bias`, op: 'copy', to: [`${b}attn.bo`], shape: [E] });
      if (k.qkNorm) t.push(nrm(L.qNorm, 'attn.q_norm', D), nrm(L.kNorm, 'attn.k_norm', D));
      if (k.sandwichNorm) {
        t.push(nrm(L.norm2, 'post_attn_norm'), nrm(L.preFfn, 'norm2'), nrm(L.postFfn, 'post_ffn_norm'));
      } else {
        t.push(nrm(L.norm2, 'norm2'));
      }
      if (fused) {
        t.push({ file: `${p}${L.gateUp}.weight`, op: 'split-rows', sizes: [F, F], to: [`${b}ffn.wg`, `${b}ffn.w1`], shape: [2 * F, E], why: `2 × intermediate_size ${F}` });
      } else {
        t.push(
          { file: `${p}${L.gate}.weight`, op: 'copy', to: [`${b}ffn.wg`], shape: [F, E] },
          { file: `${p}${L.up}.weight`, op: 'copy', to: [`${b}ffn.w1`], shape: [F, E] },
        );
      }
      t.push({ file: `${p}${L.down}.weight`, op: 'copy', to: [`${b}ffn.w2`], shape: [E, F] });
      return t;
    }),
    { file: 'model.norm.weight', op: normOp, to: ['final_norm.weight'], shape: [E] },
  ];
  if (!k.tieEmbeddings) list.push({ file: 'lm_head.weight', op: 'copy', to: ['head.weight'], shape: [c.vocabSize, E] });
  return list;
}

/** What the Llama-shaped families share beyond config() and tensors(). */
export const DECODER_TABLE = {
  prefixes: [''],
  savePrefix: '',
  ignore: [/^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/],
  extraIgnore(c) {
    return c.core.tieEmbeddings ? [/^lm_head\.weight$/] : [];
  },
};

/** config.json keys every Llama-shaped family reads (beyond the standard sizes). */
export const DECODER_KEYS = {
  eps: ['rms_norm_eps'],
  ropeTheta: ['rope_theta'],
  numKvHeads: ['num_key_value_heads'],
  headDim: ['head_dim'],
  tieEmbeddings: ['tie_word_embeddings'],
};
