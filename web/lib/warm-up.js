// lab.warmUp(): runs every kernel once per round, through the public API,
// until the first real call costs about what a steady one does.
//
// Why a first call is slow without it (measured on Node 20 / V8, wasm SIMD,
// MHA [1,128,512,H8]: first forward 4-10x the steady median):
//   * the engine first runs baseline-compiled wasm (V8's Liftoff) and compiles
//     optimized code for hot functions in the background (dynamic tiering); a
//     function switches on its next call once that is done;
//   * the wasm memory grows and its fresh pages are touched for the first time
//     (the first MHA [E=512] constructor costs about 10x the next one);
//   * on 'webgpu', pipelines are compiled and buffers created on first use.
// So a round calls each function at small sizes (which is enough to make the
// engine compile them), rounds repeat with idle pauses as long as the round
// (which let the background compiler finish on a busy core) until three rounds in a row are
// no faster than the best so far; then two rounds at the sizes given (default
// E=512, H=8, L=128, B=1) grow and touch the memory those sizes need and
// warm the code only large sizes reach.
import { checkInt, checkNumber, checkOptions } from './errors.js';

/** Options of lab.warmUp() and of init({ warmUp: {…} }). */
export const WARM_UP_KEYS = ['embedDim', 'numHeads', 'seqLen', 'batch', 'budgetMs'];

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => (typeof performance === 'object' ? performance.now() : Date.now());

function tensor(shape, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = Math.sin(0.37 * i + seed) * 0.5;
  return { data, shape };
}

/** Reads and checks the options; returns them with defaults. */
export function warmUpOptions(where, options) {
  const o = checkOptions(where, 'options', options === true ? {} : options, WARM_UP_KEYS);
  const embedDim = checkInt(where, 'embedDim', o.embedDim ?? 512, 1, 8192);
  const numHeads = checkInt(where, 'numHeads', o.numHeads ?? 8, 1, embedDim);
  if (embedDim % numHeads !== 0) {
    throw new RangeError(`${where}: embedDim (${embedDim}) must be divisible by numHeads (${numHeads})`);
  }
  return {
    embedDim,
    numHeads,
    seqLen: checkInt(where, 'seqLen', o.seqLen ?? 128, 1, 16384),
    batch: checkInt(where, 'batch', o.batch ?? 1, 1, 1024),
    budgetMs: checkNumber(where, 'budgetMs', o.budgetMs ?? 3000, { min: 0, max: 60000 }),
  };
}

// One call of every function (and every kernel path: fused QKV, cross
// attention, weights returned or not, few-query decode with a KV cache,
// flash-style long keys, layer norm, dropout) at the given sizes.
async function round(lab, { embedDim: E, numHeads: H, seqLen: L, batch: B }) {
  const D = E / H;
  await lab.positionalEncoding(L, E);
  const x = tensor([B, L, E], 1);
  await lab.selfAttention(tensor([B, Math.min(L, 16), D], 2), { mask: { kind: 'causal' } });
  const q = tensor([B, H, L, D], 3);
  await lab.scaledDotProductAttention(q, q, q, { mask: { kind: 'causal' } });
  // Long keys without weights: the flash-style path (Lk >= 512, Lq >= 8).
  const kLong = tensor([1, 512, Math.min(D, 16)], 4);
  await lab.scaledDotProductAttention(tensor([1, 8, Math.min(D, 16)], 5), kLong, kLong, { needWeights: false });

  const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 1 });
  try {
    await mha.forward(x, x, x, { mask: { kind: 'causal' }, needWeights: false });
    await mha.forward(x, x, x, { needWeights: true, averageWeights: true });
    const kv = tensor([B, Math.max(1, L >> 1), E], 6);
    await mha.forward(x, kv, kv, { needWeights: false });
    const cache = mha.createKVCache({ maxLength: 10, batch: B });
    try {
      const prompt = tensor([B, 8, E], 7);
      await mha.forward(prompt, prompt, prompt, { kvCache: cache, mask: { kind: 'causal' }, needWeights: false });
      const token = tensor([B, 1, E], 8);
      await mha.forward(token, token, token, { kvCache: cache, mask: { kind: 'causal' }, needWeights: false });
    } finally {
      cache.dispose();
    }
  } finally {
    mha.dispose();
  }
  const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: H, seed: 1 });
  try {
    await layer.forward(x, { needWeights: false });
    await layer.forward(x, { training: true, dropoutSeed: 1, needWeights: false });
  } finally {
    layer.dispose();
  }
}

/**
 * Warms the lab up (see the file comment).
 * @param {object} lab the API object
 * @param {object|true} [options] { embedDim, numHeads, seqLen, batch, budgetMs }
 * @returns {Promise<{ rounds: number, ms: number }>}
 */
export async function warmUp(lab, options) {
  const o = warmUpOptions('warmUp', options);
  const t0 = now();
  const small = { embedDim: Math.min(o.embedDim, 64), numHeads: 4, seqLen: Math.min(o.seqLen, 32), batch: 1 };
  if (small.embedDim % small.numHeads !== 0) small.numHeads = 1;
  let rounds = 0;
  let best = Infinity;
  let slower = 0;
  while (now() - t0 < o.budgetMs) {
    const t = now();
    await round(lab, small);
    rounds++;
    const dt = now() - t;
    if (dt < 0.9 * best) slower = 0;
    else if (++slower >= 3) break;
    best = Math.min(best, dt);
    // Idle as long as the round ran (5–100 ms): the engine's background
    // compiler gets about half the core even when the page has only one
    // (Chromium compiles only while the main thread is idle there).
    await pause(Math.min(100, Math.max(5, dt)));
  }
  // Last, the sizes asked for, twice: the first grows the wasm memory and
  // touches its pages (on webgpu: buffers of those sizes in the pool) and
  // runs the code only large sizes reach (e.g. blocked packing); after an
  // idle pause as long as it took, the second runs that code optimized.
  await pause(20);
  const t = now();
  await round(lab, o);
  await pause(Math.min(200, Math.max(20, now() - t)));
  await round(lab, o);
  return { rounds: rounds + 2, ms: now() - t0 };
}
