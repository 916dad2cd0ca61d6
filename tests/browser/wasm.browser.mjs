// The wasm backends in a real browser page (served under the strict CSP).
import assert from 'node:assert/strict';

export default function (t) {
  t.test('wasm SIMD and scalar agree in Chromium under CSP', async (h) => {
    const page = await h.newPage();
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const r = await page.evaluate(async () => {
        const { init } = await import('/web/index.js');
        const simd = await init({ backend: 'wasm' });
        const scalar = await init({ backend: 'wasm-scalar' });
        const x = { data: Float32Array.from({ length: 2 * 5 * 512 }, (_, i) => Math.sin(i * 0.37)), shape: [2, 5, 512] };
        const outs = [];
        for (const lab of [simd, scalar]) {
          const mha = lab.multiHeadAttention({ embedDim: 512, numHeads: 8, seed: 3 });
          const o = await mha.forward(x, x, x, { mask: { kind: 'causal' }, trace: true });
          outs.push(o);
          mha.dispose();
        }
        let maxDiff = 0;
        for (let i = 0; i < outs[0].output.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(outs[0].output.data[i] - outs[1].output.data[i]));
        let err = '';
        try { simd.multiHeadAttention({ embedDim: 10, numHeads: 3 }); } catch (e) { err = `${e.name}: ${e.message}`; }
        return { backends: [simd.backend, scalar.backend], maxDiff, shapes: outs[0].trace.map((s) => s.shape.join(',')), err };
      });
      assert.deepEqual(r.backends, ['wasm', 'wasm-scalar']);
      assert.ok(r.maxDiff < 1e-5, `max diff ${r.maxDiff}`);
      assert.deepEqual(r.shapes, ['2,5,512', '2,5,512', '2,8,5,64', '2,8,5,5', '2,8,5,5', '2,8,5,5', '2,8,5,64', '2,5,512', '2,5,512']);
      assert.match(r.err, /^RangeError: .*embedDim \(10\).*numHeads \(3\)/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
