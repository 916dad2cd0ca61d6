// Picks and instantiates a wasm variant; one shared instance per variant per
// page (or Node process).
import { createWasmBackend } from './wasm-backend.js';
import { createLab as makeLab } from './lab.js';
import { describe, typeError, rangeError, checkOptions, checkBool } from './errors.js';
import { OPTION_KEYS } from './validate.js';
import { warmUpOptions } from './warm-up.js';

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt))
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/** True when this engine validates a WebAssembly SIMD128 module. */
export function simdSupported() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

function validWasm(bytes) {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

export const BACKENDS = ['auto', 'wasm', 'wasm-scalar', 'webgpu'];

/** The most threads init({ threads }) accepts (src/thread_pool.h kMaxThreads). */
export const MAX_THREADS = 16;

function checkThreads(threads) {
  if (threads === undefined || threads === 'auto') return threads ?? 1;
  if (typeof threads !== 'number') {
    throw typeError('init', `threads must be a whole number from 1 to ${MAX_THREADS} or 'auto', got ${describe(threads)}`);
  }
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    throw rangeError('init', `threads must be a whole number from 1 to ${MAX_THREADS} or 'auto', got ${describe(threads)}`);
  }
  return threads;
}

/**
 * True when this engine can run the threaded build: shared wasm memory, and in
 * a browser a crossOriginIsolated page (COOP same-origin + COEP require-corp).
 */
export function threadsSupported() {
  if (typeof SharedArrayBuffer !== 'function' || typeof Atomics !== 'object') return false;
  const proc = /** @type {any} */ (globalThis).process;
  const isNode = typeof proc === 'object' && typeof proc.versions?.node === 'string';
  if (!isNode && globalThis.crossOriginIsolated !== true) return false;
  try {
    return new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch {
    return false;
  }
}

/**
 * The thread count for validated options: 'auto' is min(4, cores) where the
 * threaded build can run (SIMD128 + threadsSupported()), else 1, silently.
 * An explicit count above 1 that cannot run throws and says why.
 * @param {{backend: string, threads: number|'auto', wasmBinary?: ArrayBuffer|ArrayBufferView}} opts
 * @param {number} cores hardware threads (navigator.hardwareConcurrency, os.availableParallelism())
 */
export function resolveThreads(opts, cores) {
  const { threads, backend } = opts;
  const possible = backend !== 'wasm-scalar' && simdSupported() && threadsSupported();
  // A wasmBinary is the bytes of one variant: 'auto' keeps to one thread then.
  if (threads === 'auto') return possible && !opts.wasmBinary ? Math.max(1, Math.min(4, cores || 1)) : 1;
  if (threads === 1 || possible) return threads;
  if (backend === 'wasm-scalar') {
    throw rangeError('init', `threads: ${threads} needs the SIMD128 build; backend 'wasm-scalar' runs on one thread (use threads: 1, or backend 'wasm' or 'auto')`);
  }
  if (!simdSupported()) {
    throw new Error(`init: threads: ${threads} needs WebAssembly SIMD128, which this engine does not support; use threads: 'auto' to fall back to one thread`);
  }
  throw new Error(`init: threads: ${threads} needs SharedArrayBuffer, which a page has only when it is crossOriginIsolated (served with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp); use threads: 'auto' to fall back to one thread`);
}

export function checkInitOptions(options) {
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw typeError('init', `options must be an object such as { backend: 'auto' }, got ${describe(options)}`);
  }
  const opts = checkOptions('init', 'options', options, OPTION_KEYS.init);
  const backend = opts.backend ?? 'auto';
  if (typeof backend !== 'string') {
    throw typeError('init', `backend must be a string, one of ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`);
  }
  if (!BACKENDS.includes(backend)) {
    throw rangeError('init', `backend must be one of ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`);
  }
  if (opts.locateFile !== undefined && typeof opts.locateFile !== 'function') {
    throw typeError('init', `locateFile must be a function (fileName) => url, got ${describe(opts.locateFile)}`);
  }
  if (opts.wasmBinary !== undefined && !(opts.wasmBinary instanceof ArrayBuffer) && !ArrayBuffer.isView(opts.wasmBinary)) {
    throw typeError('init', `wasmBinary must be an ArrayBuffer or Uint8Array, got ${describe(opts.wasmBinary)}`);
  }
  if (opts.wasmBinary !== undefined && !validWasm(opts.wasmBinary)) {
    throw rangeError('init', `wasmBinary is not a valid WebAssembly module (${opts.wasmBinary.byteLength} bytes); pass the bytes of attention_lab_simd.wasm or attention_lab_scalar.wasm`);
  }
  if (opts.checkFinite !== undefined) checkBool('init', 'checkFinite', opts.checkFinite);
  if (opts.warmUp !== undefined && typeof opts.warmUp !== 'boolean') {
    if (opts.warmUp === null || typeof opts.warmUp !== 'object' || Array.isArray(opts.warmUp)) {
      throw typeError('init', `warmUp must be true, false or { embedDim, numHeads, seqLen, batch, budgetMs }, got ${describe(opts.warmUp)}`);
    }
    warmUpOptions('init', opts.warmUp); // refused before anything loads
  }
  const threads = checkThreads(opts.threads);
  return { ...opts, backend, threads };
}

const instances = new Map();

/**
 * The backend of a wasm variant, shared by every init() that asks for the same
 * variant (and thread count). Threaded instances count their labs: each call
 * here is one lab, and the workers stop when the last of them is disposed
 * (lab.dispose() → backend.release()).
 * @param {'simd'|'scalar'|'threads'} variant
 * @param {() => Promise<Function>} importFactory dynamic import of the glue
 * @param {object} moduleArgs passed to the Emscripten factory (wasmBinary, locateFile)
 * @param {number} [threads] threads for the 'threads' variant (>= 2)
 */
export function loadVariant(variant, importFactory, moduleArgs, threads = 1) {
  const key = `${variant}:${threads}${moduleArgs.wasmBinary ? ':binary' : ''}`;
  let entry = instances.get(key);
  if (!entry) {
    entry = { refs: 0, promise: null };
    const mine = entry;
    entry.promise = importFactory().then((factory) => factory({
      ...moduleArgs,
      ...(variant === 'threads' ? { attnlabPoolSize: threads - 1 } : {}),
      print: () => {},
      printErr: () => {},
    })).then((Module) => {
      if (typeof Module?.sdpa !== 'function' || typeof Module?.lastError !== 'function') {
        throw new Error('the module does not export the attention-lab bindings');
      }
      if (variant !== 'threads') return createWasmBackend(Module, variant === 'simd' ? 'wasm' : 'wasm-scalar');
      return threadedBackend(Module, threads, () => {
        if (--mine.refs > 0) return false;
        if (instances.get(key) === mine) instances.delete(key);
        return true;
      });
    }).catch((e) => {
      // Emscripten reports a bad module as "Aborted(...)" or a bare TypeError:
      // say which file or option it came from.
      const source = moduleArgs.wasmBinary ? 'the wasmBinary option' : `attention_lab_${variant}.wasm`;
      throw new Error(`init: could not instantiate the '${variant}' wasm module from ${source}: ${e && e.message ? e.message : e}`, { cause: e });
    });
    entry.promise.catch(() => {
      if (instances.get(key) === mine) instances.delete(key);
    });
    instances.set(key, entry);
  }
  entry.refs += 1;
  return entry.promise;
}

// The threaded module's backend: starts the core's thread pool on the
// Emscripten workers and stops both when the last lab lets go.
function threadedBackend(Module, threads, lastRelease) {
  const workers = () => [...Module.PThread.unusedWorkers, ...Module.PThread.runningWorkers];
  if (Module.setThreadCount(threads) !== 0) {
    const message = Module.lastError();
    Module.PThread.terminateAllThreads();
    throw new Error(message);
  }
  // Node: idle workers must not keep the process alive (the main thread waits
  // for them synchronously whenever they work).
  for (const w of workers()) w.unref?.();
  const backend = createWasmBackend(Module, 'wasm');
  let running = threads;
  Object.defineProperty(backend, 'threads', { get: () => running, enumerable: true });
  backend.workerCount = () => workers().length;
  backend.release = () => {
    if (!lastRelease()) return;
    Module.setThreadCount(1);  // joins the core's threads
    Module.PThread.terminateAllThreads();
    running = 1;
  };
  return backend;
}

/** Resolves the wasm variant the options ask for. */
export function wasmVariantFor(backend) {
  if (backend === 'wasm-scalar') return 'scalar';
  if (backend === 'wasm') {
    if (!simdSupported()) {
      throw new Error("init: backend 'wasm' needs WebAssembly SIMD128, which this engine does not support; use 'wasm-scalar' or 'auto'");
    }
    return 'simd';
  }
  return simdSupported() ? 'simd' : 'scalar';
}

/**
 * The lab over a loaded backend with init's settings (checkFinite); awaits
 * lab.warmUp() first when init was asked for it.
 * @param {import('./backend.js').Backend} backend
 * @param {{ checkFinite?: boolean, warmUp?: boolean | object }} [opts] init's checked options
 */
export async function createLab(backend, opts = {}) {
  const lab = makeLab(backend, { checkFinite: opts.checkFinite });
  if (opts.warmUp) await lab.warmUp(opts.warmUp === true ? undefined : opts.warmUp);
  return lab;
}
