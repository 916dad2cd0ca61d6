// The functional attention ops of the public API: scaledDotProductAttention
// and selfAttention (SDPA with q = k = v = x). Both validate their tensors,
// fold the leading dims to [B, H] and call the backend's sdpa.
// Shape legend: B batch, H heads, Lq/Lk sequence, D, Dv head dims.
import { describe, typeError, rangeError, checkBool, checkOptions } from './errors.js';
import { toTensor, makeTensor, shapeString, product } from './tensor.js';
import { normalizeMask, withMaskFill } from './mask.js';
import { then } from './attention-module.js';
import { checkElements, checkBytes, checkScale, checkTrace, OPTION_KEYS } from './validate.js';
import { checkFiniteArgs, finiteOption } from './finite.js';
import { sdpaTrace } from './trace-values.js';

/**
 * @param {import('./backend.js').Backend} backend
 * @param {any} x [L, E] or [B, L, E]
 * @param {any} [options]
 * @param {{ checkFinite?: boolean }} [settings] the lab's settings
 */
export function selfAttention(backend, x, options, settings = {}) {
  const where = 'selfAttention';
  const t = toTensor(where, 'x', x, { ranks: [2, 3] });
  const opts = checkOptions(where, 'options', options, OPTION_KEYS.selfAttention);
  const unbatched = t.shape.length === 2;
  const [B, L, E] = unbatched ? [1, ...t.shape] : t.shape;
  const lead = unbatched ? [] : [B];
  const finite = finiteOption(where, opts, settings.checkFinite) ? [['x', t]] : null;
  return sdpaCore(backend, where, { lead, leadB: lead, leadH: [], batch: B, heads: 1, lq: L, lk: L, d: E, dv: E, q: t.data, k: t.data, v: t.data }, opts, finite);
}

/**
 * @param {import('./backend.js').Backend} backend
 * @param {any} q [..., Lq, D]
 * @param {any} k [..., Lk, D]
 * @param {any} v [..., Lk, Dv]
 * @param {any} [options]
 * @param {{ checkFinite?: boolean }} [settings] the lab's settings
 */
export function scaledDotProductAttention(backend, q, k, v, options, settings = {}) {
  const where = 'scaledDotProductAttention';
  const tq = toTensor(where, 'q', q);
  const tk = toTensor(where, 'k', k);
  const tv = toTensor(where, 'v', v);
  const opts = checkOptions(where, 'options', options, OPTION_KEYS.scaledDotProductAttention);
  const r = tq.shape.length;
  if (r < 2) throw rangeError(where, `q must have rank >= 2 ([..., Lq, D]), got shape ${shapeString(tq.shape)}`);
  if (tk.shape.length !== r || tv.shape.length !== r) {
    throw rangeError(where, `q, k and v must have the same rank: got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
  }
  const lead = tq.shape.slice(0, r - 2);
  // GQA/MQA: with a head dim (rank >= 4), k and v may have Hkv heads where q
  // has H, H % Hkv == 0; every other leading dim must match.
  const headAxis = r >= 4 ? r - 3 : -1;
  const kvHeads = headAxis >= 0 ? tk.shape[headAxis] : 1;
  for (const [name, t] of /** @type {[string, { shape: number[] }][]} */ ([['k', tk], ['v', tv]])) {
    if (t.shape.slice(0, r - 2).some((d, i) => d !== lead[i] && i !== headAxis)) {
      throw rangeError(where, `${name} must have the same leading dims as q ${shapeString(lead)}${headAxis >= 0 ? ' (but for the head dim: GQA)' : ''}: got q ${shapeString(tq.shape)}, ${name} ${shapeString(t.shape)}`);
    }
  }
  if (headAxis >= 0) {
    const Hq = tq.shape[headAxis];
    if (tv.shape[headAxis] !== kvHeads) {
      throw rangeError(where, `k and v must have the same number of heads: got k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
    }
    if (Hq % kvHeads !== 0) {
      throw rangeError(where, `q has H = ${Hq} heads and k/v have Hkv = ${kvHeads}: H must be a multiple of Hkv (GQA/MQA: query head h reads kv head floor(h·Hkv/H)); got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}`);
    }
  }
  const [Lq, D] = tq.shape.slice(r - 2);
  const [Lk, Dk] = tk.shape.slice(r - 2);
  const [Lv, Dv] = tv.shape.slice(r - 2);
  if (Dk !== D) throw rangeError(where, `k's last dim (${Dk}) must equal q's last dim D (${D}): got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}`);
  if (Lv !== Lk) throw rangeError(where, `v's length (${Lv}) must equal k's length Lk (${Lk}): got k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
  // Leading dims fold to [B, H]: rank 3 → [B], rank 4 → [B, H], rank >4 → [B..., H].
  let leadB;
  let leadH;
  if (lead.length <= 1) {
    leadB = lead;
    leadH = [];
  } else {
    leadB = lead.slice(0, -1);
    leadH = lead.slice(-1);
  }
  const B = product(leadB);
  const H = product(leadH);
  const finite = finiteOption(where, opts, settings.checkFinite) ? [['q', tq], ['k', tk], ['v', tv]] : null;
  return sdpaCore(backend, where, { lead, leadB, leadH, batch: B, heads: H, kvHeads: headAxis >= 0 ? kvHeads : H, lq: Lq, lk: Lk, d: D, dv: Dv, q: tq.data, k: tk.data, v: tv.data }, opts, finite);
}

// p: the folded call { lead, leadB, leadH, batch, heads, lq, lk, d, dv, q, k, v };
// finite: the tensors to scan for NaN/±Infinity (checkFinite), or null.
function sdpaCore(backend, where, p, opts, finite) {
  const needWeights = opts.needWeights ?? true;
  checkBool(where, 'needWeights', needWeights);
  const scale = checkScale(where, opts.scale);
  const trace = checkTrace(where, opts.trace);
  let softcap;
  if (opts.softcap !== undefined) {
    if (typeof opts.softcap !== 'number') throw typeError(where, `softcap must be a number > 0, got ${describe(opts.softcap)}`);
    softcap = opts.softcap;
  }
  const mask = withMaskFill(where, normalizeMask(where, opts.mask, p), opts.maskFill);
  if (finite) checkFiniteArgs(where, finite, mask);
  const outShape = [...p.lead, p.lq, p.dv];
  const wShape = [...p.lead, p.lq, p.lk];
  const nOut = checkElements(where, "the output [..., Lq, Dv] (q's length, v's width)", outShape);
  const nW = needWeights ? checkElements(where, "the weights [..., Lq, Lk] (q's and k's lengths; needWeights: false skips them)", wShape) : 0;
  const nTrace = trace === 'values' ? 3 * product(wShape) : 0;
  checkBytes(where, [p.q.length, p.k.length, p.v.length, nOut, nW, p.lk * (p.d + p.dv + 64), nTrace],
    () => `q ${shapeString([...p.lead, p.lq, p.d])}, k ${shapeString([...p.lead, p.lk, p.d])}, v ${shapeString([...p.lead, p.lk, p.dv])}, the output ${shapeString(outShape)}${needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
  /** @type {import('./backend.js').SdpaArgs} */
  const args = {
    where, batch: p.batch, heads: p.heads, kvHeads: p.kvHeads ?? p.heads, lq: p.lq, lk: p.lk, d: p.d, dv: p.dv,
    q: p.q, k: p.k, v: p.v, scale, softcap, mask, needWeights, trace: trace === 'values',
  };
  return then(backend.sdpa(args), (r) => {
    const out = {
      output: makeTensor(r.output, outShape),
      weights: r.weights ? makeTensor(r.weights, wShape) : null,
    };
    if (trace) out.trace = sdpaTrace(r.trace, { lead: p.lead, lq: p.lq, lk: p.lk, dv: p.dv, mask: mask.given, output: r.output, softcap });
    return out;
  });
}
