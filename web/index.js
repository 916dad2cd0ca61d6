// attention-lab — browser entry (also used by bundlers: Vite, webpack, Rollup,
// esbuild). The .wasm files are located next to this file with
// `new URL(..., import.meta.url)`, which bundlers recognise as assets; pass
// `locateFile` or `wasmBinary` to override.
import { checkInitOptions, loadVariant, wasmVariantFor, createLab, simdSupported } from './lib/loader.js';

const WASM_URLS = {
  simd: () => new URL('./dist/attention_lab_simd.wasm', import.meta.url).href,
  scalar: () => new URL('./dist/attention_lab_scalar.wasm', import.meta.url).href,
};
const GLUE = {
  simd: () => import('./dist/attention_lab_simd.mjs').then((m) => m.default),
  scalar: () => import('./dist/attention_lab_scalar.mjs').then((m) => m.default),
};

/**
 * Loads the library and returns the API object.
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
  const variant = wasmVariantFor(opts.backend === 'webgpu' ? 'auto' : opts.backend);
  const moduleArgs = {};
  if (opts.wasmBinary) moduleArgs.wasmBinary = opts.wasmBinary;
  // The default URL is formed only when needed: in IIFE/CommonJS bundles
  // import.meta.url is not a URL, and callers there pass locateFile or
  // wasmBinary.
  moduleArgs.locateFile = (name) => {
    if (opts.locateFile) return opts.locateFile(name, variant);
    return name.endsWith('.wasm') ? WASM_URLS[variant]() : name;
  };
  return loadVariant(variant, GLUE[variant], moduleArgs);
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
export { TrainingStoppedError } from './lib/train/transformer.js';

export { simdSupported };
export { readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz, listAttentionLayers, fromStateDict, toStateDict, layerTensorNames } from './lib/io/index.js';
