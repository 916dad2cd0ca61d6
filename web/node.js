// attention-lab — Node entry. Reads the .wasm with fs (Emscripten's web glue
// would otherwise call fetch on a file path) and never touches the network.
import { readFile } from 'node:fs/promises';
import { checkInitOptions, loadVariant, wasmVariantFor, createLab, simdSupported } from './lib/loader.js';

const GLUE = {
  simd: () => import('./dist/attention_lab_simd.mjs').then((m) => m.default),
  scalar: () => import('./dist/attention_lab_scalar.mjs').then((m) => m.default),
};

/**
 * Loads the library and returns the API object. In Node the backends are
 * 'wasm' (SIMD128) and 'wasm-scalar'; 'auto' picks SIMD when supported.
 * @param {import('./index').InitOptions} [options]
 * @returns {Promise<import('./index').AttentionLab>}
 */
export async function init(options) {
  const opts = checkInitOptions(options);
  if (opts.backend === 'webgpu') {
    throw new Error("init: backend 'webgpu' needs a browser with WebGPU; in Node use 'wasm', 'wasm-scalar' or 'auto'");
  }
  const variant = wasmVariantFor(opts.backend);
  let wasmBinary = opts.wasmBinary;
  if (!wasmBinary) {
    const url = opts.locateFile
      ? opts.locateFile(`attention_lab_${variant}.wasm`, variant)
      : new URL(`./dist/attention_lab_${variant}.wasm`, import.meta.url);
    wasmBinary = await readFile(url instanceof URL || String(url).startsWith('file:') ? new URL(url) : url);
  }
  return createLab(await loadVariant(variant, GLUE[variant], { wasmBinary }), opts);
}

export { DisposedError } from './lib/errors.js';
export { TrainingStoppedError } from './lib/train/transformer.js';

export { simdSupported };
export { readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz, listAttentionLayers, fromStateDict, toStateDict, layerTensorNames } from './lib/io/index.js';
