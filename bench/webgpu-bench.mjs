#!/usr/bin/env node
// webgpu-bench.mjs — the webgpu backend against wasm (SIMD) in headless
// Chromium, on a page served by the browser-test harness (127.0.0.1, strict
// CSP). Not part of `npm test`.
//
//   node bench/webgpu-bench.mjs [--sizes 128,1024,4096] [--reps N] [--json FILE]
//
// Cases (MHA, embedDim 512, 8 heads, self-attention x = [1, L, 512]):
//   [1,128,512,H8]   with weights
//   [1,1024,512,H8]  with weights
//   [1,4096,512,H8]  without weights (the fused flash kernel on webgpu)
// Each backend runs one untimed warm-up call (pipeline compilation, pools),
// then `reps` timed calls (default 5 for L ≤ 1024, 3 above); the median is
// reported with the adapter that ran. The harness's Chromium uses SwiftShader
// (a CPU implementation of Vulkan) unless CHROMIUM_ARGS are changed, so the
// webgpu numbers here say little about a real GPU.
import fs from 'node:fs';
import { startHarness } from '../tests/browser/harness.mjs';

const argv = process.argv.slice(2);
const value = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const sizes = value('--sizes', '128,1024,4096').split(',').map(Number);
const reps = value('--reps', null);
const jsonOut = value('--json', null);
const cases = sizes.map((L) => ({ L, E: 512, H: 8, needWeights: L < 4096, reps: Number(reps ?? (L <= 1024 ? 5 : 3)) }));

const h = await startHarness();
const page = await h.newPage();
let result;
try {
  await page.goto(h.url('/tests/browser/pages/blank.html'));
  result = await page.evaluate(async (list) => {
    const { init } = await import('/web/index.js');
    const { createLab } = await import('/web/lib/lab.js');
    const { createWebGpuBackend } = await import('/web/lib/webgpu-backend.js');
    const wasm = await init({ backend: 'wasm' });
    const backend = await createWebGpuBackend({ fallback: () => Promise.resolve(wasm._backend) });
    const labs = backend ? [['webgpu', createLab(backend)], ['wasm', wasm]] : [['wasm', wasm]];
    const median = (a) => {
      const s = [...a].sort((x, y) => x - y);
      return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    };
    const rows = [];
    for (const c of list) {
      const x = { data: Float32Array.from({ length: c.L * c.E }, (_, i) => Math.sin(i * 0.37)), shape: [1, c.L, c.E] };
      const row = { case: `[1,${c.L},${c.E},H${c.H}]${c.needWeights ? '' : ' no weights'}`, flops: 4 * 2 * c.L * c.E * c.E + 2 * 2 * c.L * c.L * c.E };
      const outputs = {};
      for (const [name, lab] of labs) {
        const m = lab.multiHeadAttention({ embedDim: c.E, numHeads: c.H, seed: 1 });
        const opts = { needWeights: c.needWeights };
        const t0 = performance.now();
        outputs[name] = (await m.forward(x, x, x, opts)).output.data;
        const warm = performance.now() - t0;
        const times = [];
        for (let r = 0; r < c.reps; r++) {
          const t = performance.now();
          await m.forward(x, x, x, opts);
          times.push(performance.now() - t);
        }
        m.dispose();
        row[name] = { medianMs: median(times), firstCallMs: warm, reps: c.reps };
      }
      if (outputs.webgpu) {
        let d = 0;
        for (let i = 0; i < outputs.wasm.length; i++) d = Math.max(d, Math.abs(outputs.webgpu[i] - outputs.wasm[i]));
        row.maxAbsDiff = d;
      }
      rows.push(row);
    }
    return {
      adapter: backend ? backend.adapterInfo : null,
      kernelArch: backend ? createLab(backend).kernelArch : 'no WebGPU adapter',
      wasmArch: wasm.kernelArch,
      userAgent: navigator.userAgent,
      rows,
      pool: backend ? backend.poolStats() : null,
    };
  }, cases);
} finally {
  await page.closeAll();
  await h.close();
}

console.log(`webgpu: ${result.kernelArch}   wasm: ${result.wasmArch}`);
console.log(`adapter: ${JSON.stringify(result.adapter)}`);
const pad = (s, n) => String(s).padEnd(n);
console.log(`\n${pad('case', 30)}${pad('webgpu median', 16)}${pad('wasm median', 16)}${pad('speedup', 10)}${pad('webgpu GFLOP/s', 16)}max |Δ|`);
for (const r of result.rows) {
  const g = r.webgpu ? r.webgpu.medianMs : NaN;
  const w = r.wasm.medianMs;
  console.log(`${pad(r.case, 30)}${pad(`${g.toFixed(1)} ms`, 16)}${pad(`${w.toFixed(1)} ms`, 16)}${pad(`${(w / g).toFixed(2)}×`, 10)}${pad((r.flops / g / 1e6).toFixed(2), 16)}${r.maxAbsDiff?.toExponential(1) ?? '-'}`);
}
if (jsonOut) {
  fs.writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), cases, ...result }, null, 2));
  console.log(`\nwrote ${jsonOut}`);
}
