// RoBERTa (transformers' RobertaModel / RobertaForMaskedLM,
// models/roberta/modeling_roberta.py): BERT's tensors, keys and block graph
// (bert.js) under the prefix `roberta.`, with two differences.
//   Positions  RobertaEmbeddings.create_position_ids_from_input_ids gives
//              token i of an unpadded input the position padding_idx + 1 + i
//              (pad_token_id, default 1): the block graph keeps the position
//              table's rows from padding_idx + 1 on (the layout op
//              'rows-from', layout.js), so it reads rows 0 … L-1 of that, and
//              the model's longest input is max_position_embeddings -
//              padding_idx - 1 (514 → 512). The API never pads, so a pad id
//              is read as a token at its place (transformers would give a
//              pad id the position padding_idx and the later tokens one
//              position less: pass inputs without pad ids).
//   The head   RobertaLMHead: lm_head.decoder(lm_head.layer_norm(gelu(
//              lm_head.dense(h)))) + lm_head.bias, the exact (erf) gelu
//              whatever hidden_act says, decoder tied to the word embeddings
//              (tie_word_embeddings, default true: lm_head.decoder.weight
//              and lm_head.decoder.bias, when the file holds them, are the
//              tied copies and are not read).
// XLM-RoBERTa (xlm-roberta.js) is this table under another model_type.
import { rangeError } from '../../errors.js';
import { WHERE, own, int } from './config-keys.js';
import { bert, encoderCore, bertLayers, layerPrefix, LAYER, lnTensors, mlmHeadTensors } from './bert.js';

/** The MLM head's first tensor: its presence makes a RobertaForMaskedLM. */
const MLM_DENSE = 'lm_head.dense';
/** RobertaConfig's default pad_token_id. */
const PAD_DEFAULT = 1;

/** A RoBERTa-style table for `type` (the model_type named in its Errors). */
export function robertaFamily(type) {
  return {
    keys: { ...bert.keys, padTokenId: ['pad_token_id'] },
    prefixes: ['roberta.', ''],
    savePrefix: 'roberta.',
    ignore: [/^(roberta\.)?pooler\./, /^(roberta\.)?embeddings\.position_ids$/, /^lm_head\.decoder\.(weight|bias)$/],
    config(hf, names) {
      if (own(hf, 'is_decoder') === true) {
        throw rangeError(WHERE, `config.json is_decoder: true (a causal ${type}) is not supported; allowed: false (the masked LM and encoder)`);
      }
      if (own(hf, 'tie_word_embeddings') === false) {
        throw rangeError(WHERE, `config.json tie_word_embeddings: false is not supported for ${type} (lm_head.decoder is tied to the word embeddings); allowed: true`);
      }
      const c = bert.config(hf, names, type);
      const pad = int(hf, ['pad_token_id'], { min: 0, fallback: PAD_DEFAULT });
      // The file's table has max_position_embeddings rows; the block graph
      // keeps those from padding_idx + 1 on.
      c.positionRows = c.maxPositions;
      c.positionOffset = pad + 1;
      c.maxPositions = c.positionRows - c.positionOffset;
      if (c.maxPositions < 1) {
        throw rangeError(WHERE, `config.json max_position_embeddings (${c.positionRows}) must exceed pad_token_id + 1 (${pad + 1}): ${type}'s positions start at pad_token_id + 1`);
      }
      // num_parameters() counts the rows the block graph leaves out.
      c.fileOnlyParameters = c.positionOffset * c.embedDim;
      c.core = encoderCore(c, names.has(`${MLM_DENSE}.weight`));
      c.maskToken = '<mask>';
      return c;
    },
    tensors(c) {
      const E = c.embedDim;
      const list = [
        { file: 'embeddings.word_embeddings.weight', op: 'copy', to: ['embed.weight'], shape: [c.vocabSize, E] },
        { file: 'embeddings.position_embeddings.weight', op: 'rows-from', from: c.positionOffset, to: ['pos.weight'], shape: [c.positionRows, E] },
        { file: 'embeddings.token_type_embeddings.weight', op: 'copy', to: ['type.weight'], shape: [c.typeVocab, E] },
        ...lnTensors(c, 'embeddings.LayerNorm', 'embed_norm'),
        ...bertLayers(c, layerPrefix, LAYER),
      ];
      if (c.core.mlmHead) {
        list.push(...mlmHeadTensors(c, { dense: MLM_DENSE, norm: 'lm_head.layer_norm', bias: { file: 'lm_head.bias', alias: 'lm_head.decoder.bias' } }));
      }
      return list;
    },
  };
}

export const roberta = robertaFamily('roberta');
