// "Your model" (web/page/chapters/your-model.js): what a dropped config.json
// gives a Llama-family layer, and the guess the page shows (marked as a guess,
// editable) when there is none. Reference values are the published configs of
// the models named (Hugging Face config.json files), not the code under test.
import { readConfig, guessHeadDim } from '../../web/page/chapters/your-model.js';

test('readConfig: heads, KV heads and rope_theta of Llama 3 8B, Mistral 7B v0.2, Qwen2 7B; transformers defaults', () => {
  expect(readConfig({ model_type: 'llama', hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8, rope_theta: 500000, rope_scaling: null }))
    .toEqual({ heads: 32, kvHeads: 8, theta: 500000, ropeScaling: null });
  expect(readConfig({ model_type: 'mistral', hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8, rope_theta: 1000000.0, sliding_window: null }))
    .toEqual({ heads: 32, kvHeads: 8, theta: 1e6, ropeScaling: null });
  expect(readConfig({ model_type: 'qwen2', num_attention_heads: 28, num_key_value_heads: 4, rope_theta: 1000000.0 }).kvHeads).toBe(4);
  // Llama 2 config: no num_key_value_heads in old files → MHA; no rope_theta → 10000.
  expect(readConfig({ model_type: 'llama', num_attention_heads: 32 })).toEqual({ heads: 32, kvHeads: 32, theta: 10000, ropeScaling: null });
  // Llama 3.1: rope_scaling is reported (the page says it is not applied).
  expect(readConfig({ num_attention_heads: 32, num_key_value_heads: 8, rope_theta: 500000, rope_scaling: { rope_type: 'llama3', factor: 8 } }).ropeScaling).toBe('llama3');
  // Multimodal configs nest the language model's fields; GPT-2 says n_head.
  expect(readConfig({ text_config: { num_attention_heads: 8, num_key_value_heads: 2, rope_theta: 10000 } }).kvHeads).toBe(2);
  expect(readConfig({ model_type: 'gpt2', n_head: 12 }).heads).toBe(12);
  expect(readConfig({ vocab_size: 10 })).toBeNull();
  expect(readConfig(['a', 'b'])).toBeNull();
});

test('guessHeadDim: head size 128 for Llama 2/3 7-8B and Mistral 7B (32 heads, 8 KV heads for Llama 3 8B), 64 for TinyLlama', () => {
  const guess = (E, kvDim) => {
    const D = guessHeadDim(E, kvDim);
    return [E / D, kvDim / D];
  };
  expect(guess(4096, 4096)).toEqual([32, 32]); // Llama 2 7B
  expect(guess(4096, 1024)).toEqual([32, 8]); // Llama 3 8B, Mistral 7B
  expect(guess(2048, 256)).toEqual([32, 4]); // TinyLlama 1.1B
  expect(guess(64, 16)).toEqual([4, 1]);
  for (const [E, kv] of [[30, 10], [12, 4], [7, 7]]) {
    const D = guessHeadDim(E, kv);
    expect(E % D === 0 && kv % D === 0).toBe(true);
  }
});
