// Mistral (transformers' MistralForCausalLM, models/mistral/modeling_mistral.py,
// configuration_mistral.py): Llama's names and block without biases, head_dim
// (default hidden / heads), and sliding-window attention on every layer
// (MistralModel: create_sliding_window_causal_mask when config.sliding_window
// is not None). MistralConfig's sliding_window defaults to 4096 when the key
// is absent; null means full causal attention (Mistral 7B v0.2 on). MistralModel
// ignores layer_types (it warns and points to Ministral), and so does this table.
import {
  DECODER_TABLE, DECODER_KEYS, decoderSizes, decoderCore, decoderTensors, ropeBase, activationOf, tiedOf, windowFields, windowOf,
} from './decoder.js';

const FAMILY = 'mistral';

export const mistral = {
  ...DECODER_TABLE,
  keys: { ...DECODER_KEYS, activation: ['hidden_act'], slidingWindow: ['sliding_window'] },
  config(hf) {
    const c = decoderSizes(hf, FAMILY, { eps: 1e-6 });
    c.ropeTheta = ropeBase(hf, FAMILY, { fallback: 10000 });
    const window = windowOf(hf, 'sliding_window', 4096);
    c.core = {
      ...decoderCore(c, { activation: activationOf(hf, FAMILY, ['hidden_act'], { silu: 'swiglu' }, 'silu'), tieEmbeddings: tiedOf(hf, false) }),
      ...(window === null ? {} : windowFields('l'.repeat(c.numLayers), window, FAMILY)),
    };
    return c;
  },
  tensors: (c) => decoderTensors(c),
};
