// lab.loadModel on GGUF files (llama.cpp's format): the golden checkpoints of
// tests/golden/models/{llama,qwen2,gpt2} converted by the numpy converter
// tests/reference/gguf_fixtures.py as llama.cpp's convert_hf_to_gguf.py
// converts them (llama's Q/K rows permuted, GPT-2's Conv1D weights
// transposed, tokenizer.ggml.* from tokenizer.json), in F32, F16 and Q8_0.
//   - F32/F16: the goldens' float64 references (expected.json), the
//     tolerances of models.test.js;
//   - Q8_0 and Q4_0: the float64 reference run on the dequantised weights
//     (<family>-<type>.expected.json): the same 1e-4, since the weights the
//     reference and the library run are the same numbers (dequantisation is
//     exact in float32: d·q of a half and a small integer), and Q8_0 moves
//     the logits 2–5% from F32 (Q4_0 25–80%), so that tolerance cannot be met
//     with the wrong weights;
//   - tokenizer ids against tokenizer.json run by @huggingface/tokenizers;
//   - the Q/K unpermutation: the weights read back equal the Hugging Face
//     checkpoint's bit for bit, and a file without the permutation does not;
//   - bad input, each with its Error, the heap back at its baseline.
// The decoders of issue 32 (qwen3, gemma, gemma2, gemma3, phi3, gptneox and
// Mistral, which the converter writes as llama), from their goldens without
// a tokenizer, in F32, F16, Q8_0 and Q4_0: the float64 reference
// (tests/reference/hf_families.py) on each file's dequantised weights under
// llama.cpp's reading of the file (<family>-<type>.expected.json; where the
// file does not hold a config key, llama.cpp's fixed value: Gemma 2's query
// scale, Gemma 3's five-in-six sliding layers, no window for Mistral), and
// the goldens' own expected.json where that reading is the checkpoint's.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { Tokenizer } from '@huggingface/tokenizers';
import { parseGgufHeader } from '../../web/lib/io/gguf.js';
import { BACKENDS, maxRel } from './helpers.js';
import { openGgufModel } from '../../web/lib/model/gguf.js';
import { openWeights } from '../../web/lib/model/files.js';
import { plan } from '../../web/lib/model/plan.js';
import { gpuTensors } from '../../web/lib/model/gpu.js';
import { architectureOf } from '../../web/lib/model/families/index.js';
import { decode } from '../../web/lib/io/dtypes.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');
const GGUF = path.join(HERE, '..', 'golden', 'gguf', 'models');
const gguf = (name) => new Uint8Array(fs.readFileSync(path.join(GGUF, name)));
const golden = (family, file) => fs.readFileSync(path.join(MODELS, family, file));
const goldenJson = (family, file) => JSON.parse(golden(family, file));

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

const FAMILIES = ['llama', 'qwen2', 'gpt2'];
/** The golden folders of issue 32's decoders → the model_type their GGUF file loads as. */
const DECODERS = {
  qwen3: 'qwen3', gemma: 'gemma', gemma2: 'gemma2', gemma3: 'gemma3_text', phi3: 'phi3',
  gpt_neox: 'gpt_neox', 'gpt_neox-sequential': 'gpt_neox', mistral: 'llama',
};
/** Those whose GGUF file llama.cpp reads as the checkpoint's own config (Gemma's embedding scale is float32 in llama.cpp, bf16 in the golden). */
const SAME_AS_GOLDEN = ['qwen3', 'phi3', 'gpt_neox', 'gpt_neox-sequential'];

function checkCases(model, cases, { attentions = true } = {}) {
  for (const c of cases) {
    const r = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
    expect(r.logits.shape).toEqual([1, c.ids.length, model.config.vocabSize]);
    expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
    if (attentions) {
      r.attentions.forEach((a, l) => expect(maxRel(a.data, c.attentions[l])).toBeLessThan(1e-4));
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
    }
  }
}

describe.each(BACKENDS)('GGUF against the float64 references — %s', (backend) => {
  test.each([...FAMILIES.flatMap((f) => [[f, 'f32'], [f, 'f16']]), ['llama', 'bf16'], ['qwen2', 'bf16']])('%s %s', async (family, type) => {
    const expected = goldenJson(family, 'expected.json');
    const config = goldenJson(family, 'config.json');
    const model = await labs[backend].loadModel(gguf(`${family}-${type}.gguf`));
    expect(model.config.modelType).toBe(family);
    expect(model.config.parameters).toBe(expected.parameters);
    // model.config is what the metadata says (here: what config.json said).
    const std = family === 'gpt2'
      ? { numLayers: config.n_layer, numHeads: config.n_head, embedDim: config.n_embd, maxPositions: config.n_positions, ffnDim: 4 * config.n_embd }
      : { numLayers: config.num_hidden_layers, numHeads: config.num_attention_heads, numKvHeads: config.num_key_value_heads, embedDim: config.hidden_size, ffnDim: config.intermediate_size, maxPositions: config.max_position_embeddings };
    expect(model.config).toMatchObject({ ...std, vocabSize: config.vocab_size });
    // F16 files keep their projections in 16 bits, as F16 safetensors do
    // (gpt2's position_embd stays F32 in llama.cpp's files and does not decide).
    expect(model.config.weightsDtype).toBe({ f32: 'float32', f16: 'float16', bf16: 'bfloat16' }[type]);
    checkCases(model, expected.cases);
    model.dispose();
  });

  test.each(FAMILIES.flatMap((f) => [[f, 'q8_0'], [f, 'q4_0']]))('%s %s: the reference on the dequantised weights, within 1e-4', async (family, type) => {
    const ref = JSON.parse(fs.readFileSync(path.join(GGUF, `${family}-${type}.expected.json`), 'utf8'));
    const bytes = gguf(`${family}-${type}.gguf`);
    const model = await labs[backend].loadModel(bytes);
    // Kept as the file's blocks: the bytes of its Q8_0/Q4_0 tensors as the
    // header gives them, the rest (norms, biases, positions) float32.
    const { tensors } = parseGgufHeader(bytes, bytes.length, 'test');
    const blocks = tensors.filter((t) => t.ggmlType === type.toUpperCase());
    expect(blocks.length).toBeGreaterThan(0);
    const blockBytes = blocks.reduce((n, t) => n + t.end - t.begin, 0);
    const floats = tensors.filter((t) => t.ggmlType !== type.toUpperCase()).reduce((n, t) => n + t.count, 0);
    expect(model.config.weightsDtype).toBe('float32');
    expect(model.config.quantized).toEqual({ [type.toUpperCase()]: blockBytes });
    expect(model.config.bytes).toBe(blockBytes + 4 * floats);
    expect(model.config.bytes).toBeLessThan(model.config.parameters * (type === 'q8_0' ? 1.3 : 0.8));
    for (const c of ref.cases) {
      // Quantisation moved the logits far beyond the tolerance: the check below
      // tells the quantized weights from the F32 ones.
      expect(c.max_rel_to_f32).toBeGreaterThan(1e-2);
      expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
      // A prefix of 1 or 3 tokens (a causal model's first rows): the GEMV
      // over the blocks (decoding's path, up to 4 rows), not the GEMM.
      const V = model.config.vocabSize;
      for (const n of [1, 3]) {
        expect(maxRel(model.forwardSync(c.ids.slice(0, n)).logits.data, c.logits.flat().slice(0, n * V))).toBeLessThan(1e-4);
      }
    }
    model.dispose();
  });
});

describe.each(BACKENDS)('GGUF K-quants (Q4_K, Q6_K) kept as super-blocks — %s', (backend) => {
  // A tiny llama whose rows are 256 and 512 values long (the super-block is
  // 256), tests/reference/gguf_fixtures.py k_quant_fixtures: every matrix
  // Q6_K, or llama-quantize's Q4_K_M mix (Q4_K; attn_v, ffn_down and output
  // Q6_K). The float64 reference of the dequantised weights, within 1e-4:
  // the whole prompt (the GEMM over dequantised chunks) and prefixes of 1
  // and 3 tokens (the GEMV that reads the blocks).
  test.each(['q4_k_m', 'q6_k'])('%s', async (stem) => {
    const ref = JSON.parse(fs.readFileSync(path.join(GGUF, `kquant-${stem}.expected.json`), 'utf8'));
    const file = gguf(`kquant-${stem}.gguf`);
    const model = await labs[backend].loadModel({ weights: file, tokenizer: null });
    const { tensors } = parseGgufHeader(file, file.length, 'test');
    const byType = {};
    for (const t of tensors.filter((x) => x.ggmlType !== 'F32')) byType[t.ggmlType] = (byType[t.ggmlType] ?? 0) + t.end - t.begin;
    expect(Object.keys(byType).sort()).toEqual(ref.types.filter((t) => t !== 'F32'));
    expect(model.config.quantized).toEqual(byType);
    const V = model.config.vocabSize;
    for (const c of ref.cases) {
      expect(c.max_rel_to_f32).toBeGreaterThan(1e-2); // the quantized weights, not the float ones
      expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
      for (const n of [1, 3]) {
        expect(maxRel(model.forwardSync(c.ids.slice(0, n)).logits.data, c.logits.flat().slice(0, n * V))).toBeLessThan(1e-4);
      }
    }
    model.dispose();
  });
});

describe.each(BACKENDS)('GGUF blocks kept: the head rows and the embedding rows read from the blocks — %s', (backend) => {
  // The same file loaded with dtype 'float32' holds the dequantised floats
  // (the same numbers): direct logit attribution, which reads the head's
  // rows (the tied embedding's, or output.weight's), and greedy generation
  // (one-token GEMV steps over the KV cache) give the same results.
  test.each([['llama', 'q8_0'], ['qwen2', 'q4_0'], ['gpt2', 'q8_0'], ['phi3', 'q4_0']])('%s %s', async (family, type) => {
    const file = gguf(`${family}-${type}.gguf`);
    const kept = await labs[backend].loadModel({ weights: file, tokenizer: null });
    const floats = await labs[backend].loadModel({ weights: file, tokenizer: null, dtype: 'float32' });
    expect(kept.config.quantized).not.toBeNull();
    expect(floats.config.quantized).toBeNull();
    expect(kept.config.bytes).toBeLessThan(floats.config.bytes / 2.5);
    const ids = [1, 4, 2, 7, 3];
    const a = kept.attribute(ids, { target: 5, baseline: 6 });
    const b = floats.attribute(ids, { target: 5, baseline: 6 });
    expect(maxRel(a.heads.data, Array.from(b.heads.data))).toBeLessThan(1e-4);
    expect(Math.abs(a.logitDiff - b.logitDiff)).toBeLessThan(1e-4 * Math.max(1, Math.abs(b.logitDiff)));
    expect(a.logitDiff).not.toBe(0);
    const greedy = async (m) => {
      const out = [];
      for await (const t of m.generate(ids, { maxNewTokens: 6, temperature: 0 })) out.push(t.id);
      return out;
    };
    const g1 = await greedy(kept);
    expect(g1).toHaveLength(6);
    expect(g1).toEqual(await greedy(floats));
    kept.dispose();
    floats.dispose();
  });
});

describe.each(BACKENDS)('GGUF of the issue-32 decoders against the float64 reference — %s', (backend) => {
  test.each(Object.keys(DECODERS).flatMap((f) => ['f32', 'f16', 'q8_0', 'q4_0'].map((t) => [f, t])))('%s %s', async (folder, type) => {
    const ref = JSON.parse(fs.readFileSync(path.join(GGUF, `${folder}-${type}.expected.json`), 'utf8'));
    const expected = goldenJson(folder, 'expected.json');
    const model = await labs[backend].loadModel({ weights: gguf(`${folder}-${type}.gguf`), tokenizer: null });
    expect(model.config.modelType).toBe(DECODERS[folder]);
    expect(model.config.parameters).toBe(expected.parameters);
    expect(model.config.weightsDtype).toBe(type === 'f16' ? 'float16' : 'float32');
    for (const c of ref.cases) {
      if (type === 'q8_0' || type === 'q4_0') expect(c.max_rel_to_golden).toBeGreaterThan(1e-2); // the quantized weights, not the F32 ones
      expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    }
    if (type === 'f32' && SAME_AS_GOLDEN.includes(folder)) checkCases(model, expected.cases);
    model.dispose();
  });
});

describe('GGUF of the issue-32 decoders: what the metadata says', () => {
  const lab = () => labs.wasm;
  const core = async (folder) => {
    const g = await openGgufModel(gguf(`${folder}-f32.gguf`));
    return { type: g.type, arch: g.arch, c: g.table.config(g.hfConfig, new Set(g.weights.tensors.keys())) };
  };

  test('each file reads as its family with the block graph fields of its checkpoint (where the file holds them)', async () => {
    let r = await core('qwen3');
    expect(r).toMatchObject({ type: 'qwen3', arch: 'qwen3', c: { headDim: 12, core: { qkNorm: true, headDim: 12, tieEmbeddings: true, ropeTheta: 1e6 } } });
    r = await core('gemma2');
    // query_pre_attn_scalar is not in the file: llama.cpp's head_dim^-0.5 (the golden's config said 16).
    expect(r.c.core).toMatchObject({ attnScale: 8 ** -0.5, attnSoftcap: 5, finalSoftcap: 3, sandwichNorm: true, slidingWindow: 4, layerKinds: 'lg', embedScale: Math.fround(Math.sqrt(32)) });
    r = await core('gemma3');
    // llama.cpp's set_swa_pattern(6): all three layers sliding (the golden's layer_types said l, l, g).
    expect(r).toMatchObject({ type: 'gemma3_text', arch: 'gemma3' });
    expect(r.c.core).toMatchObject({ qkNorm: true, sandwichNorm: true, slidingWindow: 4, ropeTheta: 1e6, ropeLocalTheta: 10000, attnScale: 16 ** -0.5 });
    expect(r.c.core.layerKinds).toBeUndefined();
    r = await core('phi3');
    expect(r.c.core).toMatchObject({ rotaryDim: 4, tieEmbeddings: false });
    expect(r.c.core.slidingWindow).toBeUndefined(); // attention.sliding_window 0: none
    r = await core('gpt_neox');
    expect(r).toMatchObject({ type: 'gpt_neox', arch: 'gptneox', c: { core: { rotaryDim: 2, parallelResidual: true, qkvBias: true, tieEmbeddings: false, activation: 'gelu' } } });
    expect((await core('gpt_neox-sequential')).c.core.parallelResidual).toBeUndefined();
    r = await core('mistral');
    // MistralForCausalLM converts as llama (LlamaModel): no window in the file, full attention as llama.cpp runs it.
    expect(r).toMatchObject({ type: 'llama', arch: 'llama' });
    expect(r.c.core.slidingWindow).toBeUndefined();
  });

  test('Gemma: the file holds 1 + w; the norms read back are the checkpoint\'s w (add-one not applied twice)', async () => {
    for (const folder of ['gemma', 'gemma3']) {
      const { tensors: hf } = lab().readSafetensors(golden(folder, 'model.safetensors'));
      const model = await lab().loadModel({ weights: gguf(`${folder}-f32.gguf`), tokenizer: null });
      const { tensors: back } = lab().readSafetensors(model.save()['model.safetensors']);
      model.dispose();
      for (const [name, t] of Object.entries(hf).filter(([n]) => /norm\.weight$/.test(n))) {
        // (1 + w) − 1 in float32 is w exactly here: |w| < 1 with a bf16 mantissa.
        expect(Array.from(back[name].data)).toEqual(Array.from(t.data));
      }
    }
  });

  test('GPT-NeoX: the regrouped attn_qkv gives the checkpoint\'s interleaved query_key_value back, bit for bit', async () => {
    const { tensors: hf } = lab().readSafetensors(golden('gpt_neox', 'model.safetensors'));
    const model = await lab().loadModel({ weights: gguf('gpt_neox-f32.gguf'), tokenizer: null });
    const { tensors: back } = lab().readSafetensors(model.save()['model.safetensors']);
    model.dispose();
    for (const name of Object.keys(hf).filter((n) => /query_key_value/.test(n))) {
      expect(Array.from(back[name].data)).toEqual(Array.from(hf[name].data));
    }
  });
});

describe('GGUF inputs, tokenizer and layout', () => {
  const lab = () => labs.wasm;

  test('a Uint8Array, an ArrayBuffer, a Blob, a File, a file list and { weights, dtype } all load', async () => {
    const bytes = gguf('qwen2-f16.gguf');
    const c = goldenJson('qwen2', 'expected.json').cases[0];
    const inputs = [
      bytes, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), new Blob([bytes]),
      new File([bytes], 'qwen2.gguf'), [new File([bytes], 'qwen2.gguf')],
    ];
    for (const x of inputs) {
      const m = await lab().loadModel(x);
      expect(maxRel(m.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
      m.dispose();
    }
    const progress = [];
    const m = await lab().loadModel({ weights: new File([bytes], 'qwen2.gguf'), dtype: 'float32', onProgress: (p) => progress.push(p) });
    expect(m.config.weightsDtype).toBe('float32');
    expect(progress.at(-1).loaded).toBe(progress.at(-1).total);
    expect(maxRel(m.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    m.dispose();
  });

  test('a header longer than the first read (1 MiB) is read in growing slices of a Blob', async () => {
    // qwen2-f32.gguf with one more metadata string of 1.5 MiB inserted after
    // the counts; its length is a multiple of the alignment (32), so the data
    // section keeps its relative offsets.
    const src = gguf('qwen2-f32.gguf');
    const enc = new TextEncoder();
    const key = enc.encode('test.padding');
    const valueLength = 1.5 * 2 ** 20 - (8 + key.length + 4 + 8);
    const kv = new Uint8Array(8 + key.length + 4 + 8 + valueLength);
    const dv = new DataView(kv.buffer);
    dv.setBigUint64(0, BigInt(key.length), true);
    kv.set(key, 8);
    dv.setUint32(8 + key.length, 8, true); // STRING
    dv.setBigUint64(12 + key.length, BigInt(valueLength), true);
    kv.fill(0x61, 20 + key.length);
    expect(kv.length % 32).toBe(0);
    const out = new Uint8Array(src.length + kv.length);
    out.set(src.subarray(0, 24));
    out.set(kv, 24);
    out.set(src.subarray(24), 24 + kv.length);
    const odv = new DataView(out.buffer);
    odv.setBigUint64(16, odv.getBigUint64(16, true) + 1n, true);
    const model = await lab().loadModel(new Blob([out]));
    const c = goldenJson('qwen2', 'expected.json').cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    model.dispose();
  });

  test('the same model from F16 safetensors and from F16 GGUF: the same logits within 1e-6', async () => {
    const expected = goldenJson('llama', 'expected.json');
    const a = await lab().loadModel({ config: goldenJson('llama', 'config.json'), weights: golden('llama', 'model-f16.safetensors') });
    const b = await lab().loadModel(gguf('llama-f16.gguf'));
    for (const c of expected.cases) expect(maxRel(b.forwardSync(c.ids).logits.data, Array.from(a.forwardSync(c.ids).logits.data))).toBeLessThan(1e-6);
    a.dispose();
    b.dispose();
  });

  test.each(['llama', 'gpt2'])('%s: encode from tokenizer.ggml.* gives the ids of tokenizer.json', async (family) => {
    const json = goldenJson(family, 'tokenizer.json');
    const hf = new Tokenizer(json, {});
    const model = await lab().loadModel(gguf(`${family}-q8_0.gguf`));
    const samples = goldenJson(family, 'tokenizer-samples.json').samples;
    for (const s of samples) expect(model.encode(s.text)).toEqual(s.ids);
    // More text: every vocabulary piece as a word, and seeded random strings.
    const pieces = Object.keys(json.model.vocab).map((p) => p.replace(/[▁Ġ]/g, ' ').replace(/<0x..>/, ''));
    const texts = [pieces.join(' '), pieces.join(''), pieces.slice().reverse().join(' ')];
    let seed = 7;
    const r = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32); // an LCG mod 2^32
    const alphabet = 'the cat sat on a mat dog log ,.!? 你好注意力 🐱\n  ';
    for (let i = 0; i < 200; i++) texts.push(Array.from({ length: 1 + Math.floor(r() * 40) }, () => alphabet[Math.floor(r() * alphabet.length)]).join(''));
    for (const t of texts) expect(model.encode(t)).toEqual(hf.encode(t).ids);
    for (const s of samples) expect(model.decode(s.ids)).toBe(hf.decode(s.ids, { skip_special_tokens: false }));
    model.dispose();
  });

  test('every tokenizer.ggml.pre named in the docs builds a tokenizer that runs; an unknown one is refused by name', async () => {
    const { tokenizerJsonOf } = await import('../../web/lib/model/gguf-tokenizer.js');
    const { ModelTokenizer } = await import('../../web/lib/model/tokenizer.js');
    const { metadata } = parseGgufHeader(gguf('gpt2-f32.gguf'));
    const hf = new Tokenizer(goldenJson('gpt2', 'tokenizer.json'), {});
    const text = 'The cat sat on the mat. 12345 你好 🐱';
    for (const pre of ['gpt-2', 'default', 'qwen2', 'llama-bpe', 'smollm']) {
      const m = new Map(metadata);
      m.set('tokenizer.ggml.pre', pre);
      const ids = new ModelTokenizer(tokenizerJsonOf(m), 297).encode(text);
      // The same bytes, split otherwise: decoding gives the text back.
      expect(hf.decode(ids, { skip_special_tokens: false })).toBe(text);
    }
    const m = new Map(metadata);
    m.set('tokenizer.ggml.pre', 'tekken');
    expect(() => tokenizerJsonOf(m)).toThrow(/tokenizer\.ggml\.pre "tekken" is not supported; supported: gpt-2, default, qwen2, llama-bpe, smollm/);
    m.set('tokenizer.ggml.model', 'bert');
    expect(() => tokenizerJsonOf(m)).toThrow(/tokenizer\.ggml\.model "bert" is not supported; supported: llama, gpt2/);
  });

  test('a tokenizer passed with the GGUF file is used instead of the metadata; tokenizer: null loads none', async () => {
    const json = goldenJson('gpt2', 'tokenizer.json');
    const m = await lab().loadModel({ weights: gguf('gpt2-f32.gguf'), tokenizer: json });
    expect(m.encode('cat dog')).toEqual(new Tokenizer(json, {}).encode('cat dog').ids);
    m.dispose();
    const none = await lab().loadModel({ weights: gguf('gpt2-f32.gguf'), tokenizer: null });
    expect(() => none.encode('hi')).toThrow(/loaded without a tokenizer/);
    none.dispose();
  });

  // llama.cpp's converter interleaves the rows of each head of q_proj and
  // k_proj (LlamaModel.permute); reading them back must give the Hugging Face
  // rows bit for bit. The llama golden has GQA (4 heads, 2 KV heads), so Q
  // and K are permuted with different head counts.
  test('llama: Q/K unpermuted — the weights read back are the Hugging Face checkpoint, bit for bit', async () => {
    const { tensors: hf } = lab().readSafetensors(golden('llama', 'model.safetensors'));
    const model = await lab().loadModel(gguf('llama-f32.gguf'));
    const { tensors: back } = lab().readSafetensors(model.save()['model.safetensors']);
    model.dispose();
    for (const [name, t] of Object.entries(hf)) {
      expect(back[name].shape).toEqual(t.shape);
      expect(Buffer.from(back[name].data.buffer, back[name].data.byteOffset, back[name].data.byteLength)
        .equals(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))).toBe(true);
    }
  });

  test('llama: a file whose Q/K rows are in the Hugging Face order (no permutation) does not give the reference', async () => {
    // The F32 file with attn_q/attn_k rows put back in HF order, i.e. what a
    // loader that skipped the unpermutation would read the real file as.
    const bytes = gguf('llama-f32.gguf').slice();
    const { tensors } = parseGgufHeader(bytes);
    const cfg = goldenJson('llama', 'config.json');
    const D = cfg.hidden_size / cfg.num_attention_heads;
    const f32 = (t) => new Float32Array(bytes.buffer, t.begin, t.count);
    for (const t of tensors.filter((x) => /attn_[qk]\.weight$/.test(x.name))) {
      const [R, E] = t.shape;
      const w = f32(t);
      const src = w.slice();
      // numpy: w.reshape(Hx, D/2, 2, E).swapaxes(1, 2): the inverse of LlamaModel.permute
      for (let h = 0; h < R / D; h++) {
        for (let i = 0; i < D / 2; i++) {
          for (let j = 0; j < 2; j++) w.set(src.subarray((h * D + 2 * i + j) * E, (h * D + 2 * i + j + 1) * E), (h * D + j * (D / 2) + i) * E);
        }
      }
    }
    const model = await lab().loadModel(bytes);
    const c = goldenJson('llama', 'expected.json').cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeGreaterThan(1e-2);
    model.dispose();
  });

  // The GPU copy (gpu.js) reads the file a second time through the layout
  // ops' GPU faces; without a GPU here, check that the GGUF file's tensors
  // (rope-unpermute, split-heads for GPT-2's attn_qkv, copy for its
  // transposed Conv1D) become exactly the GPU tensors of the safetensors file.
  test.each(['llama', 'gpt2', 'qwen3', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'mistral'])('%s: the GPU tensors from the F32 GGUF equal those from model.safetensors', async (family) => {
    const g = await openGgufModel(gguf(`${family}-f32.gguf`));
    const gc = { modelType: g.type, ...g.table.config(g.hfConfig, new Set(g.weights.tensors.keys())) };
    const hfConfig = goldenJson(family, 'config.json');
    const { type, arch } = architectureOf(hfConfig);
    const w = await openWeights(golden(family, 'model.safetensors'));
    const hc = { modelType: type, ...arch.config(hfConfig, new Set(w.tensors.keys())) };
    const gpu = async (steps) => {
      const out = new Map();
      for (const { entry, t } of steps) {
        const data = decode('test', entry.name, entry.dtype, await entry.source.read(entry.begin, entry.end), entry.count);
        for (const [name, shape, d] of gpuTensors(t, entry.shape, data)) out.set(name, { shape, d: Array.from(d) });
      }
      return out;
    };
    const a = await gpu(plan(g.table, gc, g.weights.tensors));
    const b = await gpu(plan(arch, hc, w.tensors));
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    for (const [name, t] of b) expect([name, a.get(name)]).toEqual([name, t]);
  });

  test.each(['llama', 'gpt2'])('%s Q8_0: model.save() writes Hugging Face files that load to the same logits and ids', async (family) => {
    const model = await lab().loadModel(gguf(`${family}-q8_0.gguf`));
    const files = model.save();
    expect(JSON.parse(files['config.json']).model_type).toBe(family);
    const back = await lab().loadModel({ config: files['config.json'], weights: files['model.safetensors'], tokenizer: files['tokenizer.json'] });
    const c = goldenJson(family, 'expected.json').cases[0];
    expect(Array.from(back.forwardSync(c.ids).logits.data)).toEqual(Array.from(model.forwardSync(c.ids).logits.data));
    expect(back.encode('The cat sat on the mat.')).toEqual(model.encode('The cat sat on the mat.'));
    model.dispose();
    back.dispose();
  });

  test('a family that spreads another table inherits its gguf section without taking its architecture', async () => {
    const { ggufArchitectures } = await import('../../web/lib/model/families/gguf.js');
    const { FAMILIES } = await import('../../web/lib/model/families/index.js');
    const map = ggufArchitectures({ ...FAMILIES, qwen3: { ...FAMILIES.qwen2 }, mistral: { ...FAMILIES.llama } });
    expect(map.get('qwen2')).toBe('qwen2');
    expect(map.get('llama')).toBe('llama');
    expect(() => ggufArchitectures({ a: { gguf: { architectures: ['x'] } }, b: { gguf: { architectures: ['x'] } } }))
      .toThrow(/internal: the families a, b all claim the GGUF architecture x/);
  });

  test('model.config reports the metadata, not a config.json: a file whose context_length says 48; version 2 reads as 3', async () => {
    const bytes = gguf('llama-f32.gguf').slice();
    const key = new TextEncoder().encode('llama.context_length');
    let at = -1;
    for (let i = 0; i < 4096 && at < 0; i++) if (key.every((b, k) => bytes[i + k] === b)) at = i;
    const dv = new DataView(bytes.buffer);
    expect(dv.getUint32(at + key.length, true)).toBe(4); // UINT32
    dv.setUint32(at + key.length + 4, 48, true);
    dv.setUint32(4, 2, true); // GGUF v2: the same layout (v3 added big-endian files)
    const model = await lab().loadModel(bytes);
    expect(model.config).toMatchObject({ modelType: 'llama', maxPositions: 48, numKvHeads: 2, vocabSize: 324 });
    const c = goldenJson('llama', 'expected.json').cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    expect(() => model.forwardSync(Array.from({ length: 49 }, () => 5))).toThrow(RangeError);
    model.dispose();
  });
});

describe('bad GGUF input: a clear Error, the heap back at its baseline', () => {
  async function expectLoadError(args, Class, pattern) {
    const backend = labs.wasm._backend;
    let before = 0;
    for (let run = 0; run < 2; run++) {
      before = backend.heapBytesInUse();
      let error = null;
      try {
        await labs.wasm.loadModel(typeof args === 'function' ? args() : args);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(Class);
      expect(error.message).toMatch(pattern);
    }
    expect(backend.heapBytesInUse()).toBe(before);
  }

  test('an unknown or missing architecture names the supported ones', async () => {
    const supported = 'gpt2, llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gptneox';
    await expectLoadError(gguf('bad-arch.gguf'), RangeError, new RegExp(`general\\.architecture "mamba" is not supported; supported: ${supported}$`));
    await expectLoadError(gguf('bad-no-arch.gguf'), RangeError, new RegExp(`has no general\\.architecture; supported: ${supported}$`));
  });

  test('a missing tensor, a wrong shape, a truncated file, an unread ggml type', async () => {
    await expectLoadError(gguf('bad-missing-tensor.gguf'), RangeError, /the weights lack 1 tensor a qwen2 model with this GGUF metadata needs: "blk\.1\.ffn_down\.weight"/);
    await expectLoadError(gguf('bad-wrong-shape.gguf'), RangeError, /tensor "blk\.0\.ffn_gate\.weight" has shape \[64, 32\], but GGUF metadata implies \[96, 32\]/);
    await expectLoadError(gguf('bad-truncated.gguf'), RangeError, /past the data section .*: a truncated block/);
    await expectLoadError(new Blob([gguf('bad-truncated.gguf')]), RangeError, /a truncated block/);
    await expectLoadError(gguf('bad-unknown-type-tensor.gguf'), RangeError, /tensor "blk\.0\.ffn_up\.weight" has ggml type Q4_1, which loadModel does not read; allowed: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K/);
  });

  test('metadata the family refuses is named by its GGUF key', async () => {
    const bytes = gguf('qwen2-f32.gguf');
    const key = new TextEncoder().encode('qwen2.attention.head_count_kv');
    // Make head_count_kv 3 (4 heads): the family's own check, told in GGUF terms.
    let at = -1;
    for (let i = 0; i < bytes.length - key.length && at < 0; i++) if (key.every((b, k) => bytes[i + k] === b)) at = i;
    const edited = bytes.slice();
    new DataView(edited.buffer).setUint32(at + key.length + 4, 3, true);
    await expectLoadError(edited, RangeError, /GGUF metadata: qwen2\.attention\.head_count_kv \(3\) must divide qwen2\.attention\.head_count \(4\)/);
  });

  test('RoPE scalings of the new families are refused by name: Phi-3.5\'s longrope factors, Gemma 3\'s linear scaling', async () => {
    await expectLoadError(gguf('bad-phi3-longrope.gguf'), RangeError, /rope_scaling type "longrope" is not supported for phi3/);
    await expectLoadError(gguf('bad-gemma3-rope-linear.gguf'), RangeError, /rope_scaling type "linear" is not supported for gemma3_text/);
  });

  test('wrong ways to pass a GGUF file', async () => {
    const bytes = gguf('qwen2-f32.gguf');
    await expectLoadError({ weights: bytes, config: goldenJson('qwen2', 'config.json') }, TypeError, /config was given with a GGUF file, whose config is its metadata/);
    await expectLoadError({ weights: bytes, dtpye: 'float32' }, TypeError, /unknown key "dtpye"; allowed: /);
    await expectLoadError({ weights: bytes, dtype: 'q8' }, RangeError, /dtype must be 'auto' or 'float32', got "q8"/);
    await expectLoadError(golden('qwen2', 'model.safetensors'), TypeError, /a file given alone must be a GGUF file/);
    await expectLoadError(new Uint8Array([0x47, 0x47, 0x55, 0x46, 1, 0, 0, 0]), RangeError, /GGUF version 1 is not supported/);
    await expectLoadError([new File([bytes], 'a.gguf'), new File([bytes], 'b.gguf')], RangeError, /the files hold 2 GGUF files \(a\.gguf, b\.gguf\); give one/);
  });
});

describe('fuzz (short pass of tests/fuzz/fuzz-gguf.mjs runModelFuzz)', () => {
  test('300 mutated model headers: each loads its plan or is refused with a loadModel RangeError/TypeError', async () => {
    const { runModelFuzz } = await import('../fuzz/fuzz-gguf.mjs');
    const failures = await runModelFuzz({ iterations: 300, seed: 36 });
    expect(failures.map((f) => String(f.error && f.error.stack))).toEqual([]);
  });
});
