// Readbacks of the webgpu backend by name, and the buffers of a trace
// (forward(…, { trace: 'values' })): the scores kernel, the MHA part of the
// readback, and the split of named readbacks into { output, weights, trace }.
// Shape legend: B batch, H heads, Lq/Lk sequence, E embed.
import * as ops from './webgpu-ops.js';

// The trace's scores and masked scores of an attention view, recorded.
// With view.softcap, also the soft-capped scores.
export function scoreBuffers(job, view) {
  const shape = [view.batch, view.heads, view.lq, view.lk];
  const n = view.batch * view.heads * view.lq * view.lk;
  const scores = job.storage('the trace scores', shape, n);
  const capped = view.softcap !== undefined ? job.storage('the trace soft-capped scores', shape, n) : null;
  const masked = job.storage('the trace masked scores', shape, n);
  ops.traceScores(job, view, scores, capped, masked);
  return { scores, capped, masked };
}

// Readbacks by name: add(job, name, buffer, count) while building the job,
// then take(results) once it has run.
export function reads() {
  const names = [];
  return {
    add(job, name, t, count) {
      names.push(name);
      job.read(t, count);
    },
    take(results) {
      const out = {};
      names.forEach((name, i) => { out[name] = results[i]; });
      return out;
    },
  };
}

// The MHA part of a trace's readback (K and V [B, Lk, Ekv]: see expandKv).
export function readMhaTrace(job, rd, tr, weights, B, H, Lq, Lk, E, Ekv = E) {
  const nW = B * H * Lq * Lk;
  rd.add(job, 't.q', tr.q, B * Lq * E);
  rd.add(job, 't.k', tr.k, B * Lk * Ekv);
  rd.add(job, 't.v', tr.v, B * Lk * Ekv);
  rd.add(job, 't.scores', tr.scores, nW);
  rd.add(job, 't.masked', tr.masked, nW);
  rd.add(job, 't.weights', weights, nW);
  rd.add(job, 't.context', tr.ctx, B * Lq * E);
}

// The trace's K or V as the core gives it with GQA (MultiHeadAttention's
// trace): [B, Lk, E], the slot of query head h holding kv head h·Hkv/H.
export function expandKv(x, B, Lk, H, Hkv, D) {
  if (Hkv === H) return x;
  const out = new Float32Array(B * Lk * H * D);
  for (let r = 0; r < B * Lk; r++) {
    for (let h = 0; h < H; h++) {
      const src = r * Hkv * D + Math.floor((h * Hkv) / H) * D;
      out.set(x.subarray(src, src + D), (r * H + h) * D);
    }
  }
  return out;
}

// Splits named readbacks into { output, weights, trace? }.
/** @returns {import('./backend.js').ForwardOut} */
export function result(named, wantWeights, wantTrace) {
  const trace = {};
  for (const [key, value] of Object.entries(named)) if (key.startsWith('t.')) trace[key.slice(2)] = value;
  return {
    output: named.output,
    weights: wantWeights ? named.weights : null,
    trace: wantTrace ? /** @type {import('./backend.js').TraceOut} */ (trace) : undefined,
  };
}
