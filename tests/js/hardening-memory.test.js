// hardening-memory.test.js — memory behaviour, measured in child processes
// started with `node --expose-gc` (so the JS heap can be collected on demand,
// which Jest's own process does not allow):
//
//   * 10,000 MHA forward calls with fresh inputs (plus thousands of sdpa,
//     selfAttention, layer, positionalEncoding and failing calls) leave the
//     wasm heap exactly where it was (mallinfo().uordblks via
//     heapBytesInUse()), the wasm memory unchanged, and the JS heap flat
//     (within a small bound after a full GC);
//   * objects the user forgets to dispose are freed by the FinalizationRegistry
//     backstop once they are garbage-collected;
//   * dispose() twice is harmless, and disposed objects are not freed again by
//     the backstop (a double free would corrupt the wasm heap).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = pathToFileURL(path.join(root, 'web/node.js')).href;

let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-memory-'));
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs an ES module script under `node --expose-gc`; returns its last stdout line as JSON. */
function runChild(name, source) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, source);
  const out = execFileSync(process.execPath, ['--expose-gc', file], { encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 20 });
  const lines = out.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

const PRELUDE = `
import { init } from ${JSON.stringify(entry)};
const backend = process.argv[2] ?? 'wasm';
let seed = 12345;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const fresh = (shape) => {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rnd();
  return { data, shape };
};
async function fullGc() {
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 5));
  }
}
`;

describe.each(['wasm', 'wasm-scalar'])('wasm and JS heaps stay flat — %s', (backend) => {
  test('10,000 MHA forward calls with fresh inputs, and thousands of other calls', () => {
    const r = runChild(`flat-${backend}.mjs`, `${PRELUDE}
const lab = await init({ backend });
const b = lab._backend;
const mha = lab.multiHeadAttention({ embedDim: 32, numHeads: 4, seed: 1 });
const layer = lab.selfAttentionLayer({ embedDim: 32, numHeads: 4, seed: 2 });

async function round(n) {
  let checksum = 0;
  for (let i = 0; i < n; i++) {
    const q = fresh([2, 5, 32]);
    const opts = i % 3 === 0 ? { mask: { kind: 'padding', lengths: [5, 1 + (i % 5)] } } : i % 3 === 1 ? { mask: { kind: 'causal' }, averageWeights: true } : { needWeights: false };
    // every 10th call through the async forward, the rest forwardSync
    const out = i % 10 === 0 ? await mha.forward(q, fresh([2, 7, 32]), undefined, opts) : mha.forwardSync(q, q, q, opts);
    checksum += out.output.data[i % out.output.data.length];
  }
  return checksum;
}
function others(n) {
  let errors = 0;
  for (let i = 0; i < n; i++) {
    lab.scaledDotProductAttention(fresh([2, 3, 4, 8]), fresh([2, 3, 6, 8]), fresh([2, 3, 6, 5]), { mask: { kind: 'keep', data: new Float32Array(6).fill(1), shape: [1, 6] } });
    lab.selfAttention(fresh([5, 16]));
    layer.forwardSync(fresh([2, 5, 32]), { training: i % 2 === 0 });
    lab.positionalEncoding(5 + (i % 7), 16);
    // failing calls: rejected by the wrapper, and rejected by the C++ core
    // after the backend allocated its buffers (they must be freed)
    try { lab.scaledDotProductAttention(fresh([4, 8]), fresh([6, 8]), fresh([6, 8]), { mask: { kind: 'padding', lengths: [9] } }); } catch { errors++; }
    try { b.sdpa({ where: 'test', batch: 1, heads: 1, lq: 4, lk: 6, d: 8, dv: 8, q: fresh([4, 8]).data, k: fresh([6, 8]).data, v: fresh([6, 8]).data,
      mask: { causal: false, lengths: Int32Array.of(9), kind: 0, data: null, shape4: [1, 1, 1, 1] }, needWeights: true }); } catch { errors++; }
  }
  return errors;
}

// warm-up: scratch buffers reach their size, lastError holds its message
await round(200);
others(50);
await fullGc();
const heap0 = b.heapBytesInUse();
const mem0 = b.memoryBytes();
const js0 = process.memoryUsage().heapUsed;
const t0 = Date.now();
const checksum = await round(10000);
const errors = others(2000);
const ms = Date.now() - t0;
await fullGc();
const heap1 = b.heapBytesInUse();
const mem1 = b.memoryBytes();
const js1 = process.memoryUsage().heapUsed;
mha.dispose();
layer.dispose();
console.log(JSON.stringify({ heap0, heap1, mem0, mem1, js0, js1, ms, errors, finite: Number.isFinite(checksum), held: b.heapBytesInUse() }));
`.replace("process.argv[2] ?? 'wasm'", JSON.stringify(backend)));
    // eslint-disable-next-line no-console
    console.log(`${backend}: 10,000 MHA + 2,000×6 other calls in ${r.ms} ms; wasm heap ${r.heap0} → ${r.heap1} bytes, wasm memory ${r.mem0} → ${r.mem1}, JS heap ${(r.js0 / 2 ** 20).toFixed(2)} → ${(r.js1 / 2 ** 20).toFixed(2)} MiB`);
    expect(r.finite).toBe(true);
    expect(r.errors).toBe(4000);
    // wasm: not a single byte more in use, no growth of the memory
    expect(r.heap1).toBe(r.heap0);
    expect(r.mem1).toBe(r.mem0);
    // JS: after a full GC the heap is within 2 MiB of where it was (20,000+
    // results of ~1 KiB each would be > 20 MiB if any were retained)
    expect(Math.abs(r.js1 - r.js0)).toBeLessThan(2 * 2 ** 20);
  });
});

describe('the 4 GB wasm memory exhausted', () => {
  test('creations and calls that do not fit fail with a RangeError, never an abort; the module recovers', () => {
    const r = runChild('exhaust.mjs', `${PRELUDE}
const lab = await init({ backend: 'wasm' });
const b = lab._backend;
// The core creates its thread pool once, on the first call large enough for the
// parallel path (~216 bytes, never freed by design): part of the baseline.
{ const w = lab.multiHeadAttention({ embedDim: 2048, numHeads: 8 }); w.forwardSync(fresh([1, 4, 2048])); w.dispose(); }
const base = b.heapBytesInUse();
// The lower 2 GiB of the heap taken first by two raw blocks that are never written (the pages
// cost address space, not memory), so that the objects below sit above 2 GiB, where pointers
// are unsigned in JS, and the fill writes about 2 GiB as it did with the 2 GiB heap.
const M = b.wasmModule;
const raw = [];
for (let i = 0; i < 2; i++) raw.push(M._malloc(Math.floor((M.heapMaxBytes() - 2 ** 31) / 2)) >>> 0);
const rawOk = raw.every((p) => p > 0);
const keep = [];
const fill = (embedDim, max) => {
  for (let i = 0; i < max; i++) {
    try {
      keep.push(lab.multiHeadAttention({ embedDim, numHeads: 8 }));
    } catch (e) {
      return \`\${e.name}: \${e.message}\`;
    }
  }
  return null;
};
// Fill the heap with MHA weights, big ones first, then smaller ones.
const fills = [fill(2048, 40), fill(512, 400), fill(128, 4000)];
const memFull = b.memoryBytes();
const above2GiB = keep.filter((m) => m._obj.handle >= 2 ** 31).length;
const calls = {};
const attempt = (name, f) => {
  try { f(); calls[name] = 'ok'; } catch (e) { calls[name] = \`\${e.name}: \${e.message}\`; }
};
attempt('positionalEncoding 8192×4096', () => lab.positionalEncoding(8192, 4096));
attempt('positionalEncoding 1×2^28', () => lab.positionalEncoding(1, 2 ** 28));
attempt('multiHeadAttention 1024', () => lab.multiHeadAttention({ embedDim: 1024, numHeads: 8 }));
attempt('selfAttentionLayer 1024', () => lab.selfAttentionLayer({ embedDim: 1024, numHeads: 8 }));
attempt('mha.forwardSync [1,2048,2048]', () => keep[0].forwardSync(fresh([1, 2048, 2048])));
attempt('scaledDotProductAttention 4096²', () => lab.scaledDotProductAttention(fresh([4096, 64]), fresh([4096, 64]), fresh([4096, 64])));
attempt('setWeights', () => keep[0].setWeights({ bq: new Float32Array(2048) }));
const small = lab.positionalEncoding(3, 4).data[5];
const last = keep.at(-1);
for (const m of keep) m.dispose();
for (const p of raw) M._free(p);
const afterDispose = b.heapBytesInUse();
const again = lab.multiHeadAttention({ embedDim: 2048, numHeads: 8 });
const out = again.forwardSync(fresh([1, 4, 2048])).output.data;
again.dispose();
console.log(JSON.stringify({ base, rawOk, above2GiB, fills, objects: keep.length, memFull, calls, small, afterDispose, lastDisposed: last.disposed,
  finite: out.every(Number.isFinite), final: b.heapBytesInUse() }));
`);
    // eslint-disable-next-line no-console
    console.log(`exhaustion: ${r.objects} objects (weights above the raw 2 GiB; ${r.above2GiB} handles too) filled ${(r.memFull / 2 ** 20).toFixed(0)} MiB; ${JSON.stringify(r.calls)}`);
    expect(r.rawOk).toBe(true);
    expect(r.memFull).toBeGreaterThan(3.9 * 2 ** 30); // the memory really was full
    for (const f of r.fills) expect(f).toMatch(/^RangeError: multiHeadAttention: .*out of (wasm )?memory/);
    for (const [name, result] of Object.entries(r.calls)) {
      expect([name, result.startsWith('ok') || result.startsWith('RangeError: ')]).toEqual([name, true]);
      expect([name, result.includes('Aborted')]).toEqual([name, false]);
    }
    expect(Object.values(r.calls).filter((c) => c !== 'ok').length).toBeGreaterThanOrEqual(5);
    expect(r.small).toBeCloseTo(Math.cos(1), 6);
    expect(r.lastDisposed).toBe(true);
    // everything freed (a few bytes more: lastError now holds a longer message)
    expect(r.afterDispose - r.base).toBeLessThan(1024);
    expect(r.afterDispose).toBeGreaterThanOrEqual(r.base);
    expect(r.finite).toBe(true);
    expect(r.final).toBe(r.afterDispose);
  });
});

describe('FinalizationRegistry backstop and dispose', () => {
  test('forgotten objects are freed after GC; dispose twice is harmless; no double free', () => {
    const r = runChild('finalize.mjs', `${PRELUDE}
const lab = await init({ backend: 'wasm' });
const b = lab._backend;
const x = fresh([2, 4, 64]);
// warm-up of the shared paths (lastError string, allocator state)
{
  const m = lab.multiHeadAttention({ embedDim: 64, numHeads: 4 });
  m.forwardSync(x);
  m.dispose();
}
await fullGc();
const base = b.heapBytesInUse();

// 1. Forgotten: 40 MHAs and 20 layers, used once and dropped without dispose().
(function leakSome() {
  for (let i = 0; i < 40; i++) lab.multiHeadAttention({ embedDim: 64, numHeads: 4, seed: i }).forwardSync(x);
  for (let i = 0; i < 20; i++) lab.selfAttentionLayer({ embedDim: 64, numHeads: 4, seed: i }).forwardSync(x);
})();
const afterCreate = b.heapBytesInUse();
let rounds = 0;
while (b.heapBytesInUse() > base && rounds < 200) {
  await fullGc();
  rounds++;
}
const afterGc = b.heapBytesInUse();

// 2. Disposed twice (and once more after GC had a chance): harmless, freed once.
let threw = null;
(function disposeTwice() {
  for (let i = 0; i < 30; i++) {
    const m = i % 2 ? lab.multiHeadAttention({ embedDim: 64, numHeads: 4 }) : lab.selfAttentionLayer({ embedDim: 64, numHeads: 4 });
    m.forwardSync(x);
    try { m.dispose(); m.dispose(); } catch (e) { threw = String(e); }
  }
})();
const afterDispose = b.heapBytesInUse();
for (let i = 0; i < 6; i++) await fullGc();
const afterDisposeGc = b.heapBytesInUse();

// 3. Mixed: some disposed, some forgotten; then the module still works and
//    a fresh object allocates and frees cleanly (a double free would have
//    corrupted dlmalloc's lists by now).
(function mixed() {
  for (let i = 0; i < 20; i++) {
    const m = lab.multiHeadAttention({ embedDim: 64, numHeads: 4 });
    if (i % 2) m.dispose();
  }
})();
rounds = 0;
while (b.heapBytesInUse() > base && rounds < 200) {
  await fullGc();
  rounds++;
}
const afterMixed = b.heapBytesInUse();
const m = lab.multiHeadAttention({ embedDim: 64, numHeads: 4, seed: 9 });
const out = m.forwardSync(x).output.data;
const held = m.heldBytes();
m.dispose();
console.log(JSON.stringify({ base, afterCreate, afterGc, afterDispose, afterDisposeGc, afterMixed, threw,
  finalHeap: b.heapBytesInUse(), finite: out.every(Number.isFinite), held }));
`);
    // eslint-disable-next-line no-console
    console.log(`finalization: heap ${r.base} → ${r.afterCreate} after 60 forgotten objects → ${r.afterGc} after GC`);
    expect(r.afterCreate - r.base).toBeGreaterThan(60 * 64 * 64 * 4 * 4); // the objects really held weights
    expect(r.afterGc).toBe(r.base); // the backstop freed every one of them
    expect(r.threw).toBeNull();
    expect(r.afterDispose).toBe(r.base);
    expect(r.afterDisposeGc).toBe(r.base);
    expect(r.afterMixed).toBe(r.base);
    expect(r.finite).toBe(true);
    expect(r.held).toBeGreaterThan(0);
    expect(r.finalHeap).toBe(r.base);
  });
});
