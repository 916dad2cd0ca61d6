// attention-lab — Node entry. Reads the .wasm with fs (Emscripten's web glue
// would otherwise call fetch on a file path) and never touches the network.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { checkInitOptions, loadVariant, wasmVariantFor, createLab, simdSupported, resolveThreads, threadsSupported } from './lib/loader.js';

const require = createRequire(import.meta.url);
const GLUE = {
  simd: () => import('./dist/attention_lab_simd.mjs').then((m) => m.default),
  scalar: () => import('./dist/attention_lab_scalar.mjs').then((m) => m.default),
  // Emscripten 3.1.6's ES-module glue cannot start Node workers: the threaded
  // build has a CommonJS glue for Node (docs/threads.md).
  threads: async () => require('./dist/attention_lab_threads_node.cjs'),
};

/**
 * Loads the library and returns the API object. In Node the backends are
 * 'wasm' (SIMD128) and 'wasm-scalar'; 'auto' picks SIMD when supported.
 * `threads`: 1 (the default), a count, or 'auto' = min(4, cores).
 * @param {import('./index').InitOptions} [options]
 * @returns {Promise<import('./index').AttentionLab>}
 */
export async function init(options) {
  const opts = checkInitOptions(options);
  if (opts.backend === 'webgpu') {
    throw new Error("init: backend 'webgpu' needs a browser with WebGPU; in Node use 'wasm', 'wasm-scalar' or 'auto'");
  }
  const threads = resolveThreads(opts, availableParallelism?.() ?? cpus().length);
  const variant = threads > 1 ? 'threads' : wasmVariantFor(opts.backend);
  let wasmBinary = opts.wasmBinary;
  if (!wasmBinary) {
    const url = opts.locateFile
      ? opts.locateFile(`attention_lab_${variant}.wasm`, variant)
      : new URL(`./dist/attention_lab_${variant}.wasm`, import.meta.url);
    wasmBinary = await readFile(url instanceof URL || String(url).startsWith('file:') ? new URL(url) : url);
  }
  const moduleArgs = { wasmBinary };
  if (variant === 'threads') {
    // The worker script is shipped as .cjs (this package is "type": "module").
    const worker = fileURLToPath(new URL('./dist/attention_lab_threads_node.worker.cjs', import.meta.url));
    moduleArgs.locateFile = (name, dir) => (name.endsWith('.worker.js') ? worker : dir + name);
  }
  return createLab(await loadVariant(variant, GLUE[variant], moduleArgs, threads), opts);
}

export { DisposedError } from './lib/errors.js';
export { headMean } from './lib/model/head-mean.js';
export { TrainingStoppedError } from './lib/train/trainer.js';

export { simdSupported, threadsSupported };
export { readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz, listAttentionLayers, fromStateDict, toStateDict, layerTensorNames, parseGgufHeader, readGguf, openGguf, writeGguf } from './lib/io/index.js';
