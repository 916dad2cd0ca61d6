// The public API object, written once over any backend (wasm, wasm-scalar,
// webgpu). It validates and normalises every argument, so each message names
// the argument, what was given and what is allowed; backends receive plain
// Float32Arrays and sizes (the interface: backend.d.ts). Wasm backends
// answer synchronously; the webgpu backend returns Promises (`await` works
// for both).
//
// The classes live in their own modules (multi-head-attention.js,
// self-attention-layer.js, kv-cache.js) and take the backend through their
// constructor, so `instanceof` holds across labs. The free-function ops of
// the op table (ops.js: positionalEncoding, rotaryEmbedding, rotaryCache, alibiSlopes, …) are
// installed from it, one method per entry.
import { rangeError, checkInt, checkOptions } from './errors.js';
import { buildTrace } from './trace.js';
import { checkLayout, OPTION_KEYS } from './validate.js';
import { warmUp } from './warm-up.js';
import { selfAttention, scaledDotProductAttention } from './sdpa.js';
import { OPS } from './ops.js';
import { MultiHeadAttention } from './multi-head-attention.js';
import { SelfAttentionLayer } from './self-attention-layer.js';
import { IO_API } from './io/index.js';
import { attachTraining } from './train/index.js';
import { wasmModuleOf } from './graph/arena.js';
import { loadModel, heapLimitOf } from './model/load.js';
import { pretrained } from './pretrained.js';

export { MultiHeadAttention } from './multi-head-attention.js';
export { SelfAttentionLayer } from './self-attention-layer.js';
export { KVCache } from './kv-cache.js';

/**
 * Builds the public API over a backend.
 * @param {import('./backend.js').Backend} backend
 * @param {{ checkFinite?: boolean }} [settings] init's options that hold for every call
 */
export function createLab(backend, settings = {}) {
  settings = { checkFinite: settings.checkFinite === true };
  let disposed = false;
  const lab = {
    // Weight files (safetensors, .npy, .npz) and state-dict mapping: pure JS, see io/.
    ...IO_API,
    get backend() {
      return backend.name;
    },
    /** Threads the kernels use (1 unless init({ threads }) started more). */
    get threads() {
      return disposed ? 1 : backend.threads ?? 1;
    },
    /** Lets go of the backend: the last lab of a threaded module stops its workers. */
    dispose() {
      if (disposed) return;
      disposed = true;
      backend.release?.();
    },
    get kernelArch() {
      return backend.kernelArch;
    },

    // Backend events, passed through to backends that have them (webgpu:
    // 'devicelost', then 'backendchange' when calls move to wasm); no-ops on
    // the wasm backends, which have none.
    addEventListener(type, listener, options) {
      backend.addEventListener?.(type, listener, options);
    },
    removeEventListener(type, listener, options) {
      backend.removeEventListener?.(type, listener, options);
    },

    selfAttention(x, options) {
      return selfAttention(backend, x, options, settings);
    },

    scaledDotProductAttention(q, k, v, options) {
      return scaledDotProductAttention(backend, q, k, v, options, settings);
    },

    multiHeadAttention(config) {
      return new MultiHeadAttention(backend, config, 'multiHeadAttention', settings);
    },

    selfAttentionLayer(config) {
      return new SelfAttentionLayer(backend, config, settings);
    },

    shapeTrace(params) {
      const where = 'shapeTrace';
      const p = checkOptions(where, 'params', params, OPTION_KEYS.shapeTrace);
      const embedDim = checkInt(where, 'embedDim', p.embedDim, 1);
      const numHeads = checkInt(where, 'numHeads', p.numHeads, 1);
      if (embedDim % numHeads !== 0) {
        throw rangeError(where, `embedDim (${embedDim}) must be divisible by numHeads (${numHeads})`);
      }
      const lq = checkInt(where, 'lq', p.lq ?? p.seqLen, 1);
      return buildTrace({
        batch: checkInt(where, 'batch', p.batch ?? 1, 1),
        lq,
        lk: checkInt(where, 'lk', p.lk ?? lq, 1),
        embedDim,
        numHeads,
        kdim: checkInt(where, 'kdim', p.kdim ?? embedDim, 1),
        vdim: checkInt(where, 'vdim', p.vdim ?? embedDim, 1),
        mask: Boolean(p.mask),
        layer: Boolean(p.layer),
        unbatched: Boolean(p.unbatched),
        training: Boolean(p.training),
        layout: checkLayout(where, p),
      });
    },

    /**
     * Runs every function until the engine has optimized code for them, then
     * once at the given sizes (web/lib/warm-up.js), so that the first real
     * call costs about what a steady one does.
     */
    warmUp(options) {
      return warmUp(lab, options);
    },

    /** Internal: the backend object (used by tests and the page). */
    get _backend() {
      return backend;
    },
  };
  // The op table's methods (ops.js), called with the lab's backend and settings.
  const opContext = { backend, checkFinite: settings.checkFinite };
  for (const [name, entry] of Object.entries(OPS)) {
    /** @type {any} */ (lab)[name] = (...args) => entry.run(opContext, ...args);
  }
  attachTraining(lab, backend);
  attachModels(lab, backend);
  return lab;
}

/**
 * lab.loadModel and lab.pretrained: whole Hugging Face models over the block
 * graph (web/lib/model/). On wasm the model lives in the backend's module; on
 * webgpu in its wasm backend, plus a GPU copy that runs model.forward.
 */
function attachModels(lab, backend) {
  // The wasm module that holds a loaded model's block graph: the backend's own,
  // or on webgpu its wasm backend (loaded by init before the lab is handed out).
  let gpuWasm = null;
  backend.wasmReady?.then((w) => { gpuWasm = w; }, () => {});
  Object.defineProperty(lab, 'heapLimit', {
    enumerable: true,
    /** Bytes the wasm heap may grow to, as the module reports it (model/plan.js heapLimitOf); null without a wasm module. */
    get() {
      const Module = backend.wasmModule ?? gpuWasm?.wasmModule;
      return Module && typeof Module.heapMaxBytes === 'function' ? heapLimitOf(Module) : null;
    },
  });
  lab.loadModel = async (source) => {
    if (typeof backend.modelCreate !== 'function') return loadModel(wasmModuleOf(backend, 'loadModel', 'a whole model'), source);
    const wasm = await backend.wasmReady;
    if (!wasm) throw new Error("loadModel: the webgpu backend was created without its wasm backend (the fallback), which holds the model's block graph; create the lab with init({ backend: 'webgpu' })");
    return loadModel(wasmModuleOf(wasm, 'loadModel', 'a whole model'), source, { gpu: backend });
  };
  lab.pretrained = async (name) => pretrained(lab.loadModel, name); // the package's models (data/models/)
}
