// model.headScores(textOrIds): TransformerLens's head scores (transformer_lens/head_detector.py,
// detect_head with error_measure "mul": Σ(A ⊙ P) / ΣA for a 0/1 detection pattern P), on ONE
// forward with attentions. A causal row of A sums to 1, so ΣA = L and every score is a sum / L:
//
//   previousToken   Σ_{i≥1} A[i][i−1] / L
//   duplicateToken  Σ over j < i with ids[j] = ids[i] of A[i][j], / L
//   induction       Σ over 1 ≤ j ≤ i with ids[j−1] = ids[i] and j−1 < i of A[i][j], / L
//   firstToken      Σ_i A[i][0] / L: ours (an attention sink), not a TransformerLens type. Row 0
//                   always adds A[0][0] = 1 on a causal model, so its floor is 1/L.
//
// model.headScores.repeated({ length, seed }) scores TransformerLens's standard input: `length`
// seeded random tokens (head-roles.js's xorshift draw, the same sequence headRoles uses), repeated
// twice, after the model's bos token when it has one. See docs/interpretability.md.
import { rangeError, typeError, checkInt, checkOptions } from '../errors.js';
import { xorshift } from './head-roles.js';

const REPEATED_KEYS = ['length', 'seed'];

/** The four scores of every head from forwardSync's attentions ([1, H, L, L] per layer) on ids. */
export function scoreAttentions(attentions, ids) {
  const N = attentions.length;
  const H = attentions[0].shape[1];
  const L = ids.length;
  const t = () => ({ data: new Float32Array(N * H), shape: [N, H] });
  const out = { previousToken: t(), duplicateToken: t(), induction: t(), firstToken: t() };
  for (let l = 0; l < N; l++) {
    const a = attentions[l].data;
    for (let h = 0; h < H; h++) {
      let prev = 0, dup = 0, ind = 0, first = 0;
      for (let i = 0; i < L; i++) {
        const row = (h * L + i) * L;
        first += a[row];
        if (i >= 1) prev += a[row + i - 1];
        for (let j = 0; j < i; j++) {
          if (ids[j] !== ids[i]) continue;
          dup += a[row + j];
          ind += a[row + j + 1]; // key j + 1 ≤ i follows an earlier copy of ids[i]
        }
      }
      const at = l * H + h;
      out.previousToken.data[at] = prev / L;
      out.duplicateToken.data[at] = dup / L;
      out.induction.data[at] = ind / L;
      out.firstToken.data[at] = first / L;
    }
  }
  return out;
}

/**
 * Head scores of `model` on `input` (a text or token ids, 2 … the model's positions).
 * @returns {{ previousToken, duplicateToken, induction, firstToken }} each { data: Float32Array, shape: [numLayers, numHeads] }
 */
export function headScores(model, input, options) {
  const where = 'model.headScores';
  model._live(where);
  checkOptions(where, 'options', options, []);
  const ids = model._ids(where, input);
  if (ids.length < 2) throw rangeError(where, `the input has ${ids.length} token; head scores need at least 2`);
  const run = model.forwardSync(ids, { attentions: true });
  return scoreAttentions(run.attentions, Array.from(ids));
}

/** The (bos) r r input of headScores.repeated: its ids, checked options. */
export function repeatedIds(model, where, options) {
  const o = checkOptions(where, 'options', options, REPEATED_KEYS);
  const V = model.config.vocabSize;
  const bos = model._info?.hfConfig?.bos_token_id;
  const hasBos = Number.isInteger(bos) && bos >= 0 && bos < V;
  const lead = hasBos ? 1 : 0;
  const most = Math.floor((model._maxLength - lead) / 2);
  if (most < 1) throw rangeError(where, `the model's ${model._maxLength} positions cannot hold a repeated sequence`);
  if (o.length === undefined) throw typeError(where, `options.length is required: an integer in [1, ${most}] (the repeated ${lead ? 'sequence and the bos token' : 'sequence'} must fit the model's ${model._maxLength} positions)`);
  const T = checkInt(where, 'length', o.length, 1, most);
  const seed = checkInt(where, 'seed', o.seed ?? 0, 0, 2 ** 32 - 1);
  return repeatedTokens({ vocabSize: V, bos: hasBos ? bos : null, length: T, seed });
}

/**
 * The input of headScores.repeated without a Model (the live and scripted training's induction
 * curves, web/lib/train/lm-session.js, scripts/lib/train-lm.mjs): `length` ids drawn uniformly from
 * the vocabulary without id 0 and the bos id (when that leaves two or more), by head-roles.js's
 * xorshift from `seed`, repeated twice, after `bos` unless it is null.
 */
export function repeatedTokens({ vocabSize, bos, length, seed }) {
  let pool = Array.from({ length: vocabSize }, (_, i) => i).filter((i) => i !== 0 && i !== bos);
  if (pool.length < 2) pool = Array.from({ length: vocabSize }, (_, i) => i);
  const draw = xorshift(seed);
  const r = Array.from({ length }, () => pool[draw(pool.length)]);
  return bos === null || bos === undefined ? [...r, ...r] : [bos, ...r, ...r];
}

/** headScores.repeated: the scores on (bos) r r, with the ids scored. */
export function headScoresRepeated(model, options) {
  const where = 'model.headScores.repeated';
  model._live(where);
  const ids = repeatedIds(model, where, options);
  const run = model.forwardSync(ids, { attentions: true });
  return { ...scoreAttentions(run.attentions, ids), ids };
}
