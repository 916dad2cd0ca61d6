// The decoder families beyond gpt2/llama (issue 32), each against the
// independent float64 reference of tests/reference/hf_families.py (numpy,
// transformers' modeling files; its batched and KV-cache formulations agree
// to 1e-10): the tiny checkpoints of tests/golden/models/<family>/, on both
// wasm backends. Logits, every layer's attentions and the last hidden state,
// the parameter count (num_parameters()), the next tokens and the greedy
// continuation (the KV cache, windows included), and model.save read back.
// The families need the block graph's fields of docs/models.md (headDim,
// qkNorm, slidingWindow, …; TransformerConfig in src/train/train.h).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS, maxRel } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');

/** Every folder of tests/golden/models/ written by tests/reference/hf_families.py. */
const FOLDERS = ['qwen2', 'qwen3', 'mistral', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neox-sequential', 'gpt_neo', 'gemma3-mqa18'];

function folder(name) {
  const dir = path.join(MODELS, name);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return { read, config: JSON.parse(read('config.json')), expected: JSON.parse(read('expected.json')) };
}

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

describe.each(BACKENDS)('new decoder families, float64 references — %s', (backend) => {
  test.each(FOLDERS)('%s', async (name) => {
    const f = folder(name);
    const e = f.expected;
    const weights = f.read(e.dtype_files[0]);
    const lab = labs[backend];
    const model = await lab.loadModel({ config: f.config, weights });
    expect(model.config.modelType).toBe(f.config.model_type);
    expect(model.config.parameters).toBe(e.parameters);
    for (const c of e.cases) {
      const L = c.ids.length;
      const r = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      expect(r.logits.shape).toEqual([1, L, model.config.vocabSize]);
      expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
      expect(r.attentions).toHaveLength(model.config.numLayers);
      r.attentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, model.config.numHeads, L, L]);
        expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-4);
      });
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
      const top = await model.nextTokens(c.ids, { k: c.next_tokens.length });
      expect(top.map((t) => t.id)).toEqual(c.next_tokens.map((t) => t.id));
      top.forEach((t, i) => expect(Math.abs(t.prob - c.next_tokens[i].p)).toBeLessThan(1e-5));
      // generate stops after an eos_token_id, as transformers' generate does; the reference's greedy runs on
      const eos = new Set([].concat(f.config.eos_token_id ?? []));
      const stop = c.greedy.findIndex((id) => eos.has(id));
      const got = [];
      for await (const t of model.generate(c.ids, { maxNewTokens: c.greedy.length, temperature: 0 })) got.push(t.id);
      expect(got).toEqual(stop < 0 ? c.greedy : c.greedy.slice(0, stop + 1));
    }
    // model.save writes the family's names (fused projections fused again, Gemma's w = (1 + w) − 1) in
    // F32 and reads back to the same logits. (Not for a 16-bit Gemma: in F32 its embedding scale is
    // √hidden in float32, no longer rounded to 16 bits, as transformers would run that file.)
    if (!(e.embed_scale !== null && e.dtype !== 'F32')) {
      const files = model.save();
      const again = await lab.loadModel({ config: files['config.json'], weights: files['model.safetensors'] });
      const ids = e.cases[0].ids;
      expect([...again.forwardSync(ids).logits.data]).toEqual([...model.forwardSync(ids).logits.data]);
      again.dispose();
    }
    model.dispose();
  });
});

// Qwen2Config's window (configuration_qwen2.py): with use_sliding_window,
// layer_types is "sliding_attention" from max_window_layers on. The qwen2
// golden with use_sliding_window true, sliding_window 3, max_window_layers 1
// (layer 1 sliding over a 12-token text): tests/reference/hf_families.py
// forward, both formulations agreeing to 1e-10 (window.expected.json).
describe.each(BACKENDS)('qwen2 with use_sliding_window — %s', (backend) => {
  test('layers ≥ max_window_layers attend to the last sliding_window tokens: logits, attentions and hidden states within 1e-4', async () => {
    const f = folder('qwen2');
    const ref = JSON.parse(f.read('window.expected.json'));
    const model = await labs[backend].loadModel({ config: { ...f.config, ...ref.config_patch }, weights: f.read(f.expected.dtype_files[0]), tokenizer: null });
    for (const c of ref.cases) {
      const r = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
      r.attentions.forEach((a, l) => expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-4));
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
      // Layer 1 is windowed: query 11 gives keys 0..8 no weight; layer 0 is full.
      const L = c.ids.length;
      const row = (l, q) => Array.from(r.attentions[l].data.subarray(q * L, (q + 1) * L));
      expect(row(1, L - 1).slice(0, L - 3).every((p) => p === 0)).toBe(true);
      expect(row(0, L - 1).every((p) => p > 0)).toBe(true);
    }
    model.dispose();
  });
});

describe('bad input of the new families', () => {
  test('qwen2: an unknown layer type, sliding layers without use_sliding_window and attention_bias are refused by name', async () => {
    const lab = labs[BACKENDS[0]];
    const f = folder('qwen2');
    const weights = f.read(f.expected.dtype_files[0]);
    await expect(lab.loadModel({ config: { ...f.config, layer_types: ['full_attention', 'chunked_attention'] }, weights }))
      .rejects.toThrow(/layer_types entry "chunked_attention" \(layer 1\) is not supported for qwen2/);
    await expect(lab.loadModel({ config: { ...f.config, layer_types: ['full_attention', 'sliding_attention'] }, weights }))
      .rejects.toThrow(/layer_types has "sliding_attention" layers but use_sliding_window is false, which sets sliding_window to None for qwen2/);
    await expect(lab.loadModel({ config: { ...f.config, attention_bias: true }, weights }))
      .rejects.toThrow(/attention_bias is not a qwen2 key/);
    await expect(lab.loadModel({ config: { ...f.config, hidden_act: 'gelu' }, weights }))
      .rejects.toThrow(/hidden_act "gelu" is not supported for qwen2; allowed: silu/);
    const { num_attention_heads: _, ...noHeads } = f.config;
    await expect(lab.loadModel({ config: noHeads, weights })).rejects.toThrow(/num_attention_heads/);
  });
});

describe('bad input of the families of issue 32, through loadModel', () => {
  const load = (name, patch = {}, weightsOf = name) => {
    const f = folder(name);
    const config = { ...f.config, ...patch };
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete config[k];
    return labs[BACKENDS[0]].loadModel({ config, weights: folder(weightsOf).read('model.safetensors') });
  };

  test('a head_dim that with the heads disagrees with q_proj’s rows names both', async () => {
    await expect(load('qwen3', { head_dim: 16 })).rejects.toThrow(
      /tensor "model\.layers\.0\.self_attn\.q_proj\.weight" has shape \[48, 32\], but config\.json implies \[64, 32\] \(num_attention_heads 4 × head_dim 16\)/,
    );
    await expect(load('gemma', { head_dim: 8 })).rejects.toThrow(/q_proj\.weight" has shape \[64, 32\], but config\.json implies \[32, 32\] \(num_attention_heads 4 × head_dim 8\)/);
    // Phi-3's fused rows: (H + 2·Hkv)·D
    await expect(load('phi3', { num_key_value_heads: 4 })).rejects.toThrow(
      /qkv_proj\.weight" has shape \[64, 32\], but config\.json implies \[96, 32\] \(\(num_attention_heads 4 \+ 2 × num_key_value_heads 4\) × head_dim 8\)/,
    );
  });

  test('a tensor whose shape disagrees with the config names the tensor and both shapes', async () => {
    await expect(load('gpt_neox', { intermediate_size: 64 })).rejects.toThrow(/"gpt_neox\.layers\.0\.mlp\.dense_h_to_4h\.weight" has shape \[128, 32\], but config\.json implies \[64, 32\]/);
    await expect(load('gpt_neo', { max_position_embeddings: 64 })).rejects.toThrow(/"transformer\.wpe\.weight" has shape \[32, 32\], but config\.json implies \[64, 32\]/);
  });

  test('a key the family needs and the file lacks names the key and the family', async () => {
    await expect(load('gpt_neo', { num_layers: undefined })).rejects.toThrow(/config\.json has no "num_layers" \(model_type "gpt_neo" needs it\)/);
    await expect(load('phi3', { intermediate_size: undefined })).rejects.toThrow(/no "intermediate_size" \(model_type "phi3" needs it\)/);
  });

  test('a layer_types entry that is neither sliding_attention nor full_attention names the entry', async () => {
    await expect(load('gemma3', { layer_types: ['sliding_attention', 'sliding', 'full_attention'] })).rejects.toThrow(/layer_types entry "sliding" \(layer 1\) is not supported for gemma3_text/);
    await expect(load('gemma2', { layer_types: ['full_attention', 'chunked_attention'] })).rejects.toThrow(/layer_types entry "chunked_attention" \(layer 1\)/);
  });

  test('a rope_scaling the graph does not implement is refused by name, not ignored', async () => {
    await expect(load('phi3', { rope_scaling: { type: 'longrope', short_factor: [1, 1], long_factor: [1, 1] } })).rejects.toThrow(/rope_scaling type "longrope" is not supported for phi3/);
    await expect(load('mistral', { rope_scaling: { rope_type: 'yarn', factor: 2 } })).rejects.toThrow(/rope_scaling type "yarn" is not supported for mistral/);
    await expect(load('qwen3', { rope_scaling: { rope_type: 'llama3', factor: 8 } })).rejects.toThrow(/rope_scaling type "llama3" is not supported for qwen3/);
    await expect(load('gpt_neox', { rope_scaling: { type: 'dynamic', factor: 2 } })).rejects.toThrow(/rope_scaling type "dynamic" is not supported for gpt_neox/);
  });

  test('weights of another family are refused by their names', async () => {
    // gemma2's file holds the four norms, which a gemma config does not use
    await expect(load('gemma', { head_dim: 8, num_key_value_heads: 2, model_type: 'gemma', torch_dtype: 'float32' }, 'gemma2')).rejects.toThrow(/a gemma model does not use: .*pre_feedforward_layernorm/);
    // a mistral config over phi3's fused file
    await expect(load('mistral', {}, 'phi3')).rejects.toThrow(/the weights lack .* a mistral model with this config\.json needs: "model\.layers\.0\.self_attn\.q_proj\.weight"/);
  });

  test('gemma and gemma3: use_bidirectional_attention true is refused', async () => {
    await expect(load('gemma', { use_bidirectional_attention: true })).rejects.toThrow(/use_bidirectional_attention true is not supported for gemma/);
    await expect(load('gemma3', { use_bidirectional_attention: true })).rejects.toThrow(/use_bidirectional_attention true is not supported for gemma3_text/);
  });
});
