// XLM-RoBERTa (transformers' XLMRobertaModel / XLMRobertaForMaskedLM,
// models/xlm_roberta/modeling_xlm_roberta.py, whose classes are copied from
// RoBERTa's with Roberta->XLMRoberta): RoBERTa's table (roberta.js), the same
// `roberta.` prefix, keys, positions from padding_idx + 1 and lm_head, under
// model_type "xlm-roberta".
import { robertaFamily } from './roberta.js';

export const xlmRoberta = robertaFamily('xlm-roberta');
