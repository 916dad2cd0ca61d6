// Sampling over a model's next-token probabilities (model.js: nextTokens,
// fillMask, generate): the softmax with a temperature, the top-k ids without
// sorting the whole vocabulary, the top-k / top-p candidates and one draw.
/** Softmax of logits/T (T = 0: one-hot on the arg max), in float64. */
export function softmax(logits, temperature) {
  const n = logits.length;
  const p = new Float64Array(n);
  let best = 0;
  for (let i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
  if (temperature === 0) {
    p[best] = 1;
    return p;
  }
  const m = logits[best];
  let sum = 0;
  for (let i = 0; i < n; i++) {
    p[i] = Math.exp((logits[i] - m) / temperature);
    sum += p[i];
  }
  for (let i = 0; i < n; i++) p[i] /= sum;
  return p;
}

/**
 * The k most likely ids, highest first (ties: lower id first), without
 * sorting all V: the k-th largest probability from a native numeric sort of
 * a copy, then only the ids at or above it are ordered.
 */
export function topIds(p, k) {
  const n = p.length;
  k = Math.min(k, n);
  const sorted = Float64Array.from(p).sort();
  const threshold = sorted[n - k];
  const ids = [];
  for (let i = 0; i < n; i++) if (p[i] >= threshold) ids.push(i);
  ids.sort((a, b) => p[b] - p[a] || a - b);
  return ids.slice(0, k);
}

/**
 * The ids a sampler draws from, ranked, and their total probability: the
 * topK most likely (0: all), then the fewest of those whose probability
 * reaches topP. Null when neither truncates (then draws run over all ids in
 * id order, with no ranking at all).
 */
export function candidates(p, topK, topP) {
  if (topK === 0 && topP >= 1) return null;
  let ids;
  if (topK > 0) {
    ids = topIds(p, topK);
  } else {
    // The probability at which the sorted cumulative sum reaches topP.
    const sorted = Float64Array.from(p).sort();
    let acc = 0;
    let threshold = 0;
    for (let i = sorted.length - 1; i >= 0; i--) {
      acc += sorted[i];
      if (acc >= topP) {
        threshold = sorted[i];
        break;
      }
    }
    ids = [];
    for (let i = 0; i < p.length; i++) if (p[i] >= threshold) ids.push(i);
    ids.sort((a, b) => p[b] - p[a] || a - b);
  }
  let keep = ids.length;
  if (topP < 1) {
    let acc = 0;
    for (let i = 0; i < ids.length; i++) {
      acc += p[ids[i]];
      if (acc >= topP) {
        keep = i + 1;
        break;
      }
    }
  }
  return ids.slice(0, keep);
}

/** An id drawn from p (restricted to `ids` when given) by the uniform u in [0, 1). */
export function draw(p, ids, u) {
  const n = ids ? ids.length : p.length;
  let total = 0;
  for (let i = 0; i < n; i++) total += p[ids ? ids[i] : i];
  const target = u * total;
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const id = ids ? ids[i] : i;
    acc += p[id];
    if (target < acc) return id;
  }
  // Rounding left target at the very end: the last id with probability > 0.
  for (let i = n - 1; i >= 0; i--) if (p[ids ? ids[i] : i] > 0) return ids ? ids[i] : i;
  return ids ? ids[0] : 0;
}


/**
 * The next token of generate: the arg max of `logits` at temperature 0 (the
 * first of equal maxima), else a draw from softmax(logits / temperature)
 * within topK / topP with the uniform number `uniform()` gives (the seeded
 * dropout hash of the step, so a seed replays the same tokens).
 * @param {Float32Array} logits
 * @param {number} temperature
 * @param {number} topK
 * @param {number} topP
 * @param {() => number} uniform
 */
export function pickToken(logits, temperature, topK, topP, uniform) {
  if (temperature === 0) {
    let id = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[id]) id = i;
    return id;
  }
  const p = softmax(logits, temperature);
  return draw(p, candidates(p, topK, topP), uniform());
}
