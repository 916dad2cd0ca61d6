// In-page checks of the webgpu backend, imported by tests/browser/webgpu.browser.mjs
// (and bench/webgpu-bench.mjs) on a page served by the harness. Every check
// runs the same call on webgpu and on wasm and returns plain data (max
// differences, labels); the Node side asserts.
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, D head dim.
import { init } from '/web/index.js';
import { createLab } from '/web/lib/lab.js';
import { createWebGpuBackend } from '/web/lib/webgpu-backend.js';

/** mulberry32: a small seeded generator. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomData(r, n, scale = 1) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (r() * 2 - 1) * scale;
  return a;
}

const pick = (r, list) => list[Math.floor(r() * list.length)];

/** max |a - b| and the worst index (Infinity on a length or NaN-pattern mismatch). */
export function maxDiff(a, b) {
  if (!a || !b) return a === b ? { abs: 0 } : { abs: Infinity, note: 'one side is null' };
  if (a.length !== b.length) return { abs: Infinity, note: `lengths ${a.length} vs ${b.length}` };
  let abs = 0;
  let at = -1;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]) !== Number.isNaN(b[i])) return { abs: Infinity, note: `NaN at ${i}: ${a[i]} vs ${b[i]}` };
    const d = Math.abs(a[i] - b[i]);
    if (d > abs || Number.isNaN(d)) {
      abs = d;
      at = i;
    }
  }
  return { abs, at, got: a[at], want: b[at] };
}

/** Both labs: webgpu (its backend created directly, with a wasm fallback) and wasm. */
export async function labs(options = {}) {
  const wasm = await init({ backend: 'wasm' });
  const backend = await createWebGpuBackend({ fallback: () => Promise.resolve(wasm._backend), ...options });
  if (!backend) throw new Error('no WebGPU adapter in this browser');
  return { gpu: createLab(backend), wasm, backend };
}

// ---- masks ------------------------------------------------------------------

function tensorMask(r, kind, shape, { negInf = false, emptyRow = false } = {}) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (kind === 'keep') data[i] = r() < 0.75 ? 1 : 0;
    else if (kind === 'block') data[i] = r() < 0.25 ? 1 : 0;
    else data[i] = negInf && r() < 0.2 ? -Infinity : (r() * 2 - 1) * 3;
  }
  if (emptyRow) {
    // The first row: every key masked (keep 0 / block 1 / additive -inf).
    const lk = shape[shape.length - 1];
    for (let j = 0; j < lk; j++) data[j] = kind === 'keep' ? 0 : kind === 'block' ? 1 : -Infinity;
  }
  return { kind, data, shape };
}

// A mask spec (or array of specs) for scores [B, H, Lq, Lk]; `unbatched` drops B.
function makeMask(r, form, { B, H, lq, lk, unbatched }) {
  const lengths = () => Array.from({ length: B }, (_, b) => (b === 0 && r() < 0.3 ? 0 : Math.floor(r() * (lk + 1))));
  const lead = unbatched ? [] : [B];
  switch (form) {
    case 'none': return undefined;
    case 'causal': return { kind: 'causal' };
    case 'padding': return { kind: 'padding', lengths: lengths() };
    case 'keep2d': return tensorMask(r, 'keep', [lq, lk], { emptyRow: true });
    case 'blockKey': return tensorMask(r, 'block', unbatched ? [1, 1, lk] : [B, 1, 1, lk]);
    case 'additiveFull': return tensorMask(r, 'additive', [...lead, H, lq, lk], { negInf: true, emptyRow: true });
    case 'additiveB1': return tensorMask(r, 'additive', unbatched ? [1, lq, lk] : [B, 1, lq, lk]);
    case 'causal+padding': return [{ kind: 'causal' }, { kind: 'padding', lengths: lengths() }];
    case 'causal+keep': return [{ kind: 'causal' }, tensorMask(r, 'keep', [lq, lk])];
    case 'padding+block': return [{ kind: 'padding', lengths: lengths() }, tensorMask(r, 'block', [lq, lk])];
    case 'all': return [{ kind: 'causal' }, { kind: 'padding', lengths: lengths() }, tensorMask(r, 'additive', [...lead, H, lq, lk], { negInf: true })];
    default: throw new Error(form);
  }
}

const MASK_FORMS = ['none', 'causal', 'padding', 'keep2d', 'blockKey', 'additiveFull', 'additiveB1', 'causal+padding', 'causal+keep', 'padding+block', 'all'];

// ---- parity ---------------------------------------------------------------

function randomWeights(r, E, kdim, vdim, bias, layout) {
  const w = {};
  const shape = (inD) => (layout === 'torch' ? [E, inD] : [inD, E]);
  for (const [key, inD] of [['wq', E], ['wk', kdim], ['wv', vdim], ['wo', E]]) {
    w[key] = { data: randomData(r, E * inD, Math.sqrt(3 / inD)), shape: shape(inD) };
  }
  if (bias) for (const key of ['bq', 'bk', 'bv', 'bo']) w[key] = randomData(r, E, 0.5);
  return w;
}

/**
 * Multi-head attention on both backends over `count` random configurations
 * (plus fixed edge cases): shapes not multiples of the 64 tiles, L = 1,
 * Lq ≠ Lk, odd E, kdim/vdim ≠ E, unbatched, every mask form, needWeights,
 * averageWeights, trace, both weight layouts.
 */
export async function mhaParity(seed = 1, count = 24) {
  const r = rng(seed);
  const { gpu, wasm, backend } = await labs();
  const fixed = [
    { B: 1, lq: 1, lk: 1, E: 8, H: 2, kdim: 8, vdim: 8 },
    { B: 2, lq: 70, lk: 70, E: 72, H: 8, kdim: 72, vdim: 72 },
    { B: 1, lq: 130, lk: 65, E: 40, H: 4, kdim: 13, vdim: 7 },
    { B: 3, lq: 5, lk: 131, E: 15, H: 3, kdim: 15, vdim: 33 },
    { B: 1, lq: 64, lk: 64, E: 64, H: 1, kdim: 64, vdim: 64 },
  ];
  const cases = [];
  for (let c = 0; c < fixed.length + count; c++) {
    const H = pick(r, [1, 2, 3, 4, 8]);
    const D = pick(r, [1, 3, 5, 8, 9, 16]);
    const base = c < fixed.length ? fixed[c] : {
      B: pick(r, [1, 2, 3]), lq: pick(r, [1, 2, 17, 33, 64, 70]), lk: pick(r, [1, 3, 17, 63, 66, 100]),
      E: H * D, H, kdim: H * D, vdim: H * D,
    };
    if (c >= fixed.length && r() < 0.35) { base.kdim = pick(r, [3, 7, 20]); base.vdim = pick(r, [5, 11, 24]); }
    const self = c >= fixed.length && r() < 0.3 && base.kdim === base.E && base.vdim === base.E;
    if (self) base.lk = base.lq;
    const unbatched = base.B === 1 && r() < 0.3;
    const bias = r() < 0.75;
    const form = MASK_FORMS[c % MASK_FORMS.length];
    const needWeights = c % 3 !== 1;
    const averageWeights = needWeights && c % 4 === 0;
    const layout = r() < 0.5 ? 'torch' : 'keras';
    const setWeights = c % 5 !== 2;
    cases.push({ ...base, self, unbatched, bias, form, needWeights, averageWeights, layout, setWeights, trace: c % 6 === 0 });
  }
  const results = [];
  for (const k of cases) {
    const { B, lq, lk, E, H, kdim, vdim } = k;
    const lead = k.unbatched ? [] : [B];
    const query = { data: randomData(r, B * lq * E, 1.5), shape: [...lead, lq, E] };
    const key = k.self ? query : { data: randomData(r, B * lk * kdim, 1.5), shape: [...lead, lk, kdim] };
    const value = k.self ? query : { data: randomData(r, B * lk * vdim, 1.5), shape: [...lead, lk, vdim] };
    const mask = makeMask(r, k.form, { B, H, lq, lk, unbatched: k.unbatched });
    const weights = k.setWeights ? randomWeights(r, E, kdim, vdim, k.bias, k.layout) : null;
    const cfg = { embedDim: E, numHeads: H, kdim, vdim, bias: k.bias, seed: 7 + results.length };
    const outs = [];
    for (const lab of [gpu, wasm]) {
      const m = lab.multiHeadAttention(cfg);
      if (weights) m.setWeights(weights, { layout: k.layout });
      const before = backend.counters();
      const o = await m.forward(query, key, value, { mask, needWeights: k.needWeights, averageWeights: k.averageWeights, trace: k.trace });
      const after = backend.counters();
      o.submissions = after.submissions - before.submissions;
      o.readbacks = after.readbacks - before.readbacks;
      o.readbackBytes = after.readbackBytes - before.readbackBytes;
      o.getWeights = m.getWeights({ layout: k.layout });
      outs.push(o);
      m.dispose();
    }
    const [g, w] = outs;
    let weightsExact = true;
    for (const name of Object.keys(w.getWeights)) {
      const d = maxDiff(g.getWeights[name].data, w.getWeights[name].data);
      if (d.abs !== 0 || JSON.stringify(g.getWeights[name].shape) !== JSON.stringify(w.getWeights[name].shape)) weightsExact = false;
    }
    const expectedRead = 4 * (g.output.data.length + (g.weights ? g.weights.data.length : 0));
    results.push({
      label: `mha B${B} Lq${lq} Lk${lk} E${E} H${H} kdim${kdim} vdim${vdim}${k.unbatched ? ' unbatched' : ''}${k.self ? ' self' : ''} mask=${k.form} needWeights=${k.needWeights} avg=${k.averageWeights} bias=${k.bias} ${k.setWeights ? k.layout : 'default-init'}`,
      output: maxDiff(g.output.data, w.output.data),
      weights: maxDiff(g.weights?.data ?? null, w.weights?.data ?? null),
      shapes: JSON.stringify([g.output.shape, g.weights?.shape]) === JSON.stringify([w.output.shape, w.weights?.shape]),
      trace: JSON.stringify(g.trace) === JSON.stringify(w.trace),
      weightsExact,
      oneSubmission: g.submissions === 1 && g.readbacks === 1 && g.readbackBytes === expectedRead,
    });
  }
  return { results, backend: gpu.backend, kernelArch: gpu.kernelArch, stats: backend.poolStats(), fallbackCalls: backend.counters().fallbackCalls };
}

/** scaledDotProductAttention and selfAttention on both backends. */
export async function sdpaParity(seed = 2, count = 16) {
  const r = rng(seed);
  const { gpu, wasm, backend } = await labs();
  const results = [];
  const fixed = [
    { lead: [], lq: 1, lk: 1, d: 1, dv: 1 },
    { lead: [2, 3], lq: 9, lk: 70, d: 5, dv: 130 },
    { lead: [2], lq: 65, lk: 3, d: 67, dv: 3 },
    { lead: [1, 2, 2], lq: 17, lk: 17, d: 8, dv: 8 },
  ];
  for (let c = 0; c < fixed.length + count; c++) {
    const k = c < fixed.length ? fixed[c] : {
      lead: pick(r, [[], [2], [3], [2, 2], [1, 3]]), lq: pick(r, [1, 4, 31, 64, 65]), lk: pick(r, [1, 2, 40, 64, 97]),
      d: pick(r, [1, 3, 7, 16, 33]), dv: pick(r, [1, 6, 64, 70]),
    };
    const n = k.lead.reduce((a, b) => a * b, 1);
    const q = { data: randomData(r, n * k.lq * k.d, 2), shape: [...k.lead, k.lq, k.d] };
    const kk = { data: randomData(r, n * k.lk * k.d, 2), shape: [...k.lead, k.lk, k.d] };
    const v = { data: randomData(r, n * k.lk * k.dv, 2), shape: [...k.lead, k.lk, k.dv] };
    // Masks read the leading dims as [B, H]: rank 3 → H = 1, rank ≥ 4 → H = last lead dim.
    const B = k.lead.length <= 1 ? (k.lead[0] ?? 1) : k.lead.slice(0, -1).reduce((a, b) => a * b, 1);
    const H = k.lead.length <= 1 ? 1 : k.lead[k.lead.length - 1];
    let form = MASK_FORMS[c % MASK_FORMS.length];
    if (k.lead.length !== 2 && /additiveFull|blockKey|additiveB1|all/.test(form)) form = 'causal+padding';
    const mask = makeMask(r, form, { B, H, lq: k.lq, lk: k.lk, unbatched: false });
    const opts = { mask, needWeights: c % 3 !== 2 };
    if (c % 4 === 1) opts.scale = 0.3;
    const [g, w] = [await gpu.scaledDotProductAttention(q, kk, v, opts), await wasm.scaledDotProductAttention(q, kk, v, opts)];
    results.push({
      label: `sdpa lead[${k.lead}] Lq${k.lq} Lk${k.lk} D${k.d} Dv${k.dv} mask=${form} needWeights=${opts.needWeights} scale=${opts.scale ?? 'default'}`,
      output: maxDiff(g.output.data, w.output.data),
      weights: maxDiff(g.weights?.data ?? null, w.weights?.data ?? null),
      shapes: JSON.stringify([g.output.shape, g.weights?.shape]) === JSON.stringify([w.output.shape, w.weights?.shape]),
    });
  }
  for (const [shape, mask] of [[[7, 5], undefined], [[2, 33, 12], { kind: 'causal' }], [[1, 70, 3], { kind: 'padding', lengths: [40] }], [[66, 9], [{ kind: 'causal' }]]]) {
    const x = { data: randomData(r, shape.reduce((a, b) => a * b, 1), 1.5), shape };
    const [g, w] = [await gpu.selfAttention(x, { mask }), await wasm.selfAttention(x, { mask })];
    results.push({
      label: `selfAttention [${shape}] mask=${JSON.stringify(mask ?? null)}`,
      output: maxDiff(g.output.data, w.output.data),
      weights: maxDiff(g.weights.data, w.weights.data),
      shapes: JSON.stringify([g.output.shape, g.weights.shape]) === JSON.stringify([w.output.shape, w.weights.shape]),
    });
  }
  return { results, backend: gpu.backend, fallbackCalls: backend.counters().fallbackCalls };
}

/** positionalEncoding, the layer (eval and training), dropout bit-exactness, errors, forwardSync. */
export async function layerAndMisc(seed = 3) {
  const r = rng(seed);
  const { gpu, wasm, backend } = await labs();
  const out = { pe: [], layer: [], misc: {} };
  for (const [L, E, base] of [[1, 1], [7, 33], [300, 64], [2048, 6], [50, 16, 100]]) {
    const [g, w] = [await gpu.positionalEncoding(L, E, base ? { base } : undefined), wasm.positionalEncoding(L, E, base ? { base } : undefined)];
    out.pe.push({ label: `pe ${L}x${E} base ${base ?? 10000}`, output: maxDiff(g.data, w.data), shapes: JSON.stringify(g.shape) === JSON.stringify(w.shape) });
  }

  const layerCases = [
    { B: 2, L: 19, E: 24, H: 4, dropout: 0.25, bias: true },
    { B: 1, L: 70, E: 40, H: 8, dropout: 0.5, bias: false, unbatched: true },
    { B: 3, L: 1, E: 6, H: 2, dropout: 0.1, bias: true },
    { B: 1, L: 65, E: 64, H: 4, dropout: 0, bias: true },
  ];
  for (const k of layerCases) {
    const cfg = { embedDim: k.E, numHeads: k.H, dropout: k.dropout, bias: k.bias, seed: 11 };
    const layers = [gpu.selfAttentionLayer(cfg), wasm.selfAttentionLayer(cfg)];
    const weights = randomWeights(r, k.E, k.E, k.E, k.bias, 'keras');
    weights.gamma = randomData(r, k.E, 1).map((v) => 1 + 0.5 * v);
    weights.beta = randomData(r, k.E, 0.3);
    for (const l of layers) l.setWeights(weights, { layout: 'keras' });
    const lead = k.unbatched ? [] : [k.B];
    const x = { data: randomData(r, k.B * k.L * k.E, 1.5), shape: [...lead, k.L, k.E] };
    const runs = [
      ['eval', { needWeights: true }],
      ['eval causal avg trace', { mask: { kind: 'causal' }, averageWeights: true, trace: true }],
      ['training dropoutSeed', { training: true, dropoutSeed: 123456789, needWeights: false }],
      ['training stream seed', { training: true, mask: { kind: 'padding', lengths: Array.from({ length: k.B }, () => Math.max(1, Math.floor(r() * k.L))) } }],
      ['training stream seed 2', { training: true, needWeights: false }],
    ];
    for (const [name, opts] of runs) {
      const [g, w] = [await layers[0].forward(x, opts), await layers[1].forward(x, opts)];
      out.layer.push({
        label: `layer B${k.B} L${k.L} E${k.E} H${k.H} p${k.dropout} bias=${k.bias}${k.unbatched ? ' unbatched' : ''}: ${name}`,
        output: maxDiff(g.output.data, w.output.data),
        weights: maxDiff(g.weights?.data ?? null, w.weights?.data ?? null),
        seeds: g.dropoutSeed === w.dropoutSeed,
        trace: JSON.stringify(g.trace) === JSON.stringify(w.trace),
      });
    }
    const gw = layers[0].getWeights({ layout: 'torch' });
    const ww = layers[1].getWeights({ layout: 'torch' });
    out.layer.push({ label: `layer E${k.E} getWeights`, weightsExact: Object.keys(ww).every((n) => maxDiff(gw[n].data, ww[n].data).abs === 0) });
    layers.forEach((l) => l.dispose());
  }

  // Dropout: the GPU mask equals the C++ DropoutUniform bit for bit.
  const n = 100003;
  const ones = new Float32Array(n).fill(1);
  const dropoutRuns = [];
  for (const [p, s] of [[0.1, 0], [0.5, 123456789], [0.9, 4294967295]]) {
    const y = await backend.dropout(ones, p, s);
    const keep = Math.fround(1 / Math.fround(1 - Math.fround(p)));
    let mismatches = 0;
    let dropped = 0;
    for (let i = 0; i < n; i++) {
      const want = wasm._backend.dropoutUniform(s, i) < Math.fround(p) ? 0 : keep;
      if (y[i] !== want) mismatches++;
      if (y[i] === 0) dropped++;
    }
    dropoutRuns.push({ p, seed: s, mismatches, rate: dropped / n });
  }
  out.misc.dropout = dropoutRuns;

  // addLayerNorm on the backend interface.
  const rows = 37;
  const dim = 70;
  const xs = randomData(r, rows * dim, 3);
  const res = randomData(r, rows * dim, 1);
  const gamma = randomData(r, dim, 1);
  const beta = randomData(r, dim, 1);
  out.misc.addLayerNorm = [
    maxDiff(await backend.addLayerNorm(rows, dim, xs, res, gamma, beta, 1e-5), wasm._backend.addLayerNorm(rows, dim, xs, res, gamma, beta, 1e-5)),
    maxDiff(await backend.addLayerNorm(rows, dim, xs, null, null, null, 1e-3), wasm._backend.addLayerNorm(rows, dim, xs, null, null, null, 1e-3)),
  ];

  // Validation errors are the same (lab.js validates before any backend).
  const errorOf = (fn) => { try { fn(); return 'no error'; } catch (e) { return `${e.name}: ${e.message}`; } };
  const rejectionOf = async (p) => { try { await p; return 'no error'; } catch (e) { return `${e.name}: ${e.message}`; } };
  out.misc.errors = {
    divisible: [errorOf(() => gpu.multiHeadAttention({ embedDim: 10, numHeads: 3 })), errorOf(() => wasm.multiHeadAttention({ embedDim: 10, numHeads: 3 }))],
    forwardShape: await Promise.all([gpu, wasm].map((lab) => rejectionOf(lab.multiHeadAttention({ embedDim: 8, numHeads: 2 }).forward({ data: new Float32Array(9), shape: [3, 3] })))),
    forwardSync: errorOf(() => gpu.multiHeadAttention({ embedDim: 8, numHeads: 2 }).forwardSync({ data: new Float32Array(8), shape: [1, 8] })),
    disposed: errorOf(() => { const m = gpu.multiHeadAttention({ embedDim: 8, numHeads: 2 }); m.dispose(); m.dispose(); m.getWeights(); }),
  };
  out.misc.shapeTrace = JSON.stringify(gpu.shapeTrace({ batch: 2, lq: 5, embedDim: 8, numHeads: 2, mask: true, layer: true })) ===
    JSON.stringify(wasm.shapeTrace({ batch: 2, lq: 5, embedDim: 8, numHeads: 2, mask: true, layer: true }));

  // Pool: the same shapes again allocate nothing new.
  const m = gpu.multiHeadAttention({ embedDim: 16, numHeads: 2 });
  const x = { data: randomData(r, 2 * 9 * 16), shape: [2, 9, 16] };
  await m.forward(x);
  const created = backend.poolStats().created;
  for (let i = 0; i < 3; i++) await m.forward(x);
  out.misc.poolReuse = { createdAgain: backend.poolStats().created - created, heldBytes: m.heldBytes() };
  m.dispose();
  const t0 = performance.now();
  await backend.warmUp();
  out.misc.warmUpMs = performance.now() - t0;
  out.misc.fallbackCalls = backend.counters().fallbackCalls;
  out.misc.refusesSoftware = (await createWebGpuBackend({ allowFallbackAdapter: false })) === null;
  out.misc.backend = gpu.backend;
  out.misc.kernelArch = gpu.kernelArch;
  out.misc.adapterInfo = backend.adapterInfo;
  return out;
}

/** Device loss mid-session: later (and in-flight) calls answer via wasm, events fire, nothing unhandled. */
export async function deviceLoss() {
  const unhandled = [];
  window.addEventListener('unhandledrejection', (e) => unhandled.push(String(e.reason && e.reason.stack || e.reason)));
  const lab = await init({ backend: 'webgpu' });
  const events = [];
  lab.addEventListener('devicelost', (e) => events.push(['devicelost', e.detail.reason]));
  const changed = new Promise((resolve) => lab.addEventListener('backendchange', (e) => { events.push(['backendchange', e.detail.from, e.detail.to]); resolve(); }));
  const before = { backend: lab.backend, kernelArch: lab.kernelArch };
  const r = rng(9);
  const mha = lab.multiHeadAttention({ embedDim: 24, numHeads: 4, seed: 3 });
  const w0 = randomWeights(r, 24, 24, 24, true, 'torch');
  mha.setWeights(w0, { layout: 'torch' });
  const layer = lab.selfAttentionLayer({ embedDim: 24, numHeads: 4, dropout: 0.2, seed: 5 });
  const x = { data: randomData(r, 2 * 10 * 24, 1.5), shape: [2, 10, 24] };
  const opts = { mask: { kind: 'causal' } };
  const gpuOut = await mha.forward(x, x, x, opts);
  const gpuLayer = await layer.forward(x, { training: true, dropoutSeed: 77 });
  const gpuPe = await lab.positionalEncoding(20, 8);

  const lost = lab._backend.simulateDeviceLoss();
  const inFlight = mha.forward(x, x, x, opts); // started as the device goes away
  await lost;
  await changed;
  const after = { backend: lab.backend, kernelArch: lab.kernelArch };
  const results = {
    inFlight: maxDiff((await inFlight).output.data, gpuOut.output.data),
    mha: maxDiff((await mha.forward(x, x, x, opts)).output.data, gpuOut.output.data),
    layer: maxDiff((await layer.forward(x, { training: true, dropoutSeed: 77 })).output.data, gpuLayer.output.data),
    pe: maxDiff((await lab.positionalEncoding(20, 8)).data, gpuPe.data),
    sdpa: (await lab.scaledDotProductAttention(x, x, x, { needWeights: false })).output.data.length,
  };
  // Weights set after the loss reach the wasm copy; new objects work too.
  mha.setWeights({ bo: new Float32Array(24).fill(1) });
  const shifted = await mha.forward(x, x, x, opts);
  // The output bias enters additively: expected = before - old bo + 1.
  results.setAfterLoss = maxDiff(shifted.output.data, gpuOut.output.data.map((v, i) => v - w0.bo[i % 24] + 1));
  const fresh = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
  results.fresh = (await fresh.forward({ data: new Float32Array(16).fill(0.5), shape: [2, 8] })).output.shape;
  results.counters = lab._backend.counters();
  mha.dispose();
  layer.dispose();
  fresh.dispose();
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { before, after, events, results, unhandled };
}

/** Buffers above the device's limits: a clear RangeError, and needWeights: false still works. */
export async function limits() {
  const cap = 2 ** 20; // 1 MiB bindings
  const { gpu, wasm, backend } = await labs({ limits: { maxStorageBufferBindingSize: cap } });
  const r = rng(4);
  const x = { data: randomData(r, 300 * 64), shape: [1, 300, 64] };
  const m = gpu.multiHeadAttention({ embedDim: 64, numHeads: 4, seed: 1 });
  const mw = wasm.multiHeadAttention({ embedDim: 64, numHeads: 4, seed: 1 });
  const out = { limit: backend.limits.maxStorageBufferBindingSize };
  try {
    await m.forward(x, x, x, { needWeights: true });
    out.weightsError = 'no error';
  } catch (e) {
    out.weightsError = `${e.name}: ${e.message}`;
  }
  const statsAfterError = backend.poolStats();
  out.noLeak = statsAfterError.idleBytes === statsAfterError.bytesAllocated;
  const ok = await m.forward(x, x, x, { needWeights: false });
  out.withoutWeights = maxDiff(ok.output.data, mw.forwardSync(x, x, x, { needWeights: false }).output.data);
  try {
    gpu.multiHeadAttention({ embedDim: 1024, numHeads: 8 });
    out.weightError = 'no error';
  } catch (e) {
    out.weightError = `${e.name}: ${e.message}`;
  }
  try {
    await gpu.scaledDotProductAttention({ data: new Float32Array(300 * 1000), shape: [300, 1000] }, { data: new Float32Array(300 * 1000), shape: [300, 1000] }, { data: new Float32Array(300 * 4), shape: [300, 4] }, { needWeights: false });
    out.inputError = 'no error';
  } catch (e) {
    out.inputError = `${e.name}: ${e.message}`;
  }
  out.backend = gpu.backend;
  out.fallbackCalls = backend.counters().fallbackCalls;
  return out;
}

/**
 * MHA [1, L, 512], H 8, without weights (causal): completes without any
 * buffer of L·L floats. With a causal mask the first `prefix` output rows
 * depend only on the first `prefix` positions, so they are checked against
 * wasm on that prefix.
 */
export async function longSequence(L = 8192, prefix = 200) {
  const { gpu, wasm, backend } = await labs();
  const E = 512;
  const r = rng(5);
  const x = { data: randomData(r, L * E, 1), shape: [1, L, E] };
  const m = gpu.multiHeadAttention({ embedDim: E, numHeads: 8, seed: 2 });
  backend.resetPoolStats();
  const t0 = performance.now();
  const o = await m.forward(x, x, x, { needWeights: false, mask: { kind: 'causal' } });
  const ms = performance.now() - t0;
  let finite = true;
  for (const v of o.output.data) if (!Number.isFinite(v)) { finite = false; break; }
  const mw = wasm.multiHeadAttention({ embedDim: E, numHeads: 8, seed: 2 });
  const xp = { data: x.data.slice(0, prefix * E), shape: [1, prefix, E] };
  const ref = mw.forwardSync(xp, xp, xp, { needWeights: false, mask: { kind: 'causal' } });
  return {
    ms,
    shape: o.output.shape,
    weights: o.weights,
    finite,
    prefix: maxDiff(o.output.data.slice(0, prefix * E), ref.output.data),
    stats: backend.poolStats(),
    lByL: L * L * 4,
    backend: gpu.backend,
    fallbackCalls: backend.counters().fallbackCalls,
  };
}

/** A WebGPU validation error (an internal failure) moves the backend to wasm; the call still answers. */
export async function gpuError() {
  const unhandled = [];
  window.addEventListener('unhandledrejection', (e) => unhandled.push(String(e.reason)));
  const { gpu, wasm, backend } = await labs();
  const events = [];
  gpu.addEventListener('backendchange', (e) => events.push([e.detail.from, e.detail.to, e.detail.reason]));
  const x = { data: Float32Array.from({ length: 2 * 9 * 16 }, (_, i) => Math.cos(i)), shape: [2, 9, 16] };
  const m = gpu.multiHeadAttention({ embedDim: 16, numHeads: 2 });
  const mw = wasm.multiHeadAttention({ embedDim: 16, numHeads: 2 });
  // Break the next pipeline: a bind group against a destroyed weight buffer is a validation error.
  m._obj.gpu.wq.buffer.destroy();
  const o = await m.forward(x);
  await new Promise((resolve) => setTimeout(resolve, 20));
  return {
    diff: maxDiff(o.output.data, mw.forwardSync(x).output.data),
    backend: gpu.backend,
    events,
    lostInfo: backend.lostInfo,
    unhandled,
  };
}

/**
 * Incremental decoding with a KV cache on the webgpu backend: the cached steps
 * run on the wasm backend (the cache lives in wasm memory) and must equal the
 * rows of one causal forward on the GPU; weights set after the cache was made
 * reach the wasm copy; the backend stays 'webgpu' and no backendchange fires.
 */
export async function kvCache(seed = 7) {
  const r = rng(seed);
  const { gpu, backend } = await labs();
  const events = [];
  gpu.addEventListener('backendchange', (e) => events.push(e.detail));
  const E = 16, H = 4, L = 7, B = 2;
  const m = gpu.multiHeadAttention({ embedDim: E, numHeads: H, seed: 5 });
  const cache = m.createKVCache({ maxLength: L, batch: B });
  m.setWeights(randomWeights(r, E, E, E, true, 'torch'));
  const x = randomData(r, B * L * E);
  const full = await m.forward({ data: x, shape: [B, L, E] }, undefined, undefined, { mask: { kind: 'causal' } });
  const rowsOf = (data, t0, n) => {
    const out = new Float32Array(B * n * E);
    for (let b = 0; b < B; b++) out.set(data.subarray((b * L + t0) * E, (b * L + t0 + n) * E), b * n * E);
    return out;
  };
  const diffs = [];
  let t0 = 0;
  for (const n of [4, 1, 1, 1]) {
    const xt = { data: rowsOf(x, t0, n), shape: [B, n, E] };
    const got = await m.forward(xt, undefined, undefined, { mask: { kind: 'causal' }, kvCache: cache });
    diffs.push({ label: `rows ${t0}..${t0 + n - 1}`, output: maxDiff(got.output.data, rowsOf(full.output.data, t0, n)), weightsShape: got.weights.shape });
    t0 += n;
  }
  const length = cache.length;
  const held = cache.heldBytes();
  cache.truncate(4);
  const afterTruncate = cache.length;
  cache.dispose();
  return {
    diffs, length, held, afterTruncate, events,
    backend: gpu.backend,
    forwardSyncError: (() => { try { m.forwardSync({ data: x.slice(0, B * E), shape: [B, 1, E] }); return null; } catch (e) { return String(e); } })(),
    fallbackCalls: backend.counters().fallbackCalls,
  };
}

// ---- trace: 'values' ----------------------------------------------------------

/**
 * forward(…, { trace: 'values' }) on the webgpu backend: every step of a
 * layer (causal mask, training dropout) and an SDPA call against the float64
 * reference (tests/reference/reference.mjs), computed on the GPU (no wasm
 * fallback call). Returns per-step max differences.
 */
export async function traceValues(seed = 8) {
  const ref = await import('/tests/reference/reference.mjs');
  const r = rng(seed);
  const { gpu, backend } = await labs();
  const B = 2, L = 5, E = 16, H = 4;
  const cfg = { embedDim: E, numHeads: H, dropout: 0.25 };
  const weights = randomWeights(r, E, E, E, true, 'torch');
  const gamma = randomData(r, E, 1).map((v) => 1 + 0.5 * v);
  const beta = randomData(r, E, 0.3);
  const x = { data: randomData(r, B * L * E, 1.5), shape: [B, L, E] };
  const layer = gpu.selfAttentionLayer(cfg);
  layer.setWeights({ ...weights, gamma, beta });
  const res = await layer.forward(x, { mask: { kind: 'causal' }, trace: 'values', training: true, dropoutSeed: 99 });
  const refW = {};
  for (const [k, v] of Object.entries(weights)) refW[k] = k[0] === 'b' ? { data: v, shape: [E] } : v;
  const exp = ref.forwardTraceReference(cfg, refW, x, x, x,
    { mask: { kind: 'causal' }, layer: { dropout: 0.25, training: true, dropoutSeed: 99, gamma: { data: gamma, shape: [E] }, beta: { data: beta, shape: [E] } } });
  const want = {
    input: x.data, linear_qkv: exp.q, split_heads: exp.heads.q, scores: exp.scores, mask: exp.masked, softmax: exp.weights,
    weighted_sum: exp.weighted, merge_heads: exp.context, output_linear: exp.attention, dropout: exp.dropout,
    residual: exp.residual, layer_norm: exp.output,
  };
  const steps = {};
  for (const s of res.trace) {
    const diff = maxDiff(s.value.data, want[s.step]);
    // Masked scores hold -1e9: compare relative to the magnitude.
    steps[s.step] = { ...diff, rel: diff.abs / Math.max(1, Math.abs(diff.want ?? 0)), shapeOk: JSON.stringify(s.value.shape) === JSON.stringify(s.shape) };
  }
  steps.k = maxDiff(res.trace.find((s) => s.step === 'linear_qkv').values.k.data, exp.k);

  const q = { data: randomData(r, 2 * 3 * 4 * 8), shape: [2, 3, 4, 8] };
  const k = { data: randomData(r, 2 * 3 * 6 * 8), shape: [2, 3, 6, 8] };
  const v = { data: randomData(r, 2 * 3 * 6 * 8), shape: [2, 3, 6, 8] };
  const sd = await gpu.scaledDotProductAttention(q, k, v, { mask: { kind: 'padding', lengths: [6, 3] }, trace: 'values', needWeights: false });
  const sdExp = ref.scaledDotProductAttention(q, k, v, { mask: { kind: 'padding', lengths: [6, 3] } });
  const sdpa = {
    steps: sd.trace.map((s) => s.step),
    softmax: maxDiff(sd.trace.find((s) => s.step === 'softmax').value.data, sdExp.weights.data),
    weightedSum: maxDiff(sd.trace.find((s) => s.step === 'weighted_sum').value.data, sdExp.output.data),
    weightsNull: sd.weights === null,
  };
  layer.dispose();
  return { steps, sdpa, counters: backend.counters(), backend: gpu.backend };
}

/**
 * Every op of the op table (web/lib/ops.js), with its entry's example, on
 * webgpu and on wasm; `gpu`: whether the call dispatched GPU work (the
 * webgpu backend answers the ops without a WGSL kernel from its wasm
 * backend: the same bits).
 */
export async function opTable() {
  const { OPS } = await import('/web/lib/ops.js');
  const { gpu, wasm, backend } = await labs();
  // Every Float32Array of a result (a tensor, { cos, sin }, an array), in key order.
  const arrays = (v) => (v instanceof Float32Array ? [v] : v && typeof v === 'object'
    ? Object.keys(v).sort().flatMap((k) => (k === 'shape' ? [] : arrays(v[k]))) : []);
  const out = [];
  for (const [name, entry] of Object.entries(OPS)) {
    const before = backend.counters().dispatches;
    const a = arrays(await gpu[name](...entry.example()));
    const onGpu = backend.counters().dispatches > before;
    const b = arrays(wasm[name](...entry.example()));
    out.push({ name, gpu: onGpu, arrays: a.length, diffs: a.map((x, i) => maxDiff(x, b[i])), sameCount: a.length === b.length });
  }
  return { ops: out, backend: gpu.backend };
}
