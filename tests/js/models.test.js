// Whole Hugging Face models (lab.loadModel, web/lib/model/) against the
// independent float64 references of tests/reference/hf_models.py (numpy,
// transformers' semantics): the tiny gpt2, llama (GQA 4/2, RoPE base 5e5,
// untied head; also sharded BF16) and bert (MLM head) checkpoints of
// tests/golden/models, in F32, F16 and BF16, on both wasm backends. Then the
// tokenizer against @huggingface/tokenizers called directly, next-token
// probabilities, generation, save → reload (and the numpy reference reading
// the saved files), and bad input.
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { Tokenizer } from '@huggingface/tokenizers';
import { BACKENDS, maxRel } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..', '..');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

function folder(name) {
  const dir = path.join(MODELS, name);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return {
    dir,
    read,
    config: JSON.parse(read('config.json')),
    tokenizer: JSON.parse(read('tokenizer.json')),
    expected: JSON.parse(read('expected.json')),
  };
}

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const FAMILIES = [
  ['gpt2', 'model.safetensors'],
  ['gpt2', 'model-f16.safetensors'],
  ['gpt2', 'model-bf16.safetensors'],
  ['llama', 'model.safetensors'],
  ['llama', 'model-f16.safetensors'],
  ['llama', 'model-bf16.safetensors'],
  ['bert', 'model.safetensors'],
  ['bert', 'model-f16.safetensors'],
  ['bert', 'model-bf16.safetensors'],
];

describe.each(BACKENDS)('float64 references — %s', (backend) => {
  test.each(FAMILIES)('%s from %s', async (name, file) => {
    const f = folder(name);
    const model = await labs[backend].loadModel({ config: f.config, weights: f.read(file), tokenizer: f.tokenizer });
    expect(model.config.parameters).toBe(f.expected.parameters);
    expect(model.config.modelType).toBe(name);
    for (const c of f.expected.cases) {
      const r = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      const L = c.ids.length;
      expect(r.ids).toEqual(c.ids);
      expect(r.logits.shape).toEqual([1, L, model.config.vocabSize]);
      expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
      expect(r.attentions).toHaveLength(model.config.numLayers);
      r.attentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, model.config.numHeads, L, L]);
        expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-5);
      });
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
      // hiddenStates 'all': transformers' output_hidden_states, N + 1 of [1, L, E].
      const all = model.forwardSync(c.ids, { attentions: false, hiddenStates: 'all' }).hiddenStates;
      expect(all).toHaveLength(model.config.numLayers + 1);
      all.forEach((h, l) => {
        expect(h.shape).toEqual([1, L, model.config.embedDim]);
        expect(maxRel(h.data, c.all_hidden_states[l])).toBeLessThan(1e-4);
      });
    }
    expect(() => model.forwardSync([1], { hiddenStates: 'some' })).toThrow(/hiddenStates must be true or false or 'all', got "some"/);
    model.dispose();
  });

  // A checkpoint whose matrices are all F16 (or all BF16) keeps its
  // projections in 16 bits (dtype 'auto'); the kernels widen them exactly, so
  // the GEMM (L > 4) and the GEMV (L <= 4, decoding) give the bits of the
  // float32 conversion (dtype 'float32'), from half the bytes.
  test.each(FAMILIES.filter(([, file]) => file !== 'model.safetensors'))('%s from %s: kept in 16 bits = converted to float32, bit for bit', async (name, file) => {
    const f = folder(name);
    const src = () => ({ config: f.config, weights: f.read(file) });
    const half = await labs[backend].loadModel(src());
    const full = await labs[backend].loadModel({ ...src(), dtype: 'float32' });
    expect(half.config.weightsDtype).toBe(file.includes('bf16') ? 'bfloat16' : 'float16');
    expect(full.config.weightsDtype).toBe('float32');
    expect(full.config.bytes).toBe(full.config.parameters * 4);
    expect(half.config.bytes).toBeLessThan(full.config.bytes * 0.8);
    if (name === 'gpt2') {
      // Its projections at 2 bytes, and the 16-bit copy of the tied head
      // (wte, V·E at 2 bytes) that the few-row calls below read.
      const { tensors } = labs[backend].readSafetensors(f.read('model.safetensors'));
      const proj = Object.entries(tensors).filter(([n]) => /\.(c_attn|c_proj|c_fc)\.weight$/.test(n))
        .reduce((a, [, t]) => a + t.shape[0] * t.shape[1], 0);
      const { vocabSize: V, embedDim: E } = half.config;
      expect(half.config.bytes).toBe(full.config.bytes - 2 * proj + 2 * V * E);
    }
    const ids = f.expected.cases[0].ids;
    for (const input of [ids, ids.slice(0, 1), ids.slice(0, 3)]) {
      const a = half.forwardSync(input, { attentions: true, hiddenStates: true });
      const b = full.forwardSync(input, { attentions: true, hiddenStates: true });
      if (a.logits) expect(Buffer.from(a.logits.data.buffer).equals(Buffer.from(b.logits.data.buffer))).toBe(true);
      expect(Buffer.from(a.hiddenStates.data.buffer).equals(Buffer.from(b.hiddenStates.data.buffer))).toBe(true);
      a.attentions.forEach((t, l) => expect(Buffer.from(t.data.buffer).equals(Buffer.from(b.attentions[l].data.buffer))).toBe(true));
    }
    half.dispose();
    full.dispose();
  });

  test('llama from BF16 shards + index, as a folder of Files', async () => {
    const dir = path.join(MODELS, 'llama-sharded');
    const files = fs.readdirSync(dir).filter((n) => n !== 'expected.json').map((n) => new File([fs.readFileSync(path.join(dir, n))], n));
    const model = await labs[backend].loadModel(files);
    const exp = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json')));
    const r = model.forwardSync(exp.cases[0].ids);
    expect(maxRel(r.logits.data, exp.cases[0].logits)).toBeLessThan(1e-4);
    model.dispose();
  });

  test('gpt2 names with the transformer. prefix of save_pretrained', async () => {
    const f = folder('gpt2');
    const { tensors } = labs[backend].readSafetensors(f.read('model.safetensors'));
    const prefixed = {};
    for (const [n, t] of Object.entries(tensors)) prefixed[`transformer.${n}`] = t;
    prefixed['transformer.h.0.attn.bias'] = { data: new Float32Array(4), shape: [1, 1, 2, 2] };
    const model = await labs[backend].loadModel({ config: f.config, weights: labs[backend].writeSafetensors(prefixed) });
    const c = f.expected.cases[1];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    expect(model.forwardSync(c.ids).tokens).toBeNull();
    expect(() => model.encode('hi')).toThrow(/loaded without a tokenizer/);
    model.dispose();
  });
});

describe('tokenizers: model.encode = @huggingface/tokenizers called directly', () => {
  const TEXTS = ['Hello world, the cat sat.', '  two  spaces', '你好，世界', 'emoji 🐱 and 🚀!', 'the cat sat on the mat'];
  test.each(['gpt2', 'llama', 'bert'])('%s', async (name) => {
    const f = folder(name);
    const model = await labs.wasm.loadModel({ config: f.config, weights: f.read('model.safetensors'), tokenizer: f.read('tokenizer.json') });
    const direct = new Tokenizer(f.tokenizer, {});
    for (const text of TEXTS) {
      const enc = direct.encode(text);
      expect(model.encode(text)).toEqual(enc.ids);
      expect(model.tokens(enc.ids)).toEqual(enc.tokens);
      expect(model.decode(enc.ids)).toBe(direct.decode(enc.ids));
      expect(model.forwardSync(text, { attentions: false }).ids).toEqual(enc.ids);
    }
    model.dispose();
  });
});

describe('next tokens and generation', () => {
  let model;
  let V;
  beforeAll(async () => {
    const f = folder('gpt2');
    model = await labs.wasm.loadModel({ config: f.config, weights: f.read('model.safetensors'), tokenizer: f.tokenizer });
    V = model.config.vocabSize;
  });
  afterAll(() => model.dispose());

  const lastRow = (ids) => {
    const { logits } = model.forwardSync(ids, { attentions: false });
    return Array.from(logits.data.subarray((ids.length - 1) * V));
  };

  test('nextTokens: the softmax of the last row of forward, sorted', async () => {
    const ids = [5, 40, 71, 260, 9];
    const row = lastRow(ids);
    const m = Math.max(...row);
    for (const T of [1, 0.5]) {
      const z = row.reduce((s, x) => s + Math.exp((x - m) / T), 0);
      const probs = row.map((x) => Math.exp((x - m) / T) / z);
      const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
      const top = await model.nextTokens(ids, { k: 5, temperature: T });
      expect(top.map((t) => t.id)).toEqual(order.slice(0, 5).map((o) => o[1]));
      top.forEach((t, i) => expect(t.prob).toBeCloseTo(order[i][0], 5));
      expect(top[0].token).toBe(model.tokens([top[0].id])[0]);
    }
    const greedy = await model.nextTokens(ids, { k: 2, temperature: 0 });
    expect(greedy[0].prob).toBe(1);
    expect(greedy[1].prob).toBe(0);
  });

  test('greedy generation with the cache = the arg max of full forwards', async () => {
    const prompt = [5, 40, 71];
    const got = [];
    for await (const t of model.generate(prompt, { maxNewTokens: 8, temperature: 0 })) got.push(t.id);
    const ids = prompt.slice();
    for (let i = 0; i < got.length; i++) {
      const row = lastRow(ids);
      const best = row.indexOf(Math.max(...row));
      expect(got[i]).toBe(best);
      ids.push(best);
      if (best === 296) break; // <|endoftext|>
    }
  });

  test('seeded sampling repeats; text pieces add up to the decoded text; signal stops it', async () => {
    const run = async (opts) => {
      const out = [];
      for await (const t of model.generate('the cat', { maxNewTokens: 10, ...opts })) out.push(t);
      return out;
    };
    const a = await run({ seed: 7, temperature: 1.2, topK: 50, topP: 0.95 });
    const b = await run({ seed: 7, temperature: 1.2, topK: 50, topP: 0.95 });
    expect(b.map((t) => t.id)).toEqual(a.map((t) => t.id));
    const prompt = model.encode('the cat');
    expect(model.decode(prompt) + a.map((t) => t.text).join('')).toBe(model.decode([...prompt, ...a.map((t) => t.id)]));
    const c = await run({ seed: 8, temperature: 1.2 });
    const d = await run({ seed: 9, temperature: 1.2 });
    expect(c.map((t) => t.id)).not.toEqual(d.map((t) => t.id));
    const ctrl = new AbortController();
    const seen = [];
    for await (const t of model.generate('the cat', { maxNewTokens: 10, seed: 1, signal: ctrl.signal })) {
      seen.push(t);
      if (seen.length === 3) ctrl.abort();
    }
    expect(seen).toHaveLength(3);
  });

  test('a forward between two steps does not corrupt the generation', async () => {
    const plain = [];
    for await (const t of model.generate([5, 40], { maxNewTokens: 5, temperature: 0 })) plain.push(t.id);
    const mixed = [];
    for await (const t of model.generate([5, 40], { maxNewTokens: 5, temperature: 0 })) {
      mixed.push(t.id);
      await model.nextTokens([9, 9, 9, 9]);
    }
    expect(mixed).toEqual(plain);
  });

  test('bad options', async () => {
    await expect(model.nextTokens([1], { k: 0 })).rejects.toThrow(RangeError);
    await expect(model.nextTokens([1], { temperature: -1 })).rejects.toThrow(/temperature/);
    await expect(model.nextTokens([1], { topk: 3 })).rejects.toThrow(TypeError);
    expect(() => model.generate([1], { topP: 0 })).toThrow(/topP/);
    expect(() => model.generate([1], { topP: 1.5 })).toThrow(RangeError);
    expect(() => model.generate([1], { temperature: -0.1 })).toThrow(RangeError);
    expect(() => model.generate([1], { max_new_tokens: 3 })).toThrow(/unknown option "max_new_tokens"/);
    expect(() => model.forwardSync([1], { attention: true })).toThrow(TypeError);
    expect(() => model.forwardSync([1, V])).toThrow(new RegExp(`ids\\[1\\] is ${V}`));
    expect(() => model.forwardSync([-1])).toThrow(RangeError);
    expect(() => model.forwardSync(new Array(33).fill(1))).toThrow(/33 tokens, more than the model's 32 positions/);
    expect(() => model.forwardSync(new Array(33).fill(1))).toThrow(RangeError);
  });
});

describe('bert: the masked-LM view', () => {
  test('fillMask = the softmax of the MLM logits at each [MASK]', async () => {
    const f = folder('bert');
    const model = await labs.wasm.loadModel({ config: f.config, weights: f.read('model.safetensors'), tokenizer: f.tokenizer });
    const c = f.expected.cases.find((x) => x.ids.includes(4));
    const res = await model.fillMask(c.ids, { k: 3 });
    const V = model.config.vocabSize;
    const masks = c.ids.map((id, i) => (id === 4 ? i : -1)).filter((i) => i >= 0);
    expect(res.map((r) => r.position)).toEqual(masks);
    for (const r of res) {
      const row = c.logits[r.position];
      const m = Math.max(...row);
      const z = row.reduce((s, x) => s + Math.exp(x - m), 0);
      const best = row.indexOf(m);
      expect(r.predictions[0].id).toBe(best);
      expect(r.predictions[0].prob).toBeCloseTo(1 / z, 5);
    }
    expect(V).toBe(87);
    await expect(model.nextTokens(c.ids)).rejects.toThrow(/masked language model/);
    expect(() => model.generate(c.ids)).toThrow(TypeError);
    model.dispose();
  });
});

describe('save and reload', () => {
  test('a lab.transformer with GPT-2 blocks: trained, saved, reloaded bit-identical, and read by the numpy reference', async () => {
    const lab = labs.wasm;
    const t = lab.transformer({ architecture: 'gpt2', vocabSize: 11, maxLength: 12, embedDim: 16, numHeads: 2, numLayers: 2, seed: 5 });
    const trainer = t.trainer({ lr: 3e-3 });
    const { tokens, targets } = lab.tasks.shift({ batch: 4, length: 12, vocab: 11, seed: 1 });
    const losses = [];
    for (let i = 0; i < 8; i++) losses.push(trainer.step(tokens, targets).loss);
    expect(losses[7]).toBeLessThan(losses[0]);
    const files = t.save();
    const model = await lab.loadModel({ config: files['config.json'] && JSON.parse(files['config.json']), weights: files['model.safetensors'] });
    const ids = [3, 1, 4, 1, 5, 9, 2, 6];
    const ours = t.forward([ids]).logits.data;
    const loaded = model.forwardSync(ids).logits.data;
    expect(Array.from(loaded)).toEqual(Array.from(ours));
    // The float64 reference of transformers' GPT-2 reads the same files.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attnlab-save-'));
    fs.writeFileSync(path.join(dir, 'config.json'), files['config.json']);
    fs.writeFileSync(path.join(dir, 'model.safetensors'), files['model.safetensors']);
    const out = JSON.parse(execFileSync(PYTHON, [path.join(ROOT, 'tests', 'reference', 'hf_models.py'), 'forward', dir, '--ids', ids.join(',')], { encoding: 'utf8', maxBuffer: 1 << 26 }));
    expect(maxRel(loaded, out.logits)).toBeLessThan(1e-4);
    fs.rmSync(dir, { recursive: true });
    // A loaded model saves what it read.
    const again = model.save();
    const model2 = await lab.loadModel({ config: JSON.parse(again['config.json']), weights: again['model.safetensors'] });
    expect(Array.from(model2.forwardSync(ids).logits.data)).toEqual(Array.from(loaded));
    model.dispose();
    model2.dispose();
    t.dispose();
    expect(() => lab.transformer({ vocabSize: 5, maxLength: 4 }).save()).toThrow(/architecture 'gpt2'/);
  });

  test.each(['llama', 'bert'])('%s: save() then loadModel gives the same bits', async (name) => {
    const f = folder(name);
    const model = await labs.wasm.loadModel({ config: f.config, weights: f.read('model-bf16.safetensors'), tokenizer: f.tokenizer });
    const files = model.save();
    expect(JSON.parse(files['tokenizer.json'])).toEqual(f.tokenizer);
    const back = await labs.wasm.loadModel({ config: JSON.parse(files['config.json']), weights: files['model.safetensors'], tokenizer: files['tokenizer.json'] });
    const ids = f.expected.cases[0].ids;
    expect(Array.from(back.forwardSync(ids).logits.data)).toEqual(Array.from(model.forwardSync(ids).logits.data));
    model.dispose();
    back.dispose();
  });
});
