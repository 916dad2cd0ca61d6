// The post-LN encoder-decoders of transformers' BART lineage
// (models/bart/modeling_bart.py; Marian's modeling_marian.py copies its
// layers): config.json keys, tensor names and layouts onto two block graphs,
// an encoder (no head) and a decoder whose blocks read the encoder's output
// through cross-attention (the core's crossAttention, src/train/train.h).
//   Encoder layer  x = self_attn_layer_norm(x + self_attn(x))
//                  x = final_layer_norm(x + fc2(act(fc1(x))))
//   Decoder layer  x = self_attn_layer_norm(x + self_attn(x))   (causal)
//                  x = encoder_attn_layer_norm(x + encoder_attn(x, enc))
//                  x = final_layer_norm(x + fc2(act(fc1(x))))
//   Head           logits = x·sharedᵀ + final_logits_bias (lm_head tied to
//                  model.shared, the embedding both stacks read)
// The tables' `to` names carry the graph they go to: 'encoder:…' or
// 'decoder:…' (load.js). marian.js and bart.js add their embeddings.
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, int, configValue } from './config-keys.js';

/** transformers' activation_function → the block graph's activation. */
const ACTIVATIONS = { gelu: 'gelu', gelu_new: 'gelu_new', swish: 'silu', silu: 'silu', relu: 'relu' };

export const SEQ2SEQ_KEYS = {
  embedDim: ['d_model'], vocabSize: ['vocab_size'], maxPositions: ['max_position_embeddings'],
  encoderLayers: ['encoder_layers'], decoderLayers: ['decoder_layers'],
  encoderHeads: ['encoder_attention_heads'], decoderHeads: ['decoder_attention_heads'],
  encoderFfn: ['encoder_ffn_dim'], decoderFfn: ['decoder_ffn_dim'],
  activation: ['activation_function'], scaleEmbedding: ['scale_embedding'],
  decoderStart: ['decoder_start_token_id'],
};

/** The normalised config of a BART-style model_type `type` (core fields without the embeddings' ones). */
export function seq2seqConfig(hf, type, { activation: defaultAct = 'gelu', scaleEmbedding: defaultScale = false } = {}) {
  const K = SEQ2SEQ_KEYS;
  const E = int(hf, K.embedDim);
  const c = {
    numLayers: int(hf, K.decoderLayers, { max: 256 }), numHeads: int(hf, K.decoderHeads), embedDim: E,
    ffnDim: int(hf, K.decoderFfn), vocabSize: int(hf, K.vocabSize, { min: 2 }), maxPositions: int(hf, K.maxPositions),
    eps: 1e-5, isEncoderDecoder: true,
  };
  c.numKvHeads = c.numHeads;
  const start = own(hf, 'decoder_start_token_id');
  if (start === undefined || start === null) {
    throw rangeError(WHERE, `config.json has no "decoder_start_token_id": ${type}'s decoder starts from it (${type === 'marian' ? 'the pad id, ' : ''}set it in config.json)`);
  }
  c.decoderStartTokenId = int(hf, K.decoderStart, { min: 0, max: c.vocabSize - 1 });
  const dv = own(hf, 'decoder_vocab_size');
  if (dv !== undefined && dv !== null && dv !== c.vocabSize) {
    throw rangeError(WHERE, `config.json decoder_vocab_size (${describe(dv)}) differs from vocab_size (${c.vocabSize}): separate target vocabularies are not supported; allowed: equal`);
  }
  if (own(hf, 'share_encoder_decoder_embeddings') === false) {
    throw rangeError(WHERE, `config.json share_encoder_decoder_embeddings: false is not supported for ${type}; allowed: true (one model.shared embedding)`);
  }
  if (own(hf, 'tie_word_embeddings') === false) {
    throw rangeError(WHERE, `config.json tie_word_embeddings: false is not supported for ${type} (lm_head is tied to model.shared); allowed: true`);
  }
  const act = configValue(hf, K.activation, defaultAct);
  if (typeof act !== 'string' || !Object.hasOwn(ACTIVATIONS, act)) {
    throw rangeError(WHERE, `config.json activation_function ${describe(act)} is not supported for ${type}; allowed: ${Object.keys(ACTIVATIONS).join(', ')}`);
  }
  const scale = configValue(hf, K.scaleEmbedding, defaultScale);
  if (typeof scale !== 'boolean') throw rangeError(WHERE, `config.json scale_embedding must be true or false, got ${describe(scale)}`);
  const encoder = { numLayers: int(hf, K.encoderLayers, { max: 256 }), numHeads: int(hf, K.encoderHeads), ffnDim: int(hf, K.encoderFfn) };
  for (const [what, h] of [['decoder_attention_heads', c.numHeads], ['encoder_attention_heads', encoder.numHeads]]) {
    if (E % h !== 0) throw rangeError(WHERE, `config.json d_model (${E}) must be divisible by ${what} (${h})`);
  }
  const common = {
    prenorm: false, norm: 'layernorm', activation: ACTIVATIONS[act], tieEmbeddings: true,
    // embed_scale: sqrt(d_model) when scale_embedding (as transformers computes it, in float64, applied in float32)
    embedScale: scale ? Math.sqrt(E) : 1,
  };
  c.core = { ...common, causal: true, crossAttention: true, hasHead: true, headBias: true };
  c.encoder = { ...encoder, core: { ...common, causal: false, hasHead: false, headBias: false } };
  return c;
}

const ATTN = [['q_proj', 'wq', 'bq'], ['k_proj', 'wk', 'bk'], ['v_proj', 'wv', 'bv'], ['out_proj', 'wo', 'bo']];

function linear(file, w, b, shape, graph) {
  return [
    { file: `${file}.weight`, op: 'copy', to: [`${graph}:${w}`], shape },
    { file: `${file}.bias`, op: 'copy', to: [`${graph}:${b}`], shape: [shape[0]] },
  ];
}

function layerNorm(file, to, E, graph) {
  return [
    { file: `${file}.weight`, op: 'copy', to: [`${graph}:${to}.weight`], shape: [E] },
    { file: `${file}.bias`, op: 'copy', to: [`${graph}:${to}.bias`], shape: [E] },
  ];
}

/** The layers of both stacks and the head's bias; `embeddings(stack)` adds each stack's embedding tensors. */
export function seq2seqTensors(c, embeddings) {
  const E = c.embedDim, V = c.vocabSize;
  const list = [];
  for (const [stack, n, F] of [['encoder', c.encoder.numLayers, c.encoder.ffnDim], ['decoder', c.numLayers, c.ffnDim]]) {
    // model.shared is the embedding of both stacks: each graph holds it.
    list.push({ file: 'model.shared.weight', alias: `model.${stack}.embed_tokens.weight`, op: 'copy', to: [`${stack}:embed.weight`], shape: [V, E] });
    list.push(...embeddings(stack));
    for (let l = 0; l < n; l++) {
      const p = `model.${stack}.layers.${l}.`, b = `blocks.${l}.`;
      for (const [f, w, bias] of ATTN) list.push(...linear(`${p}self_attn.${f}`, `${b}attn.${w}`, `${b}attn.${bias}`, [E, E], stack));
      list.push(...layerNorm(`${p}self_attn_layer_norm`, `${b}norm1`, E, stack));
      if (stack === 'decoder') {
        for (const [f, w, bias] of ATTN) list.push(...linear(`${p}encoder_attn.${f}`, `${b}xattn.${w}`, `${b}xattn.${bias}`, [E, E], stack));
        list.push(...layerNorm(`${p}encoder_attn_layer_norm`, `${b}norm_x`, E, stack));
      }
      list.push(...linear(`${p}fc1`, `${b}ffn.w1`, `${b}ffn.b1`, [F, E], stack));
      list.push(...linear(`${p}fc2`, `${b}ffn.w2`, `${b}ffn.b2`, [E, F], stack));
      list.push(...layerNorm(`${p}final_layer_norm`, `${b}norm2`, E, stack));
    }
  }
  list.push({ file: 'final_logits_bias', op: 'copy', to: ['decoder:head.bias'], shape: [1, V], why: 'a buffer [1, vocab_size]' });
  return list;
}

/** Names a file may hold that the tables do not read: the tied copies of model.shared. */
export const SEQ2SEQ_IGNORE = [/^model\.(encoder|decoder)\.embed_tokens\.weight$/, /^lm_head\.weight$/];
