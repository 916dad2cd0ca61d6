#!/usr/bin/env node
// Unigram and bigram baselines of issue 22, on the evaluation windows of scripts/lib/lm-eval.mjs
// (context 96 for 中文, 128 for English, each window starting at a poem or paragraph boundary),
// through the character tokenizers of data/models/<lang>/ ([UNK] is a class).
//
//   node scripts/lm-baselines.mjs [--lang en|zh]   → prints the table, writes data/corpora/baselines.json
//
// Unigram: add-k, p(c) = (n(c) + k) / (N + kV).
// Bigram: interpolated Kneser–Ney with one discount D,
//   p(c | a) = max(n(a c) − D, 0) / n(a ·) + D · N1+(a ·) / n(a ·) · p_cont(c),
//   p_cont(c) = (N1+(· c) + β) / (N1+(· ·) + βV)   (a context never seen: p_cont alone).
// k, D and β are chosen on the training text only: the models are fitted on the training lines
// whose index is not 9 mod 10 and scored on those that are (the same windows protocol); then
// they are refitted on all of train with the chosen values and scored on heldout and unseen.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluate, loadTokenizer, stream, windows } from './lib/lm-eval.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CONTEXT = { zh: 96, en: 128 };
const K_GRID = [0.001, 0.01, 0.1, 0.3, 1, 3, 10, 30, 100, 1000];
const D_GRID = Array.from({ length: 19 }, (_, i) => Number((0.05 * (i + 1)).toFixed(2)));
const BETA_GRID = [0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1];

/** Counts of the token stream of lines: "\n" line "\n" line … (the windows' stream). */
function fit(lines, tok, V) {
  const ids = stream(lines.join('\n') + '\n', tok);
  const uni = new Float64Array(V);
  const big = new Uint32Array(V * V); // [a·V + c] → n(a c): 60 MB for V = 3,874
  for (let i = 0; i < ids.length; i++) {
    uni[ids[i]]++;
    if (i + 1 < ids.length) big[ids[i] * V + ids[i + 1]]++;
  }
  const ctx = new Float64Array(V); // n(a ·)
  const follow = new Float64Array(V); // N1+(a ·)
  const precede = new Float64Array(V); // N1+(· c)
  let types = 0;
  for (let a = 0; a < V; a++) for (let c = 0; c < V; c++) {
    const n = big[a * V + c];
    if (n === 0) continue;
    ctx[a] += n;
    follow[a]++;
    precede[c]++;
    types++;
  }
  return { V, N: ids.length, uni, big, ctx, follow, precede, types };
}

const unigramP = (m, k) => (c) => (m.uni[c] + k) / (m.N + k * m.V);

function bigramP(m, D, beta) {
  const cont = new Float64Array(m.V);
  for (let c = 0; c < m.V; c++) cont[c] = (m.precede[c] + beta) / (m.types + beta * m.V);
  return (a, c) => {
    const na = m.ctx[a];
    if (na === 0) return cont[c];
    const n = m.big[a * m.V + c];
    return Math.max(n - D, 0) / na + (D * m.follow[a] / na) * cont[c];
  };
}

/** Loss only, by the probability of each target (for the grid search: no full rows needed). */
function quickLoss(wins, p) {
  let nll = 0;
  let n = 0;
  for (const w of wins) for (let t = 0; t + 1 < w.length; t++) { nll -= Math.log(p(w[t], w[t + 1])); n++; }
  return nll / n;
}

/** predict callbacks for lm-eval's evaluate(): full probability rows, cached per context. */
function unigramPredict(m, k) {
  const p = unigramP(m, k);
  const row = Float64Array.from({ length: m.V }, (_, c) => p(c));
  return (ids) => Array.from(ids, () => row);
}
function bigramPredict(m, D, beta) {
  const p = bigramP(m, D, beta);
  const rows = new Array(m.V);
  const rowOf = (a) => rows[a] ?? (rows[a] = Float32Array.from({ length: m.V }, (_, c) => p(a, c)));
  return (ids) => Array.from(ids, (a) => rowOf(a));
}

async function run(lang) {
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', lang));
  const V = tok.vocabSize;
  const C = CONTEXT[lang];
  const read = (s) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${s}.txt`), 'utf8');
  const trainLines = read('train').slice(0, -1).split('\n');

  // tuning on train only
  const fitLines = trainLines.filter((_, i) => i % 10 !== 9);
  const devLines = trainLines.filter((_, i) => i % 10 === 9);
  const mFit = fit(fitLines, tok, V);
  const devWins = windows(devLines.join('\n') + '\n', tok, C);
  let bestK = null;
  for (const k of K_GRID) {
    const p = unigramP(mFit, k);
    const l = quickLoss(devWins, (_, c) => p(c));
    if (!bestK || l < bestK.loss) bestK = { k, loss: l };
  }
  let bestD = null;
  for (const D of D_GRID) for (const beta of BETA_GRID) {
    const l = quickLoss(devWins, bigramP(mFit, D, beta));
    if (!bestD || l < bestD.loss) bestD = { D, beta, loss: l };
  }

  // refit on all of train, score heldout and unseen through the shared protocol
  const m = fit(trainLines, tok, V);
  const result = {
    context: C,
    vocabSize: V,
    tuning: { fitLines: fitLines.length, devLines: devLines.length, unigram: bestK, bigram: bestD },
    train: { tokens: m.N, bigramTypes: m.types },
  };
  for (const split of ['heldout', 'unseen']) {
    const wins = windows(read(split), tok, C);
    const uni = await evaluate(wins, unigramPredict(m, bestK.k), V);
    const bi = await evaluate(wins, bigramPredict(m, bestD.D, bestD.beta), V);
    const check = quickLoss(wins, bigramP(m, bestD.D, bestD.beta));
    if (Math.abs(check - bi.loss) > 1e-4) throw new Error(`bigram loss ${bi.loss} ≠ ${check}`);
    result[split] = { windows: wins.length, tokens: bi.tokens, unigram: { loss: uni.loss, accuracy: uni.accuracy }, bigram: { loss: bi.loss, accuracy: bi.accuracy } };
  }
  return result;
}

async function main() {
  const i = process.argv.indexOf('--lang');
  const langs = i > 0 ? [process.argv[i + 1]] : ['en', 'zh'];
  const file = path.join(ROOT, 'data', 'corpora', 'baselines.json');
  const all = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  for (const lang of langs) {
    const t0 = Date.now();
    const r = await run(lang);
    all[lang] = r;
    console.log(`${lang}: context ${r.context}, V ${r.vocabSize}; tuned on train: unigram k ${r.tuning.unigram.k}, bigram D ${r.tuning.bigram.D} β ${r.tuning.bigram.beta} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    console.log('  split     windows  tokens   unigram nats  acc     bigram nats  acc');
    for (const s of ['heldout', 'unseen']) {
      const x = r[s];
      console.log(`  ${s.padEnd(8)}  ${String(x.windows).padStart(7)}  ${String(x.tokens).padStart(7)}  ${x.unigram.loss.toFixed(4)}       ${(100 * x.unigram.accuracy).toFixed(2)}%  ${x.bigram.loss.toFixed(4)}       ${(100 * x.bigram.accuracy).toFixed(2)}%`);
    }
  }
  fs.writeFileSync(file, JSON.stringify(all, null, 2) + '\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
