// Whole models on the webgpu backend (issue 21 item 6): lab.loadModel and
// lab.pretrained on a webgpu lab run model.forward on the GPU
// (web/lib/webgpu-model.js, SwiftShader's Vulkan in headless Chromium), and
// its logits, every layer's attentions and the hidden states agree with the
// wasm backend (the same Model's wasm copy, forwardSync) and with the float64
// references of tests/reference/hf_models.py (tests/golden/models/):
//   gpt2           learned positions, pre-LN, Conv1D split, gelu_new, tied head
//   llama          RMSNorm, RoPE (rope_theta 500000), GQA 4/2, SwiGLU, untied head
//   llama-sharded  the same weights from two BF16 shards and their index
//   bert           token-type embeddings + their LayerNorm, post-LN, erf GELU,
//                  bidirectional, the MLM head
//   distilbert, roberta, xlm-roberta  the encoders: no token types; positions
//                  from padding_idx + 1 (the rows-from layout op's GPU face)
//   modernbert     pre-norm encoder with bidirectional local layers, RoPE
//                  bases per layer kind, GeGLU, bias-free LayerNorms, block 0
//                  without norm1 (F32 and BF16)
//   pretrained en  the shipped character GPT-2 (E 128, 4 layers), by text
// From the BF16 shards the matrices stay 16-bit on the GPU (the kernels widen
// them: the same numbers as llama's F32 file).
// Tolerance |Δ| ≤ 1e-3 (the bound) for every output; observed on
// SwiftShader: see docs/models.md ("On the webgpu backend").
// In-page code: pages/models-webgpu-checks.js.
import assert from 'node:assert/strict';

const TOL = 1e-3;
const CHECKS = '/tests/browser/pages/models-webgpu-checks.js';
const GOLDENS = [
  { name: 'gpt2' },
  { name: 'llama' },
  { name: 'llama-sharded', shards: ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'], half: true },
  { name: 'bert' },
  // the encoders of issue 34 (tests/reference/hf_encoders.py)
  { name: 'distilbert' },
  { name: 'roberta' },
  { name: 'xlm-roberta' },
  // ModernBERT (issue 34): bidirectional local layers (|i − j| < 3) with their own RoPE base,
  // GeGLU, LayerNorms without bias, block 0 without norm1, MLM dense without bias
  { name: 'modernbert' },
  { name: 'modernbert (BF16)', folder: 'modernbert', file: 'model-bf16.safetensors', half: true },
];
const TEXT = 'The cat sat on the mat.';

function within(label, d) {
  assert.ok(d <= TOL, `${label}: |Δ| = ${d} > ${TOL}`);
}

export default function (t) {
  t.test('models on webgpu: gpt2, llama (GQA, RoPE, untied; BF16 shards), bert (MLM), distilbert, roberta, xlm-roberta, modernbert and pretrained en agree with wasm and float64 within 1e-3', async (h) => {
    const page = await h.newPage();
    let result;
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      result = await page.evaluate(async ([checks, goldens, text]) => (await import(checks)).modelParity(goldens, text), [CHECKS, GOLDENS, TEXT]);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
    console.log(`    ${JSON.stringify({ times: result.times })}`);
    assert.equal(result.backend, 'webgpu');
    for (const [name, m] of Object.entries(result.models)) {
      const worst = { logits: 0, attentions: 0, hidden: 0, goldLogits: 0, goldAttentions: 0, goldHidden: 0 };
      m.cases.forEach((c, i) => {
        const label = `${name} case ${i}`;
        assert.ok(c.shapes, `${label}: shapes differ from wasm`);
        assert.ok(c.ids, `${label}: ids differ`);
        within(`${label} logits vs wasm`, c.logits);
        within(`${label} attentions vs wasm`, c.attentions);
        within(`${label} hidden states vs wasm`, c.hidden);
        within(`${label} logits vs float64`, c.golden.logits);
        within(`${label} attentions vs float64`, c.golden.attentions);
        within(`${label} hidden states vs float64`, c.golden.hidden);
        worst.logits = Math.max(worst.logits, c.logits);
        worst.attentions = Math.max(worst.attentions, c.attentions);
        worst.hidden = Math.max(worst.hidden, c.hidden);
        worst.goldLogits = Math.max(worst.goldLogits, c.golden.logits);
        worst.goldAttentions = Math.max(worst.goldAttentions, c.golden.attentions);
        worst.goldHidden = Math.max(worst.goldHidden, c.golden.hidden);
      });
      console.log(`    ${name}: ${JSON.stringify({ ...worst, flash: m.flashLogits, gpuBytes: m.gpuBytes, wasmBytes: m.wasmBytes })}`);
      within(`${name} logits without attentions (flash kernel)`, m.flashLogits);
      assert.ok(m.flashAttentionsNull, `${name}: attentions: false still returned attentions`);
      assert.equal(m.submissionsPerForward, 1, `${name}: one forward should be one GPU submission`);
      // From an F32 file the GPU copy holds what the wasm copy holds (float32); from a 16-bit
      // one every parameter in 2 bytes at least, its matrices in no more than that.
      const { half } = GOLDENS.find((gd) => gd.name === name);
      if (!half) assert.equal(m.gpuBytes >= m.wasmBytes, true, `${name}: the GPU copy (${m.gpuBytes} bytes) holds fewer bytes than the weights (${m.wasmBytes})`);
      else {
        assert.ok(m.gpuBytes >= 2 * m.parameters, `${name}: the GPU copy (${m.gpuBytes} bytes) holds fewer bytes than ${m.parameters} parameters in 16 bits`);
        assert.ok(m.gpuBytes < 4 * m.parameters, `${name}: the GPU copy of a 16-bit file (${m.gpuBytes} bytes) is float32 (${m.parameters} parameters)`);
      }
      assert.ok(m.disposedThrows, `${name}: forward after dispose() did not throw`);
      if (name === 'bert' || name.startsWith('modernbert')) assert.equal(m.fillMask, 1);
    }
    assert.equal(result.persistentAfterDispose, 0, 'dispose() left GPU buffers behind');
    const p = result.pretrained;
    console.log(`    pretrained en (${p.length} tokens): ${JSON.stringify({ logits: p.logits, attentions: p.attentions, hidden: p.hidden, gpuBytes: p.gpuBytes, wasmBytes: p.wasmBytes, poolPeakBytes: p.poolPeakBytes })}`);
    assert.ok(p.shapes && p.ids && p.tokens, 'pretrained en: shapes, ids or tokens differ from wasm');
    within('pretrained en logits vs wasm', p.logits);
    within('pretrained en attentions vs wasm', p.attentions);
    within('pretrained en hidden states vs wasm', p.hidden);
    assert.equal(result.fallbackCalls, 0, 'forward calls were answered by the wasm fallback');
    // After a device loss: forward answers from the wasm copy, exactly forwardSync.
    const l = result.afterLoss;
    assert.equal(l.fallbackCalls, 1);
    assert.equal(l.logits, 0);
    assert.equal(l.attentions, 0);
    assert.equal(l.hidden, 0);
    assert.equal(l.nextTokens, 3);
  }, { timeout: 90000 });
}
