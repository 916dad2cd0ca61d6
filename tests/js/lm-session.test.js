// Chapter 10's live language models, in Node: web/lib/train/lm-data.js (the batching, windows and
// lr schedule that `npm run train:lm` also uses), trainer.setLearningRate, and LmSession
// (web/lib/train/lm-session.js, what web/lm-worker.js runs): a few steps lower the held-out loss, the
// probe's samples, head roles and maps come from the Model that lab.loadModel builds of the saved
// weights, and the shipped model is scored on the same windows (modelLoss agrees with the
// trainer's own evaluation of the same weights).
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../../web/node.js';
import { loadTokenizer } from '../../scripts/lib/lm-eval.mjs';
import * as trainLm from '../../scripts/lib/train-lm.mjs';
import * as lmEval from '../../scripts/lib/lm-eval.mjs';
import * as lmData from '../../web/lib/train/lm-data.js';
import { LmSession, LIVE_RECIPES, probeModel, modelLoss } from '../../web/lib/train/lm-session.js';

const ROOT = trainLm.ROOT;
const slice = (lang, split, lines) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8').split('\n').slice(0, lines).join('\n') + '\n';
const tokenizerJson = (lang) => JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'models', lang, 'tokenizer.json'), 'utf8'));

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});
afterAll(() => lab.dispose());

test('the script and the live session share one copy of the data code', () => {
  for (const k of ['rng', 'lrAt', 'sampler', 'evalBatches']) expect(trainLm[k]).toBe(lmData[k]);
  for (const k of ['encodeText', 'stream', 'windows']) expect(lmEval[k]).toBe(lmData[k]);
});

test('trainer.setLearningRate keeps the AdamW moments and step count, and changes the next step', () => {
  const make = () => lab.transformer({ architecture: 'gpt2', vocabSize: 11, maxLength: 8, embedDim: 16, numHeads: 2, numLayers: 1, seed: 3 });
  const b = lab.tasks.shift({ length: 8, vocab: 11, batch: 4, seed: 1 });
  const run = (f) => {
    const m = make();
    const tr = m.trainer({ lr: 1e-2, warmup: 0 });
    const out = [];
    for (let i = 0; i < 4; i++) {
      f(tr, i);
      out.push(tr.step(b.tokens, b.targets));
    }
    m.dispose();
    return out;
  };
  const plain = run(() => {});
  const same = run((tr) => tr.setLearningRate(1e-2));
  expect(same.map((s) => s.loss)).toEqual(plain.map((s) => s.loss)); // moments kept: the same bits
  expect(same.map((s) => s.step)).toEqual([1, 2, 3, 4]);
  const lower = run((tr, i) => tr.setLearningRate(i < 2 ? 1e-2 : 1e-3));
  expect(lower.slice(0, 3).map((s) => s.loss)).toEqual(plain.slice(0, 3).map((s) => s.loss));
  expect(lower[2].lr).toBe(Math.fround(1e-3)); // the core keeps it in float32
  expect(lower[3].loss).not.toBe(plain[3].loss);
  const m = make();
  const tr = m.trainer();
  expect(() => tr.setLearningRate(-1)).toThrow(RangeError);
  expect(() => tr.setLearningRate('0.1')).toThrow(TypeError);
  tr.setLearningRate(2e-3);
  expect(tr.options.lr).toBe(2e-3);
  m.dispose();
  expect(() => tr.setLearningRate(1e-3)).toThrow(/disposed/);
});

test('LIVE_RECIPES have the shipped recipes\' fields, scaled down', () => {
  for (const lang of ['en', 'zh']) {
    expect(Object.keys(LIVE_RECIPES[lang]).sort()).toEqual(Object.keys(trainLm.RECIPES[lang]).filter((k) => k !== 'steps').sort());
    expect(LIVE_RECIPES[lang].embedDim).toBeLessThan(trainLm.RECIPES[lang].embedDim);
  }
});

test('zh: a live session lowers the held-out loss; its probe samples, scores the heads and maps them; the shipped model is the end point', async () => {
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', 'zh'));
  const recipe = { context: 32, embedDim: 32, numLayers: 1, numHeads: 2, ffnDim: 64, batch: 8, warmup: 5, evalEvery: 10, evalWindows: 8 };
  const s = new LmSession(lab, { lang: 'zh', tokenizer: tok, tokenizerJson: tokenizerJson('zh'), trainText: slice('zh', 'train', 300), heldoutText: slice('zh', 'heldout', 30), recipe });
  try {
    expect(s.example).toHaveLength(32);
    expect(s.example[0]).toBe(s.nl);
    const p0 = await s.probe();
    expect(p0.step).toBe(0);
    expect(p0.samples).toHaveLength(2);
    expect(p0.maps).toHaveLength(1);
    expect(p0.maps[0].shape).toEqual([2, 32, 32]);
    expect(Object.keys(p0.roles.chance).sort()).toEqual(['firstToken', 'induction', 'previousLine', 'previousToken', 'self']);
    expect(p0.roles.heads).toHaveLength(2);
    expect(s.run(Infinity, 40)).toBe(40);
    const r = s.report();
    expect(r.step).toBe(40);
    expect(r.losses).toHaveLength(40);
    expect(s.report({ since: 35 }).losses.map((p) => p.step)).toEqual([36, 37, 38, 39, 40]);
    expect(r.heldout.map(([t]) => t)).toEqual([0, 10, 20, 30, 40]);
    expect(r.heldout[4][1]).toBeLessThan(r.heldout[0][1] - 1);
    expect(r.maps[0].shape).toEqual([2, 32, 32]);
    const p1 = await s.probe();
    expect(p1.samples).not.toEqual(p0.samples);
    // The live maps and the probe's (through lab.loadModel, F32) agree.
    const live = s.maps()[0].data;
    const probed = p1.maps[0].data;
    let worst = 0;
    for (let i = 0; i < live.length; i++) worst = Math.max(worst, Math.abs(live[i] - probed[i]));
    expect(worst).toBeLessThan(1e-5);
    // modelLoss (a Model's logits) = the trainer's evaluation, on the same weights and windows.
    const f = s.files();
    const model = await lab.loadModel({ config: f['config.json'], weights: f['model.safetensors'], tokenizer: f['tokenizer.json'] });
    expect(Math.abs(modelLoss(model, s.held) - s.heldOutLoss)).toBeLessThan(1e-4);
    expect(JSON.parse(f['config.json'])).toMatchObject({ bos_token_id: 1, eos_token_id: 1, n_positions: 32 });
    model.dispose();
    // The end point: the shipped model on the same windows, example and seeds.
    const shipped = await lab.pretrained('zh');
    const end = await probeModel(shipped, s);
    expect(end.maps).toHaveLength(shipped.config.numLayers);
    expect(end.maps[0].shape).toEqual([shipped.config.numHeads, 32, 32]);
    expect(modelLoss(shipped, s.held)).toBeLessThan(s.heldOutLoss);
    shipped.dispose();
    expect(s.describe()).toMatchObject({ lang: 'zh', vocabSize: tok.vocabSize, heldoutWindows: 8 });
  } finally {
    s.dispose();
  }
}, 60000);

test('<attention-lab-lm-trainer> has every string in English and 中文', async () => {
  const { LM_TRAINER_MESSAGES } = await import('../../web/components/lib/lm-trainer-messages.js');
  expect(Object.keys(LM_TRAINER_MESSAGES.zh).sort()).toEqual(Object.keys(LM_TRAINER_MESSAGES.en).sort());
  const src = fs.readFileSync(path.join(ROOT, 'web', 'components', 'elements', 'lm-trainer-element.js'), 'utf8');
  const used = [...src.matchAll(/'(lm\.[\w.]+)'/g)].map((m) => m[1]);
  expect(used.length).toBeGreaterThan(20);
  for (const k of used) expect(LM_TRAINER_MESSAGES.en).toHaveProperty([k]);
  for (const k of ['lm.role.previousToken', 'lm.role.self', 'lm.role.firstToken', 'lm.role.induction', 'lm.role.previousLine', 'lm.model.zh', 'lm.model.en']) {
    expect(LM_TRAINER_MESSAGES.zh).toHaveProperty([k]);
  }
});

test('charTokenizer gives the tokenizer\'s own ids for the shipped character tokenizers', () => {
  for (const lang of ['en', 'zh']) {
    const json = tokenizerJson(lang);
    expect(lmData.isCharTokenizer(json)).toBe(true);
    const tok = loadTokenizer(path.join(ROOT, 'data', 'models', lang));
    // the first lines of train.txt, plus characters outside the vocabulary and one outside the BMP
    const text = slice(lang, 'train', 300) + 'ǅ𫛶☃\t x\n';
    expect(Array.from(lmData.stream(text, lmData.charTokenizer(tok)))).toEqual(Array.from(lmData.stream(text, tok)));
  }
  expect(lmData.isCharTokenizer({ ...tokenizerJson('en'), normalizer: { type: 'NFC' } })).toBe(false);
});
