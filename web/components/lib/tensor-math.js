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

/**
 * The mean over heads of one layer's attention weights { data, shape [1, H, Lq, Lk] } →
 * { data, shape [1, 1, Lq, Lk] }: PyTorch's average_attn_weights=True (mean over dim 1) of the
 * weights the library returned, summed in float64. The model worker sends it with the
 * cross-attentions of an encoder-decoder (the alignment map's "mean over heads"; web/model-worker.js
 * holds the same function, as a worker entry imports only the library).
 */
export function headMean(a) {
  const [B, H, Lq, Lk] = a.shape;
  const per = Lq * Lk;
  const out = new Float32Array(B * per);
  for (let b = 0; b < B; b++) {
    for (let q = 0; q < per; q++) {
      let s = 0;
      for (let hh = 0; hh < H; hh++) s += a.data[(b * H + hh) * per + q];
      out[b * per + q] = s / H;
    }
  }
  return { data: out, shape: [B, 1, Lq, Lk] };
}
