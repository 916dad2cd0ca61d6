// The module objects (MHA, layer) and KV caches of the webgpu backend:
// weight mirroring. Each object keeps a CPU copy of its weights (keras
// layout [in, out]) that answers getWeights and seeds the wasm fallback, the
// GPU buffers the kernels read, and — once the wasm backend answers for it
// (after a device loss, or for KV-cache decode steps) — a wasm copy.
import { WEIGHT_KEYS, inDim, outDim, toKeras, fromKeras } from './webgpu-host.js';

/**
 * @typedef {object} GpuModule
 * @property {'mha'|'layer'} kind
 * @property {import('./backend.js').LayerConfigArgs} cfg
 * @property {Record<string, Float32Array>} w CPU copy, keras layout
 * @property {Float32Array} [gamma]
 * @property {Float32Array} [beta]
 * @property {Record<string, any> | null} gpu persistent GPU buffers
 * @property {any} wasm the wasm backend's handle, once made
 * @property {boolean} disposed
 */
/** @typedef {{ kind: 'kvcache', batch: number, maxLength: number, wasm: any }} GpuCache */

/**
 * The module and cache methods of the Backend interface.
 * @param {any} rt the GpuRuntime
 * @param {ReturnType<typeof import('./webgpu-device-loss.js').createDeviceLoss>} dl
 */
export function createGpuModules(rt, dl) {
  const { state } = dl;

  // The default weights, from the wasm core (MultiHeadAttention::Create: the
  // seeded Xavier init and the size budget live there once): a wasm MHA with
  // the same configuration, read in keras layout, then freed.
  function defaultWeights(where, cfg) {
    const fb = state.wasm;
    if (!fb) throw new Error(`${where}: the webgpu backend needs its wasm backend (the fallback) for the default weights; create it with a fallback`);
    const h = fb.createMha({ ...cfg, kdim: cfg.kdim ?? cfg.embedDim, vdim: cfg.vdim ?? cfg.embedDim });
    try {
      /** @type {Record<string, Float32Array>} */
      const w = {};
      for (const key of WEIGHT_KEYS) {
        if (key[0] === 'b' && !cfg.bias) continue;
        const n = key[0] === 'b' ? outDim(cfg, key) : inDim(cfg, key) * outDim(cfg, key);
        w[key] = fb.getWeight(h, key, 'keras', n);
      }
      return w;
    } finally {
      fb.destroy(h);
    }
  }

  function checkWeights(where, cfg) {
    const E = cfg.embedDim;
    for (const key of ['wq', 'wk', 'wv', 'wo']) {
      const n = outDim(cfg, key);
      rt.checkBuffer(where, key, [inDim(cfg, key), n], inDim(cfg, key) * n * 4);
    }
  }

  function upload(obj) {
    if (state.lost) return;
    const gpu = {};
    for (const key of WEIGHT_KEYS) if (obj.w[key]) gpu[key] = rt.createPersistent(key, obj.w[key]);
    if (obj.kind === 'layer') {
      gpu.gamma = rt.createPersistent('gamma', obj.gamma);
      gpu.beta = rt.createPersistent('beta', obj.beta);
    }
    obj.gpu = gpu;
  }

  /** The wasm copy of obj in backend fb, made on first use. */
  function wasmObject(fb, obj) {
    if (!obj.wasm) {
      obj.wasm = obj.kind === 'mha' ? fb.createMha(obj.cfg) : fb.createLayer(obj.cfg);
      for (const key of WEIGHT_KEYS) if (obj.w[key]) fb.setWeight(obj.wasm, key, obj.w[key], 'keras');
      if (obj.kind === 'layer') fb.setNorm(obj.wasm, obj.gamma, obj.beta);
    }
    return obj.wasm;
  }

  /** @type {Pick<import('./backend.js').Backend<GpuModule, GpuCache>, 'createMha'|'createLayer'|'destroy'|'heldBytes'|'setWeight'|'getWeight'|'setNorm'|'getNorm'|'createKvCache'|'kvCacheReset'|'kvCacheTruncate'|'kvCacheHeldBytes'|'kvCacheDestroy'>} */
  const methods = {
    createMha(cfg) {
      checkWeights('multiHeadAttention', cfg);
      /** @type {GpuModule} */
      const obj = { kind: 'mha', cfg: /** @type {any} */ ({ ...cfg }), w: defaultWeights('multiHeadAttention', cfg), gpu: null, wasm: null, disposed: false };
      upload(obj);
      return obj;
    },
    createLayer(cfg) {
      checkWeights('selfAttentionLayer', cfg);
      const E = cfg.embedDim;
      /** @type {GpuModule} */
      const obj = {
        kind: 'layer', cfg: { ...cfg }, w: defaultWeights('selfAttentionLayer', { ...cfg, kdim: cfg.embedDim, vdim: cfg.embedDim }), gamma: new Float32Array(E).fill(1), beta: new Float32Array(E),
        gpu: null, wasm: null, disposed: false,
      };
      upload(obj);
      return obj;
    },
    destroy(obj) {
      if (obj.disposed) return;
      obj.disposed = true;
      if (obj.gpu) for (const entry of Object.values(obj.gpu)) rt.destroyPersistent(entry);
      obj.gpu = null;
      if (obj.wasm && state.wasm) state.wasm.destroy(obj.wasm);
      obj.wasm = null;
    },
    heldBytes(obj) {
      let bytes = 0;
      for (const data of Object.values(obj.w)) bytes += data.byteLength;
      if (obj.kind === 'layer') bytes += obj.gamma.byteLength + obj.beta.byteLength;
      if (obj.gpu) for (const entry of Object.values(obj.gpu)) bytes += entry.size;
      if (obj.wasm && state.wasm) bytes += state.wasm.heldBytes(obj.wasm);
      return bytes;
    },
    setWeight(obj, key, data, layout) {
      const { cfg } = obj;
      const keras = key[0] === 'b' ? Float32Array.from(data) : toKeras(data, outDim(cfg, key), inDim(cfg, key), layout);
      obj.w[key] = keras;
      if (obj.gpu && !state.lost) rt.writePersistent(obj.gpu[key], keras);
      if (obj.wasm) state.wasm.setWeight(obj.wasm, key, keras, 'keras');
    },
    getWeight(obj, key, layout) {
      const { cfg } = obj;
      const w = obj.w[key];
      return key[0] === 'b' ? w.slice() : fromKeras(w, outDim(cfg, key), inDim(cfg, key), layout);
    },
    setNorm(obj, gamma, beta) {
      if (gamma) obj.gamma = Float32Array.from(gamma);
      if (beta) obj.beta = Float32Array.from(beta);
      if (obj.gpu && !state.lost) {
        rt.writePersistent(obj.gpu.gamma, obj.gamma);
        rt.writePersistent(obj.gpu.beta, obj.beta);
      }
      if (obj.wasm) state.wasm.setNorm(obj.wasm, obj.gamma, obj.beta);
    },
    getNorm(obj) {
      return { gamma: obj.gamma.slice(), beta: obj.beta.slice() };
    },

    // ---- key/value cache: kept in wasm memory ------------------------------
    // A decode step projects one token and reads the whole cache: small,
    // latency-bound work that wasm answers without a GPU round trip. The
    // cache and a wasm copy of the layer are made on first use (mhaForward).
    createKvCache(obj, batch, maxLength) {
      return { kind: 'kvcache', batch, maxLength, wasm: null };
    },
    kvCacheReset(c) {
      if (c.wasm) state.wasm.kvCacheReset(c.wasm);
    },
    kvCacheTruncate(c, length) {
      if (c.wasm) state.wasm.kvCacheTruncate(c.wasm, length);
    },
    kvCacheHeldBytes(c) {
      return c.wasm ? state.wasm.kvCacheHeldBytes(c.wasm) : 0;
    },
    kvCacheDestroy(c) {
      if (c.wasm) state.wasm.kvCacheDestroy(c.wasm);
      c.wasm = null;
    },
  };
  return { methods, wasmObject };
}
