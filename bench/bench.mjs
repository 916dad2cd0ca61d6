// npm run bench — median wall time of MHA forward on wasm SIMD vs wasm scalar.
// Each configuration runs in a fresh Node process (pinned to one core with
// taskset when available, by scripts/bench.sh), interleaved across repeats.
//   node bench/bench.mjs [--repeats N] [--json out.json]
//   node bench/bench.mjs --child backend B L E H causal needWeights   (internal)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);

function rand(n, seed) {
  let s = seed >>> 0;
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 32 - 0.5;
  }
  return a;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// FLOPs of one MHA forward (multiply-add = 2).
function mhaFlops(B, L, E, causal) {
  const proj = 4 * 2 * B * L * E * E;
  const attn = 2 * 2 * B * L * L * E * (causal ? 0.5 : 1);
  return proj + attn;
}

if (args[0] === '--child') {
  const [backend, B, L, E, H, causal, needWeights] = args.slice(1);
  const { init } = await import('../web/node.js');
  const lab = await init({ backend });
  const b = +B, l = +L, e = +E, h = +H;
  const x = { data: rand(b * l * e, 1), shape: [b, l, e] };
  const mha = lab.multiHeadAttention({ embedDim: e, numHeads: h, seed: 1 });
  const opts = { mask: causal === '1' ? { kind: 'causal' } : undefined, needWeights: needWeights === '1' };
  const budgetMs = 1500;
  const times = [];
  const tStart = performance.now();
  mha.forwardSync(x, x, x, opts); // warm-up
  while (times.length < 5 || (performance.now() - tStart < budgetMs && times.length < 200)) {
    const t0 = performance.now();
    mha.forwardSync(x, x, x, opts);
    times.push(performance.now() - t0);
  }
  process.stdout.write(JSON.stringify({ median: median(times), runs: times.length, kernelArch: lab.kernelArch }));
  process.exit(0);
}

const repeats = Number(args[args.indexOf('--repeats') + 1]) || 3;
const jsonOut = args.includes('--json') ? args[args.indexOf('--json') + 1] : path.join(here, 'results', 'bench-node.json');
const pin = (() => {
  try {
    execFileSync('taskset', ['-c', '0', 'true']);
    return ['taskset', '-c', '1'];
  } catch {
    return [];
  }
})();

const shapes = [
  { B: 2, L: 5, E: 512, H: 8 },
  { B: 1, L: 128, E: 512, H: 8 },
  { B: 1, L: 512, E: 768, H: 12 },
];
const backends = ['wasm', 'wasm-scalar'];
const results = {};
for (let r = 0; r < repeats; r++) {
  for (const s of shapes) {
    for (const backend of backends) {
      const cmd = [...pin, process.execPath, fileURLToPath(import.meta.url), '--child', backend, s.B, s.L, s.E, s.H, '1', '0'].map(String);
      const out = JSON.parse(execFileSync(cmd[0], cmd.slice(1), { encoding: 'utf8' }));
      const key = `${backend} [${s.B},${s.L},${s.E},H${s.H}]`;
      (results[key] ??= { backend, ...s, medians: [], kernelArch: out.kernelArch }).medians.push(out.median);
    }
  }
}

console.log(`MHA forward, causal mask, weights not requested; median of ${repeats} fresh processes${pin.length ? ' pinned to one core' : ''}`);
console.log('shape                 | wasm SIMD ms | GFLOP/s | wasm scalar ms | GFLOP/s | SIMD speed-up');
console.log('----------------------|--------------|---------|----------------|---------|--------------');
const rows = [];
for (const s of shapes) {
  const k = (b) => `${b} [${s.B},${s.L},${s.E},H${s.H}]`;
  const simd = median(results[k('wasm')].medians);
  const scalar = median(results[k('wasm-scalar')].medians);
  const flops = mhaFlops(s.B, s.L, s.E, true);
  const row = { shape: `[${s.B},${s.L},${s.E},H${s.H}]`, simdMs: simd, scalarMs: scalar, simdGflops: flops / simd / 1e6, scalarGflops: flops / scalar / 1e6, speedup: scalar / simd };
  rows.push(row);
  console.log(`${row.shape.padEnd(22)}| ${simd.toFixed(3).padStart(12)} | ${row.simdGflops.toFixed(1).padStart(7)} | ${scalar.toFixed(3).padStart(14)} | ${row.scalarGflops.toFixed(1).padStart(7)} | ${row.speedup.toFixed(2).padStart(11)}×`);
}
fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
fs.writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), node: process.version, pinned: pin.length > 0, rows, raw: results }, null, 2));
console.log(`\nJSON: ${path.relative(process.cwd(), jsonOut)}`);
