// model.headRoles(text): what each head of a causal model attends to, scored on its own attention
// maps (forwardSync's attentions, [1, H, L, L] per layer). Every score is a mean attention weight,
// so it lies in [0, 1], and each comes with its chance level: the same mean for a head that
// spreads its weight evenly over the positions it may see (1/(i+1) at row i of a causal model,
// 1/L for a bidirectional one). Scored rows start at 1, since row 0 of a causal map has only
// itself to look at.
//
//   previousToken  weight of row i on i − 1 (i = 1 … L−1)
//   self           weight of row i on i
//   firstToken     weight of row i on 0 (an attention sink)
//   induction      on a repeated random token sequence r r (after the model's bos token, when it
//                  has one): weight of the second copy's r_k onto the first copy's r_{k+1}, the
//                  token that followed r_k last time (Olsson et al., 2022); the mean over
//                  `inductionSamples` seeded sequences
//   previousLine   for verse (a text with ，or 。): lines split at ，。！？； and poems at newlines;
//                  weight of character j of line n onto character j of line n − 1 of the same
//                  poem (the parallelism of 对仗)
//
// With { oneForward: true } (causal models) every score comes from ONE forward with attentions,
// over the text followed by (bos) r r: a causal row sees only the positions before it, so the
// text's rows, and their scores, are the same as on the text alone; the induction pairs are the
// appended copies' (one sequence, chance 1/(i+1) at their own rows i). GPT-2 small scores its
// 144 heads this way in one pass (issue 35) instead of 1 + inductionSamples.
import { rangeError, typeError, describe, checkInt, checkBool, checkOptions } from '../errors.js';

const KEYS = ['inductionLength', 'inductionSamples', 'seed', 'previousLine', 'oneForward'];
const LINE_END = new Set(['，', '。', '！', '？', '；']);

/** xorshift32 (seeded): the random sequences of the induction score. */
export function xorshift(seed) {
  let s = (Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) >>> 0) || 0x6d2b79f5;
  return (n) => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return Math.floor((s / 4294967296) * n);
  };
}

/** Mean of att[l][h][i][j] over pairs, per head; and the chance level of the same pairs. */
function scorePairs(attentions, L, pairs, causal) {
  const out = attentions.map((a) => {
    const H = a.shape[1];
    const s = new Float64Array(H);
    for (let h = 0; h < H; h++) {
      let sum = 0;
      for (const [i, j] of pairs) sum += a.data[(h * L + i) * L + j];
      s[h] = pairs.length ? sum / pairs.length : NaN;
    }
    return s;
  });
  let chance = 0;
  for (const [i] of pairs) chance += causal ? 1 / (i + 1) : 1 / L;
  return { scores: out, chance: pairs.length ? chance / pairs.length : NaN };
}

/**
 * The (row, column) pairs of the previous-line score: character j of line n onto character j of
 * line n − 1, within one poem. tokens: the model's token strings of the text (one per character for
 * a character model; a token ending with a line end closes the line).
 */
export function previousLinePairs(tokens) {
  const pairs = [];
  let prev = null;
  let line = [];
  const close = () => {
    if (line.length) {
      if (prev) for (let j = 0; j < Math.min(prev.length, line.length); j++) pairs.push([line[j], prev[j]]);
      prev = line;
    }
    line = [];
  };
  tokens.forEach((t, i) => {
    if (t === '\n' || t === 'Ċ') {
      close();
      prev = null;
    } else if (LINE_END.has(t)) close();
    else line.push(i);
  });
  close();
  return pairs;
}

/**
 * The head-role scores of `model` (a web/lib/model Model) on `text` (a string or ids, at most
 * the model's positions). Returns { heads: [{ layer, head, previousToken, self, firstToken,
 * induction, previousLine? }], chance: { … the same keys }, length, inductionIds, forwards }
 * (forwards: how many forward passes the scores took).
 */
export function headRoles(model, text, options) {
  const where = 'model.headRoles';
  const o = checkOptions(where, 'options', options);
  for (const key of Object.keys(o)) {
    if (!KEYS.includes(key)) throw typeError(where, `unknown option ${JSON.stringify(key)}; allowed: ${KEYS.join(', ')}`);
  }
  if (typeof text !== 'string' && !Array.isArray(text) && !(text instanceof Int32Array)) {
    throw typeError(where, `text must be a string or an array of token ids, got ${describe(text)}`);
  }
  const causal = model._causal !== false;
  const maxPos = model._maxLength;
  const bos = model._info?.hfConfig?.bos_token_id;
  const hasBos = Number.isInteger(bos) && bos >= 0 && bos < model.config.vocabSize;
  const lead = hasBos ? 1 : 0;
  if (o.oneForward !== undefined) checkBool(where, 'oneForward', o.oneForward);
  const one = o.oneForward === true;
  if (one && !causal) throw rangeError(where, `oneForward needs a causal model (its text rows must not see the appended sequence); ${model.config.modelType} attends both ways`);
  const ids0 = Array.from(model._ids(where, text, { lengthCheck: false }));
  // Positions left for the induction sequence: all of them, or (one forward) those after the text.
  const room = maxPos - lead - (one ? ids0.length : 0);
  const T = checkInt(where, 'inductionLength', o.inductionLength ?? Math.min(64, Math.floor(room / 2)), 2);
  if (2 * T > room) {
    throw rangeError(where, one
      ? `inductionLength ${T}: the text (${ids0.length} tokens) and the repeated sequence (${lead + 2 * T}) must fit the model's ${maxPos} positions`
      : `inductionLength ${T}: the repeated sequence (${lead + 2 * T} tokens) must fit the model's ${maxPos} positions`);
  }
  const samples = checkInt(where, 'inductionSamples', o.inductionSamples ?? (one ? 1 : 4), 1, one ? 1 : 1024);
  const seed = checkInt(where, 'seed', o.seed ?? 0, 0, 2 ** 32 - 1);
  if (o.previousLine !== undefined) checkBool(where, 'previousLine', o.previousLine);
  if (ids0.length < 2) throw rangeError(where, `the text has ${ids0.length} token; the scores need at least 2`);

  // Induction: ids drawn uniformly from the vocabulary without id 0 (an unknown or padding token)
  // and the bos id, when that leaves two or more.
  const V = model.config.vocabSize;
  let pool = Array.from({ length: V }, (_, i) => i).filter((i) => i !== 0 && i !== bos);
  if (pool.length < 2) pool = Array.from({ length: V }, (_, i) => i);
  const draw = xorshift(seed);
  const sequence = () => {
    const r = Array.from({ length: T }, () => pool[draw(pool.length)]);
    return hasBos ? [bos, ...r, ...r] : [...r, ...r];
  };

  const first0 = one ? sequence() : null;
  const full = one ? model.forwardSync([...ids0, ...first0], { attentions: true }) : null;
  // The text's part of the maps: rows and keys 0 … L−1 (in one forward, a causal row's weights
  // on the appended positions are 0, so the text's [L, L] block is its whole map).
  const run = one ? textPart(model, full, ids0.length) : model.forwardSync(text, { attentions: true });
  const L = run.ids.length;
  const rows = Array.from({ length: L - 1 }, (_, k) => k + 1);
  const prev = scorePairs(run.attentions, L, rows.map((i) => [i, i - 1]), causal);
  const self = scorePairs(run.attentions, L, rows.map((i) => [i, i]), causal);
  const first = scorePairs(run.attentions, L, rows.map((i) => [i, 0]), causal);

  const tokens = run.tokens ?? [];
  const linePairs = o.previousLine === false ? [] : previousLinePairs(tokens);
  const wantLine = o.previousLine === true || (o.previousLine === undefined && linePairs.length > 0);
  const line = wantLine ? scorePairs(run.attentions, L, linePairs, causal) : null;

  const inductionIds = [];
  const ind = run.attentions.map((a) => new Float64Array(a.shape[1]));
  let indChance = 0;
  for (let s = 0; s < samples; s++) {
    const ids = one ? first0 : sequence();
    inductionIds.push(ids);
    const rr = one ? full : model.forwardSync(ids, { attentions: true });
    const at = one ? ids0.length : 0; // where the sequence starts in the forward
    const n = rr.ids.length;
    // second copy's r_k at lead + T + k, onto the first copy's r_{k+1} at lead + k + 1
    const pairs = Array.from({ length: T - 1 }, (_, k) => [at + lead + T + k, at + lead + k + 1]);
    const sc = scorePairs(rr.attentions, n, pairs, causal);
    sc.scores.forEach((hs, l) => hs.forEach((v, h) => { ind[l][h] += v / samples; }));
    indChance += sc.chance / samples;
  }

  const heads = [];
  run.attentions.forEach((a, l) => {
    for (let h = 0; h < a.shape[1]; h++) {
      const e = { layer: l, head: h, previousToken: prev.scores[l][h], self: self.scores[l][h], firstToken: first.scores[l][h], induction: ind[l][h] };
      if (line) e.previousLine = line.scores[l][h];
      heads.push(e);
    }
  });
  const chance = { previousToken: prev.chance, self: self.chance, firstToken: first.chance, induction: indChance };
  if (line) chance.previousLine = line.chance;
  return { heads, chance, length: L, inductionIds, forwards: one ? 1 : 1 + samples };
}

/** The text's rows and keys (0 … L−1) of one forward over the text and what follows it. */
function textPart(model, full, L) {
  const n = full.ids.length;
  const attentions = full.attentions.map((a) => {
    const H = a.shape[1];
    const data = new Float32Array(H * L * L);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) data.set(a.data.subarray((h * n + i) * n, (h * n + i) * n + L), (h * L + i) * L);
    }
    return { data, shape: [1, H, L, L] };
  });
  const ids = Array.from(full.ids).slice(0, L);
  return { ids, attentions, tokens: model._tokenizer ? model._tokenizer.tokens(ids) : null };
}
