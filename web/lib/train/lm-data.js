// The data side of training a character language model, shared by `npm run train:lm`
// (scripts/lib/train-lm.mjs, the shipped models; scripts/lib/lm-eval.mjs, their evaluation) and
// chapter 10's live training in the Web Worker (lm-session.js). Pure JS: no Node, no DOM. A
// tokenizer here is an @huggingface/tokenizers Tokenizer (Node's package or the vendored copy in
// web/lib/vendor/): only token_to_id and encode(text).ids are used.
//
// A corpus text is lines (poems or paragraphs), each ended by "\n". Its token stream is "\n"
// followed by the text without its final newline, so every poem or paragraph follows the newline
// token (the boundary and the start-of-text token). Evaluation windows start at those newlines;
// training batches start at one with probability `boundary`, else anywhere.
import { repeatedTokens, scoreAttentions } from '../model/head-scores.js';

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
 * The lr of step t (1-based) of a recipe { lr, minLr, warmup, steps, horizon? }: linear warmup to
 * lr, then cosine to minLr at step `horizon` (default: steps), and minLr after it. The schedule
 * does not depend on the budget when horizon is given, so the weights after k steps of a longer run
 * are those of a run with steps = k.
 */
export function lrAt(r, t) {
  if (r.warmup > 0 && t <= r.warmup) return (r.lr * t) / r.warmup;
  const span = Math.max(1, (r.horizon ?? r.steps) - r.warmup);
  const q = Math.min(1, (t - r.warmup) / span);
  return r.minLr + 0.5 * (r.lr - r.minLr) * (1 + Math.cos(Math.PI * q));
}

/** Token ids of text, one per character; encoded line by line (the same ids as the whole text). */
export function encodeText(text, tokenizer) {
  const nl = tokenizer.token_to_id('\n');
  const parts = text.split('\n');
  const out = [];
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) out.push(nl);
    if (parts[i].length) for (const id of tokenizer.encode(parts[i]).ids) out.push(id);
  }
  return Int32Array.from(out);
}

/**
 * True for a character tokenizer.json as scripts/char-tokenizer.mjs writes them: no normalizer, a
 * pre-tokenizer that isolates every character, no merges. Its encoding of a text is then the
 * concatenation of its encodings of the characters, which charTokenizer uses.
 */
export function isCharTokenizer(json) {
  const pre = json?.pre_tokenizer;
  return !json?.normalizer && pre?.type === 'Split' && pre.behavior === 'Isolated' && !pre.invert
    && pre.pattern?.Regex === '[\\s\\S]' && (json.model?.merges ?? []).length === 0;
}

/**
 * A tokenizer with the same ids as a character tokenizer (isCharTokenizer), each distinct
 * character encoded once by the tokenizer itself and remembered: a corpus of 1.5 M characters
 * takes a fraction of a second instead of seconds (the browser's live training). Only
 * token_to_id and encode(text).ids, which is what encodeText uses.
 */
export function charTokenizer(tokenizer) {
  const memo = new Map();
  return {
    token_to_id: (t) => tokenizer.token_to_id(t),
    encode(text) {
      const ids = [];
      for (const ch of text) {
        let e = memo.get(ch);
        if (e === undefined) memo.set(ch, (e = tokenizer.encode(ch).ids));
        for (const id of e) ids.push(id);
      }
      return { ids };
    },
  };
}

/** The token stream of a corpus text: "\n" line "\n" line …, without the final newline. */
export function stream(text, tokenizer) {
  if (!text.endsWith('\n')) text += '\n';
  return encodeText('\n' + text.slice(0, -1), tokenizer);
}

/**
 * The evaluation windows of a corpus text: one per line, starting at the newline before it,
 * context + 1 tokens long (or to the end of the text). Returns Int32Arrays (views of one stream).
 */
export function windows(text, tokenizer, context) {
  const ids = stream(text, tokenizer);
  const nl = tokenizer.token_to_id('\n');
  const wins = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== nl || i === ids.length - 1) continue;
    wins.push(ids.subarray(i, Math.min(ids.length, i + context + 1)));
  }
  return wins;
}

/**
 * A batch sampler over a token stream (recipe fields context, batch, boundary, seed): each row
 * starts at a newline with probability `boundary`, else at a uniform offset. Returns next() →
 * { tokens, targets } ([batch, context] each, targets shifted by one).
 *
 * With the recipe field `repeat` > 0 (the induction model, docs/training.md), that fraction of the
 * rows also gets a span of T random tokens (T uniform in `repeatSpan` [min, max], default
 * [8, (context + 1) / 2]; ids drawn uniformly from 1 … vocabSize − 1 without the newline, as
 * model.headScores.repeated draws them) written at a random place of the row's context + 1 tokens
 * and written again right after it: r r. The targets that cannot be predicted (the first copy and
 * the first token of the second) get lossMask 0, so the model learns nothing about random text but
 * to copy it; next() then also returns lossMask [batch, context] (1 elsewhere). Without `repeat`
 * the draws, and so the batches, are those of the recipes before it.
 */
export function sampler(ids, nl, r, vocabSize) {
  const L = r.context;
  const last = ids.length - L - 1; // the last start that leaves L + 1 tokens
  const starts = [];
  for (let i = 0; i <= last; i++) if (ids[i] === nl) starts.push(i);
  const g = rng(r.seed * 2654435761 + 1);
  const repeat = r.repeat ?? 0;
  let pool = null;
  let span = null;
  if (repeat > 0) {
    if (!(Number.isInteger(vocabSize) && vocabSize > 2)) throw new RangeError(`sampler: recipe.repeat needs the vocabulary size (an integer > 2), got ${vocabSize}`);
    pool = Array.from({ length: vocabSize }, (_, i) => i).filter((i) => i !== 0 && i !== nl);
    span = r.repeatSpan ?? [8, Math.floor((L + 1) / 2)];
    if (!(Number.isInteger(span[0]) && Number.isInteger(span[1]) && span[0] >= 1 && span[0] <= span[1] && 2 * span[1] <= L + 1)) {
      throw new RangeError(`sampler: recipe.repeatSpan must be [min, max] with 1 <= min <= max <= (context + 1) / 2 = ${Math.floor((L + 1) / 2)}, got ${JSON.stringify(span)}`);
    }
  }
  const w = new Int32Array(L + 1);
  return () => {
    const x = new Int32Array(r.batch * L);
    const y = new Int32Array(r.batch * L);
    const mask = repeat > 0 ? new Float32Array(r.batch * L).fill(1) : null;
    for (let b = 0; b < r.batch; b++) {
      const s = g.float() < r.boundary ? starts[g.int(starts.length)] : g.int(last + 1);
      if (repeat > 0 && g.float() < repeat) {
        w.set(ids.subarray(s, s + L + 1));
        const T = span[0] + g.int(span[1] - span[0] + 1);
        const a = g.int(L + 2 - 2 * T); // w[a, a + 2T) lies in the L + 1 tokens
        for (let k = 0; k < T; k++) w[a + k] = w[a + T + k] = pool[g.int(pool.length)];
        x.set(w.subarray(0, L), b * L);
        y.set(w.subarray(1, L + 1), b * L);
        // target t is w[t + 1]: w[a … a + T] (the first copy and the second's first token) are random
        for (let t = Math.max(0, a - 1); t <= a + T - 1 && t < L; t++) mask[b * L + t] = 0;
      } else {
        x.set(ids.subarray(s, s + L), b * L);
        y.set(ids.subarray(s + 1, s + L + 1), b * L);
      }
    }
    const out = { tokens: { data: x, shape: [r.batch, L] }, targets: { data: y, shape: [r.batch, L] } };
    if (mask) out.lossMask = { data: mask, shape: [r.batch, L] };
    return out;
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

/** Mean loss of a trainer (lab.transformer(…).trainer()) over evalBatches' batches. */
export function meanLoss(trainer, batches) {
  let sum = 0;
  let n = 0;
  for (const b of batches) {
    sum += trainer.evaluate(b.tokens, b.targets).loss * b.n;
    n += b.n;
  }
  return sum / n;
}

/**
 * The induction score of every head of a lab.transformer model now, on model.headScores.repeated's
 * input (head-scores.js repeatedTokens: `length` random ids after `bos`, repeated twice) and with its
 * definition (scoreAttentions), from one forward of the training graph: the live and scripted
 * training's induction curve. Returns { induction, previousToken } (Float32Array [layers * heads])
 * and best { layer, head, score }, the head with the highest induction score.
 */
export function inductionScores(model, { vocabSize, bos, length, seed = 0 }) {
  const ids = repeatedTokens({ vocabSize, bos, length, seed });
  const out = model.forward({ data: Int32Array.from(ids), shape: [1, ids.length] });
  const s = scoreAttentions(out.attention, ids);
  const H = out.attention[0].shape[1];
  let k = 0;
  s.induction.data.forEach((v, i) => { if (v > s.induction.data[k]) k = i; });
  return { induction: s.induction.data, previousToken: s.previousToken.data, best: { layer: Math.floor(k / H), head: k % H, score: s.induction.data[k] } };
}
