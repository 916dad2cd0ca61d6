// Tokens and their seeded embeddings. Words split on whitespace; CJK text
// (Han, kana, Hangul, full-width punctuation) one character per token. The
// embedding of a token depends only on (token, seed, E): the same word always
// gets the same vector, so repeated words differ only by positional encoding.

const CJK = /[\u2E80-\u2FFF\u3000-\u303F\u3040-\u30FF\u3100-\u312F\u3130-\u318F\u31A0-\u31FF\u3200-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7AF\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFFEF]|[\u{20000}-\u{2FA1F}]/u;

/** Splits text into tokens: words on spaces, CJK characters one each. */
export function tokenize(text, { maxTokens = 512 } = {}) {
  const out = [];
  for (const word of String(text ?? '').split(/\s+/u)) {
    if (!word) continue;
    let buf = '';
    for (const ch of word) {
      if (CJK.test(ch)) {
        if (buf) out.push(buf);
        buf = '';
        out.push(ch);
      } else {
        buf += ch;
      }
    }
    if (buf) out.push(buf);
    if (out.length >= maxTokens) break;
  }
  return out.slice(0, maxTokens);
}

/** FNV-1a over the UTF-16 code units of a string → uint32. */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, fast, seeded PRNG → () => uniform [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function mixSeed(a, b) {
  let x = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((b >>> 0) + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Standard-normal samples from a uniform generator (Box–Muller). */
export function normals(rand, n, out = new Float32Array(n), offset = 0) {
  for (let i = 0; i < n; i += 2) {
    const u = Math.max(rand(), 1e-12);
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    out[offset + i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[offset + i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

const cache = new Map();
/** The [E] embedding of one token: N(0, 1) entries seeded by (token, seed). */
export function embedToken(token, seed, E) {
  const key = `${seed}\u0000${E}\u0000${token}`;
  let v = cache.get(key);
  if (!v) {
    v = normals(mulberry32(mixSeed(hashString(token), seed)), E);
    if (cache.size > 4096) cache.clear();
    cache.set(key, v);
  }
  return v;
}

/**
 * Embeddings of a batch of token lists, padded to L: → Float32Array [B, L, E].
 * `pe` ([L', E] with L' ≥ L, or null) is added row by row.
 */
export function embedBatch(batchTokens, L, E, seed, pe = null) {
  const B = batchTokens.length;
  const x = new Float32Array(B * L * E);
  for (let b = 0; b < B; b++) {
    for (let i = 0; i < L; i++) {
      const e = embedToken(batchTokens[b][i] ?? PAD, seed, E);
      const o = (b * L + i) * E;
      x.set(e, o);
      if (pe) for (let j = 0; j < E; j++) x[o + j] += pe[i * E + j];
    }
  }
  return x;
}

export const PAD = '<pad>';

/** Seeded Xavier-uniform matrix [rows, cols] (row-major). */
export function xavier(rows, cols, seed, fanIn = rows, fanOut = cols) {
  const rand = mulberry32(seed);
  const a = Math.sqrt(6 / (fanIn + fanOut));
  const w = new Float32Array(rows * cols);
  for (let i = 0; i < w.length; i++) w[i] = (rand() * 2 - 1) * a;
  return w;
}
