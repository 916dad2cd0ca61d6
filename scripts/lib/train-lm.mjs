// The training of issue 22's shipped character models (scripts/train-lm.mjs is the command line;
// tests/js/train-lm.test.js runs a few steps of it). GPT-2's block through lab.transformer
// ({ architecture: 'gpt2' }), AdamW in the wasm core, one wasm call per step.
//
// Deterministic: the weights' init comes from the recipe's seed, the batches from a seeded
// xorshift generator over the training stream of scripts/lib/lm-eval.mjs (stream(train.txt)), and
// the core's results are the same bits for any thread count (docs/threads.md). So a recipe gives
// the same bytes on every run on one machine kind.
//
// The learning rate: linear warmup, then a cosine decay to minLr at the last step. The trainer's
// own schedule is a warmup only, and a new trainer resets the AdamW moments, so the lr of each
// step is set with the core's transformerConfigureOptimizer (which keeps the moments and the
// step count; the trainer's warmup is 0 here). See docs/models.md, "Training".

import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadTokenizer, stream, windows, evaluate } from './lm-eval.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The shipped recipes (docs/models.md, "Training"). steps: the budget of the 30-minute run. */
export const RECIPES = {
  en: {
    context: 128, embedDim: 128, numLayers: 4, numHeads: 4, ffnDim: 512, dropout: 0,
    batch: 16, steps: 1000, horizon: 1000, lr: 5e-3, minLr: 5e-4, warmup: 100, weightDecay: 0.01, betas: [0.9, 0.99], clip: 1,
    boundary: 0.5, seed: 22, evalEvery: 100, evalWindows: 128,
  },
  zh: {
    context: 96, embedDim: 128, numLayers: 4, numHeads: 4, ffnDim: 512, dropout: 0,
    batch: 16, steps: 1600, horizon: 1600, lr: 5e-3, minLr: 5e-4, warmup: 100, weightDecay: 0.01, betas: [0.9, 0.99], clip: 1,
    boundary: 0.5, seed: 22, evalEvery: 100, evalWindows: 128,
  },
};

/** xorshift32 with a splitmix-style seed: uniform integers, the same sequence everywhere. */
export function rng(seed) {
  let s = (Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) >>> 0) || 0x6d2b79f5;
  return {
    /** an integer in [0, n) */
    int(n) {
      s ^= s << 13; s >>>= 0;
      s ^= s >>> 17;
      s ^= s << 5; s >>>= 0;
      return Math.floor((s / 4294967296) * n);
    },
    /** a float in [0, 1) */
    float() {
      return this.int(4294967296) / 4294967296;
    },
  };
}

/**
 * The lr of step t (1-based): linear warmup to lr, then cosine to minLr at step `horizon` (default:
 * the step budget). The schedule does not depend on the budget when horizon is given, so the
 * weights after k steps of a longer run are those of a run with steps = k.
 */
export function lrAt(r, t) {
  if (r.warmup > 0 && t <= r.warmup) return (r.lr * t) / r.warmup;
  const span = Math.max(1, (r.horizon ?? r.steps) - r.warmup);
  const q = Math.min(1, (t - r.warmup) / span);
  return r.minLr + 0.5 * (r.lr - r.minLr) * (1 + Math.cos(Math.PI * q));
}

/**
 * A batch sampler over the training stream: each row starts at a newline (the start of a poem or
 * paragraph, as the evaluation windows do) with probability `boundary`, else at a uniform offset.
 */
export function sampler(ids, nl, r) {
  const L = r.context;
  const last = ids.length - L - 1; // the last start that leaves L + 1 tokens
  const starts = [];
  for (let i = 0; i <= last; i++) if (ids[i] === nl) starts.push(i);
  const g = rng(r.seed * 2654435761 + 1);
  return () => {
    const x = new Int32Array(r.batch * L);
    const y = new Int32Array(r.batch * L);
    for (let b = 0; b < r.batch; b++) {
      const s = g.float() < r.boundary ? starts[g.int(starts.length)] : g.int(last + 1);
      x.set(ids.subarray(s, s + L), b * L);
      y.set(ids.subarray(s + 1, s + L + 1), b * L);
    }
    return { tokens: { data: x, shape: [r.batch, L] }, targets: { data: y, shape: [r.batch, L] } };
  };
}

/** Full-length evaluation windows as batches of inputs/targets (at most n windows, evenly spread). */
export function evalBatches(wins, L, n, batch = 32) {
  let full = wins.filter((w) => w.length === L + 1);
  if (full.length > n) {
    const step = full.length / n;
    full = Array.from({ length: n }, (_, i) => full[Math.floor(i * step)]);
  }
  const out = [];
  for (let i = 0; i < full.length; i += batch) {
    const part = full.slice(i, i + batch);
    const x = new Int32Array(part.length * L);
    const y = new Int32Array(part.length * L);
    part.forEach((w, b) => {
      x.set(w.subarray(0, L), b * L);
      y.set(w.subarray(1, L + 1), b * L);
    });
    out.push({ tokens: { data: x, shape: [part.length, L] }, targets: { data: y, shape: [part.length, L] }, n: part.length * L });
  }
  return out;
}

function meanLoss(trainer, batches) {
  let sum = 0;
  let n = 0;
  for (const b of batches) {
    sum += trainer.evaluate(b.tokens, b.targets).loss * b.n;
    n += b.n;
  }
  return sum / n;
}

function readCorpus(lang, split) {
  return fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8');
}

/**
 * Trains a recipe. options: { lab, lang, recipe (overrides of RECIPES[lang]), trainText (default
 * train.txt), heldoutText, log (a function of one line; default none), maxSeconds (stop early:
 * for measuring only), stopAfter (stop after this step: the first steps of the run), checkpoint
 * (called as checkpoint(step, files, history) after each held-out evaluation, files the F16 HF files
 * of that step) }. Returns { model, files (F16 HF files), history, recipe, seconds, steps }.
 */
export function train(options) {
  const { lab, lang } = options;
  const r = { ...RECIPES[lang], ...(options.recipe ?? {}) };
  const log = options.log ?? (() => {});
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', lang));
  const V = tok.vocabSize;
  const ids = stream(options.trainText ?? readCorpus(lang, 'train'), tok);
  const next = sampler(ids, tok.newlineId, r);
  const held = evalBatches(windows(options.heldoutText ?? readCorpus(lang, 'heldout'), tok, r.context), r.context, r.evalWindows);

  const model = lab.transformer({
    architecture: 'gpt2', vocabSize: V, maxLength: r.context, embedDim: r.embedDim, numHeads: r.numHeads,
    numLayers: r.numLayers, ffnDim: r.ffnDim, dropout: r.dropout, seed: r.seed,
  });
  const trainer = model.trainer({ lr: r.lr, warmup: 0, weightDecay: r.weightDecay, clip: r.clip, betas: r.betas });
  const Module = model._Module;
  const setLr = (lr) => {
    // keeps the moments and the step count (src/train/transformer.cpp ConfigureOptimizer)
    const status = Module.transformerConfigureOptimizer(model._handle, {
      lr, beta1: r.betas[0], beta2: r.betas[1], eps: 1e-8, weightDecay: r.weightDecay, warmup: 0, clip: r.clip,
    });
    if (status !== 0) throw new Error(`train-lm: transformerConfigureOptimizer returned ${status}`);
  };

  const save = () => {
    const files = model.save({ dtype: 'F16' });
    // '\n' (id 1) starts and ends every poem and paragraph (docs/models.md, Tokenizers).
    const config = JSON.parse(files['config.json']);
    config.bos_token_id = tok.newlineId;
    config.eos_token_id = tok.newlineId;
    config.torch_dtype = 'float16';
    files['config.json'] = `${JSON.stringify(config, null, 2)}\n`;
    return files;
  };
  const history = { loss: [], heldout: [] };
  const t0 = performance.now();
  let window = 0;
  let windowN = 0;
  let steps = 0;
  log(`${lang}: ${model.parameterCount.toLocaleString('en-US')} parameters (F16 ${(model.parameterCount * 2 / 1048576).toFixed(2)} MiB), V ${V}, context ${r.context}, E ${r.embedDim}, ${r.numLayers} layers × ${r.numHeads} heads, batch ${r.batch}, ${r.steps} steps, lr ${r.lr} → ${r.minLr} (warmup ${r.warmup}, cosine to step ${r.horizon ?? r.steps}), wd ${r.weightDecay}, dropout ${r.dropout}, seed ${r.seed}; ${ids.length.toLocaleString('en-US')} training tokens`);
  const h0 = meanLoss(trainer, held);
  history.heldout.push([0, h0]);
  log(`step     0  heldout ${h0.toFixed(4)}`);
  for (let t = 1; t <= r.steps; t++) {
    setLr(lrAt(r, t));
    const b = next();
    const s = trainer.step(b.tokens, b.targets);
    history.loss.push(s.loss);
    window += s.loss;
    windowN++;
    steps = t;
    const over = (options.maxSeconds && (performance.now() - t0) / 1000 > options.maxSeconds) || t === options.stopAfter;
    if (t % r.evalEvery === 0 || t === r.steps || over) {
      const h = meanLoss(trainer, held);
      history.heldout.push([t, h]);
      const sec = (performance.now() - t0) / 1000;
      log(`step ${String(t).padStart(5)}  train ${(window / windowN).toFixed(4)}  heldout ${h.toFixed(4)}  lr ${s.lr.toExponential(2)}  |g| ${s.gradNorm.toFixed(2)}  ${sec.toFixed(0)} s (${(1000 * sec / t).toFixed(0)} ms/step)`);
      window = 0;
      windowN = 0;
      if (options.checkpoint && t !== r.steps) options.checkpoint(t, save(), history);
    }
    if (over) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  const files = save();
  return { model, files, history, recipe: r, seconds, steps };
}

/** sha256 hex of bytes or a string. */
export function sha256(data) {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/**
 * The evaluation of docs/models.md on a loaded Model (lab.loadModel / lab.pretrained): loss and
 * top-1 on the windows of scripts/lib/lm-eval.mjs, for 'heldout' and 'unseen'.
 */
export async function evaluateModel(model, lang, splits = ['heldout', 'unseen']) {
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', lang));
  const V = model.config.vocabSize;
  const context = model.config.maxPositions;
  const predict = (inputs) => {
    const { logits } = model.forwardSync(inputs, { attentions: false });
    const n = inputs.length;
    const p = new Float64Array(n * V);
    for (let t = 0; t < n; t++) {
      const row = logits.data.subarray(t * V, (t + 1) * V);
      let m = -Infinity;
      for (let v = 0; v < V; v++) if (row[v] > m) m = row[v];
      let sum = 0;
      for (let v = 0; v < V; v++) sum += (p[t * V + v] = Math.exp(row[v] - m));
      for (let v = 0; v < V; v++) p[t * V + v] /= sum;
    }
    return p;
  };
  const out = {};
  for (const split of splits) out[split] = await evaluate(windows(readCorpus(lang, split), tok, context), predict, V);
  return out;
}
