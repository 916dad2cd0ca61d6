// Gemma (transformers' GemmaForCausalLM, models/gemma/modeling_gemma.py,
// configuration_gemma.py): Llama's names with
//   - GemmaRMSNorm: x·(1 + w) in float32 (the layout op add-one: the block
//     graph holds 1 + w);
//   - the embeddings × √hidden, rounded to the weights' dtype (GemmaModel:
//     torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype); bf16
//     √2048 → 45.25), the block graph's embedScale;
//   - GemmaMLP: down(act(gate x) · up x) with gelu_pytorch_tanh (geglu_tanh);
//   - head_dim (GemmaConfig default 256), the head tied (default true);
//   - q/k/v/o biases only when attention_bias.
// The activation is hidden_activation when the file gives it (Gemma's own
// key, which transformers 4.38–4.4x read and Gemma 2/3 still read), else
// hidden_act (default gelu_pytorch_tanh).
import {
  DECODER_TABLE, DECODER_KEYS, decoderSizes, decoderCore, decoderTensors, ropeBase, activationOf, tiedOf, flagOf,
  refuseBidirectional, gemmaEmbedScale, roundToDtype,
} from './decoder.js';
import { decoderGguf } from './decoder-gguf.js';

const FAMILY = 'gemma';
/** Gemma's GeGLU activations → the block graph's. */
export const GEGLU = { gelu_pytorch_tanh: 'geglu_tanh', gelu_new: 'geglu_tanh', gelu: 'geglu' };

export const gemma = {
  ...DECODER_TABLE,
  keys: { ...DECODER_KEYS, activation: ['hidden_activation', 'hidden_act'], attentionBias: ['attention_bias'] },
  config(hf) {
    const c = decoderSizes(hf, FAMILY, { eps: 1e-6, headDim: 256 });
    c.ropeTheta = ropeBase(hf, FAMILY, { fallback: 10000 });
    refuseBidirectional(hf, FAMILY);
    const bias = flagOf(hf, 'attention_bias', false);
    c.core = {
      ...decoderCore(c, { activation: activationOf(hf, FAMILY, ['hidden_activation', 'hidden_act'], GEGLU, 'gelu_pytorch_tanh'), qkvBias: bias, outBias: bias, tieEmbeddings: tiedOf(hf, true) }),
      embedScale: roundToDtype(Math.sqrt(c.embedDim), 'F32'),
    };
    return c;
  },
  withFileDtypes: gemmaEmbedScale,
  // GGUF: convert_hf_to_gguf.py's GemmaModel writes TextModel's sizes with
  // key_length = head_dim and no rope.freq_base (llama.cpp's default 10000,
  // as this table's), drops lm_head (tied), and adds 1 to every *norm.weight
  // in float32 (modify_tensors: data_torch + 1): the file holds 1 + w, so
  // add-one is already applied. llama.cpp scales the embeddings by
  // sqrtf(n_embd) in float32 (families/gguf.js keeps that value).
  gguf: decoderGguf('gemma', { applied: ['add-one'] }),
  tensors: (c) => decoderTensors(c, { normOp: 'add-one' }),
};
