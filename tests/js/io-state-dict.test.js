// State-dict mapping: files written by tests/reference/make_weights.py
// (numpy, by the format specs) are loaded into the library's layers, whose
// outputs must equal the float64 outputs of each framework's semantics stored
// beside them; state dicts written back are bit-exact.
import { readFileSync } from 'node:fs';
import { init } from '../../web/node.js';
import { readSafetensors, readNpz, listAttentionLayers, fromStateDict, toStateDict } from '../../web/lib/io/index.js';
import { TOL, expectTensorClose } from './helpers.js';

const DIR = new URL('../golden/weights/', import.meta.url);
const bytes = (name) => readFileSync(new URL(name, DIR));
const tensorsOf = (name) => (name.endsWith('.npz') ? readNpz(bytes(name)) : readSafetensors(bytes(name))).tensors;
const exp = (name) => {
  const j = JSON.parse(readFileSync(new URL(`${name}.expected.json`, DIR), 'utf8'));
  for (const v of Object.values(j)) if (v.data) v.data = Float32Array.from(v.data);
  return j;
};
const bitsEqual = (a, b) => Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

const load = (m, tensors, opts) => m.loadStateDict(tensors, opts);
const save = (m, opts) => m.stateDict(opts);

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});

function expectRoundTrip(written, file) {
  for (const [name, t] of Object.entries(written)) {
    expect(file[name]).toBeDefined();
    expect(t.shape).toEqual(file[name].shape);
    if (!bitsEqual(Float32Array.from(t.data), file[name].data)) throw new Error(`${name}: not bit-exact`);
  }
}

describe('each framework file → the layer equals the float64 reference', () => {
  test('torch nn.MultiheadAttention (in_proj rows q, k, v; cross attention)', () => {
    const st = tensorsOf('torch_mha.safetensors');
    expect(listAttentionLayers(st)).toEqual([{ prefix: '', format: 'torch', embedDim: 8, kdim: 8, vdim: 8, numHeads: null, bias: true, causal: false, rope: false, norm: null }]);
    const e = exp('torch_mha');
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    load(mha, st, { format: 'torch' });
    const r = mha.forwardSync(e.query, e.key, e.value);
    expectTensorClose(r.output, e.output, TOL.attention, 'output');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    expectRoundTrip(save(mha, { format: 'torch' }), st);
    mha.dispose();
  });

  test('torch with kdim/vdim ≠ E (q/k/v_proj_weight, from .npz)', () => {
    const st = tensorsOf('torch_mha_kvdim.npz');
    const e = exp('torch_mha_kvdim');
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: 6, vdim: 5 });
    load(mha, st, {});
    expectTensorClose(mha.forwardSync(e.query, e.key, e.value).output, e.output, TOL.attention, 'output');
    expectRoundTrip(save(mha, { format: 'torch' }), st);
    mha.dispose();
  });

  test('torch add_bias_kv is refused with the reason', () => {
    const st = tensorsOf('torch_mha_bias_kv.safetensors');
    expect(listAttentionLayers(st)[0].error).toMatch(/bias_k\/bias_v/);
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    expect(() => load(mha, st, { format: 'torch' })).toThrow(RangeError);
    expect(() => load(mha, st, { format: 'torch' })).toThrow(/bias_k\/bias_v \(nn.MultiheadAttention\(add_bias_kv=True\)\), which append one learned key and value position .* add_bias_kv=False/);
    mha.dispose();
  });

  test('torch nn.TransformerEncoderLayer: norm1(x + self_attn(x)) into selfAttentionLayer', () => {
    const st = tensorsOf('torch_encoder.safetensors');
    expect(listAttentionLayers(st).map((l) => [l.prefix, l.norm])).toEqual([['layers.0.self_attn.', { placement: 'post', kind: 'layer' }], ['layers.1.self_attn.', { placement: 'post', kind: 'layer' }]]);
    const e = exp('torch_encoder');
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: 0 });
    load(layer, st, { format: 'torch', prefix: 'layers.1.self_attn.' });
    const r = layer.forwardSync(e.x);
    expectTensorClose(r.output, e.output, TOL.layer, 'output');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    expectRoundTrip(save(layer, { format: 'torch', prefix: 'layers.1.self_attn.' }), st);
    layer.dispose();
  });

  test('HF BERT: self-attention + output dense + LayerNorm (eps 1e-12), padding mask', () => {
    const st = tensorsOf('hf_bert.safetensors');
    expect(listAttentionLayers(st).map((l) => `${l.format} ${l.prefix}`)).toEqual(['hf-bert bert.encoder.layer.0.', 'hf-bert bert.encoder.layer.1.']);
    const e = exp('hf_bert');
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, dropout: 0, eps: 1e-12 });
    load(layer, st, { format: 'hf-bert', prefix: 'bert.encoder.layer.1.' });
    const r = layer.forwardSync(e.x, { mask: { kind: 'padding', lengths: Array.from(e.lengths.data) } });
    expectTensorClose(r.output, e.output, TOL.layer, 'output');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    expectRoundTrip(save(layer, { format: 'hf-bert', prefix: 'bert.encoder.layer.1.' }), st);
    layer.dispose();
  });

  test.each(['hf_gpt2', 'hf_gpt2_f16'])('%s: Conv1D [E,3E] (y = x·W + b), causal; ln_1 is pre-LN', (name) => {
    const st = tensorsOf(`${name}.safetensors`);
    const layers = listAttentionLayers(st);
    expect(layers.map((l) => [l.prefix, l.causal, l.norm])).toEqual([['h.0.', true, { placement: 'pre', kind: 'layer' }], ['h.1.', true, { placement: 'pre', kind: 'layer' }]]);
    const e = exp(name);
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    load(mha, st, { format: 'hf-gpt2', prefix: 'h.1.' });
    const r = mha.forwardSync(e.ln_1, undefined, undefined, { mask: { kind: 'causal' } });
    expectTensorClose(r.output, e.attn, TOL.attention, 'attn(ln_1(x))');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    const f = fromStateDict(st, { prefix: 'h.1.' });
    expect(f.config).toEqual({ embedDim: 8, numHeads: null, kdim: 8, vdim: 8, bias: true, causal: true, eps: 1e-5 });
    expect(f.norm.placement).toBe('pre');
    expect(bitsEqual(f.norm.gamma.data, st['h.1.ln_1.weight'].data)).toBe(true);
    expectRoundTrip(save(mha, { format: 'hf-gpt2', prefix: 'h.1.' }), st);
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    expect(() => load(layer, st, { format: 'hf-gpt2', prefix: 'h.1.' })).toThrow(/is pre-norm \(x \+ attn\(LayerNorm\(x\)\)\), but selfAttentionLayer computes LayerNorm\(x \+ attn\(x\)\)/);
    layer.dispose();
    mha.dispose();
  });

  test('keras MultiHeadAttention: [in,H,D] kernels, [H,D,E] output (kdim 6, vdim 5, from .npz)', () => {
    const st = tensorsOf('keras_mha.npz');
    expect(listAttentionLayers(st)).toEqual([{ prefix: 'multi_head_attention/', format: 'keras', embedDim: 8, kdim: 6, vdim: 5, numHeads: 2, bias: true, causal: false, rope: false, norm: null }]);
    const e = exp('keras_mha');
    const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, kdim: 6, vdim: 5 });
    load(mha, st, { format: 'keras' });
    const r = mha.forwardSync(e.query, e.key, e.value);
    expectTensorClose(r.output, e.output, TOL.attention, 'output');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    expectRoundTrip(save(mha, { format: 'keras', prefix: 'multi_head_attention/' }), st);
    const wrongHeads = lab.multiHeadAttention({ embedDim: 8, numHeads: 4, kdim: 6, vdim: 5 });
    expect(() => load(wrongHeads, st, { format: 'keras' })).toThrow(/has 2 heads \(its kernels say so\), but numHeads 4/);
    wrongHeads.dispose();
    mha.dispose();
  });

  test('HF Llama (BF16): GQA 4/2 heads + RoPE (rotate_half) equal the float64 reference when the library has them', () => {
    const st = tensorsOf('hf_llama_bf16.safetensors');
    const l = listAttentionLayers(st);
    expect(l.map((x) => x.prefix)).toEqual(['model.layers.0.', 'model.layers.1.']);
    expect(l[1]).toMatchObject({ format: 'hf-llama', embedDim: 16, qDim: 16, kvDim: 8, rope: true, causal: true, bias: false, norm: { placement: 'pre', kind: 'rms' } });
    const f = fromStateDict(st, { prefix: 'model.layers.1.', numHeads: 4 });
    expect(f.config).toMatchObject({ numHeads: 4, numKvHeads: 2, headDim: 4, rope: { kind: 'rotate_half', base: 10000 } });
    expect(f.weights.wk.shape).toEqual([8, 16]);
    expectRoundTrip(toStateDict(f.weights, { format: 'hf-llama', prefix: 'model.layers.1.', config: f.config, norm: f.norm }), st);
    const plain = lab.multiHeadAttention({ embedDim: 16, numHeads: 4, bias: false });
    expect(() => load(plain, st, { prefix: 'model.layers.1.' })).toThrow(/grouped KV heads|numKvHeads: 2|rotary/);
    plain.dispose();
    if (plain.numKvHeads === undefined) return; // the library without GQA/RoPE (issue 11): refusal only
    const noRope = lab.multiHeadAttention({ embedDim: 16, numHeads: 4, numKvHeads: 2, bias: false });
    expect(() => load(noRope, st, { prefix: 'model.layers.1.' })).toThrow(/needs rotary position embeddings as transformers applies them/);
    noRope.dispose();
    const e = exp('hf_llama_bf16');
    const mha = lab.multiHeadAttention({ embedDim: 16, numHeads: 4, numKvHeads: 2, bias: false, rope: { base: e.rope_theta.data[0] } });
    load(mha, st, { prefix: 'model.layers.1.' });
    const r = mha.forwardSync(e.x, undefined, undefined, { mask: { kind: 'causal' } });
    expectTensorClose(r.output, e.output, TOL.attention, 'output');
    expectTensorClose(r.weights, e.weights, TOL.attention, 'weights');
    expectRoundTrip(save(mha, { format: 'hf-llama', prefix: 'model.layers.1.' }), st);
    mha.dispose();
  });
});

describe('naming variants', () => {
  test("BERT's older LayerNorm.gamma/beta and Keras '.'/':0' names map the same", () => {
    const bert = tensorsOf('hf_bert.safetensors');
    const old = {};
    for (const [k, v] of Object.entries(bert)) old[k.replace('LayerNorm.weight', 'LayerNorm.gamma').replace('LayerNorm.bias', 'LayerNorm.beta')] = v;
    const a = fromStateDict(bert, { prefix: 'bert.encoder.layer.0.' });
    const b = fromStateDict(old, { prefix: 'bert.encoder.layer.0.' });
    expect(b.norm.gamma.data).toEqual(a.norm.gamma.data);
    expect(b.norm.beta.data).toEqual(a.norm.beta.data);
    const keras = tensorsOf('keras_mha.npz');
    const dotted = {};
    const colon = {};
    for (const [k, v] of Object.entries(keras)) {
      dotted[k.replace(/\//g, '.')] = v;
      colon[`${k}:0`] = v;
    }
    const ref = fromStateDict(keras, {});
    for (const variant of [dotted, colon]) {
      const r = fromStateDict(variant, {});
      expect(r.format).toBe('keras');
      for (const key of Object.keys(ref.weights)) expect(r.weights[key].data).toEqual(ref.weights[key].data);
    }
    expect(fromStateDict(dotted, {}).prefix).toBe('multi_head_attention.');
  });
});

describe('mapping errors name what is wrong', () => {
  const st = () => ({ ...tensorsOf('hf_gpt2.safetensors') });
  test.each([
    ['a missing tensor', (t) => { delete t['h.1.attn.c_proj.bias']; return [t, { format: 'hf-gpt2', prefix: 'h.1.' }]; }, /format 'hf-gpt2' needs the tensor "h.1.attn.c_proj.bias", which the file lacks/],
    ['a prefix that is not there', (t) => [t, { format: 'hf-gpt2', prefix: 'h.7.' }], /needs the tensor "h.7.attn.c_attn.weight", which the file lacks \(attention layers found: 'h.0.' \(hf-gpt2\), 'h.1.' \(hf-gpt2\)\)/],
    ['several layers, no prefix', (t) => [t, { format: 'hf-gpt2' }], /the file holds 2 attention layers; pass prefix to pick one/],
    ['a format with no layer', (t) => [t, { format: 'hf-bert' }], /no 'hf-bert' attention layer in the file/],
    ['an unknown format', (t) => [t, { format: 'onnx' }], /unknown format "onnx"; known: 'torch', 'hf-bert', 'hf-gpt2', 'hf-llama', 'keras'/],
    ['a wrong shape', (t) => { t['h.0.attn.c_proj.weight'] = { data: new Float32Array(16), shape: [4, 4] }; return [t, { prefix: 'h.0.' }]; }, /"h.0.attn.c_proj.weight" has shape \[4,4\], but format 'hf-gpt2' needs \[8,8\]/],
    ['an integer tensor', (t) => { t['h.0.attn.c_proj.bias'] = { data: new Int32Array(8), shape: [8], dtype: 'I64' }; return [t, { prefix: 'h.0.' }]; }, /"h.0.attn.c_proj.bias" holds integers \(I64\); weights must be a float dtype/],
  ])('%s', (_, make, message) => {
    const [t, opts] = make(st());
    expect(() => fromStateDict(t, opts)).toThrow(RangeError);
    expect(() => fromStateDict(t, opts)).toThrow(message);
  });

  test('a module that does not fit the file', () => {
    const mha = lab.multiHeadAttention({ embedDim: 12, numHeads: 2 });
    expect(() => load(mha, st(), { prefix: 'h.0.' })).toThrow(/has embedDim 8, kdim 8, vdim 8; this module has embedDim 12/);
    const nob = lab.multiHeadAttention({ embedDim: 8, numHeads: 2, bias: false });
    expect(() => load(nob, st(), { prefix: 'h.0.' })).toThrow(/has biases, but this module was created with bias: false; create it with bias: true/);
    expect(() => load(nob, st(), { prefix: 'h.0.', nope: 1 })).toThrow(TypeError);
    expect(() => save(nob, {})).toThrow(/multiHeadAttention.stateDict: options.format is missing/);
    mha.dispose();
    nob.dispose();
    expect(() => load(nob, st(), { prefix: 'h.0.' })).toThrow(/multiHeadAttention.loadStateDict: this object has been disposed/);
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    expect(() => save(layer, { format: 'hf-gpt2' })).toThrow(/selfAttentionLayer.stateDict: format 'hf-gpt2' has no post-attention LayerNorm/);
    expect(() => load(layer, tensorsOf('keras_mha.npz'), {})).toThrow(/has embedDim 8, kdim 6, vdim 5/);
    layer.dispose();
  });

  test('listing works from openSafetensors entries (shapes only); layerTensorNames reads one layer', async () => {
    const f = await lab.openSafetensors(new Blob([bytes('hf_bert.safetensors')]));
    const layers = listAttentionLayers(f.entries);
    expect(layers.map((l) => l.prefix)).toEqual(['bert.encoder.layer.0.', 'bert.encoder.layer.1.']);
    const names = lab.layerTensorNames(f.entries, layers[1]);
    expect(names).toHaveLength(10);
    expect(names.every((n) => n.startsWith('bert.encoder.layer.1.attention.'))).toBe(true);
    const layer = lab.selfAttentionLayer({ embedDim: 8, numHeads: 2, eps: 1e-12 });
    layer.loadStateDict(await f.read(names), layers[1]);
    layer.dispose();
    const g = tensorsOf('hf_gpt2.safetensors');
    expect(lab.layerTensorNames(g, { prefix: 'h.1.', format: 'hf-gpt2' }).sort()).toEqual(['h.1.attn.c_attn.bias', 'h.1.attn.c_attn.weight', 'h.1.attn.c_proj.bias', 'h.1.attn.c_proj.weight', 'h.1.ln_1.bias', 'h.1.ln_1.weight']);
  });
});
