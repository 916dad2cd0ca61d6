// BART (transformers' BartForConditionalGeneration, models/bart/modeling_bart.py):
// seq2seq.js's post-LN encoder-decoder with BART's embeddings:
//   x0 = layernorm_embedding(embed_tokens(ids)·embed_scale +
//        embed_positions(pos + 2))
//   BartLearnedPositionalEmbedding has max_position_embeddings + 2 rows and
//   reads row position + 2 (its offset 2): the block graph keeps rows 2… as
//   its positions 0… (the layout op 'rows-from'), and num_parameters()
//   counts the two rows it leaves out of each stack;
//   embed_scale = sqrt(d_model) when scale_embedding (default false).
import { seq2seqConfig, seq2seqTensors, SEQ2SEQ_KEYS, SEQ2SEQ_IGNORE } from './seq2seq.js';

/** BartLearnedPositionalEmbedding's offset. */
const OFFSET = 2;

export const bart = {
  keys: SEQ2SEQ_KEYS,
  prefixes: [''],
  ignore: SEQ2SEQ_IGNORE,
  config(hf) {
    const c = seq2seqConfig(hf, 'bart', { activation: 'gelu', scaleEmbedding: false });
    const emb = { positional: 'learned', embedNorm: true };
    Object.assign(c.core, emb);
    Object.assign(c.encoder.core, emb);
    c.fileOnlyParameters = 2 * OFFSET * c.embedDim;
    return c;
  },
  tensors(c) {
    const E = c.embedDim;
    return seq2seqTensors(c, (stack) => [
      { file: `model.${stack}.embed_positions.weight`, op: 'rows-from', from: OFFSET, to: [`${stack}:pos.weight`],
        shape: [c.maxPositions + OFFSET, E], why: 'max_position_embeddings + 2 rows (the offset 2)' },
      { file: `model.${stack}.layernorm_embedding.weight`, op: 'copy', to: [`${stack}:embed_norm.weight`], shape: [E] },
      { file: `model.${stack}.layernorm_embedding.bias`, op: 'copy', to: [`${stack}:embed_norm.bias`], shape: [E] },
    ]);
  },
};
