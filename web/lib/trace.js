// The shape trace: one record per step of the forward pass, as the page
// animates it. Shapes use the legend B, Lq, Lk, E, H, D.

/**
 * @param {object} p
 * @param {number} p.batch B (ignored when unbatched)
 * @param {number} p.lq Lq
 * @param {number} p.lk Lk
 * @param {number} p.embedDim E
 * @param {number} p.numHeads H
 * @param {number} [p.kdim] key input width
 * @param {number} [p.vdim] value input width
 * @param {boolean} [p.mask] whether a mask step is shown
 * @param {boolean} [p.layer] append dropout, residual, layer_norm
 * @param {boolean} [p.unbatched] drop B from every shape
 * @param {boolean} [p.training] dropout active
 * @param {'torch'|'keras'} [p.layout] the weight layout the formulas are
 *   written in: 'torch' (default; nn.Linear, W [out, in], y = x·Wᵀ + b) or
 *   'keras' (Dense kernel, W [in, out], y = x·W + b)
 */
export function buildTrace({ batch = 1, lq, lk = lq, embedDim, numHeads, kdim = embedDim, vdim = embedDim, mask = false, layer = false, unbatched = false, training = false, layout = 'torch' }) {
  const E = embedDim;
  const H = numHeads;
  const D = E / H;
  const s = (...dims) => (unbatched ? dims : [batch, ...dims]);
  // x·Wᵀ for torch's [out, in] weights, x·W for keras's [in, out] kernels.
  const t = layout === 'keras' ? '' : 'ᵀ';
  const trace = [
    { step: 'input', shape: s(lq, E), formula: unbatched ? 'query [Lq, E]' : "query [B, Lq, E] (batch-first: torch's batch_first=True; its default is [Lq, B, E])", shapes: { query: s(lq, E), key: s(lk, kdim), value: s(lk, vdim) } },
    { step: 'linear_qkv', shape: s(lq, E), formula: `Q = query·W_Q${t} + b_Q, K = key·W_K${t} + b_K, V = value·W_V${t} + b_V`, shapes: { q: s(lq, E), k: s(lk, E), v: s(lk, E) } },
    { step: 'split_heads', shape: s(H, lq, D), formula: 'view [B, L, H, D] → permute → [B, H, L, D], D = E / H', shapes: { q: s(H, lq, D), k: s(H, lk, D), v: s(H, lk, D) } },
    { step: 'scores', shape: s(H, lq, lk), formula: 'Q·Kᵀ / √D' },
  ];
  if (mask) trace.push({ step: 'mask', shape: s(H, lq, lk), formula: 'masked_fill(mask == 0, -1e9) / scores + mask·(-1e9)' });
  trace.push(
    { step: 'softmax', shape: s(H, lq, lk), formula: 'softmax over the key axis (each row sums to 1)' },
    { step: 'weighted_sum', shape: s(H, lq, D), formula: 'weights·V' },
    { step: 'merge_heads', shape: s(lq, E), formula: 'permute → [B, Lq, H, D] → contiguous → view [B, Lq, E]' },
    { step: 'output_linear', shape: s(lq, E), formula: `output = concat·W_O${t} + b_O` },
  );
  if (layer) {
    trace.push(
      { step: 'dropout', shape: s(lq, E), formula: training ? 'dropout(p) — inverted, kept values scaled by 1/(1-p)' : 'dropout — identity in eval mode' },
      { step: 'residual', shape: s(lq, E), formula: 'x + dropout(attention)' },
      { step: 'layer_norm', shape: s(lq, E), formula: 'LayerNorm: (y - mean) / √(var + eps) · γ + β' },
    );
  }
  return trace;
}
