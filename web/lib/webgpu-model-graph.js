// The block graph of the C++ core (src/train/transformer_graph.cpp,
// TransformerConfig) recorded as WGSL kernels into one job, for the whole
// models of webgpu-model.js (its buffers and tables: m.buffers, m.stacks).
//
//   x0 = Emb[ids]·embedScale + Pos (+ Type[0]); embedNorm: x0 = LN(x0)  [L, E]
//   pre-norm block:  n1 = Norm1(x) (block 0 with firstNorm1 false: x);
//                    a = MHA(n1); h = x + a; n2 = Norm2(h); x' = h + MLP(n2)
//     parallelResidual: n2 = Norm2(x)
//     sandwichNorm: h = x + PostAttnNorm(a); x' = h + PostFfnNorm(MLP(n2))
//   post-norm block: h = LN1(x + MHA(x)); x' = LN2(h + MLP(h))
//   MHA (webgpu-attention.js recordMha): headDim D, qkNorm (an RMSNorm of
//     each head's q and k before RoPE), attnScale, attnSoftcap, RoPE on the
//     first rotaryDim dims; local layers (slidingWindow, layerKinds 'l')
//     attend to keys i − W < j ≤ i (bidirectional: |i − j| < W), with the
//     ropeLocalTheta table when set
//   MLP: W2·act(W1·n + b1) + b2, act GELU / gelu_new, or a gated one:
//     act(Wg·n + bg)·(W1·n + b1), SiLU (swiglu) or GELU (geglu, geglu_tanh)
//   Norm: RMSNorm, or LayerNorm (without β with normBias false); a bias the
//     model lacks (mlmBias false, no gateBias …) is simply not added
//   MLP act: GELU / gelu_new / ReLU / SiLU (activation.wgsl)
//   hidden = FinalNorm(x_N) (pre-norm) or x_N; MLM: t = LN(GELU(hidden·Wt + bt))
//   logits = (t or hidden)·headScale·Wh + bh (Wh = Emb when tied)       [L, V]
//   finalSoftcap: logits = c·tanh(logits/c)
// Positions: learned (pos.weight), the sinusoid (sinusoidHalves: Marian's
// sin | cos halves), RoPE, or none (T5); relativeBuckets: T5's bias table
// gathered by bucket of j − i (embedding.wgsl) into [L·L, H], added to every
// self-attention's scores as the additive mask (causal as it is).
// An encoder-decoder (spec.encoder; names 'encoder:…' / 'decoder:…'): the
// encoder's stack on the source, then the decoder's, whose crossAttention
// blocks read the encoder's output (the memory, Le rows) through the same
// MHA recording with separate query and key/value inputs (the core's
// CrossAttention: the score scale, no mask, no RoPE):
//     post-norm  c = NormX(h + XMHA(h, mem)); x' = Norm2(c + MLP(c))
//     pre-norm   c = h + XMHA(NormX(h), mem); x' = c + MLP(Norm2(c))
// then the decoder's head; one job (modelForwardEncDec).
//
// Weights arrive by the block graph's names (`embed.weight`, `blocks.0.attn.wq`,
// …), every matrix in keras layout [in, out] (what linear.wgsl reads),
// the embedding tables [E, V|P|T] included; vectors as they are. From an
// F16/BF16 file the projections, the head and the word table arrive as their
// 16-bit values (a buffer's `half`), which linear.wgsl and embedding.wgsl
// widen as they read them.
// Shape legend: L sequence (batch 1), E embed, H heads, Hkv kv heads,
// D head dim, R rotary dim, F MLP width, V vocabulary, W window.
import * as ops from './webgpu-ops.js';
import { recordMha } from './webgpu-attention.js';

// The gated MLP activations (glu.wgsl): act(Wg·n)·(W1·n + b1).
const GATED = new Set(['swiglu', 'geglu', 'geglu_tanh']);

/** The head dim D: headDim, or E/H. */
export function headDimOf(spec) {
  return spec.core.headDim || spec.embedDim / spec.numHeads;
}

/** Layer l attends through the sliding window (the core's IsLocal: every layer without layerKinds). */
export function isLocal(core, l) {
  if (!(core.slidingWindow > 0)) return false;
  return !core.layerKinds || core.layerKinds[l] === 'l';
}

/**
 * One stack of blocks (a decoder-only model's, or an encoder-decoder's
 * encoder or decoder: st), from the embeddings to the final norm, recorded
 * into `job`: { hidden [L, E], attentions (per layer [H, L, L]),
 * cross (per layer [H, L, Le]) }. memory: the encoder's rows { t, rows: Le }
 * that a crossAttention stack reads.
 */
function recordStack(job, m, st, ids, want, memory = null) {
  const { numLayers: N, numHeads: H, numKvHeads: Hkv, ffnDim: F, core } = st;
  const { embedDim: E, vocabSize: V } = m.spec;
  const eps = Math.fround(m.spec.eps);
  const L = ids.length;
  const D = headDimOf(st);
  const g = (name) => m.buffers.get(st.prefix + name) ?? null; // null: the model has no such tensor (a bias)
  const rows = (name, n) => job.storage(name, [1, L, n], L * n);
  const layerNorm = (x, y, prefix, residual = null) => ops.addLayerNorm(job, {
    x, residual, gamma: g(`${prefix}.weight`), beta: g(`${prefix}.bias`), y, rows: L, dim: E, eps,
  });
  // The block graph's Norm: RMSNorm (pre-norm only) or LayerNorm.
  const norm = (x, y, prefix, residual = null) => (core.norm === 'rmsnorm'
    ? ops.rmsNorm(job, { x, weight: g(`${prefix}.weight`), y, rows: L, dim: E, eps })
    : layerNorm(x, y, prefix, residual));

  let x = rows('the embeddings', E);
  // Positions: the learned table, or the sinusoid (computed at modelCreate), both [E, P].
  const pos = core.positional === 'learned' ? g('pos.weight') : core.positional === 'sinusoidal' ? st.sinusoid : null;
  ops.embedding(job, {
    ids: job.input('the token ids', [L], Uint32Array.from(ids)), word: g('embed.weight'),
    pos, types: g('type.weight'), x, rows: L, dim: E, vocab: V,
    positions: core.positional === 'sinusoidal' ? m.spec.maxLength : m.spec.maxPositions,
    typeCount: m.spec.typeVocab ?? 0, scale: Math.fround(core.embedScale ?? 1),
  });
  if (core.embedNorm) {
    const y = rows('the normalised embeddings', E);
    layerNorm(x, y, 'embed_norm');
    x = y;
  }
  const gated = GATED.has(core.activation);
  const n1 = rows('the attention input', E);
  const n2 = rows('the MLP input', E);
  const f1 = rows('the MLP hidden rows', F);
  const fg = gated ? rows('the MLP gates', F) : null;
  const R = core.rotaryDim || D;
  const mhaCfg = {
    embedDim: E, numHeads: H, numKvHeads: Hkv, kdim: E, vdim: E, headDim: D,
    scale: core.attnScale ? Math.fround(core.attnScale) : 0,
    softcap: core.attnSoftcap > 0 ? Math.fround(core.attnSoftcap) : 0,
    normEps: eps,
    rope: st.rope ? { rotaryDim: R, interleaved: false } : null,
  };
  // The cross-attention (the core's CrossAttention): queries from the block's rows, keys
  // and values projected from the memory; the score scale, no RoPE, no q/k norms, no mask.
  const xCfg = { ...mhaCfg, softcap: 0, rope: null };
  // The RoPE rows of positions 0 … L−1: the global table, or the local layers' own.
  const ropeRows = (t) => ({ rope: { cos: t.cos.subarray(0, (L * R) / 2), sin: t.sin.subarray(0, (L * R) / 2) } });
  let extra = st.rope ? ropeRows(st.rope) : {};
  const localExtra = st.ropeLocal ? ropeRows(st.ropeLocal) : extra;
  if (core.relativeBuckets > 0) {
    // T5's relative position bias (the core's RelativeBias): row bucket(j − i) of the table
    // [buckets, H] (on the GPU [H, buckets], a word table for embedding.wgsl) for every
    // query i and key j: [L·L, H], read as the scores' additive bias [H, L, L] by strides.
    const n = m.spec.maxLength;
    const bucketIds = new Uint32Array(L * L);
    for (let i = 0; i < L; i++) for (let j = 0; j < L; j++) bucketIds[i * L + j] = st.buckets[j - i + n - 1];
    const t = job.storage('the relative position bias', [L, L, H], L * L * H);
    ops.embedding(job, {
      ids: job.input('the relative position buckets', [L, L], bucketIds), word: g('rel_bias.weight'),
      pos: null, types: null, x: t, rows: L * L, dim: H, vocab: core.relativeBuckets,
    });
    extra = { ...extra, bias: { t, strides: [0, 1, L * H, H] } };
  }
  const base = { batch: 1, lq: L, lk: L, needWeights: want.attentions, trace: false };
  const p = { ...base, mask: { causal: core.causal } };
  // A local layer's mask (the core's LocalMaskView): causal, and the window i − W < j ≤ i;
  // bidirectional (an encoder's): |i − j| < W.
  const W = core.slidingWindow;
  const pLocal = { ...base, mask: { causal: core.causal, window: true, windowLeft: W - 1, windowRight: core.causal ? 0 : W - 1 } };
  const pCross = memory ? { ...base, lk: memory.rows, mask: { causal: false } } : null;
  const attentions = [];
  const cross = [];
  for (let l = 0; l < N; l++) {
    const b = `blocks.${l}.`;
    const mhaOf = (part, cfg, qkNorm) => {
      const w = (key) => g(`${b}${part}.${key}`);
      return {
        cfg,
        gpu: {
          wq: w('wq'), bq: w('bq'), wk: w('wk'), bk: w('bk'), wv: w('wv'), bv: w('bv'), wo: w('wo'), bo: w('bo'),
          qNorm: qkNorm ? w('q_norm.weight') : null, kNorm: qkNorm ? w('k_norm.weight') : null,
        },
      };
    };
    const obj = mhaOf('attn', mhaCfg, core.qkNorm);
    const local = isLocal(core, l);
    const attend = (input) => recordMha(job, obj, local ? pLocal : p, input, input, input, local ? localExtra : extra);
    // The same MHA recording with separate query and key/value inputs.
    const attendMemory = (input) => recordMha(job, mhaOf('xattn', xCfg, false), pCross, input, memory.t, memory.t);
    const mlp = (input) => {
      ops.linear(job, { x: input, m: L, k: E, w: g(`${b}ffn.w1`), bias: g(`${b}ffn.b1`), n: F, y: f1 });
      if (gated) {
        ops.linear(job, { x: input, m: L, k: E, w: g(`${b}ffn.wg`), bias: g(`${b}ffn.bg`), n: F, y: fg });
        ops.glu(job, fg, f1, L * F, core.activation);
      } else {
        ops.activation(job, f1, L * F, core.activation ?? 'gelu');
      }
      const f2 = rows('the MLP output', E);
      ops.linear(job, { x: f1, m: L, k: F, w: g(`${b}ffn.w2`), bias: g(`${b}ffn.b2`), n: E, y: f2 });
      return f2;
    };
    // sandwichNorm's post norms: Norm(y) into fresh rows.
    const postNorm = (y, prefix) => {
      const out = rows(`the ${prefix} output`, E);
      norm(y, out, `${b}${prefix}`);
      return out;
    };
    let weights;
    let xweights = null;
    if (core.prenorm) {
      // firstNorm1 false: block 0 attends to x itself (no norm1).
      const identity = l === 0 && core.firstNorm1 === false;
      if (!identity) norm(x, n1, `${b}norm1`);
      const mha = attend(identity ? x : n1);
      weights = mha.weights;
      let h = core.sandwichNorm ? postNorm(mha.out, 'post_attn_norm') : mha.out;
      ops.residualAdd(job, x, h, L * E); // h = x + a
      if (core.crossAttention) {
        // h += XMHA(NormX(h), memory)
        const xn = rows('the cross-attention input', E);
        norm(h, xn, `${b}norm_x`);
        const xa = attendMemory(xn);
        xweights = xa.weights;
        ops.residualAdd(job, h, xa.out, L * E);
        h = xa.out;
      }
      norm(core.parallelResidual ? x : h, n2, `${b}norm2`);
      const f2 = core.sandwichNorm ? postNorm(mlp(n2), 'post_ffn_norm') : mlp(n2);
      ops.residualAdd(job, h, f2, L * E); // x' = h + f2
      x = f2;
    } else {
      const mha = attend(x);
      weights = mha.weights;
      let h = rows('the block\'s first norm', E);
      layerNorm(x, h, `${b}norm1`, mha.out);
      if (core.crossAttention) {
        // c = NormX(h + XMHA(h, memory)); the MLP reads c
        const xa = attendMemory(h);
        xweights = xa.weights;
        const c = rows('the cross-attention norm', E);
        layerNorm(h, c, `${b}norm_x`, xa.out);
        h = c;
      }
      const f2 = mlp(h);
      const y = rows('the block output', E);
      layerNorm(h, y, `${b}norm2`, f2);
      x = y;
    }
    if (want.attentions) {
      attentions.push(weights);
      if (xweights) cross.push(xweights);
    }
  }
  let hidden = x;
  if (core.prenorm) {
    hidden = rows('the final norm', E);
    norm(x, hidden, 'final_norm');
  }
  return { hidden, attentions, cross };
}

/** The head of a stack (`st`, hidden [L, E] after its final norm): the logits [L, V], or null without one. */
function recordHead(job, m, st, hidden, L) {
  const { embedDim: E, vocabSize: V } = m.spec;
  const { core } = st;
  const g = (name) => m.buffers.get(st.prefix + name) ?? null;
  const rows = (name, n) => job.storage(name, [1, L, n], L * n);
  let headIn = hidden;
  if (core.mlmHead) {
    const t = rows('the MLM transform', E);
    ops.linear(job, { x: hidden, m: L, k: E, w: g('mlm.dense.weight'), bias: g('mlm.dense.bias'), n: E, y: t });
    ops.activation(job, t, L * E, 'gelu');
    headIn = rows('the MLM head input', E);
    ops.addLayerNorm(job, { x: t, residual: null, gamma: g('mlm.norm.weight'), beta: g('mlm.norm.bias'), y: headIn, rows: L, dim: E, eps: Math.fround(m.spec.eps) });
  }
  if (core.hasHead === false) return null;
  if (core.headScale !== undefined && core.headScale !== 1) {
    // T5's tied head: (xf·headScale)·Whᵀ
    const scaled = rows('the scaled head input', E);
    ops.scale(job, headIn, scaled, L * E, Math.fround(core.headScale));
    headIn = scaled;
  }
  const logits = job.storage('the logits', [1, L, V], L * V);
  ops.linear(job, { x: headIn, m: L, k: E, w: core.tieEmbeddings ? g('embed.weight') : g('head.weight'), bias: g('head.bias'), n: V, y: logits });
  if (core.finalSoftcap > 0) ops.logitSoftcap(job, logits, L * V, Math.fround(core.finalSoftcap));
  return logits;
}

export function recordModel(job, m, ids, want) {
  const st = m.stacks[0];
  const L = ids.length;
  const { hidden, attentions } = recordStack(job, m, st, ids, want);
  const logits = recordHead(job, m, st, hidden, L);
  const reads = [];
  if (logits) {
    job.read(logits, L * m.spec.vocabSize);
    reads.push('logits');
  }
  for (const a of attentions) job.read(a, st.numHeads * L * L);
  if (want.hiddenStates) job.read(hidden, L * m.spec.embedDim);
  return reads;
}

// An encoder-decoder: the encoder's stack on ids, its output the memory of the decoder's
// stack on decoderIds, the decoder's head; one job. Reads: logits [Ld·V], the encoder's
// attentions (per layer [He·Le·Le]), the decoder's ([H·Ld·Ld]) and its cross-attentions
// ([H·Ld·Le]) when asked, the encoder's output [Le·E].
export function recordEncDec(job, m, ids, decoderIds, want) {
  const [es, ds] = m.stacks;
  const Le = ids.length, Ld = decoderIds.length;
  const enc = recordStack(job, m, es, ids, want);
  const dec = recordStack(job, m, ds, decoderIds, want, { t: enc.hidden, rows: Le });
  const logits = recordHead(job, m, ds, dec.hidden, Ld);
  job.read(logits, Ld * m.spec.vocabSize);
  for (const a of enc.attentions) job.read(a, es.numHeads * Le * Le);
  for (const a of dec.attentions) job.read(a, ds.numHeads * Ld * Ld);
  for (const a of dec.cross) job.read(a, ds.numHeads * Ld * Le);
  job.read(enc.hidden, Le * m.spec.embedDim);
}
