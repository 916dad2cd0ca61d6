// Whole models on the webgpu backend (lab.loadModel / lab.pretrained on a
// webgpu lab; web/lib/model/gpu.js uploads the weights): the block graph of
// the C++ core (src/train/transformer_graph.cpp, TransformerConfig) recorded as
// one job of WGSL kernels: one submission, one readback of what was asked.
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
//   hidden = FinalNorm(x_N) (pre-norm) or x_N; MLM: t = LN(GELU(hidden·Wt + bt))
//   logits = (t or hidden)·Wh + bh (Wh = Emb when tied)                 [L, V]
//   finalSoftcap: logits = c·tanh(logits/c)
//
// The model's wasm copy (the same Model) answers everything else (forwardSync,
// nextTokens, generate over the KV cache) and, after a device loss, forward
// too: modelForward then resolves to null. The RoPE cos/sin tables come from
// the C++ core through the wasm backend (one source); the attention is the
// MHA recording of webgpu-attention.js (GQA heads by index arithmetic).
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
import { gpuUnsupportedFields, keptHalfOnGpu } from './webgpu-graph-fields.js';

// The gated MLP activations (glu.wgsl): act(Wg·n)·(W1·n + b1).
const GATED = new Set(['swiglu', 'geglu', 'geglu_tanh']);

/** The head dim D: headDim, or E/H. */
function headDimOf(spec) {
  return spec.core.headDim || spec.embedDim / spec.numHeads;
}

/** Layer l attends through the sliding window (the core's IsLocal: every layer without layerKinds). */
function isLocal(core, l) {
  if (!(core.slidingWindow > 0)) return false;
  return !core.layerKinds || core.layerKinds[l] === 'l';
}

/**
 * What a whole model's out-of-memory error says: the model (its type when the spec names it,
 * and its sizes), the input, the weights it holds on the GPU, and what to change.
 */
export function outOfMemoryAdvice(m, L, want, weightBytes) {
  const s = m.spec;
  const kind = s.modelType ?? s.name ?? 'the model';
  const model = `${kind} (${s.numLayers} layers, E ${s.embedDim}, ${s.numHeads} heads, vocabulary ${s.vocabSize})`;
  const mb = (weightBytes / 2 ** 20).toFixed(0);
  return `running ${model} on ${L} tokens, with ${mb} MB of its weights on the GPU; use a shorter input${want.attentions ? ', attentions: false' : ''}, or load the model on a wasm lab (init({ backend: 'wasm' }))`;
}

/**
 * @typedef {object} GpuModelSpec
 * @property {number} numLayers
 * @property {number} numHeads
 * @property {number} numKvHeads
 * @property {number} embedDim
 * @property {number} ffnDim
 * @property {number} vocabSize
 * @property {number} maxPositions rows of the learned position table
 * @property {number} maxLength longest input (the RoPE tables' rows)
 * @property {number} [typeVocab] rows of BERT's token-type table
 * @property {number} eps
 * @property {Record<string, any>} core the architecture table's block fields (architectures.js)
 */

/**
 * @param {any} rt the GpuRuntime
 * @param {ReturnType<typeof import('./webgpu-device-loss.js').createDeviceLoss>} dl
 */
export function createGpuModels(rt, dl) {
  const { state, run, loadWasm } = dl;

  function record(job, m, ids, want) {
    const { numLayers: N, numHeads: H, numKvHeads: Hkv, embedDim: E, ffnDim: F, vocabSize: V, core } = m.spec;
    const eps = Math.fround(m.spec.eps);
    const L = ids.length;
    const D = headDimOf(m.spec);
    const g = (name) => m.buffers.get(name) ?? null; // null: the model has no such tensor (a bias)
    const rows = (name, n) => job.storage(name, [1, L, n], L * n);
    const layerNorm = (x, y, prefix, residual = null) => ops.addLayerNorm(job, {
      x, residual, gamma: g(`${prefix}.weight`), beta: g(`${prefix}.bias`), y, rows: L, dim: E, eps,
    });
    // The block graph's Norm: RMSNorm (pre-norm only) or LayerNorm.
    const norm = (x, y, prefix, residual = null) => (core.norm === 'rmsnorm'
      ? ops.rmsNorm(job, { x, weight: g(`${prefix}.weight`), y, rows: L, dim: E, eps })
      : layerNorm(x, y, prefix, residual));

    let x = rows('the embeddings', E);
    ops.embedding(job, {
      ids: job.input('the token ids', [L], Uint32Array.from(ids)), word: g('embed.weight'),
      pos: core.positional === 'learned' ? g('pos.weight') : null, types: g('type.weight'), x,
      rows: L, dim: E, vocab: V, positions: m.spec.maxPositions, typeCount: m.spec.typeVocab ?? 0,
      scale: Math.fround(core.embedScale ?? 1),
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
      rope: m.rope ? { rotaryDim: R, interleaved: false } : null,
    };
    // The RoPE rows of positions 0 … L−1: the global table, or the local layers' own.
    const ropeRows = (t) => ({ rope: { cos: t.cos.subarray(0, (L * R) / 2), sin: t.sin.subarray(0, (L * R) / 2) } });
    const extra = m.rope ? ropeRows(m.rope) : {};
    const localExtra = m.ropeLocal ? ropeRows(m.ropeLocal) : extra;
    const base = { batch: 1, lq: L, lk: L, needWeights: want.attentions, trace: false };
    const p = { ...base, mask: { causal: core.causal } };
    // A local layer's mask (the core's LocalMaskView): causal, and the window i − W < j ≤ i;
    // bidirectional (an encoder's): |i − j| < W.
    const W = core.slidingWindow;
    const pLocal = { ...base, mask: { causal: core.causal, window: true, windowLeft: W - 1, windowRight: core.causal ? 0 : W - 1 } };
    const attentions = [];
    for (let l = 0; l < N; l++) {
      const b = `blocks.${l}.`;
      const w = (key) => g(`${b}attn.${key}`);
      const obj = {
        cfg: mhaCfg,
        gpu: {
          wq: w('wq'), bq: w('bq'), wk: w('wk'), bk: w('bk'), wv: w('wv'), bv: w('bv'), wo: w('wo'), bo: w('bo'),
          qNorm: core.qkNorm ? w('q_norm.weight') : null, kNorm: core.qkNorm ? w('k_norm.weight') : null,
        },
      };
      const local = isLocal(core, l);
      const attend = (input) => recordMha(job, obj, local ? pLocal : p, input, input, input, local ? localExtra : extra);
      const mlp = (input) => {
        ops.linear(job, { x: input, m: L, k: E, w: g(`${b}ffn.w1`), bias: g(`${b}ffn.b1`), n: F, y: f1 });
        if (gated) {
          ops.linear(job, { x: input, m: L, k: E, w: g(`${b}ffn.wg`), bias: g(`${b}ffn.bg`), n: F, y: fg });
          ops.glu(job, fg, f1, L * F, core.activation);
        } else {
          ops.gelu(job, f1, L * F, core.activation === 'gelu_new');
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
      if (core.prenorm) {
        // firstNorm1 false: block 0 attends to x itself (no norm1).
        const identity = l === 0 && core.firstNorm1 === false;
        if (!identity) norm(x, n1, `${b}norm1`);
        const mha = attend(identity ? x : n1);
        weights = mha.weights;
        const h = core.sandwichNorm ? postNorm(mha.out, 'post_attn_norm') : mha.out;
        ops.residualAdd(job, x, h, L * E); // h = x + a
        norm(core.parallelResidual ? x : h, n2, `${b}norm2`);
        const f2 = core.sandwichNorm ? postNorm(mlp(n2), 'post_ffn_norm') : mlp(n2);
        ops.residualAdd(job, h, f2, L * E); // x' = h + f2
        x = f2;
      } else {
        const mha = attend(x);
        weights = mha.weights;
        const h = rows('the block\'s first norm', E);
        layerNorm(x, h, `${b}norm1`, mha.out);
        const f2 = mlp(h);
        const y = rows('the block output', E);
        layerNorm(h, y, `${b}norm2`, f2);
        x = y;
      }
      if (want.attentions) attentions.push(weights);
    }
    let hidden = x;
    if (core.prenorm) {
      hidden = rows('the final norm', E);
      norm(x, hidden, 'final_norm');
    }
    let headIn = hidden;
    if (core.mlmHead) {
      const t = rows('the MLM transform', E);
      ops.linear(job, { x: hidden, m: L, k: E, w: g('mlm.dense.weight'), bias: g('mlm.dense.bias'), n: E, y: t });
      ops.gelu(job, t, L * E, false);
      headIn = rows('the MLM head input', E);
      layerNorm(t, headIn, 'mlm.norm');
    }
    const reads = [];
    if (core.hasHead !== false) {
      const logits = job.storage('the logits', [1, L, V], L * V);
      ops.linear(job, { x: headIn, m: L, k: E, w: core.tieEmbeddings ? g('embed.weight') : g('head.weight'), bias: g('head.bias'), n: V, y: logits });
      if (core.finalSoftcap > 0) ops.logitSoftcap(job, logits, L * V, Math.fround(core.finalSoftcap));
      job.read(logits, L * V);
      reads.push('logits');
    }
    for (const a of attentions) job.read(a, H * L * L);
    if (want.hiddenStates) job.read(hidden, L * E);
    return reads;
  }

  // The block graph's fields (src/train/train.h) that have no GPU path here
  // yet (webgpu-graph-fields.js, the rule loadModel asks first): a model that
  // uses one is refused (it runs on a wasm lab).
  function refuseGraphFields(spec) {
    const core = spec.core ?? {};
    const off = gpuUnsupportedFields(spec);
    if (off.length) {
      const list = off.map(({ field }) => `${field} ${JSON.stringify(core[field])}`).join(', ');
      throw new Error(`loadModel: the webgpu backend does not run ${list} yet; load this model on a wasm lab (init({ backend: 'wasm' }))`);
    }
  }

  const methods = {
    /**
     * A model's GPU side, empty: fill it with modelUpload. Resolves once the
     * RoPE tables (RoPE models) have come from the C++ core.
     * @param {GpuModelSpec} spec
     */
    async modelCreate(spec) {
      refuseGraphFields(spec);
      const m = { spec, buffers: new Map(), rope: null, ropeLocal: null, disposed: false };
      const core = spec.core;
      if (core.positional === 'rope') {
        // As the core's Bind: frequencies over R = rotaryDim (or D); the local
        // layers' own table when ropeLocalTheta is set and a layer is local.
        const R = core.rotaryDim || headDimOf(spec);
        const n = spec.maxLength;
        const fb = await loadWasm('the RoPE cos/sin tables need the wasm backend');
        const table = (base) => fb.op('rotaryCache', { maxPosition: n, rotaryDim: R, base }, { cos: (n * R) / 2, sin: (n * R) / 2 });
        m.rope = await table(core.ropeTheta);
        const anyLocal = Array.from({ length: spec.numLayers ?? 0 }, (_, l) => isLocal(core, l)).some(Boolean);
        if (core.ropeLocalTheta > 0 && anyLocal) m.ropeLocal = await table(core.ropeLocalTheta);
      } else if (spec.core.positional !== 'learned') {
        throw new Error(`webgpu: internal: no GPU path for positional ${JSON.stringify(spec.core.positional)}`);
      }
      return m;
    },

    /**
     * Uploads one tensor of the block graph (`name`, shape for messages) into a persistent
     * buffer: float32 values, or with `half` ('F16' / 'BF16') 16-bit ones, padded to an even
     * count, for the tensors keptHalfOnGpu names (the kernels read them through
     * include/half_weights.wgsl: the buffer's `half`).
     */
    modelUpload(m, where, name, shape, data, half) {
      if (m.disposed) throw new Error(`${where}: internal: upload into a disposed model`);
      if (half !== undefined && !((half === 'F16' || half === 'BF16') && keptHalfOnGpu(name) && data instanceof Uint16Array && data.length % 2 === 0)) {
        throw new Error(`${where}: internal: tensor ${name} cannot be held as ${half} on the GPU`);
      }
      rt.checkBuffer(where, `tensor ${name}`, shape, data.byteLength, 'load the model on a wasm lab (init({ backend: \'wasm\' }))');
      if (state.lost) return; // forward answers from the wasm copy from now on
      rt.destroyPersistent(m.buffers.get(name));
      const b = rt.createPersistent(name, data);
      if (half) b.half = half;
      m.buffers.set(name, b);
    },

    /** Bytes of the model's GPU buffers. */
    modelBytes(m) {
      let n = 0;
      for (const b of m.buffers.values()) n += b.size;
      return n;
    },

    /**
     * One forward pass on the GPU: { logits [L·V] | null, attentions: [H·L·L] per layer | null,
     * hidden [L·E] | null }, or null once calls go to the wasm backend (device lost): the
     * caller then runs its wasm copy. ids are validated by the caller (the Model).
     * @param {any} m
     * @param {Int32Array} ids
     * @param {{ attentions: boolean, hiddenStates: boolean }} want
     */
    modelForward(m, ids, want) {
      const where = 'model.forward';
      return run(async () => {
        const job = rt.job(where, { oom: outOfMemoryAdvice(m, ids.length, want, methods.modelBytes(m)) });
        let reads;
        try {
          reads = record(job, m, ids, want);
        } catch (err) {
          job.abort();
          throw err;
        }
        const out = await job.submit();
        const logits = reads.length ? out.shift() : null;
        const attentions = want.attentions ? out.splice(0, m.spec.numLayers) : null;
        return { logits, attentions, hidden: want.hiddenStates ? out.shift() : null };
      }, () => null);
    },

    /** Frees the model's GPU buffers. */
    modelDispose(m) {
      if (m.disposed) return;
      m.disposed = true;
      for (const b of m.buffers.values()) rt.destroyPersistent(b);
      m.buffers.clear();
    },
  };
  return { methods };
}
