// Fuzz target of the GGUF reader (web/lib/io/gguf.js): mutates the seeds in
// tests/fuzz/gguf-corpus/ (copies of tests/golden/gguf/) and checks that every
// input either parses (and each tensor dequantizes or is refused) or throws a
// RangeError/TypeError whose message starts with 'readGguf: ', never another
// error, and that no input takes more than a second.
// runModelFuzz does the same one level up, for lab.loadModel's GGUF path
// without the wasm core (web/lib/model/gguf.js: the family from the metadata,
// the config, the plan of the tensors, the tokenizer built from
// tokenizer.ggml.*): mutated headers of tests/golden/gguf/models/*.gguf give a
// RangeError/TypeError starting 'loadModel: ', never another error.
//   node tests/fuzz/fuzz-gguf.mjs --seconds 60 --seed 7
// Failing inputs go to test-artifacts/fuzz-gguf/ (exit code 1).
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { readGguf } from '../../web/lib/io/gguf.js';
import { rng } from './fuzz-io.mjs';
import { openGgufModel } from '../../web/lib/model/gguf.js';
import { plan } from '../../web/lib/model/plan.js';
import { ModelTokenizer } from '../../web/lib/model/tokenizer.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = path.join(HERE, 'gguf-corpus');

function mutate(r, seed) {
  const b = Uint8Array.from(seed);
  const n = 1 + Math.floor(r() * 8);
  for (let i = 0; i < n; i++) {
    const p = Math.floor(r() * b.length);
    const k = r();
    if (k < 0.5) b[p] = Math.floor(r() * 256);
    else if (k < 0.7) b[p] = [0, 0xff, 0x7f, 0x80, 1][Math.floor(r() * 5)];
    else if (k < 0.85) return b.subarray(0, p);
    else b[p] ^= 1 << Math.floor(r() * 8);
  }
  return b;
}

function check(bytes) {
  try {
    const g = readGguf(bytes);
    for (const t of g.tensors) {
      try { g.tensor(t.name); } catch (e) { if (!/^readGguf: /.test(e.message)) throw e; }
    }
  } catch (e) {
    if ((e instanceof RangeError || e instanceof TypeError) && /^readGguf: /.test(e.message)) return;
    return e;
  }
  return undefined;
}

/** Runs `iterations` mutations; returns the failures [{bytes, error}]. */
export function runFuzz({ iterations = 2000, seed = 1 } = {}) {
  const r = rng(seed);
  const seeds = readdirSync(CORPUS).map((f) => new Uint8Array(readFileSync(path.join(CORPUS, f))));
  const failures = [];
  for (let i = 0; i < iterations; i++) {
    const input = mutate(r, seeds[Math.floor(r() * seeds.length)]);
    const t0 = Date.now();
    const error = check(input);
    if (Date.now() - t0 > 1000) failures.push({ bytes: input, error: new Error('took over 1 s') });
    else if (error) failures.push({ bytes: input, error });
  }
  return failures;
}

const MODEL_SEEDS = path.join(HERE, '..', 'golden', 'gguf', 'models');

async function checkModel(bytes) {
  try {
    const g = await openGgufModel(bytes);
    const c = { modelType: g.type, ...g.table.config(g.hfConfig, new Set(g.weights.tensors.keys())) };
    plan(g.table, c, g.weights.tensors);
    if (g.tokenizerJson) new ModelTokenizer(g.tokenizerJson, c.vocabSize).encode('The cat 你好 🐱');
  } catch (e) {
    if ((e instanceof RangeError || e instanceof TypeError) && /^loadModel: /.test(e.message)) return undefined;
    return e;
  }
  return undefined;
}

/** runFuzz for loadModel's GGUF path: mutations inside the headers of the model fixtures. */
export async function runModelFuzz({ iterations = 300, seed = 1 } = {}) {
  const r = rng(seed);
  const seeds = readdirSync(MODEL_SEEDS).filter((f) => /^(llama|gpt2|qwen2|qwen3|gemma|gemma2|gemma3|phi3|gpt_neox|mistral)-q8_0\.gguf$/.test(f))
    .map((f) => new Uint8Array(readFileSync(path.join(MODEL_SEEDS, f))));
  const failures = [];
  for (let i = 0; i < iterations; i++) {
    const s = seeds[Math.floor(r() * seeds.length)];
    // The first 16 KiB: the header (metadata, token lists, tensor infos) and the start of the data.
    const headerEnd = Math.min(s.length, 16384);
    const b = Uint8Array.from(s);
    const n = 1 + Math.floor(r() * 4);
    for (let k = 0; k < n; k++) {
      const p = Math.floor(r() * headerEnd);
      const x = r();
      if (x < 0.6) b[p] = Math.floor(r() * 256);
      else if (x < 0.9) b[p] ^= 1 << Math.floor(r() * 8);
      else b[p] = [0, 0xff, 0x7f, 0x80, 1][Math.floor(r() * 5)];
    }
    const t0 = Date.now();
    const error = await checkModel(b);
    if (Date.now() - t0 > 1000) failures.push({ bytes: b, error: new Error('took over 1 s') });
    else if (error) failures.push({ bytes: b, error });
  }
  return failures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? Number(process.argv[i + 1]) : d; };
  const seconds = arg('--seconds', 30); let seed = arg('--seed', 1); const end = Date.now() + seconds * 1000;
  let runs = 0; let failed = 0;
  const dir = path.join(HERE, '..', '..', 'test-artifacts', 'fuzz-gguf');
  while (Date.now() < end) {
    for (const f of [...runFuzz({ iterations: 500, seed }), ...await runModelFuzz({ iterations: 100, seed })]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `fail-${seed}-${failed++}.gguf`), f.bytes);
      console.error(f.error);
    }
    runs += 600; seed++;
  }
  console.log(`fuzz-gguf: ${runs} inputs, ${failed} failures`);
  process.exit(failed ? 1 : 0);
}
