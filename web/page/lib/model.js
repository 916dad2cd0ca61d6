// Derived inputs shared by the chapters: tokens of the batch (padded to L),
// seeded embeddings plus positional encoding, the mask spec, and the library
// objects (MHA, layer) cached per backend and configuration.
import { tokenize, embedBatch, PAD, xavier, mixSeed } from '../../components/lib/tokens.js';
import { maxAbsDiff } from '../../components/lib/tensor-math.js';

const EXTRA_SENTENCES = ['the mask hides the padding', 'short one'];

/**
 * The value of a step of a `trace: 'values'` result (the library's
 * intermediates); `which` picks Q, K or V on the linear_qkv / split_heads steps.
 * @returns {{data: Float32Array, shape: number[]}|undefined}
 */
export function stepValue(trace, step, which) {
  const s = trace?.find((x) => x.step === step);
  if (!s) return undefined;
  return which && s.values ? s.values[which] : s.value;
}

/** Batch tokens, lengths and L from the state (no library needed). */
export function deriveTokens(state) {
  const sentences = [tokenize(state.text), tokenize(state.text2), ...EXTRA_SENTENCES.map((s) => tokenize(s))];
  const raw = [];
  for (let b = 0; b < state.B; b++) raw.push(sentences[b] ?? sentences[b % sentences.length]);
  const longest = Math.max(1, ...raw.map((r) => r.length));
  const L = Math.min(512, state.L > 0 ? state.L : longest);
  const lengths = raw.map((r) => Math.min(r.length, L));
  const tokens = raw.map((r) => Array.from({ length: L }, (_, i) => (i < r.length ? r[i] : PAD)));
  return { tokens, lengths, L, B: state.B, raw, sentences };
}

/** The library mask spec for the state's mask kind (undefined for none). */
export function maskSpec(kind, lengths) {
  switch (kind) {
    case 'padding': return { kind: 'padding', lengths };
    case 'causal': return { kind: 'causal' };
    case 'both': return [{ kind: 'causal' }, { kind: 'padding', lengths }];
    default: return undefined;
  }
}

/** Embeddings [B, L, E] (+ PE when state.pe), memoised on what they depend on. */
export async function deriveInputs(lab, state, cache) {
  const tk = deriveTokens(state);
  const E = state.E;
  const key = JSON.stringify([tk.tokens, E, state.seed, state.pe, lab.backend]);
  if (cache.inputs?.key === key) return cache.inputs.value;
  let pe = null;
  if (state.pe) pe = (await lab.positionalEncoding(tk.L, E)).data;
  const x = embedBatch(tk.tokens, tk.L, E, state.seed, pe);
  const value = { ...tk, E, x, pe };
  cache.inputs = { key, value };
  return value;
}

/**
 * Cache of library objects. An MHA (or layer) is rebuilt only when its
 * configuration changes; the temperature and the √d_k switch are folded into
 * W_Q and b_Q (softmax(c·QKᵀ/√D) = softmax((cQ)Kᵀ/√D)), since mha.forward
 * always scales by 1/√D.
 */
export class ObjectCache {
  constructor() {
    this.items = new Map();
  }

  _get(kind, lab, cfg, create) {
    const key = `${kind}|${lab.backend}|${JSON.stringify(cfg)}`;
    let it = this.items.get(key);
    if (!it) {
      for (const [k, old] of this.items) {
        if (k.startsWith(`${kind}|${lab.backend}|`)) {
          old.obj.dispose();
          this.items.delete(k);
        }
      }
      const obj = create();
      it = { obj, original: obj.getWeights(), factor: 1 };
      this.items.set(key, it);
    }
    return it;
  }

  mha(lab, { E, H, seed }) {
    return this._get('mha', lab, { E, H, seed }, () => lab.multiHeadAttention({ embedDim: E, numHeads: H, seed }));
  }

  layer(lab, { E, H, seed, p }) {
    return this._get('layer', lab, { E, H, seed, p }, () => lab.selfAttentionLayer({ embedDim: E, numHeads: H, seed, dropout: p }));
  }

  /** Sets the score multiplier c (relative to 1/√D) on a cached item. */
  static setFactor(it, c) {
    if (it.factor === c) return;
    const { wq, bq } = it.original;
    const w = { wq: { data: wq.data.map((v) => v * c), shape: wq.shape } };
    // Each setWeights call repacks the weights: skip an all-zero bias.
    if (bq && bq.data.some((v) => v !== 0)) w.bq = { data: bq.data.map((v) => v * c), shape: bq.shape };
    it.obj.setWeights(w);
    it.factor = c;
  }
}

/** Multiplier folded into W_Q for the state's scale switch and temperature. */
export function scoreFactor(state, D) {
  return (state.scale ? 1 : Math.sqrt(D)) / state.T;
}

/** True when two weight sets (getWeights results) hold the same numbers. */
export function sameWeights(a, b) {
  for (const k of Object.keys(a)) {
    if (!b[k]) continue;
    const x = a[k].data;
    const y = b[k].data;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  }
  return true;
}

/** Runs the same MHA forward on the other backends; → { diff, pair } */
export async function compareBackends(objects, labs, main, { E, H, seed, c, x, B, L, mask, weights }, mainOutput) {
  let worst = { diff: 0, pair: '' };
  for (const lab of labs) {
    if (!lab || lab.backend === main.backend) continue;
    const it = objects.mha(lab, { E, H, seed });
    if (weights && !it.checked) {
      if (!sameWeights(it.original, weights)) {
        it.obj.setWeights(weights);
        it.original = weights;
        it.factor = 1;
      }
      it.checked = true;
    }
    ObjectCache.setFactor(it, c);
    const r = await it.obj.forward({ data: x, shape: [B, L, E] }, undefined, undefined, { mask, needWeights: false });
    const d = maxAbsDiff(r.output.data, mainOutput);
    if (d >= worst.diff) worst = { diff: d, pair: `${main.backend} vs ${lab.backend}` };
  }
  return worst;
}

/**
 * X·W for X [B, n, E] and W [E, d] (row-major, "keras" layout), computed by
 * the library: an MHA with embedDim d, one head, key and value width E, no
 * bias, W_V = W and W_O = I, whose query i may see only key i (a diagonal
 * keep mask). Each row's softmax then puts weight exactly 1 on v_i = x_i·W,
 * and W_O = I passes it through, so the output is X·W from the library's
 * own linear kernels. The page multiplies nothing.
 * @returns {Promise<Float32Array>} [B, n, d]
 */
export async function libraryProjection(lab, objects, { x, B, n, E, w, d, tag, seed }) {
  const it = objects._get(`proj-${tag}`, lab, { E, d, seed }, () => {
    const m = lab.multiHeadAttention({ embedDim: d, numHeads: 1, kdim: E, vdim: E, bias: false, seed });
    const eye = new Float32Array(d * d);
    for (let k = 0; k < d; k++) eye[k * d + k] = 1;
    m.setWeights({ wv: { data: w, shape: [E, d] }, wo: { data: eye, shape: [d, d] } }, { layout: 'keras' });
    return m;
  });
  if (it.w !== w) {
    if (it.w) it.obj.setWeights({ wv: { data: w, shape: [E, d] } }, { layout: 'keras' });
    it.w = w;
  }
  const keep = new Float32Array(n * n);
  for (let i = 0; i < n; i++) keep[i * n + i] = 1;
  const r = await it.obj.forward({ data: new Float32Array(B * n * d), shape: [B, n, d] }, { data: x, shape: [B, n, E] }, { data: x, shape: [B, n, E] },
    { mask: { kind: 'keep', data: keep, shape: [n, n] }, needWeights: false });
  return r.output.data;
}

/** The seeded chapter 2 matrices W_Q [E, d_k], W_K [E, d_k], W_V [E, d_v] (Xavier-uniform). */
let lastWeights = null;
export function projectionWeights(E, dk, dv, seed) {
  const key = `${E},${dk},${dv},${seed}`;
  if (lastWeights?.key !== key) lastWeights = { key, value: { wq: xavier(E, dk, mixSeed(seed, 101)), wk: xavier(E, dk, mixSeed(seed, 102)), wv: xavier(E, dv, mixSeed(seed, 103)) } };
  return lastWeights.value;
}

/**
 * The chapter 2 projections W_Q [E, d_k], W_K [E, d_k], W_V [E, d_v] (seeded
 * Xavier-uniform, as the tutorial's torch.randn-initialised matrices but
 * scaled) and Q, K, V = X·W for the whole batch, computed by the library →
 * { wq, wk, wv, q, k, v } with q, k [B, L, d_k], v [B, L, d_v].
 */
export async function projections(lab, objects, inp, state, cache) {
  const { B, L, E, x } = inp;
  const { dk, dv, seed } = state;
  const key = JSON.stringify([cache.inputs?.key, dk, dv, seed, lab.backend]);
  if (cache.proj?.key === key) return cache.proj.value;
  const { wq, wk, wv } = projectionWeights(E, dk, dv, seed);
  const p = (w, d, tag) => libraryProjection(lab, objects, { x, B, n: L, E, w, d, tag, seed });
  const q = await p(wq, dk, 'q');
  const k = await p(wk, dk, 'k');
  const v = await p(wv, dv, 'v');
  const value = { wq, wk, wv, q, k, v, dk, dv };
  cache.proj = { key, value };
  return value;
}
