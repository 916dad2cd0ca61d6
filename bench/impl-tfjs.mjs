// Peer: @tensorflow/tfjs-backend-wasm, single-threaded (setWasmPaths,
// WASM_HAS_MULTITHREAD_SUPPORT off), SIMD on. Each call builds its input
// tensors from the Float32Arrays (copy in), runs the ops and reads the result
// with dataSync (copy out), like ours and ORT.
// Node child: node bench/impl-tfjs.mjs '<spec json>' (see node-env.mjs).
import { caseInputs, caseFlops, mhaWeights, pastKV, peInvFreq, LN_EPS } from './common.mjs';

function causalMask(lq, lk) {
  const m = new Float32Array(lq * lk);
  for (let i = 0; i < lq; i++) for (let j = i + 1; j < lk; j++) m[i * lk + j] = -1e9;
  return m;
}

export async function prepare(c, impl, env) {
  if (impl !== 'tfjs') throw new Error(`impl-tfjs: unknown implementation ${impl}`);
  const tf = await env.loadTf();
  const inp = caseInputs(c);
  let fn; // () => tf.Tensor[] (inside tidy)
  const keep = (t) => tf.keep(t);

  if (c.kind === 'mha') {
    const { B, lq, lk, E, H } = c;
    const D = E / H;
    const W = mhaWeights(E);
    const w = (k) => keep(tf.tensor2d(W[k], [E, E]));
    const b = (k) => keep(tf.tensor1d(W[k]));
    const P = { wq: w('wq'), bq: b('bq'), wk: w('wk'), bk: b('bk'), wv: w('wv'), bv: b('bv'), wo: w('wo'), bo: b('bo') };
    const mask = c.causal ? keep(tf.tensor2d(causalMask(lq, lk), [lq, lk])) : null;
    const scale = keep(tf.scalar(1 / Math.sqrt(D)));
    const self = lq === lk;
    fn = () => {
      const xq = tf.tensor2d(self ? inp.x : inp.q, [B * lq, E]);
      const xkv = self ? xq : tf.tensor2d(inp.kv, [B * lk, E]);
      const lin = (x, wk, bk) => tf.add(tf.matMul(x, P[wk]), P[bk]);
      const heads = (t, L) => tf.transpose(tf.reshape(t, [B, L, H, D]), [0, 2, 1, 3]);
      const q = heads(lin(xq, 'wq', 'bq'), lq);
      const k = heads(lin(xkv, 'wk', 'bk'), lk);
      const v = heads(lin(xkv, 'wv', 'bv'), lk);
      let s = tf.mul(tf.matMul(q, k, false, true), scale);
      if (mask) s = tf.add(s, mask);
      const p = tf.softmax(s);
      const o = tf.reshape(tf.transpose(tf.matMul(p, v), [0, 2, 1, 3]), [B * lq, E]);
      const y = lin(o, 'wo', 'bo');
      return c.needWeights ? [y, p] : [y];
    };
  } else if (c.kind === 'kvdecode') {
    // The cache as kept tensors [B, H, P, D]; a step projects the token,
    // concatenates its K and V to the cache (as a tfjs decoder does) and
    // attends over all P + 1 positions.
    const { B, E, H, past } = c;
    const D = E / H;
    const W = mhaWeights(E);
    const w = (k) => keep(tf.tensor2d(W[k], [E, E]));
    const b = (k) => keep(tf.tensor1d(W[k]));
    const P = { wq: w('wq'), bq: b('bq'), wk: w('wk'), bk: b('bk'), wv: w('wv'), bv: b('bv'), wo: w('wo'), bo: b('bo') };
    const kv = pastKV(c);
    const pastK = keep(tf.tensor4d(kv.k, [B, H, past, D]));
    const pastV = keep(tf.tensor4d(kv.v, [B, H, past, D]));
    const scale = keep(tf.scalar(1 / Math.sqrt(D)));
    fn = () => {
      const x = tf.tensor2d(inp.x, [B, E]);
      const lin = (t, wk, bk) => tf.add(tf.matMul(t, P[wk]), P[bk]);
      const heads = (t) => tf.reshape(t, [B, H, 1, D]);
      const q = heads(lin(x, 'wq', 'bq'));
      const k = tf.concat([pastK, heads(lin(x, 'wk', 'bk'))], 2);
      const v = tf.concat([pastV, heads(lin(x, 'wv', 'bv'))], 2);
      const p = tf.softmax(tf.mul(tf.matMul(q, k, false, true), scale));
      const o = tf.reshape(tf.matMul(p, v), [B, E]);
      return [lin(o, 'wo', 'bo')];
    };
  } else if (c.kind === 'sdpa') {
    const { B, H, lq, lk, D } = c;
    const mask = c.causal ? keep(tf.tensor2d(causalMask(lq, lk), [lq, lk])) : null;
    const scale = keep(tf.scalar(1 / Math.sqrt(D)));
    fn = () => {
      const q = tf.tensor4d(inp.q, [B, H, lq, D]);
      const k = tf.tensor4d(inp.k, [B, H, lk, D]);
      const v = tf.tensor4d(inp.v, [B, H, lk, D]);
      let s = tf.mul(tf.matMul(q, k, false, true), scale);
      if (mask) s = tf.add(s, mask);
      return [tf.matMul(tf.softmax(s), v)];
    };
  } else if (c.kind === 'gemm') {
    const bm = keep(tf.tensor2d(inp.b, [c.K, c.N]));
    fn = () => [tf.matMul(tf.tensor2d(inp.a, [c.M, c.K]), bm)];
  } else if (c.kind === 'layernorm') {
    const gamma = keep(tf.tensor1d(inp.gamma));
    const beta = keep(tf.tensor1d(inp.beta));
    fn = () => {
      const x = tf.tensor2d(inp.x, [c.rows, c.dim]);
      const { mean, variance } = tf.moments(x, -1, true);
      return [tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, LN_EPS))), gamma), beta)];
    };
  } else if (c.kind === 'pe') {
    const inv = keep(tf.tensor2d(peInvFreq(c.D), [1, c.D / 2]));
    fn = () => {
      const ang = tf.mul(tf.tensor2d(inp.pos, [c.L, 1]), inv);
      return [tf.reshape(tf.stack([tf.sin(ang), tf.cos(ang)], 2), [c.L, c.D])];
    };
  } else {
    throw new Error(`impl-tfjs: nothing to run for ${c.kind}`);
  }

  let last;
  const call = () => {
    const ts = tf.tidy(fn);
    last = ts.map((t) => t.dataSync());
    for (const t of ts) t.dispose();
  };
  return {
    flops: caseFlops(c),
    call,
    outputs: () => ({ output: last[0], weights: last[1] }),
    info: { tfjs: tf.version_core, backend: tf.getBackend(), threads: tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT') ? 'multi' : 1 },
    after: () => ({ tensorsHeld: tf.memory().numTensors }), // the kept weights; grows if a call leaks
  };
}

if (typeof process !== 'undefined' && process.versions?.node) {
  await (await import('./node-env.mjs')).runIfMain(import.meta.url, prepare);
}
