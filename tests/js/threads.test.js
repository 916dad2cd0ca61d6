// threads.test.js — the threaded wasm build (init({ threads })):
//   * results bit-identical to one thread (MHA incl. [1,512,768,H12] causal,
//     SDPA with weights, the layer), for 2 and 3 threads;
//   * option checks (TypeError / RangeError), 'auto' = min(4, cores) in Node,
//     'wasm-scalar' stays on one thread;
//   * 10,000 threaded forwards keep the wasm heap and memory flat, and
//     init/dispose cycles leave no Worker running (both in child processes:
//     `node --expose-gc`, and worker_threads.Worker counted from outside).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { init } from '../../web/node.js';
import { ref, rand, expectTensorsEqual } from './helpers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = pathToFileURL(path.join(root, 'web/node.js')).href;

let one;
let labs;
beforeAll(async () => {
  one = await init();
  labs = { 2: await init({ threads: 2 }), 3: await init({ threads: 3 }) };
});
afterAll(() => {
  for (const lab of Object.values(labs ?? {})) lab.dispose();
});

describe('thread selection', () => {
  test('lab.threads reports the count in use', () => {
    expect(one.threads).toBe(1);
    expect(labs[2].threads).toBe(2);
    expect(labs[3].threads).toBe(3);
    expect(labs[2].backend).toBe('wasm');
  });

  test("'auto' is min(4, cores) in Node; 'wasm-scalar' stays on one thread", async () => {
    const cores = os.availableParallelism?.() ?? os.cpus().length;
    const auto = await init({ threads: 'auto' });
    expect(auto.threads).toBe(Math.min(4, cores));
    auto.dispose();
    const scalar = await init({ backend: 'wasm-scalar', threads: 'auto' });
    expect(scalar.threads).toBe(1);
    expect(scalar.backend).toBe('wasm-scalar');
  });

  test('bad thread options say what is allowed', async () => {
    await expect(init({ threads: '2' })).rejects.toThrow(TypeError);
    await expect(init({ threads: '2' })).rejects.toThrow("threads must be a whole number from 1 to 16 or 'auto', got \"2\"");
    for (const bad of [0, -1, 1.5, 17, NaN]) {
      await expect(init({ threads: bad })).rejects.toThrow(RangeError);
    }
    await expect(init({ backend: 'wasm-scalar', threads: 2 })).rejects.toThrow("threads: 2 needs the SIMD128 build; backend 'wasm-scalar' runs on one thread");
  });
});

describe('threaded results are bit-identical to one thread', () => {
  const mhaCases = [
    { B: 1, L: 512, E: 768, H: 12, causal: true },
    { B: 1, L: 128, E: 512, H: 8, causal: false },
    { B: 2, L: 5, E: 512, H: 8, causal: false },
    { B: 2, L: 37, E: 96, H: 4, causal: true, weights: true },
    { B: 3, L: 70, E: 120, H: 5, causal: false, weights: true, average: true },
  ];
  test.each(mhaCases)('MHA [$B,$L,$E,H$H] causal=$causal', ({ B, L, E, H, causal, weights, average }) => {
    const rng = ref.mulberry32(B * 1000 + L);
    const x = rand(rng, [B, L, E]);
    const opts = { mask: causal ? { kind: 'causal' } : undefined, needWeights: Boolean(weights), averageWeights: Boolean(average) };
    const run = (lab) => lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 7 }).forwardSync(x, x, x, opts);
    const want = run(one);
    for (const n of [2, 3]) {
      const got = run(labs[n]);
      expectTensorsEqual(got.output, want.output, `${n} threads: output`);
      if (weights) expectTensorsEqual(got.weights, want.weights, `${n} threads: weights`);
    }
  });

  test('MHA with separate key/value inputs and a padding mask', () => {
    const rng = ref.mulberry32(5);
    const q = rand(rng, [2, 45, 64]);
    const kv = rand(rng, [2, 77, 64]);
    const opts = { mask: { kind: 'padding', lengths: [77, 50] } };
    const run = (lab) => lab.multiHeadAttention({ embedDim: 64, numHeads: 4, seed: 3 }).forwardSync(q, kv, kv, opts);
    const want = run(one);
    for (const n of [2, 3]) {
      const got = run(labs[n]);
      expectTensorsEqual(got.output, want.output, `${n} threads: output`);
      expectTensorsEqual(got.weights, want.weights, `${n} threads: weights`);
    }
  });

  test.each([
    [[2, 3, 77, 24], [2, 3, 131, 24], false],
    [[1, 4, 200, 40], [1, 4, 600, 40], true],
    [[3, 2, 5, 64], [3, 2, 301, 64], true],
  ])('SDPA q%j k%j causal=%s, with weights', (qs, ks, causal) => {
    const rng = ref.mulberry32(qs[2] + ks[2]);
    const q = rand(rng, qs);
    const k = rand(rng, ks);
    const v = rand(rng, ks);
    const opts = { mask: causal ? { kind: 'causal' } : undefined };
    const want = one.scaledDotProductAttention(q, k, v, opts);
    for (const n of [2, 3]) {
      const got = labs[n].scaledDotProductAttention(q, k, v, opts);
      expectTensorsEqual(got.output, want.output, `${n} threads: output`);
      expectTensorsEqual(got.weights, want.weights, `${n} threads: weights`);
    }
  });

  test('selfAttentionLayer, training with dropout', () => {
    const rng = ref.mulberry32(11);
    const x = rand(rng, [2, 96, 128]);
    const opts = { mask: { kind: 'causal' }, training: true, dropoutSeed: 9 };
    const run = (lab) => lab.selfAttentionLayer({ embedDim: 128, numHeads: 8, dropout: 0.1, seed: 4 }).forwardSync(x, opts);
    const want = run(one);
    for (const n of [2, 3]) {
      const got = run(labs[n]);
      expectTensorsEqual(got.output, want.output, `${n} threads: output`);
      expectTensorsEqual(got.weights, want.weights, `${n} threads: weights`);
    }
  });
});

describe('threaded memory and workers (child processes)', () => {
  let dir;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-threads-'));
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  function runChild(name, source) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, source);
    const out = execFileSync(process.execPath, ['--expose-gc', file], { encoding: 'utf8', timeout: 180000, maxBuffer: 1 << 20 });
    const lines = out.trim().split('\n');
    return JSON.parse(lines[lines.length - 1]);
  }

  test('10,000 threaded MHA forwards (and 2,000 with a started output projection) keep the wasm heap and memory flat', () => {
    const r = runChild('heap.mjs', `
import { init } from ${JSON.stringify(entry)};
const lab = await init({ threads: 2 });
const b = lab._backend;
let seed = 1;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const fresh = (shape) => ({ data: Float32Array.from({ length: shape.reduce((a, c) => a * c, 1) }, rnd), shape });
// [1,16,128,H4]: every GEMM (16·384·128 multiply-adds) is over the threshold
const mha = lab.multiHeadAttention({ embedDim: 128, numHeads: 4, seed: 1 });
const opts = { mask: { kind: 'causal' }, needWeights: false };
let sum = 0;
const round = (n) => { for (let i = 0; i < n; i++) { const x = fresh([1, 16, 128]); sum += mha.forwardSync(x, x, x, opts).output.data[0]; } };
// [1,128,128]: an output of 16,384 floats, so the output projection is only
// started on the workers while the result array is allocated (joinTasks).
const big = lab.multiHeadAttention({ embedDim: 128, numHeads: 4, seed: 2 });
const xb = fresh([1, 128, 128]);
const roundBig = (n) => { for (let i = 0; i < n; i++) sum += big.forwardSync(xb, xb, xb, opts).output.data[i % 16384]; };
round(200);
roundBig(50);
globalThis.gc();
const heap0 = b.heapBytesInUse(), mem0 = b.memoryBytes();
const t0 = Date.now();
round(10000);
roundBig(2000);
const ms = Date.now() - t0;
globalThis.gc();
const heap1 = b.heapBytesInUse(), mem1 = b.memoryBytes();
big.dispose();
mha.dispose();
lab.dispose();
console.log(JSON.stringify({ heap0, heap1, mem0, mem1, ms, threads: lab.threads, finite: Number.isFinite(sum) }));
`);
    // eslint-disable-next-line no-console
    console.log(`threads: 10,000 MHA [1,16,128,H4] + 2,000 [1,128,128,H4] forwards on 2 threads in ${r.ms} ms; wasm heap ${r.heap0} → ${r.heap1} bytes, memory ${r.mem0} → ${r.mem1}`);
    expect(r.finite).toBe(true);
    expect(r.heap1).toBe(r.heap0);
    expect(r.mem1).toBe(r.mem0);
  });

  test('init/dispose cycles leave no worker running', () => {
    const r = runChild('workers.mjs', `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const wt = require('node:worker_threads');
let live = 0, started = 0, peak = 0;
const Base = wt.Worker;
wt.Worker = class extends Base {
  constructor(...args) {
    super(...args);
    live++; started++; peak = Math.max(peak, live);
    this.on('exit', () => { live--; });
  }
};
const { init } = await import(${JSON.stringify(entry)});
const x = { data: new Float32Array(64 * 256).fill(0.5), shape: [1, 64, 256] };
const counts = [];
for (let cycle = 0; cycle < 8; cycle++) {
  const a = await init({ threads: 3 });
  const b = await init({ threads: 3 });  // shares a's workers
  a.multiHeadAttention({ embedDim: 256, numHeads: 4 }).forwardSync(x);
  a.dispose();
  b.multiHeadAttention({ embedDim: 256, numHeads: 4 }).forwardSync(x);  // still threaded
  const stillThreaded = b.threads;
  b.dispose();
  counts.push([stillThreaded, a._backend.workerCount(), b.threads]);
  // Worker.terminate() is asynchronous: wait for the 'exit' events.
  for (let i = 0; i < 500 && live > 0; i++) await new Promise((r) => setTimeout(r, 10));
}
console.log(JSON.stringify({ live, started, peak, counts }));
`);
    expect(r.started).toBe(8 * 2);  // 8 cycles × (3 - 1) workers
    expect(r.peak).toBe(2);
    expect(r.live).toBe(0);
    for (const [stillThreaded, workers, after] of r.counts) {
      expect(stillThreaded).toBe(3);
      expect(workers).toBe(0);
      expect(after).toBe(1);
    }
  });
});
