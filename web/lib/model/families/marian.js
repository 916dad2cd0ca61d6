// Marian (the opus-mt translation models; transformers' MarianMTModel,
// models/marian/modeling_marian.py): seq2seq.js's post-LN encoder-decoder
// with Marian's embeddings:
//   x0 = embed_tokens(ids)·embed_scale + MarianSinusoidalPositionalEmbedding
//   the sinusoid in Marian's layout: sin(pos / 10000^(2i/d)) in the first
//   half of the columns, cos in the second (not interleaved): the block
//   graph's sinusoidHalves; positions from 0 (from the cached length when
//   decoding); embed_scale = sqrt(d_model) when scale_embedding (opus-mt:
//   true); no embedding norm.
// activation_function is read (opus-mt: swish); decoding starts from
// decoder_start_token_id (opus-mt: the pad id). The position tables are
// computed, not read (transformers leaves them out of the files:
// _keys_to_ignore_on_save), but num_parameters() counts them.
import { seq2seqConfig, seq2seqTensors, SEQ2SEQ_KEYS, SEQ2SEQ_IGNORE } from './seq2seq.js';

export const marian = {
  keys: SEQ2SEQ_KEYS,
  prefixes: [''],
  ignore: [...SEQ2SEQ_IGNORE, /^model\.(encoder|decoder)\.embed_positions\.weight$/],
  config(hf) {
    const c = seq2seqConfig(hf, 'marian', { activation: 'gelu', scaleEmbedding: false });
    const pos = { positional: 'sinusoidal', sinusoidHalves: true };
    Object.assign(c.core, pos);
    Object.assign(c.encoder.core, pos);
    // num_parameters(): each stack's sinusoid table [max_position_embeddings, d_model] is an nn.Parameter
    c.fileOnlyParameters = 2 * c.maxPositions * c.embedDim;
    return c;
  },
  tensors(c) {
    return seq2seqTensors(c, () => []);
  },
};
