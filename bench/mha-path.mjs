// The two attention drivers on the same weights, interleaved A/B in one run
// (issue 31, "one rule each"): lab.multiHeadAttention's MultiHeadAttention::
// Forward (one fused QKV GEMM for self-attention) against the whole models'
// train::MhaForward over weights packed once, self-attention on the
// tutorial's shapes. Needs the bench module (scripts/bench.sh builds it):
//   taskset -c 1 node --no-liftoff bench/mha-path.mjs [rounds]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'build', 'wasm-simd');
const glue = path.join(dir, 'attention_lab_bench_simd.mjs');
if (!fs.existsSync(glue)) throw new Error(`mha-path: no bench module at ${glue}; run npm run bench once (scripts/bench.sh builds it)`);
const M = await (await import(glue)).default({ wasmBinary: fs.readFileSync(path.join(dir, 'attention_lab_bench_simd.wasm')) });
// [B, L, E, H, causal, calls per timing]
const SHAPES = [[2, 5, 512, 8, 0, 2000], [1, 128, 512, 8, 1, 40], [1, 512, 768, 12, 1, 6]];
const rounds = Number(process.argv[2] ?? 7);
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
for (const [b, l, e, h, causal, calls] of SHAPES) {
  const t = [[], []];
  for (const p of [0, 1]) M.benchMhaPath(p, b, l, e, h, causal, 2); // warm-up
  for (let r = 0; r < rounds; r++) for (const p of r % 2 ? [1, 0] : [0, 1]) t[p].push(M.benchMhaPath(p, b, l, e, h, causal, calls));
  const [a, m] = [median(t[0]), median(t[1])];
  console.log(`[${b},${l},${e},H${h}]${causal ? ' causal' : ''}: MultiHeadAttention ${a.toFixed(3)} ms, train::MhaForward ${m.toFixed(3)} ms, ratio ${(m / a).toFixed(3)}`);
}
