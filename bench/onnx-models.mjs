// ONNX models for the onnxruntime-web peer, built in JS with onnx-proto from
// the same deterministic weights as every other implementation (common.mjs).
// Node only (onnx-proto is CommonJS); the browser page fetches the bytes that
// the driver writes with writeModels().
//
// Variants (see implsFor in common.mjs):
//   ort-attn    com.microsoft.Attention (fused QKV projection + attention,
//               unidirectional = causal) + output MatMul/Add
//   ort-mha     MatMul/Add projections + com.microsoft.MultiHeadAttention
//               (unidirectional for causal) + output MatMul/Add
//   ort-attn23  MatMul/Add projections + ONNX Attention (opset 23, is_causal;
//               qk_matmul_output_mode = 3 returns the softmax weights)
//   ort-gqa     com.microsoft.GroupQueryAttention on projected heads (GQA
//               cases: BSNH query/key/value, BNSH past, causal,
//               local_window_size for the sliding window)
//   ort-ops     plain ONNX ops (MatMul, Reshape, Transpose, Softmax, …);
//               for gemm: one MatMul; layernorm: LayerNormalization (opset 17);
//               pe: Mul, Sin, Cos, Unsqueeze, Concat, Reshape
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { mhaWeights, caseInputs, peInvFreq, LN_EPS } from './common.mjs';
import { decode } from '../web/lib/io/dtypes.js';

const require = createRequire(import.meta.url);
const { onnx } = require('onnx-proto');

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT64 = onnx.TensorProto.DataType.INT64;
const INT32 = onnx.TensorProto.DataType.INT32;
const A = onnx.AttributeProto.AttributeType;

function tensor(name, dims, data) {
  if (data instanceof Float32Array) {
    return { name, dims, dataType: FLOAT, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }
  if (data instanceof Int32Array) return { name, dims, dataType: INT32, int32Data: Array.from(data) };
  return { name, dims, dataType: INT64, int64Data: data };
}

function attr(name, v) {
  if (Array.isArray(v)) return { name, type: A.INTS, ints: v };
  if (v instanceof Float32Array) return { name, type: A.FLOAT, f: v[0] }; // a float that is an integer (1.0)
  if (Number.isInteger(v)) return { name, type: A.INT, i: v };
  return { name, type: A.FLOAT, f: v };
}

function valueInfo(name, dims, elemType = FLOAT) {
  return {
    name,
    type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } } },
  };
}

class Graph {
  constructor() {
    this.nodes = [];
    this.inits = [];
    this.inputs = [];
    this.outputs = [];
    this.n = 0;
    this.usesMs = false;
  }
  input(name, dims, elemType = FLOAT) {
    this.inputs.push(valueInfo(name, dims, elemType));
    return name;
  }
  output(name, dims) {
    this.outputs.push(valueInfo(name, dims));
  }
  init(name, dims, data) {
    this.inits.push(tensor(name, dims, data));
    return name;
  }
  ints(values) {
    return this.init(`c${this.n++}`, [values.length], values);
  }
  op(opType, inputs, attrs = {}, { outputs = 1, domain = '', name } = {}) {
    const outs = Array.from({ length: outputs }, (_, i) => (i === 0 && name ? name : `t${this.n++}`));
    if (domain === 'com.microsoft') this.usesMs = true;
    this.nodes.push({
      opType, domain, input: inputs, output: outs, name: `n${this.nodes.length}_${opType}`,
      attribute: Object.entries(attrs).map(([k, v]) => attr(k, v)),
    });
    return outputs === 1 ? outs[0] : outs;
  }
  // x·W + b with the MHA weight `key` ('wq', 'wk', 'wv', 'wo'; keras layout [in, out]).
  linear(x, key, E) {
    const w = this.init(`${key}_w`, [E, E], this.W[key]);
    const b = this.init(`${key}_b`, [E], this.W[`b${key.slice(1)}`]);
    return this.op('Add', [this.op('MatMul', [x, w]), b]);
  }
  bytes(opset = 23) {
    const opsetImport = [{ domain: '', version: opset }];
    if (this.usesMs) opsetImport.push({ domain: 'com.microsoft', version: 1 });
    const model = {
      irVersion: 10,
      producerName: 'attention-lab-bench',
      opsetImport,
      graph: { name: 'g', node: this.nodes, initializer: this.inits, input: this.inputs, output: this.outputs },
    };
    return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
  }
}

function concatCols(E, ...mats) {
  // [E, E] row-major matrices side by side → [E, n·E]
  const n = mats.length;
  const out = new Float32Array(E * E * n);
  for (let r = 0; r < E; r++) {
    for (let j = 0; j < n; j++) out.set(mats[j].subarray(r * E, (r + 1) * E), r * E * n + j * E);
  }
  return out;
}

function concat(...arrs) {
  const out = new Float32Array(arrs.reduce((a, x) => a + x.length, 0));
  let o = 0;
  for (const x of arrs) {
    out.set(x, o);
    o += x.length;
  }
  return out;
}

/** Additive causal mask [Lq, Lk] (top-left aligned like ours): 0 where j ≤ i, -1e9 elsewhere. */
function causalMask(lq, lk) {
  const m = new Float32Array(lq * lk);
  for (let i = 0; i < lq; i++) for (let j = i + 1; j < lk; j++) m[i * lk + j] = -1e9;
  return m;
}

function mhaModel(c, variant) {
  const { B, lq, lk, E, H } = c;
  const D = E / H;
  const g = new Graph();
  g.W = mhaWeights(E);
  const self = lq === lk;
  const xq = self ? g.input('x', [B, lq, E]) : g.input('q', [B, lq, E]);
  const xkv = self ? xq : g.input('kv', [B, lk, E]);
  let attn; // [B, Lq, E] before the output projection
  let weights = null;
  if (variant === 'ort-attn') {
    if (!self) throw new Error('ort-attn: self-attention only');
    const w = g.init('qkv_w', [E, 3 * E], concatCols(E, g.W.wq, g.W.wk, g.W.wv));
    const b = g.init('qkv_b', [3 * E], concat(g.W.bq, g.W.bk, g.W.bv));
    attn = g.op('Attention', [xq, w, b], { num_heads: H, unidirectional: c.causal ? 1 : 0 }, { domain: 'com.microsoft' });
  } else {
    const q = g.linear(xq, 'wq', E);
    const k = g.linear(xkv, 'wk', E);
    const v = g.linear(xkv, 'wv', E);
    if (variant === 'ort-mha') {
      attn = g.op('MultiHeadAttention', [q, k, v], { num_heads: H, unidirectional: c.causal ? 1 : 0 }, { domain: 'com.microsoft' });
    } else if (variant === 'ort-attn23') {
      const a = { q_num_heads: H, kv_num_heads: H, is_causal: c.causal ? 1 : 0 };
      if (c.needWeights) {
        const outs = g.op('Attention', [q, k, v], { ...a, qk_matmul_output_mode: 3 }, { outputs: 4 });
        attn = outs[0];
        weights = outs[3];
        g.nodes.at(-1).output = [outs[0], '', '', outs[3]];
      } else {
        attn = g.op('Attention', [q, k, v], a);
      }
    } else if (variant === 'ort-ops') {
      const heads = (t, L, perm) => g.op('Transpose', [g.op('Reshape', [t, g.ints([B, L, H, D])])], { perm });
      const qh = heads(q, lq, [0, 2, 1, 3]); // [B,H,Lq,D]
      const kt = heads(k, lk, [0, 2, 3, 1]); // [B,H,D,Lk]
      const vh = heads(v, lk, [0, 2, 1, 3]); // [B,H,Lk,D]
      let s = g.op('Mul', [g.op('MatMul', [qh, kt]), g.init('scale', [], new Float32Array([1 / Math.sqrt(D)]))]);
      if (c.causal) s = g.op('Add', [s, g.init('mask', [lq, lk], causalMask(lq, lk))]);
      const p = g.op('Softmax', [s], { axis: -1 });
      if (c.needWeights) weights = p;
      const o = g.op('MatMul', [p, vh]); // [B,H,Lq,D]
      attn = g.op('Reshape', [g.op('Transpose', [o], { perm: [0, 2, 1, 3] }), g.ints([B, lq, E])]);
    } else {
      throw new Error(`no ONNX model for ${variant}`);
    }
  }
  const y = g.linear(attn, 'wo', E);
  g.nodes.at(-1).output = ['y'];
  g.output('y', [B, lq, E]);
  if (weights) {
    const last = g.nodes.find((n) => n.output.includes(weights));
    last.output = last.output.map((o) => (o === weights ? 'weights' : o));
    for (const n of g.nodes) n.input = n.input.map((i) => (i === weights ? 'weights' : i));
    g.output('weights', [B, H, lq, lk]);
  }
  return g.bytes(variant === 'ort-attn23' ? 23 : 17);
}

// Attention on already-projected heads (a decode step over a KV cache).
function sdpaModel(c, variant) {
  const { B, H, lq, lk, D } = c;
  const g = new Graph();
  let y;
  if (variant === 'ort-mha') {
    // Query as [B, Lq, H·D] (for Lq = 1 the same memory as [B, H, 1, D]);
    // key/value in the op's BNSH form [B, H, Lk, D].
    if (lq !== 1) throw new Error('sdpa ort-mha: Lq = 1 only');
    g.input('q', [B, lq, H * D]);
    g.input('k', [B, H, lk, D]);
    g.input('v', [B, H, lk, D]);
    y = g.op('MultiHeadAttention', ['q', 'k', 'v'], { num_heads: H, unidirectional: c.causal ? 1 : 0 }, { domain: 'com.microsoft' });
    y = g.op('Reshape', [y, g.ints([B, lq, H, D])]);
    y = g.op('Transpose', [y], { perm: [0, 2, 1, 3] });
  } else {
    g.input('q', [B, H, lq, D]);
    g.input('k', [B, H, lk, D]);
    g.input('v', [B, H, lk, D]);
    if (variant === 'ort-attn23') {
      y = g.op('Attention', ['q', 'k', 'v'], { is_causal: c.causal ? 1 : 0 });
    } else if (variant === 'ort-ops') {
      let s = g.op('Mul', [g.op('MatMul', ['q', g.op('Transpose', ['k'], { perm: [0, 1, 3, 2] })]), g.init('scale', [], new Float32Array([1 / Math.sqrt(D)]))]);
      if (c.causal) s = g.op('Add', [s, g.init('mask', [lq, lk], causalMask(lq, lk))]);
      y = g.op('MatMul', [g.op('Softmax', [s], { axis: -1 }), 'v']);
    } else {
      throw new Error(`no ONNX model for ${variant}`);
    }
  }
  g.nodes.at(-1).output = ['y'];
  g.output('y', [B, H, lq, D]);
  return g.bytes(variant === 'ort-attn23' ? 23 : 17);
}

// A decoder step over a KV cache: x [B, 1, E] is projected, ORT's contrib
// MultiHeadAttention appends K and V to past_key/past_value [B, H, P, D] and
// returns present_key/present_value [B, H, P+1, D] for the next step.
function kvDecodeModel(c, variant) {
  if (variant !== 'ort-mha') throw new Error(`no ONNX model for ${variant} (kvdecode)`);
  const { B, E, H, past } = c;
  const D = E / H;
  const g = new Graph();
  g.W = mhaWeights(E);
  const x = g.input('x', [B, 1, E]);
  g.input('past_key', [B, H, past, D]);
  g.input('past_value', [B, H, past, D]);
  const q = g.linear(x, 'wq', E);
  const k = g.linear(x, 'wk', E);
  const v = g.linear(x, 'wv', E);
  const outs = g.op('MultiHeadAttention', [q, k, v, '', '', '', 'past_key', 'past_value'], { num_heads: H },
    { domain: 'com.microsoft', outputs: 3 });
  g.nodes.at(-1).output = [outs[0], 'present_key', 'present_value'];
  g.linear(outs[0], 'wo', E);
  g.nodes.at(-1).output = ['y'];
  g.output('y', [B, 1, E]);
  g.output('present_key', [B, H, past + 1, D]);
  g.output('present_value', [B, H, past + 1, D]);
  return g.bytes(17);
}

function gemmModel(c) {
  const g = new Graph();
  const { b } = caseInputs(c);
  g.input('a', [c.M, c.K]);
  g.nodes.push({ opType: 'MatMul', input: ['a', g.init('b', [c.K, c.N], b)], output: ['y'], name: 'mm' });
  g.output('y', [c.M, c.N]);
  return g.bytes(17);
}

function layerNormModel(c) {
  const g = new Graph();
  const { gamma, beta } = caseInputs(c);
  g.input('x', [c.rows, c.dim]);
  g.nodes.push({
    opType: 'LayerNormalization', input: ['x', g.init('gamma', [c.dim], gamma), g.init('beta', [c.dim], beta)], output: ['y'], name: 'ln',
    attribute: [attr('axis', -1), attr('epsilon', LN_EPS)],
  });
  g.output('y', [c.rows, c.dim]);
  return g.bytes(17);
}

function peModel(c) {
  if (c.D % 2) throw new Error('pe model: even D only');
  const g = new Graph();
  g.input('pos', [c.L, 1]);
  const ang = g.op('Mul', ['pos', g.init('inv_freq', [1, c.D / 2], peInvFreq(c.D))]); // [L, D/2]
  const ax = g.ints([2]);
  const s = g.op('Unsqueeze', [g.op('Sin', [ang]), ax]);
  const co = g.op('Unsqueeze', [g.op('Cos', [ang]), ax]);
  const inter = g.op('Concat', [s, co], { axis: 2 }); // [L, D/2, 2]
  g.nodes.push({ opType: 'Reshape', input: [inter, g.ints([c.L, c.D])], output: ['y'], name: 'reshape' });
  g.output('y', [c.L, c.D]);
  return g.bytes(17);
}

// GroupQueryAttention (ORT contrib, causal) on projected heads: query [B, Lq,
// H·D], key/value [B, Lq, Hkv·D] (the new positions), past_key/past_value
// [B, Hkv, P, D] for a decode step; seqlens_k = total − 1 per batch row.
function gqaModel(c, variant) {
  if (variant !== 'ort-gqa') throw new Error(`no ONNX model for ${variant} (gqa)`);
  const { B, H, Hkv, lq, lk, D } = c;
  const past = lk - lq;
  const g = new Graph();
  g.input('query', [B, lq, H * D]);
  g.input('key', [B, lq, Hkv * D]);
  g.input('value', [B, lq, Hkv * D]);
  if (past > 0) {
    g.input('past_key', [B, Hkv, past, D]);
    g.input('past_value', [B, Hkv, past, D]);
  }
  g.input('seqlens_k', [B], INT32);
  g.input('total_sequence_length', [], INT32);
  const attrs = { num_heads: H, kv_num_heads: Hkv };
  if (c.window) attrs.local_window_size = c.window;
  const outs = g.op('GroupQueryAttention',
    ['query', 'key', 'value', past > 0 ? 'past_key' : '', past > 0 ? 'past_value' : '', 'seqlens_k', 'total_sequence_length'],
    attrs, { domain: 'com.microsoft', outputs: 3 });
  g.nodes.at(-1).output = ['y', outs[1], outs[2]];
  g.output('y', [B, lq, H * D]);
  return g.bytes(17);
}

/** The ONNX model (bytes) of one case for one ORT variant. */
export function buildModel(c, variant) {
  switch (c.kind) {
    case 'mha':
      return mhaModel(c, variant);
    case 'sdpa':
      return sdpaModel(c, variant);
    case 'kvdecode':
      return kvDecodeModel(c, variant);
    case 'gqa':
      return gqaModel(c, variant);
    case 'gemm':
      return gemmModel(c);
    case 'layernorm':
      return layerNormModel(c);
    case 'pe':
      return peModel(c);
    default:
      throw new Error(`no ONNX model for case kind ${c.kind}`);
  }
}

export const modelFileName = (c, variant) => `${c.id}.${variant}.onnx`;

/** Writes every model the given (case, variant) pairs need into dir; returns the file names. */
export function writeModels(pairs, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const names = [];
  for (const [c, variant] of pairs) {
    const name = modelFileName(c, variant);
    fs.writeFileSync(path.join(dir, name), buildModel(c, variant));
    names.push(name);
  }
  return names;
}

// ---- a whole language model: GPT-2 (bench --only lm, tests/js/models-onnx.test.js) ----

/**
 * Reads a safetensors file's F32 tensors: Map name → { shape, data: Float32Array }
 * (data views into a copy aligned to 4 bytes). The bench's own reader, so that
 * the ORT side does not go through the library under test.
 */
export function readSafetensorsF32(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const n = Number(dv.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + n)));
  const base = 8 + n;
  const out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    if (t.dtype === 'F16' || t.dtype === 'BF16') {
      // 16-bit weights: their float32 values (the graph computes in float32).
      out.set(name, { shape: t.shape, data: decode('readSafetensorsF32', name, t.dtype, u8.subarray(base + a, base + b), (b - a) / 2) });
      continue;
    }
    if (t.dtype !== 'F32') throw new Error(`readSafetensorsF32: ${name} is ${t.dtype}; F32, F16 or BF16 only`);
    const start = u8.byteOffset + base + a;
    const data = start % 4 === 0
      ? new Float32Array(u8.buffer, start, (b - a) / 4)
      : new Float32Array(u8.slice(base + a, base + b).buffer);
    out.set(name, { shape: t.shape, data });
  }
  return out;
}

/** Transposes a row-major [rows, cols] matrix. */
function transposed(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  const B = 64;
  for (let r0 = 0; r0 < rows; r0 += B) {
    for (let c0 = 0; c0 < cols; c0 += B) {
      const r1 = Math.min(rows, r0 + B);
      const c1 = Math.min(cols, c0 + B);
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) out[c * rows + r] = data[r * cols + c];
    }
  }
  return out;
}

/** The attention op variants of buildGpt2Onnx, and the names of their cache tensors per layer. */
export const GPT2_ATTENTION_OPS = ['attn', 'mha', 'gqa'];
export function gpt2CacheNames(variant, layer) {
  return variant === 'attn'
    ? { past: [`past_${layer}`], present: [`present_${layer}`] }
    : { past: [`past_key_${layer}`, `past_value_${layer}`], present: [`present_key_${layer}`, `present_value_${layer}`] };
}

/**
 * An ONNX graph of GPT-2 (GPT2LMHeadModel) from Hugging Face tensors.
 *
 * config: the parsed config.json (n_layer, n_head, n_embd, vocab_size,
 * n_positions, layer_norm_epsilon, n_inner); tensors: Map or object of name →
 * { shape, data: Float32Array } with the hub's names (with or without the
 * `transformer.` prefix) and layout (Conv1D weights [in, out]).
 *
 * Graph (opset 17 + com.microsoft 1): Gather(wte, input_ids) + Gather(wpe,
 * positions) (positions = past length + Range(L), from the past tensor's
 * shape); per block LayerNormalization → attention (below) → MatMul + Add
 * (c_proj) → residual Add → LayerNormalization → MatMul (c_fc) → FastGelu
 * (com.microsoft, bias fused; gelu_new's tanh form) or the tanh formula in
 * plain ops (`gelu: 'tanh'`) → MatMul + Add → residual Add; ln_f; the tied LM
 * head as a MatMul with wteᵀ, transposed once into an [E, V] initializer.
 *
 * options:
 *   past: true → the graph takes the key/value cache and returns the new one
 *     (a zero-length past for the prefill); false → a plain forward
 *     (no cache inputs or outputs; positions from 0).
 *   lastOnly: logits of the last position only ([1, 1, V]; the hidden state is
 *     sliced before ln_f, so the LM head runs on one row).
 *   lastBlockRow (with lastOnly): the slice moves up into the last block, after
 *     its attention (the attention output and the residual stream), so that
 *     block's c_proj, ln_2 and MLP run on the last row alone, as
 *     llama.cpp's inp_out_ids and our Model._extend do (the presents keep
 *     every row).
 *   attention: 'attn' com.microsoft.Attention (QKV projection fused into the
 *     op, unidirectional = 1; cache `past_<l>` [2, 1, H, P, D] → `present_<l>`
 *     [2, 1, H, P+L, D]); 'mha' MatMul + Add + Split, then
 *     com.microsoft.MultiHeadAttention (unidirectional = 1; cache
 *     `past_key_<l>`/`past_value_<l>` [1, H, P, D] → `present_key_<l>`/…);
 *     'gqa' MatMul + Add, com.microsoft.GroupQueryAttention on the packed QKV
 *     (kv_num_heads = num_heads, causal; seqlens_k and total_sequence_length
 *     computed in the graph; cache as 'mha').
 *   gelu: 'fast' (FastGelu) or 'tanh'.
 * Inputs: input_ids int64 [1, L] (+ the past tensors). Outputs: logits
 * [1, L or 1, V] (+ the present tensors).
 */
export function buildGpt2Onnx(config, tensors, { past = true, lastOnly = false, lastBlockRow = false, attention = 'attn', gelu = 'fast' } = {}) {
  if (!GPT2_ATTENTION_OPS.includes(attention)) throw new Error(`buildGpt2Onnx: attention must be one of ${GPT2_ATTENTION_OPS.join(', ')}`);
  const N = config.n_layer ?? config.num_hidden_layers;
  const H = config.n_head ?? config.num_attention_heads;
  const E = config.n_embd ?? config.hidden_size;
  const V = config.vocab_size;
  const F = config.n_inner ?? 4 * E;
  const eps = config.layer_norm_epsilon ?? 1e-5;
  const D = E / H;
  const get = tensors instanceof Map ? (k) => tensors.get(k) : (k) => tensors[k];
  const T = (name, shape) => {
    const t = get(name) ?? get(`transformer.${name}`);
    if (!t) throw new Error(`buildGpt2Onnx: tensor ${name} missing`);
    if (shape && (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))) {
      throw new Error(`buildGpt2Onnx: ${name} has shape [${t.shape}], expected [${shape}]`);
    }
    return t.data;
  };
  const g = new Graph();
  const scalar = (values, name) => g.init(name ?? `c${g.n++}`, [], values);
  const fconst = (v) => g.init(`f${g.n++}`, [], new Float32Array([v]));
  g.input('input_ids', [1, 'L'], INT64);
  const cacheDims = (len) => (attention === 'attn' ? [2, 1, H, len, D] : [1, H, len, D]);
  if (past) {
    for (let l = 0; l < N; l++) for (const name of gpt2CacheNames(attention, l).past) g.input(name, cacheDims('P'));
  }
  // L, P (int64 scalars) and the positions P … P+L-1.
  const L = g.op('Gather', [g.op('Shape', ['input_ids']), scalar([1])], { axis: 0 });
  const P = past
    ? g.op('Gather', [g.op('Shape', [gpt2CacheNames(attention, 0).past[0]]), scalar([attention === 'attn' ? 3 : 2])], { axis: 0 })
    : scalar([0]);
  const total = g.op('Add', [P, L]);
  const positions = g.op('Range', [P, total, scalar([1])]);
  const wte = g.init('wte', [V, E], T('wte.weight', [V, E]));
  const wpe = g.init('wpe', [config.n_positions, E], T('wpe.weight', [config.n_positions, E]));
  let h = g.op('Add', [g.op('Gather', [wte, 'input_ids'], { axis: 0 }), g.op('Gather', [wpe, positions], { axis: 0 })]);
  const ln = (x, prefix) => g.op('LayerNormalization', [x, g.init(`${prefix}.weight`, [E], T(`${prefix}.weight`, [E])), g.init(`${prefix}.bias`, [E], T(`${prefix}.bias`, [E]))], { axis: -1, epsilon: eps });
  const w = (name, shape) => g.init(name, shape, T(name, shape));
  let seqlensK = null;
  let totalI32 = null;
  if (attention === 'gqa') {
    totalI32 = g.op('Cast', [total], { to: INT32 });
    seqlensK = g.op('Reshape', [g.op('Sub', [totalI32, g.init(`i${g.n++}`, [], Int32Array.of(1))]), g.ints([1])]);
  }
  // [1, L, E] → its last row [1, 1, E]
  const sliceLast = (x) => g.op('Slice', [x, g.ints([-1]), g.ints([2 ** 31 - 1]), g.ints([1])]);
  const lastRow = lastOnly && lastBlockRow ? sliceLast : null;
  for (let l = 0; l < N; l++) {
    const b = `h.${l}`;
    const a = ln(h, `${b}.ln_1`);
    const names = gpt2CacheNames(attention, l);
    const pastIn = past ? names.past : [];
    let o;
    if (attention === 'attn') {
      // inputs: input, weights, bias, mask_index, past
      const ins = [a, w(`${b}.attn.c_attn.weight`, [E, 3 * E]), w(`${b}.attn.c_attn.bias`, [3 * E])];
      if (past) ins.push('', pastIn[0]);
      const outs = g.op('Attention', ins, { num_heads: H, unidirectional: 1 }, { domain: 'com.microsoft', outputs: past ? 2 : 1 });
      o = past ? outs[0] : outs;
    } else {
      const qkv = g.op('Add', [g.op('MatMul', [a, w(`${b}.attn.c_attn.weight`, [E, 3 * E])]), w(`${b}.attn.c_attn.bias`, [3 * E])]);
      if (attention === 'mha') {
        const [q, k, v] = g.op('Split', [qkv, g.ints([E, E, E])], { axis: -1 }, { outputs: 3 });
        const ins = [q, k, v];
        if (past) ins.push('', '', '', ...pastIn);
        const outs = g.op('MultiHeadAttention', ins, { num_heads: H, unidirectional: 1 }, { domain: 'com.microsoft', outputs: past ? 3 : 1 });
        o = past ? outs[0] : outs;
      } else {
        const outs = g.op('GroupQueryAttention', [qkv, '', '', past ? pastIn[0] : '', past ? pastIn[1] : '', seqlensK, totalI32],
          { num_heads: H, kv_num_heads: H }, { domain: 'com.microsoft', outputs: 3 });
        o = outs[0];
        if (!past) g.nodes.at(-1).output = [o, '', ''];
      }
    }
    if (past) {
      const node = g.nodes.at(-1);
      node.output = [o, ...names.present];
      names.present.forEach((name) => g.output(name, cacheDims('T')));
    }
    if (lastRow && l === N - 1) [o, h] = [lastRow(o), lastRow(h)];
    h = g.op('Add', [h, g.op('Add', [g.op('MatMul', [o, w(`${b}.attn.c_proj.weight`, [E, E])]), w(`${b}.attn.c_proj.bias`, [E])])]);
    const m = ln(h, `${b}.ln_2`);
    const f = g.op('MatMul', [m, w(`${b}.mlp.c_fc.weight`, [E, F])]);
    let act;
    if (gelu === 'fast') {
      act = g.op('FastGelu', [f, w(`${b}.mlp.c_fc.bias`, [F])], {}, { domain: 'com.microsoft' });
    } else {
      // gelu_new: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
      const x = g.op('Add', [f, w(`${b}.mlp.c_fc.bias`, [F])]);
      const inner = g.op('Mul', [g.op('Add', [x, g.op('Mul', [g.op('Mul', [g.op('Mul', [x, x]), x]), fconst(0.044715)])]), fconst(Math.sqrt(2 / Math.PI))]);
      act = g.op('Mul', [g.op('Mul', [x, fconst(0.5)]), g.op('Add', [g.op('Tanh', [inner]), fconst(1)])]);
    }
    h = g.op('Add', [h, g.op('Add', [g.op('MatMul', [act, w(`${b}.mlp.c_proj.weight`, [F, E])]), w(`${b}.mlp.c_proj.bias`, [E])])]);
  }
  if (lastOnly && !lastRow) h = sliceLast(h);
  const hf = ln(h, 'ln_f');
  // The tied LM head: wteᵀ [E, V], transposed once.
  g.nodes.push({ opType: 'MatMul', domain: '', input: [hf, g.init('lm_head', [E, V], transposed(T('wte.weight'), V, E))], output: ['logits'], name: 'lm_head', attribute: [] });
  g.output('logits', [1, lastOnly ? 1 : 'L', V]);
  // present outputs after logits (ORT keeps the graph's output order)
  g.outputs.unshift(g.outputs.pop());
  return g.bytes(17);
}

// ---- an encoder-decoder: T5 (bench --only lm, bench/t5-bench.mjs) ----

/**
 * transformers' T5Attention._relative_position_bucket (models/t5/modeling_t5.py)
 * for one relative position (key − query), in its float32 arithmetic
 * (torch.log on a float32 tensor, divided by the Python float
 * log(max_distance / max_exact), times (num_buckets − max_exact), truncated).
 * The bench's own copy, so that the ORT graphs do not go through the library.
 */
const ONE = Float32Array.of(1);

export function t5RelativeBucket(rel, bidirectional, numBuckets, maxDistance) {
  const f = Math.fround;
  let bucket = 0;
  let n = numBuckets;
  let r = rel;
  if (bidirectional) {
    n = Math.floor(n / 2);
    if (r > 0) bucket += n;
    r = Math.abs(r);
  } else {
    r = -Math.min(r, 0);
  }
  const maxExact = Math.floor(n / 2);
  if (r < maxExact) return bucket + r;
  const large = maxExact + Math.trunc(f(f(f(Math.log(f(r / maxExact))) / f(Math.log(maxDistance / maxExact))) * (n - maxExact)));
  return bucket + Math.min(large, n - 1);
}

/** The shared pieces of the two T5 graphs (config: T5Config's keys; tensors: the hub's names and [out, in] layout). */
function t5Graph(config, tensors, where) {
  const E = config.d_model, H = config.num_heads, D = config.d_kv, HD = H * D, F = config.d_ff, V = config.vocab_size;
  const get = tensors instanceof Map ? (k) => tensors.get(k) : (k) => tensors[k];
  const T = (name, shape) => {
    const t = get(name);
    if (!t) throw new Error(`${where}: tensor ${name} missing`);
    if (shape && (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))) {
      throw new Error(`${where}: ${name} has shape [${t.shape}], expected [${shape}]`);
    }
    return t.data;
  };
  const g = new Graph();
  const eps = config.layer_norm_epsilon ?? 1e-6;
  const fconst = (v) => g.init(`f${g.n++}`, [], new Float32Array([v]));
  const i64 = (v) => g.init(`c${g.n++}`, [], [v]);
  // T5LayerNorm: x · rsqrt(mean(x²) + eps) · w, in plain ops (ORT's level-2
  // optimizer fuses them into SimplifiedLayerNormalization).
  const rms = (x, name) => {
    const ms = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const inv = g.op('Sqrt', [g.op('Add', [ms, fconst(eps)])]);
    return g.op('Mul', [g.op('Div', [x, inv]), g.init(name, [E], T(name, [E]))]);
  };
  // nn.Linear without bias: x · Wᵀ (Wᵀ transposed once into the initializer); several weights side by side.
  const linear = (x, names, rows, cols) => {
    const ws = names.map((n) => transposed(T(n, [rows, cols]), rows, cols)); // each [cols, rows]
    let w;
    if (ws.length === 1) w = ws[0];
    else {
      w = new Float32Array(cols * rows * ws.length);
      for (let r = 0; r < cols; r++) ws.forEach((m, j) => w.set(m.subarray(r * rows, (r + 1) * rows), (r * ws.length + j) * rows));
    }
    return g.op('MatMul', [x, g.init(`${names[0]}${ws.length > 1 ? `+${ws.length}` : ''}`, [cols, rows * ws.length], w)]);
  };
  // The relative position bias [1, H, Lq, Lk] of the stack's block 0:
  // bucket(key − query) looked up in a table over every relative position
  // the graph can meet (±(n_positions − 1)), then the weight [buckets, H].
  const M = config.n_positions ?? 512;
  const positionBias = (stack, qPos, kPos, bidirectional) => {
    const buckets = config.relative_attention_num_buckets ?? 32, maxDist = config.relative_attention_max_distance ?? 128;
    const table = Array.from({ length: 2 * M - 1 }, (_, i) => t5RelativeBucket(i - (M - 1), bidirectional, buckets, maxDist));
    const rel = g.op('Add', [g.op('Sub', [g.op('Unsqueeze', [kPos, g.ints([0])]), g.op('Unsqueeze', [qPos, g.ints([1])])]), i64(M - 1)]);
    const bucket = g.op('Gather', [g.init(`${stack}_buckets`, [2 * M - 1], table), rel], { axis: 0 }); // [Lq, Lk]
    const name = `${stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight`;
    const b = g.op('Gather', [g.init(name, [buckets, H], T(name, [buckets, H])), bucket], { axis: 0 }); // [Lq, Lk, H]
    return g.op('Unsqueeze', [g.op('Transpose', [b], { perm: [2, 0, 1] }), g.ints([0])]);
  };
  const ffn = (x, p) => {
    const gated = String(config.feed_forward_proj ?? 'relu').startsWith('gated-');
    const m = rms(x, `${p}.layer_norm.weight`);
    let a;
    if (gated) {
      const [h0, h1] = g.op('Split', [linear(m, [`${p}.DenseReluDense.wi_0.weight`, `${p}.DenseReluDense.wi_1.weight`], F, E), g.ints([F, F])], { axis: -1 }, { outputs: 2 });
      a = g.op('Mul', [g.op('FastGelu', [h0], {}, { domain: 'com.microsoft' }), h1]);
    } else {
      a = g.op('Relu', [linear(m, [`${p}.DenseReluDense.wi.weight`], F, E)]);
    }
    return g.op('Add', [x, linear(a, [`${p}.DenseReluDense.wo.weight`], E, F)]);
  };
  const shared = () => g.init('shared', [V, E], T('shared.weight', [V, E]));
  return { g, E, H, D, HD, F, V, T, rms, linear, positionBias, ffn, shared, i64, fconst };
}

/**
 * The encoder of a T5ForConditionalGeneration as an ONNX graph (opset 17 +
 * com.microsoft 1): input_ids int64 [1, Le] → Gather(shared); per block
 * T5LayerNorm → q/k/v in one MatMul → com.microsoft.MultiHeadAttention
 * (scale 1: T5 does not divide by √d; attention_bias: block 0's relative
 * position bias, bidirectional buckets) → o → residual; T5LayerNorm →
 * DenseReluDense (relu, or gated-gelu: FastGelu(wi_0)·wi_1) → residual;
 * final_layer_norm. Outputs: the decoder's cross-attention keys and values
 * of every decoder layer, projected once (EncDecAttention.k/v), BNSH
 * `cross_key_<l>` / `cross_value_<l>` [1, H, Le, d_kv] (what optimum's
 * decoder-with-past graphs take as past encoder keys/values).
 */
export function buildT5EncoderOnnx(config, tensors) {
  const t = t5Graph(config, tensors, 'buildT5EncoderOnnx');
  const { g, E, H, D, HD } = t;
  g.input('input_ids', [1, 'L'], INT64);
  const L = g.op('Gather', [g.op('Shape', ['input_ids']), g.ints([1])], { axis: 0 });
  const pos = g.op('Range', [t.i64(0), g.op('Squeeze', [L, g.ints([0])]), t.i64(1)]);
  const bias = t.positionBias('encoder', pos, pos, true);
  let h = g.op('Gather', [t.shared(), 'input_ids'], { axis: 0 });
  for (let l = 0; l < config.num_layers; l++) {
    const p = `encoder.block.${l}.layer.`;
    const a = t.rms(h, `${p}0.layer_norm.weight`);
    const [q, k, v] = g.op('Split', [t.linear(a, ['q', 'k', 'v'].map((x) => `${p}0.SelfAttention.${x}.weight`), HD, E), g.ints([HD, HD, HD])], { axis: -1 }, { outputs: 3 });
    const o = g.op('MultiHeadAttention', [q, k, v, '', '', bias], { num_heads: H, scale: ONE }, { domain: 'com.microsoft' });
    h = g.op('Add', [h, t.linear(o, [`${p}0.SelfAttention.o.weight`], E, HD)]);
    h = t.ffn(h, `${p}1`);
  }
  h = t.rms(h, 'encoder.final_layer_norm.weight');
  const Nd = config.num_decoder_layers ?? config.num_layers;
  for (let l = 0; l < Nd; l++) {
    const p = `decoder.block.${l}.layer.1.EncDecAttention.`;
    const [k, v] = g.op('Split', [t.linear(h, [`${p}k.weight`, `${p}v.weight`], HD, E), g.ints([HD, HD])], { axis: -1 }, { outputs: 2 });
    for (const [x, name] of [[k, `cross_key_${l}`], [v, `cross_value_${l}`]]) {
      g.nodes.push({ opType: 'Transpose', domain: '', input: [g.op('Reshape', [x, g.ints([1, -1, H, D])])], output: [name], name: `n_${name}`, attribute: [attr('perm', [0, 2, 1, 3])] });
      g.output(name, [1, H, 'L', D]);
    }
  }
  return g.bytes(17);
}

/**
 * The decoder of a T5ForConditionalGeneration with its key/value cache, as an
 * ONNX graph: inputs input_ids int64 [1, L] (positions P … P+L−1, P the past
 * length), past_key_<l>/past_value_<l> [1, H, P, d_kv] (length 0 at the
 * start), cross_key_<l>/cross_value_<l> [1, H, Le, d_kv] (the encoder
 * graph's outputs); per block T5LayerNorm → MultiHeadAttention (scale 1,
 * unidirectional, past → present, attention_bias: the decoder's relative
 * position bias, causal buckets) → o → residual; T5LayerNorm →
 * MultiHeadAttention on the cross keys/values (scale 1, no bias) → o →
 * residual; DenseReluDense → residual; the last row alone through
 * final_layer_norm, × d_model^-0.5 (tied head) and shared ᵀ (transposed once
 * into an [E, V] initializer; lm_head.weight ᵀ when untied). Outputs: logits
 * [1, 1, V], present_key_<l>, present_value_<l>.
 */
export function buildT5DecoderOnnx(config, tensors) {
  const t = t5Graph(config, tensors, 'buildT5DecoderOnnx');
  const { g, E, H, D, HD, V } = t;
  const N = config.num_decoder_layers ?? config.num_layers;
  g.input('input_ids', [1, 'L'], INT64);
  for (let l = 0; l < N; l++) {
    g.input(`past_key_${l}`, [1, H, 'P', D]);
    g.input(`past_value_${l}`, [1, H, 'P', D]);
  }
  for (let l = 0; l < N; l++) {
    g.input(`cross_key_${l}`, [1, H, 'S', D]);
    g.input(`cross_value_${l}`, [1, H, 'S', D]);
  }
  const L = g.op('Squeeze', [g.op('Gather', [g.op('Shape', ['input_ids']), g.ints([1])], { axis: 0 }), g.ints([0])]);
  const P = g.op('Squeeze', [g.op('Gather', [g.op('Shape', ['past_key_0']), g.ints([2])], { axis: 0 }), g.ints([0])]);
  const total = g.op('Add', [P, L]);
  const bias = t.positionBias('decoder', g.op('Range', [P, total, t.i64(1)]), g.op('Range', [t.i64(0), total, t.i64(1)]), false);
  let h = g.op('Gather', [t.shared(), 'input_ids'], { axis: 0 });
  for (let l = 0; l < N; l++) {
    const p = `decoder.block.${l}.layer.`;
    const a = t.rms(h, `${p}0.layer_norm.weight`);
    const [q, k, v] = g.op('Split', [t.linear(a, ['q', 'k', 'v'].map((x) => `${p}0.SelfAttention.${x}.weight`), HD, E), g.ints([HD, HD, HD])], { axis: -1 }, { outputs: 3 });
    const outs = g.op('MultiHeadAttention', [q, k, v, '', '', bias, `past_key_${l}`, `past_value_${l}`], { num_heads: H, scale: ONE, unidirectional: 1 }, { domain: 'com.microsoft', outputs: 3 });
    g.nodes.at(-1).output = [outs[0], `present_key_${l}`, `present_value_${l}`];
    g.output(`present_key_${l}`, [1, H, 'T', D]);
    g.output(`present_value_${l}`, [1, H, 'T', D]);
    h = g.op('Add', [h, t.linear(outs[0], [`${p}0.SelfAttention.o.weight`], E, HD)]);
    const x = t.rms(h, `${p}1.layer_norm.weight`);
    const cq = t.linear(x, [`${p}1.EncDecAttention.q.weight`], HD, E);
    const co = g.op('MultiHeadAttention', [cq, `cross_key_${l}`, `cross_value_${l}`], { num_heads: H, scale: ONE }, { domain: 'com.microsoft' });
    h = g.op('Add', [h, t.linear(co, [`${p}1.EncDecAttention.o.weight`], E, HD)]);
    h = t.ffn(h, `${p}2`);
  }
  h = g.op('Slice', [h, g.ints([-1]), g.ints([2 ** 31 - 1]), g.ints([1])]);
  h = t.rms(h, 'decoder.final_layer_norm.weight');
  const tied = config.tie_word_embeddings !== false;
  if (tied) h = g.op('Mul', [h, t.fconst(E ** -0.5)]);
  const head = tied ? transposed(t.T('shared.weight', [V, E]), V, E) : transposed(t.T('lm_head.weight', [V, E]), V, E);
  g.nodes.push({ opType: 'MatMul', domain: '', input: [h, g.init('lm_head', [E, V], head)], output: ['logits'], name: 'lm_head', attribute: [] });
  g.output('logits', [1, 1, V]);
  g.outputs.unshift(g.outputs.pop());
  return g.bytes(17);
}

/**
 * An ONNX graph of Qwen2 (Qwen2ForCausalLM) from Hugging Face tensors, for
 * onnxruntime-web, with its weights as external data (a Qwen2.5-0.5B in
 * float32 is 2 GB, past protobuf's limit): { bytes, externalData: Uint8Array,
 * location }. Pass both to InferenceSession.create(bytes, { externalData:
 * [{ path: location, data: externalData }] }).
 *
 * config: the parsed config.json (num_hidden_layers, num_attention_heads,
 * num_key_value_heads, hidden_size, intermediate_size, vocab_size,
 * rms_norm_eps, rope_theta, tie_word_embeddings); tensor(name) → { shape,
 * data: Float32Array } with the hub's names and layout (Linear [out, in]).
 *
 * Graph (opset 17 + com.microsoft 1), the key/value cache always on, logits of
 * the last position only: Gather(embed_tokens, input_ids); per layer
 * SimplifiedLayerNormalization (RMSNorm) → q/k/v MatMul + Add (biases) →
 * com.microsoft.GroupQueryAttention with do_rotary (rotate_half,
 * rotary_interleaved 0; cos/sin caches of rope_theta for maxPositions rows;
 * positions from seqlens_k; past/present [1, Hkv, P, D] per layer) → o_proj
 * MatMul → residual Add → RMSNorm → gate and up MatMuls → QuickGelu(alpha 1)
 * = SiLU(gate) · up → down MatMul → residual Add; the last row sliced; the
 * final norm; the tied head as Gemm(h, embed_tokens, transB) (the table is
 * held once). Inputs: input_ids int64 [1, L], past_key_<l>, past_value_<l>.
 * Outputs: logits [1, 1, V], present_key_<l>, present_value_<l>.
 */
export function buildQwen2Onnx(config, tensor, { maxPositions = 2048, location = 'weights.bin' } = {}) {
  const N = config.num_hidden_layers, H = config.num_attention_heads, Hkv = config.num_key_value_heads;
  const E = config.hidden_size, F = config.intermediate_size, V = config.vocab_size;
  const D = config.head_dim ?? E / H;
  const eps = config.rms_norm_eps ?? 1e-6;
  const theta = config.rope_theta ?? 10000;
  const g = new Graph();
  // External data: every float initializer written into one buffer, sized beforehand.
  const floats = V * E + N * (2 * E + (H * D + 2 * Hkv * D) * (E + 1) + E * H * D + 3 * F * E) + E
    + maxPositions * D + (config.tie_word_embeddings === false ? V * E : 0);
  const externalData = new Uint8Array(4 * floats);
  let offset = 0;
  const ext = (name, dims, data) => {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (offset + bytes.byteLength > externalData.byteLength) throw new Error(`buildQwen2Onnx: ${name} at ${offset} + ${bytes.byteLength} past the ${externalData.byteLength} bytes sized`);
    externalData.set(bytes, offset);
    g.inits.push({
      name, dims, dataType: FLOAT, dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
      externalData: [{ key: 'location', value: location }, { key: 'offset', value: String(offset) }, { key: 'length', value: String(bytes.byteLength) }],
    });
    offset += bytes.byteLength;
    return name;
  };
  const T = (name, shape) => {
    const t = tensor(name);
    if (!t) throw new Error(`buildQwen2Onnx: tensor ${name} missing`);
    if (shape && (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))) throw new Error(`buildQwen2Onnx: ${name} has shape [${t.shape}], expected [${shape}]`);
    return t.data;
  };
  // A Linear's weight [out, in] as MatMul's [in, out].
  const lin = (name, out, inn) => ext(name, [inn, out], transposed(T(name, [out, inn]), out, inn));
  const vec = (name, n) => ext(name, [n], T(name, [n]));
  const scalar = (values) => g.init(`c${g.n++}`, [], values);
  g.input('input_ids', [1, 'L'], INT64);
  const names = (l) => ({ past: [`past_key_${l}`, `past_value_${l}`], present: [`present_key_${l}`, `present_value_${l}`] });
  for (let l = 0; l < N; l++) for (const nm of names(l).past) g.input(nm, [1, Hkv, 'P', D]);
  const L = g.op('Gather', [g.op('Shape', ['input_ids']), scalar([1])], { axis: 0 });
  const P = g.op('Gather', [g.op('Shape', ['past_key_0']), scalar([2])], { axis: 0 });
  const totalI32 = g.op('Cast', [g.op('Add', [P, L])], { to: INT32 });
  const seqlensK = g.op('Reshape', [g.op('Sub', [totalI32, g.init(`i${g.n++}`, [], Int32Array.of(1))]), g.ints([1])]);
  // cos/sin caches [maxPositions, D/2] of rope_theta (Qwen2RotaryEmbedding's inv_freq).
  const half = D / 2;
  const cos = new Float32Array(maxPositions * half), sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * Math.pow(theta, -(2 * i) / D);
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  }
  const cosCache = ext('cos_cache', [maxPositions, half], cos);
  const sinCache = ext('sin_cache', [maxPositions, half], sin);
  const embed = ext('model.embed_tokens.weight', [V, E], T('model.embed_tokens.weight', [V, E]));
  const rms = (x, name) => g.op('SimplifiedLayerNormalization', [x, vec(name, E)], { axis: -1, epsilon: eps });
  let h = g.op('Gather', [embed, 'input_ids'], { axis: 0 });
  for (let l = 0; l < N; l++) {
    const p = `model.layers.${l}.`;
    const a = rms(h, `${p}input_layernorm.weight`);
    const proj = (k, rows) => g.op('Add', [g.op('MatMul', [a, lin(`${p}self_attn.${k}_proj.weight`, rows, E)]), vec(`${p}self_attn.${k}_proj.bias`, rows)]);
    const q = proj('q', H * D), k = proj('k', Hkv * D), v = proj('v', Hkv * D);
    const nm = names(l);
    const o = `attn_${l}`;
    g.op('GroupQueryAttention', [q, k, v, nm.past[0], nm.past[1], seqlensK, totalI32, cosCache, sinCache],
      { num_heads: H, kv_num_heads: Hkv, do_rotary: 1, rotary_interleaved: 0 }, { domain: 'com.microsoft', outputs: 3 });
    g.nodes.at(-1).output = [o, ...nm.present];
    nm.present.forEach((name) => g.output(name, [1, Hkv, 'T', D]));
    h = g.op('Add', [h, g.op('MatMul', [o, lin(`${p}self_attn.o_proj.weight`, E, H * D)])]);
    const m = rms(h, `${p}post_attention_layernorm.weight`);
    const gate = g.op('MatMul', [m, lin(`${p}mlp.gate_proj.weight`, F, E)]);
    const up = g.op('MatMul', [m, lin(`${p}mlp.up_proj.weight`, F, E)]);
    const silu = g.op('QuickGelu', [gate], {}, { domain: 'com.microsoft' });
    g.nodes.at(-1).attribute = [{ name: 'alpha', type: A.FLOAT, f: 1 }]; // (1.0 would be written as an INT by attr)
    const act = g.op('Mul', [silu, up]);
    h = g.op('Add', [h, g.op('MatMul', [act, lin(`${p}mlp.down_proj.weight`, E, F)])]);
  }
  // The last row [1, E], the final norm, the tied head.
  const last = g.op('Reshape', [g.op('Slice', [h, g.ints([-1]), g.ints([2 ** 31 - 1]), g.ints([1])]), g.ints([1, E])]);
  const hf = rms(last, 'model.norm.weight');
  const head = config.tie_word_embeddings === false ? lin('lm_head.weight', V, E) : null;
  const logits2 = head ? g.op('MatMul', [hf, head]) : g.op('Gemm', [hf, embed], { transB: 1 });
  g.nodes.push({ opType: 'Reshape', domain: '', input: [logits2, g.ints([1, 1, V])], output: ['logits'], name: 'logits', attribute: [] });
  g.output('logits', [1, 1, V]);
  g.outputs.unshift(g.outputs.pop());
  if (offset !== externalData.byteLength) throw new Error(`buildQwen2Onnx: external data ${offset} bytes, sized ${externalData.byteLength}`);
  return { bytes: g.bytes(17), externalData, location };
}
