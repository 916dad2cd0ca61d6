// A short pass of `npm run train:lm` (scripts/lib/train-lm.mjs, the code the shipped models were
// trained with): a small recipe on a slice of each corpus, run twice. The two runs must write the
// same bytes (the seeded data order and init, the core's thread-count-independent results), and the
// loss must fall. The full runs take up to 30 minutes and are not part of the suite; their
// reproduction is `node scripts/train-lm.mjs --lang en|zh --check 50` (docs/models.md).
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../../web/node.js';
import { train, lrAt, RECIPES, ROOT, sha256 } from '../../scripts/lib/train-lm.mjs';

const SMALL = {
  context: 32, embedDim: 32, numLayers: 2, numHeads: 2, ffnDim: 64, batch: 8, steps: 40,
  lr: 1e-2, minLr: 1e-3, warmup: 5, evalEvery: 20, evalWindows: 16,
};

const slice = (lang, split, lines) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8').split('\n').slice(0, lines).join('\n') + '\n';

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});
afterAll(() => lab.dispose());

test('the lr schedule: linear warmup, cosine to minLr at the last step', () => {
  const r = RECIPES.zh;
  expect(lrAt(r, 1)).toBeCloseTo(r.lr / r.warmup, 12);
  expect(lrAt(r, r.warmup)).toBeCloseTo(r.lr, 12);
  expect(lrAt(r, r.steps)).toBeCloseTo(r.minLr, 12);
  expect(lrAt(r, Math.round((r.warmup + r.steps) / 2))).toBeCloseTo((r.lr + r.minLr) / 2, 3);
});

for (const lang of ['en', 'zh']) {
  test(`${lang}: two runs give the same bytes, and the loss falls`, () => {
    const opts = { lab, lang, recipe: SMALL, trainText: slice(lang, 'train', 400), heldoutText: slice(lang, 'heldout', 40) };
    const a = train(opts);
    const b = train(opts);
    a.model.dispose();
    b.model.dispose();
    expect(sha256(a.files['model.safetensors'])).toBe(sha256(b.files['model.safetensors']));
    expect(a.files['config.json']).toBe(b.files['config.json']);
    expect(a.history.loss).toEqual(b.history.loss);
    const config = JSON.parse(a.files['config.json']);
    expect(config).toMatchObject({ model_type: 'gpt2', n_positions: 32, n_embd: 32, n_layer: 2, bos_token_id: 1, eos_token_id: 1, torch_dtype: 'float16' });
    const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const first = mean(a.history.loss.slice(0, 5));
    const last = mean(a.history.loss.slice(-5));
    expect(last).toBeLessThan(first - 0.5);
    // held-out loss on the subset: at steps 0, 20 and 40, falling
    const h = a.history.heldout.map(([, v]) => v);
    expect(a.history.heldout.map(([t]) => t)).toEqual([0, 20, 40]);
    expect(h[2]).toBeLessThan(h[0]);
  });
}

test('the schedule ends at the horizon, so step k of a longer run is a k-step run, byte for byte', () => {
  const opts = { lab, lang: 'en', trainText: slice('en', 'train', 400), heldoutText: slice('en', 'heldout', 40) };
  const seen = {};
  const long = train({ ...opts, recipe: { ...SMALL, steps: 40, horizon: 40 }, checkpoint: (t, files) => { seen[t] = sha256(files['model.safetensors']); } });
  const short = train({ ...opts, recipe: { ...SMALL, steps: 20, horizon: 40 } });
  long.model.dispose();
  short.model.dispose();
  expect(Object.keys(seen)).toEqual(['20']);
  expect(seen[20]).toBe(sha256(short.files['model.safetensors']));
  expect(short.history.loss).toEqual(long.history.loss.slice(0, 20));
});
