// In-page checks of the attention variants on the webgpu backend, imported by
// tests/browser/onnx-webgpu.browser.mjs on a page served by the harness:
//   onnxCases()          every ONNX Attention / RotaryEmbedding golden case of
//                        tests/golden/onnx/ through the public API (the mapping
//                        is tests/golden/onnx-cases.mjs, shared with Jest);
//   variantsVsReference(lab) combinations the ONNX set does not hold (GQA +
//                        window + softcap + ALiBi + padding, the flash path's
//                        skipped tiles, RoPE from computed tables, MHA with
//                        numKvHeads + rope) against the float64 reference.
// all() runs both on one page (SwiftShader compiles each pipeline once per
// page, the larger part of the time). Every check returns plain data; the
// Node side asserts.
import { init } from '/web/index.js';
import { createLab } from '/web/lib/lab.js';
import { createWebGpuBackend } from '/web/lib/webgpu-backend.js';
import * as ref from '/tests/reference/reference.mjs';
import { runCase } from '/tests/golden/onnx-cases.mjs';

async function gpuLab() {
  const wasm = await init({ backend: 'wasm' });
  const backend = await createWebGpuBackend({ fallback: () => Promise.resolve(wasm._backend) });
  if (!backend) throw new Error('no WebGPU adapter in this browser');
  return { gpu: createLab(backend), backend, wasm };
}

/** Both checks on one lab: { onnx, variants, ms }. */
export async function all() {
  const t0 = performance.now();
  const lab = await gpuLab();
  const onnx = await onnxCases(lab);
  const t1 = performance.now();
  const variants = await variantsVsReference(lab);
  return { onnx, variants, ms: { onnx: Math.round(t1 - t0), variants: Math.round(performance.now() - t1) } };
}

const getJson = async (url) => (await fetch(url)).json();

/** Runs every golden case on webgpu: [{ name, op, problems, jobs }] (jobs: GPU submissions of the case). */
export async function onnxCases({ gpu, backend } = {}) {
  if (!gpu) ({ gpu, backend } = await gpuLab());
  const t0 = performance.now();
  const index = await getJson('/tests/golden/onnx/index.json');
  const cases = await Promise.all(index.cases.map((name) => getJson(`/tests/golden/onnx/${name}.json`)));
  const t1 = performance.now();
  const results = [];
  for (const c of cases) {
    const before = backend.counters().jobs;
    let problems;
    try {
      problems = await runCase(gpu, c);
    } catch (err) {
      problems = [`threw ${err.name}: ${err.message}`];
    }
    results.push({ name: c.name, op: c.op, problems, jobs: backend.counters().jobs - before });
  }
  return {
    backend: gpu.backend, lost: backend.lostInfo, results, counters: backend.counters(),
    loadMs: Math.round(t1 - t0), casesMs: Math.round(performance.now() - t1),
  };
}

// ---- webgpu against the float64 reference -----------------------------------

function rand(rng, shape) {
  const t = ref.randomTensor(rng, shape);
  return { data: Float32Array.from(t.data), shape };
}

// { ok, abs } of a result against the reference (NaN anywhere fails).
function close(got, want, tol = { abs: 2e-5, rel: 1e-4 }) {
  const r = ref.compareClose(got.data, want.data, tol);
  const nan = Array.prototype.some.call(got.data, Number.isNaN);
  return { ok: r.ok && !nan, abs: r.maxAbsErr, worst: r.ok ? null : [r.worstIndex, r.worstActual, r.worstExpected], nan };
}

export async function variantsVsReference({ gpu, backend, wasm } = {}) {
  if (!gpu) ({ gpu, backend, wasm } = await gpuLab());
  const rng = ref.mulberry32(2411);
  // Odd sizes: B 2, H 6, Hkv 2 (GQA) or 1 (MQA), Lq 7, Lk 11, D 5, Dv 3.
  const Q = rand(rng, [2, 6, 7, 5]);
  const K = rand(rng, [2, 2, 11, 5]);
  const V = rand(rng, [2, 2, 11, 3]);
  const K1 = rand(rng, [2, 1, 11, 5]);
  const V1 = rand(rng, [2, 1, 11, 3]);
  const add = rand(rng, [1, 6, 7, 11]);
  const slopes = [0.5, 0.25, 0.1, 0.05, 0.3, 0.9];
  const cases = [
    {
      name: 'GQA + window (3, 1) bottom-right + softcap + padding, maskFill -Infinity',
      k: K, v: V,
      opts: { softcap: 0.7, maskFill: -Infinity, mask: [{ kind: 'window', left: 3, right: 1, align: 'bottom-right' }, { kind: 'padding', lengths: [11, 6] }] },
      refOpts: { softcap: 0.7, fill: -Infinity, window: { left: 3, right: 1, align: 'bottom-right' }, lengths: [11, 6] },
    },
    {
      name: 'MQA + causal and window with offset 4 + ALiBi default slopes',
      k: K1, v: V1,
      opts: { maskFill: -Infinity, mask: [{ kind: 'causal', offset: 4 }, { kind: 'window', left: 1, offset: 4 }, { kind: 'alibi' }] },
      refOpts: { fill: -Infinity, causal: 'top-left', causalOffset: 4, window: { left: 1, right: -1, offset: 4 }, slopes: ref.alibiSlopes(6) },
    },
    {
      name: 'GQA + ALiBi given slopes + additive mask + softcap + causal bottom-right (default fill)',
      k: K, v: V,
      opts: { softcap: 1.5, mask: [{ kind: 'alibi', slopes }, { kind: 'additive', data: add.data, shape: add.shape }, { kind: 'causal', align: 'bottom-right' }] },
      refOpts: { softcap: 1.5, slopes: slopes.map(Math.fround), tensor: { kind: 'additive', ...add }, causal: 'bottom-right' },
    },
    {
      name: 'fully masked rows: zeros with -Infinity (softcap, bottom-right, lengths [0, 3])',
      k: K, v: V,
      opts: { softcap: 2, maskFill: -Infinity, mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'padding', lengths: [0, 3] }] },
      refOpts: { softcap: 2, fill: -Infinity, causal: 'bottom-right', lengths: [0, 3] },
    },
    {
      name: 'fully masked rows: uniform with the default fill (window right of every key)',
      k: K1, v: V1,
      opts: { mask: [{ kind: 'window', left: 0, right: 0, offset: 6 }] },
      refOpts: { window: { left: 0, right: 0, offset: 6 } },
    },
  ];
  const sdpa = [];
  for (const c of cases) {
    const want = ref.attentionModern(Q, c.k, c.v, c.refOpts);
    const r = await gpu.scaledDotProductAttention(Q, c.k, c.v, c.opts);
    const nw = await gpu.scaledDotProductAttention(Q, c.k, c.v, { ...c.opts, needWeights: false });
    sdpa.push({ name: c.name, output: close(r.output, want.output), weights: close(r.weights, want.weights), flash: close(nw.output, want.output) });
  }

  // The flash kernel's skipped key tiles (before and after a window, closed
  // form with a finite fill) on Lk 300: GQA 4/2, Lq 70 (two row blocks).
  const r2 = ref.mulberry32(5);
  const q = rand(r2, [1, 4, 70, 8]);
  const k = rand(r2, [1, 2, 300, 8]);
  const v = rand(r2, [1, 2, 300, 8]);
  const long = [
    { name: 'window (33, 0) bottom-right, -Infinity', opts: { mask: { kind: 'window', left: 33, right: 0, align: 'bottom-right' }, maskFill: -Infinity }, refOpts: { window: { left: 33, right: 0, align: 'bottom-right' }, fill: -Infinity } },
    { name: 'window (70, 5) top-left, default fill', opts: { mask: { kind: 'window', left: 70, right: 5 } }, refOpts: { window: { left: 70, right: 5 } } },
    { name: 'rows past the window, default fill (uniform)', opts: { mask: { kind: 'window', left: 0, right: 0, offset: 250 } }, refOpts: { window: { left: 0, right: 0, offset: 250 } } },
  ];
  const flash = [];
  for (const c of long) {
    const want = ref.attentionModern(q, k, v, c.refOpts);
    const r = await gpu.scaledDotProductAttention(q, k, v, { ...c.opts, needWeights: false });
    flash.push({ name: c.name, output: close(r.output, want.output) });
  }

  // trace: 'values' with softcap, window and ALiBi: every step on the GPU.
  const topts = { softcap: 0.8, maskFill: -Infinity, mask: [{ kind: 'causal', align: 'bottom-right' }, { kind: 'window', left: 3 }, { kind: 'alibi' }] };
  const twant = ref.attentionModern(Q, K, V, { softcap: 0.8, fill: -Infinity, causal: 'bottom-right', window: { left: 3, right: -1 }, slopes: ref.alibiSlopes(6) });
  const tr = await gpu.scaledDotProductAttention(Q, K, V, { ...topts, trace: 'values' });
  const step = (name) => tr.trace.find((t) => t.step === name).value;
  const trace = {
    steps: tr.trace.map((t) => t.step),
    scores: close(step('scores'), twant.scores), softcap: close(step('softcap'), twant.capped),
    mask: close(step('mask'), twant.masked), softmax: close(step('softmax'), twant.weights),
  };

  // RoPE: computed tables (positionIds, partial, interleaved), [B, L, H·D].
  const r3 = ref.mulberry32(9);
  const x4 = rand(r3, [2, 3, 5, 10]);
  const x3 = { data: x4.data, shape: [2, 5, 30] };
  const ids = [3, 0, 7, 2, 9, 1, 1, 4, 12, 5];
  const given = ref.rotaryCache(13, 4, 500);
  const rope = [];
  for (const [name, x, opts, refOpts] of [
    ['computed, full', x4, {}, {}],
    ['computed, positionIds, rotaryDim 6, interleaved', x4, { positionIds: ids, rotaryDim: 6, interleaved: true }, { positionIds: ids, rotaryDim: 6, interleaved: true }],
    ['[B, L, H·D], base 500, rotaryDim 4', x3, { numHeads: 3, base: 500, rotaryDim: 4 }, { numHeads: 3, base: 500, rotaryDim: 4 }],
    ['given tables at positionIds', x4, { positionIds: ids, rotaryDim: 4, cos: { data: Float32Array.from(given.cos.data), shape: given.cos.shape }, sin: { data: Float32Array.from(given.sin.data), shape: given.sin.shape } },
      { positionIds: ids, rotaryDim: 4, cos: Float32Array.from(given.cos.data), sin: Float32Array.from(given.sin.data) }],
  ]) {
    const got = await gpu.rotaryEmbedding(x, opts);
    rope.push({ name, y: close(got, ref.rotaryEmbedding(x, refOpts), { abs: 2e-6, rel: 1e-5 }) });
  }

  // MHA with numKvHeads + rope on the GPU, against the float64 reference.
  const E = 12;
  const L = 6;
  const mha = gpu.multiHeadAttention({ embedDim: E, numHeads: 6, numKvHeads: 2, rope: { rotaryDim: 2 }, seed: 3 });
  const w = mha.getWeights();
  const x = rand(ref.mulberry32(2), [1, L, E]);
  const jobs0 = backend.counters().jobs;
  const whole = await mha.forward(x, x, x, { mask: { kind: 'causal' } });
  const traced = await mha.forward(x, x, x, { mask: { kind: 'causal' }, trace: 'values' });
  const mhaJobs = backend.counters().jobs - jobs0;
  const W = Object.fromEntries(Object.entries(w).map(([key, t]) => [key, t.data]));
  const D = 2;
  const proj = (wt, bt, out) => ref.linearTorch(x.data, L, E, wt, bt, out);
  const heads = (d, H) => {
    const o = new Float64Array(H * L * D);
    for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) for (let c = 0; c < D; c++) o[(h * L + l) * D + c] = d[l * H * D + h * D + c];
    return { data: o, shape: [1, H, L, D] };
  };
  const qh = ref.rotaryEmbedding(heads(proj(W.wq, W.bq, E), 6), {});
  const kh = ref.rotaryEmbedding(heads(proj(W.wk, W.bk, 4), 2), {});
  const att = ref.attentionModern(qh, kh, heads(proj(W.wv, W.bv, 4), 2), { causal: 'top-left' });
  const ctx = new Float64Array(L * E);
  for (let h = 0; h < 6; h++) for (let l = 0; l < L; l++) for (let c = 0; c < D; c++) ctx[l * E + h * D + c] = att.output.data[(h * L + l) * D + c];
  const out = { data: ref.linearTorch(ctx, L, E, W.wo, W.bo, E), shape: [1, L, E] };
  const split = traced.trace.find((t) => t.step === 'split_heads').values.k; // [1, 6, L, 2]
  let kvShared = true;
  for (let l = 0; l < L; l++) for (let d = 0; d < D; d++) {
    kvShared &&= split.data[(1 * L + l) * D + d] === split.data[(0 * L + l) * D + d] && split.data[(5 * L + l) * D + d] === split.data[(3 * L + l) * D + d];
  }
  const mhaResult = {
    wkShape: w.wk.shape, output: close(whole.output, out), traced: close(traced.output, out), kvShared, jobs: mhaJobs,
  };
  mha.dispose();

  // Values the core refuses: the same error on webgpu as on wasm.
  const message = async (fn) => {
    try {
      await fn();
      return 'no error';
    } catch (err) {
      return `${err.name}: ${err.message}`;
    }
  };
  const bad = [
    ['softcap 0', (lab) => lab.scaledDotProductAttention(Q, K, V, { softcap: 0 })],
    ['window left -2', (lab) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'window', left: -2 } })],
    ['maskFill +Infinity', (lab) => lab.scaledDotProductAttention(Q, K, V, { maskFill: Infinity })],
    ['alibi slope NaN', (lab) => lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'alibi', slopes: [1, 1, NaN, 1, 1, 1] } })],
    ['rotaryDim 3', (lab) => lab.rotaryEmbedding(x4, { rotaryDim: 3 })],
    ['rotaryDim 12 > D', (lab) => lab.rotaryEmbedding(x4, { rotaryDim: 12 })],
    ['position beyond the table', (lab) => lab.rotaryEmbedding(x4, { positionIds: ids.map((i) => i + 4), rotaryDim: 4, cos: given.cos, sin: given.sin })],
  ];
  const errors = [];
  for (const [name, fn] of bad) errors.push({ name, gpu: await message(() => fn(gpu)), wasm: await message(() => fn(wasm)) });
  return { backend: gpu.backend, lost: backend.lostInfo, sdpa, flash, trace, rope, mha: mhaResult, errors, counters: backend.counters() };
}
