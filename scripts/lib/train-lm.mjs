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
// step is set with trainer.setLearningRate (the core's transformerConfigureOptimizer, which keeps
// the moments and the step count; the trainer's warmup is 0 here). See docs/models.md, "Training".

import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadTokenizer, stream, windows, evaluate } from './lm-eval.mjs';
import { INDUCTION_RECIPE } from '../../web/lib/train/lm-session.js';
import { rng, lrAt, sampler, evalBatches, meanLoss, inductionScores } from '../../web/lib/train/lm-data.js';

// The batching, the held-out windows and the lr schedule are web/lib/train/lm-data.js's, shared
// with chapter 10's live training (web/lib/train/lm-session.js).
export { rng, lrAt, sampler, evalBatches };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The shipped recipes (docs/models.md, "Training"). steps: the budget of the 30-minute run.
 * induction: chapter 10's live English recipe (web/lib/train/lm-session.js LIVE_RECIPES.induction,
 * the same fields) on the English corpus and tokenizer, with `repeat` of the rows carrying a
 * repeated random span (lm-data.js sampler), so that an induction head forms (docs/training.md,
 * "The induction model").
 */
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
  induction: INDUCTION_RECIPE,
};

/** The corpus and tokenizer (data/corpora/<c>/, data/models/<c>/) of each shipped model. */
export const CORPUS = { en: 'en', zh: 'zh', induction: 'en' };

function readCorpus(lang, split) {
  return fs.readFileSync(path.join(ROOT, 'data', 'corpora', CORPUS[lang], `${split}.txt`), 'utf8');
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
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', CORPUS[lang]));
  const V = tok.vocabSize;
  const ids = stream(options.trainText ?? readCorpus(lang, 'train'), tok);
  const next = sampler(ids, tok.newlineId, r, V);
  const held = evalBatches(windows(options.heldoutText ?? readCorpus(lang, 'heldout'), tok, r.context), r.context, r.evalWindows);

  const model = lab.transformer({
    architecture: 'gpt2', vocabSize: V, maxLength: r.context, embedDim: r.embedDim, numHeads: r.numHeads,
    numLayers: r.numLayers, ffnDim: r.ffnDim, dropout: r.dropout, seed: r.seed,
  });
  const trainer = model.trainer({ lr: r.lr, warmup: 0, weightDecay: r.weightDecay, clip: r.clip, betas: r.betas });
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
  // The induction curve: model.headScores.repeated's input and score (lm-data.js inductionScores)
  // at every held-out evaluation, [step, best score, its layer, its head].
  const induction = () => {
    const { best } = inductionScores(model, { vocabSize: V, bos: tok.newlineId, length: Math.floor((r.context - 1) / 2), seed: 0 });
    return [best.score, best.layer, best.head];
  };
  const history = { loss: [], heldout: [], induction: [] };
  const t0 = performance.now();
  let window = 0;
  let windowN = 0;
  let steps = 0;
  log(`${lang}: ${model.parameterCount.toLocaleString('en-US')} parameters (F16 ${(model.parameterCount * 2 / 1048576).toFixed(2)} MiB), V ${V}, context ${r.context}, E ${r.embedDim}, ${r.numLayers} layers × ${r.numHeads} heads, batch ${r.batch}, ${r.steps} steps, lr ${r.lr} → ${r.minLr} (warmup ${r.warmup}, cosine to step ${r.horizon ?? r.steps}), wd ${r.weightDecay}, dropout ${r.dropout}, seed ${r.seed}; ${ids.length.toLocaleString('en-US')} training tokens`);
  const h0 = meanLoss(trainer, held);
  history.heldout.push([0, h0]);
  const i0 = induction();
  history.induction.push([0, ...i0]);
  log(`step     0  heldout ${h0.toFixed(4)}  induction ${i0[0].toFixed(3)} (L${i0[1]} H${i0[2]})`);
  for (let t = 1; t <= r.steps; t++) {
    trainer.setLearningRate(lrAt(r, t)); // keeps the AdamW moments and the step count
    const b = next();
    const s = trainer.step(b.tokens, b.targets, b.lossMask ? { lossMask: b.lossMask } : undefined);
    history.loss.push(s.loss);
    window += s.loss;
    windowN++;
    steps = t;
    const over = (options.maxSeconds && (performance.now() - t0) / 1000 > options.maxSeconds) || t === options.stopAfter;
    if (t % r.evalEvery === 0 || t === r.steps || over) {
      const h = meanLoss(trainer, held);
      history.heldout.push([t, h]);
      const ind = induction();
      history.induction.push([t, ...ind]);
      const sec = (performance.now() - t0) / 1000;
      log(`step ${String(t).padStart(5)}  train ${(window / windowN).toFixed(4)}  heldout ${h.toFixed(4)}  lr ${s.lr.toExponential(2)}  |g| ${s.gradNorm.toFixed(2)}  induction ${ind[0].toFixed(3)} (L${ind[1]} H${ind[2]})  ${sec.toFixed(0)} s (${(1000 * sec / t).toFixed(0)} ms/step)`);
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
  const tok = loadTokenizer(path.join(ROOT, 'data', 'models', CORPUS[lang]));
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
