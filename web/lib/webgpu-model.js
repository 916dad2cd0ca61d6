// Whole models on the webgpu backend (lab.loadModel / lab.pretrained on a
// webgpu lab; web/lib/model/gpu.js uploads the weights): a model's GPU
// buffers, the tables its config computes (from the C++ core through the
// wasm backend: RoPE, the sinusoid, T5's buckets) and its forward, the block
// graph recorded as one job of WGSL kernels (webgpu-model-graph.js): one
// submission, one readback of what was asked. An encoder-decoder (spec.encoder)
// holds two stacks, 'encoder:…' and 'decoder:…', run in one job
// (modelForwardEncDec).
//
// The model's wasm copy (the same Model) answers everything else (forwardSync,
// nextTokens, generate over the KV cache) and, after a device loss, forward
// too: modelForward then resolves to null.
//
// Weights arrive by the block graph's names (`embed.weight`, `blocks.0.attn.wq`,
// …), every matrix in keras layout [in, out] (what linear.wgsl reads),
// the embedding tables [E, V|P|T] included; vectors as they are. From an
// F16/BF16 file the projections, the head and the word table arrive as their
// 16-bit values (a buffer's `half`), which linear.wgsl and embedding.wgsl
// widen as they read them.
// Shape legend: L sequence (batch 1), E embed, H heads, P positions, R rotary dim.
import { recordModel, recordEncDec, headDimOf, isLocal } from './webgpu-model-graph.js';
import { gpuUnsupportedFields, keptHalfOnGpu } from './webgpu-graph-fields.js';

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
 * @property {{ numLayers: number, numHeads: number, numKvHeads?: number, ffnDim: number, core: Record<string, any> }} [encoder]
 *   an encoder-decoder's encoder stack (the spec's own sizes are then the decoder's)
 */

/**
 * @param {any} rt the GpuRuntime
 * @param {ReturnType<typeof import('./webgpu-device-loss.js').createDeviceLoss>} dl
 */
export function createGpuModels(rt, dl) {
  const { state, run, loadWasm } = dl;

  /**
   * One stack's sizes and the tables the core computes from its config (as
   * Transformer::Impl::Bind), asked of the C++ core through the wasm backend
   * (one source): the RoPE cos/sin tables, the sinusoid (uploaded [E, P], in
   * Marian's sin | cos halves with sinusoidHalves) and T5's bucket of every
   * key − query distance ([2·maxLength − 1], distance −(maxLength − 1) first).
   */
  async function stackOf(m, prefix, s) {
    const spec = m.spec;
    const core = s.core;
    const st = {
      prefix, numLayers: s.numLayers, numHeads: s.numHeads, numKvHeads: s.numKvHeads ?? s.numHeads, ffnDim: s.ffnDim,
      embedDim: spec.embedDim, core, rope: null, ropeLocal: null, sinusoid: null, buckets: null,
    };
    const n = spec.maxLength;
    const E = spec.embedDim;
    if (core.positional === 'rope') {
      // As the core's Bind: frequencies over R = rotaryDim (or D); the local
      // layers' own table when ropeLocalTheta is set and a layer is local.
      const R = core.rotaryDim || headDimOf(st);
      const fb = await loadWasm('the RoPE cos/sin tables need the wasm backend');
      const table = (base) => fb.op('rotaryCache', { maxPosition: n, rotaryDim: R, base }, { cos: (n * R) / 2, sin: (n * R) / 2 });
      st.rope = await table(core.ropeTheta);
      const anyLocal = Array.from({ length: st.numLayers ?? 0 }, (_, l) => isLocal(core, l)).some(Boolean);
      if (core.ropeLocalTheta > 0 && anyLocal) st.ropeLocal = await table(core.ropeLocalTheta);
    } else if (core.positional === 'sinusoidal') {
      const fb = await loadWasm('the sinusoidal positions need the wasm backend');
      const pe = (await fb.op('positionalEncoding', { seqLen: n, dModel: E, base: 10000 }, { out: n * E })).out; // [P, E]
      // Marian's layout (the core's Bind with sinusoid_halves): the sines of the column pairs
      // (2i) in the first ceil(E/2) columns, their cosines (2i + 1) after them.
      const first = Math.ceil(E / 2);
      const col = (j) => (!core.sinusoidHalves ? j : j < first ? 2 * j : 2 * (j - first) + 1);
      const table = new Float32Array(E * n); // [E, P]
      for (let j = 0; j < E; j++) {
        const from = col(j);
        for (let q = 0; q < n; q++) table[j * n + q] = pe[q * E + from];
      }
      if (!state.lost) {
        st.sinusoid = rt.createPersistent(`${prefix}the sinusoid`, table);
        m.buffers.set(`${prefix}the sinusoid`, st.sinusoid);
      }
    } else if (core.positional !== 'learned' && core.positional !== 'none') {
      throw new Error(`webgpu: internal: no GPU path for positional ${JSON.stringify(core.positional)}`);
    }
    if (core.relativeBuckets > 0) {
      const fb = await loadWasm("T5's relative position buckets need the wasm backend");
      const args = { maxLength: n, buckets: core.relativeBuckets, maxDistance: core.relativeMaxDistance ?? 128, bidirectional: !core.causal };
      st.buckets = Uint32Array.from((await fb.op('relativeBuckets', args, { out: 2 * n - 1 })).out);
    }
    return st;
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
     * tables computed from the config (RoPE, the sinusoid, T5's buckets) have
     * come from the C++ core. spec.encoder (an encoder-decoder): the encoder's
     * { numLayers, numHeads, ffnDim, core }; spec's own sizes are the decoder's.
     * @param {GpuModelSpec} spec
     */
    async modelCreate(spec) {
      refuseGraphFields(spec);
      if (spec.encoder) refuseGraphFields({ ...spec, ...spec.encoder });
      const m = { spec, buffers: new Map(), stacks: [], disposed: false };
      // An encoder-decoder's two stacks: their tensors' names start with 'encoder:' / 'decoder:'.
      const parts = spec.encoder
        ? [['encoder:', { numKvHeads: spec.encoder.numHeads, ...spec.encoder }], ['decoder:', spec]]
        : [['', spec]];
      try {
        for (const [prefix, s] of parts) m.stacks.push(await stackOf(m, prefix, s));
      } catch (err) {
        methods.modelDispose(m);
        throw err;
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
          reads = recordModel(job, m, ids, want);
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

    /**
     * One forward pass of an encoder-decoder on the GPU (one job, one submission): { logits
     * [Ld·V], encoderAttentions (per encoder layer [He·Le·Le]), decoderAttentions ([H·Ld·Ld])
     * and crossAttentions ([H·Ld·Le]) per decoder layer (null without want.attentions),
     * encoderHidden [Le·E] }, or null once calls go to the wasm backend (device lost). ids and
     * decoderIds are validated by the caller (the EncoderDecoderModel).
     * @param {any} m
     * @param {Int32Array} ids
     * @param {Int32Array} decoderIds
     * @param {{ attentions: boolean }} want
     */
    modelForwardEncDec(m, ids, decoderIds, want) {
      const where = 'model.forward';
      if (m.stacks.length !== 2) throw new Error(`${where}: internal: not an encoder-decoder model`);
      return run(async () => {
        const L = Math.max(ids.length, decoderIds.length);
        const job = rt.job(where, { oom: outOfMemoryAdvice(m, L, want, methods.modelBytes(m)) });
        try {
          recordEncDec(job, m, ids, decoderIds, want);
        } catch (err) {
          job.abort();
          throw err;
        }
        const out = await job.submit();
        const [es, ds] = m.stacks;
        const logits = out.shift();
        const take = (n) => (want.attentions ? out.splice(0, n) : null);
        const encoderAttentions = take(es.numLayers);
        const decoderAttentions = take(ds.numLayers);
        const crossAttentions = take(ds.numLayers);
        return { logits, encoderAttentions, decoderAttentions, crossAttentions, encoderHidden: out.shift() };
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
