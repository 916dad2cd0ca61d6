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
  return { name, dims, dataType: INT64, int64Data: data };
}

function attr(name, v) {
  if (Array.isArray(v)) return { name, type: A.INTS, ints: v };
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
