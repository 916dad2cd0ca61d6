// webgpu-messages.test.js — what a whole model's GPU out-of-memory error says (issue 35, item 5):
// the model and its sizes, the input and the weights it holds on the GPU, and what to change;
// not the attention ops' needWeights, which model.forward has no option of.
import { outOfMemoryAdvice } from '../../web/lib/webgpu-model.js';

const gpt2Small = { numLayers: 12, embedDim: 768, numHeads: 12, vocabSize: 50257 };

describe('model.forward out of memory on the GPU', () => {
  test('names the model, the input and the GPU weights, and the changes that help', () => {
    const s = outOfMemoryAdvice({ spec: { ...gpt2Small, modelType: 'gpt2' } }, 128, { attentions: true }, 498 * 2 ** 20);
    expect(s).toBe("running gpt2 (12 layers, E 768, 12 heads, vocabulary 50257) on 128 tokens, with 498 MB of its weights on the GPU; use a shorter input, attentions: false, or load the model on a wasm lab (init({ backend: 'wasm' }))");
    expect(s).not.toMatch(/needWeights/);
  });

  test('without a type in the spec it still names the model by its sizes; attentions: false is offered only when asked for', () => {
    const s = outOfMemoryAdvice({ spec: gpt2Small }, 5, { attentions: false }, 3 * 2 ** 20);
    expect(s).toMatch(/^running the model \(12 layers, E 768, 12 heads, vocabulary 50257\) on 5 tokens, with 3 MB/);
    expect(s).not.toMatch(/attentions: false|needWeights/);
  });
});
