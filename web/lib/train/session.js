// A training session: a model, its trainer, a task and a held-out batch,
// stepped in time slices. Used by the Web Worker (web/train-worker.js) and usable on
// the main thread (tests, Node). Each report carries the step, the loss and
// accuracy, the held-out accuracy and every head's map for one held-out
// sequence ([N] layers × [H, L, L]).

export const SESSION_DEFAULTS = Object.freeze({
  task: 'reverse', length: 8, vocab: 10, batch: 64, embedDim: 64, numHeads: 4, numLayers: 1,
  ffnDim: 128, lr: 3e-3, warmup: 50, seed: 1, evalEvery: 25, positional: 'auto',
});

const CAUSAL_TASKS = new Set(['induction']);

/**
 * The position encoding of a session: `positional` ('sinusoidal', 'learned',
 * 'rope', 'none'; lab.transformer checks it), or for 'auto' learned positions
 * on the causal induction task and the sinusoidal encoding on the others.
 */
export function positionalFor(task, positional = 'auto') {
  if (positional !== 'auto') return positional;
  return CAUSAL_TASKS.has(task) ? 'learned' : 'sinusoidal';
}

export class TrainingSession {
  /** @param lab an attention-lab instance (wasm backend); @param options see SESSION_DEFAULTS */
  constructor(lab, options = {}) {
    this.lab = lab;
    this.options = { ...SESSION_DEFAULTS, ...options };
    const o = this.options;
    if (!(o.task in lab.tasks)) throw new RangeError(`session: task must be one of ${Object.keys(lab.tasks).join(', ')}, got ${o.task}`);
    const causal = CAUSAL_TASKS.has(o.task);
    this.model = lab.transformer({
      vocabSize: o.vocab, maxLength: o.length, embedDim: o.embedDim, numHeads: o.numHeads,
      numLayers: causal ? Math.max(2, o.numLayers) : o.numLayers, ffnDim: o.ffnDim, causal,
      positional: positionalFor(o.task, o.positional), seed: o.seed,
    });
    this.trainer = this.model.trainer({ lr: o.lr, warmup: o.warmup, weightDecay: 0, clip: 1 });
    this.heldOut = lab.tasks[o.task]({ length: o.length, vocab: o.vocab, batch: 256, seed: 0x7fffffff });
    this.example = { data: this.heldOut.tokens.data.slice(0, o.length), shape: [1, o.length] };
    this.step = 0;
    this.history = []; // { step, loss, accuracy, heldOut }
    this.lastHeldOut = 0;
    this.stopped = null;
  }

  /** Runs steps until `budgetMs` has passed or `maxSteps` were taken; returns the steps taken. */
  run(budgetMs, maxSteps = Infinity) {
    const o = this.options;
    const t0 = performance.now();
    let taken = 0;
    while (!this.stopped && taken < maxSteps && (taken === 0 || performance.now() - t0 < budgetMs)) {
      const b = this.lab.tasks[o.task]({ length: o.length, vocab: o.vocab, batch: o.batch, seed: o.seed * 1000003 + this.step });
      let r;
      try {
        r = this.trainer.step(b.tokens, b.targets, { lossMask: b.lossMask });
      } catch (e) {
        if (e.name !== 'TrainingStoppedError') throw e;
        this.stopped = e.message;
        break;
      }
      this.step = r.step;
      taken++;
      if (this.step % o.evalEvery === 0) {
        this.lastHeldOut = this.trainer.evaluate(this.heldOut.tokens, this.heldOut.targets, { lossMask: this.heldOut.lossMask }).sequenceAccuracy;
      }
      this.history.push({ step: this.step, loss: r.loss, accuracy: r.accuracy, heldOut: this.lastHeldOut });
    }
    return taken;
  }

  /** The current report: metrics and each layer's maps [H, L, L] for the example sequence. */
  report() {
    const out = this.model.forward(this.example);
    const last = this.history[this.history.length - 1] ?? { step: 0, loss: NaN, accuracy: 0, heldOut: 0 };
    return {
      step: this.step,
      loss: last.loss,
      accuracy: last.accuracy,
      heldOut: this.lastHeldOut,
      tokens: Array.from(this.example.data),
      maps: out.attention.map((t) => ({ data: t.data, shape: t.shape.slice(1) })),
      stopped: this.stopped,
    };
  }

  /** Held-out sequence accuracy now (e.g. after an ablation). */
  evaluate() {
    return this.trainer.evaluate(this.heldOut.tokens, this.heldOut.targets, { lossMask: this.heldOut.lossMask });
  }

  dispose() {
    this.model.dispose();
  }
}

/**
 * Score of an [L, L] map against a pattern: the mean weight on the pattern's
 * cells (anti-diagonal j = L-1-i, diagonal j = i, previous j = i-1 mod L).
 */
export function patternScore(map, L, pattern) {
  let s = 0;
  for (let i = 0; i < L; i++) {
    const j = pattern === 'anti-diagonal' ? L - 1 - i : pattern === 'diagonal' ? i : (i + L - 1) % L;
    s += map[i * L + j];
  }
  return s / L;
}
