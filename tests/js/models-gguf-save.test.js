// model.save({ format: 'gguf' }) (web/lib/model/save-gguf.js): the file reads
// back to the same model, and its layout follows ggml/docs/gguf.md and the
// types llama.cpp asks for.
//   - quantized files (Q8_0, Q4_0, the Q4_K/Q6_K mix) and F16: every tensor
//     is written with the file's own bytes (the blocks as held, llama's Q/K
//     rows permuted back), so the saved file reloads to the same logits, bit
//     for bit, and the same tokenizer ids;
//   - a safetensors checkpoint (the llama golden, F32) saved as GGUF loads to
//     the same logits and still meets its float64 reference;
//   - the layout: version 3, general.alignment 32, the data section and every
//     tensor offset aligned, ne in ggml's order (the reader checks), and
//     tokenizer.ggml.token_type an array of INT32, scores of FLOAT32 and
//     rope.freq_base / the epsilon FLOAT32 (llama.cpp refuses other types:
//     llama-vocab.cpp, llama-model-loader.cpp get_arr / get_key);
//   - bad options are refused by name.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { parseGgufHeader } from '../../web/lib/io/gguf.js';
import { ggufTokenizerEntriesOf } from '../../web/lib/model/gguf-tokenizer.js';
import { BACKENDS, maxRel } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const GGUF = path.join(HERE, '..', 'golden', 'gguf', 'models');
const MODELS = path.join(HERE, '..', 'golden', 'models');
const gguf = (name) => new Uint8Array(fs.readFileSync(path.join(GGUF, name)));

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

/** The GGUF value type of metadata key `key` (and its array element type) read from the raw header. */
function metaType(bytes, key) {
  const enc = new TextEncoder().encode(key);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 24; i < bytes.length - enc.length - 12; i++) {
    if (Number(dv.getBigUint64(i - 8, true)) !== enc.length) continue;
    let same = true;
    for (let j = 0; j < enc.length && same; j++) same = bytes[i + j] === enc[j];
    if (!same) continue;
    const t = dv.getUint32(i + enc.length, true);
    return t === 9 ? [t, dv.getUint32(i + enc.length + 4, true)] : [t];
  }
  return null;
}

function tensorBytes(bytes) {
  const h = parseGgufHeader(bytes, bytes.length, 'test');
  return new Map(h.tensors.map((t) => [t.name, { type: t.ggmlType, shape: t.shape, data: bytes.subarray(t.begin, t.end), begin: t.begin }]));
}

describe.each(BACKENDS)('model.save({ format: \'gguf\' }) — %s', (backend) => {
  test.each(['llama-q8_0', 'qwen2-q4_0', 'gpt2-q8_0', 'llama-f16', 'kquant-q4_k_m', 'gpt_neox-q4_0', 'phi3-q8_0'])('%s: the same bytes a tensor, the same logits bit for bit', async (stem) => {
    const src = gguf(`${stem}.gguf`);
    const noTok = stem.startsWith('kquant') || stem.startsWith('gpt_neox') || stem.startsWith('phi3');
    const a = await labs[backend].loadModel(noTok ? { weights: src, tokenizer: null } : src);
    const saved = a.save({ format: 'gguf', dtype: stem.endsWith('f16') ? 'F16' : 'F32' })['model.gguf'];
    const b = await labs[backend].loadModel(noTok ? { weights: saved, tokenizer: null } : saved);
    const orig = tensorBytes(src);
    const back = tensorBytes(saved);
    expect([...back.keys()].sort()).toEqual([...orig.keys()].sort());
    for (const [name, t] of orig) {
      const u = back.get(name);
      expect([name, u.type, u.shape]).toEqual([name, t.type, t.shape]);
      expect(Buffer.compare(Buffer.from(u.data), Buffer.from(t.data))).toBe(0);
    }
    expect(b.config).toEqual(a.config);
    const ids = [1, 5, 9, 3, 2, 7];
    expect(Array.from(b.forwardSync(ids).logits.data)).toEqual(Array.from(a.forwardSync(ids).logits.data));
    const ids2 = (m) => {
      try {
        return m.encode('hello world, the end');
      } catch {
        return null; // (a file without tokenizer.ggml.*)
      }
    };
    expect(ids2(b)).toEqual(ids2(a));
    if (stem.startsWith('llama') || stem.startsWith('gpt2')) expect(ids2(a)).not.toBeNull();
    a.dispose();
    b.dispose();
  });

  test('a safetensors checkpoint saved as GGUF: the same logits, its float64 reference still met', async () => {
    const dir = path.join(MODELS, 'llama');
    const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
    const a = await labs[backend].loadModel({
      config: fs.readFileSync(path.join(dir, 'config.json')),
      weights: fs.readFileSync(path.join(dir, expected.dtype_files?.[0] ?? 'model.safetensors')),
      tokenizer: fs.readFileSync(path.join(dir, 'tokenizer.json')),
    });
    const saved = a.save({ format: 'gguf' })['model.gguf'];
    const b = await labs[backend].loadModel({ weights: saved, tokenizer: null });
    expect(b.config.numKvHeads).toBe(a.config.numKvHeads);
    for (const c of expected.cases) {
      const la = a.forwardSync(c.ids).logits.data;
      const lb = b.forwardSync(c.ids).logits.data;
      expect(Array.from(lb)).toEqual(Array.from(la));
      expect(maxRel(lb, c.logits)).toBeLessThan(1e-4);
    }
    const f16 = a.save({ format: 'gguf', dtype: 'F16' })['model.gguf'];
    expect([...tensorBytes(f16).values()].filter((t) => t.shape.length === 2).every((t) => t.type === 'F16')).toBe(true);
    a.dispose();
    b.dispose();
  });
});

// A model loaded with a tokenizer.json saves its tokenizer as tokenizer.ggml.* (gguf-tokenizer.js
// ggufTokenizerEntriesOf): the file alone then encodes as the tokenizer.json does.
describe('a safetensors checkpoint with its tokenizer.json saved as GGUF: the file\'s own tokenizer gives the same ids', () => {
  const TEXTS = ['hello world, the end', 'the cat sat on the mat. The cat sat on the m', '  two  spaces and 12345 digits\n', 'héllo wörld ✓ 你好'];
  test.each([['gpt2', 'gpt2'], ['llama', 'llama']])('%s (tokenizer.ggml.model %s)', async (name, ggmlModel) => {
    const lab = labs[BACKENDS[0]];
    const dir = path.join(MODELS, name);
    const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
    const a = await lab.loadModel({
      config: fs.readFileSync(path.join(dir, 'config.json')),
      weights: fs.readFileSync(path.join(dir, expected.dtype_files?.[0] ?? 'model.safetensors')),
      tokenizer: fs.readFileSync(path.join(dir, 'tokenizer.json')),
    });
    const saved = a.save({ format: 'gguf' })['model.gguf'];
    const meta = parseGgufHeader(saved, saved.length, 'test').metadata;
    expect(meta.get('tokenizer.ggml.model')).toBe(ggmlModel);
    expect(meta.get('tokenizer.ggml.tokens').length).toBe(a.config.vocabSize);
    const b = await lab.loadModel(saved);
    for (const t of TEXTS) expect([t, Array.from(b.encode(t))]).toEqual([t, Array.from(a.encode(t))]);
    a.dispose();
    b.dispose();
  });
});

test('ggufTokenizerEntriesOf: a 200,000-token byte-level vocabulary (as Qwen\'s 151,936) is written whole, padded to the model\'s rows with UNUSED [PAD<i>]', () => {
  const vocab = {};
  for (let i = 0; i < 200000; i++) vocab[`t${i}`] = i;
  const json = { model: { type: 'BPE', vocab, merges: ['t1 t2'] }, normalizer: null, added_tokens: [], pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true } };
  const meta = new Map(ggufTokenizerEntriesOf(json, 200004, {}));
  expect(meta.get('tokenizer.ggml.pre')).toBe('gpt-2');
  expect(meta.get('tokenizer.ggml.tokens').length).toBe(200004);
  expect(meta.get('tokenizer.ggml.tokens')[200003]).toBe('[PAD200003]');
  expect(meta.get('tokenizer.ggml.token_type')[200003]).toBe(5);
});

describe('the saved file\'s layout (gguf.md) and llama.cpp\'s metadata types', () => {
  test('version 3, aligned data, INT32 token types, FLOAT32 scores and real-valued keys', async () => {
    const lab = labs[BACKENDS[0]];
    for (const stem of ['llama-q4_0', 'gpt2-q8_0']) {
      const m = await lab.loadModel(gguf(`${stem}.gguf`));
      const saved = m.save({ format: 'gguf' })['model.gguf'];
      const h = parseGgufHeader(saved, saved.length, 'test');
      expect(h.version).toBe(3);
      expect(new DataView(saved.buffer, saved.byteOffset).getUint32(0, true)).toBe(0x46554747);
      for (const t of h.tensors) expect(t.begin % 32).toBe(0);
      const arch = h.metadata.get('general.architecture');
      expect(metaType(saved, 'tokenizer.ggml.token_type')).toEqual([9, 5]);
      expect(metaType(saved, 'tokenizer.ggml.tokens')).toEqual([9, 8]);
      if (arch === 'llama') {
        expect(metaType(saved, 'tokenizer.ggml.scores')).toEqual([9, 6]);
        expect(metaType(saved, 'llama.rope.freq_base')).toEqual([6]);
        expect(metaType(saved, 'llama.attention.layer_norm_rms_epsilon')).toEqual([6]);
        expect(metaType(saved, 'llama.block_count')).toEqual([4]);
      } else {
        expect(metaType(saved, 'gpt2.attention.layer_norm_epsilon')).toEqual([6]);
      }
      expect(h.metadata.get('general.file_type')).toBe(stem.endsWith('q4_0') ? 2 : 7);
      m.dispose();
    }
  });

  test('bad options are refused by name', async () => {
    const m = await labs[BACKENDS[0]].loadModel(gguf('llama-q8_0.gguf'));
    expect(() => m.save({ format: 'onnx' })).toThrow(/model.save: format must be 'safetensors' or 'gguf', got "onnx"/);
    expect(() => m.save({ format: 'gguf', dtype: 'Q8_0' })).toThrow(/model.save: dtype must be 'F32' or 'F16', got "Q8_0"/);
    expect(() => m.save({ format: 'gguf', quant: true })).toThrow(/unknown|allowed/);
    m.dispose();
  });
});
