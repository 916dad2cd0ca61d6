// The one wasm memory arena: every call into the wasm core (the backend's
// ops, the block graph's handle, training, loadModel's model) allocates its
// buffers in one arena and frees them all on return, also when it throws.
// Memory may grow on every alloc, so the HEAP views are read afresh each time.

/** One scope of allocations over an Emscripten module; free() lets them all go. */
export class WasmArena {
  /** @param {any} Module the Emscripten module; @param {string} where the calling function, for messages */
  constructor(Module, where) {
    this.Module = Module;
    this.where = where;
    /** @type {number[]} */
    this.ptrs = [];
  }

  /** @param {number} bytes @returns {number} a pointer, 0 for 0 bytes */
  alloc(bytes) {
    if (bytes === 0) return 0;
    const p = this.Module._malloc(bytes) >>> 0; // unsigned: pointers above 2 GiB come back negative
    if (!p) throw new RangeError(`${this.where}: out of wasm memory while allocating ${bytes} bytes (the wasm heap is limited to ${(this.Module.heapMaxBytes() / 2 ** 20).toFixed(1)} MiB)`);
    this.ptrs.push(p);
    return p;
  }

  /** @param {number} count floats */
  f32(count) {
    return this.alloc(count * 4);
  }

  /** @param {Float32Array|null|undefined} array copied in; null → 0 */
  fromF32(array) {
    if (!array) return 0;
    const p = this.alloc(array.length * 4);
    this.Module.HEAPF32.set(array, p >>> 2);
    return p;
  }

  /** @param {Int32Array|null|undefined} array copied in; null → 0 */
  fromI32(array) {
    if (!array) return 0;
    const p = this.alloc(array.length * 4);
    this.Module.HEAP32.set(array, p >>> 2);
    return p;
  }

  /** @param {Uint32Array} array copied in */
  fromU32(array) {
    const p = this.alloc(array.length * 4);
    this.Module.HEAPU32.set(array, p >>> 2);
    return p;
  }

  /** A copy (it belongs to JS) of `count` floats at `ptr`. */
  readF32(ptr, count) {
    return this.Module.HEAPF32.slice(ptr >>> 2, (ptr >>> 2) + count);
  }

  /** A copy of `count` int32 at `ptr`. */
  readI32(ptr, count) {
    return this.Module.HEAP32.slice(ptr >>> 2, (ptr >>> 2) + count);
  }

  free() {
    for (const p of this.ptrs) this.Module._free(p);
    this.ptrs.length = 0;
  }
}

/** Runs body(arena) with a fresh arena over `Module`; frees everything after. */
export function withArena(Module, where, body) {
  const arena = new WasmArena(Module, where);
  try {
    return body(arena);
  } finally {
    arena.free();
  }
}

/** Throws the block graph's (training bindings') message for a non-zero status code. */
export function checkStatus(Module, where, code) {
  if (code === 0) return;
  // Core messages may start with their own short prefix ("step: …"): the
  // JS name of the call replaces it.
  const message = Module.trainLastError().replace(/^[A-Za-z.]+: /, '');
  throw new RangeError(`${where}: ${message}`);
}

/** The wasm module behind a backend, or a clear error on backends without one. */
export function wasmModuleOf(backend, where, what = 'training') {
  const Module = backend.wasmModule;
  if (!Module || typeof Module.transformerCreate !== 'function') {
    throw new Error(`${where}: ${what} runs on the wasm backends ('wasm', 'wasm-scalar'); this lab uses '${backend.name}'. Create one with init({ backend: 'wasm' })`);
  }
  return Module;
}

/**
 * The normalised mask as the bindings' value_object "MaskArgs"
 * (bindings/common.cpp), with the variants' fields (docs/attention-variants.md);
 * its buffers are copied into wasm memory by `arena`.
 * @param {{ fromI32(a: Int32Array|null): number, fromF32(a: Float32Array|null): number }} arena
 * @param {any} mask
 */
export function maskArgs(arena, mask) {
  return {
    causal: mask.causal,
    lengths: arena.fromI32(mask.lengths),
    kind: mask.kind,
    data: arena.fromF32(mask.data),
    shape: mask.shape4,
    causalAlign: mask.causalAlign ?? 0,
    causalOffset: mask.causalOffset ?? 0,
    window: mask.window ?? false,
    windowLeft: mask.windowLeft ?? -1,
    windowRight: mask.windowRight ?? -1,
    windowAlign: mask.windowAlign ?? 0,
    windowOffset: mask.windowOffset ?? 0,
    alibi: mask.alibi ?? false,
    alibiSlopes: arena.fromF32(mask.slopes ?? null),
    fill: mask.fill ?? -1e9,
  };
}
