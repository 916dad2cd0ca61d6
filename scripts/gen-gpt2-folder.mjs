#!/usr/bin/env node
// Writes a GPT-2-shaped Hugging Face model folder with seeded weights, for
// the large-model browser test of "Your model" (tests/browser/
// your-model-large.browser.mjs). Nothing here is committed data: the folder
// goes to a temp directory.
//
//   node scripts/gen-gpt2-folder.mjs [--out DIR] [--seed N] [--layers 12] [--embd 768] [--heads 12]
//        [--vocab 50257] [--positions 1024] [--dtype F16|F32] [--sparse]
//
// Defaults: GPT-2 small (12 layers, n_embd 768, 12 heads, vocab 50257,
// n_positions 1024), F16: about 250 MB. Files: config.json (GPT-2's keys),
// tokenizer.json (byte-level BPE: GPT-2's 256 byte symbols, then seeded
// merges of a token and a letter up to vocab − 1, then <|endoftext|>: the
// digits never merge, so "11 1 1 …" is 2 + 2n tokens), model.safetensors
// (names as on the hub: wte, wpe, h.N.*, ln_f; weights ~ U(±0.02·√3),
// LayerNorm weights 1, biases 0).
// --sparse writes only the header and leaves the data a hole (the file has
// its full size but takes no disk): for the heap-limit test, whose model is
// refused before a tensor is read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const GPT2_SMALL = { layers: 12, embd: 768, heads: 12, vocab: 50257, positions: 1024 };

function xorshift(seed) {
  let s = (Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) >>> 0) || 0x6d2b79f5;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

/** GPT-2's bytes_to_unicode: byte b → its symbol, in GPT-2's id order. */
function byteSymbols() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  return bs.map((b, i) => String.fromCodePoint(cs[i]));
}

export function makeTokenizer(vocabSize, seed, { extraToken } = {}) {
  const rnd = xorshift(seed ^ 0x51ed);
  const symbols = byteSymbols();
  const vocab = new Map(symbols.map((s, i) => [s, i]));
  const tokens = symbols.slice();
  const letters = 'etaoinshrdlcumwfgypbvkjxqz'.split('');
  const merges = [];
  while (tokens.length < vocabSize - 1) {
    // Favour short tokens as the left part, so that words grow evenly.
    const a = tokens[Math.min(tokens.length - 1, Math.floor(tokens.length * rnd() ** 3))];
    const b = letters[Math.floor(letters.length * rnd() ** 1.5)];
    if (/[0-9]/.test(a)) continue;
    const m = a + b;
    if (vocab.has(m) || m.length > 16) continue;
    vocab.set(m, tokens.length);
    tokens.push(m);
    merges.push(`${a} ${b}`);
  }
  const eos = tokens.length;
  const added = [{ id: eos, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }];
  if (extraToken) added.push({ id: eos + 1, content: extraToken, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
  return {
    json: {
      version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab: Object.fromEntries(vocab), merges },
    },
    eos,
  };
}

export function gpt2Config({ layers, embd, heads, vocab, positions }, eos) {
  return {
    activation_function: 'gelu_new', architectures: ['GPT2LMHeadModel'], attn_pdrop: 0.1, bos_token_id: eos, embd_pdrop: 0.1, eos_token_id: eos,
    initializer_range: 0.02, layer_norm_epsilon: 1e-5, model_type: 'gpt2', n_embd: embd, n_head: heads, n_inner: null, n_layer: layers,
    n_positions: positions, resid_pdrop: 0.1, scale_attn_weights: true, torch_dtype: 'float16', use_cache: true, vocab_size: vocab,
  };
}

function tensorList({ layers, embd: E, vocab: V, positions: P }) {
  const t = [['wte.weight', [V, E], 'w'], ['wpe.weight', [P, E], 'w']];
  for (let i = 0; i < layers; i++) {
    const p = `h.${i}.`;
    t.push([`${p}ln_1.weight`, [E], 'one'], [`${p}ln_1.bias`, [E], 'zero'],
      [`${p}attn.c_attn.weight`, [E, 3 * E], 'w'], [`${p}attn.c_attn.bias`, [3 * E], 'zero'],
      [`${p}attn.c_proj.weight`, [E, E], 'w'], [`${p}attn.c_proj.bias`, [E], 'zero'],
      [`${p}ln_2.weight`, [E], 'one'], [`${p}ln_2.bias`, [E], 'zero'],
      [`${p}mlp.c_fc.weight`, [E, 4 * E], 'w'], [`${p}mlp.c_fc.bias`, [4 * E], 'zero'],
      [`${p}mlp.c_proj.weight`, [4 * E, E], 'w'], [`${p}mlp.c_proj.bias`, [E], 'zero']);
  }
  t.push(['ln_f.weight', [E], 'one'], ['ln_f.bias', [E], 'zero']);
  return t;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** float32 → IEEE half (round to nearest even; the values here are normal and small). */
function toHalf(v) {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (exp <= 0) return sign; // below half's normal range: zero (not reached at ±0.035 but for tiny draws)
  if (exp >= 31) return sign | 0x7c00;
  let h = sign | (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return h;
}

/**
 * Writes the folder; returns { dir, bytes, parameters, ms, eos, config }.
 * opts: { out, seed, dtype, sparse, extraToken, ...shape }
 */
export function writeGpt2Folder(opts = {}) {
  const t0 = Date.now();
  const shape = { ...GPT2_SMALL, ...Object.fromEntries(Object.entries(opts).filter(([k]) => k in GPT2_SMALL)) };
  const seed = opts.seed ?? 1;
  const dtype = opts.dtype ?? 'F16';
  const dir = opts.out ?? fs.mkdtempSync(path.join(os.tmpdir(), 'al-gpt2-'));
  fs.mkdirSync(dir, { recursive: true });
  const tok = makeTokenizer(shape.vocab, seed, { extraToken: opts.extraToken });
  const config = gpt2Config(shape, tok.eos);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tok.json));
  const list = tensorList(shape);
  const eb = dtype === 'F16' ? 2 : 4;
  const header = { __metadata__: { format: 'pt', generator: 'attention-lab scripts/gen-gpt2-folder.mjs', seed: String(seed) } };
  let off = 0;
  let parameters = 0;
  for (const [name, s] of list) {
    const n = s.reduce((a, b) => a * b, 1);
    header[name] = { dtype, shape: s, data_offsets: [off, off + n * eb] };
    off += n * eb;
    parameters += n;
  }
  let hj = JSON.stringify(header);
  hj += ' '.repeat((8 - (hj.length % 8)) % 8);
  const hb = Buffer.from(hj, 'utf8');
  const file = path.join(dir, 'model.safetensors');
  const fd = fs.openSync(file, 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.length));
  fs.writeSync(fd, len);
  fs.writeSync(fd, hb);
  if (opts.sparse) {
    fs.ftruncateSync(fd, 8 + hb.length + off);
  } else {
    const rnd = xorshift(seed);
    const a = 0.02 * Math.sqrt(3);
    const CHUNK = 1 << 20;
    for (const [, s, kind] of list) {
      let n = s.reduce((x, y) => x * y, 1);
      while (n > 0) {
        const m = Math.min(n, CHUNK);
        const buf = Buffer.alloc(m * eb);
        for (let i = 0; i < m; i++) {
          const v = kind === 'w' ? (2 * rnd() - 1) * a : kind === 'one' ? 1 : 0;
          if (eb === 2) buf.writeUInt16LE(toHalf(v), 2 * i);
          else buf.writeFloatLE(v, 4 * i);
        }
        fs.writeSync(fd, buf);
        n -= m;
      }
    }
  }
  fs.closeSync(fd);
  return { dir, bytes: 8 + hb.length + off, parameters, ms: Date.now() - t0, eos: tok.eos, config };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opts = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--sparse') opts.sparse = true;
    else if (a === '--out') opts.out = args[++i];
    else if (a === '--dtype') opts.dtype = args[++i];
    else if (['--seed', '--layers', '--embd', '--heads', '--vocab', '--positions'].includes(a)) opts[a.slice(2)] = Number(args[++i]);
    else {
      console.error(`unknown argument ${a}`);
      process.exit(2);
    }
  }
  const r = writeGpt2Folder(opts);
  console.log(`${r.dir}: ${r.parameters} parameters, model.safetensors ${(r.bytes / 2 ** 20).toFixed(1)} MiB (${opts.dtype ?? 'F16'}${opts.sparse ? ', sparse' : ''}), written in ${r.ms} ms`);
}
