// Plain-JS tensor helpers the page uses to show intermediate values (Q, K, V,
// scores, …) that the library computes inside one fused call. Row-major
// Float32Arrays throughout. Shape legend: B, L (Lq/Lk), E, H, D = E/H.

/** C[m,n] = A[m,k] · B[k,n] (+ bias[n]). */
export function matmul(A, Bm, m, k, n, bias = null, out = new Float32Array(m * n)) {
  for (let i = 0; i < m; i++) {
    const o = i * n;
    if (bias) out.set(bias.subarray ? bias.subarray(0, n) : bias, o);
    else out.fill(0, o, o + n);
    for (let p = 0; p < k; p++) {
      const a = A[i * k + p];
      if (a === 0) continue;
      const r = p * n;
      for (let j = 0; j < n; j++) out[o + j] += a * Bm[r + j];
    }
  }
  return out;
}

/** C[m,n] = A[m,k] · W[n,k]ᵀ + b — nn.Linear with torch-layout W [out, in]. */
export function linear(A, W, b, m, k, n, out = new Float32Array(m * n)) {
  for (let i = 0; i < m; i++) {
    const ai = i * k;
    for (let j = 0; j < n; j++) {
      const wj = j * k;
      let s = b ? b[j] : 0;
      for (let p = 0; p < k; p++) s += A[ai + p] * W[wj + p];
      out[i * n + j] = s;
    }
  }
  return out;
}

/** A[m,k] · B[n,k]ᵀ → [m,n] (dot products of rows). */
export function matmulT(A, Bm, m, k, n, scale = 1, out = new Float32Array(m * n)) {
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += A[i * k + p] * Bm[j * k + p];
      out[i * n + j] = s * scale;
    }
  }
  return out;
}

/** [B, L, H, D] view of [B, L, E] permuted to [B, H, L, D] (a copy). */
export function splitHeads(x, B, L, H, D) {
  const out = new Float32Array(B * H * L * D);
  for (let b = 0; b < B; b++) {
    for (let l = 0; l < L; l++) {
      for (let hh = 0; hh < H; hh++) {
        const src = ((b * L + l) * H + hh) * D;
        const dst = ((b * H + hh) * L + l) * D;
        out.set(x.subarray(src, src + D), dst);
      }
    }
  }
  return out;
}

/** [B, H, L, D] → permute → [B, L, H, D] → view [B, L, E]. */
export function mergeHeads(x, B, H, L, D) {
  const out = new Float32Array(B * L * H * D);
  for (let b = 0; b < B; b++) {
    for (let hh = 0; hh < H; hh++) {
      for (let l = 0; l < L; l++) {
        const src = ((b * H + hh) * L + l) * D;
        const dst = ((b * L + l) * H + hh) * D;
        out.set(x.subarray(src, src + D), dst);
      }
    }
  }
  return out;
}

/** Row softmax in place over rows of length n. */
export function softmaxRows(x, n) {
  for (let o = 0; o < x.length; o += n) {
    let m = -Infinity;
    for (let j = 0; j < n; j++) m = Math.max(m, x[o + j]);
    let s = 0;
    for (let j = 0; j < n; j++) {
      const e = Math.exp(x[o + j] - m);
      x[o + j] = e;
      s += e;
    }
    for (let j = 0; j < n; j++) x[o + j] /= s;
  }
  return x;
}

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

export function maxAbsDiff(a, b) {
  if (!a || !b || a.length !== b.length) return NaN;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > m || Number.isNaN(d)) m = d;
  }
  return m;
}

/** LayerNorm over rows of length n (biased variance, like nn.LayerNorm). */
export function layerNorm(x, n, gamma, beta, eps = 1e-5) {
  const y = new Float32Array(x.length);
  for (let o = 0; o < x.length; o += n) {
    let mean = 0;
    for (let j = 0; j < n; j++) mean += x[o + j];
    mean /= n;
    let v = 0;
    for (let j = 0; j < n; j++) v += (x[o + j] - mean) ** 2;
    const r = 1 / Math.sqrt(v / n + eps);
    for (let j = 0; j < n; j++) y[o + j] = (x[o + j] - mean) * r * (gamma ? gamma[j] : 1) + (beta ? beta[j] : 0);
  }
  return y;
}

function pcg(x) {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> (((state >>> 28) + 4) >>> 0)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The library's counter-based dropout uniform (see attention_lab.h). */
export function dropoutUniform(seed, i) {
  const h = pcg((seed ^ pcg(i)) >>> 0);
  return (h >>> 8) / 16777216;
}

/** Slice [rows, cols] at flat offset → a fresh { data, shape }. */
export function slice2d(data, offset, rows, cols) {
  return { data: data.slice(offset, offset + rows * cols), shape: [rows, cols] };
}
