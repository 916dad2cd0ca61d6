// Fuzz target of the PyTorch checkpoint reader (web/lib/io/zip.js,
// torch-pickle.js, torch.js): mutates the seeds in tests/fuzz/torch-corpus/
// (tiny torch.save files written by tests/reference/torch_fixtures.py) and
// checks that every input either reads (each tensor's bytes too) or throws a
// RangeError/TypeError whose message starts with 'readTorch: ', never another
// error, and that no input takes more than a second. Half the mutations go
// to data.pkl itself (found through the zip's own structure, so they reach
// the unpickler rather than only the zip directory).
//   node tests/fuzz/fuzz-torch.mjs --seconds 60 --seed 7
// Failing inputs go to test-artifacts/fuzz-torch/ (exit code 1); once fixed,
// copy them into tests/fuzz/torch-corpus/ so they stay fixed.
// The Jest test tests/js/io-torch.test.js runs a short pass of runFuzz().
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { readTorchBytes } from '../../web/lib/io/torch.js';
import { rng } from './fuzz-io.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = path.join(HERE, 'torch-corpus');
const OPCODES = [0x80, 0x2e, 0x28, 0x7d, 0x5d, 0x29, 0x74, 0x85, 0x86, 0x87, 0x71, 0x72, 0x68, 0x6a, 0x4b, 0x4d, 0x4a, 0x8a, 0x58, 0x63, 0x93, 0x52, 0x62, 0x51, 0x73, 0x75, 0x61, 0x65, 0x30, 0x31, 0x32, 0x69, 0x81, 0x94, 0x95];

/**
 * The byte range of the stored data.pkl in a torch zip, or null: from the
 * central directory (torch's local headers leave the sizes 0 and put them in
 * a data descriptor), written here apart from web/lib/io/zip.js.
 */
export function pickleRange(b) {
  if (b.length < 22) return null;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const eocd = b.length - 22;
  if (dv.getUint32(eocd, true) !== 0x06054b50) return null;
  const count = dv.getUint16(eocd + 10, true);
  let p = dv.getUint32(eocd + 16, true);
  for (let i = 0; i < count && p + 46 <= b.length && dv.getUint32(p, true) === 0x02014b50; i++) {
    const size = dv.getUint32(p + 20, true);
    const nameLen = dv.getUint16(p + 28, true);
    const local = dv.getUint32(p + 42, true);
    const name = Buffer.from(b.subarray(p + 46, p + 46 + nameLen)).toString('latin1');
    if (name.endsWith('/data.pkl') && local + 30 <= b.length) {
      const begin = local + 30 + dv.getUint16(local + 26, true) + dv.getUint16(local + 28, true);
      return begin + size <= b.length ? [begin, begin + size] : null;
    }
    p += 46 + nameLen + dv.getUint16(p + 30, true) + dv.getUint16(p + 32, true);
  }
  return null;
}

function mutate(r, seed) {
  const b = Uint8Array.from(seed);
  const range = r() < 0.5 ? pickleRange(b) : null;
  const [lo, hi] = range ?? [0, b.length];
  const n = 1 + Math.floor(r() * 6);
  for (let i = 0; i < n; i++) {
    const p = lo + Math.floor(r() * Math.max(1, hi - lo));
    const k = r();
    if (k < 0.35) b[p] = Math.floor(r() * 256);
    else if (k < 0.55 && range) b[p] = OPCODES[Math.floor(r() * OPCODES.length)];
    else if (k < 0.7) b[p] = [0, 0xff, 0x7f, 0x80, 1][Math.floor(r() * 5)];
    else if (k < 0.8) return b.subarray(0, p);
    else b[p] ^= 1 << Math.floor(r() * 8);
  }
  return b;
}

async function check(bytes) {
  try {
    const { tensors } = await readTorchBytes(bytes);
    for (const t of Object.values(tensors)) {
      const need = t.shape.reduce((a, d) => a * d, 1);
      if (!(t.data instanceof Uint8Array) || t.data.length % Math.max(1, need) !== 0) return new Error(`a tensor of shape [${t.shape}] came back with ${t.data.length} bytes`);
    }
  } catch (e) {
    if ((e instanceof RangeError || e instanceof TypeError) && /^readTorch: /.test(e.message)) return undefined;
    return e;
  }
  return undefined;
}

/** Runs `iterations` mutations; resolves to the failures [{bytes, error}]. */
export async function runFuzz({ iterations = 2000, seed = 1 } = {}) {
  const r = rng(seed);
  const seeds = readdirSync(CORPUS).sort().map((f) => new Uint8Array(readFileSync(path.join(CORPUS, f))));
  const failures = [];
  for (let i = 0; i < iterations; i++) {
    const input = mutate(r, seeds[Math.floor(r() * seeds.length)]);
    const t0 = Date.now();
    const error = await check(input);
    if (Date.now() - t0 > 1000) failures.push({ bytes: input, error: new Error('took over 1 s') });
    else if (error) failures.push({ bytes: input, error });
  }
  return failures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? Number(process.argv[i + 1]) : d; };
  const seconds = arg('--seconds', 30); let seed = arg('--seed', 1); const end = Date.now() + seconds * 1000;
  let runs = 0; let failed = 0;
  const dir = path.join(HERE, '..', '..', 'test-artifacts', 'fuzz-torch');
  while (Date.now() < end) {
    for (const f of await runFuzz({ iterations: 500, seed })) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `fail-${seed}-${failed++}.bin`), f.bytes);
      console.error(f.error);
    }
    runs += 500; seed++;
  }
  console.log(`fuzz-torch: ${runs} inputs, ${failed} failures`);
  process.exit(failed ? 1 : 0);
}
