// A llama-architecture GGUF file with generated weights, for the memory test
// (tests/js/models-gguf-memory.test.js) and the lm bench (bench/lm-bench.mjs):
// the shape of SmolLM2-135M by default (hidden 576, 30 layers, 9 heads, 3 KV
// heads, intermediate 1536) with GPT-2's 50,257-token vocabulary, every
// matrix in one type (F16, Q8_0 or Q4_0: `llama-quantize --pure`), the norms
// F32, the head tied (no output.weight, as SmolLM2).
//
// Weights: each matrix's values drawn once (seeded, uniform with std 0.02,
// the norms 1 ± 0.02) and written in the type through writeGguf's reference
// quantizers (quantize_row_*_ref), so the three files hold the same weights
// up to their rounding. `fast: true` writes seeded random blocks instead
// (no quantizing: what a memory test needs, in a fraction of the time).
//
// The tokenizer (tokenizer.ggml.*, model gpt2, pre gpt2): GPT-2's 256 byte
// symbols and merges generated from them (a seeded byte-level BPE: merge k
// joins two earlier tokens into a new one), so llama.cpp and
// @huggingface/tokenizers both tokenize text with it; token V − 1 is
// <|endoftext|>, the BOS and EOS.
import { writeGguf, ggufFloat32 } from '../../web/lib/io/gguf-write.js';

export const SMOL_SHAPE = Object.freeze({ hidden: 576, layers: 30, heads: 9, kvHeads: 3, ffn: 1536, vocab: 50257, context: 2048 });

/** Seeded uniform floats in [0, 1) (xorshift32). */
function rng(seed) {
  let s = (seed >>> 0) || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

/** GPT-2's bytes_to_unicode: byte → the printable character it is written as. */
function byteSymbols() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  const out = new Array(256);
  bs.forEach((b, i) => { out[b] = String.fromCodePoint(cs[i]); });
  return out;
}

/** tokens and merges of a seeded byte-level BPE of `vocab` tokens (the last <|endoftext|>). */
export function syntheticBpe(vocab, seed = 7) {
  const rand = rng(seed);
  const bytes = byteSymbols();
  // Merges favour lowercase letters and the space (Ġ), so that English text
  // tokenizes into multi-byte tokens, as a trained GPT-2 vocabulary does.
  const letters = 'abcdefghijklmnopqrstuvwxyz'.split('').map((c) => c.charCodeAt(0));
  const tokens = bytes.slice();
  const seen = new Set(tokens);
  const merges = [];
  const short = [];
  for (const b of [32, ...letters]) short.push(bytes[b]);
  // Merges join ASCII tokens only, so that every token but the single bytes
  // 0x80–0xFF decodes to valid UTF-8 on its own.
  const ascii = bytes.slice(0, 128);
  while (tokens.length < vocab - 1) {
    const pool = rand() < 0.7 ? short : ascii;
    const a = pool[Math.floor(rand() * pool.length)];
    const b = short[1 + Math.floor(rand() * (short.length - 1))];
    const t = a + b;
    if (seen.has(t) || t.length > 12) continue;
    seen.add(t);
    tokens.push(t);
    ascii.push(t);
    merges.push(`${a} ${b}`);
    if (t.length <= 4) short.push(t);
  }
  tokens.push('<|endoftext|>');
  return { tokens, merges };
}

/**
 * The GGUF file's bytes.
 * @param {{ type: 'F16'|'Q8_0'|'Q4_0', shape?: object, seed?: number, fast?: boolean, tokenizer?: boolean }} o
 */
export function syntheticLlamaGguf({ type, shape = SMOL_SHAPE, seed = 1, fast = false, tokenizer = true }) {
  const { hidden: E, layers: N, heads: H, kvHeads: Hkv, ffn: F, vocab: V, context } = shape;
  const D = E / H;
  const rand = rng(seed);
  const matrix = (rows, cols) => {
    if (fast && type !== 'F16') {
      const bb = type === 'Q8_0' ? 34 : 18;
      const raw = new Uint8Array((rows * cols / 32) * bb);
      for (let i = 0; i < raw.length; i += 4) {
        const v = (rand() * 2 ** 32) >>> 0;
        raw[i] = v; raw[i + 1] = v >>> 8; raw[i + 2] = v >>> 16; raw[i + 3] = v >>> 24;
      }
      // scales: halves near 0.02 / 64 (Q8_0) or 0.02 / 4 (Q4_0), positive
      const d = type === 'Q8_0' ? 0x0d3e : 0x1d1f;
      for (let b = 0; b < raw.length; b += bb) { raw[b] = d & 255; raw[b + 1] = d >> 8; }
      return { raw, shape: [rows, cols], type };
    }
    const data = new Float32Array(rows * cols);
    const a = 0.02 * Math.sqrt(3);
    for (let i = 0; i < data.length; i++) data[i] = (2 * rand() - 1) * a;
    return { data, shape: [rows, cols], type };
  };
  const norm = () => {
    const data = new Float32Array(E);
    for (let i = 0; i < E; i++) data[i] = 1 + (2 * rand() - 1) * 0.02 * Math.sqrt(3);
    return { data, shape: [E], type: 'F32' };
  };
  const tensors = { 'token_embd.weight': matrix(V, E) };
  // The byte tokens 0x80–0xFF (ids 128–255) get zero rows: the tied head
  // gives them logit 0, below the greedy choice among 50,000 random logits,
  // so generated text stays valid UTF-8 (llama.cpp's server refuses to
  // return a lone continuation byte: json type_error 316).
  if (tokenizer && tensors['token_embd.weight'].data) tensors['token_embd.weight'].data.fill(0, 128 * E, 256 * E);
  for (let l = 0; l < N; l++) {
    const p = `blk.${l}.`;
    tensors[`${p}attn_norm.weight`] = norm();
    tensors[`${p}attn_q.weight`] = matrix(H * D, E);
    tensors[`${p}attn_k.weight`] = matrix(Hkv * D, E);
    tensors[`${p}attn_v.weight`] = matrix(Hkv * D, E);
    tensors[`${p}attn_output.weight`] = matrix(E, H * D);
    tensors[`${p}ffn_norm.weight`] = norm();
    tensors[`${p}ffn_gate.weight`] = matrix(F, E);
    tensors[`${p}ffn_up.weight`] = matrix(F, E);
    tensors[`${p}ffn_down.weight`] = matrix(E, F);
  }
  tensors['output_norm.weight'] = norm();
  const meta = {
    'general.architecture': 'llama',
    'general.name': `synthetic llama ${N}x${E} ${type}`,
    'general.file_type': { F16: 1, Q4_0: 2, Q8_0: 7 }[type],
    'general.quantization_version': 2,
    'llama.block_count': N,
    'llama.context_length': context,
    'llama.embedding_length': E,
    'llama.feed_forward_length': F,
    'llama.attention.head_count': H,
    'llama.attention.head_count_kv': Hkv,
    'llama.rope.freq_base': ggufFloat32(100000),
    'llama.attention.layer_norm_rms_epsilon': 1.0000000195414814e-5,
    'llama.rope.dimension_count': D,
    'llama.vocab_size': V,
  };
  if (tokenizer) {
    const { tokens, merges } = syntheticBpe(V, seed + 6);
    Object.assign(meta, {
      'tokenizer.ggml.model': 'gpt2',
      'tokenizer.ggml.pre': 'gpt-2',
      'tokenizer.ggml.tokens': tokens,
      'tokenizer.ggml.token_type': Int32Array.from(tokens, (_, i) => (i === V - 1 ? 3 : 1)),
      'tokenizer.ggml.merges': merges,
      'tokenizer.ggml.bos_token_id': V - 1,
      'tokenizer.ggml.eos_token_id': V - 1,
      'tokenizer.ggml.add_bos_token': false,
    });
  }
  return writeGguf(tensors, meta);
}
