// Writes a model back as Hugging Face files, the inverse of its family
// table (families/): every table entry's tensor rebuilt from the
// block graph's weights (Conv1D transposed back, GPT-2's c_attn fused
// again), under the names transformers' save_pretrained writes, in F32 or
// F16 (rounded to nearest even).
// loadModel reads the result back bit for bit; PyTorch's from_pretrained
// and tests/reference/hf_models.py read it too.
import { rangeError } from '../errors.js';
import { writeSafetensors } from '../io/safetensors.js';
import { FAMILIES, layoutOp } from './families/index.js';

/** The file tensor of a table entry from the block graph's weights (the op's file face, families/layout.js). */
function fileTensor(entry, w) {
  const get = (name) => {
    const t = w[name];
    if (!t) throw rangeError('model.save', `the model has no weight ${JSON.stringify(name)} for ${entry.file}`);
    return t.data;
  };
  return layoutOp(entry.op).file(entry, entry.to.map(get));
}

/**
 * { 'config.json', 'model.safetensors', 'tokenizer.json'? } of a model.
 * info: { modelType, hfConfig, c, tokenizerJson }; dtype 'F32' or 'F16'.
 */
export function saveModel(where, transformer, info, dtype = 'F32') {
  if (dtype !== 'F32' && dtype !== 'F16') throw rangeError(where, `dtype must be 'F32' or 'F16', got ${JSON.stringify(dtype)}`);
  const table = FAMILIES[info.modelType];
  const w = transformer.getWeights();
  const tensors = {};
  for (const entry of table.tensors(info.c)) {
    const name = entry.absolute ? entry.file : `${table.savePrefix}${entry.file}`;
    tensors[name] = { ...fileTensor(entry, w), dtype };
  }
  const files = {
    'config.json': `${JSON.stringify(info.hfConfig, null, 2)}\n`,
    'model.safetensors': writeSafetensors(tensors, { format: 'pt' }),
  };
  if (info.tokenizerJson) files['tokenizer.json'] = JSON.stringify(info.tokenizerJson);
  return files;
}

/** The config.json of a lab.transformer built with architecture 'gpt2' (the family table's, families/gpt2.js). */
export function gpt2Config(c) {
  return FAMILIES.gpt2.configJson(c);
}

/** The normalised config (the family table's form) of a lab.transformer with architecture 'gpt2'. */
export function gpt2Normalized(c) {
  return FAMILIES.gpt2.config(gpt2Config(c));
}
