// ONNX conformance on the webgpu backend (SwiftShader's Vulkan in headless
// Chromium): every ONNX Attention (opset 23-24) and RotaryEmbedding golden
// case of tests/golden/onnx/ through the public JS API, compared with ONNX's
// reference outputs at the Jest conformance test's tolerances
// (tests/golden/onnx-cases.mjs: float32 |Δ| ≤ 3e-5 + 3e-4·|want|, fp16 cases
// 2e-3 + 5e-3·|want|); then the combinations the ONNX set lacks against the
// float64 reference (tests/reference/reference.mjs) at |Δ| ≤ 2e-5 + 1e-4·|want|
// (RoPE 2e-6 + 1e-5·|want|). Every call must run on the GPU: each case
// submits at least one GPU job and none is answered by the wasm fallback.
import assert from 'node:assert/strict';

const CHECKS = '/tests/browser/pages/onnx-webgpu-checks.js';

// Both tests read one page's run (the pipelines compile once per page).
let run = null;
function onPage(h) {
  run ??= (async () => {
    const page = await h.newPage();
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const result = await page.evaluate(async (checks) => (await import(checks)).all(), CHECKS);
      return { result, problems: page.problems() };
    } finally {
      await page.closeAll();
    }
  })();
  return run;
}

export default function (t) {
  t.test('webgpu: every ONNX Attention and RotaryEmbedding golden case passes on the GPU', async (h) => {
    const { result: { onnx: result, ms }, problems } = await onPage(h);
    assert.equal(result.backend, 'webgpu', JSON.stringify(result.lost));
    assert.equal(result.results.length, 95);
    assert.equal(result.results.filter((r) => r.op === 'Attention').length, 87);
    const failed = result.results.filter((r) => r.problems.length);
    assert.deepEqual(failed.map((r) => `${r.name}: ${r.problems.join('; ')}`), []);
    const offGpu = result.results.filter((r) => r.jobs < 1).map((r) => r.name);
    assert.deepEqual(offGpu, [], 'cases that ran no GPU job');
    assert.equal(result.counters.fallbackCalls, 0, 'calls were answered by the wasm fallback');
    console.log(`    ONNX on webgpu: ${result.results.length}/95 pass (page ${ms.onnx} ms, of which the cases ${result.casesMs} ms; variants ${ms.variants} ms)`);
    assert.deepEqual(problems, []);
  }, { timeout: 120000, long: true });

  t.test('webgpu: GQA + window + softcap + ALiBi, flash skipped tiles, RoPE tables and MHA numKvHeads + rope equal the float64 reference', async (h) => {
    const { result: { variants: r }, problems } = await onPage(h);
    assert.equal(r.backend, 'webgpu', JSON.stringify(r.lost));
    for (const c of r.sdpa) {
      for (const part of ['output', 'weights', 'flash']) assert.ok(c[part].ok, `${c.name} ${part}: ${JSON.stringify(c[part])}`);
    }
    for (const c of r.flash) assert.ok(c.output.ok, `flash ${c.name}: ${JSON.stringify(c.output)}`);
    assert.deepEqual(r.trace.steps, ['scores', 'softcap', 'mask', 'softmax', 'weighted_sum']);
    for (const s of ['scores', 'softcap', 'mask', 'softmax']) assert.ok(r.trace[s].ok, `trace ${s}: ${JSON.stringify(r.trace[s])}`);
    for (const c of r.rope) assert.ok(c.y.ok, `rope ${c.name}: ${JSON.stringify(c.y)}`);
    assert.deepEqual(r.mha.wkShape, [4, 12]);
    assert.ok(r.mha.output.ok, `MHA numKvHeads + rope: ${JSON.stringify(r.mha.output)}`);
    assert.ok(r.mha.traced.ok, `MHA numKvHeads + rope (trace): ${JSON.stringify(r.mha.traced)}`);
    assert.ok(r.mha.kvShared, "the trace's K: each query head's slot holds its kv head");
    assert.equal(r.mha.jobs, 2, 'both MHA forwards ran on the GPU');
    for (const e of r.errors) {
      assert.match(e.wasm, /^RangeError: /, `${e.name} on wasm: ${e.wasm}`);
      assert.equal(e.gpu, e.wasm, `${e.name}: webgpu and wasm report differently`);
    }
    assert.equal(r.counters.fallbackCalls, 0, 'calls were answered by the wasm fallback');
    assert.deepEqual(problems, []);
  }, { timeout: 120000, long: true });
}
