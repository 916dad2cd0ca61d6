// The encoder-decoders of issue 34 on the webgpu backend: lab.loadModel on a
// webgpu lab runs EncoderDecoderModel.forward on the GPU (web/lib/webgpu-model.js:
// the encoder's stack, then the decoder's, whose cross-attention reads the
// encoder's output through the same MHA recording with separate query and
// key/value inputs; one job, one submission; SwiftShader's Vulkan in headless
// Chromium), and its logits, the encoder, decoder and cross-attentions and the
// encoder's output agree with the wasm backend (the same model's wasm copy,
// forwardSync) and with the float64 references of tests/reference/hf_encdec.py
// (tests/golden/models/), within 1e-3 relative (|Δ| / max(1, |ref|), the
// issue's bound):
//   marian    sinusoidHalves (sin | cos), embedScale √d_model, post-LN with
//             cross-attention, SiLU (swish) MLPs, final_logits_bias
//   bart      learned positions (offset 2), embedNorm, GELU, post-LN
//   t5        pre-norm RMS, relativeBuckets (bidirectional in the encoder,
//             causal in the decoder: T5's bias as the scores' additive mask),
//             attnScale 1, headDim 6 ≠ 16/3, ReLU, the tied head's headScale
//   t5-v1_1   the gated-gelu MLP, an untied head
// and from an F16 file (16-bit matrices, the cross projections included) for
// marian and t5; after a device loss forward answers from the wasm copy.
// In-page code: pages/models-webgpu-checks.js encdecParity.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';

const TOL = 1e-3;
const CHECKS = '/tests/browser/pages/models-webgpu-checks.js';
const MODELS = [
  { name: 'marian' },
  { name: 'marian f16', folder: 'marian', file: 'model-f16.safetensors' },
  { name: 'bart' },
  { name: 't5' },
  { name: 't5 f16', folder: 't5', file: 'model-f16.safetensors' },
  { name: 't5-v1_1' },
];

function within(label, d) {
  assert.ok(d <= TOL, `${label}: ${d} > ${TOL}`);
}

export default function (t) {
  t.test('encoder-decoders on webgpu: logits, encoder, decoder and cross-attentions agree with wasm and float64 within 1e-3 relative', async (h) => {
    // Every encoder-decoder folder is loaded here.
    const dir = path.join(REPO_ROOT, 'tests', 'golden', 'models');
    const encdec = fs.readdirSync(dir).filter((f) => fs.existsSync(path.join(dir, f, 'config.json'))
      && JSON.parse(fs.readFileSync(path.join(dir, f, 'config.json'), 'utf8')).is_encoder_decoder === true);
    const checked = new Set(MODELS.map((m) => m.folder ?? m.name));
    assert.ok(encdec.length >= 4, `encoder-decoder folders: ${encdec}`);
    assert.deepEqual(encdec.filter((f) => !checked.has(f)), [], 'encoder-decoder folders this test does not load');

    const page = await h.newPage();
    let result;
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      result = await page.evaluate(async ([checks, models]) => (await import(checks)).encdecParity(models), [CHECKS, MODELS]);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
    console.log(`    ${JSON.stringify({ times: result.times })}`);
    assert.equal(result.backend, 'webgpu');
    assert.deepEqual(Object.keys(result.models), MODELS.map((m) => m.name));
    for (const [name, m] of Object.entries(result.models)) {
      const worst = {};
      m.cases.forEach((c, i) => {
        const label = `${name} case ${i} (${c.lengths.join(' → ')} tokens)`;
        assert.ok(c.shapes, `${label}: shapes differ from wasm`);
        assert.ok(c.counts.every((n) => n >= 1), `${label}: attentions missing (${c.counts})`);
        for (const [k, v] of Object.entries(c.wasm)) {
          within(`${label} ${k} vs wasm`, v);
          worst[k] = Math.max(worst[k] ?? 0, v);
        }
        for (const [k, v] of Object.entries(c.golden)) {
          if (k !== 'wasmLogits') within(`${label} ${k} vs float64`, v);
          worst[`gold ${k}`] = Math.max(worst[`gold ${k}`] ?? 0, v);
        }
      });
      const fmt = Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Number(v.toPrecision(3))]));
      console.log(`    ${name}: ${JSON.stringify({ ...fmt, flash: Number(m.flashLogits.toPrecision(3)), gpuBytes: m.gpuBytes })}`);
      within(`${name} logits without attentions (flash kernel) vs wasm`, m.flashLogits);
      within(`${name} logits from decoder_start_token_id vs wasm`, m.startOnly);
      assert.ok(m.flashAttentionsNull, `${name}: attentions: false still returned attentions`);
      assert.equal(m.submissionsPerForward, 1, `${name}: one forward should be one GPU submission`);
      assert.ok(m.gpuBytes >= 2 * m.parameters, `${name}: the GPU copy (${m.gpuBytes} bytes) holds fewer bytes than ${m.parameters} 16-bit parameters`);
      assert.ok(m.disposedThrows, `${name}: forward after dispose did not throw`);
      // From an F16 file the matrices stay 16-bit on the GPU (the cross projections too).
      const f32 = MODELS.find((x) => x.name !== name && (x.folder ?? x.name) === (MODELS.find((y) => y.name === name).folder ?? name) && !x.file);
      if (name.endsWith('f16')) assert.ok(m.gpuBytes < 0.6 * result.models[f32.name].gpuBytes, `${name}: ${m.gpuBytes} bytes on the GPU, F32 ${result.models[f32.name].gpuBytes}`);
    }
    assert.equal(result.fallbackCalls, 0, 'forward calls were answered by the wasm fallback');
    // After a device loss forward answers from the wasm copy, as forwardSync.
    console.log(`    after a device loss: ${JSON.stringify(result.afterLoss)}`);
    assert.equal(result.afterLoss.logits, 0);
    assert.equal(result.afterLoss.cross, 0);
  }, { timeout: 120000, long: true });
}
