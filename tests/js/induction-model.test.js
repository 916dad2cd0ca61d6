// The induction model (issue 33 item 8; docs/training.md, "The induction model"):
// - lm-data.js sampler's `repeat` rows: a random span written twice, the unpredictable targets
//   masked, the other rows and the recipes without `repeat` as before;
// - lm-data.js inductionScores (the training curves of LmSession and `npm run train:lm`) equals
//   model.headScores.repeated of the same weights saved and loaded;
// - the shipped lab.pretrained('induction'): a head scores induction >= 0.4 on repeated random
//   characters, by model.headScores.repeated and by a plain recomputation from the attentions
//   forwardSync returns, both equal to the float64 numpy forward of the same files
//   (tests/reference/induction_model.py → tests/golden/induction-model.json).
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../../web/node.js';
import { ROOT, RECIPES, CORPUS } from '../../scripts/lib/train-lm.mjs';
import { sampler, inductionScores } from '../../web/lib/train/lm-data.js';
import { INDUCTION_RECIPE, LIVE_RECIPES, LmSession } from '../../web/lib/train/lm-session.js';
import { loadTokenizer } from '../../scripts/lib/lm-eval.mjs';

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});
afterAll(() => lab.dispose());

// A token stream of a few "paragraphs" over ids 2 … 9 (1 is the newline).
function toyStream(n = 4000) {
  const ids = new Int32Array(n);
  let s = 7;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    ids[i] = i % 50 === 0 ? 1 : 2 + (s >>> 16) % 8;
  }
  return ids;
}

describe('sampler with repeat', () => {
  const r = { context: 32, batch: 64, boundary: 0.5, seed: 5 };

  test('without repeat: no lossMask, and the rows are windows of the stream', () => {
    const ids = toyStream();
    const b = sampler(ids, 1, r)();
    expect(b.lossMask).toBeUndefined();
    const str = Array.from(ids).join(',');
    for (let row = 0; row < r.batch; row++) {
      const x = Array.from(b.tokens.data.subarray(row * 32, row * 32 + 32));
      const y = Array.from(b.targets.data.subarray(row * 32, row * 32 + 32));
      expect(y.slice(0, 31)).toEqual(x.slice(1));
      expect(str.includes(x.join(','))).toBe(true);
    }
  });

  test('repeat rows hold r r at a random place; the first copy and the second\'s first token are masked', () => {
    const V = 40;
    const ids = toyStream();
    const next = sampler(ids, 1, { ...r, repeat: 0.5, repeatSpan: [4, 16] }, V);
    let repeated = 0;
    let rows = 0;
    const spans = new Set();
    for (let k = 0; k < 4; k++) {
      const b = next();
      expect(b.lossMask.shape).toEqual([r.batch, 32]);
      for (let row = 0; row < r.batch; row++) {
        rows++;
        const x = Array.from(b.tokens.data.subarray(row * 32, row * 32 + 32));
        const y = Array.from(b.targets.data.subarray(row * 32, row * 32 + 32));
        const m = Array.from(b.lossMask.data.subarray(row * 32, row * 32 + 32));
        expect(y.slice(0, 31)).toEqual(x.slice(1)); // one window w: x = w[0, L), y = w[1, L]
        const zeros = m.map((v, t) => (v === 0 ? t : -1)).filter((t) => t >= 0);
        if (!zeros.length) {
          expect(m.every((v) => v === 1)).toBe(true);
          continue;
        }
        repeated++;
        // the zeros are one run of targets t = a - 1 … a + T - 1 (w[a … a + T] are random)
        expect(zeros[zeros.length - 1] - zeros[0]).toBe(zeros.length - 1);
        const w = [x[0], ...y];
        const last = zeros[zeros.length - 1]; // a + T - 1
        // find T: the span w[a, a + T) equals w[a + T, a + 2T), T in [4, 16]
        const fits = [];
        for (let T = 4; T <= 16; T++) {
          const a = last + 1 - T;
          if (a < 0 || a + 2 * T > 33 || (a > 0 && zeros[0] !== a - 1) || (a === 0 && zeros[0] !== 0)) continue;
          let same = true;
          for (let j = 0; j < T; j++) if (w[a + j] !== w[a + T + j]) same = false;
          if (same) fits.push([a, T]);
        }
        expect(fits.length).toBeGreaterThan(0);
        const [a, T] = fits[0];
        spans.add(T);
        // ids of the pool: never [UNK] (0) nor the newline (1)
        expect(w.slice(a, a + 2 * T).every((id) => id >= 2 && id < V)).toBe(true);
      }
    }
    // about half the rows, and many span lengths
    expect(repeated / rows).toBeGreaterThan(0.4);
    expect(repeated / rows).toBeLessThan(0.6);
    expect(spans.size).toBeGreaterThan(8);
  });

  test('the same seed gives the same batches', () => {
    const ids = toyStream();
    const a = sampler(ids, 1, { ...r, repeat: 0.3 }, 40);
    const b = sampler(ids, 1, { ...r, repeat: 0.3 }, 40);
    for (let k = 0; k < 3; k++) {
      const x = a();
      const y = b();
      expect(x.tokens.data).toEqual(y.tokens.data);
      expect(x.lossMask.data).toEqual(y.lossMask.data);
    }
  });

  test('bad repeat settings are RangeErrors that say what is allowed', () => {
    const ids = toyStream();
    expect(() => sampler(ids, 1, { ...r, repeat: 0.5 })).toThrow(/recipe\.repeat needs the vocabulary size \(an integer > 2\), got undefined/);
    expect(() => sampler(ids, 1, { ...r, repeat: 0.5, repeatSpan: [0, 4] }, 40)).toThrow(/repeatSpan must be \[min, max\] with 1 <= min <= max <= \(context \+ 1\) \/ 2 = 16, got \[0,4\]/);
    expect(() => sampler(ids, 1, { ...r, repeat: 0.5, repeatSpan: [4, 17] }, 40)).toThrow(RangeError);
    expect(() => sampler(ids, 1, { ...r, repeat: 0.5, repeatSpan: [8, 4] }, 40)).toThrow(RangeError);
  });
});

test('the induction recipe: the live English recipe with repeat, trained on the English corpus', () => {
  expect(RECIPES.induction).toBe(INDUCTION_RECIPE);
  expect(CORPUS.induction).toBe('en');
  const { steps, ...live } = INDUCTION_RECIPE;
  expect(LIVE_RECIPES.induction).toEqual(live);
  expect(steps).toBeGreaterThan(0);
  expect(INDUCTION_RECIPE.repeat).toBeGreaterThan(0);
  // the live English recipe's model, batches and held-out windows; its own lr schedule
  const { repeat, repeatSpan, lr, warmup, horizon, ...rest } = live;
  const { lr: lrEn, warmup: wEn, horizon: hEn, ...restEn } = LIVE_RECIPES.en;
  expect(rest).toEqual(restEn);
  expect(repeatSpan[1]).toBeLessThanOrEqual((live.context + 1) / 2);
  expect(steps).toBeLessThanOrEqual(horizon);
});

test('inductionScores (the training curve) = model.headScores.repeated of the saved and loaded weights', async () => {
  const V = 30;
  const model = lab.transformer({ architecture: 'gpt2', vocabSize: V, maxLength: 24, embedDim: 16, numHeads: 2, numLayers: 2, seed: 4 });
  // a few steps, so that the maps are not uniform
  const tr = model.trainer({ lr: 1e-2, warmup: 0 });
  const b = lab.tasks.induction({ length: 24, vocab: V, batch: 8, seed: 1 });
  for (let i = 0; i < 5; i++) tr.step(b.tokens, b.targets, { lossMask: b.lossMask });
  const files = model.save();
  const config = JSON.parse(files['config.json']);
  config.bos_token_id = 1;
  const loaded = await lab.loadModel({ config: JSON.stringify(config), weights: files['model.safetensors'] });
  for (const seed of [0, 3]) {
    const ours = inductionScores(model, { vocabSize: V, bos: 1, length: 11, seed });
    const ref = loaded.headScores.repeated({ length: 11, seed });
    expect(ours.induction.length).toBe(4);
    for (let k = 0; k < 4; k++) {
      expect(ours.induction[k]).toBeCloseTo(ref.induction.data[k], 5);
      expect(ours.previousToken[k]).toBeCloseTo(ref.previousToken.data[k], 5);
    }
    const best = Math.max(...ours.induction);
    expect(ours.best.score).toBe(best);
    expect(ours.induction[ours.best.layer * 2 + ours.best.head]).toBe(best);
  }
  loaded.dispose();
  model.dispose();
});

test('LmSession "induction": the English corpus with repeats; its curve, ceiling and probe agree with headScores.repeated', async () => {
  const slice = (split, lines) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', 'en', `${split}.txt`), 'utf8').split('\n').slice(0, lines).join('\n') + '\n';
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', 'en'));
  const tj = JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'models', 'en', 'tokenizer.json'), 'utf8'));
  const recipe = { context: 32, embedDim: 32, numHeads: 2, ffnDim: 64, evalEvery: 5, evalWindows: 8, repeatSpan: [8, 16] };
  const s = new LmSession(lab, { lang: 'induction', tokenizer: tok, tokenizerJson: tj, trainText: slice('train', 300), heldoutText: slice('heldout', 40), recipe });
  try {
    expect(s.recipe.repeat).toBe(INDUCTION_RECIPE.repeat);
    expect(s.inductionLength).toBe(15);
    // the ceiling by hand: rows of (bos) r r with an earlier copy of their token
    const d = s.describe();
    expect(d.inductionLength).toBe(15);
    const model0 = await (async () => {
      const f = s.files();
      return lab.loadModel({ config: f['config.json'], weights: f['model.safetensors'], tokenizer: f['tokenizer.json'] });
    })();
    const ids = model0.headScores.repeated({ length: 15, seed: 0 }).ids;
    model0.dispose();
    let rows = 0;
    for (let i = 0; i < ids.length; i++) if (ids.slice(0, i).includes(ids[i])) rows++;
    expect(d.inductionCeiling).toBeCloseTo(rows / ids.length, 12);
    s.run(1e9, 10);
    const r = s.report({ maps: false });
    expect(r.induction.map(([st]) => st)).toEqual([0, 5, 10]);
    for (const [, score, layer, head] of r.induction) {
      expect(score).toBeGreaterThanOrEqual(0);
      expect(score).toBeLessThanOrEqual(d.inductionCeiling + 1e-6);
      expect([0, 1]).toContain(layer);
      expect([0, 1]).toContain(head);
    }
    const p = await s.probe();
    expect(p.induction.length).toBe(15);
    expect(p.induction.induction.shape).toEqual([2, 2]);
    const [, score, layer, head] = r.induction[r.induction.length - 1];
    expect(p.induction.induction.data[layer * 2 + head]).toBeCloseTo(score, 5);
    expect(Math.max(...p.induction.induction.data)).toBeCloseTo(score, 5);
  } finally {
    s.dispose();
  }
});

// The induction score by its definition (docs/interpretability.md), written again here: for each
// query row i and each key k in 1 … i whose previous token ids[k − 1] equals ids[i] (k − 1 < i),
// add A[i][k]; divide by L.
function inductionByHand(a, H, L, ids) {
  const out = [];
  for (let h = 0; h < H; h++) {
    let sum = 0;
    for (let i = 0; i < L; i++) {
      for (let k = 1; k <= i; k++) if (ids[k - 1] === ids[i]) sum += a[(h * L + i) * L + k];
    }
    out.push(sum / L);
  }
  return out;
}

const golden = path.join(ROOT, 'tests', 'golden', 'induction-model.json');

test("lab.pretrained('induction'): a head scores induction >= 0.4 on repeated random characters (headScores.repeated, by hand from the attentions, and numpy's float64 forward)", async () => {
  const ref = JSON.parse(fs.readFileSync(golden, 'utf8'));
  const model = await lab.pretrained('induction');
  try {
    const c = model.config;
    expect(c).toMatchObject({ modelType: 'gpt2', vocabSize: 100, maxPositions: INDUCTION_RECIPE.context, numLayers: INDUCTION_RECIPE.numLayers, numHeads: INDUCTION_RECIPE.numHeads });
    const H = c.numHeads;
    expect(ref.cases.length).toBeGreaterThanOrEqual(3);
    for (const rc of ref.cases) {
      const s = model.headScores.repeated({ length: rc.length, seed: rc.seed });
      expect(s.ids).toEqual(rc.ids); // numpy drew the same input with its own xorshift
      const L = s.ids.length;
      const run = model.forwardSync(s.ids, { attentions: true });
      const byHand = run.attentions.flatMap((a) => inductionByHand(a.data, H, L, s.ids));
      for (let k = 0; k < byHand.length; k++) {
        expect(s.induction.data[k]).toBeCloseTo(byHand[k], 6);
        expect(s.induction.data[k]).toBeCloseTo(rc.induction.flat()[k], 3); // float32 vs float64
      }
      const best = Math.max(...byHand);
      expect(best).toBeGreaterThanOrEqual(0.4);
      expect(Math.max(...rc.induction.flat())).toBeGreaterThanOrEqual(0.4);
      // and the same head is the best in numpy
      expect(byHand.indexOf(best)).toBe(rc.induction.flat().indexOf(Math.max(...rc.induction.flat())));
    }
  } finally {
    model.dispose();
  }
});

test('the shipped induction model is small: its four files under 2 MiB', () => {
  const dir = path.join(ROOT, 'data', 'models', 'induction');
  const bytes = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].reduce((s, f) => s + fs.statSync(path.join(dir, f)).size, 0);
  expect(bytes).toBeLessThan(2 * 1048576);
  // the English tokenizer
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    expect(fs.readFileSync(path.join(dir, f), 'utf8')).toBe(fs.readFileSync(path.join(ROOT, 'data', 'models', 'en', f), 'utf8'));
  }
});
