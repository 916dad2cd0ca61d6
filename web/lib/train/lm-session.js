// A live language-model training session: chapter 10's "train a poet" / "train an English
// model" / "train an induction head" (the English model with repeated random spans in its rows,
// whose induction score it records as it trains), run by the Web Worker web/lm-worker.js (and
// usable in Node: tests/js/lm-session.test.js, tests/js/induction-model.test.js).
// The recipe has the shape of the shipped models' (scripts/lib/train-lm.mjs): GPT-2's block
// through lab.transformer({ architecture: 'gpt2' }), the shipped character tokenizer, batches
// and held-out windows from lm-data.js (the same sampler and windows as `npm run train:lm`), AdamW
// with linear warmup and a cosine decay set each step by trainer.setLearningRate. It is smaller
// (LIVE_RECIPES: context 64, E 64, 2 layers, batch 8) so that a step takes a fraction of a second
// on one browser thread; docs/training.md, "Live language models", gives the measured times.
//
// probe() saves the weights as Hugging Face files and loads them with lab.loadModel, so the
// samples (model.generate) and the head-role scores (model.headRoles) come from the same Model
// class that lab.pretrained returns; probeModel() does the same for the shipped model, the end
// point, on the same example window, prompt and seeds.
import { repeatedTokens } from '../model/head-scores.js';
import { stream, windows, sampler, evalBatches, meanLoss, lrAt, isCharTokenizer, charTokenizer, inductionScores } from './lm-data.js';

const COMMON = {
  context: 64, embedDim: 64, numLayers: 2, numHeads: 4, ffnDim: 256, dropout: 0,
  batch: 8, horizon: 3000, lr: 5e-3, minLr: 5e-4, warmup: 30, weightDecay: 0.01, betas: [0.9, 0.99], clip: 1,
  boundary: 0.5, seed: 22, evalEvery: 10, evalWindows: 16,
};
/**
 * The induction model's recipe (docs/training.md, "The induction model"): the live English recipe
 * with every row carrying a random span of 16 to 32 characters written twice (lm-data.js sampler,
 * `repeat`, `repeatSpan`), a lower peak lr (2e-3: at 5e-3 no induction head had formed by step
 * 2000) with a longer warmup and schedule; trained to `steps` by `npm run train:lm -- --lang
 * induction` (scripts/lib/train-lm.mjs RECIPES.induction is this object) into
 * data/models/induction/, the end point of chapter 10's live run of it.
 */
export const INDUCTION_RECIPE = Object.freeze({
  ...COMMON, lr: 2e-3, warmup: 100, horizon: 6000, repeat: 1, repeatSpan: Object.freeze([16, 32]), steps: 4000,
});

/** The live recipes (the shipped ones, RECIPES of scripts/lib/train-lm.mjs, scaled down). */
export const LIVE_RECIPES = Object.freeze({
  zh: Object.freeze({ ...COMMON }),
  en: Object.freeze({ ...COMMON }),
  induction: Object.freeze(Object.fromEntries(Object.entries(INDUCTION_RECIPE).filter(([k]) => k !== 'steps'))),
});

/** The corpus and tokenizer of each live model (the induction model trains on the English prose). */
export const LIVE_CORPUS = Object.freeze({ zh: 'zh', en: 'en', induction: 'en' });

/** What the samples start from and how they are drawn (the same for the live and the shipped model). */
export const SAMPLING = Object.freeze({ count: 2, temperature: 0.8, seeds: [1, 2] });

/** Vocabulary size and newline id of a parsed character tokenizer.json. */
function vocabOf(json) {
  const vocab = json?.model?.vocab;
  if (!vocab || typeof vocab !== 'object' || !('\n' in vocab)) throw new TypeError('LmSession: tokenizerJson must be a character tokenizer.json with a "\\n" token');
  let max = -1;
  for (const id of Object.values(vocab)) max = Math.max(max, id);
  for (const t of json.added_tokens ?? []) max = Math.max(max, t.id);
  return { V: max + 1, nl: vocab['\n'] };
}

/** Mean next-token loss of a Model (lab.loadModel / lab.pretrained) over evalBatches' batches. */
export function modelLoss(model, batches) {
  let nll = 0;
  let n = 0;
  for (const b of batches) {
    const [B, L] = b.tokens.shape;
    for (let r = 0; r < B; r++) {
      const { logits } = model.forwardSync(b.tokens.data.subarray(r * L, (r + 1) * L), { attentions: false });
      const V = logits.shape[2];
      for (let t = 0; t < L; t++) {
        const row = logits.data.subarray(t * V, (t + 1) * V);
        let m = -Infinity;
        for (let v = 0; v < V; v++) if (row[v] > m) m = row[v];
        let sum = 0;
        for (let v = 0; v < V; v++) sum += Math.exp(row[v] - m);
        nll += Math.log(sum) + m - row[b.targets.data[r * L + t]];
        n++;
      }
    }
  }
  return nll / n;
}

/**
 * Samples, head-role scores and maps of a Model on a session's example window: { samples (texts),
 * temperature, roles (model.headRoles: heads and chance), maps ([layers] of { data, shape [H, L, L] }),
 * induction ({ length, seed, induction, previousToken }: model.headScores.repeated's scores, each
 * { data, shape [layers, heads] }) }.
 */
export async function probeModel(model, session) {
  const samples = [];
  for (const seed of SAMPLING.seeds.slice(0, SAMPLING.count)) {
    const ids = [];
    const gen = model.generate([session.nl], { maxNewTokens: session.recipe.context - 1, temperature: SAMPLING.temperature, seed });
    for await (const tok of gen) ids.push(tok.id);
    if (ids[ids.length - 1] === session.nl) ids.pop();
    samples.push(session.tokenizer.decode(ids));
  }
  // The live model's induction length for both (the shipped model's positions would allow more).
  const roles = model.headRoles(session.example, { inductionLength: Math.floor((session.recipe.context - 1) / 2) });
  const run = model.forwardSync(session.example, { attentions: true });
  const maps = run.attentions.map((a) => ({ data: a.data, shape: a.shape.slice(1) }));
  // TransformerLens's induction and previous-token scores on repeated random characters, the live
  // model's length for both (model.headScores.repeated, the library's own call).
  const rep = model.headScores.repeated({ length: session.inductionLength, seed: 0 });
  const induction = { length: session.inductionLength, seed: 0, induction: rep.induction, previousToken: rep.previousToken };
  return { samples, temperature: SAMPLING.temperature, roles: { heads: roles.heads, chance: roles.chance }, maps, induction };
}

export class LmSession {
  /**
   * @param lab an attention-lab instance (wasm backend)
   * @param {{ lang: 'en'|'zh'|'induction', tokenizer: any, tokenizerJson: any, trainText: string,
   *   heldoutText: string, recipe?: object }} options tokenizer: an @huggingface/tokenizers
   *   Tokenizer of tokenizerJson (with the model's tokenizer_config, so decoding keeps spaces)
   */
  constructor(lab, options) {
    const o = options;
    if (!o || typeof o !== 'object') throw new TypeError('LmSession: options must be { lang, tokenizer, tokenizerJson, trainText, heldoutText }');
    if (!Object.hasOwn(LIVE_RECIPES, o.lang ?? '')) throw new RangeError(`LmSession: lang must be 'en', 'zh' or 'induction', got ${String(o.lang)}`);
    this.lab = lab;
    this.lang = o.lang;
    this.recipe = Object.freeze({ ...LIVE_RECIPES[o.lang], ...(o.recipe ?? {}) });
    const r = this.recipe;
    this.tokenizer = o.tokenizer;
    this.tokenizerJson = o.tokenizerJson;
    const { V, nl } = vocabOf(o.tokenizerJson);
    this.vocabSize = V;
    this.nl = nl;
    // The shipped tokenizers are character tokenizers: each character encoded once (the same ids).
    const enc = isCharTokenizer(o.tokenizerJson) ? charTokenizer(o.tokenizer) : o.tokenizer;
    const ids = stream(o.trainText, enc);
    this.trainTokens = ids.length;
    this.next = sampler(ids, nl, r, V);
    const wins = windows(o.heldoutText, enc, r.context);
    this.held = evalBatches(wins, r.context, r.evalWindows);
    if (!this.held.length) throw new RangeError(`LmSession: the held-out text has no window of ${r.context + 1} tokens`);
    // The example of the maps and head roles: the first held-out window (a poem or paragraph).
    this.example = Array.from(this.held[0].tokens.data.subarray(0, r.context));
    this.model = lab.transformer({
      architecture: 'gpt2', vocabSize: V, maxLength: r.context, embedDim: r.embedDim, numHeads: r.numHeads,
      numLayers: r.numLayers, ffnDim: r.ffnDim, dropout: r.dropout, seed: r.seed,
    });
    this.trainer = this.model.trainer({ lr: r.lr, warmup: 0, weightDecay: r.weightDecay, clip: r.clip, betas: r.betas });
    this.step = 0;
    this.history = []; // { step, loss }
    this.heldout = [[0, meanLoss(this.trainer, this.held)]]; // [step, held-out loss]
    // The induction curve: the best head's induction score on headScores.repeated's input
    // (length (context − 1) / 2, seed 0) at every held-out evaluation, [step, score, layer, head].
    this.inductionLength = Math.floor((r.context - 1) / 2);
    // Its ceiling: the share of rows that have a key after an earlier copy of their token (the
    // score of a head that puts all of each such row there): about 1/2, since the first copy
    // has none but by chance.
    const rep = repeatedTokens({ vocabSize: V, bos: nl, length: this.inductionLength, seed: 0 });
    this.inductionCeiling = rep.filter((id, i) => rep.indexOf(id) < i).length / rep.length;
    this.induction = [[0, ...this._induction()]];
    this.trainMs = 0;
    this.stopped = null;
  }

  /** [score, layer, head] of the best induction head now (lm-data.js inductionScores). */
  _induction() {
    const { best } = inductionScores(this.model, { vocabSize: this.vocabSize, bos: this.nl, length: this.inductionLength, seed: 0 });
    return [best.score, best.layer, best.head];
  }

  /** The latest held-out loss. */
  get heldOutLoss() {
    return this.heldout[this.heldout.length - 1][1];
  }

  /** Runs steps until `budgetMs` has passed or `maxSteps` were taken; returns the steps taken. */
  run(budgetMs, maxSteps = Infinity) {
    const r = this.recipe;
    const t0 = performance.now();
    let taken = 0;
    while (!this.stopped && taken < maxSteps && (taken === 0 || performance.now() - t0 < budgetMs)) {
      const t = this.step + 1;
      this.trainer.setLearningRate(lrAt(r, t));
      const b = this.next();
      const s0 = performance.now();
      let s;
      try {
        s = this.trainer.step(b.tokens, b.targets, b.lossMask ? { lossMask: b.lossMask } : undefined);
      } catch (e) {
        if (e.name !== 'TrainingStoppedError') throw e;
        this.stopped = e.message;
        break;
      }
      this.trainMs += performance.now() - s0;
      this.step = t;
      taken++;
      this.history.push({ step: t, loss: s.loss });
      if (t % r.evalEvery === 0) {
        this.heldout.push([t, meanLoss(this.trainer, this.held)]);
        this.induction.push([t, ...this._induction()]);
      }
    }
    return taken;
  }

  /** The Hugging Face files of the weights now (F32; bos/eos the newline, as the shipped ones). */
  files() {
    const files = this.model.save({ tokenizer: this.tokenizerJson });
    const config = JSON.parse(files['config.json']);
    config.bos_token_id = this.nl;
    config.eos_token_id = this.nl;
    files['config.json'] = JSON.stringify(config);
    return files;
  }

  /** Samples, head roles and maps of the weights now, through lab.loadModel (see probeModel). */
  async probe() {
    const f = this.files();
    const model = await this.lab.loadModel({ config: f['config.json'], weights: f['model.safetensors'], tokenizer: f['tokenizer.json'] });
    try {
      return { step: this.step, heldOut: this.heldOutLoss, ...(await probeModel(model, this)) };
    } finally {
      model.dispose();
    }
  }

  /** The maps of the example window now ([layers] of { data, shape [H, L, L] }). */
  maps() {
    const out = this.model.forward({ data: Int32Array.from(this.example), shape: [1, this.recipe.context] });
    return out.attention.map((a) => ({ data: a.data, shape: a.shape.slice(1) }));
  }

  /**
   * A report: step, the losses since step `since` ([{ step, loss }]), the held-out losses
   * ([step, loss]), the induction curve ([step, best score, layer, head]), the mean step time, and
   * (maps: true) the maps.
   */
  report({ since = 0, maps = true } = {}) {
    const last = this.history[this.history.length - 1];
    return {
      step: this.step,
      loss: last ? last.loss : NaN,
      lr: lrAt(this.recipe, Math.max(1, this.step)),
      losses: this.history.filter((p) => p.step > since),
      heldout: this.heldout.slice(),
      induction: this.induction.slice(),
      stepMs: this.step ? this.trainMs / this.step : 0,
      maps: maps ? this.maps() : null,
      stopped: this.stopped,
    };
  }

  /** What the page shows once: the recipe, sizes and the example's characters. */
  describe() {
    return {
      lang: this.lang, recipe: this.recipe, inductionLength: this.inductionLength, inductionCeiling: this.inductionCeiling, parameters: this.model.parameterCount, vocabSize: this.vocabSize,
      trainTokens: this.trainTokens, heldoutWindows: this.held.reduce((s, b) => s + b.tokens.shape[0], 0),
      example: this.example.map((id) => this.tokenizer.decode([id])),
    };
  }

  dispose() {
    this.model.dispose();
  }
}
