// The encoders of issue 34 item 1 (distilbert, roberta, xlm-roberta,
// modernbert), each
// against the independent float64 reference of tests/reference/hf_encoders.py
// (numpy, transformers' modeling files; its batched and row-at-a-time
// formulations agree to 1e-10): the tiny checkpoints of
// tests/golden/models/<family>/, in F32 and a 16-bit dtype, on both wasm
// backends. Logits, every layer's attentions, the hidden states, the
// parameter count (num_parameters()), fillMask with the family's mask token,
// save → reload, and the bad inputs of the new tables. ModernBERT's tiny
// model has local layers whose window (|i − j| <= local_attention // 2 = 2)
// is shorter than every text, and a variant with every bias and other keys
// is checked against the same reference run on a rewritten folder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS, maxRel } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..', '..');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const PYTHON = '/usr/bin/python3';
const ENCODERS = ['distilbert', 'roberta', 'xlm-roberta', 'modernbert'];
// model.config.maxPositions: RoBERTa's table from padding_idx + 1 (32 of 34 rows), ModernBERT's RoPE positions
const MAX_POSITIONS = { distilbert: 32, roberta: 32, 'xlm-roberta': 32, modernbert: 64 };

function folder(name) {
  const dir = path.join(MODELS, name);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return {
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

const CASES = ENCODERS.flatMap((name) => folder(name).expected.dtype_files.map((file) => [name, file]));

describe.each(BACKENDS)('encoders, float64 references — %s', (backend) => {
  test.each(CASES)('%s from %s', async (name, file) => {
    const f = folder(name);
    const e = f.expected;
    const model = await labs[backend].loadModel({ config: f.config, weights: f.read(file), tokenizer: f.tokenizer });
    expect(model.config.modelType).toBe(name);
    expect(model.config.causal).toBe(false);
    expect(model.config.maskToken).toBe(e.mask_token);
    expect(model.config.parameters).toBe(e.parameters);
    for (const c of e.cases) {
      const L = c.ids.length;
      expect(model.encode(c.text)).toEqual(c.ids);
      // encoders give the last hidden state without asking
      const r = model.forwardSync(c.text);
      expect(r.ids).toEqual(c.ids);
      expect(r.logits.shape).toEqual([1, L, model.config.vocabSize]);
      expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
      expect(r.attentions).toHaveLength(model.config.numLayers);
      r.attentions.forEach((a, l) => {
        expect(a.shape).toEqual([1, model.config.numHeads, L, L]);
        expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-4);
      });
      expect(r.hiddenStates.shape).toEqual([1, L, model.config.embedDim]);
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
      // 'all': every block's input, then the last hidden state (transformers'
      // output_hidden_states; ModernBERT's ends before final_norm, so its
      // last entry is compared with last_hidden_state)
      const all = model.forwardSync(c.ids, { attentions: false, hiddenStates: 'all' }).hiddenStates;
      const N = model.config.numLayers;
      expect(all).toHaveLength(N + 1);
      all.forEach((h, l) => expect(maxRel(h.data, l < N ? c.all_hidden_states[l] : c.hidden_states)).toBeLessThan(1e-4));
    }
    model.dispose();
  });
});

describe('encoders: fillMask with the family mask token', () => {
  test.each(ENCODERS)('%s', async (name) => {
    const f = folder(name);
    const model = await labs.wasm.loadModel({ config: f.config, weights: f.read('model.safetensors'), tokenizer: f.tokenizer });
    const maskId = f.tokenizer.added_tokens.find((t) => t.content === f.expected.mask_token).id;
    const cases = f.expected.cases.filter((c) => c.ids.includes(maskId));
    expect(cases.length).toBeGreaterThan(0);
    for (const c of cases) {
      for (const input of [c.text, c.ids]) {
        const res = await model.fillMask(input, { k: 3 });
        expect(res.map((r) => r.position)).toEqual(c.ids.map((id, i) => (id === maskId ? i : -1)).filter((i) => i >= 0));
        for (const r of res) {
          // the softmax of the reference's logits at the mask
          const row = c.logits[r.position];
          const m = Math.max(...row);
          const z = row.reduce((s, x) => s + Math.exp(x - m), 0);
          const order = row.map((x, i) => [x, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, 3);
          expect(r.predictions.map((p) => p.id)).toEqual(order.map(([, i]) => i));
          r.predictions.forEach((p, i) => expect(p.prob).toBeCloseTo(Math.exp(order[i][0] - m) / z, 5));
          expect(r.predictions[0].token).toBe(model.tokens([r.predictions[0].id])[0]);
        }
      }
    }
    await expect(model.nextTokens(cases[0].ids)).rejects.toThrow(new RegExp(`masked language model.*fillMask\\(text\\) for its ${f.expected.mask_token.replace(/[[\]]/g, '\\$&')} predictions`));
    expect(() => model.generate(cases[0].ids)).toThrow(TypeError);
    // RoBERTa's positions: padding_idx + 1 on, so 32 of the table's 34 rows
    const P = MAX_POSITIONS[name];
    expect(model.config.maxPositions).toBe(P);
    expect(() => model.forwardSync(new Array(P + 1).fill(5))).toThrow(new RegExp(`${P + 1} tokens, more than the model's ${P} positions`));
    model.dispose();
  });
});

describe('encoders: save and reload', () => {
  test.each(ENCODERS)('%s: save() then loadModel gives the same bits, and the numpy reference reads the file', async (name) => {
    const f = folder(name);
    const lab = labs.wasm;
    const half = f.expected.dtype_files[1];
    const model = await lab.loadModel({ config: f.config, weights: f.read(half), tokenizer: f.tokenizer });
    const files = model.save();
    expect(JSON.parse(files['tokenizer.json'])).toEqual(f.tokenizer);
    const { tensors } = lab.readSafetensors(files['model.safetensors']);
    // the names and shapes of the hub checkpoint
    expect(Object.keys(tensors).sort()).toEqual([...f.expected.tensors].sort());
    for (const [k, shape] of Object.entries(f.expected.shapes)) expect(tensors[k].shape).toEqual(shape);
    const back = await lab.loadModel({ config: JSON.parse(files['config.json']), weights: files['model.safetensors'], tokenizer: files['tokenizer.json'] });
    expect(back.config.parameters).toBe(f.expected.parameters);
    const c = f.expected.cases[0];
    const ours = model.forwardSync(c.ids).logits.data;
    expect(Array.from(back.forwardSync(c.ids).logits.data)).toEqual(Array.from(ours));
    if (name === 'roberta' || name === 'xlm-roberta') {
      // The position rows before padding_idx + 1, which no unpadded input reads, are written as zeros.
      const orig = lab.readSafetensors(f.read('model.safetensors')).tensors['roberta.embeddings.position_embeddings.weight'];
      const pos = tensors['roberta.embeddings.position_embeddings.weight'];
      const E = pos.shape[1];
      expect(Array.from(pos.data.subarray(0, 2 * E)).every((v) => v === 0)).toBe(true);
      expect(Array.from(pos.data.subarray(2 * E))).toEqual(Array.from(orig.data.subarray(2 * E)));
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attnlab-enc-'));
    fs.writeFileSync(path.join(dir, 'config.json'), files['config.json']);
    fs.writeFileSync(path.join(dir, 'model.safetensors'), files['model.safetensors']);
    const out = JSON.parse(execFileSync(PYTHON, [path.join(ROOT, 'tests', 'reference', 'hf_encoders.py'), 'forward', dir, '--ids', c.ids.join(',')], { encoding: 'utf8', maxBuffer: 1 << 26 }));
    expect(maxRel(ours, out.logits)).toBeLessThan(1e-4);
    fs.rmSync(dir, { recursive: true });
    model.dispose();
    back.dispose();
  });
});

describe('encoders: bad input', () => {
  const lab = () => labs.wasm;
  const args = (name, edit = {}) => {
    const f = folder(name);
    return { config: { ...f.config, ...edit }, weights: f.read('model.safetensors') };
  };
  const without = (name, drop, reshape = null) => {
    const l = lab();
    const { tensors } = l.readSafetensors(folder(name).read('model.safetensors'));
    if (drop) delete tensors[drop];
    if (reshape) {
      const t = tensors[reshape];
      tensors[reshape] = { ...t, data: t.data.subarray(0, t.data.length - t.shape[1]), shape: [t.shape[0] - 1, t.shape[1]] };
    }
    return l.writeSafetensors(tensors);
  };

  test('a missing tensor or a wrong shape is named', async () => {
    await expect(lab().loadModel({ ...args('distilbert'), weights: without('distilbert', 'distilbert.transformer.layer.1.sa_layer_norm.weight') }))
      .rejects.toThrow(/lack 1 tensor a distilbert model with this config\.json needs: "distilbert\.transformer\.layer\.1\.sa_layer_norm\.weight"/);
    await expect(lab().loadModel({ ...args('roberta'), weights: without('roberta', 'lm_head.bias') }))
      .rejects.toThrow(/lack 1 tensor a roberta model .*"lm_head\.bias"/);
    await expect(lab().loadModel({ ...args('xlm-roberta'), weights: without('xlm-roberta', null, 'roberta.embeddings.position_embeddings.weight') }))
      .rejects.toThrow(/"roberta\.embeddings\.position_embeddings\.weight" has shape \[33, 32\], but config\.json implies \[34, 32\]/);
    // a tensor the family does not use
    const l = lab();
    const { tensors } = l.readSafetensors(folder('distilbert').read('model.safetensors'));
    tensors['distilbert.embeddings.token_type_embeddings.weight'] = { dtype: 'F32', shape: [2, 32], data: new Float32Array(64) };
    await expect(l.loadModel({ ...args('distilbert'), weights: l.writeSafetensors(tensors) }))
      .rejects.toThrow(/a distilbert model does not use: "distilbert\.embeddings\.token_type_embeddings\.weight"/);
  });

  test('unsupported config values are refused by name', async () => {
    await expect(lab().loadModel(args('roberta', { model_type: 'camembert' })))
      .rejects.toThrow(/model_type "camembert" is not supported; supported: .*bert, .*distilbert, roberta, xlm-roberta/);
    await expect(lab().loadModel(args('distilbert', { activation: 'relu' })))
      .rejects.toThrow(/activation "relu" is not supported for distilbert; allowed: gelu/);
    await expect(lab().loadModel(args('distilbert', { sinusoidal_pos_embds: 'yes' })))
      .rejects.toThrow(/sinusoidal_pos_embds must be true or false, got "yes"/);
    await expect(lab().loadModel(args('distilbert', { tie_word_embeddings: false })))
      .rejects.toThrow(/tie_word_embeddings: false is not supported for distilbert/);
    const { dim: _, ...noDim } = folder('distilbert').config;
    await expect(lab().loadModel({ ...args('distilbert'), config: noDim })).rejects.toThrow(/config\.json has no "dim"/);
    await expect(lab().loadModel(args('roberta', { hidden_act: 'relu' })))
      .rejects.toThrow(/hidden_act "relu" is not supported for roberta; allowed: gelu/);
    await expect(lab().loadModel(args('xlm-roberta', { is_decoder: true })))
      .rejects.toThrow(/is_decoder: true \(a causal xlm-roberta\) is not supported/);
    await expect(lab().loadModel(args('roberta', { tie_word_embeddings: false })))
      .rejects.toThrow(/tie_word_embeddings: false is not supported for roberta/);
    await expect(lab().loadModel(args('roberta', { position_embedding_type: 'relative_key' })))
      .rejects.toThrow(/position_embedding_type "relative_key" is not supported; allowed: absolute/);
    await expect(lab().loadModel(args('roberta', { max_position_embeddings: 2 })))
      .rejects.toThrow(/max_position_embeddings \(2\) must exceed pad_token_id \+ 1 \(2\)/);
    await expect(lab().loadModel(args('roberta', { pad_token_id: -1 })))
      .rejects.toThrow(/"pad_token_id" must be an integer in \[0, /);
  });

  test('distilbert: sinusoidal_pos_embds true reads the file\'s position table, as from_pretrained does', async () => {
    const f = folder('distilbert');
    const model = await lab().loadModel(args('distilbert', { sinusoidal_pos_embds: true }));
    const c = f.expected.cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    model.dispose();
  });

  test('an encoder without its MLM head: hidden states, no logits, no fillMask', async () => {
    const l = lab();
    const { tensors } = l.readSafetensors(folder('roberta').read('model.safetensors'));
    for (const k of Object.keys(tensors)) if (k.startsWith('lm_head.')) delete tensors[k];
    const model = await l.loadModel({ config: folder('roberta').config, weights: l.writeSafetensors(tensors), tokenizer: folder('roberta').tokenizer });
    const c = folder('roberta').expected.cases[0];
    const r = model.forwardSync(c.ids);
    expect(r.logits).toBeNull();
    expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
    await expect(model.fillMask(c.text)).rejects.toThrow(/fillMask needs a masked language model/);
    model.dispose();
  });
});

// ModernBERT (modeling_modernbert.py): the window, the layer pattern and the
// keys the golden folder leaves at their defaults.
describe('modernbert', () => {
  const f = () => folder('modernbert');
  const lab = () => labs.wasm;

  test('local layers see |i − j| <= local_attention // 2 only, global layers every token', async () => {
    const m = f();
    const model = await lab().loadModel({ config: m.config, weights: m.read('model.safetensors'), tokenizer: m.tokenizer });
    const c = m.expected.cases[2];
    const L = c.ids.length, H = model.config.numHeads;
    const half = Math.floor(m.config.local_attention / 2);
    expect(L).toBeGreaterThan(2 * half + 1); // the window is shorter than the text
    const { attentions } = model.forwardSync(c.ids);
    attentions.forEach((a, l) => {
      const local = l % m.config.global_attn_every_n_layers !== 0;
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < L; i++) {
          for (let j = 0; j < L; j++) {
            const w = a.data[(h * L + i) * L + j];
            if (!local || Math.abs(i - j) <= half) expect(w).toBeGreaterThan(0); else expect(w).toBe(0);
          }
        }
      }
    });
    model.dispose();
  });

  test('every bias, gelu_pytorch_tanh, another window and layer pattern, an untied decoder: the numpy reference of the rewritten folder', async () => {
    const l = lab();
    const m = f();
    const { tensors } = l.readSafetensors(m.read('model.safetensors'));
    const cfg = {
      ...m.config, norm_bias: true, attention_bias: true, mlp_bias: true, classifier_bias: true, hidden_activation: 'gelu_pytorch_tanh',
      local_attention: 7, global_attn_every_n_layers: 2, local_rope_theta: null, tie_word_embeddings: false,
    };
    // seeded biases: a Linear's [out], every LayerNorm's [E]
    let seed = 7;
    const rnd = (n, s) => Float32Array.from({ length: n }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed / 2 ** 31 - 0.5) * s;
    });
    const add = (name, n, s = 0.2) => { tensors[name] = { dtype: 'F32', shape: [n], data: rnd(n, s) }; };
    const E = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size;
    for (const k of Object.keys(tensors)) {
      if (/norm\.weight$/.test(k)) add(k.replace(/weight$/, 'bias'), E);
    }
    for (let i = 0; i < cfg.num_hidden_layers; i++) {
      const p = `model.layers.${i}.`;
      add(`${p}attn.Wqkv.bias`, 3 * E);
      add(`${p}attn.Wo.bias`, E);
      add(`${p}mlp.Wi.bias`, 2 * I, 0.6);
      add(`${p}mlp.Wo.bias`, E);
    }
    add('head.dense.bias', E);
    const emb = tensors['model.embeddings.tok_embeddings.weight'];
    tensors['decoder.weight'] = { dtype: 'F32', shape: [V, E], data: Float32Array.from(emb.data, (v, i) => v * 0.5 + rnd(1, 0.1)[0] + (i % 3) * 0.01) };
    const weights = l.writeSafetensors(tensors);
    const model = await l.loadModel({ config: cfg, weights, tokenizer: m.tokenizer });
    expect(model.config.parameters).toBe(Object.values(tensors).reduce((n, t) => n + t.data.length, 0));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attnlab-mb-'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
    fs.writeFileSync(path.join(dir, 'model.safetensors'), weights);
    for (const c of m.expected.cases) {
      const out = JSON.parse(execFileSync(PYTHON, [path.join(ROOT, 'tests', 'reference', 'hf_encoders.py'), 'forward', dir, '--ids', c.ids.join(',')], { encoding: 'utf8', maxBuffer: 1 << 26 }));
      const r = model.forwardSync(c.ids);
      expect(maxRel(r.logits.data, out.logits)).toBeLessThan(1e-4);
      r.attentions.forEach((a, i) => expect(maxRel(a.data, out.attentions[i])).toBeLessThan(1e-4));
      expect(maxRel(r.hiddenStates.data, out.hidden_states)).toBeLessThan(1e-4);
    }
    fs.rmSync(dir, { recursive: true });
    model.dispose();
  });

  test('bad input: a missing key names it and the family; a wrong shape names both shapes; refused values', async () => {
    const m = f();
    const args = (edit = {}, drop = null) => {
      const config = { ...m.config, ...edit };
      if (drop) delete config[drop];
      return { config, weights: m.read('model.safetensors') };
    };
    await expect(lab().loadModel(args({}, 'hidden_size'))).rejects.toThrow(/config\.json has no "hidden_size" \(model_type "modernbert" needs it\)/);
    await expect(lab().loadModel(args({}, 'intermediate_size'))).rejects.toThrow(/config\.json has no "intermediate_size" \(model_type "modernbert" needs it\)/);
    const l = lab();
    const { tensors } = l.readSafetensors(m.read('model.safetensors'));
    const t = tensors['model.layers.2.attn.Wqkv.weight'];
    tensors['model.layers.2.attn.Wqkv.weight'] = { ...t, data: t.data.subarray(0, 64 * 32), shape: [64, 32] };
    await expect(l.loadModel({ config: m.config, weights: l.writeSafetensors(tensors) }))
      .rejects.toThrow(/"model\.layers\.2\.attn\.Wqkv\.weight" has shape \[64, 32\], but config\.json implies \[96, 32\] \(3 × hidden_size 32\)/);
    const { tensors: t2 } = l.readSafetensors(m.read('model.safetensors'));
    delete t2['model.layers.1.attn_norm.weight'];
    await expect(l.loadModel({ config: m.config, weights: l.writeSafetensors(t2) }))
      .rejects.toThrow(/lack 1 tensor a modernbert model with this config\.json needs: "model\.layers\.1\.attn_norm\.weight"/);
    // norm_bias: true wants the LayerNorms' biases the file lacks
    await expect(lab().loadModel(args({ norm_bias: true }))).rejects.toThrow(/lack \d+ tensors a modernbert model .*"model\.embeddings\.norm\.bias"/);
    await expect(lab().loadModel(args({ hidden_activation: 'relu' })))
      .rejects.toThrow(/hidden_activation "relu" is not supported for modernbert; allowed: gelu, gelu_pytorch_tanh, gelu_new/);
    await expect(lab().loadModel(args({ classifier_activation: 'silu' })))
      .rejects.toThrow(/classifier_activation "silu" is not supported for modernbert .*allowed: gelu/);
    await expect(lab().loadModel(args({ layer_types: ['full_attention', 'full_attention', 'sliding_attention', 'full_attention'] })))
      .rejects.toThrow(/layer_types .* disagrees with global_attn_every_n_layers 3/);
    await expect(lab().loadModel(args({ rope_parameters: { sliding_attention: { rope_type: 'yarn', factor: 2 } } })))
      .rejects.toThrow(/rope_parameters type "yarn" is not supported for modernbert/);
    await expect(lab().loadModel(args({ local_attention: 0 }))).rejects.toThrow(/"local_attention" must be an integer in \[1, /);
    await expect(lab().loadModel(args({ norm_bias: 'no' }))).rejects.toThrow(/norm_bias must be true or false, got "no"/);
  });

  test('the webgpu model path takes it (its values on the GPU: tests/browser/models-webgpu.browser.mjs)', async () => {
    const { architectureOf } = await import('../../web/lib/model/families/index.js');
    const { checkGpuRuns } = await import('../../web/lib/model/gpu.js');
    const m = f();
    const { type, arch } = architectureOf(m.config);
    const c = { modelType: type, ...arch.config(m.config, new Set(m.expected.tensors)) };
    expect(c.core).toMatchObject({ causal: false, firstNorm1: false, normBias: false, mlmBias: false });
    expect(c.core.slidingWindow).toBeGreaterThan(0);
    expect(() => checkGpuRuns(c)).not.toThrow();
  });

  test('transformers >= 5 keys: layer_types and rope_parameters give the same model', async () => {
    const m = f();
    const cfg = { ...m.config, layer_types: ['full_attention', 'sliding_attention', 'sliding_attention', 'full_attention'],
      rope_parameters: { full_attention: { rope_type: 'default', rope_theta: 160000 }, sliding_attention: { rope_type: 'default', rope_theta: 10000 } } };
    delete cfg.global_rope_theta;
    delete cfg.local_rope_theta;
    const model = await lab().loadModel({ config: cfg, weights: m.read('model.safetensors') });
    const c = m.expected.cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    model.dispose();
  });
});
