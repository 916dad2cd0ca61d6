// The values behind every step of the shape trace. The library computes MHA
// in one fused call; to let readers click any intermediate tensor, this
// module recomputes the steps in plain JS from the layer's own weights
// (torch layout: y = x·Wᵀ + b) and checks the end result against the
// library's output. Work is done lazily, one step at a time, and refused
// beyond a size limit. Shape legend: B, L, E, H, D = E/H.
import { linear, splitHeads, mergeHeads, softmaxRows, layerNorm, dropoutUniform, maxAbsDiff } from './tensor-math.js';

export const MAX_JS_MACS = 4e8;

class TooBig extends Error {
  constructor(n) {
    super(`too large to compute on the page (${n.toExponential(1)} multiply-adds)`);
    this.tooBig = n;
  }
}

/**
 * @param {object} p
 * @param {Float32Array} p.x input [B, L, E]
 * @param {number} p.B
 * @param {number} p.L
 * @param {number} p.E
 * @param {number} p.H
 * @param {object} p.weights torch-layout { wq, bq, wk, bk, wv, bv, wo, bo } tensors (or Float32Arrays)
 * @param {{gamma?: Float32Array, beta?: Float32Array, eps?: number}} [p.norm]
 * @param {(b: number, i: number, j: number) => boolean} [p.isMasked] true where a key is filled with −1e9
 * @param {number} [p.scoreScale] multiplies QKᵀ (default 1/√D)
 * @param {boolean} [p.training]
 * @param {number} [p.dropout] p
 * @param {number} [p.dropoutSeed]
 * @param {Float32Array} [p.weightsOut] the library's softmax weights [B, H, L, L] (used when given)
 */
export function createStages(p) {
  const { x, B, L, E, H } = p;
  const D = E / H;
  const w = Object.fromEntries(Object.entries(p.weights).map(([k, v]) => [k, v && v.data ? v.data : v]));
  const scale = p.scoreScale ?? 1 / Math.sqrt(D);
  const memo = new Map();
  const check = (macs) => {
    if (macs > MAX_JS_MACS) throw new TooBig(macs);
  };
  const once = (key, fn) => {
    if (!memo.has(key)) memo.set(key, fn());
    return memo.get(key);
  };
  const proj = (which) => once(`proj_${which}`, () => {
    check(B * L * E * E);
    return linear(x, w[`w${which}`], w[`b${which}`], B * L, E, E);
  });
  const heads = (which) => once(`heads_${which}`, () => splitHeads(proj(which), B, L, H, D));
  const scores = () => once('scores', () => {
    check(B * H * L * L * D);
    const q = heads('q');
    const k = heads('k');
    const s = new Float32Array(B * H * L * L);
    for (let bh = 0; bh < B * H; bh++) {
      for (let i = 0; i < L; i++) {
        for (let j = 0; j < L; j++) {
          let acc = 0;
          const qo = (bh * L + i) * D;
          const ko = (bh * L + j) * D;
          for (let d = 0; d < D; d++) acc += q[qo + d] * k[ko + d];
          s[(bh * L + i) * L + j] = acc * scale;
        }
      }
    }
    return s;
  });
  const masked = () => once('masked', () => {
    const s = scores().slice();
    if (!p.isMasked) return s;
    for (let b = 0; b < B; b++) {
      for (let hh = 0; hh < H; hh++) {
        for (let i = 0; i < L; i++) {
          for (let j = 0; j < L; j++) if (p.isMasked(b, i, j)) s[((b * H + hh) * L + i) * L + j] = -1e9;
        }
      }
    }
    return s;
  });
  const softmax = () => once('softmax', () => (p.weightsOut ? p.weightsOut : softmaxRows(masked().slice(), L)));
  const weighted = () => once('weighted', () => {
    check(B * H * L * L * D);
    const a = softmax();
    const v = heads('v');
    const out = new Float32Array(B * H * L * D);
    for (let bh = 0; bh < B * H; bh++) {
      for (let i = 0; i < L; i++) {
        const o = (bh * L + i) * D;
        for (let j = 0; j < L; j++) {
          const wt = a[(bh * L + i) * L + j];
          if (wt === 0) continue;
          const vo = (bh * L + j) * D;
          for (let d = 0; d < D; d++) out[o + d] += wt * v[vo + d];
        }
      }
    }
    return out;
  });
  const merged = () => once('merged', () => mergeHeads(weighted(), B, H, L, D));
  const outLinear = () => once('out', () => {
    check(B * L * E * E);
    return linear(merged(), w.wo, w.bo, B * L, E, E);
  });
  const dropped = () => once('dropout', () => {
    const a = outLinear();
    if (!p.training || !p.dropout) return a.slice();
    const keep = 1 / (1 - p.dropout);
    const out = new Float32Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = dropoutUniform(p.dropoutSeed >>> 0, i) < p.dropout ? 0 : a[i] * keep;
    return out;
  });
  const residual = () => once('residual', () => {
    const d = dropped();
    const out = new Float32Array(d.length);
    for (let i = 0; i < d.length; i++) out[i] = x[i] + d[i];
    return out;
  });
  const norm = () => once('norm', () => layerNorm(residual(), E, p.norm?.gamma, p.norm?.beta, p.norm?.eps ?? 1e-5));

  const T = (data, shape) => ({ data, shape });
  const api = {
    /** Values of a trace step (which: 'q' | 'k' | 'v' for the Q/K/V steps). */
    get(step, which = 'q') {
      switch (step) {
        case 'input': return T(x, [B, L, E]);
        case 'linear_qkv': return T(proj(which), [B, L, E]);
        case 'split_heads': return T(heads(which), [B, H, L, D]);
        case 'scores': return T(scores(), [B, H, L, L]);
        case 'mask': return T(masked(), [B, H, L, L]);
        case 'softmax': return T(softmax(), [B, H, L, L]);
        case 'weighted_sum': return T(weighted(), [B, H, L, D]);
        case 'merge_heads': return T(merged(), [B, L, E]);
        case 'output_linear': return T(outLinear(), [B, L, E]);
        case 'dropout': return T(dropped(), [B, L, E]);
        case 'residual': return T(residual(), [B, L, E]);
        case 'layer_norm': return T(norm(), [B, L, E]);
        default: return null;
      }
    },
    /** max |JS − library| of a step's values (NaN when not comparable). */
    compare(step, libraryData) {
      return maxAbsDiff(api.get(step).data, libraryData);
    },
    D,
  };
  return api;
}

/** isMasked(b, i, j) for the library's causal / padding specs. */
export function maskPredicate(spec) {
  if (!spec) return null;
  const specs = Array.isArray(spec) ? spec : [spec];
  const causal = specs.some((s) => s.kind === 'causal');
  const pad = specs.find((s) => s.kind === 'padding');
  const lengths = pad ? pad.lengths : null;
  if (!causal && !lengths) return null;
  return (b, i, j) => (causal && j > i) || (lengths !== null && j >= lengths[b]);
}
