// The wasm heap above 2 GiB (MAXIMUM_MEMORY=4GB, CMakeLists.txt). Emscripten
// 3.1.6 unsigns the heap pointers of its own glue (CAN_ADDRESS_2GB); an
// export's i32 result (Module._malloc) still arrives signed, so web/lib reads
// every pointer with >>> 0 / >>> 2. Checked against the float64 references of
// tests/golden/models/ (numpy, tests/reference/hf_models.py):
//   - npm test: the lower 2 GiB of the heap is taken first by two raw blocks
//     that are never written (address space, not memory), so that a model's
//     weights, the load's staging buffer and every call's buffers sit above
//     2 GiB; gpt2 (F32, F16), llama (BF16), phi3 and gpt_neox (F16, fused
//     projections) then give their references' logits, attentions and next
//     tokens, save → load gives the same logits, and an op its result from below;
//   - long (ATTNLAB_LONG=1, scripts/test-long.sh): a model whose own weights
//     take 2.0 GiB of the heap (3.0 GiB of wasm memory as it runs) (llama's golden with its vocabulary widened
//     to 2^23 rows, the rest zeros, streamed from a generated file, never in
//     memory whole): refused under the old 2 GiB limit, loaded now, and its
//     logits are the reference's (the extra columns exactly 0).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { maxRel } from './helpers.js';
import { HEADROOM_BYTES } from '../../web/lib/model/plan.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');
const read = (name, f) => fs.readFileSync(path.join(MODELS, name, f));
const json = (name, f) => JSON.parse(read(name, f));
const GiB = 2 ** 30;

/** Checks a loaded golden model against expected.json: logits, attentions, next tokens, greedy. */
async function matchesReference(model, expected, { columns } = {}) {
  for (const c of expected.cases) {
    const r = model.forwardSync(c.ids, { attentions: true });
    const L = c.ids.length;
    const V = model.config.vocabSize;
    let logits = r.logits.data;
    if (columns) {
      // Only the reference's columns; the rest must be exactly zero.
      const kept = new Float32Array(L * columns);
      let nonzero = 0;
      for (let i = 0; i < L; i++) {
        kept.set(logits.subarray(i * V, i * V + columns), i * columns);
        for (let j = i * V + columns; j < (i + 1) * V; j++) if (logits[j] !== 0) nonzero++;
      }
      expect(nonzero).toBe(0);
      logits = kept;
    }
    expect(maxRel(logits, c.logits)).toBeLessThan(1e-4);
    r.attentions.forEach((a, l) => expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-4));
  }
}

describe('the wasm heap above 2 GiB', () => {
  test('the limit the module reports is 4 GB less one page; heapBytesInUse reads past 2 GiB', async () => {
    const lab = await init({ backend: 'wasm' });
    expect(lab.heapLimit).toBe(2 ** 32 - 2 ** 16);
    const M = lab._backend.wasmModule;
    const base = lab._backend.heapBytesInUse();
    const a = M._malloc(1.5 * GiB) >>> 0;
    const b = M._malloc(0.75 * GiB) >>> 0;
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a);
    expect(b + 0.75 * GiB).toBeGreaterThan(2 ** 31);
    const used = lab._backend.heapBytesInUse();
    expect(used - base).toBeGreaterThanOrEqual(2.25 * GiB);
    M._free(b);
    M._free(a);
    expect(lab._backend.heapBytesInUse()).toBe(base);
    lab.dispose();
  });

  test('gpt2, llama, phi3 and gpt_neox (F32 and 16-bit) loaded and run above 2 GiB equal their float64 references; an op equals its result from below', async () => {
    const lab = await init({ backend: 'wasm' });
    const M = lab._backend.wasmModule;
    const x = Float32Array.from({ length: 2 * 5 * 16 }, (_, i) => Math.sin(i * 0.37));
    const mha = lab.multiHeadAttention({ embedDim: 16, numHeads: 4, seed: 3 });
    const t = { data: x, shape: [2, 5, 16] };
    const below = mha.forwardSync(t, t, t, { needWeights: true });
    // (kept until the end: its memory below 2 GiB is not free for the objects above)
    // The lower 2 GiB taken (never written), and the small free holes below it filled, so that
    // every later allocation lands above 2 GiB.
    const raw = [M._malloc(GiB) >>> 0, M._malloc(GiB) >>> 0];
    expect(raw.every((p) => p > 0)).toBe(true);
    const fillHoles = () => {
      for (const size of [65536, 4096, 256, 16]) {
        for (let i = 0; i < 1e6; i++) {
          const p = M._malloc(size) >>> 0;
          if (p >= 2 ** 31) {
            M._free(p);
            break;
          }
          raw.push(p);
        }
      }
    };
    // The pointers the library's JS gets from _malloc (arena buffers, the load's staging buffer).
    const malloc = M._malloc;
    const seen = [];
    M._malloc = (n) => {
      const p = malloc(n);
      seen.push({ p: p >>> 0, signed: p < 0, n });
      return p;
    };
    try {
      // F32, the 16-bit files (staged as bytes) and two fused layouts (staged rows moved: phi3's
      // qkv_proj, gpt_neox's query_key_value) of the same references.
      for (const [name, file] of [['gpt2', 'model.safetensors'], ['gpt2', 'model-f16.safetensors'], ['llama', 'model-bf16.safetensors'], ['phi3', 'model.safetensors'], ['gpt_neox-sequential', 'model.safetensors']]) {
        fillHoles();
        const model = await lab.loadModel({ config: json(name, 'config.json'), weights: read(name, file), tokenizer: read(name, 'tokenizer.json') });
        await matchesReference(model, json(name, 'expected.json'));
        const e = json(name, 'expected.json').cases[0];
        const next = await model.nextTokens(e.ids, { k: 3 });
        const last = e.logits.at(-1);
        expect(next.map((t) => t.id)).toEqual(last.map((v, i) => i).sort((p, q) => last[q] - last[p]).slice(0, 3));
        // save → load, still above 2 GiB.
        const files = model.save();
        const again = await lab.loadModel({ config: files['config.json'], weights: files['model.safetensors'] });
        expect([...again.forwardSync(e.ids).logits.data]).toEqual([...model.forwardSync(e.ids).logits.data]);
        again.dispose();
        model.dispose();
      }
      fillHoles();
      const mha2 = lab.multiHeadAttention({ embedDim: 16, numHeads: 4, seed: 3 });
      const above = mha2.forwardSync(t, t, t, { needWeights: true });
      expect([...above.output.data]).toEqual([...below.output.data]);
      expect([...above.weights.data]).toEqual([...below.weights.data]);
      mha2.dispose();
      mha.dispose();
      // (The C++ core frees and reuses a few small buffers below 2 GiB, so not every block is above.)
      const high = seen.filter((x) => x.p >= 2 ** 31);
      expect(high.length).toBeGreaterThan(seen.length / 2);
      expect(high.every((x) => x.signed)).toBe(true); // each came back from the export as a negative number
      expect(seen.some((x) => x.p >= 2 ** 31 && x.n >= 2 * 2 ** 20)).toBe(true); // the load's staging buffer (CHUNK_BYTES, 2 MiB since GGUF blocks are kept)
    } finally {
      M._malloc = malloc;
      for (const p of raw) M._free(p);
      lab.dispose();
    }
  });
});

// llama's golden with V rows: the reference's 324 rows, then zeros, as a lazily generated safetensors Blob.
function widenedLlama(V) {
  const src = read('llama', 'model.safetensors');
  const n = Number(src.readBigUInt64LE(0));
  const header = JSON.parse(src.subarray(8, 8 + n).toString('utf8'));
  const dataStart = 8 + n;
  const V0 = json('llama', 'config.json').vocab_size;
  const wide = new Set(['model.embed_tokens.weight', 'lm_head.weight']);
  const names = Object.keys(header).filter((k) => k !== '__metadata__').sort((p, q) => header[p].data_offsets[0] - header[q].data_offsets[0]);
  const out = {};
  const parts = []; // { begin, end, from (source offset) | null, realEnd }
  let at = 0;
  for (const k of names) {
    const t = header[k];
    const [b, e] = t.data_offsets;
    const shape = wide.has(k) ? [V, t.shape[1]] : t.shape;
    const bytes = shape.reduce((p, q) => p * q, 1) * 4;
    out[k] = { dtype: t.dtype, shape, data_offsets: [at, at + bytes] };
    parts.push({ begin: at, end: at + bytes, from: dataStart + b, realBytes: e - b });
    at += bytes;
  }
  const text = Buffer.from(JSON.stringify(out));
  const head = Buffer.alloc(8 + text.length);
  head.writeBigUInt64LE(BigInt(text.length), 0);
  text.copy(head, 8);
  const size = head.length + at;
  const bytesAt = (a, b) => {
    const buf = new Uint8Array(b - a);
    if (a < head.length) buf.set(head.subarray(a, Math.min(b, head.length)), 0);
    for (const p of parts) {
      const lo = Math.max(a, head.length + p.begin);
      const hi = Math.min(b, head.length + p.begin + p.realBytes);
      if (lo < hi) buf.set(src.subarray(p.from + lo - head.length - p.begin, p.from + hi - head.length - p.begin), lo - a);
    }
    return buf;
  };
  const blob = {
    name: 'model.safetensors',
    size,
    slice(a = 0, b = size) {
      const part = bytesAt(a, Math.min(b, size));
      return { size: part.length, arrayBuffer: async () => part.buffer, slice: () => { throw new Error('nested slice'); } };
    },
    arrayBuffer: async () => { throw new Error('the whole file was read'); },
  };
  return { blob, config: { ...json('llama', 'config.json'), vocab_size: V }, V0, weightBytes: at };
}

const LONG = process.env.ATTNLAB_LONG === '1';
(LONG ? describe : describe.skip)('the wasm heap above 2 GiB, long (ATTNLAB_LONG=1)', () => {
  test('a model of 2.0 GiB of float32 weights (3.0 GiB of wasm memory as it runs), refused by the old 2 GiB rule, loads and runs: its logits are the reference\'s, its extra columns 0', async () => {
    const V = 2 ** 23; // the embedding at its limit of 2^28 elements (1 GiB), and the head as large
    const { blob, config, V0, weightBytes } = widenedLlama(V);
    expect(weightBytes).toBeGreaterThan(2 * GiB);
    expect(weightBytes + HEADROOM_BYTES).toBeGreaterThan(2 ** 31); // the rule with the old 2 GiB limit refused it
    const lab = await init({ backend: 'wasm' });
    const t0 = Date.now();
    const model = await lab.loadModel({ config, weights: blob });
    const loadMs = Date.now() - t0;
    const inUse = lab._backend.heapBytesInUse();
    const memory = lab._backend.memoryBytes();
    expect(model.config.vocabSize).toBe(V);
    expect(inUse).toBeGreaterThan(2 * GiB);
    const t1 = Date.now();
    await matchesReference(model, json('llama', 'expected.json'), { columns: V0 });
    // eslint-disable-next-line no-console
    console.log(`${(weightBytes / GiB).toFixed(2)} GiB of weights: loaded in ${loadMs} ms, heap in use ${(inUse / GiB).toFixed(2)} GiB (memory ${(memory / GiB).toFixed(2)} GiB), three forwards in ${Date.now() - t1} ms`);
    model.dispose();
    lab.dispose();
  }, 300000);
});
