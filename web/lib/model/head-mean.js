// The mean over heads of attention weights: PyTorch's average_attn_weights=True
// (nn.MultiheadAttention: attn_output_weights.mean(dim=1)), [B, H, Lq, Lk] →
// [B, Lq, Lk], summed in float64 per position. forward's `attentions: 'mean'`
// (model.js, encdec-model.js) and the exported headMean use it.
import { typeError, describe } from '../errors.js';

/** The values forward's `attentions` option takes. */
export const ATTENTIONS_VALUES = "true, false or 'mean'";

/**
 * forward's checked `attentions` option: { want (whether the run writes the weights), mean }.
 * @param {string} where
 * @param {unknown} v
 */
export function attentionsOption(where, v) {
  if (v === undefined || v === true) return { want: true, mean: false };
  if (v === false) return { want: false, mean: false };
  if (v === 'mean') return { want: true, mean: true };
  throw typeError(where, `attentions must be ${ATTENTIONS_VALUES} (the mean over heads, [1, Lq, Lk] per layer), got ${describe(v)}`);
}

/**
 * The package's export: one layer's weights { data, shape [B, H, Lq, Lk] } (as forward returns
 * them) averaged over the heads → { data: Float32Array, shape [B, Lq, Lk] }.
 * @param {{ data: ArrayLike<number>, shape: number[] }} a
 */
export function headMean(a) {
  return meanOverHeads(a, 'headMean');
}

/**
 * headMean with the caller's name in its errors.
 * @param {{ data: ArrayLike<number>, shape: number[] }} a
 * @param {string} where
 */
export function meanOverHeads(a, where) {
  if (!a || typeof a !== 'object' || !Array.isArray(a.shape) || !a.data || typeof a.data.length !== 'number') {
    throw typeError(where, `the attention must be a tensor { data, shape [B, H, Lq, Lk] }, got ${describe(a)}`);
  }
  if (a.shape.length !== 4 || !a.shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw typeError(where, `the attention's shape must be [B, H, Lq, Lk] (4 non-negative integers), got [${a.shape.join(', ')}]`);
  }
  const [B, H, Lq, Lk] = a.shape;
  if (H === 0) throw typeError(where, 'the attention has no heads (H = 0): its mean is undefined');
  if (a.data.length !== B * H * Lq * Lk) {
    throw typeError(where, `the attention's data has ${a.data.length} values, its shape [${a.shape.join(', ')}] needs ${B * H * Lq * Lk}`);
  }
  const per = Lq * Lk;
  const out = new Float32Array(B * per);
  for (let b = 0; b < B; b++) {
    for (let q = 0; q < per; q++) {
      let s = 0;
      for (let hh = 0; hh < H; hh++) s += a.data[(b * H + hh) * per + q];
      out[b * per + q] = s / H;
    }
  }
  return { data: out, shape: [B, Lq, Lk] };
}
