// The GPU copy of a loaded model (web/lib/model/gpu.js, lab.loadModel on a
// webgpu lab) without a GPU: loadModel with a recording stand-in for the
// webgpu backend's model methods. Every tensor of the block graph is
// uploaded once, under its block-graph name, in keras layout [in, out]: the
// transpose of what the wasm block graph holds (Transformer.getWeights,
// torch layout), for GPT-2's Conv1D and fused c_attn, Llama's GQA and untied
// head (F32 and BF16 shards), BERT's MLM head and the decoder families of
// issue 32 (their q/k and sandwich norms, fused projections split, Gemma's
// 1 + w). From a 16-bit file the matrices go up as their 16-bit values
// (widened here by a decoder of this file). A forward answered null (a
// device loss) falls back to the wasm copy. The browser tests (tests/browser/models-webgpu.browser.mjs,
// models-webgpu-families.browser.mjs) run the kernels.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { loadModel } from '../../web/lib/model/load.js';

const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'models');

/** 16-bit values → float32, written here (not the library's decoder): BF16 the upper half of the bits, F16 by its fields. */
function widen(bits, half) {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    if (half === 'BF16') {
      out[i] = new Float32Array(new Uint32Array([b << 16]).buffer)[0];
      continue;
    }
    const sign = b & 0x8000 ? -1 : 1;
    const e = (b >> 10) & 0x1f;
    const m = b & 0x3ff;
    out[i] = sign * (e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15));
  }
  return out;
}

// The 16-bit checkpoints of tests/golden/models/: their matrices go up in 16 bits (but the
// position and token-type tables), everything else in float32.
const SIXTEEN = { 'llama-sharded': 'BF16', qwen2: 'BF16', qwen3: 'BF16', gemma: 'BF16', gemma3: 'BF16', mistral: 'F16', phi3: 'F16', 'gpt_neox-sequential': 'F16' };
const halfExpected = (folder, key, shape) => (shape.length === 2 && !/^(pos|type)\.weight$/.test(key) ? SIXTEEN[folder] : undefined);

function standIn() {
  const uploads = new Map();
  const calls = { create: 0, forward: 0, dispose: 0 };
  return {
    uploads,
    calls,
    deviceLost: false,
    async modelCreate(spec) {
      calls.create++;
      return { spec, disposed: false };
    },
    modelUpload(m, where, name, shape, data, half) {
      expect(uploads.has(name)).toBe(false);
      const count = shape.reduce((a, b) => a * b, 1);
      if (half) {
        expect(data).toBeInstanceOf(Uint16Array);
        expect(data.length).toBe(count + (count & 1)); // padded to an even count
      }
      uploads.set(name, { shape, half, data: half ? widen(data.subarray(0, count), half) : Float32Array.from(data) });
    },
    modelBytes: () => 0,
    async modelForward() {
      calls.forward++;
      return null;
    },
    modelDispose() {
      calls.dispose++;
    },
  };
}

function source(name, shards) {
  const read = (f) => new Uint8Array(fs.readFileSync(path.join(MODELS, name, f)));
  const weights = shards
    ? [...shards.map((f) => new File([read(f)], f)), JSON.parse(Buffer.from(read('model.safetensors.index.json')).toString())]
    : read('model.safetensors');
  return { config: Buffer.from(read('config.json')).toString(), weights, tokenizer: Buffer.from(read('tokenizer.json')).toString() };
}

describe('loadModel onto a GPU: the uploaded tensors', () => {
  let Module;
  let backend;
  beforeAll(async () => {
    backend = (await init({ backend: 'wasm' }))._backend;
    Module = backend.wasmModule;
  });

  test.each([
    ['gpt2', null],
    ['llama', null],
    ['llama-sharded', ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']],
    ['bert', null],
    // the encoders: distilbert without token types, roberta's position rows from padding_idx + 1 ([E, 32] of 34)
    ['distilbert', null],
    ['roberta', null],
    ['xlm-roberta', null],
  ])('%s: every block-graph tensor once, [in, out], equal to the wasm copy', async (name, shards) => {
    const gpu = standIn();
    const progress = [];
    const model = await loadModel(Module, { ...source(name, shards), onProgress: (p) => progress.push(p) }, { gpu });
    const wasm = model._t.getWeights();
    expect([...gpu.uploads.keys()].sort()).toEqual(Object.keys(wasm).sort());
    for (const [key, { data, shape }] of Object.entries(wasm)) {
      const up = gpu.uploads.get(key);
      expect([key, up.half]).toEqual([key, halfExpected(name, key, shape)]);
      if (shape.length === 1) {
        expect(up.shape).toEqual(shape);
        expect(up.data).toEqual(data);
        continue;
      }
      const [rows, cols] = shape;
      expect(up.shape).toEqual([cols, rows]);
      const t = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = data[r * cols + c];
      expect(up.data).toEqual(t);
    }
    // Every tensor is read twice (wasm, then GPU), and progress says so.
    const last = progress[progress.length - 1];
    expect(last.loaded).toBe(last.total);
    // A forward the GPU side answers with null (device lost) is the wasm copy's.
    const ids = JSON.parse(fs.readFileSync(path.join(MODELS, name, 'expected.json'), 'utf8')).cases[0].ids;
    const r = await model.forward(ids, { attentions: true, hiddenStates: true });
    const w = model.forwardSync(ids, { attentions: true, hiddenStates: true });
    expect(gpu.calls.forward).toBe(1);
    expect(r.hiddenStates.data).toEqual(w.hiddenStates.data);
    expect(r.attentions.map((a) => a.shape)).toEqual(w.attentions.map((a) => a.shape));
    model.dispose();
    expect(gpu.calls.dispose).toBe(1);
    await expect(model.forward(ids)).rejects.toThrow(/dispose/i);
  });

  test('a device already lost: no upload, forward on the wasm copy', async () => {
    const gpu = { ...standIn(), deviceLost: true };
    const model = await loadModel(Module, source('gpt2'), { gpu });
    expect(gpu.calls.create).toBe(0);
    expect(model._gpu).toBe(null);
    const ids = [1, 2, 3];
    expect((await model.forward(ids)).logits.data).toEqual(model.forwardSync(ids).logits.data);
    model.dispose();
  });

  test('a failed upload frees the GPU side and the wasm block graph', async () => {
    const gpu = standIn();
    gpu.modelUpload = () => {
      throw new RangeError('loadModel: tensor embed.weight [32, 297] needs 37.1 KiB in one GPU buffer, above this device\'s maxStorageBufferBindingSize');
    };
    const before = backend.heapBytesInUse();
    await expect(loadModel(Module, source('gpt2'), { gpu })).rejects.toThrow(/maxStorageBufferBindingSize/);
    expect(gpu.calls.dispose).toBe(1);
    expect(backend.heapBytesInUse()).toBe(before);
  });

  // The families of issue 32: the GPU path runs every block-graph field they use
  // (tests/browser/models-webgpu-families.browser.mjs checks its values); their tensors go up
  // as the wasm copy holds them (fused projections split, Gemma's norms as 1 + w, q/k and
  // sandwich norms included).
  const decoder = (name, patch = {}) => {
    const read = (f) => new Uint8Array(fs.readFileSync(path.join(MODELS, name, f)));
    return { config: { ...JSON.parse(Buffer.from(read('config.json')).toString()), ...patch }, weights: read('model.safetensors') };
  };

  test.each([
    ['qwen2', {}], ['qwen3', {}], ['mistral', {}], ['gemma', {}], ['gemma2', {}], ['gemma3', {}],
    ['phi3', {}], ['gpt_neox', {}], ['gpt_neox-sequential', {}], ['gpt_neo', {}],
    // Phi-3 with every rotary dim: the fused qkv_proj and gate_up_proj split on the way up (split-rows)
    ['phi3', { partial_rotary_factor: 1 }],
  ])('%s %j: every block-graph tensor once, [in, out], equal to the wasm copy', async (name, patch) => {
    const gpu = standIn();
    const model = await loadModel(Module, decoder(name, patch), { gpu });
    expect(gpu.calls.create).toBe(1);
    const wasm = model._t.getWeights();
    expect([...gpu.uploads.keys()].sort()).toEqual(Object.keys(wasm).sort());
    for (const [key, { data, shape }] of Object.entries(wasm)) {
      const up = gpu.uploads.get(key);
      expect([key, up.half]).toEqual([key, halfExpected(name, key, shape)]);
      if (shape.length === 1) {
        expect(up.data).toEqual(data);
        continue;
      }
      const [rows, cols] = shape;
      expect(up.shape).toEqual([cols, rows]);
      const t = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = data[r * cols + c];
      expect(up.data).toEqual(t);
    }
    model.dispose();
  });

  // GGUF files (tests/golden/gguf/models/): F16 and BF16 matrices go up in 16 bits, also through
  // the rope-unpermute of a llama Q/K; dequantised types (Q8_0) in float32.
  test.each([
    ['llama-bf16.gguf', 'BF16', 'BF16'],
    ['qwen2-f16.gguf', 'F16', 'F16'],
    ['gemma3-f16.gguf', 'F16', 'F16'],
    ['llama-q8_0.gguf', 'float32', undefined],
  ])('GGUF %s: matrices in %s on the GPU, equal to the wasm copy', async (file, _, half) => {
    const gpu = standIn();
    const weights = new Uint8Array(fs.readFileSync(path.join(MODELS, '..', 'gguf', 'models', file)));
    const model = await loadModel(Module, { weights }, { gpu });
    const wasm = model._t.getWeights();
    expect([...gpu.uploads.keys()].sort()).toEqual(Object.keys(wasm).sort());
    for (const [key, { data, shape }] of Object.entries(wasm)) {
      const up = gpu.uploads.get(key);
      expect([key, up.half]).toEqual([key, shape.length === 2 && !/^(pos|type)\.weight$/.test(key) ? half : undefined]);
      if (shape.length === 1) {
        expect(up.data).toEqual(data);
        continue;
      }
      const [rows, cols] = shape;
      const t = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = data[r * cols + c];
      expect(up.data).toEqual(t);
    }
    model.dispose();
  });

  test('a build of the core without a field the family needs: refused by the field, before anything is allocated', async () => {
    // The same module, but its TransformerConfig field list without the fields of issue 32.
    const defaults = Module.transformerConfigDefaults();
    const old = Object.create(Module, {
      transformerConfigDefaults: { value: () => { const d = { ...defaults }; delete d.headDim; delete d.qkNorm; return d; } },
    });
    const before = backend.heapBytesInUse();
    await expect(loadModel(old, decoder('qwen3'))).rejects.toThrow(
      /model_type "qwen3" needs the block graph's fields headDim \(12\), qkNorm \(true\), which this build of the core does not have/,
    );
    expect(backend.heapBytesInUse()).toBe(before);
  });
});
