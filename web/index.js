// attention-lab — browser entry (also used by bundlers: Vite, webpack, Rollup,
// esbuild). The .wasm files are located next to this file with
// `new URL(..., import.meta.url)`, which bundlers recognise as assets; pass
// `locateFile` or `wasmBinary` to override.
import { checkInitOptions, loadVariant, wasmVariantFor, createLab, simdSupported, resolveThreads, threadsSupported } from './lib/loader.js';

const WASM_URLS = {
  simd: () => new URL('./dist/attention_lab_simd.wasm', import.meta.url).href,
  scalar: () => new URL('./dist/attention_lab_scalar.wasm', import.meta.url).href,
  threads: () => new URL('./dist/attention_lab_threads.wasm', import.meta.url).href,
};
// The threaded build's workers: the worker script, and the glue it imports
// (by URL: in a bundle the glue above is inlined into a chunk that a worker
// cannot import; these two stay separate files, as assets). `?no-inline`:
// Vite would inline the small worker script as a data: URL, which is
// cross-origin to the page (blocked by CSP, and it cannot import the glue).
const THREAD_FILES = {
  worker: () => new URL('./dist/attention_lab_threads.worker.js?no-inline', import.meta.url).href,
  glue: () => new URL('./dist/attention_lab_threads.mjs?no-inline', import.meta.url).href,
};
const GLUE = {
  simd: () => import('./dist/attention_lab_simd.mjs').then((m) => m.default),
  scalar: () => import('./dist/attention_lab_scalar.mjs').then((m) => m.default),
  threads: () => import('./dist/attention_lab_threads.mjs').then((m) => m.default),
};

/**
 * Loads the library and returns the API object. `threads`: 1 (the default), a
 * count (needs a crossOriginIsolated page), or 'auto' = min(4, cores) where
 * the page is crossOriginIsolated, else 1.
 * @param {import('./index').InitOptions} [options]
 * @returns {Promise<import('./index').AttentionLab>}
 */
export async function init(options) {
  const opts = checkInitOptions(options);
  if (opts.backend === 'webgpu' || opts.backend === 'auto') {
    const gpu = await tryWebGpu(opts);
    if (gpu) return gpu;
    if (opts.backend === 'webgpu') {
      throw new Error("init: backend 'webgpu' is not available here (no navigator.gpu adapter); use 'auto' to fall back to wasm");
    }
  }
  return createLab(await loadWasm(opts), opts);
}

async function loadWasm(opts) {
  const backend = opts.backend === 'webgpu' ? 'auto' : opts.backend;
  const cores = typeof navigator === 'object' ? navigator.hardwareConcurrency : 1;
  const threads = resolveThreads({ ...opts, backend }, cores);
  const variant = threads > 1 ? 'threads' : wasmVariantFor(backend);
  const moduleArgs = {};
  if (opts.wasmBinary) moduleArgs.wasmBinary = opts.wasmBinary;
  // The default URL is formed only when needed: in IIFE/CommonJS bundles
  // import.meta.url is not a URL, and callers there pass locateFile or
  // wasmBinary.
  moduleArgs.locateFile = (name) => {
    if (opts.locateFile) return opts.locateFile(name, variant);
    if (name.endsWith('.wasm')) return WASM_URLS[variant]();
    return name.endsWith('.worker.js') ? THREAD_FILES.worker() : name;
  };
  if (variant === 'threads') {
    moduleArgs.mainScriptUrlOrBlob = opts.locateFile
      ? opts.locateFile('attention_lab_threads.mjs', variant)
      : THREAD_FILES.glue();
  }
  return loadVariant(variant, GLUE[variant], moduleArgs, threads);
}

// The WebGPU backend is its own module, loaded only when asked for.
async function tryWebGpu(opts) {
  let mod;
  try {
    mod = await import('./lib/webgpu-backend.js');
  } catch {
    return null;
  }
  const fallback = () => loadWasm({ ...opts, backend: 'auto' });
  // 'auto' skips software adapters (SwiftShader and the like): there the
  // wasm SIMD backend is ~20x faster. An explicit 'webgpu' accepts them.
  const backend = await mod.createWebGpuBackend({ fallback, allowFallbackAdapter: opts.backend === 'webgpu' });
  return backend ? createLab(backend, opts) : null;
}

export { DisposedError } from './lib/errors.js';
export { headMean } from './lib/model/head-mean.js';
export { TrainingStoppedError } from './lib/train/trainer.js';

export { simdSupported, threadsSupported };
export { readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz, listAttentionLayers, fromStateDict, toStateDict, layerTensorNames, parseGgufHeader, readGguf, openGguf, writeGguf } from './lib/io/index.js';
