// The family tables of issue 32 read config.json as transformers does
// (models/<family>/configuration_<family>.py and modeling_<family>.py): each
// golden config (tests/golden/models/<folder>/config.json) → the normalised
// config and the block graph's fields, the config classes' defaults when a key
// is absent, and each refusal with its message. The expected values are
// written here from the configs and transformers' rules (see the comments),
// not read from the tables.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAMILIES, architectureOf } from '../../web/lib/model/families/index.js';
import { roundToDtype } from '../../web/lib/model/families/decoder.js';
import { checkGpuRuns } from '../../web/lib/model/gpu.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');
const golden = (folder) => JSON.parse(fs.readFileSync(path.join(MODELS, folder, 'config.json'), 'utf8'));
const read = (hf) => {
  const { type, arch } = architectureOf(hf);
  return { modelType: type, ...arch.config(hf, new Set()) };
};

// What the llama-shaped decoders share (decoderCore).
const RMS_DECODER = { positional: 'rope', causal: true, prenorm: true, norm: 'rmsnorm', ffnBias: false, headBias: false };
const f32 = Math.fround;

describe('golden config.json → normalised config and block-graph fields', () => {
  test.each([
    // folder, sizes, core: every field the table sets (toEqual: nothing else)
    ['qwen3', { numLayers: 2, numHeads: 4, numKvHeads: 2, embedDim: 32, ffnDim: 64, headDim: 12, eps: 1e-6, ropeTheta: 1e6 },
      // head_dim 12 ≠ 32 / 4; Qwen3Attention.q_norm / k_norm; attention_bias false; tied
      { ...RMS_DECODER, ropeTheta: 1e6, activation: 'swiglu', numKvHeads: 2, qkvBias: false, outBias: false, tieEmbeddings: true, headDim: 12, qkNorm: true }],
    ['mistral', { numLayers: 2, numHeads: 4, numKvHeads: 2, embedDim: 32, headDim: 8, eps: 1e-6, ropeTheta: 1e4 },
      // sliding_window 4 on every layer (layerKinds '' = all local); head_dim 8 = E/H (no field); untied
      { ...RMS_DECODER, ropeTheta: 1e4, activation: 'swiglu', numKvHeads: 2, qkvBias: false, outBias: false, tieEmbeddings: false, slidingWindow: 4 }],
    ['gemma', { numLayers: 2, numHeads: 4, numKvHeads: 1, embedDim: 32, headDim: 16, eps: 1e-6, ropeTheta: 1e4 },
      // gelu_pytorch_tanh GeGLU; √32 in float32 until the file's dtype is known (withFileDtypes)
      { ...RMS_DECODER, ropeTheta: 1e4, activation: 'geglu_tanh', numKvHeads: 1, qkvBias: false, outBias: false, tieEmbeddings: true, headDim: 16, embedScale: f32(Math.sqrt(32)) }],
    ['gemma2', { numLayers: 2, numHeads: 4, numKvHeads: 2, embedDim: 32, headDim: 8, eps: 1e-6, ropeTheta: 1e4 },
      // query_pre_attn_scalar 16 → 16^-0.5; softcaps 5 and 3; layer_types sliding, full; the four norms
      {
        ...RMS_DECODER, ropeTheta: 1e4, activation: 'geglu_tanh', numKvHeads: 2, qkvBias: false, outBias: false, tieEmbeddings: true,
        embedScale: f32(Math.sqrt(32)), attnScale: 0.25, attnSoftcap: 5, finalSoftcap: 3, sandwichNorm: true, slidingWindow: 4, layerKinds: 'lg',
      }],
    ['gemma3', { numLayers: 3, numHeads: 4, numKvHeads: 1, embedDim: 32, headDim: 16, eps: 1e-6, ropeTheta: 1e6 },
      // sliding, sliding, full; rope_local_base_freq 1e4 on sliding layers; q/k norms; no softcaps (null)
      {
        ...RMS_DECODER, ropeTheta: 1e6, activation: 'geglu_tanh', numKvHeads: 1, qkvBias: false, outBias: false, tieEmbeddings: true, headDim: 16,
        embedScale: f32(Math.sqrt(32)), attnScale: 0.25, sandwichNorm: true, slidingWindow: 4, layerKinds: 'llg', qkNorm: true, ropeLocalTheta: 1e4,
      }],
    ['phi3', { numLayers: 2, numHeads: 4, numKvHeads: 2, embedDim: 32, headDim: 8, eps: 1e-5, ropeTheta: 1e4 },
      // partial_rotary_factor 0.5: int(8 · 0.5) = 4 rotary dims; sliding_window null; untied
      { ...RMS_DECODER, ropeTheta: 1e4, activation: 'swiglu', numKvHeads: 2, qkvBias: false, outBias: false, tieEmbeddings: false, rotaryDim: 4 }],
    ['gpt_neox', { numLayers: 2, numHeads: 4, numKvHeads: 4, embedDim: 32, ffnDim: 128, headDim: 8, eps: 1e-5, ropeTheta: 1e4 },
      // rotary_pct 0.25: int(8 · 0.25) = 2; use_parallel_residual true; LayerNorm; exact gelu; embed_out untied
      {
        positional: 'rope', ropeTheta: 1e4, causal: true, prenorm: true, norm: 'layernorm', activation: 'gelu', numKvHeads: 4,
        qkvBias: true, outBias: true, ffnBias: true, tieEmbeddings: false, headBias: false, rotaryDim: 2, parallelResidual: true,
      }],
    ['gpt_neox-sequential', { headDim: 8 },
      {
        positional: 'rope', ropeTheta: 1e4, causal: true, prenorm: true, norm: 'layernorm', activation: 'gelu', numKvHeads: 4,
        qkvBias: true, outBias: true, ffnBias: true, tieEmbeddings: false, headBias: false, rotaryDim: 4,
      }],
    ['gpt_neo', { numLayers: 2, numHeads: 4, numKvHeads: 4, embedDim: 32, ffnDim: 128, headDim: 8, maxPositions: 32, eps: 1e-5 },
      // learned positions; no 1/√D; attention_types global, local with window_size 4; q/k/v without bias; tied
      {
        positional: 'learned', causal: true, prenorm: true, norm: 'layernorm', activation: 'gelu_new', numKvHeads: 4,
        qkvBias: false, outBias: true, ffnBias: true, tieEmbeddings: true, headBias: false, attnScale: 1, slidingWindow: 4, layerKinds: 'gl',
      }],
  ])('%s', (folder, sizes, core) => {
    const c = read(golden(folder));
    expect(c).toMatchObject(sizes);
    expect(c.core).toEqual(core);
  });

  test("Gemma's embedding scale is √hidden rounded to the embedding's file dtype", () => {
    // GemmaModel: torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)
    expect(roundToDtype(Math.sqrt(32), 'BF16')).toBe(5.65625);
    expect(roundToDtype(Math.sqrt(2048), 'BF16')).toBe(45.25);
    expect(roundToDtype(Math.sqrt(3072), 'BF16')).toBe(55.5); // transformers' comment: 55.4256 becomes 55.5
    expect(roundToDtype(Math.sqrt(3072), 'F16')).toBe(55.4375); // 1774 · 2^-5
    expect(roundToDtype(Math.sqrt(640), 'F32')).toBe(f32(Math.sqrt(640)));
    // ties go to even: 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7
    expect(roundToDtype(1 + 2 ** -8, 'BF16')).toBe(1);
    expect(roundToDtype(1 + 3 * 2 ** -8, 'BF16')).toBe(1 + 2 ** -6);
    for (const [folder, dtype, scale] of [['gemma', 'BF16', 5.65625], ['gemma2', 'F32', f32(Math.sqrt(32))], ['gemma3', 'BF16', 5.65625]]) {
      const hf = golden(folder);
      const c = read(hf);
      FAMILIES[hf.model_type].withFileDtypes(c, (file) => (file === 'model.embed_tokens.weight' ? dtype : undefined));
      expect(c.core.embedScale).toBe(scale);
    }
  });
});

describe('the config classes’ defaults when a key is absent', () => {
  const llamaLike = { num_hidden_layers: 2, num_attention_heads: 4, hidden_size: 32, intermediate_size: 64, vocab_size: 64, max_position_embeddings: 64 };
  const without = (hf, ...keys) => Object.fromEntries(Object.entries(hf).filter(([k]) => !keys.includes(k)));

  test('qwen3: head_dim 128 (Qwen3Config); use_sliding_window: layers ≥ max_window_layers are sliding', () => {
    expect(read({ ...llamaLike, model_type: 'qwen3' }).core.headDim).toBe(128);
    const c = read({ ...golden('qwen3'), use_sliding_window: true, max_window_layers: 1, sliding_window: 3 });
    expect(c.core).toMatchObject({ slidingWindow: 3, layerKinds: 'gl' });
    // attention_bias: q, k, v and o biases (Qwen3Attention: bias=config.attention_bias)
    expect(read({ ...golden('qwen3'), attention_bias: true }).core).toMatchObject({ qkvBias: true, outBias: true });
  });

  test('mistral: sliding_window 4096 when absent, none when null', () => {
    expect(read(without(golden('mistral'), 'sliding_window')).core.slidingWindow).toBe(4096);
    expect(read({ ...golden('mistral'), sliding_window: null }).core.slidingWindow).toBeUndefined();
  });

  test('gemma: head_dim 256, tied, gelu_pytorch_tanh; hidden_act when hidden_activation is absent', () => {
    const c = read({ ...llamaLike, model_type: 'gemma' });
    expect(c.core).toMatchObject({ headDim: 256, tieEmbeddings: true, activation: 'geglu_tanh' });
    expect(read({ ...without(golden('gemma'), 'hidden_activation'), hidden_act: 'gelu' }).core.activation).toBe('geglu');
  });

  test('gemma2: softcaps 50 and 30, query_pre_attn_scalar 256, layers 0, 2, … sliding with window 4096', () => {
    const c = read({ ...llamaLike, num_hidden_layers: 4, model_type: 'gemma2', head_dim: 8 });
    expect(c.core).toMatchObject({ attnSoftcap: 50, finalSoftcap: 30, attnScale: 256 ** -0.5, layerKinds: 'lglg', slidingWindow: 4096 });
    const off = read({ ...golden('gemma2'), attn_logit_softcapping: null, final_logit_softcapping: null });
    expect(off.core.attnSoftcap).toBeUndefined();
    expect(off.core.finalSoftcap).toBeUndefined();
  });

  test('gemma3_text: sliding_window_pattern 6 when layer_types is absent; rope_theta 1e6, rope_local_base_freq 1e4', () => {
    const c = read({ ...llamaLike, num_hidden_layers: 12, model_type: 'gemma3_text', head_dim: 8 });
    expect(c.core).toMatchObject({ layerKinds: 'lllllglllllg', ropeTheta: 1e6, ropeLocalTheta: 1e4, qkNorm: true, sandwichNorm: true });
    expect(c.core.attnSoftcap).toBeUndefined();
    const p3 = read({ ...without(golden('gemma3'), 'layer_types'), sliding_window_pattern: 3 });
    expect(p3.core.layerKinds).toBe('llg');
    // transformers ≥ 5 writes rope_parameters per layer type
    const v5 = read({
      ...without(golden('gemma3'), 'rope_theta', 'rope_local_base_freq', 'rope_scaling'),
      rope_parameters: { full_attention: { rope_type: 'default', rope_theta: 5e5 }, sliding_attention: { rope_type: 'default', rope_theta: 2e4 } },
    });
    expect(v5.core).toMatchObject({ ropeTheta: 5e5, ropeLocalTheta: 2e4 });
  });

  test('phi3: sliding_window 2047 (Phi-3-mini-4k) on every layer; no partial rotary without the key', () => {
    const c = read({ ...without(golden('phi3'), 'partial_rotary_factor'), sliding_window: 2047 });
    expect(c.core.slidingWindow).toBe(2047);
    expect(c.core.layerKinds).toBeUndefined();
    expect(c.core.rotaryDim).toBeUndefined();
  });

  test('gpt_neox: rotary_pct 0.25, parallel residual, attention biases; transformers ≥ 5 rope_parameters', () => {
    const hf = without(golden('gpt_neox'), 'rotary_pct', 'use_parallel_residual', 'attention_bias');
    expect(read(hf).core).toMatchObject({ rotaryDim: 2, parallelResidual: true, qkvBias: true });
    const v5 = read({ ...without(hf, 'rotary_emb_base'), rope_parameters: { rope_type: 'default', rope_theta: 1e4, partial_rotary_factor: 0.5 } });
    expect(v5.core).toMatchObject({ rotaryDim: 4, ropeTheta: 1e4 });
  });

  test('gpt_neo: intermediate_size null is 4·hidden; activation gelu_new', () => {
    expect(read(golden('gpt_neo'))).toMatchObject({ ffnDim: 128 });
  });
});

describe('refusals name the key, its value and what is allowed', () => {
  test.each([
    ['qwen3', { layer_types: ['full_attention', 'chunked_attention'] }, /layer_types entry "chunked_attention" \(layer 1\) is not supported for qwen3; allowed: "full_attention", "sliding_attention"/],
    ['qwen3', { layer_types: ['full_attention', 'sliding_attention'] }, /layer_types has "sliding_attention" layers but use_sliding_window is false/],
    ['qwen3', { rope_scaling: { rope_type: 'yarn', factor: 4 } }, /rope_scaling type "yarn" is not supported for qwen3 .*allowed: "default" or null/],
    ['qwen3', { hidden_act: 'gelu' }, /hidden_act "gelu" is not supported for qwen3; allowed: silu/],
    ['mistral', { rope_scaling: { rope_type: 'llama3', factor: 8 } }, /rope_scaling type "llama3" is not supported for mistral/],
    ['mistral', { sliding_window: 0 }, /sliding_window must be an integer ≥ 1 or null, got 0/],
    ['phi3', { rope_scaling: { type: 'longrope', short_factor: [1, 1], long_factor: [1, 1] } }, /rope_scaling type "longrope" is not supported for phi3/],
    ['phi3', { partial_rotary_factor: 0.375 }, /partial_rotary_factor 0.375 gives 3 rotary dims of the head's 8 for phi3; the block graph needs an even number > 0/],
    ['gemma', { use_bidirectional_attention: true }, /use_bidirectional_attention true is not supported for gemma .*allowed: false or null/],
    ['gemma', { hidden_activation: 'relu' }, /hidden_activation "relu" is not supported for gemma; allowed: gelu_pytorch_tanh, gelu_new, gelu/],
    ['gemma2', { layer_types: ['sliding_attention'] }, /layer_types must be a list of 2 entries \(num_hidden_layers\)/],
    ['gemma2', { sliding_window: null }, /sliding_window is null, but layers 0 are sliding-window layers for gemma2/],
    ['gemma2', { attn_logit_softcapping: -1 }, /attn_logit_softcapping" must be a finite number > 0 or null, got -1/],
    ['gemma3', { rope_scaling: { rope_type: 'linear', factor: 8 } }, /rope_scaling type "linear" is not supported for gemma3_text/],
    ['gemma3', { use_bidirectional_attention: true }, /use_bidirectional_attention true is not supported for gemma3_text/],
    ['gemma3', { layer_types: ['sliding_attention', 'local', 'full_attention'] }, /layer_types entry "local" \(layer 1\) is not supported for gemma3_text/],
    ['gpt_neox', { rope_scaling: { type: 'linear', factor: 2 } }, /rope_scaling type "linear" is not supported for gpt_neox/],
    ['gpt_neox', { rotary_pct: 0.1 }, /rotary_pct 0.1 gives 0 rotary dims of the head's 8 for gpt_neox/],
    ['gpt_neox', { num_key_value_heads: 2 }, /num_key_value_heads 2 is not a gpt_neox key/],
    ['gpt_neo', { attention_types: [[['global', 'sparse'], 1]], attention_layers: undefined }, /attention_types entry "sparse" is not supported for gpt_neo; allowed: "global", "local"/],
    ['gpt_neo', { attention_layers: ['local', 'global'] }, /attention_layers \["local","global"\] disagrees with attention_types, which expand to \["global","local"\]/],
    ['gpt_neo', { attention_types: [[['global', 'local'], 2]], attention_layers: undefined }, /attention_types give 4 layers, but num_layers is 2/],
  ])('%s %j', (folder, patch, message) => {
    const hf = { ...golden(folder), ...patch };
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete hf[k];
    expect(() => read(hf)).toThrow(message);
  });

  test.each([
    ['qwen3', 'num_key_value_heads', null],
    ['gemma2', 'hidden_size', /"hidden_size".*"gemma2"/],
    ['gpt_neo', 'num_heads', /"num_heads".*"gpt_neo"/],
    ['gpt_neox', 'intermediate_size', /"intermediate_size".*"gpt_neox"/],
  ])('%s without %s', (folder, key, message) => {
    const { [key]: _, ...hf } = golden(folder);
    if (message === null) expect(read(hf).numKvHeads).toBe(4); // num_key_value_heads defaults to the heads
    else expect(() => read(hf)).toThrow(message);
  });
});

describe('the webgpu model path takes every family', () => {
  // Their values on the GPU: tests/browser/models-webgpu-families.browser.mjs.
  test.each(['qwen2', 'qwen3', 'mistral', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neox-sequential', 'gpt_neo', 'llama', 'gpt2', 'bert'])('%s passes checkGpuRuns', (folder) => {
    expect(() => checkGpuRuns(read(golden(folder)))).not.toThrow();
  });
});

// config.json files shaped as the Hub's checkpoints write them (the keys that
// matter; transformers 4.5x) → the fields the block graph runs them with.
describe('config.json of published checkpoints', () => {
  const gemma3_270m = {
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', _sliding_window_pattern: 6, attention_bias: false, attention_dropout: 0,
    attn_logit_softcapping: null, final_logit_softcapping: null, head_dim: 256, hidden_activation: 'gelu_pytorch_tanh', hidden_size: 640,
    intermediate_size: 2048, layer_types: Array.from({ length: 18 }, (_, i) => ((i + 1) % 6 ? 'sliding_attention' : 'full_attention')),
    max_position_embeddings: 32768, num_attention_heads: 4, num_hidden_layers: 18, num_key_value_heads: 1, query_pre_attn_scalar: 256,
    rms_norm_eps: 1e-6, rope_local_base_freq: 10000, rope_scaling: null, rope_theta: 1000000, sliding_window: 512, torch_dtype: 'bfloat16',
    use_bidirectional_attention: false, vocab_size: 262144,
  };
  const qwen3_06b = {
    architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', attention_bias: false, head_dim: 128, hidden_act: 'silu', hidden_size: 1024,
    intermediate_size: 3072, max_position_embeddings: 40960, max_window_layers: 28, num_attention_heads: 16, num_hidden_layers: 28,
    num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_scaling: null, rope_theta: 1000000, sliding_window: null, tie_word_embeddings: true,
    torch_dtype: 'bfloat16', use_sliding_window: false, vocab_size: 151936,
  };
  const pythia70m = {
    architectures: ['GPTNeoXForCausalLM'], model_type: 'gpt_neox', hidden_act: 'gelu', hidden_size: 512, intermediate_size: 2048,
    layer_norm_eps: 1e-5, max_position_embeddings: 2048, num_attention_heads: 8, num_hidden_layers: 6, rotary_emb_base: 10000,
    rotary_pct: 0.25, tie_word_embeddings: false, torch_dtype: 'float16', use_parallel_residual: true, vocab_size: 50304,
  };
  const tinyStories33m = {
    architectures: ['GPTNeoForCausalLM'], model_type: 'gpt_neo', activation_function: 'gelu_new', attention_layers: ['global', 'local', 'global', 'local'],
    attention_types: [[['global', 'local'], 2]], hidden_size: 768, intermediate_size: null, layer_norm_epsilon: 1e-5, max_position_embeddings: 2048,
    num_heads: 16, num_layers: 4, vocab_size: 50257, window_size: 256,
  };
  const phi3mini4k = {
    architectures: ['Phi3ForCausalLM'], model_type: 'phi3', hidden_act: 'silu', hidden_size: 3072, intermediate_size: 8192, max_position_embeddings: 4096,
    num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 32, original_max_position_embeddings: 4096, rms_norm_eps: 1e-5,
    rope_scaling: null, rope_theta: 10000, sliding_window: 2047, tie_word_embeddings: false, torch_dtype: 'bfloat16', vocab_size: 32064,
  };

  test('gemma-3-270m: 4 heads over 1 KV head of 256, layers 5, 11, 17 global, window 512, two RoPE bases', () => {
    const c = read(gemma3_270m);
    expect(c).toMatchObject({ numLayers: 18, numHeads: 4, numKvHeads: 1, headDim: 256, embedDim: 640 });
    expect(c.core).toMatchObject({
      headDim: 256, qkNorm: true, sandwichNorm: true, attnScale: 1 / 16, slidingWindow: 512, layerKinds: 'lllllglllllglllllg',
      ropeTheta: 1e6, ropeLocalTheta: 1e4, activation: 'geglu_tanh', tieEmbeddings: true,
    });
    FAMILIES.gemma3_text.withFileDtypes(c, () => 'BF16');
    expect(c.core.embedScale).toBe(25.25); // √640 = 25.298 → bf16
  });

  test('Qwen3-0.6B: head_dim 128 over hidden 1024 / 16 heads = 64, no window, tied', () => {
    const c = read(qwen3_06b);
    expect(c.core).toMatchObject({ headDim: 128, qkNorm: true, numKvHeads: 8, tieEmbeddings: true, qkvBias: false });
    expect(c.core.slidingWindow).toBeUndefined();
  });

  test('pythia-70m: 16 of 64 dims rotary, parallel residual, exact GELU', () => {
    expect(read(pythia70m).core).toMatchObject({ rotaryDim: 16, parallelResidual: true, activation: 'gelu', norm: 'layernorm', qkvBias: true });
  });

  test('TinyStories-33M: global/local ×2 with window 256, no 1/√D', () => {
    expect(read(tinyStories33m)).toMatchObject({ ffnDim: 3072 });
    expect(read(tinyStories33m).core).toMatchObject({ layerKinds: 'glgl', slidingWindow: 256, attnScale: 1, positional: 'learned', tieEmbeddings: true });
  });

  test('Phi-3-mini-4k: window 2047 on every layer; Phi-3.5-mini (longrope) refused by name', () => {
    expect(read(phi3mini4k).core).toMatchObject({ slidingWindow: 2047, activation: 'swiglu' });
    const longrope = { ...phi3mini4k, rope_scaling: { type: 'longrope', long_factor: [1], short_factor: [1] }, original_max_position_embeddings: 4096, max_position_embeddings: 131072 };
    expect(() => read(longrope)).toThrow(/rope_scaling type "longrope" is not supported for phi3/);
  });
});
