// forward(…, { trace: 'values' }): the shape trace (trace.js) with each step's
// value, as computed by the backend in use (the wasm kernels write the
// intermediates into caller buffers; the webgpu backend reads its GPU buffers
// back). Splitting and merging heads are views of the same numbers: they are
// laid out here ([B, L, E] ↔ [B, H, L, D]), nothing is computed.
// Shape legend: B batch, Lq/Lk sequence, E embed, H heads, D head dim.
import { makeTensor } from './tensor.js';

/** [B, L, H·D] → [B, H, L, D] (a copy). */
export function splitHeads(data, B, L, H, D) {
  const out = new Float32Array(data.length);
  const E = H * D;
  for (let b = 0; b < B; b++) {
    for (let l = 0; l < L; l++) {
      const src = (b * L + l) * E;
      for (let h = 0; h < H; h++) {
        out.set(data.subarray(src + h * D, src + (h + 1) * D), ((b * H + h) * L + l) * D);
      }
    }
  }
  return out;
}

/**
 * Attaches `value` (and `values` where a step has several) to each step of
 * an MHA or layer shape trace.
 * @param {object[]} steps the shape trace (buildTrace), shapes already unbatched if asked
 * @param {import('./backend.js').TraceOut} t the backend's intermediates
 * @param {{ batch: number, lq: number, lk: number, embedDim: number, numHeads: number,
 *   input: Float32Array, output: Float32Array }} d
 */
export function attachValues(steps, t, d) {
  const { batch: B, lq, lk, numHeads: H } = d;
  const D = d.embedDim / H;
  const heads = {
    q: splitHeads(t.q, B, lq, H, D),
    k: splitHeads(t.k, B, lk, H, D),
    v: splitHeads(t.v, B, lk, H, D),
  };
  const tensor = (data, step, key) => makeTensor(data, key ? step.shapes[key] : step.shape);
  for (const step of steps) {
    switch (step.step) {
      case 'input': step.value = tensor(d.input, step); break;
      case 'linear_qkv':
        step.value = tensor(t.q, step);
        step.values = { q: tensor(t.q, step, 'q'), k: tensor(t.k, step, 'k'), v: tensor(t.v, step, 'v') };
        break;
      case 'split_heads':
        step.value = tensor(heads.q, step);
        step.values = { q: tensor(heads.q, step, 'q'), k: tensor(heads.k, step, 'k'), v: tensor(heads.v, step, 'v') };
        break;
      case 'scores': step.value = tensor(t.scores, step); break;
      case 'mask': step.value = tensor(t.masked, step); break;
      case 'softmax': step.value = tensor(t.weights, step); break;
      case 'weighted_sum': step.value = tensor(splitHeads(t.context, B, lq, H, D), step); break;
      case 'merge_heads': step.value = tensor(t.context, step); break;
      case 'output_linear': step.value = tensor(t.attention ?? d.output, step); break;
      case 'dropout': step.value = tensor(t.dropout, step); break;
      case 'residual': step.value = tensor(t.residual, step); break;
      case 'layer_norm': step.value = tensor(d.output, step); break;
      default: break;
    }
  }
  return steps;
}

/**
 * The trace of scaledDotProductAttention / selfAttention: scores, mask (when
 * one was given), softmax, weighted_sum over [..., Lq, Lk]; with values when
 * the backend returned them (trace: 'values').
 * @param {import('./backend.js').TraceOut | undefined} t
 * @param {{ lead: number[], lq: number, lk: number, dv: number, mask: boolean, output: Float32Array, softcap?: number }} p
 */
export function sdpaTrace(t, p) {
  const sw = [...p.lead, p.lq, p.lk];
  const so = [...p.lead, p.lq, p.dv];
  const steps = [{ step: 'scores', shape: sw, formula: 'Q·Kᵀ·scale (scale = 1/√D unless given)', data: t?.scores }];
  if (p.softcap !== undefined) steps.push({ step: 'softcap', shape: sw, formula: `softcap·tanh(scores/softcap), softcap = ${p.softcap}`, data: t?.capped });
  if (p.mask) steps.push({ step: 'mask', shape: sw, formula: 'masked_fill(mask == 0, -1e9) / scores + mask·(-1e9)', data: t?.masked });
  steps.push(
    { step: 'softmax', shape: sw, formula: 'softmax over the key axis (each row sums to 1)', data: t?.weights },
    { step: 'weighted_sum', shape: so, formula: 'weights·V', data: t ? p.output : undefined },
  );
  return steps.map(({ data, ...step }) => (data ? { ...step, value: makeTensor(data, step.shape) } : step));
}
