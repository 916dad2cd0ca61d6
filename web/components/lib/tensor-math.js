// Plain-JS helpers that read tensors the library computed: statistics for
// read-outs and comparisons. No attention math lives here: projections,
// scores, softmax, dropout and LayerNorm come from the library (for the
// intermediates, forward(…, { trace: 'values' })). Row-major Float32Arrays.

/** Shannon entropy (nats) of each row of length n. */
export function rowEntropy(p, rows, n, offset = 0) {
  const out = new Float32Array(rows);
  for (let i = 0; i < rows; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) {
      const v = p[offset + i * n + j];
      if (v > 0) s -= v * Math.log(v);
    }
    out[i] = s;
  }
  return out;
}

/** max |a − b| (NaN when the lengths differ or a value is NaN). */
export function maxAbsDiff(a, b) {
  if (!a || !b || a.length !== b.length) return NaN;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > m || Number.isNaN(d)) m = d;
  }
  return m;
}

/** Slice [rows, cols] at flat offset → a fresh { data, shape }. */
export function slice2d(data, offset, rows, cols) {
  return { data: data.slice(offset, offset + rows * cols), shape: [rows, cols] };
}
