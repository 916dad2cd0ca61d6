// The decoder families beyond gpt2/llama (issue 32), each against the
// independent float64 reference of tests/reference/hf_families.py (numpy,
// transformers' modeling files; its batched and KV-cache formulations agree
// to 1e-10): the tiny checkpoints of tests/golden/models/<family>/, on both
// wasm backends. Logits, every layer's attentions and the last hidden state,
// the parameter count (num_parameters()), the next tokens and the greedy
// continuation. A family joins LOADED when the block graph runs it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS, maxRel } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');

/** Folders whose families load today. */
const LOADED = ['qwen2'];

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
  test.each(LOADED)('%s', async (name) => {
    const f = folder(name);
    const e = f.expected;
    const model = await labs[backend].loadModel({ config: f.config, weights: f.read(e.dtype_files[0]) });
    expect(model.config.modelType).toBe(name);
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
      const got = [];
      for await (const t of model.generate(c.ids, { maxNewTokens: c.greedy.length, temperature: 0 })) got.push(t.id);
      expect(got).toEqual(c.greedy);
    }
    model.dispose();
  });
});

describe('bad input of the new families', () => {
  test('qwen2: a sliding window, an unknown layer type and attention_bias are refused by name', async () => {
    const lab = labs[BACKENDS[0]];
    const f = folder('qwen2');
    const weights = f.read(f.expected.dtype_files[0]);
    await expect(lab.loadModel({ config: { ...f.config, use_sliding_window: true }, weights }))
      .rejects.toThrow(/use_sliding_window: true is not supported for qwen2/);
    await expect(lab.loadModel({ config: { ...f.config, layer_types: ['full_attention', 'chunked_attention'] }, weights }))
      .rejects.toThrow(/layer_types entry "chunked_attention" is not supported for qwen2/);
    await expect(lab.loadModel({ config: { ...f.config, attention_bias: true }, weights }))
      .rejects.toThrow(/attention_bias is not a qwen2 key/);
    await expect(lab.loadModel({ config: { ...f.config, hidden_act: 'gelu' }, weights }))
      .rejects.toThrow(/hidden_act "gelu" is not supported for qwen2; allowed: silu/);
    const { num_attention_heads: _, ...noHeads } = f.config;
    await expect(lab.loadModel({ config: noHeads, weights })).rejects.toThrow(/num_attention_heads/);
  });
});
