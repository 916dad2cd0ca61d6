// The threaded wasm build in Chromium: under COOP/COEP and the strict CSP
// (scripts/serve.mjs sends both) init({ threads }) starts Web Workers and the
// results are bit-identical to one thread; on a page without isolation,
// threads: 'auto' quietly gives one thread and nothing is logged.
import assert from 'node:assert/strict';

/** In the page: MHA/SDPA/layer results of `lab` vs the single-threaded lab, bit for bit. */
async function compareInPage(threads) {
  const { init } = await import('/web/index.js');
  const one = await init({ backend: 'wasm' });
  const many = await init({ backend: 'wasm', threads });
  const fill = (n, s) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + s));
  const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  const results = {};
  for (const [B, L, E, H, causal] of [[1, 512, 768, 12, true], [1, 128, 512, 8, false], [2, 5, 512, 8, false]]) {
    const x = { data: fill(B * L * E, L), shape: [B, L, E] };
    const opts = { mask: causal ? { kind: 'causal' } : undefined, needWeights: L <= 128 };
    const outs = [one, many].map((lab) => {
      const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 3 });
      const r = mha.forwardSync(x, x, x, opts);
      mha.dispose();
      return r;
    });
    results[`mha ${B},${L},${E},${H}`] = same(outs[0].output.data, outs[1].output.data)
      && (!opts.needWeights || same(outs[0].weights.data, outs[1].weights.data));
  }
  const q = { data: fill(2 * 4 * 150 * 32, 1), shape: [2, 4, 150, 32] };
  const k = { data: fill(2 * 4 * 530 * 32, 2), shape: [2, 4, 530, 32] };
  const s = [one, many].map((lab) => lab.scaledDotProductAttention(q, k, k, { mask: { kind: 'causal' } }));
  results.sdpa = same(s[0].output.data, s[1].output.data) && same(s[0].weights.data, s[1].weights.data);
  const x = { data: fill(2 * 64 * 128, 5), shape: [2, 64, 128] };
  const l = [one, many].map((lab) => lab.selfAttentionLayer({ embedDim: 128, numHeads: 4, seed: 2 }).forwardSync(x, { training: true, dropoutSeed: 4 }));
  results.layer = same(l[0].output.data, l[1].output.data);
  const info = { isolated: crossOriginIsolated, threads: many.threads, backend: many.backend, cores: navigator.hardwareConcurrency };
  const auto = await init({ threads: 'auto' });
  info.auto = auto.threads;
  auto.dispose();
  many.dispose();
  info.afterDispose = many.threads;
  return { results, info };
}

export default function (t) {
  t.test('threads: 2 under COOP/COEP and the strict CSP is bit-identical to one thread', async (h) => {
    const page = await h.newPage();
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const r = await page.evaluate(compareInPage, 2);
      assert.equal(r.info.isolated, true);
      assert.equal(r.info.threads, 2);
      assert.equal(r.info.backend, 'wasm');
      assert.equal(r.info.auto, Math.min(4, r.info.cores));
      assert.equal(r.info.afterDispose, 1);
      for (const [name, ok] of Object.entries(r.results)) assert.ok(ok, `${name}: threaded result differs from one thread`);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 240000 });

  t.test("a page without COOP/COEP: threads: 'auto' runs on one thread, nothing logged", async (h) => {
    const page = await h.newPage();
    try {
      // Serve the same files without the isolation headers.
      await page.route('**/*', async (route) => {
        const response = await route.fetch();
        const headers = { ...response.headers() };
        delete headers['cross-origin-opener-policy'];
        delete headers['cross-origin-embedder-policy'];
        await route.fulfill({ response, headers });
      });
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const r = await page.evaluate(async () => {
        const { init, threadsSupported } = await import('/web/index.js');
        const lab = await init({ threads: 'auto' });
        const x = { data: Float32Array.from({ length: 2 * 5 * 64 }, (_, i) => Math.cos(i)), shape: [2, 5, 64] };
        const out = lab.multiHeadAttention({ embedDim: 64, numHeads: 4 }).forwardSync(x);
        let err = '';
        try { await init({ threads: 2 }); } catch (e) { err = e.message; }
        return { isolated: crossOriginIsolated, supported: threadsSupported(), threads: lab.threads, backend: lab.backend, finite: out.output.data.every(Number.isFinite), err };
      });
      assert.equal(r.isolated, false);
      assert.equal(r.supported, false);
      assert.equal(r.threads, 1);
      assert.equal(r.backend, 'wasm');
      assert.ok(r.finite);
      assert.match(r.err, /threads: 2 needs SharedArrayBuffer.*crossOriginIsolated.*Cross-Origin-Opener-Policy: same-origin.*Cross-Origin-Embedder-Policy: require-corp/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
