// Ours: attention-lab on wasm SIMD ('ours-simd'), wasm scalar ('ours-scalar')
// and, in the browser, WebGPU ('ours-webgpu', skipped while that backend does
// not exist). Node child: node bench/impl-ours.mjs '<spec json>' (see node-env.mjs).
import { caseInputs, caseFlops, gemvWeightBytes, mhaWeights, LN_EPS, maxAbsDiff, baseImpl, threadsOf } from './common.mjs';

// 'ours-simd-base': ours wasm SIMD built from an earlier revision (bench.mjs
// --baseline; the driver points ATTNLAB_BENCH_WEB at that build's web/). The
// calls below use only API that revision 9f599ff (before issue 10) has too.
const BACKEND = { 'ours-simd': 'wasm', 'ours-scalar': 'wasm-scalar', 'ours-webgpu': 'webgpu', 'ours-simd-base': 'wasm' };

// Calls that may return a promise (the webgpu backend): time until settled.
const settle = (v, set) => (v && typeof v.then === 'function' ? v.then(set) : set(v));

function skip(message) {
  return Object.assign(new Error(message), { skip: true });
}

export async function prepare(c, impl, env) {
  const backend = BACKEND[baseImpl(impl)];
  if (!backend) throw new Error(`impl-ours: unknown implementation ${impl}`);
  let lab;
  try {
    lab = await env.loadOurs(backend, threadsOf(impl));
  } catch (err) {
    if (backend === 'webgpu') throw skip(`webgpu: ${err.message}`);
    throw err;
  }
  const info = { backend: lab.backend, kernelArch: lab.kernelArch, threads: lab.threads ?? 1 };
  const memory = () => (lab._backend?.memoryBytes ? { wasmMemoryBytes: lab._backend.memoryBytes() } : {});
  const inp = caseInputs(c);

  // An MHA holding the shared weights (common.mjs), in keras layout.
  const makeMha = (E, H) => {
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 1 });
    const W = mhaWeights(E);
    const t = (data, n) => ({ data, shape: n === 1 ? [E] : [E, E] });
    mha.setWeights({
      wq: t(W.wq), bq: t(W.bq, 1), wk: t(W.wk), bk: t(W.bk, 1), wv: t(W.wv), bv: t(W.bv, 1), wo: t(W.wo), bo: t(W.bo, 1),
    }, { layout: 'keras' });
    return { mha, W };
  };

  if (c.kind === 'mha') {
    const { B, lq, lk, E, H } = c;
    const { mha, W } = makeMha(E, H);
    const back = mha.getWeights({ layout: 'keras' }); // the weights it really holds
    const roundTrip = Math.max(...Object.keys(W).map((k) => maxAbsDiff(back[k].data, W[k])));
    if (roundTrip !== 0) throw new Error(`setWeights/getWeights round trip differs by ${roundTrip}`);
    const q = { data: inp.x ?? inp.q, shape: [B, lq, E] };
    const kv = inp.x ? q : { data: inp.kv, shape: [B, lk, E] };
    const opts = { mask: c.causal ? { kind: 'causal' } : undefined, needWeights: c.needWeights };
    let last;
    const sync = typeof mha.forwardSync === 'function' && lab.backend !== 'webgpu';
    return {
      flops: caseFlops(c),
      warmup: c.long ? 0 : undefined,
      call: sync ? () => { last = mha.forwardSync(q, kv, kv, opts); } : async () => { last = await mha.forward(q, kv, kv, opts); },
      outputs: () => ({ output: last.output.data, weights: last.weights ? last.weights.data : undefined }),
      info,
      after: memory,
    };
  }

  if (c.kind === 'kvdecode') {
    // A cache filled by projecting the 511 past tokens once; each call is one
    // decode step (project the token, append, attend over 512, project out),
    // then truncate(511) rolls the cache back so every call is the same step.
    const { B, E, H, past } = c;
    const { mha } = makeMha(E, H);
    const cache = mha.createKVCache({ maxLength: past + 1, batch: B });
    const xPast = { data: inp.xPast, shape: [B, past, E] };
    const x = { data: inp.x, shape: [B, 1, E] };
    const opts = { kvCache: cache, needWeights: false };
    await mha.forward(xPast, xPast, xPast, opts);
    let last;
    const sync = typeof mha.forwardSync === 'function' && lab.backend !== 'webgpu';
    return {
      flops: caseFlops(c),
      call: sync
        ? () => { last = mha.forwardSync(x, x, x, opts); cache.truncate(past); }
        : async () => { last = await mha.forward(x, x, x, opts); cache.truncate(past); },
      outputs: () => ({ output: last.output.data }),
      info,
      after: memory,
    };
  }

  if (c.kind === 'sdpa') {
    const sh = (L) => [c.B, c.H, L, c.D];
    const q = { data: inp.q, shape: sh(c.lq) };
    const k = { data: inp.k, shape: sh(c.lk) };
    const v = { data: inp.v, shape: sh(c.lk) };
    const opts = { mask: c.causal ? { kind: 'causal' } : undefined, needWeights: c.needWeights };
    let last;
    return {
      flops: caseFlops(c),
      call: () => settle(lab.scaledDotProductAttention(q, k, v, opts), (r) => { last = r; }),
      outputs: () => ({ output: last.output.data, weights: last.weights ? last.weights.data : undefined }),
      info,
    };
  }

  if (c.kind === 'gqa') {
    // q [B,H,Lq,D], k/v [B,Hkv,Lk,D]: the decode step sees every key; the
    // prefill is causal; the window covers the newest `window` + 1 keys.
    const q = { data: inp.q, shape: [c.B, c.H, c.lq, c.D] };
    const k = { data: inp.k, shape: [c.B, c.Hkv, c.lk, c.D] };
    const v = { data: inp.v, shape: [c.B, c.Hkv, c.lk, c.D] };
    const mask = [{ kind: 'causal', align: 'bottom-right' }];
    if (c.window) mask.push({ kind: 'window', left: c.window, align: 'bottom-right' });
    const opts = { mask, needWeights: false };
    let last;
    return {
      flops: caseFlops(c),
      call: () => settle(lab.scaledDotProductAttention(q, k, v, opts), (r) => { last = r; }),
      outputs: () => ({ output: last.output.data }),
      info,
    };
  }

  if (c.kind === 'gemv') {
    // benchGemv (bindings/bench/): W held by the weight store as F32 or F16
    // panels or GGML blocks, the models' linear driver timed alone.
    const variant = { wasm: 'simd', 'wasm-scalar': 'scalar' }[lab.backend];
    const bench = variant ? await env.loadBenchModule(variant) : null;
    if (!bench || typeof bench.benchGemv !== 'function') {
      throw skip(variant ? `no benchGemv in the bench module for ${variant} (scripts/bench.sh builds build/wasm-${variant}/attention_lab_bench_${variant})` : 'no bench module for this backend');
    }
    const code = { F32: 0, F16: 1, Q8_0: 8, Q4_0: 2 }[c.weights];
    const once = bench.benchGemv(code, c.M, c.N, c.K, 1);
    if (once < 0) throw new Error(`benchGemv: could not hold W [${c.N},${c.K}] as ${c.weights}`);
    const iterations = Math.max(1, Math.round(20 / Math.max(once, 0.01)));
    return {
      flops: caseFlops(c),
      sample: () => bench.benchGemv(code, c.M, c.N, c.K, iterations),
      outputs: () => ({}),
      info: { ...info, iterations, note: `internal kernel timing; ${(gemvWeightBytes(c.weights, c.N, c.K) / 2 ** 20).toFixed(1)} MiB of weights read a call` },
    };
  }

  if (c.kind === 'gemm') {
    // benchGemm lives in the bench module (bindings/bench/, built by
    // scripts/bench.sh), not in the shipped one; it has no webgpu version.
    const variant = { wasm: 'simd', 'wasm-scalar': 'scalar' }[lab.backend];
    const bench = variant ? await env.loadBenchModule(variant) : null;
    if (!bench || typeof bench.benchGemm !== 'function') {
      throw skip(variant ? `no bench module for ${variant} (scripts/bench.sh builds build/wasm-${variant}/attention_lab_bench_${variant})` : 'no gemmBench hook in this backend');
    }
    // benchGemm times `iterations` calls itself (B packed once, as weights
    // are): pick enough iterations for ~20 ms per sample.
    const once = bench.benchGemm(c.M, c.N, c.K, 1);
    const iterations = Math.max(1, Math.round(20 / Math.max(once, 0.01)));
    return {
      flops: caseFlops(c),
      sample: () => bench.benchGemm(c.M, c.N, c.K, iterations),
      // benchGemm returns timings only (its A and B are fixed patterns), so
      // there is no output to cross-check here; the MHA rows cover the GEMM.
      outputs: () => ({}),
      info: { ...info, iterations, note: 'internal kernel timing (no copy in/out)' },
    };
  }

  if (c.kind === 'layernorm') {
    const be = lab._backend;
    if (!be || typeof be.addLayerNorm !== 'function') throw skip('no addLayerNorm in this backend');
    let last;
    return {
      flops: caseFlops(c),
      call: () => settle(be.addLayerNorm(c.rows, c.dim, inp.x, null, inp.gamma, inp.beta, LN_EPS), (r) => { last = r; }),
      outputs: () => ({ output: last }),
      info,
    };
  }

  if (c.kind === 'pe') {
    let last;
    return {
      flops: caseFlops(c),
      call: () => settle(lab.positionalEncoding(c.L, c.D), (r) => { last = r; }),
      outputs: () => ({ output: last.data }),
      info,
    };
  }

  throw skip(`ours: nothing to run for ${c.kind}`);
}

if (typeof process !== 'undefined' && process.versions?.node) {
  await (await import('./node-env.mjs')).runIfMain(import.meta.url, prepare);
}
