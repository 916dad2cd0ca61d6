// How each framework names and lays out one attention layer's weights, and
// how they map onto this library's { wq, bq, wk, bk, wv, bv, wo, bo } in
// torch layout (W [out, in], y = x·Wᵀ + b), both ways.
//
// Each format has:
//   anchor   the name suffix that marks a layer (prefix = name minus suffix)
//   shapes(get, prefix)  → { embedDim, kdim, vdim, numHeads?, numKvHeads?, bias }
//   read(get, prefix, c) → { weights, norm }   (torch layout Float32Arrays)
//   write(w, c, prefix, norm) → { name: { data, shape } }
// `get(name)` returns the tensor or undefined; `need(name)` throws naming it.
import { rangeError } from '../errors.js';
import { LAYER_FORMATS } from '../model/families/index.js';

export function transpose(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  }
  return out;
}

const t = (data, shape) => ({ data, shape });
const same = (a, b) => a.length === b.length && a.every((d, i) => d === b[i]);

/** Lookup helpers over a name → tensor map, with messages naming what is missing or mis-shaped. */
export function accessor(where, tensors, format, hint) {
  const get = (name) => tensors[name] ?? tensors[`${name}:0`];
  const need = (name, shape) => {
    const x = get(name);
    if (!x) throw rangeError(where, `format '${format}' needs the tensor ${JSON.stringify(name)}, which the file lacks${hint()}`);
    if (shape && !same(x.shape, shape)) {
      throw rangeError(where, `${JSON.stringify(name)} has shape [${x.shape.join(',')}], but format '${format}' needs [${shape.join(',')}] here`);
    }
    if (x.data && !(x.data instanceof Float32Array)) {
      throw rangeError(where, `${JSON.stringify(name)} holds integers (${x.dtype ?? x.data.constructor.name}); weights must be a float dtype`);
    }
    return x;
  };
  const dim = (name, axis) => need(name).shape[axis];
  return { get, need, dim };
}

function rows(data, from, count, width) {
  return data.slice(from * width, (from + count) * width);
}

// keras paths use '/'; a dict re-keyed with '.' works too.
const kerasSep = (get, p) => (get(`${p}query/kernel`) ? '/' : '.');

const POST = Object.freeze({ placement: 'post', kind: 'layer' });

const norm = (gamma, beta, eps, placement, kind = 'layer') => ({ gamma, beta, eps, placement, kind });

export const FORMATS = {
  // torch.nn.MultiheadAttention. The prefix is the module's own ('' for a
  // bare MHA, 'layers.0.self_attn.' inside nn.TransformerEncoderLayer).
  torch: {
    anchor: /(in_proj_weight|q_proj_weight)$/,
    shapes({ get, dim }, p) {
      if (get(`${p}bias_k`) || get(`${p}bias_v`)) return { refuse: 'bias_k' };
      const split = !get(`${p}in_proj_weight`);
      const E = split ? dim(`${p}q_proj_weight`, 0) : dim(`${p}in_proj_weight`, 1);
      return {
        embedDim: E,
        kdim: split ? dim(`${p}k_proj_weight`, 1) : E,
        vdim: split ? dim(`${p}v_proj_weight`, 1) : E,
        bias: Boolean(get(`${p}in_proj_bias`)),
        numHeads: null,
        norm: p.endsWith('self_attn.') && get(`${p.slice(0, -'self_attn.'.length)}norm1.weight`) ? POST : null,
      };
    },
    read({ need, get }, p, c) {
      const E = c.embedDim;
      const w = {};
      if (get(`${p}in_proj_weight`)) {
        const win = need(`${p}in_proj_weight`, [3 * E, E]).data;
        w.wq = t(rows(win, 0, E, E), [E, E]);
        w.wk = t(rows(win, E, E, E), [E, E]);
        w.wv = t(rows(win, 2 * E, E, E), [E, E]);
      } else {
        w.wq = need(`${p}q_proj_weight`, [E, E]);
        w.wk = need(`${p}k_proj_weight`, [E, c.kdim]);
        w.wv = need(`${p}v_proj_weight`, [E, c.vdim]);
      }
      w.wo = need(`${p}out_proj.weight`, [E, E]);
      if (c.bias) {
        const b = need(`${p}in_proj_bias`, [3 * E]).data;
        w.bq = t(b.slice(0, E), [E]);
        w.bk = t(b.slice(E, 2 * E), [E]);
        w.bv = t(b.slice(2 * E), [E]);
        w.bo = need(`${p}out_proj.bias`, [E]);
      }
      // nn.TransformerEncoderLayer (norm_first=False): norm1(x + self_attn(x)).
      let n = null;
      const parent = p.endsWith('self_attn.') ? p.slice(0, -'self_attn.'.length) : null;
      if (parent !== null && get(`${parent}norm1.weight`)) {
        n = norm(need(`${parent}norm1.weight`, [E]), need(`${parent}norm1.bias`, [E]), 1e-5, 'post');
      }
      return { weights: w, norm: n };
    },
    write(w, c, p, n) {
      const E = c.embedDim;
      const out = {};
      if (c.kdim === E && c.vdim === E) {
        const win = new Float32Array(3 * E * E);
        win.set(w.wq.data, 0);
        win.set(w.wk.data, E * E);
        win.set(w.wv.data, 2 * E * E);
        out[`${p}in_proj_weight`] = t(win, [3 * E, E]);
      } else {
        out[`${p}q_proj_weight`] = t(w.wq.data, [E, E]);
        out[`${p}k_proj_weight`] = t(w.wk.data, [E, c.kdim]);
        out[`${p}v_proj_weight`] = t(w.wv.data, [E, c.vdim]);
      }
      if (c.bias) {
        const b = new Float32Array(3 * E);
        b.set(w.bq.data, 0);
        b.set(w.bk.data, E);
        b.set(w.bv.data, 2 * E);
        out[`${p}in_proj_bias`] = t(b, [3 * E]);
      }
      out[`${p}out_proj.weight`] = t(w.wo.data, [E, E]);
      if (c.bias) out[`${p}out_proj.bias`] = t(w.bo.data, [E]);
      if (n && p.endsWith('self_attn.')) {
        const parent = p.slice(0, -'self_attn.'.length);
        out[`${parent}norm1.weight`] = t(n.gamma.data, [E]);
        out[`${parent}norm1.bias`] = t(n.beta.data, [E]);
      }
      return out;
    },
  },

  // transformers' BertLayer, GPT2Block and LlamaDecoderLayer attention:
  // defined beside their family tables (web/lib/model/families/).
  ...LAYER_FORMATS,

  // keras.layers.MultiHeadAttention: EinsumDense kernels [in, H, D] (query,
  // key, value) and [H, D, E] (attention_output); biases [H, D] and [E].
  // Names as layer.weights paths: 'multi_head_attention/query/kernel'.
  keras: {
    anchor: /query[/.]kernel(:0)?$/,
    shapes({ need, get }, p) {
      const s = kerasSep(get, p);
      const q = need(`${p}query${s}kernel`).shape;
      if (q.length !== 3) throw rangeError('state dict', `${JSON.stringify(`${p}query${s}kernel`)} has shape [${q.join(',')}], but keras MultiHeadAttention kernels are [in, H, D]`);
      const [E, H, D] = q;
      const o = need(`${p}attention_output${s}kernel`).shape;
      return {
        embedDim: E, kdim: need(`${p}key${s}kernel`).shape[0], vdim: need(`${p}value${s}kernel`).shape[0],
        numHeads: H, headDim: D, outDim: o[o.length - 1], bias: Boolean(get(`${p}query${s}bias`)), norm: null,
      };
    },
    read({ need, get }, p, c) {
      const s = kerasSep(get, p);
      const E = c.embedDim;
      const H = c.numHeads;
      const D = c.headDim;
      if (H * D !== E || c.outDim !== E) {
        throw rangeError('state dict', `keras MultiHeadAttention with num_heads ${H} × key_dim ${D} = ${H * D} and output ${c.outDim} cannot map to this library's MHA, whose heads split embedDim ${E} (needs num_heads × key_dim = output dim = query dim)`);
      }
      const w = {};
      for (const [k, n, inDim] of [['q', 'query', E], ['k', 'key', c.kdim], ['v', 'value', c.vdim]]) {
        w[`w${k}`] = t(transpose(need(`${p}${n}${s}kernel`, [inDim, H, D]).data, inDim, E), [E, inDim]);
        if (c.bias) w[`b${k}`] = t(need(`${p}${n}${s}bias`, [H, D]).data, [E]);
      }
      w.wo = t(transpose(need(`${p}attention_output${s}kernel`, [H, D, E]).data, E, E), [E, E]);
      if (c.bias) w.bo = need(`${p}attention_output${s}bias`, [E]);
      return { weights: w, norm: null };
    },
    write(w, c, p) {
      const s = p.endsWith('.') ? '.' : '/';  // '/' as keras layer.weights paths
      const E = c.embedDim;
      const H = c.numHeads;
      const D = E / H;
      const out = {};
      for (const [k, n, inDim] of [['q', 'query', E], ['k', 'key', c.kdim], ['v', 'value', c.vdim]]) {
        out[`${p}${n}${s}kernel`] = t(transpose(w[`w${k}`].data, E, inDim), [inDim, H, D]);
        if (c.bias) out[`${p}${n}${s}bias`] = t(w[`b${k}`].data, [H, D]);
      }
      out[`${p}attention_output${s}kernel`] = t(transpose(w.wo.data, E, E), [H, D, E]);
      if (c.bias) out[`${p}attention_output${s}bias`] = t(w.bo.data, [E]);
      return out;
    },
  },
};
