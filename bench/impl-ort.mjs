// Peer: onnxruntime-web, wasm execution provider, numThreads = 1, its .wasm
// from its own npm package (env.wasm.wasmPaths). Models from onnx-models.mjs.
// Node child: node bench/impl-ort.mjs '<spec json>' (see node-env.mjs).
import { caseInputs, caseFlops, pastKV, baseImpl, threadsOf } from './common.mjs';

// The new positions [lk − lq, lk) of k/v [B, Hkv, Lk, D] as BSNH [B, Lq, Hkv·D].
function bsnhKV(x, c, past) {
  const out = new Float32Array(c.B * c.lq * c.Hkv * c.D);
  for (let b = 0; b < c.B; b++) for (let h = 0; h < c.Hkv; h++) for (let l = 0; l < c.lq; l++) {
    const src = ((b * c.Hkv + h) * c.lk + past + l) * c.D;
    out.set(x.subarray(src, src + c.D), ((b * c.lq + l) * c.Hkv + h) * c.D);
  }
  return out;
}

export async function prepare(c, implName, env) {
  // 'ort-attn-t2': the 'ort-attn' model on 2 threads (env.wasm.numThreads).
  const impl = baseImpl(implName);
  const threads = threadsOf(implName);
  const ort = await env.loadOrt(threads);
  const bytes = await env.modelBytes(c, impl);
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
  });
  const inp = caseInputs(c);
  const T = (data, dims) => new ort.Tensor('float32', data, dims);
  let feeds;
  switch (c.kind) {
    case 'mha':
      feeds = c.lq === c.lk
        ? { x: T(inp.x, [c.B, c.lq, c.E]) }
        : { q: T(inp.q, [c.B, c.lq, c.E]), kv: T(inp.kv, [c.B, c.lk, c.E]) };
      break;
    case 'kvdecode': {
      // The decoder's loop feeds present_* back as past_*; here the same
      // 511-position past every call, so each call is the same step.
      const kv = pastKV(c);
      const D = c.E / c.H;
      feeds = {
        x: T(inp.x, [c.B, 1, c.E]),
        past_key: T(kv.k, [c.B, c.H, c.past, D]),
        past_value: T(kv.v, [c.B, c.H, c.past, D]),
      };
      break;
    }
    case 'sdpa':
      feeds = {
        q: impl === 'ort-mha' ? T(inp.q, [c.B, c.lq, c.H * c.D]) : T(inp.q, [c.B, c.H, c.lq, c.D]),
        k: T(inp.k, [c.B, c.H, c.lk, c.D]),
        v: T(inp.v, [c.B, c.H, c.lk, c.D]),
      };
      break;
    case 'gqa': {
      // BNSH → BSNH for query/key/value (once, outside the timed call).
      const qBsnh = new Float32Array(inp.q.length);
      for (let b = 0; b < c.B; b++) for (let h = 0; h < c.H; h++) for (let l = 0; l < c.lq; l++) {
        const src = ((b * c.H + h) * c.lq + l) * c.D;
        qBsnh.set(inp.q.subarray(src, src + c.D), ((b * c.lq + l) * c.H + h) * c.D);
      }
      const past = c.lk - c.lq;
      const pastOf = (x) => {
        const out = new Float32Array(c.B * c.Hkv * past * c.D);
        for (let n = 0; n < c.B * c.Hkv; n++) out.set(x.subarray(n * c.lk * c.D, (n * c.lk + past) * c.D), n * past * c.D);
        return out;
      };
      feeds = {
        query: T(qBsnh, [c.B, c.lq, c.H * c.D]),
        key: T(bsnhKV(inp.k, c, past), [c.B, c.lq, c.Hkv * c.D]),
        value: T(bsnhKV(inp.v, c, past), [c.B, c.lq, c.Hkv * c.D]),
        seqlens_k: new ort.Tensor('int32', Int32Array.from({ length: c.B }, () => c.lk - 1), [c.B]),
        total_sequence_length: new ort.Tensor('int32', Int32Array.of(c.lk), []),
      };
      if (past > 0) {
        feeds.past_key = T(pastOf(inp.k), [c.B, c.Hkv, past, c.D]);
        feeds.past_value = T(pastOf(inp.v), [c.B, c.Hkv, past, c.D]);
      }
      break;
    }
    case 'gemm':
      feeds = { a: T(inp.a, [c.M, c.K]) };
      break;
    case 'layernorm':
      feeds = { x: T(inp.x, [c.rows, c.dim]) };
      break;
    case 'pe':
      feeds = { pos: T(inp.pos, [c.L, 1]) };
      break;
    default:
      throw new Error(`impl-ort: no feeds for ${c.kind}`);
  }
  let last;
  const call = async () => {
    last = await session.run(feeds);
    // Reading .data is part of the call (ours returns JS-owned arrays too).
    void last.y.data;
  };
  // GQA answers BSNH [B, Lq, H·D]: back to BNSH for the cross-check.
  const toBnsh = (y) => {
    const out = new Float32Array(y.length);
    for (let b = 0; b < c.B; b++) for (let l = 0; l < c.lq; l++) for (let h = 0; h < c.H; h++) {
      out.set(y.subarray(((b * c.lq + l) * c.H + h) * c.D, ((b * c.lq + l) * c.H + h + 1) * c.D), ((b * c.H + h) * c.lq + l) * c.D);
    }
    return out;
  };
  return {
    flops: caseFlops(c),
    call,
    outputs: () => ({ output: c.kind === 'gqa' ? toBnsh(last.y.data) : last.y.data, weights: last.weights ? last.weights.data : undefined }),
    info: { ort: ort.env.versions?.web ?? ort.env.versions?.common, numThreads: ort.env.wasm.numThreads },
  };
}

if (typeof process !== 'undefined' && process.versions?.node) {
  await (await import('./node-env.mjs')).runIfMain(import.meta.url, prepare);
}
