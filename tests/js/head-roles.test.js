// model.headRoles (web/lib/model/head-roles.js), checked two independent ways:
// - a tiny GPT-2 whose weights are built by hand so that head 0 attends to the previous token
//   (its scores must be 1 / 0 / the first row's share, by construction) and head 1 has Q = K = 0,
//   so it spreads its weight evenly: its every score must equal the returned chance level;
// - on the shipped 中文 model (when data/models/zh has weights), every score recomputed here by
//   plain loops over forwardSync's attention maps, the previous-line pairs found by hand.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { previousLinePairs } from '../../web/lib/model/head-roles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ZH = path.join(ROOT, 'data', 'models', 'zh');
const haveZh = fs.existsSync(path.join(ZH, 'model.safetensors'));

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});
afterAll(() => lab.dispose());

/** A 1-layer GPT-2 (E 32, 2 heads of 16, 16 positions): head 0 looks at i − 1, head 1 evenly. */
async function previousTokenModel() {
  const L = 16;
  const E = 32;
  const t = lab.transformer({ architecture: 'gpt2', vocabSize: 12, maxLength: L, embedDim: E, numHeads: 2, numLayers: 1, seed: 3 });
  const w = t.getWeights();
  const zero = (name) => ({ data: new Float32Array(w[name].data.length), shape: w[name].shape });
  const set = {};
  for (const name of Object.keys(w)) set[name] = zero(name);
  // x = position one-hot e_p (token embeddings 0); ln_1 keeps its direction: n_p = (e_p − 1/E)/σ.
  for (let p = 0; p < L; p++) set['pos.weight'].data[p * E + p] = 1;
  for (const n of ['blocks.0.norm1.weight', 'blocks.0.norm2.weight', 'final_norm.weight']) set[n].data.fill(1);
  // head 0: q_i[d] = c·n_i[d + 1], k_j[d] = n_j[d], so q_i·k_j = c·δ(j, i − 1)/σ² + (terms without j).
  const c = 4;
  for (let d = 0; d < 15; d++) set['blocks.0.attn.wq'].data[d * E + d + 1] = c;
  for (let d = 0; d < 16; d++) set['blocks.0.attn.wk'].data[d * E + d] = 1;
  set['embed.weight'].data.fill(0.01); // a head needs some logits; attention does not see them
  t.setWeights(set);
  const files = t.save();
  t.dispose();
  return lab.loadModel({ config: files['config.json'], weights: files['model.safetensors'] });
}

test('a head built to attend to the previous token scores 1, a uniform head scores chance', async () => {
  const model = await previousTokenModel();
  const ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8];
  const r = model.headRoles(ids, { inductionSamples: 2 });
  expect(r.length).toBe(ids.length);
  expect(r.heads.map((h) => [h.layer, h.head])).toEqual([[0, 0], [0, 1]]);
  const [h0, h1] = r.heads;
  expect(h0.previousToken).toBeGreaterThan(1 - 1e-5);
  expect(h0.self).toBeLessThan(1e-5);
  // row 1's previous token is token 0: 1 of the 11 scored rows
  expect(Math.abs(h0.firstToken - 1 / 11)).toBeLessThan(1e-5);
  expect(h0.induction).toBeLessThan(1e-5);
  // chance: the mean of 1/(i+1) over rows 1…11
  let chance = 0;
  for (let i = 1; i < ids.length; i++) chance += 1 / (i + 1) / (ids.length - 1);
  for (const k of ['previousToken', 'self', 'firstToken']) {
    expect(Math.abs(r.chance[k] - chance)).toBeLessThan(1e-12);
    expect(Math.abs(h1[k] - r.chance[k])).toBeLessThan(1e-6);
  }
  expect(Math.abs(h1.induction - r.chance.induction)).toBeLessThan(1e-6);
  // no tokenizer, no lines: no previousLine score
  expect('previousLine' in h0).toBe(false);
  // the induction sequences: r r, 8 + 8 (no bos in this config), ids ≠ 0
  expect(r.inductionIds).toHaveLength(2);
  for (const s of r.inductionIds) {
    expect(s).toHaveLength(16);
    expect(s.slice(0, 8)).toEqual(s.slice(8));
    expect(s.every((id) => id > 0 && id < 12)).toBe(true);
  }
  expect(() => model.headRoles([1])).toThrow(RangeError);
  expect(() => model.headRoles(ids, { nope: 1 })).toThrow(TypeError);
  expect(() => model.headRoles(new Array(17).fill(1))).toThrow(/positions/);
  model.dispose();
});

test('previous-line pairs: char j of line n onto char j of line n − 1, within a poem', () => {
  const tokens = ['\n', ...'白日依山尽，黄河入海流。', '\n', ...'床前明月光，疑'];
  // poem 1: lines at 1…5 and 7…11; poem 2: lines at 14…18 and 20
  expect(previousLinePairs(tokens)).toEqual([[7, 1], [8, 2], [9, 3], [10, 4], [11, 5], [20, 14]]);
});

(haveZh ? test : test.skip)('shipped 中文 model: every score equals the one computed from forwardSync by hand', async () => {
  const model = await lab.pretrained('zh');
  const text = '\n白日依山尽，黄河入海流。欲穷千里目，更上一层楼。\n春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。';
  const r = model.headRoles(text);
  const { attentions, ids, tokens } = model.forwardSync(text, { attentions: true });
  const L = ids.length;
  const lineStarts = [];
  // lines by hand: runs of characters other than ，。 and newline
  let cur = [];
  const poems = [[]];
  tokens.forEach((t, i) => {
    if (t === '\n') {
      if (cur.length) poems[poems.length - 1].push(cur);
      cur = [];
      poems.push([]);
    } else if (t === '，' || t === '。') {
      if (cur.length) poems[poems.length - 1].push(cur);
      cur = [];
    } else cur.push(i);
  });
  if (cur.length) poems[poems.length - 1].push(cur);
  const pairs = [];
  for (const lines of poems) for (let n = 1; n < lines.length; n++) for (let j = 0; j < lines[n].length; j++) pairs.push([lines[n][j], lines[n - 1][j]]);
  expect(pairs).toHaveLength(30); // 6 lines after a first line, 5 characters each
  void lineStarts;
  const A = (l, h, i, j) => attentions[l].data[(h * L + i) * L + j];
  for (const e of r.heads) {
    let prev = 0;
    let self = 0;
    let first = 0;
    for (let i = 1; i < L; i++) {
      prev += A(e.layer, e.head, i, i - 1) / (L - 1);
      self += A(e.layer, e.head, i, i) / (L - 1);
      first += A(e.layer, e.head, i, 0) / (L - 1);
    }
    let line = 0;
    for (const [i, j] of pairs) line += A(e.layer, e.head, i, j) / pairs.length;
    expect(e.previousToken).toBeCloseTo(prev, 6);
    expect(e.self).toBeCloseTo(self, 6);
    expect(e.firstToken).toBeCloseTo(first, 6);
    expect(e.previousLine).toBeCloseTo(line, 6);
  }
  // induction by hand on the returned sequences: bos, r (T), r (T)
  const T = (r.inductionIds[0].length - 1) / 2;
  expect(r.inductionIds[0][0]).toBe(1);
  const ind = r.heads.map(() => 0);
  for (const seq of r.inductionIds) {
    const a = model.forwardSync(seq, { attentions: true }).attentions;
    const n = seq.length;
    r.heads.forEach((e, x) => {
      for (let k = 0; k < T - 1; k++) ind[x] += a[e.layer].data[(e.head * n + 1 + T + k) * n + 1 + k + 1] / (T - 1) / r.inductionIds.length;
    });
  }
  r.heads.forEach((e, x) => expect(e.induction).toBeCloseTo(ind[x], 6));
  let lineChance = 0;
  for (const [i] of pairs) lineChance += 1 / (i + 1) / pairs.length;
  expect(r.chance.previousLine).toBeCloseTo(lineChance, 12);
  model.dispose();
});

// oneForward: every score from ONE forward over the text and the appended (bos) r r. The text's
// scores must equal those of the text alone (a causal row does not see what follows it); the
// induction score is recomputed here by plain loops over a separate forwardSync of the same ids.
test('oneForward: one pass; the text scores equal the text-only ones, the induction score equals loops over the same ids', async () => {
  const model = await previousTokenModel();
  const ids = [3, 1, 4, 1, 5, 9];
  const a = model.headRoles(ids, { inductionSamples: 2 });
  const b = model.headRoles(ids, { oneForward: true });
  expect(b.forwards).toBe(1);
  expect(a.forwards).toBe(3);
  expect(b.length).toBe(ids.length);
  b.heads.forEach((e, x) => {
    for (const k of ['previousToken', 'self', 'firstToken']) expect(Math.abs(e[k] - a.heads[x][k])).toBeLessThan(1e-6);
  });
  for (const k of ['previousToken', 'self', 'firstToken']) expect(b.chance[k]).toBe(a.chance[k]);
  // the sequence fills the positions after the text: 16 − 6 = 10, so T = 5, r r
  expect(b.inductionIds).toHaveLength(1);
  const seq = b.inductionIds[0];
  expect(seq).toHaveLength(10);
  expect(seq.slice(0, 5)).toEqual(seq.slice(5));
  const all = [...ids, ...seq];
  const att = model.forwardSync(all, { attentions: true }).attentions;
  const n = all.length;
  const T = 5;
  b.heads.forEach((e) => {
    let want = 0;
    let chance = 0;
    for (let k = 0; k < T - 1; k++) {
      const i = 6 + T + k;
      want += att[e.layer].data[(e.head * n + i) * n + 6 + k + 1] / (T - 1);
      chance += 1 / (i + 1) / (T - 1);
    }
    expect(Math.abs(e.induction - want)).toBeLessThan(1e-6);
    expect(Math.abs(b.chance.induction - chance)).toBeLessThan(1e-12);
  });
  // head 1 spreads evenly: its induction score is chance
  expect(Math.abs(b.heads[1].induction - b.chance.induction)).toBeLessThan(1e-6);
  expect(() => model.headRoles(ids, { oneForward: true, inductionSamples: 2 })).toThrow(RangeError);
  expect(() => model.headRoles(ids, { oneForward: true, inductionLength: 6 })).toThrow(/text \(6 tokens\) and the repeated sequence/);
  expect(() => model.headRoles(ids, { oneForward: 1 })).toThrow(TypeError);
  model.dispose();
});
