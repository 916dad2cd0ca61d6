// lab.pretrained (web/lib/pretrained.js): the package's own models, read from data/models/ with fs.
// The English model must load as a Model and predict the next character of held-out text better
// than a bigram: top-1 over all held-out windows of scripts/lib/lm-eval.mjs against the bigram's
// figure in data/corpora/baselines.json, and on one held-out paragraph against the most frequent
// follower of each character in train.txt, counted here.
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../../web/node.js';
import { loadTokenizer, stream, windows } from '../../scripts/lib/lm-eval.mjs';
import { ROOT } from '../../scripts/lib/train-lm.mjs';

const read = (lang, split) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8');
const baselines = JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'corpora', 'baselines.json'), 'utf8'));

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});
afterAll(() => lab.dispose());

const argmax = (row) => {
  let best = 0;
  for (let v = 1; v < row.length; v++) if (row[v] > row[best]) best = v;
  return best;
};

test("lab.pretrained('en') loads, and its next-character top-1 beats the bigram on held-out text", async () => {
  const model = await lab.pretrained('en');
  expect(model.config).toMatchObject({ modelType: 'gpt2', vocabSize: 100, maxPositions: 128 });
  expect(model.decode(model.encode("a . b , c 's"))).toBe("a . b , c 's");
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', 'en'));
  const V = 100;
  // all held-out windows
  let correct = 0;
  let n = 0;
  const wins = windows(read('en', 'heldout'), tok, 128);
  for (const w of wins) {
    const { logits } = model.forwardSync(w.subarray(0, w.length - 1), { attentions: false });
    for (let t = 0; t + 1 < w.length; t++, n++) if (argmax(logits.data.subarray(t * V, (t + 1) * V)) === w[t + 1]) correct++;
  }
  expect(n).toBe(baselines.en.heldout.tokens);
  expect(correct / n).toBeGreaterThan(baselines.en.heldout.bigram.accuracy);
  // one paragraph (the longest of the first 20) against the most frequent follower in train.txt
  const ids = stream(read('en', 'train'), tok);
  const follow = new Uint32Array(V * V);
  for (let i = 0; i + 1 < ids.length; i++) follow[ids[i] * V + ids[i + 1]]++;
  const para = wins.slice(0, 20).reduce((a, b) => (b.length > a.length ? b : a));
  const { logits } = model.forwardSync(para.subarray(0, para.length - 1), { attentions: false });
  let ours = 0;
  let big = 0;
  for (let t = 0; t + 1 < para.length; t++) {
    if (argmax(logits.data.subarray(t * V, (t + 1) * V)) === para[t + 1]) ours++;
    if (argmax(follow.subarray(para[t] * V, (para[t] + 1) * V)) === para[t + 1]) big++;
  }
  expect(ours).toBeGreaterThan(big);
  // each call is a new Model over the same (cached) files
  const again = await lab.pretrained('en');
  expect(again).not.toBe(model);
  model.dispose();
  expect(again.forwardSync('\nThe', { attentions: false }).logits.shape).toEqual([1, 4, 100]);
  again.dispose();
});

test("lab.pretrained('zh') loads the poem model; a bad name is a RangeError", async () => {
  const model = await lab.pretrained('zh');
  expect(model.config).toMatchObject({ modelType: 'gpt2', vocabSize: 3874, maxPositions: 96 });
  expect(model.tokens(model.encode('白日依山尽，'))).toEqual([...'白日依山尽，']);
  model.dispose();
  await expect(lab.pretrained('fr')).rejects.toThrow(RangeError);
  await expect(lab.pretrained()).rejects.toThrow(/name must be 'en', 'zh' or 'induction', got undefined/);
});
