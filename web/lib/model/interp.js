// Interpretability calls of a loaded model (docs/interpretability.md), after TransformerLens
// (transformer_lens/ActivationCache.py, patching.py): the logit lens, direct logit attribution,
// activation patching, and the `ablate` option of forward / nextTokens / generate. The numbers
// come from the core (src/train/transformer_interp.cpp, bindings/interp.cpp), which reads the
// weights where they are (packed, 16-bit or float); nothing here copies a weight matrix.
//
//   z          a head's attention-weighted sum of V, before o_proj     [L, D] per head
//   x_l        the residual entering block l (x_0 the embeddings, x_N the last block's output)
//   LD         logit[target] − logit[baseline]
import { rangeError, typeError, describe, checkInt, checkBool, checkOptions } from '../errors.js';
import { withArena, checkStatus } from '../graph/arena.js';

const MODES = { zero: 1, mean: 2 };
const ABLATE_KEYS = ['layer', 'head', 'mode'];
const LENS_KEYS = ['k', 'logits'];
const ATTRIBUTE_KEYS = ['target', 'baseline', 'position'];
const PATCH_KEYS = ['clean', 'corrupted', 'target', 'baseline', 'over'];
const OVER = { heads: 0, residual: 1 };
// The largest [N + 1, L, V] logits array logitLens({ logits: true }) returns (1 GiB of floats).
const MAX_LENS_FLOATS = 2 ** 28;

/**
 * The checked ablation list of an `ablate` option: flat (layer, head, mode id) triples.
 * @returns {Int32Array}
 */
export function ablationTriples(model, where, ablate) {
  if (ablate === undefined) return new Int32Array(0);
  if (!Array.isArray(ablate)) {
    throw typeError(where, `ablate must be an array of { layer, head, mode } (mode 'zero' or 'mean'), got ${describe(ablate)}`);
  }
  const { numLayers: N, numHeads: H } = model.config;
  const out = new Int32Array(3 * ablate.length);
  ablate.forEach((a, i) => {
    const w = `${where}: ablate[${i}]`;
    checkOptions(where, `ablate[${i}]`, a, ABLATE_KEYS);
    if (a === null || a === undefined) throw typeError(where, `ablate[${i}] must be { layer, head, mode }, got ${describe(a)}`);
    out[3 * i] = checkInt(w, 'layer', a.layer, 0, N - 1);
    out[3 * i + 1] = checkInt(w, 'head', a.head, 0, H - 1);
    if (typeof a.mode !== 'string' || !Object.hasOwn(MODES, a.mode)) {
      throw rangeError(where, `ablate[${i}].mode must be 'zero' or 'mean', got ${describe(a.mode)}`);
    }
    out[3 * i + 2] = MODES[a.mode];
  });
  return out;
}

/** Whether any triple is a mean ablation (whose mean needs every position in one call). */
export function hasMean(triples) {
  for (let i = 2; i < triples.length; i += 3) if (triples[i] === MODES.mean) return true;
  return false;
}

/** Sets the core's ablations to `triples` when they differ from the ones set (the cache is then dropped). */
export function setAblations(model, where, triples) {
  const key = triples.join(',');
  if (key === model._ablationKey) return;
  const Module = model._Module;
  withArena(Module, where, (arena) => {
    const p = triples.length ? arena.fromI32(triples) : 0;
    checkStatus(Module, where, Module.transformerSetAblations(model._t._handle, { count: triples.length / 3, triples: p }));
  });
  model._ablationKey = key;
}

/** Logits [V] of the last of `ids` from one whole forward, no cache (a mean ablation averages z over all positions of one run). */
export function lastLogitsUncached(model, where, ids) {
  const Module = model._Module;
  const V = model.config.vocabSize;
  return withArena(Module, where, (arena) => {
    const L = ids.length;
    const lp = arena.f32(L * V);
    checkStatus(Module, where, Module.transformerRun(model._t._handle, {
      batch: 1, length: L, keep: 0, tokens: arena.fromI32(ids), logits: lp, attention: 0, hidden: 0, layerInputs: 0, cross: 0, cached: false, lastOnly: false,
    }));
    return arena.readF32(lp + (L - 1) * V * 4, V);
  });
}

/** Refuses post-norm and head-less models with the reason. */
function needPreNorm(model, where) {
  const c = model._t.config;
  if (!c.prenorm) {
    throw typeError(where, `${model.config.modelType} is a post-norm model: its residual passes through a norm in every block, so no block's residual is a stage of the final prediction and the output is not a sum of the blocks' parts; ${where.replace('model.', '')} needs a pre-norm decoder (gpt2, llama, …). headScores and ablation work on every model`);
  }
  if (!model._hasHead || c.mlmHead) {
    throw typeError(where, `${model.config.modelType} has no causal language-model head, so there are no next-token logits to read`);
  }
}

function tokenId(model, where, name, v, { optional = false } = {}) {
  if (v === undefined && optional) return -1;
  const V = model.config.vocabSize;
  if (typeof v === 'string') {
    const tok = model._tokenizer;
    const id = tok ? tok.tokenToId(v) : undefined;
    if (id === undefined) throw rangeError(where, `${name} ${describe(v)} is not a token of the vocabulary; pass a token string the tokenizer knows or an id in [0, ${V - 1}]`);
    return id;
  }
  if (!Number.isInteger(v) || v < 0 || v >= V) {
    throw rangeError(where, `${name} must be a token id in [0, ${V - 1}] (vocab_size ${V}) or a token string, got ${describe(v)}`);
  }
  return v;
}

/**
 * The logit lens: the top-k next tokens at every position, for x_0 (the embeddings) and the
 * residual after each block, each through the final norm (its scale from that residual) and the
 * unembedding.
 */
export function logitLens(model, input, options) {
  const where = 'model.logitLens';
  model._live(where);
  const o = checkOptions(where, 'options', options, LENS_KEYS);
  needPreNorm(model, where);
  const ids = model._ids(where, input);
  const { vocabSize: V, numLayers: N } = model.config;
  const k = checkInt(where, 'k', o.k ?? 5, 1, V);
  if (o.logits !== undefined) checkBool(where, 'logits', o.logits);
  const L = ids.length;
  const full = o.logits === true;
  if (full && (N + 1) * L * V > MAX_LENS_FLOATS) {
    throw rangeError(where, `logits: true would return [${N + 1}, ${L}, ${V}] = ${(N + 1) * L * V} floats, more than ${MAX_LENS_FLOATS}; use the top-k (logits: false) or a shorter input`);
  }
  setAblations(model, where, new Int32Array(0));
  const Module = model._Module;
  const n = (N + 1) * L * k;
  return withArena(Module, where, (arena) => {
    const tp = arena.fromI32(ids);
    const ip = arena.alloc(n * 4);
    const pp = arena.f32(n);
    const lp = full ? arena.f32((N + 1) * L * V) : 0;
    checkStatus(Module, where, Module.transformerLogitLens(model._t._handle, { length: L, k, tokens: tp, topIds: ip, topProbs: pp, logits: lp }));
    const topIds = arena.readI32(ip, n);
    const tok = model._tokenizer;
    return {
      ids: Array.from(ids),
      tokens: tok ? tok.tokens(ids) : null,
      topIds: { data: topIds, shape: [N + 1, L, k] },
      topProbs: { data: arena.readF32(pp, n), shape: [N + 1, L, k] },
      topTokens: tok ? tok.tokens(Array.from(topIds)) : null,
      logits: full ? { data: arena.readF32(lp, (N + 1) * L * V), shape: [N + 1, L, V] } : null,
    };
  });
}

/**
 * Direct logit attribution of LD (or of logit[target] without a baseline) at `position`, with the
 * final norm's scale frozen at its value on x_N there.
 */
export function attribute(model, input, options) {
  const where = 'model.attribute';
  model._live(where);
  const o = checkOptions(where, 'options', options, ATTRIBUTE_KEYS);
  needPreNorm(model, where);
  const ids = model._ids(where, input);
  const L = ids.length;
  if (o.target === undefined) throw typeError(where, 'options.target is required: the token id (or token string) whose logit is attributed');
  const target = tokenId(model, where, 'target', o.target);
  const baseline = tokenId(model, where, 'baseline', o.baseline, { optional: true });
  const position = checkInt(where, 'position', o.position ?? L - 1, 0, L - 1);
  setAblations(model, where, new Int32Array(0));
  const { numLayers: N, numHeads: H } = model.config;
  const Module = model._Module;
  return withArena(Module, where, (arena) => {
    const size = N * H + 2 * N + 3;
    const op = arena.f32(size);
    checkStatus(Module, where, Module.transformerAttribute(model._t._handle, {
      length: L, position, target, baseline, tokens: arena.fromI32(ids), out: op,
    }));
    const out = arena.readF32(op, size);
    return {
      target, baseline: baseline < 0 ? null : baseline, position,
      embed: out[0],
      heads: { data: out.slice(1, 1 + N * H), shape: [N, H] },
      attnBias: { data: out.slice(1 + N * H, 1 + N * H + N), shape: [N] },
      mlps: { data: out.slice(1 + N * H + N, 1 + N * H + 2 * N), shape: [N] },
      constant: out[1 + N * H + 2 * N],
      logitDiff: out[2 + N * H + 2 * N],
    };
  });
}

/**
 * Activation patching from the clean run into the corrupted one: (LD_patched − LD_corrupted) /
 * (LD_clean − LD_corrupted) at the last position, per head (z at every position) or per block
 * and position (x_l at that position).
 */
export function patch(model, options) {
  const where = 'model.patch';
  model._live(where);
  const o = checkOptions(where, 'options', options, PATCH_KEYS);
  needPreNorm(model, where);
  if (o.clean === undefined || o.corrupted === undefined) throw typeError(where, 'options.clean and options.corrupted are required (texts or id arrays of equal token length)');
  const clean = model._ids(`${where}: clean`, o.clean);
  const corrupted = model._ids(`${where}: corrupted`, o.corrupted);
  if (clean.length !== corrupted.length) {
    throw rangeError(where, `clean has ${clean.length} tokens and corrupted ${corrupted.length}: patching needs texts of equal token length, position by position`);
  }
  if (o.target === undefined || o.baseline === undefined) throw typeError(where, 'options.target and options.baseline are required: LD = logit[target] − logit[baseline] at the last position');
  const target = tokenId(model, where, 'target', o.target);
  const baseline = tokenId(model, where, 'baseline', o.baseline);
  const overName = o.over ?? 'heads';
  if (typeof overName !== 'string' || !Object.hasOwn(OVER, overName)) throw rangeError(where, `over must be 'heads' or 'residual', got ${describe(overName)}`);
  setAblations(model, where, new Int32Array(0));
  const { numLayers: N, numHeads: H } = model.config;
  const L = clean.length;
  const cols = overName === 'heads' ? H : L;
  const Module = model._Module;
  return withArena(Module, where, (arena) => {
    const op = arena.f32(N * cols);
    const ldp = arena.alloc(16); // two float64
    checkStatus(Module, where, Module.transformerPatch(model._t._handle, {
      length: L, target, baseline, over: OVER[overName], clean: arena.fromI32(clean), corrupted: arena.fromI32(corrupted), out: op, ld: ldp,
    }));
    const raw = arena.readF32(op, N * cols);
    const ld = new Float64Array(Module.HEAPU8.slice(ldp, ldp + 16).buffer);
    const [ldClean, ldCorrupted] = ld;
    const span = ldClean - ldCorrupted;
    if (!(Math.abs(span) > 1e-6 * Math.max(1, Math.abs(ldClean)))) {
      throw rangeError(where, `clean and corrupted give the same logit difference (${ldClean}), so the normalised score (LD_patched − LD_corrupted) / (LD_clean − LD_corrupted) is undefined; pick inputs or tokens whose logit difference differs`);
    }
    const data = new Float32Array(raw.length);
    for (let i = 0; i < raw.length; i++) data[i] = (raw[i] - ldCorrupted) / span;
    return { data, shape: [N, cols], over: overName, target, baseline, ldClean, ldCorrupted, ldPatched: { data: raw, shape: [N, cols] } };
  });
}
