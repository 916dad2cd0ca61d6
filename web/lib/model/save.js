// Writes a model back as Hugging Face files, the inverse of its architecture
// table (architectures.js): every table entry's tensor rebuilt from the
// block graph's weights (Conv1D transposed back, GPT-2's c_attn fused
// again), under the names transformers' save_pretrained writes, in F32 or
// F16 (rounded to nearest even).
// loadModel reads the result back bit for bit; PyTorch's from_pretrained
// and tests/reference/hf_models.py read it too.
import { rangeError } from '../errors.js';
import { writeSafetensors } from '../io/safetensors.js';
import { FAMILIES } from './architectures.js';

function fileTensor(entry, w) {
  const get = (name) => {
    const t = w[name];
    if (!t) throw rangeError('model.save', `the model has no weight ${JSON.stringify(name)} for ${entry.file}`);
    return t.data;
  };
  const shape = entry.shape.slice();
  if (entry.op === 'copy') return { data: get(entry.to[0]), shape };
  if (entry.op === 'transpose') {
    // file [in, out] from the block graph's [out, in]
    const [rows, cols] = shape;
    const src = get(entry.to[0]);
    const out = new Float32Array(rows * cols);
    for (let o = 0; o < cols; o++) for (let i = 0; i < rows; i++) out[i * cols + o] = src[o * rows + i];
    return { data: out, shape };
  }
  // split: [E, 3E] (Conv1D) from three [E, E], or [3E] from three [E]
  const parts = entry.to.map(get);
  if (shape.length === 1) {
    const out = new Float32Array(shape[0]);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return { data: out, shape };
  }
  const [e, e3] = shape;
  const out = new Float32Array(e * e3);
  parts.forEach((p, k) => {
    for (let o = 0; o < e; o++) for (let i = 0; i < e; i++) out[i * e3 + k * e + o] = p[o * e + i];
  });
  return { data: out, shape };
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

/** The config.json of a lab.transformer built with architecture 'gpt2'. */
export function gpt2Config(c) {
  return {
    model_type: 'gpt2',
    architectures: ['GPT2LMHeadModel'],
    vocab_size: c.vocabSize,
    n_positions: c.maxLength,
    n_ctx: c.maxLength,
    n_embd: c.embedDim,
    n_layer: c.numLayers,
    n_head: c.numHeads,
    n_inner: c.ffnDim,
    activation_function: 'gelu_new',
    layer_norm_epsilon: c.eps,
    resid_pdrop: c.dropout,
    embd_pdrop: 0,
    attn_pdrop: 0,
    initializer_range: 0.02,
    tie_word_embeddings: true,
    torch_dtype: 'float32',
  };
}

/** The normalised config (architectures.js form) of a lab.transformer with architecture 'gpt2'. */
export function gpt2Normalized(c) {
  return FAMILIES.gpt2.config(gpt2Config(c));
}
