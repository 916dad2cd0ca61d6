// Shared by the driver, the Node child scripts and the browser page: the case
// list, deterministic data (identical inputs and weights in every
// implementation), FLOP counts and the timing loop. Plain JS only — no Node
// imports — so the browser page can import it too.

// ---- command line ------------------------------------------------------------

/** The value after `name` in argv (`--repeats 5` → '5'), or dflt when absent or last. */
export function argValue(argv, name, dflt) {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
}

// ---- deterministic data ----------------------------------------------------

/** n uniform floats in [lo, hi) from a 32-bit LCG (same in every process). */
export function rand(n, seed, lo = -0.5, hi = 0.5) {
  let s = (seed * 2654435761) >>> 0;
  const a = new Float32Array(n);
  const w = hi - lo;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = lo + (s / 2 ** 32) * w;
  }
  return a;
}

/**
 * MHA weights in the 'keras' layout (Dense kernels [in, out], y = x·W + b):
 * exactly what an ONNX MatMul or tf.matMul takes as its right-hand side, and
 * what ours accepts with setWeights(…, { layout: 'keras' }).
 */
export function mhaWeights(E) {
  const lim = Math.sqrt(6 / (E + E)); // Xavier uniform
  const w = (seed) => rand(E * E, seed, -lim, lim);
  const b = (seed) => rand(E, seed, -0.1, 0.1);
  return { wq: w(101), bq: b(102), wk: w(103), bk: b(104), wv: w(105), bv: b(106), wo: w(107), bo: b(108) };
}

/** Inputs of one case: { name: Float32Array } (see CASES for the names). */
export function caseInputs(c) {
  switch (c.kind) {
    case 'mha':
      return c.lq === c.lk
        ? { x: rand(c.B * c.lq * c.E, 11, -1, 1) }
        : { q: rand(c.B * c.lq * c.E, 12, -1, 1), kv: rand(c.B * c.lk * c.E, 13, -1, 1) };
    case 'kvdecode':
      return { xPast: rand(c.B * c.past * c.E, 17, -1, 1), x: rand(c.B * c.E, 18, -1, 1) };
    case 'sdpa':
      return {
        q: rand(c.B * c.H * c.lq * c.D, 14, -1, 1),
        k: rand(c.B * c.H * c.lk * c.D, 15, -1, 1),
        v: rand(c.B * c.H * c.lk * c.D, 16, -1, 1),
      };
    case 'gqa':
      return {
        q: rand(c.B * c.H * c.lq * c.D, 41, -1, 1),
        k: rand(c.B * c.Hkv * c.lk * c.D, 42, -1, 1),
        v: rand(c.B * c.Hkv * c.lk * c.D, 43, -1, 1),
      };
    case 'gemm':
      return { a: rand(c.M * c.K, 21, -1, 1), b: rand(c.K * c.N, 22, -1, 1) };
    case 'layernorm':
      return { x: rand(c.rows * c.dim, 31, -2, 2), gamma: rand(c.dim, 32, 0.5, 1.5), beta: rand(c.dim, 33, -0.5, 0.5) };
    case 'pe':
      return { pos: Float32Array.from({ length: c.L }, (_, i) => i) };
    default:
      return {};
  }
}

/**
 * The cached keys and values of a kvdecode case, [B, H, past, D] each: the K
 * and V projections (keras weights, with bias) of its `xPast` tokens,
 * computed in float64 and rounded once. The peers are handed these; ours
 * builds its cache by projecting the same tokens.
 */
export function pastKV(c) {
  const { B, E, H, past } = c;
  const D = E / H;
  const W = mhaWeights(E);
  const { xPast } = caseInputs(c);
  const out = { k: new Float32Array(B * H * past * D), v: new Float32Array(B * H * past * D) };
  const row = new Float64Array(E);
  for (const [name, w, bias] of [['k', W.wk, W.bk], ['v', W.wv, W.bv]]) {
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < past; t++) {
        row.fill(0);
        const x = xPast.subarray((b * past + t) * E, (b * past + t + 1) * E);
        for (let i = 0; i < E; i++) {
          const xi = x[i];
          for (let j = 0; j < E; j++) row[j] += xi * w[i * E + j];
        }
        for (let j = 0; j < E; j++) {
          const h = Math.floor(j / D);
          out[name][((b * H + h) * past + t) * D + (j % D)] = row[j] + bias[j];
        }
      }
    }
  }
  return out;
}

/** 1/base^(2i/d) for i < ceil(d/2), rounded to float32 (fed to the peers). */
export function peInvFreq(d, base = 10000) {
  const half = Math.ceil(d / 2);
  return Float32Array.from({ length: half }, (_, i) => Math.pow(base, -(2 * i) / d));
}

export const LN_EPS = 1e-5;

// ---- cases -------------------------------------------------------------------

const mha = (B, L, E, H, needWeights, extra = {}) => ({
  id: `mha-${B}x${L}x${E}h${H}${needWeights ? '-w' : ''}`,
  kind: 'mha', B, lq: L, lk: L, E, H, causal: true, needWeights,
  label: `MHA [${B},${L},${E},H${H}] causal${needWeights ? ' +weights' : ''}`,
  ...extra,
});

/**
 * Every case. `quick: false` marks what --quick leaves out; `long` is the
 * long-sequence run (ours only, --long / default when enabled).
 */
export const CASES = [
  mha(2, 5, 512, 8, false),
  mha(1, 128, 512, 8, false),
  mha(1, 512, 768, 12, false),
  mha(2, 5, 512, 8, true, { quick: false }),
  mha(1, 128, 512, 8, true, { quick: false }),
  mha(1, 512, 768, 12, true, { quick: false }),
  {
    id: 'decode-kv-1x512h8-p511', kind: 'kvdecode', B: 1, past: 511, E: 512, H: 8,
    label: 'MHA decode step with KV cache: 1 new token + 511 cached (Lk=512) E512 H8',
  },
  {
    id: 'decode-1x1x512h8-k512', kind: 'mha', B: 1, lq: 1, lk: 512, E: 512, H: 8, causal: false, needWeights: false,
    label: 'MHA Lq=1 over Lk=512 keys projected in every call (no cache) E512 H8',
  },
  {
    id: 'sdpa-decode-h8-k512', kind: 'sdpa', B: 1, H: 8, lq: 1, lk: 512, D: 64, causal: false, needWeights: false,
    label: 'SDPA decode Lq=1 Lk=512 H8 D64 (KV cached)',
  },
  // Llama-style GQA (Hq 32, Hkv 8, D 128) on projected heads; a sliding window.
  {
    id: 'gqa-decode-h32kv8-d128-k2048', kind: 'gqa', B: 1, H: 32, Hkv: 8, lq: 1, lk: 2048, D: 128,
    label: 'GQA decode step H32/Hkv8 D128 over 2048 keys (2047 cached + 1)',
  },
  {
    id: 'gqa-prefill-h32kv8-d128-l512', kind: 'gqa', B: 1, H: 32, Hkv: 8, lq: 512, lk: 512, D: 128, quick: false,
    label: 'GQA prefill causal H32/Hkv8 D128 L512',
  },
  {
    id: 'gqa-window512-h8kv2-d64-l8192', kind: 'gqa', B: 1, H: 8, Hkv: 2, lq: 8192, lk: 8192, D: 64, window: 512, quick: false,
    label: 'sliding window 512, causal, H8/Hkv2 D64 L8192',
  },
  { id: 'gemm-128x512x512', kind: 'gemm', M: 128, K: 512, N: 512, label: 'GEMM M128 K512 N512' },
  { id: 'gemm-128x512x1536', kind: 'gemm', M: 128, K: 512, N: 1536, label: 'GEMM M128 K512 N1536' },
  { id: 'gemm-512x768x768', kind: 'gemm', M: 512, K: 768, N: 768, label: 'GEMM M512 K768 N768' },
  // The decoding GEMV of a loaded model's projection (benchGemv: the weight
  // store's F32/F16 panels or GGML blocks, through the models' linear driver):
  // GPT-2 small's MLP up-projection and its LM head, one token.
  ...['F32', 'F16', 'Q8_0', 'Q4_0'].flatMap((weights) => [[768, 3072], [768, 50257]].map(([K, N]) => ({
    id: `gemv-1x${K}x${N}-${weights.toLowerCase()}`, kind: 'gemv', M: 1, K, N, weights,
    label: `GEMV decode 1×${K} · [${N},${K}]ᵀ ${weights} (${(gemvWeightBytes(weights, N, K) / 2 ** 20).toFixed(1)} MiB of weights a call)`,
  }))),
  { id: 'layernorm-128x512', kind: 'layernorm', rows: 128, dim: 512, label: 'LayerNorm [128,512]' },
  { id: 'pe-512x512', kind: 'pe', L: 512, D: 512, label: 'PosEnc [512,512]' },
  { id: 'ceiling', kind: 'ceiling', label: 'ceiling f32x4 mul+add' },
  {
    id: 'mha-long-1x16384x512h8', kind: 'mha', B: 1, lq: 16384, lk: 16384, E: 512, H: 8, causal: true, needWeights: false,
    long: true, label: 'MHA [1,16384,512,H8] causal',
  },
];

/** Bytes of W [N, K] as benchGemv holds it (the bytes a decoding step reads). */
export function gemvWeightBytes(weights, N, K) {
  return N * K * { F32: 4, F16: 2, Q8_0: 34 / 32, Q4_0: 18 / 32 }[weights];
}

export const caseById = (id) => {
  const c = CASES.find((x) => x.id === id);
  if (!c) throw new Error(`unknown case ${id}`);
  return c;
};

/** FLOPs of one call (a multiply-add counts 2; softmax/LN/PE counted by element). */
export function caseFlops(c) {
  switch (c.kind) {
    case 'mha': {
      const proj = 2 * c.B * (2 * c.lq + 2 * c.lk) * c.E * c.E; // Q, O on Lq rows; K, V on Lk rows
      let pairs = c.lq * c.lk;
      if (c.causal) pairs = Array.from({ length: c.lq }, (_, i) => Math.min(i + 1, c.lk)).reduce((a, b) => a + b, 0);
      return proj + 2 * 2 * c.B * pairs * c.E; // QKᵀ and P·V over all heads
    }
    case 'kvdecode': // Q, K, V, O of one token; QKᵀ and P·V over past + 1 keys
      return 2 * c.B * 4 * c.E * c.E + 2 * 2 * c.B * (c.past + 1) * c.E;
    case 'sdpa':
      return 2 * 2 * c.B * c.H * c.lq * c.lk * c.D;
    case 'gqa': { // causal bottom-right (decode: every key), optional window
      let pairs = 0;
      for (let i = 0; i < c.lq; i++) {
        const hi = c.lk - c.lq + i + 1;
        pairs += c.window ? Math.min(hi, c.window + 1) : hi;
      }
      return 2 * 2 * c.B * c.H * pairs * c.D;
    }
    case 'gemm':
    case 'gemv':
      return 2 * c.M * c.N * c.K;
    case 'layernorm':
      return 8 * c.rows * c.dim;
    case 'pe':
      return c.L * c.D; // one transcendental per element (not GFLOP-comparable)
    default:
      return 0;
  }
}

// ---- implementations -------------------------------------------------------

// ---- threads ----------------------------------------------------------------
// A '-t<N>' suffix runs an implementation on N threads: ours with
// init({ threads: N }), ORT with env.wasm.numThreads = N (Node mode; the
// driver pins those processes to N cores). Without it, one thread.

/** The cases with rows by thread count (issue 14's shapes). */
export const THREAD_CASES = ['mha-1x512x768h12', 'mha-1x128x512h8', 'mha-2x5x512h8'];

/** Threads of an implementation name ('ours-simd-t2' → 2; 'ours-simd' → 1). */
export function threadsOf(impl) {
  const m = /-t(\d+)$/.exec(impl);
  return m ? Number(m[1]) : 1;
}

/** The implementation without its thread suffix ('ort-attn-t2' → 'ort-attn'). */
export function baseImpl(impl) {
  return impl.replace(/-t\d+$/, '');
}

/**
 * Which implementation variants apply to a case (ours + peers); `threads`:
 * the thread counts (> 1) to add for THREAD_CASES (ours SIMD and ORT's fused
 * Attention), in Node mode.
 */
export function implsFor(c, { browser = false, threads = [], baseline = false } = {}) {
  const base = implsFor1(c, { browser });
  // --baseline: ours wasm SIMD built from an earlier revision, beside ours.
  if (baseline && !browser && !c.long && BASELINE_KINDS.includes(c.kind)) base.splice(1, 0, 'ours-simd-base');
  if (browser || !THREAD_CASES.includes(c.id)) return base;
  return [...base, ...threads.flatMap((n) => [`ours-simd-t${n}`, `ort-attn-t${n}`])];
}

/**
 * The case kinds that a baseline build (bench.mjs --baseline) runs: what the
 * public API had before the attention variants (no GQA) and the bench module
 * (GEMM) existed.
 */
export const BASELINE_KINDS = ['mha', 'sdpa', 'kvdecode', 'layernorm', 'pe'];

function implsFor1(c, { browser }) {
  const ours = ['ours-simd', 'ours-scalar', ...(browser ? ['ours-webgpu'] : [])];
  if (c.long) return ['ours-simd'];
  switch (c.kind) {
    case 'mha':
      if (c.lq !== c.lk) return [...ours, 'ort-mha', 'ort-attn23', 'ort-ops', 'tfjs'];
      if (c.needWeights) return [...ours, 'ort-attn23', 'ort-ops', 'tfjs'];
      return [...ours, 'ort-attn', 'ort-mha', 'ort-attn23', 'ort-ops', 'tfjs'];
    case 'kvdecode':
      return [...ours, 'ort-mha', 'tfjs'];
    case 'gqa':
      return [...ours, 'ort-gqa'];
    case 'sdpa':
      return [...ours, 'ort-mha', 'ort-attn23', 'ort-ops', 'tfjs'];
    case 'gemm':
    case 'layernorm':
    case 'pe':
      return [...ours, 'ort-ops', 'tfjs'];
    case 'gemv':
      return ['ours-simd'];
    case 'ceiling':
      return ['ceiling'];
    default:
      return [];
  }
}

export const IMPL_LABEL = {
  'ours-simd': 'ours wasm SIMD',
  'ours-scalar': 'ours wasm scalar',
  'ours-webgpu': 'ours webgpu',
  'ours-simd-base': 'ours wasm SIMD (baseline)', // bench.mjs --baseline names the revision
  'ort-attn': 'ORT com.microsoft.Attention',
  'ort-mha': 'ORT com.microsoft.MultiHeadAttention',
  'ort-attn23': 'ORT onnx Attention (opset 23)',
  'ort-gqa': 'ORT com.microsoft.GroupQueryAttention',
  'ort-ops': 'ORT plain ops',
  tfjs: 'tfjs-backend-wasm',
  ceiling: 'measured ceiling',
};
for (const n of [2, 3, 4, 8]) {
  IMPL_LABEL[`ours-simd-t${n}`] = `ours wasm SIMD, ${n} threads`;
  IMPL_LABEL[`ort-attn-t${n}`] = `ORT com.microsoft.Attention, ${n} thr`;
}

// ---- timing ----------------------------------------------------------------

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const now = () => performance.now();
// CPU time of this process in ms (Node only): with the process pinned to one
// core, cpu / wall over the timed loop is the share of that core it got.
const cpuNow = typeof process !== 'undefined' && process.cpuUsage
  ? () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
  : null;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `run` (sync or async) for `forMs` (at least `minCalls` times; at most
 * 50 calls unless `longWarmup`; one call when it alone outlasts `budgetMs`).
 * `idleMs`: a pause halfway, so that an engine's background compilation of
 * optimized code gets the (pinned) core; calls before it finishes run slower
 * code.
 */
async function warmUp(run, { forMs, minCalls, budgetMs, idleMs, longWarmup }) {
  for (const part of idleMs > 0 ? [0.5, 0.5] : [1]) {
    const tw = now();
    for (let i = 0; i < minCalls || (now() - tw < forMs * part && (i < 50 || longWarmup)); i++) {
      const r = run();
      if (r && typeof r.then === 'function') await r;
      if (i === 0 && now() - tw > budgetMs) break; // a slow call: one warm-up is enough
    }
    if (part === 0.5) await sleep(idleMs);
  }
}

/**
 * Times `call` (sync or async): warm-up for ~15% of the budget or `warmupMs`,
 * whichever is longer (at least `warmup` calls; `idleMs` as in warmUp), then
 * samples until the budget is spent and minRuns are in.
 */
export async function measure(call, { budgetMs = 1500, minRuns = 5, maxRuns = 500, warmup = 2, warmupMs = 0, idleMs = 0 } = {}) {
  await warmUp(call, { forMs: Math.max(budgetMs * 0.15, warmupMs), minCalls: warmup, budgetMs, idleMs, longWarmup: warmupMs > 0 });
  const times = [];
  const cpu = [];
  const t0 = now();
  while (times.length < minRuns || (now() - t0 < budgetMs && times.length < maxRuns)) {
    const ca = cpuNow?.();
    const a = now();
    const r = call();
    if (r && typeof r.then === 'function') await r;
    times.push(now() - a);
    if (cpuNow) cpu.push(cpuNow() - ca);
  }
  return summarize(times, cpu);
}

// median/min wall ms per call; with CPU times (Node): the median CPU ms per
// call and the share of the core the process got (cpu / wall).
function summarize(times, cpu) {
  const out = { median: median(times), min: Math.min(...times), runs: times.length };
  if (cpu.length) {
    out.cpuMedian = median(cpu);
    out.cpuShare = Math.min(1, cpu.reduce((a, b) => a + b, 0) / times.reduce((a, b) => a + b, 0));
  }
  return out;
}

/** Max |a - b| over two arrays of equal length (Infinity if they differ in length or hold NaN). */
export function maxAbsDiff(a, b) {
  if (!a || !b || a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

// ---- one measurement (Node child or browser page) ---------------------------

/** Shared by Node and the browser page: prepare, time, collect the outputs. */
export async function runOne(prepare, spec, env) {
  const c = caseById(spec.case);
  let h;
  try {
    h = await prepare(c, spec.impl, env);
  } catch (err) {
    if (err && err.skip) return { skip: err.message };
    return { error: String(err && err.stack || err) };
  }
  try {
    // Chromium compiles a module's optimized code on background threads after
    // it starts running; on the one pinned core they run only when the page's
    // thread is idle, and until then calls run slower code (measured: MHA
    // [1,128,512] 12-16 ms for the first ~1 s of busy calls, then 7.7 ms).
    // Browser mode warms up for 600 ms with a 1.5 s pause in the middle, so
    // every implementation is timed in its steady state (Node runs --no-liftoff).
    const browser = env.mode === 'browser';
    const warmupMs = spec.warmupMs ?? (browser ? 600 : 0);
    const idleMs = spec.idleMs ?? (browser ? 1500 : 0);
    const opts = { budgetMs: spec.budgetMs ?? 1500, minRuns: spec.minRuns ?? 5, maxRuns: spec.maxRuns ?? 500, warmupMs, idleMs };
    if (h.warmup !== undefined) opts.warmup = h.warmup;
    const t = h.sample ? await measureSamples(h.sample, opts) : await measure(h.call, opts);
    const outputs = spec.dump ? await h.outputs?.() : undefined;
    const info = { ...(h.info ?? {}), ...(h.after ? await h.after() : {}) };
    return { ...t, flops: h.flops, info, outputs };
  } catch (err) {
    return { error: String(err && err.stack || err) };
  }
}

// For implementations that time themselves (benchGemm, the ceiling): each
// sample() returns milliseconds per call.
async function measureSamples(sample, { budgetMs, minRuns, maxRuns, warmupMs = 0, idleMs = 0 }) {
  await warmUp(sample, { forMs: warmupMs, minCalls: 1, budgetMs, idleMs, longWarmup: true });
  const times = [];
  const cpu = [];
  const t0 = now();
  while (times.length < minRuns || (now() - t0 < budgetMs && times.length < maxRuns)) {
    const ca = cpuNow?.();
    const a = now();
    const ms = await sample();
    const wall = now() - a;
    times.push(ms);
    // CPU ms of the timed part: the sample's own time scaled by cpu/wall.
    if (cpuNow) cpu.push(ms * Math.min(1, (cpuNow() - ca) / wall));
  }
  return summarize(times, cpu);
}
