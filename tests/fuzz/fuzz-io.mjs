// Fuzz target of the weight-file parsers (web/lib/io): mutates the corpus in
// tests/fuzz/io-corpus/ and checks that every input either parses or throws a
// RangeError/TypeError whose message starts with the function's name (so an
// engine error such as a DataView bounds RangeError counts as a failure),
// never another error, and never takes long (a watchdog kills a stuck run).
//
//   npm run fuzz:io                         # 120 s
//   node tests/fuzz/fuzz-io.mjs --seconds 600 --seed 7
// Failing inputs are written to test-artifacts/fuzz-io/ (exit code 1); once
// fixed, copy them into tests/fuzz/io-corpus/ so they stay fixed.
// The Jest test tests/js/io-fuzz.test.js runs a short pass of runFuzz().
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { readSafetensors, readNpy, readNpz, listAttentionLayers, fromStateDict } from '../../web/lib/io/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const CORPUS = path.join(HERE, 'io-corpus');

// mulberry32 (also the seed source of fuzz-models.mjs)
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INTERESTING = [0, 1, 2, 7, 8, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0xffffffff, 2 ** 32, 2 ** 40, 2 ** 53 - 1];

function mutateHeader(r, u8) {
  // Structural mutation of a safetensors JSON header (reaches the validator's depths).
  if (u8.length < 10) return null;
  const n = new DataView(u8.buffer, u8.byteOffset).getUint32(0, true);
  if (n + 8 > u8.length) return null;
  let h;
  try {
    h = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + n)));
  } catch {
    return null;
  }
  const names = Object.keys(h).filter((k) => k !== '__metadata__');
  if (!names.length) return null;
  const e = h[names[Math.floor(r() * names.length)]];
  const pick = (a) => a[Math.floor(r() * a.length)];
  switch (Math.floor(r() * 7)) {
    case 0: e.data_offsets[Math.floor(r() * 2)] += pick([-8, -4, -1, 1, 4, 8, 1e6, 2 ** 53]); break;
    case 1: e.shape = e.shape.length ? e.shape.map((d) => (r() < 0.5 ? d + 1 : d)) : [2]; break;
    case 2: e.dtype = pick(['F32', 'F16', 'BF16', 'F64', 'I64', 'U64', 'I8', 'BOOL', 'F8_E4M3', 'f32', 42, null]); break;
    case 3: h[`${names[0]}_copy`] = { ...e }; break;
    case 4: e.shape = pick([[], [0], [-1], [1.5], 'x', [2 ** 31, 2 ** 31], null]); break;
    case 5: e.data_offsets = pick([[0], [0, 0, 0], 'x', null, [-1, 4], [1, 0]]); break;
    default: h.__metadata__ = pick([{ a: 1 }, 'x', null, { a: 'b' }, []]);
  }
  const text = new TextEncoder().encode(JSON.stringify(h));
  const out = new Uint8Array(8 + text.length + (u8.length - 8 - n));
  new DataView(out.buffer).setUint32(0, text.length, true);
  out.set(text, 8);
  out.set(u8.subarray(8 + n), 8 + text.length);
  return out;
}

export function mutate(r, seeds) {
  let u8 = seeds[Math.floor(r() * seeds.length)].slice();
  const rounds = 1 + Math.floor(r() * 3);
  for (let k = 0; k < rounds; k++) {
    const pos = () => Math.floor(r() * Math.max(1, u8.length));
    switch (Math.floor(r() * 9)) {
      case 0: if (u8.length) u8[pos()] ^= 1 << Math.floor(r() * 8); break;
      case 1: if (u8.length) u8[pos()] = INTERESTING[Math.floor(r() * 8)]; break;
      case 2: u8 = u8.slice(0, pos()); break;
      case 3: {
        const p = pos();
        const ins = new Uint8Array(1 + Math.floor(r() * 16)).map(() => Math.floor(r() * 256));
        u8 = new Uint8Array([...u8.subarray(0, p), ...ins, ...u8.subarray(p)]);
        break;
      }
      case 4: {
        const p = pos();
        u8 = new Uint8Array([...u8.subarray(0, p), ...u8.subarray(p + 1 + Math.floor(r() * 32))]);
        break;
      }
      case 5: {
        // An interesting little-endian integer at an offset (lengths, offsets, counts).
        if (u8.length < 8) break;
        const p = Math.min(pos(), u8.length - 8);
        const v = INTERESTING[Math.floor(r() * INTERESTING.length)] + (r() < 0.3 ? u8.length : 0);
        const dv = new DataView(u8.buffer, u8.byteOffset);
        if (r() < 0.5) dv.setUint32(p, v >>> 0, true);
        else { dv.setUint32(p, v % 2 ** 32, true); dv.setUint32(p + 4, Math.floor(v / 2 ** 32), true); }
        break;
      }
      case 6: {
        let m = null;
        try {
          m = mutateHeader(r, u8);
        } catch {
          // a header already mangled past structural editing
        }
        if (m) u8 = m;
        break;
      }
      case 7: {
        const other = seeds[Math.floor(r() * seeds.length)];
        const p = pos();
        u8 = new Uint8Array([...u8.subarray(0, p), ...other.subarray(Math.floor(r() * other.length))]);
        break;
      }
      default: {
        // Mutate a byte inside a .npy header dict (text).
        const i = u8.indexOf(0x7b); // '{'
        if (i >= 0) u8[i + Math.floor(r() * 60)] = ' ():,\'"{}0123456789TF<>|fiu'.charCodeAt(Math.floor(r() * 28));
      }
    }
  }
  return u8;
}

const PARSERS = [['readSafetensors', readSafetensors], ['readNpy', readNpy], ['readNpz', readNpz]];

/** Inputs each parser accepted (a measure of how deep the mutations reach). */
export const accepted = { readSafetensors: 0, readNpy: 0, readNpz: 0, fromStateDict: 0 };

/** Runs one input through every parser; returns null or a description of the failure. */
export function check(u8) {
  for (const [name, fn] of PARSERS) {
    let out;
    try {
      out = fn(u8);
      accepted[name]++;
    } catch (e) {
      if ((e instanceof RangeError || e instanceof TypeError) && e.message.startsWith(`${name}: `)) continue;
      return `${name} threw ${e?.constructor?.name}: ${e?.message}`;
    }
    const tensors = name === 'readNpy' ? { x: out } : out.tensors;
    try {
      listAttentionLayers(tensors);
      fromStateDict(tensors);
      accepted.fromStateDict++;
    } catch (e) {
      const ok = (e instanceof RangeError || e instanceof TypeError) && /^(listAttentionLayers|fromStateDict): /.test(e.message);
      if (!ok) return `state dict of ${name}'s output threw ${e?.constructor?.name}: ${e?.message}`;
    }
  }
  return null;
}

export function loadCorpus(dir = CORPUS) {
  return readdirSync(dir).sort().map((f) => new Uint8Array(readFileSync(path.join(dir, f))));
}

/**
 * Mutates the corpus for `seconds`; returns { runs, failures: [{ input, why }], slowest }.
 * Every corpus file itself is checked first.
 */
export function runFuzz({ seconds = 3, seed = 1, corpus = loadCorpus(), onInput } = {}) {
  const r = rng(seed);
  const failures = [];
  let runs = 0;
  let slowest = 0;
  const one = (u8) => {
    onInput?.(u8);
    const t0 = performance.now();
    const why = check(u8);
    slowest = Math.max(slowest, performance.now() - t0);
    runs++;
    if (why) failures.push({ input: u8, why });
  };
  corpus.forEach(one);
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end && failures.length < 20) one(mutate(r, corpus));
  return { runs, failures, slowest, accepted: { ...accepted } };
}

function main() {
  const args = process.argv.slice(2);
  const arg = (k, d) => {
    const i = args.indexOf(k);
    return i >= 0 ? Number(args[i + 1]) : d;
  };
  const seconds = arg('--seconds', 120);
  const seed = arg('--seed', Date.now() % 2 ** 31);
  const outDir = path.join(HERE, '..', '..', 'test-artifacts', 'fuzz-io');
  // The fuzzing runs in a worker; it posts each input before parsing it, so a
  // hang (no message for 10 s) is reported with the input that caused it.
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { seconds, seed } });
  let last = null;
  let lastAt = Date.now();
  const save = (u8, why) => {
    mkdirSync(outDir, { recursive: true });
    const file = path.join(outDir, `fail-${seed}-${Date.now()}.bin`);
    writeFileSync(file, u8);
    console.error(`FAIL ${why}\n  input saved to ${file}`);
  };
  const timer = setInterval(() => {
    if (Date.now() - lastAt > 10000) {
      save(last, 'hang: one input took more than 10 s');
      worker.terminate();
      process.exitCode = 1;
      clearInterval(timer);
    }
  }, 1000);
  worker.on('message', (m) => {
    lastAt = Date.now();
    if (m.input) last = m.input;
    if (m.done) {
      clearInterval(timer);
      for (const f of m.failures) save(f.input, f.why);
      console.log(`fuzz-io: seed ${seed}, ${m.runs} inputs in ${seconds} s, slowest ${m.slowest.toFixed(1)} ms, accepted ${JSON.stringify(m.accepted)}, ${m.failures.length} failures`);
      if (m.failures.length) process.exitCode = 1;
    }
  });
  worker.on('error', (e) => {
    clearInterval(timer);
    save(last ?? new Uint8Array(0), `worker error: ${e.stack}`);
    process.exitCode = 1;
  });
}

if (!isMainThread && workerData) {
  const res = runFuzz({ seconds: workerData.seconds, seed: workerData.seed, onInput: (u8) => parentPort.postMessage({ input: u8 }) });
  parentPort.postMessage({ done: true, runs: res.runs, slowest: res.slowest, failures: res.failures, accepted: res.accepted });
} else if (isMainThread && process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
