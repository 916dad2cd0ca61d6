// The family tables of issues 32 and 34 (decoders; modernbert, the pre-norm encoder) against the float64 references
// (tests/reference/hf_families.py, tests/golden/models/<folder>/), through a
// small float64 interpreter of the block graph's contract written here from
// its field list (docs/models.md; TransformerConfig in src/train/train.h):
// each table's plan (plan.js: names, prefixes, shapes), its layout ops'
// torch faces (the block graph's parameters) and its c.core fields alone must
// reproduce transformers' logits, attentions and last hidden state. This
// checks the tables' mapping (which rows are the gate, 1 + w, the rounded
// embedding scale, which layers are local, which RoPE base, how many rotary
// dims) independently of the C++ core; models-families.test.js checks the
// core itself on the same folders.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { architectureOf, layoutOp } from '../../web/lib/model/families/index.js';
import { openWeights } from '../../web/lib/model/files.js';
import { plan } from '../../web/lib/model/plan.js';
import { decode } from '../../web/lib/io/dtypes.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODELS = path.join(HERE, '..', 'golden', 'models');
const FOLDERS = ['qwen2', 'qwen3', 'mistral', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neox-sequential', 'gpt_neo',
  // and the pre-norm encoder of issue 34 (tests/reference/hf_encoders.py): bidirectional window, no first norm1, no LayerNorm biases, the MLM head
  'modernbert'];

/** The block graph's parameters (name → { data, shape }) and the normalised config of a folder, as loadModel builds them. */
async function loaded(folder) {
  const dir = path.join(MODELS, folder);
  const hf = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const weights = await openWeights(new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors'))));
  const { type, arch } = architectureOf(hf);
  const c = { modelType: type, ...arch.config(hf, new Set(weights.tensors.keys())) };
  const steps = plan(arch, c, weights.tensors);
  arch.withFileDtypes?.(c, (file) => steps.find((st) => st.t.file === file)?.entry.dtype);
  const params = {};
  for (const { entry, t } of steps) {
    const data = decode('test', entry.name, entry.dtype, await entry.source.read(entry.begin, entry.end), entry.count);
    layoutOp(t.op).torch(entry.shape, data, t).forEach((p, k) => { params[t.to[k]] = p; });
  }
  return { c, params };
}

// ---- the contract, float64 ----------------------------------------------------

function erf(x) {
  // Maclaurin series (|x| < 4: |error| < 1e-9 in double); ±1 beyond (erfc(4) = 1.5e-8)
  if (Math.abs(x) >= 4) return Math.sign(x);
  let term = x, sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}
const ACT = {
  gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  gelu_new: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  silu: (x) => x / (1 + Math.exp(-x)),
};

/** y [n, out] = x [n, in] · W^T (+ b); W torch [out, in]. */
function linear(x, n, W, b) {
  const [out, inn] = W.shape;
  const y = new Float64Array(n * out);
  for (let i = 0; i < n; i++) {
    for (let o = 0; o < out; o++) {
      let s = b ? b.data[o] : 0;
      for (let j = 0; j < inn; j++) s += x[i * inn + j] * W.data[o * inn + j];
      y[i * out + o] = s;
    }
  }
  return y;
}

/** Row-wise norm over width w (rmsnorm, or layernorm with bias). */
function norm(kind, x, w, g, b, eps) {
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / w; r++) {
    const row = x.subarray(r * w, (r + 1) * w);
    let mean = 0;
    if (kind === 'layernorm') mean = row.reduce((a, v) => a + v, 0) / w;
    const v2 = row.reduce((a, v) => a + (v - mean) ** 2, 0) / w;
    const inv = 1 / Math.sqrt(v2 + eps);
    for (let j = 0; j < w; j++) y[r * w + j] = (row[j] - mean) * inv * g.data[j] + (b ? b.data[j] : 0);
  }
  return y;
}

/** rotate_half RoPE on the first R dims of each head of x [n, heads, D], position i for row i. */
function rope(x, n, heads, D, R, theta) {
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < heads; h++) {
      const o = (i * heads + h) * D;
      for (let j = 0; j < R / 2; j++) {
        const a = i * theta ** (-(2 * j) / R);
        const [x1, x2] = [x[o + j], x[o + j + R / 2]];
        x[o + j] = x1 * Math.cos(a) - x2 * Math.sin(a);
        x[o + j + R / 2] = x2 * Math.cos(a) + x1 * Math.sin(a);
      }
    }
  }
}

function forward({ c, params }, ids) {
  const k = c.core;
  const n = ids.length, E = c.embedDim, H = c.numHeads, Hkv = k.numKvHeads || H;
  const D = k.headDim || E / H;
  const R = k.rotaryDim || D;
  const P = (name) => params[name];
  const nrm = (x, prefix, w = E) => norm(k.norm, x, w, P(`${prefix}.weight`), P(`${prefix}.bias`), c.eps);
  const x = new Float64Array(n * E);
  ids.forEach((id, i) => {
    for (let j = 0; j < E; j++) x[i * E + j] = P('embed.weight').data[id * E + j] * (k.embedScale ?? 1) + (k.positional === 'learned' ? P('pos.weight').data[i * E + j] : 0);
  });
  if (k.embedNorm) x.set(norm('layernorm', x, E, P('embed_norm.weight'), P('embed_norm.bias'), c.eps));
  // causal (the decoders) or bidirectional (the encoders); a local layer's window i − W < j ≤ i, or |i − j| < W
  const causal = k.causal !== false;
  const attentions = [];
  const mlp = (h, b) => {
    if (k.activation === 'swiglu' || k.activation === 'geglu' || k.activation === 'geglu_tanh') {
      const act = k.activation === 'swiglu' ? ACT.silu : k.activation === 'geglu' ? ACT.gelu : ACT.gelu_new;
      const g = linear(h, n, P(`${b}ffn.wg`), P(`${b}ffn.bg`)), u = linear(h, n, P(`${b}ffn.w1`), P(`${b}ffn.b1`));
      return linear(g.map((v, i) => act(v) * u[i]), n, P(`${b}ffn.w2`), P(`${b}ffn.b2`));
    }
    const u = linear(h, n, P(`${b}ffn.w1`), P(`${b}ffn.b1`)).map(ACT[k.activation]);
    return linear(u, n, P(`${b}ffn.w2`), P(`${b}ffn.b2`));
  };
  for (let l = 0; l < c.numLayers; l++) {
    const b = `blocks.${l}.`;
    const local = k.slidingWindow > 0 && (!k.layerKinds || k.layerKinds[l] === 'l');
    const theta = local && k.ropeLocalTheta ? k.ropeLocalTheta : k.ropeTheta;
    const h = l === 0 && k.firstNorm1 === false ? x : nrm(x, `${b}norm1`);
    const q = linear(h, n, P(`${b}attn.wq`), P(`${b}attn.bq`));
    const kk = linear(h, n, P(`${b}attn.wk`), P(`${b}attn.bk`));
    const v = linear(h, n, P(`${b}attn.wv`), P(`${b}attn.bv`));
    if (k.qkNorm) {
      q.set(norm('rmsnorm', q, D, P(`${b}attn.q_norm.weight`), null, c.eps));
      kk.set(norm('rmsnorm', kk, D, P(`${b}attn.k_norm.weight`), null, c.eps));
    }
    if (k.positional === 'rope') {
      rope(q, n, H, D, R, theta);
      rope(kk, n, Hkv, D, R, theta);
    }
    const scale = k.attnScale || 1 / Math.sqrt(D);
    const att = new Float64Array(H * n * n);
    const ctx = new Float64Array(n * H * D);
    for (let hh = 0; hh < H; hh++) {
      const g = Math.floor(hh / (H / Hkv));
      for (let i = 0; i < n; i++) {
        const s = new Float64Array(n).fill(-Infinity);
        for (let j = 0; j < (causal ? i + 1 : n); j++) {
          if (local && !(causal ? j > i - k.slidingWindow : Math.abs(i - j) < k.slidingWindow)) continue;
          let d = 0;
          for (let t = 0; t < D; t++) d += q[(i * H + hh) * D + t] * kk[(j * Hkv + g) * D + t];
          d *= scale;
          s[j] = k.attnSoftcap ? k.attnSoftcap * Math.tanh(d / k.attnSoftcap) : d;
        }
        const m = Math.max(...s);
        const e = s.map((z) => Math.exp(z - m));
        const sum = e.reduce((a, z) => a + z, 0);
        for (let j = 0; j < n; j++) {
          att[(hh * n + i) * n + j] = e[j] / sum;
          for (let t = 0; t < D; t++) ctx[(i * H + hh) * D + t] += (e[j] / sum) * v[(j * Hkv + g) * D + t];
        }
      }
    }
    attentions.push(att);
    const o = linear(ctx, n, P(`${b}attn.wo`), P(`${b}attn.bo`));
    if (k.parallelResidual) {
      const m = mlp(nrm(x, `${b}norm2`), b);
      for (let i = 0; i < x.length; i++) x[i] += o[i] + m[i];
    } else if (k.sandwichNorm) {
      const a = nrm(o, `${b}post_attn_norm`);
      for (let i = 0; i < x.length; i++) x[i] += a[i];
      const m = nrm(mlp(nrm(x, `${b}norm2`), b), `${b}post_ffn_norm`);
      for (let i = 0; i < x.length; i++) x[i] += m[i];
    } else {
      for (let i = 0; i < x.length; i++) x[i] += o[i];
      const m = mlp(nrm(x, `${b}norm2`), b);
      for (let i = 0; i < x.length; i++) x[i] += m[i];
    }
  }
  const hidden = nrm(x, 'final_norm');
  // BERT's MLM transform LN(GELU(dense(h))) before the head
  const headIn = k.mlmHead ? norm('layernorm', linear(hidden, n, P('mlm.dense.weight'), P('mlm.dense.bias')).map(ACT.gelu), E, P('mlm.norm.weight'), P('mlm.norm.bias'), c.eps) : hidden;
  let logits = linear(headIn, n, k.tieEmbeddings ? P('embed.weight') : P('head.weight'), P('head.bias'));
  if (k.finalSoftcap) logits = logits.map((z) => k.finalSoftcap * Math.tanh(z / k.finalSoftcap));
  return { logits, attentions, hidden };
}

/** max |a − b| / max(1, |b|) over a nested expected list. */
function maxRel(a, expected) {
  const b = expected.flat(Infinity);
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  return worst;
}

describe("the tables' plan, layout ops and fields reproduce transformers (float64 contract interpreter)", () => {
  test.each(FOLDERS)('%s', async (folder) => {
    const m = await loaded(folder);
    const expected = JSON.parse(fs.readFileSync(path.join(MODELS, folder, 'expected.json'), 'utf8'));
    for (const cs of expected.cases) {
      const r = forward(m, cs.ids);
      // float64 throughout; only 1 + w (float32, add-one) and the rounded scale differ from the reference's arithmetic
      expect(maxRel(r.logits, cs.logits)).toBeLessThan(1e-6);
      expect(maxRel(r.hidden, cs.hidden_states)).toBeLessThan(1e-6);
      r.attentions.forEach((a, l) => expect(maxRel(a, cs.attentions[l])).toBeLessThan(1e-6));
    }
  });
});
