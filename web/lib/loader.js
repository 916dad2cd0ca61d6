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
  return { ...opts, backend };
}

const instances = new Map();

/**
 * @param {'simd'|'scalar'} variant
 * @param {() => Promise<Function>} importFactory dynamic import of the glue
 * @param {object} moduleArgs passed to the Emscripten factory (wasmBinary, locateFile)
 */
export function loadVariant(variant, importFactory, moduleArgs) {
  const key = variant + (moduleArgs.wasmBinary ? ':binary' : '');
  if (!instances.has(key)) {
    const promise = importFactory().then((factory) => factory({
      ...moduleArgs,
      print: () => {},
      printErr: () => {},
    })).then((Module) => {
      if (typeof Module?.sdpa !== 'function' || typeof Module?.lastError !== 'function') {
        throw new Error('the module does not export the attention-lab bindings');
      }
      return createWasmBackend(Module, variant === 'simd' ? 'wasm' : 'wasm-scalar');
    }).catch((e) => {
      // Emscripten reports a bad module as "Aborted(...)" or a bare TypeError:
      // say which file or option it came from.
      const source = moduleArgs.wasmBinary ? 'the wasmBinary option' : `attention_lab_${variant}.wasm`;
      throw new Error(`init: could not instantiate the '${variant}' wasm module from ${source}: ${e && e.message ? e.message : e}`, { cause: e });
    });
    promise.catch(() => instances.delete(key));
    instances.set(key, promise);
  }
  return instances.get(key);
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
