// The webgpu backend (SwiftShader's Vulkan in headless Chromium) against the
// wasm backend, on pages served by the harness under the strict CSP. The
// in-page checks live in pages/webgpu-checks.js; this file asserts.
//
// Tolerances (webgpu vs wasm, both float32 with different summation orders
// and exp implementations; inputs O(1), E ≤ 128). Observed on SwiftShader:
// ≤ 1.1e-6 outputs, ≤ 4e-7 weights, ≤ 2e-7 PE, ≤ 1e-6 layer; the bounds leave
// room for GPUs with faster, less exact exp and fused multiply-adds:
//   attention outputs (MHA, sdpa, selfAttention)   |Δ| ≤ 2e-5
//   attention weights                              |Δ| ≤ 5e-6
//   layer outputs (LayerNorm divides by the std)   |Δ| ≤ 5e-5
//   positional encoding (angle reduced in turns)   |Δ| ≤ 2e-6
//   addLayerNorm                                   |Δ| ≤ 1e-5
//   dropout mask, getWeights, default init         exact
// SwiftShader is slow (~1 GFLOP/s here): sizes are modest, and the pipelines
// are compiled once per page, so the parity checks share pages.
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { REPO_ROOT } from './harness.mjs';

const TOL = { output: 2e-5, weights: 5e-6, layer: 5e-5, pe: 2e-6, layerNorm: 1e-5 };
const CHECKS = '/tests/browser/pages/webgpu-checks.js';

async function onPage(h, fn, arg, { initScript } = {}) {
  const page = await h.newPage({ initScript });
  try {
    await page.goto(h.url('/tests/browser/pages/blank.html'));
    const result = await page.evaluate(async ([checks, name, a]) => (await import(checks))[name](...(a ?? [])), [CHECKS, fn, arg]);
    return { result, problems: page.problems() };
  } finally {
    await page.closeAll();
  }
}

function within(label, diff, tol) {
  assert.ok(diff && diff.abs <= tol, `${label}: |Δ| = ${diff && diff.abs} > ${tol} (${JSON.stringify(diff)})`);
}

export default function (t) {
  t.test('webgpu: web/lib/wgsl-sources.js is generated from web/webgpu/*.wgsl', async () => {
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'embed-wgsl.mjs'), '--check'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });

  t.test('webgpu: multiHeadAttention matches wasm (random shapes, every mask, weights, averageWeights, trace)', async (h) => {
    const { result, problems } = await onPage(h, 'mhaParity', [1, 24]);
    assert.equal(result.backend, 'webgpu');
    assert.match(result.kernelArch, /^webgpu \(.+\)$/);
    for (const r of result.results) {
      within(`${r.label} output`, r.output, TOL.output);
      within(`${r.label} weights`, r.weights, TOL.weights);
      assert.ok(r.shapes, `${r.label}: shapes differ`);
      assert.ok(r.trace, `${r.label}: trace differs`);
      assert.ok(r.weightsExact, `${r.label}: getWeights differs`);
      assert.ok(r.oneSubmission, `${r.label}: expected one submission and one readback of exactly output (+ weights)`);
    }
    assert.equal(result.fallbackCalls, 0, 'calls were answered by the wasm fallback');
    assert.equal(result.backend, 'webgpu');
    assert.deepEqual(problems, []);
  }, { timeout: 150000, long: true });

  t.test("webgpu: trace: 'values' — every step computed on the GPU equals the float64 reference", async (h) => {
    const { result, problems } = await onPage(h, 'traceValues', [8]);
    const s = result.steps;
    assert.deepEqual(Object.keys(s).filter((k) => k !== 'k'), ['input', 'linear_qkv', 'split_heads', 'scores', 'mask', 'softmax',
      'weighted_sum', 'merge_heads', 'output_linear', 'dropout', 'residual', 'layer_norm']);
    for (const [step, d] of Object.entries(s)) {
      if (d.shapeOk !== undefined) assert.ok(d.shapeOk, `${step}: value shape differs from the step's shape`);
      const tol = step === 'mask' ? 1e-4 : step === 'layer_norm' || step === 'residual' || step === 'dropout' ? TOL.layer : TOL.output;
      assert.ok((step === 'mask' ? d.rel : d.abs) <= tol, `${step}: |Δ| = ${d.abs} (${JSON.stringify(d)})`);
    }
    assert.deepEqual(result.sdpa.steps, ['scores', 'mask', 'softmax', 'weighted_sum']);
    within('sdpa softmax', result.sdpa.softmax, TOL.weights);
    within('sdpa weighted_sum', result.sdpa.weightedSum, TOL.output);
    assert.ok(result.sdpa.weightsNull);
    assert.equal(result.counters.fallbackCalls, 0, 'the trace was answered by the wasm fallback');
    assert.equal(result.backend, 'webgpu');
    assert.deepEqual(problems, []);
  }, { timeout: 120000, long: true });

  t.test('webgpu: scaledDotProductAttention and selfAttention match wasm', async (h) => {
    const { result, problems } = await onPage(h, 'sdpaParity', [2, 16]);
    for (const r of result.results) {
      within(`${r.label} output`, r.output, TOL.output);
      within(`${r.label} weights`, r.weights, TOL.weights);
      assert.ok(r.shapes, `${r.label}: shapes differ`);
    }
    assert.equal(result.fallbackCalls, 0, 'calls were answered by the wasm fallback');
    assert.equal(result.backend, 'webgpu');
    assert.deepEqual(problems, []);
  }, { timeout: 120000 });

  t.test('webgpu: positional encoding, layer (eval, training), dropout mask bit-exact, errors, pool reuse', async (h) => {
    const { result, problems } = await onPage(h, 'layerAndMisc', [3]);
    for (const r of result.pe) {
      within(r.label, r.output, TOL.pe);
      assert.ok(r.shapes, `${r.label}: shape differs`);
    }
    for (const r of result.layer) {
      if ('weightsExact' in r) {
        assert.ok(r.weightsExact, `${r.label}: differs`);
        continue;
      }
      within(`${r.label} output`, r.output, TOL.layer);
      within(`${r.label} weights`, r.weights, TOL.weights);
      assert.ok(r.seeds, `${r.label}: dropout seeds differ`);
      assert.ok(r.trace, `${r.label}: trace differs`);
    }
    const m = result.misc;
    for (const d of m.dropout) {
      assert.equal(d.mismatches, 0, `dropout p=${d.p} seed=${d.seed}: ${d.mismatches} elements differ from DropoutUniform`);
      assert.ok(Math.abs(d.rate - d.p) < 0.01, `dropout p=${d.p}: rate ${d.rate}`);
    }
    m.addLayerNorm.forEach((d, i) => within(`addLayerNorm #${i}`, d, TOL.layerNorm));
    assert.equal(m.errors.divisible[0], m.errors.divisible[1]);
    assert.match(m.errors.divisible[0], /^RangeError: .*embedDim \(10\).*numHeads \(3\)/);
    assert.equal(m.errors.forwardShape[0], m.errors.forwardShape[1]);
    // (The wrapper's error classes: TypeError for forwardSync on an async backend, DisposedError.)
    assert.match(m.errors.forwardSync, /^(Type)?Error: .*forwardSync:? (is )?not available on the 'webgpu' backend/);
    assert.match(m.errors.disposed, /^(Disposed)?Error: .*disposed/);
    assert.ok(m.shapeTrace, 'shapeTrace differs');
    assert.equal(m.poolReuse.createdAgain, 0, 'repeated forwards of the same shapes allocated new buffers');
    assert.ok(m.poolReuse.heldBytes > 0);
    assert.equal(m.backend, 'webgpu');
    assert.equal(m.fallbackCalls, 0, 'calls were answered by the wasm fallback');
    assert.equal(typeof m.adapterInfo.vendor, 'string');
    assert.equal(m.refusesSoftware, m.adapterInfo.isFallbackAdapter, 'allowFallbackAdapter: false should refuse exactly the software adapters');
    assert.deepEqual(problems, []);
  }, { timeout: 120000, long: true });

  t.test("webgpu: init({ backend: 'auto' }) without navigator.gpu gives wasm", async (h) => {
    const page = await h.newPage({ initScript: 'delete Navigator.prototype.gpu;' });
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const r = await page.evaluate(async () => {
        const { init } = await import('/web/index.js');
        const lab = await init({ backend: 'auto' });
        let webgpu = '';
        try { await init({ backend: 'webgpu' }); } catch (e) { webgpu = `${e.name}: ${e.message}`; }
        const o = await lab.multiHeadAttention({ embedDim: 8, numHeads: 2 }).forward({ data: new Float32Array(24).fill(1), shape: [3, 8] });
        return { gpu: 'gpu' in navigator, backend: lab.backend, webgpu, shape: o.output.shape };
      });
      assert.equal(r.gpu, false);
      assert.equal(r.backend, 'wasm');
      assert.deepEqual(r.shape, [3, 8]);
      assert.match(r.webgpu, /webgpu.*not available/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('webgpu: requestDevice rejecting falls back to wasm', async (h) => {
    const page = await h.newPage({ initScript: 'GPUAdapter.prototype.requestDevice = function () { return Promise.reject(new Error("simulated requestDevice failure")); };' });
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const r = await page.evaluate(async () => {
        const unhandled = [];
        window.addEventListener('unhandledrejection', (e) => unhandled.push(String(e.reason)));
        const { init } = await import('/web/index.js');
        const { createWebGpuBackend } = await import('/web/lib/webgpu-backend.js');
        const lab = await init({ backend: 'auto' });
        const direct = await createWebGpuBackend({});
        await new Promise((resolve) => setTimeout(resolve, 50));
        return { backend: lab.backend, direct, unhandled };
      });
      assert.equal(r.backend, 'wasm');
      assert.equal(r.direct, null);
      assert.deepEqual(r.unhandled, []);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('webgpu: device loss mid-session → later and in-flight calls answer via wasm, events fire, nothing unhandled', async (h) => {
    const { result: r, problems } = await onPage(h, 'deviceLoss');
    assert.equal(r.before.backend, 'webgpu');
    assert.equal(r.after.backend, 'wasm');
    assert.equal(r.after.kernelArch, 'sse4.1');
    assert.deepEqual(r.events, [['devicelost', 'destroyed'], ['backendchange', 'webgpu', 'wasm']]);
    within('in-flight forward', r.results.inFlight, TOL.output);
    within('mha after loss', r.results.mha, TOL.output);
    within('layer (training, dropoutSeed) after loss', r.results.layer, TOL.layer);
    within('positional encoding after loss', r.results.pe, TOL.pe);
    within('weights set after loss', r.results.setAfterLoss, TOL.output);
    assert.equal(r.results.sdpa, 2 * 10 * 24);
    assert.deepEqual(r.results.fresh, [2, 8]);
    assert.ok(r.results.counters.reruns >= 1, 'the in-flight call was not rerun on wasm');
    assert.ok(r.results.counters.fallbackCalls >= 6);
    assert.deepEqual(r.unhandled, []);
    assert.deepEqual(problems, []);
  }, { timeout: 60000 });

  t.test('webgpu: an internal WebGPU error moves the backend to wasm and the call still answers', async (h) => {
    const { result: r, problems } = await onPage(h, 'gpuError');
    within('output after the error', r.diff, TOL.output);
    assert.equal(r.backend, 'wasm');
    assert.deepEqual(r.events, [['webgpu', 'wasm', 'gpu-error']]);
    assert.match(r.lostInfo.message, /WebGPU validation error/);
    assert.deepEqual(r.unhandled, []);
    assert.deepEqual(problems, []);
  }, { timeout: 60000 });

  t.test('webgpu: a buffer above the device limits is a clear RangeError; needWeights: false still works', async (h) => {
    const { result: r, problems } = await onPage(h, 'limits');
    assert.equal(r.limit, 2 ** 20);
    assert.match(r.weightsError, /^RangeError: multiHeadAttention\.forward: the attention weights \[1,4,300,300\] needs 1\.4 MiB in one GPU buffer, above this device's maxStorageBufferBindingSize \(1\.0 MiB\); pass needWeights: false/);
    assert.ok(r.noLeak, 'buffers of the failed call were not returned to the pool');
    within('needWeights: false under the limit', r.withoutWeights, TOL.output);
    assert.match(r.weightError, /^RangeError: multiHeadAttention: wq \[1024,1024\] needs 4\.0 MiB .*maxStorageBufferBindingSize/);
    assert.match(r.inputError, /^RangeError: scaledDotProductAttention: q \[1,1,300,1000\] needs 1\.1 MiB/);
    assert.equal(r.backend, 'webgpu');
    assert.equal(r.fallbackCalls, 0);
    assert.deepEqual(problems, []);
  }, { timeout: 60000, long: true });

  t.test('webgpu: KV-cache decoding answers from wasm and equals one causal forward on the GPU', async (h) => {
    const { result: r, problems } = await onPage(h, 'kvCache');
    for (const d of r.diffs) {
      within(`${d.label} output`, d.output, TOL.output);
      assert.deepEqual(d.weightsShape.slice(0, 2), [2, 4]);
    }
    assert.deepEqual(r.diffs.map((d) => d.weightsShape[3]), [4, 5, 6, 7]);
    assert.equal(r.length, 7);
    assert.ok(r.held >= 2 * 2 * 7 * 16 * 4, `heldBytes ${r.held}`);
    assert.equal(r.afterTruncate, 4);
    assert.equal(r.backend, 'webgpu');
    assert.deepEqual(r.events, [], 'a backendchange event fired');
    assert.equal(r.fallbackCalls, 0, 'cached steps were counted as device-loss fallback calls');
    assert.match(r.forwardSyncError, /forwardSync:? (is )?not available on the 'webgpu' backend/);
    assert.deepEqual(problems, []);
  }, { timeout: 60000, long: true });

  // Ops answered by the wasm backend give the same bits; the WGSL kernels (positional encoding,
  // rotary embedding) compute O(1) values: within TOL.pe.
  t.test('webgpu: every op of the op table (web/lib/ops.js) answers and matches wasm', async (h) => {
    const { result: r, problems } = await onPage(h, 'opTable');
    assert.ok(r.ops.length >= 3, `only ${r.ops.length} ops`);
    assert.ok(r.ops.some((op) => op.gpu) && r.ops.some((op) => !op.gpu), JSON.stringify(r.ops.map((op) => [op.name, op.gpu])));
    for (const op of r.ops) {
      assert.ok(op.sameCount && op.arrays > 0, `${op.name}: ${op.arrays} result arrays`);
      for (const d of op.diffs) assert.ok(d.abs <= (op.gpu ? TOL.pe : 0), `${op.name} (${op.gpu ? 'GPU' : 'wasm'}): ${JSON.stringify(d)}`);
    }
    assert.equal(r.backend, 'webgpu');
    assert.deepEqual(problems, []);
  }, { timeout: 60000 });

  t.test('webgpu: MHA [1,8192,512] H8 without weights completes with no L·L buffer', async (h) => {
    const { result: r, problems } = await onPage(h, 'longSequence', [8192, 200]);
    assert.deepEqual(r.shape, [1, 8192, 512]);
    assert.equal(r.weights, null);
    assert.ok(r.finite, 'non-finite output');
    within('first 200 rows vs wasm on the 200-position prefix (causal)', r.prefix, TOL.output);
    assert.equal(r.backend, 'webgpu');
    assert.equal(r.fallbackCalls, 0, 'the forward was answered by the wasm fallback');
    assert.ok(r.stats.largestBuffer < r.lByL, `a buffer of ${r.stats.largestBuffer} bytes was allocated (L·L floats = ${r.lByL})`);
    assert.ok(r.stats.largestBuffer <= 8192 * 512 * 4, `largest buffer ${r.stats.largestBuffer} > one [L, E] tensor`);
    console.log(`    [1,8192,512] H8 causal, no weights: ${(r.ms / 1000).toFixed(1)} s, peak pool ${(r.stats.peakBytes / 2 ** 20).toFixed(0)} MiB, largest buffer ${(r.stats.largestBuffer / 2 ** 20).toFixed(0)} MiB`);
    assert.deepEqual(problems, []);
  }, { timeout: 240000, long: true });
}
