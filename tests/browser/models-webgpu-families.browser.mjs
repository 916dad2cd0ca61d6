// The decoder families of issue 32 on the webgpu backend: lab.loadModel on a
// webgpu lab runs model.forward on the GPU (web/lib/webgpu-model.js,
// SwiftShader's Vulkan in headless Chromium) for every block-graph field they
// use, and its logits, every layer's attentions and the hidden states agree
// with the wasm backend (the same Model's wasm copy, forwardSync) and with the
// float64 references of tests/reference/hf_families.py (tests/golden/models/),
// within 1e-3 relative (|Δ| / max(1, |ref|), the bound); from an F16
// or BF16 file the matrices stay 16-bit on the GPU (widened by the kernels):
//   qwen2          q/k/v biases, tied head (+ its use_sliding_window variant:
//                  window 3 on layer 1 over 12 tokens, window.expected.json)
//   qwen3          headDim 12 ≠ hidden/heads 8, qkNorm
//   mistral        slidingWindow 4 on every layer (texts of 12 and 5 tokens)
//   gemma          RMSNorm (1 + w), embedScale √32 rounded to bf16, GeGLU tanh,
//                  headDim 16, MQA
//   gemma2         attnScale (query_pre_attn_scalar), attnSoftcap, finalSoftcap,
//                  a local layer (layerKinds), sandwichNorm
//   gemma3         local/local/global layers, ropeLocalTheta, qkNorm, sandwichNorm
//   gemma3-mqa18   gemma-3-270m's layout at hidden 16: 18 layers, 4 heads / 1 KV head
//   phi3           rotaryDim 4 of 8 (partial rotary), fused projections
//   gpt_neox       rotaryDim 2 of 8, parallelResidual, LayerNorm, erf GELU
//   gpt_neox-sequential  rotaryDim 4 of 8, the sequential residual
//   gpt_neo        attnScale 1, a local layer of window 4, learned positions
// A second test adds the MLP and MLM-dense biases to the modernbert folder
// (gateBias: the gate projection's bias) and checks the GPU against wasm.
// gpt2 and llama (and the encoders) are models-webgpu.browser.mjs's; together
// the two files cover every decoder folder of tests/golden/models/ (checked
// below). In-page code: pages/models-webgpu-checks.js familyParity.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';

const TOL = 1e-3;
const CHECKS = '/tests/browser/pages/models-webgpu-checks.js';
const FAMILIES = [
  { name: 'qwen2' },
  { name: 'qwen2 window', folder: 'qwen2', expected: 'window.expected.json' },
  { name: 'qwen3' },
  { name: 'mistral' },
  { name: 'gemma' },
  { name: 'gemma2' },
  { name: 'gemma3' },
  { name: 'gemma3-mqa18' },
  { name: 'phi3' },
  { name: 'gpt_neox' },
  { name: 'gpt_neox-sequential' },
  { name: 'gpt_neo' },
];
// The decoders models-webgpu.browser.mjs checks.
const ELSEWHERE = ['gpt2', 'llama', 'llama-sharded'];

function within(label, d) {
  assert.ok(d <= TOL, `${label}: ${d} > ${TOL}`);
}

export default function (t) {
  t.test('decoder families on webgpu (every block-graph field): logits, attentions and hidden states agree with wasm and float64 within 1e-3 relative', async (h) => {
    // Every decoder folder (a causal model_type: not an encoder) is checked here or in models-webgpu.
    const dir = path.join(REPO_ROOT, 'tests', 'golden', 'models');
    const encoders = new Set(['bert', 'distilbert', 'roberta', 'xlm-roberta', 'modernbert']);
    // (the encoder-decoders: models-webgpu-encdec.browser.mjs)
    const config = (f) => JSON.parse(fs.readFileSync(path.join(dir, f, 'config.json'), 'utf8'));
    const decoders = fs.readdirSync(dir).filter((f) => fs.existsSync(path.join(dir, f, 'expected.json')))
      .filter((f) => !encoders.has(config(f).model_type) && config(f).is_encoder_decoder !== true);
    const checked = new Set([...FAMILIES.map((f) => f.folder ?? f.name), ...ELSEWHERE]);
    assert.deepEqual(decoders.filter((f) => !checked.has(f)), [], 'decoder folders the webgpu tests do not load');

    const page = await h.newPage();
    let result;
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      result = await page.evaluate(async ([checks, goldens]) => (await import(checks)).familyParity(goldens), [CHECKS, FAMILIES]);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
    console.log(`    ${JSON.stringify({ times: result.times })}`);
    assert.equal(result.backend, 'webgpu');
    assert.deepEqual(Object.keys(result.models), FAMILIES.map((f) => f.name));
    for (const [name, m] of Object.entries(result.models)) {
      const worst = { logits: 0, attentions: 0, hidden: 0, goldLogits: 0, goldAttentions: 0, goldHidden: 0, goldAbsLogits: 0, wasmGoldLogits: 0 };
      m.cases.forEach((c, i) => {
        const label = `${name} case ${i} (${c.length} tokens)`;
        assert.ok(c.shapes, `${label}: shapes differ from wasm`);
        within(`${label} logits vs wasm`, c.wasm.logits);
        within(`${label} attentions vs wasm`, c.wasm.attentions);
        within(`${label} hidden states vs wasm`, c.wasm.hidden);
        within(`${label} logits vs float64`, c.golden.logits);
        within(`${label} attentions vs float64`, c.golden.attentions);
        within(`${label} hidden states vs float64`, c.golden.hidden);
        worst.logits = Math.max(worst.logits, c.wasm.logits);
        worst.attentions = Math.max(worst.attentions, c.wasm.attentions);
        worst.hidden = Math.max(worst.hidden, c.wasm.hidden);
        worst.goldLogits = Math.max(worst.goldLogits, c.golden.logits);
        worst.goldAttentions = Math.max(worst.goldAttentions, c.golden.attentions);
        worst.goldHidden = Math.max(worst.goldHidden, c.golden.hidden);
        worst.goldAbsLogits = Math.max(worst.goldAbsLogits, c.golden.absLogits);
        worst.wasmGoldLogits = Math.max(worst.wasmGoldLogits, c.golden.wasmLogits);
      });
      const fmt = Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Number(v.toPrecision(3))]));
      console.log(`    ${name}: ${JSON.stringify({ ...fmt, flash: Number(m.flashLogits.toPrecision(3)), gpuBytes: m.gpuBytes })}`);
      within(`${name} logits without attentions (flash kernel) vs wasm`, m.flashLogits);
      assert.ok(m.flashAttentionsNull, `${name}: attentions: false still returned attentions`);
      assert.equal(m.submissionsPerForward, 1, `${name}: one forward should be one GPU submission`);
      // Every parameter on the GPU: 4 bytes from an F32 file; from an F16/BF16 one its matrices in 2.
      assert.ok(m.gpuBytes >= (m.half ? 2 : 4) * m.parameters, `${name}: the GPU copy (${m.gpuBytes} bytes) holds fewer bytes than ${m.parameters} parameters`);
      if (m.half) assert.ok(m.gpuBytes < 4 * m.parameters, `${name}: the GPU copy of a ${m.dtype} file (${m.gpuBytes} bytes) is float32 (${m.parameters} parameters)`);
    }
    assert.equal(result.fallbackCalls, 0, 'forward calls were answered by the wasm fallback');
  }, { timeout: 120000, long: true });

  t.test('gateBias and the MLM dense bias on webgpu: modernbert with every MLP bias agrees with wasm within 1e-3 relative', async (h) => {
    const page = await h.newPage();
    let r;
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      r = await page.evaluate(async (checks) => (await import(checks)).biasParity(), CHECKS);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
    console.log(`    ${JSON.stringify(r)}`);
    assert.ok(r.gateBias, 'the model has no blocks.0.ffn.bg');
    within('logits vs wasm', r.logits);
    within('attentions vs wasm', r.attentions);
    within('hidden states vs wasm', r.hidden);
    assert.ok(r.moved > 1e-2, `the biases moved the logits by ${r.moved} only`);
    assert.equal(r.fallbackCalls, 0);
  }, { timeout: 60000 });
}
