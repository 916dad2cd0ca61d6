// Wasm heap scopes for the training API: each call allocates its buffers in
// one arena and frees them all on return, also when it throws. Status codes
// from the training bindings become RangeErrors carrying the core's message.

/** Runs body(arena) with a fresh arena over `Module`; frees everything after. */
export function withArena(Module, where, body) {
  const ptrs = [];
  const arena = {
    alloc(bytes) {
      if (bytes === 0) return 0;
      const p = Module._malloc(bytes);
      if (!p) throw new RangeError(`${where}: out of wasm memory while allocating ${bytes} bytes (the wasm heap is limited to 2 GiB)`);
      ptrs.push(p);
      return p;
    },
    f32(count) {
      return this.alloc(count * 4);
    },
    fromF32(array) {
      if (!array) return 0;
      const p = this.alloc(array.length * 4);
      Module.HEAPF32.set(array, p >>> 2);
      return p;
    },
    fromI32(array) {
      if (!array) return 0;
      const p = this.alloc(array.length * 4);
      Module.HEAP32.set(array, p >>> 2);
      return p;
    },
    fromU32(array) {
      const p = this.alloc(array.length * 4);
      Module.HEAPU32.set(array, p >>> 2);
      return p;
    },
    readF32(ptr, count) {
      return Module.HEAPF32.slice(ptr >>> 2, (ptr >>> 2) + count);
    },
    readI32(ptr, count) {
      return Module.HEAP32.slice(ptr >>> 2, (ptr >>> 2) + count);
    },
  };
  try {
    return body(arena);
  } finally {
    for (const p of ptrs) Module._free(p);
  }
}

/** Throws the core's message for a non-zero status code. */
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

