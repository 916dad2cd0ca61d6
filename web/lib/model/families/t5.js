// T5 (transformers' T5ForConditionalGeneration, models/t5/modeling_t5.py):
// the original T5 (feed_forward_proj "relu") and v1.1 / Flan-T5
// ("gated-gelu": wi_0 the gate through gelu_new, times wi_1), onto an encoder
// graph and a crossAttention decoder graph (as seq2seq.js), pre-norm:
//   x0 = shared(ids)  (no scale, no position table)
//   self-attention  x += o(attn(RMS(x)))  with T5LayerNorm = the block
//                   graph's RMSNorm (no mean, no bias, layer_norm_epsilon);
//                   no 1/√d scaling (attnScale 1), inner width num_heads·d_kv
//                   (headDim), no biases; block 0's relative_attention_bias
//                   [num_buckets, H] bucketed by key − query position
//                   (bidirectional in the encoder, causal in the decoder) is
//                   added to every layer's scores: the graph's relativeBuckets
//   (decoder) EncDecAttention  x += o(attn(RMS(x), encoder output)), no bias
//   DenseReluDense  x += wo(act(wi(RMS(x)))) or wo(act(wi_0(·)) ⊙ wi_1(·))
//   final_layer_norm after each stack
//   head  lm_head(x·d_model^-0.5) tied to shared (tie_word_embeddings, the
//         original) or lm_head(x) (v1.1 / Flan: untied); no bias
// Decoding starts from decoder_start_token_id (the pad id). T5 has no
// position limit; the graph's length is n_positions (default 512).
import { rangeError, describe } from '../../errors.js';
import { WHERE, own, int, num, configValue } from './config-keys.js';

const KEYS = {
  embedDim: ['d_model'], headDim: ['d_kv'], numHeads: ['num_heads'], ffnDim: ['d_ff'], numLayers: ['num_layers'],
  decoderLayers: ['num_decoder_layers'], vocabSize: ['vocab_size'], eps: ['layer_norm_epsilon'],
  buckets: ['relative_attention_num_buckets'], maxDistance: ['relative_attention_max_distance'],
  ffProj: ['feed_forward_proj'], positions: ['n_positions'], decoderStart: ['decoder_start_token_id'],
};
/** feed_forward_proj → the block graph's activation (T5Config: "gated-gelu" is gelu_new). */
const PROJ = { relu: 'relu', gelu: 'gelu', silu: 'silu', 'gated-gelu': 'geglu_tanh', 'gated-silu': 'swiglu' };

export const t5 = {
  keys: KEYS,
  prefixes: [''],
  ignore: [/^(encoder|decoder)\.embed_tokens\.weight$/],
  // a tied head: lm_head.weight, when the file holds it, is shared's copy
  extraIgnore: (c) => (c.core.tieEmbeddings ? [/^lm_head\.weight$/] : []),
  config(hf) {
    const E = int(hf, KEYS.embedDim), H = int(hf, KEYS.numHeads), D = int(hf, KEYS.headDim);
    const Ne = int(hf, KEYS.numLayers, { max: 256 });
    const c = {
      numLayers: int(hf, KEYS.decoderLayers, { max: 256, fallback: Ne }), numHeads: H, numKvHeads: H, embedDim: E, headDim: D,
      ffnDim: int(hf, KEYS.ffnDim), vocabSize: int(hf, KEYS.vocabSize, { min: 2 }), maxPositions: int(hf, KEYS.positions, { fallback: 512 }),
      eps: num(hf, KEYS.eps, 1e-6), isEncoderDecoder: true,
    };
    const start = own(hf, 'decoder_start_token_id');
    if (start === undefined || start === null) {
      throw rangeError(WHERE, 'config.json has no "decoder_start_token_id": t5\'s decoder starts from it (the pad id, 0; set it in config.json)');
    }
    c.decoderStartTokenId = int(hf, KEYS.decoderStart, { min: 0, max: c.vocabSize - 1 });
    const proj = configValue(hf, KEYS.ffProj, 'relu');
    if (typeof proj !== 'string' || !Object.hasOwn(PROJ, proj)) {
      throw rangeError(WHERE, `config.json feed_forward_proj ${describe(proj)} is not supported for t5; allowed: ${Object.keys(PROJ).join(', ')}`);
    }
    const buckets = int(hf, KEYS.buckets, { min: 4, max: 4096, fallback: 32 });
    const maxDistance = int(hf, KEYS.maxDistance, { min: 2, fallback: 128 });
    if (maxDistance <= buckets / 2) {
      // (the decoder's buckets / 2 exact ones; log(max_distance / exact) would be 0 or negative)
      throw rangeError(WHERE, `config.json relative_attention_max_distance (${maxDistance}) must exceed relative_attention_num_buckets / 2 (${buckets / 2})`);
    }
    const tied = own(hf, 'tie_word_embeddings') !== false;
    const common = {
      positional: 'none', prenorm: true, norm: 'rmsnorm', activation: PROJ[proj], qkvBias: false, outBias: false, ffnBias: false,
      attnScale: 1, headDim: D, relativeBuckets: buckets,
      relativeMaxDistance: maxDistance, tieEmbeddings: tied, headBias: false,
    };
    c.core = { ...common, causal: true, crossAttention: true, hasHead: true, headScale: tied ? E ** -0.5 : 1 };
    c.encoder = { numLayers: Ne, numHeads: H, ffnDim: c.ffnDim, core: { ...common, causal: false, hasHead: false } };
    c.gated = proj.startsWith('gated-');
    return c;
  },
  tensors(c) {
    const E = c.embedDim, V = c.vocabSize, HD = c.numHeads * c.headDim, F = c.ffnDim;
    const list = [];
    const copy = (file, to, shape, graph) => list.push({ file, op: 'copy', to: [`${graph}:${to}`], shape });
    for (const [stack, n] of [['encoder', c.encoder.numLayers], ['decoder', c.numLayers]]) {
      list.push({ file: 'shared.weight', alias: `${stack}.embed_tokens.weight`, op: 'copy', to: [`${stack}:embed.weight`], shape: [V, E] });
      copy(`${stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight`, 'rel_bias.weight', [c.core.relativeBuckets, c.numHeads], stack);
      for (let l = 0; l < n; l++) {
        const p = `${stack}.block.${l}.layer.`, b = `blocks.${l}.`;
        const attn = [['0.SelfAttention', 'attn', 'norm1']];
        if (stack === 'decoder') attn.push(['1.EncDecAttention', 'xattn', 'norm_x']);
        for (const [name, to, norm] of attn) {
          for (const x of ['q', 'k', 'v']) copy(`${p}${name}.${x}.weight`, `${b}${to}.w${x}`, [HD, E], stack);
          copy(`${p}${name}.o.weight`, `${b}${to}.wo`, [E, HD], stack);
          copy(`${p}${name[0]}.layer_norm.weight`, `${b}${norm}.weight`, [E], stack);
        }
        const ff = `${p}${attn.length}.DenseReluDense.`;
        if (c.gated) {
          copy(`${ff}wi_0.weight`, `${b}ffn.wg`, [F, E], stack);
          copy(`${ff}wi_1.weight`, `${b}ffn.w1`, [F, E], stack);
        } else {
          copy(`${ff}wi.weight`, `${b}ffn.w1`, [F, E], stack);
        }
        copy(`${ff}wo.weight`, `${b}ffn.w2`, [E, F], stack);
        copy(`${p}${attn.length}.layer_norm.weight`, `${b}norm2.weight`, [E], stack);
      }
      copy(`${stack}.final_layer_norm.weight`, 'final_norm.weight', [E], stack);
    }
    if (!c.core.tieEmbeddings) copy('lm_head.weight', 'head.weight', [V, E], 'decoder');
    return list;
  },
};
