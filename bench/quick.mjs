import { init } from '../web/node.js';
const simd = await init({ backend: 'wasm' });
const scalar = await init({ backend: 'wasm-scalar' });
function rand(n, seed) { let s = seed >>> 0; const a = new Float32Array(n); for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; a[i] = s / 2 ** 32 - 0.5; } return a; }
for (const [B, L, E, H] of [[2, 5, 512, 8], [1, 128, 512, 8], [1, 512, 768, 12]]) {
  const x = { data: rand(B * L * E, 1), shape: [B, L, E] };
  const res = [];
  for (const lab of [simd, scalar]) {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H });
    const times = [];
    const reps = L > 200 ? 5 : 30;
    for (let i = 0; i < reps; i++) { const t0 = performance.now(); mha.forwardSync(x, x, x, { mask: { kind: 'causal' }, needWeights: false }); times.push(performance.now() - t0); }
    times.sort((a, b) => a - b);
    res.push(times[times.length >> 1]);
    mha.dispose();
  }
  console.log(`[${B},${L},${E},H${H}] simd ${res[0].toFixed(3)} ms scalar ${res[1].toFixed(3)} ms ratio ${(res[1] / res[0]).toFixed(2)}`);
}
