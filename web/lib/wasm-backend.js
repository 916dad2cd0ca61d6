// The wasm backends ('wasm' = SIMD128 kernels, 'wasm-scalar' = plain loops).
// Everything Emscripten-specific lives here: the heap, pointers, handles and
// status codes. It implements the Backend interface of backend.d.ts (checked
// by tsc). Arguments arrive validated and normalised by the wrapper; each call
// copies its inputs into wasm memory once, runs, copies the results out once
// (`slice`, so they belong to JS) and frees what it allocated, also on error.
import { withArena, maskArgs } from './graph/arena.js';

const WEIGHT_IDS = { wq: 0, bq: 1, wk: 2, bk: 3, wv: 4, bv: 5, wo: 6, bo: 7 };
const LAYOUTS = { torch: 0, keras: 1 };

// MHA outputs from this many floats (64 KiB) up overlap the result's
// allocation with the workers' output projection (threaded build only).
const OVERLAP_MIN_FLOATS = 1 << 14;

/** The fields of attnlab::ForwardTrace (src/attention_lab.h), in order. */
const TRACE_FIELDS = ['q', 'k', 'v', 'scores', 'masked', 'weights', 'context', 'attention', 'dropout', 'residual', 'capped'];

/** Float counts of the MHA's trace buffers (Lk: every key attended over). */
function mhaTraceSizes(B, Lq, Lk, E, H) {
  const nW = B * H * Lq * Lk;
  return { q: B * Lq * E, k: B * Lk * E, v: B * Lk * E, scores: nW, masked: nW, weights: nW, context: B * Lq * E };
}

/** @typedef {{ kind: 'mha' | 'layer', handle: number, mha?: number }} WasmHandle */
/** @typedef {{ kind: 'kvcache', handle: number }} WasmCache */

/**
 * @param {any} Module the instantiated Emscripten module
 * @param {'wasm'|'wasm-scalar'} name
 * @returns {import('./backend.js').WasmBackend<WasmHandle, WasmCache>}
 */
export function createWasmBackend(Module, name) {
  // One arena (graph/arena.js) per call.
  function run(where, body) {
    return withArena(Module, where, body);
  }

  function check(where, code) {
    if (code !== 0) throw new RangeError(`${where}: ${Module.lastError()}`);
  }

  // The trace buffers (bag.trace): an attnlab::ForwardTrace written into wasm
  // memory (its 11 pointers in TRACE_FIELDS order, 0 = not wanted); the
  // binding's `trace` field is its address, or 0 without a trace. `sizes`
  // maps each wanted TraceOut field to its float count.
  function traceArgs(arena, sizes) {
    if (!sizes) return { ptr: 0, bufs: null };
    const bufs = {};
    for (const key of Object.keys(sizes)) bufs[key] = arena.f32(sizes[key]);
    const ptr = arena.alloc(4 * TRACE_FIELDS.length);
    TRACE_FIELDS.forEach((key, i) => { Module.HEAP32[(ptr >>> 2) + i] = bufs[key] ?? 0; });
    return { ptr, bufs };
  }
  function readTrace(arena, t, sizes) {
    if (!sizes) return undefined;
    const out = {};
    for (const key of Object.keys(sizes)) out[key] = arena.readF32(t.bufs[key], sizes[key]);
    return /** @type {import('./backend.js').TraceOut} */ (out);
  }

  return {
    name,
    async: false,
    // The Emscripten module, for the block graph's handle (web/lib/graph/): training and whole models.
    wasmModule: Module,
    kernelArch: Module.kernelArch(),

    // p: { batch, heads, kvHeads?, lq, lk, d, dv, q, k, v, scale?, softcap?, mask, needWeights }
    sdpa(p) {
      return run(p.where, (arena) => {
        const q = arena.fromF32(p.q);
        const k = p.k === p.q ? q : arena.fromF32(p.k);
        const v = p.v === p.k ? k : arena.fromF32(p.v);
        const nOut = p.batch * p.heads * p.lq * p.dv;
        const nW = p.batch * p.heads * p.lq * p.lk;
        const out = arena.f32(nOut);
        const weights = p.needWeights ? arena.f32(nW) : 0;
        const hasScale = p.scale !== undefined;
        const sizes = p.trace ? { scores: nW, ...(p.softcap !== undefined ? { capped: nW } : {}), masked: nW, weights: nW } : null;
        const trace = traceArgs(arena, sizes);
        const hasSoftcap = p.softcap !== undefined;
        check(p.where, Module.sdpa({
          batch: p.batch, heads: p.heads, kvHeads: p.kvHeads ?? p.heads, lq: p.lq, lk: p.lk, d: p.d, dv: p.dv, q, k, v,
          hasScale, scale: hasScale ? p.scale : 1, hasSoftcap, softcap: hasSoftcap ? p.softcap : 0,
          mask: maskArgs(arena, p.mask), output: out, weights, trace: trace.ptr,
        }));
        return { output: arena.readF32(out, nOut), weights: weights ? arena.readF32(weights, nW) : null, trace: readTrace(arena, trace, sizes) };
      });
    },

    // An op of the op table (ops.js): the bag goes to the binding of the same
    // name as its value_object (bindings/<op>.cpp), typed arrays copied in and
    // passed as pointers (null as 0); each output field gets a buffer of
    // outputs[field] floats, passed as a pointer and read back after the call.
    op(name, args, outputs) {
      return run(name, (arena) => {
        const call = {};
        for (const [field, v] of Object.entries(args)) {
          call[field] = v instanceof Float32Array ? arena.fromF32(v) : v instanceof Int32Array ? arena.fromI32(v) : v === null ? 0 : v;
        }
        for (const [field, n] of Object.entries(outputs)) call[field] = arena.f32(n);
        check(name, Module[name](call));
        const out = {};
        for (const [field, n] of Object.entries(outputs)) out[field] = arena.readF32(call[field], n);
        return /** @type {any} */ (out);
      });
    },

    addLayerNorm(rows, dim, x, residual, gamma, beta, eps) {
      return run('layerNorm', (arena) => {
        const px = arena.fromF32(x);
        const pr = arena.fromF32(residual);
        const pg = arena.fromF32(gamma);
        const pb = arena.fromF32(beta);
        const y = arena.f32(rows * dim);
        check('layerNorm', Module.addLayerNorm(rows, dim, px, pr, pg, pb, eps, y));
        return arena.readF32(y, rows * dim);
      });
    },

    dropoutUniform(seed, i) {
      return Module.dropoutUniform(seed >>> 0, i >>> 0);
    },

    // ---- multi-head attention and the layer: opaque handles -------------
    createMha(cfg) {
      const rope = cfg.rope ?? null;
      const h = Module.mhaCreate({
        embedDim: cfg.embedDim, numHeads: cfg.numHeads, kdim: cfg.kdim, vdim: cfg.vdim, bias: cfg.bias, seed: cfg.seed >>> 0,
        numKvHeads: cfg.numKvHeads ?? cfg.numHeads, rope: rope !== null, ropeBase: rope ? rope.base : 10000,
        ropeDim: rope ? rope.rotaryDim : 0, ropeInterleaved: rope ? rope.interleaved : false,
      });
      if (!h) throw new RangeError(`multiHeadAttention: ${Module.lastError()}`);
      return { kind: 'mha', handle: h };
    },
    createLayer(cfg) {
      const h = Module.layerCreate({
        embedDim: cfg.embedDim, numHeads: cfg.numHeads, bias: cfg.bias, seed: cfg.seed >>> 0, dropout: cfg.dropout, eps: cfg.eps,
      });
      if (!h) throw new RangeError(`selfAttentionLayer: ${Module.lastError()}`);
      return { kind: 'layer', handle: h, mha: Module.layerMha(h) };
    },
    destroy(obj) {
      if (obj.kind === 'mha') Module.mhaDestroy(obj.handle);
      else Module.layerDestroy(obj.handle);
    },
    heldBytes(obj) {
      return obj.kind === 'mha' ? Module.mhaHeldBytes(obj.handle) : Module.layerHeldBytes(obj.handle);
    },
    setWeight(obj, key, data, layout) {
      const mha = obj.kind === 'mha' ? obj.handle : obj.mha;
      run('setWeights', (arena) => {
        check('setWeights', Module.mhaSetWeight(mha, WEIGHT_IDS[key], arena.fromF32(data), LAYOUTS[layout]));
      });
    },
    getWeight(obj, key, layout, count) {
      const mha = obj.kind === 'mha' ? obj.handle : obj.mha;
      return run('getWeights', (arena) => {
        const out = arena.f32(count);
        check('getWeights', Module.mhaGetWeight(mha, WEIGHT_IDS[key], LAYOUTS[layout], out));
        return arena.readF32(out, count);
      });
    },
    setNorm(obj, gamma, beta) {
      run('setWeights', (arena) => {
        check('setWeights', Module.layerSetNorm(obj.handle, arena.fromF32(gamma), arena.fromF32(beta)));
      });
    },
    getNorm(obj, dim) {
      return run('getWeights', (arena) => {
        const g = arena.f32(dim);
        const b = arena.f32(dim);
        check('getWeights', Module.layerGetNorm(obj.handle, g, b));
        return { gamma: arena.readF32(g, dim), beta: arena.readF32(b, dim) };
      });
    },

    mhaForward(obj, p) {
      return run(p.where, (arena) => {
        const q = arena.fromF32(p.query);
        const k = p.key === p.query ? q : arena.fromF32(p.key);
        const v = p.value === p.key ? k : arena.fromF32(p.value);
        const nOut = p.batch * p.lq * p.embedDim;
        const nW = p.batch * (p.averageWeights ? 1 : p.numHeads) * p.lq * p.lkTotal;
        const out = arena.f32(nOut);
        const weights = p.needWeights ? arena.f32(nW) : 0;
        const sizes = p.trace ? mhaTraceSizes(p.batch, p.lq, p.lkTotal, p.embedDim, p.numHeads) : null;
        const trace = traceArgs(arena, sizes);
        // Threads: the workers compute the output projection while this
        // thread allocates the result and touches its pages (fresh memory
        // costs page faults: ~6 ms for 1.5 MB on the bench machine).
        const overlap = nOut >= OVERLAP_MIN_FLOATS && Module.threadCount() > 1;
        let output = null;
        try {
          check(p.where, Module.mhaForward(obj.handle, {
            batch: p.batch, lq: p.lq, lk: p.lk, query: q, key: k, value: v, mask: maskArgs(arena, p.mask),
            output: out, weights, averageWeights: p.averageWeights, cache: p.cache ? p.cache.handle : 0, trace: trace.ptr,
            startOutputOnly: overlap,
          }));
          if (overlap) output = new Float32Array(nOut).fill(0);
        } finally {
          if (overlap) Module.joinTasks();
        }
        if (output) output.set(Module.HEAPF32.subarray(out >>> 2, (out >>> 2) + nOut));
        else output = arena.readF32(out, nOut);
        return { output, weights: weights ? arena.readF32(weights, nW) : null, trace: readTrace(arena, trace, sizes) };
      });
    },

    // ---- key/value cache of an MHA (incremental decoding) ------------------
    createKvCache(obj, batch, maxLength) {
      const h = Module.kvCacheCreate(obj.handle, batch, maxLength);
      if (!h) throw new RangeError(`multiHeadAttention.createKVCache: ${Module.lastError()}`);
      return { kind: 'kvcache', handle: h };
    },
    kvCacheReset(c) {
      Module.kvCacheReset(c.handle);
    },
    kvCacheTruncate(c, length) {
      check('kvCache.truncate', Module.kvCacheTruncate(c.handle, length));
    },
    kvCacheHeldBytes(c) {
      return Module.kvCacheHeldBytes(c.handle);
    },
    kvCacheDestroy(c) {
      if (!c.handle) return;
      Module.kvCacheDestroy(c.handle);
      c.handle = 0;
    },

    layerForward(obj, p) {
      return run(p.where, (arena) => {
        const x = arena.fromF32(p.x);
        const nOut = p.batch * p.seqLen * p.embedDim;
        const nW = p.batch * (p.averageWeights ? 1 : p.numHeads) * p.seqLen * p.seqLen;
        const out = arena.f32(nOut);
        const weights = p.needWeights ? arena.f32(nW) : 0;
        const sizes = p.trace
          ? { ...mhaTraceSizes(p.batch, p.seqLen, p.seqLen, p.embedDim, p.numHeads), attention: nOut, dropout: nOut, residual: nOut }
          : null;
        const trace = traceArgs(arena, sizes);
        check(p.where, Module.layerForward(obj.handle, {
          batch: p.batch, seqLen: p.seqLen, x, mask: maskArgs(arena, p.mask), training: p.training,
          dropoutSeed: p.dropoutSeed >>> 0, output: out, weights, averageWeights: p.averageWeights, trace: trace.ptr,
        }));
        return { output: arena.readF32(out, nOut), weights: weights ? arena.readF32(weights, nW) : null, trace: readTrace(arena, trace, sizes) };
      });
    },

    /** Size of the wasm memory in bytes (it grows on demand and never shrinks). */
    memoryBytes() {
      return Module.HEAPU8.length;
    },

    /** Bytes currently allocated by malloc in the wasm heap (for leak tests). */
    heapBytesInUse() {
      return Module.heapBytesInUse();
    },
  };
}
