// The webgpu backend: the Backend interface of backend.d.ts (same methods,
// argument bags and return shapes as wasm-backend.js) computed with the WGSL
// kernels of web/webgpu/. Methods that compute return Promises (`async:
// true`); the wrapper awaits them. Every attention variant (GQA/MQA, softcap,
// maskFill, causal align/offset, windows, ALiBi, RoPE) runs on the GPU; KV-cache
// decode steps run on wasm. Five parts:
//   - setup (createWebGpuBackend, below): adapter, device, runtime, and the
//     wasm backend (loaded at creation: the default weights and the dropout
//     hash come from the C++ core through it);
//   - the device-loss state machine and wasm fallback: webgpu-device-loss.js;
//   - weights on the GPU: module objects and KV caches (webgpu-modules.js), whole models (webgpu-model.js);
//   - the MHA recording and the variants' inputs: webgpu-attention.js;
//   - op composition (this file): each op recorded as kernels into a job
//     (webgpu-ops.js), run on the GPU, or on wasm once the device is lost.
//
// Shape legend: B batch, Lq/Lk (L) sequence, E embed, H heads, D head dim,
// Dv value head dim.
import { disposedError } from './errors.js';
import { GpuRuntime } from './webgpu-runtime.js';
import * as ops from './webgpu-ops.js';
import { keepScale, defaultScale, maskStrides, peFrequencies } from './webgpu-host.js';
import { createDeviceLoss } from './webgpu-device-loss.js';
import { createGpuModules } from './webgpu-modules.js';
import { createGpuModels } from './webgpu-model.js';
import { scoreBuffers, reads, readMhaTrace, expandKv, result } from './webgpu-readback.js';
import { refusedByCore, rotaryOutsideGpu, tableRows, recordRotary, recordMha, readWeights } from './webgpu-attention.js';

/**
 * Creates the webgpu backend, or resolves to null when WebGPU is unavailable
 * (no navigator.gpu, no adapter, requestDevice failing).
 * @param {object} [options]
 * @param {() => Promise<object>} [options.fallback] resolves the wasm backend
 *   used after a device loss
 * @param {object} [options.limits] lower limits to enforce than the device's
 *   (for tests), e.g. { maxStorageBufferBindingSize: 2 ** 20 }
 * @param {'low-power'|'high-performance'} [options.powerPreference]
 * @param {boolean} [options.allowFallbackAdapter=true] false: resolve to null
 *   on a software adapter (adapter.info.isFallbackAdapter, e.g. SwiftShader),
 *   which is much slower than the wasm backend
 */
export async function createWebGpuBackend(options = {}) {
  const { fallback = null, limits = {}, powerPreference, allowFallbackAdapter = true } = options ?? {};
  const gpu = globalThis.navigator && /** @type {any} */ (globalThis.navigator).gpu;
  if (!gpu) return null;
  let device;
  let info;
  try {
    const adapter = await gpu.requestAdapter(powerPreference ? { powerPreference } : undefined);
    if (!adapter) return null;
    const software = adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
    if (software && !allowFallbackAdapter) return null;
    // Ask for the adapter's buffer limits: the defaults (128 MiB bindings)
    // would refuse weights that the hardware can hold.
    const requiredLimits = {};
    for (const name of ['maxStorageBufferBindingSize', 'maxBufferSize']) {
      if (typeof adapter.limits[name] === 'number') requiredLimits[name] = adapter.limits[name];
    }
    device = await adapter.requestDevice({ requiredLimits, label: 'attention-lab' });
    if (!device) return null;
    info = adapter.info ?? (typeof adapter.requestAdapterInfo === 'function' ? await adapter.requestAdapterInfo() : {});
  } catch {
    if (device) device.destroy();
    return null;
  }
  let rt;
  try {
    rt = new GpuRuntime(device, limits);
  } catch {
    device.destroy();
    return null;
  }
  const backend = makeBackend(rt, info ?? {}, fallback);
  // The wasm backend is loaded now, not at the first device loss: it holds
  // the rules written once in C++ (the default weights, the dropout hash)
  // and answers KV-cache steps.
  if (fallback) await backend.wasmReady;
  return backend;
}

/**
 * @param {GpuRuntime} rt
 * @param {object} info the adapter info
 * @param {(() => Promise<import('./backend.js').Backend>) | null} fallbackFactory
 * @returns {import('./backend.js').WebGpuBackend<import('./webgpu-modules.js').GpuModule, import('./webgpu-modules.js').GpuCache>}
 */
function makeBackend(rt, info, fallbackFactory) {
  const adapterInfo = Object.freeze({
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    isFallbackAdapter: Boolean(info.isFallbackAdapter),
  });
  const adapterLabel = [adapterInfo.vendor, adapterInfo.architecture, adapterInfo.device, adapterInfo.description]
    .filter(Boolean).join(' ') || 'unknown adapter';
  const dl = createDeviceLoss(rt, fallbackFactory);
  const { state, events, run, loadWasm } = dl;
  const modules = createGpuModules(rt, dl);
  const { wasmObject } = modules;

  // Builds a job synchronously (so its error scopes hold only its own work), then submits it.
  function runJob(where, build) {
    const job = rt.job(where);
    try {
      build(job);
    } catch (err) {
      job.abort();
      throw err;
    }
    return job.submit();
  }

  // The inputs the C++ core provides once (through the wasm backend): the
  // ALiBi default slopes [H] and the RoPE cos/sin tables, cached.
  const slopesCache = new Map();
  async function slopesFor(mask, H) {
    if (!mask.alibi) return null;
    if (mask.slopes) return mask.slopes;
    const fb = slopesCache.has(H) ? null : await loadWasm('the ALiBi default slopes need the wasm backend');
    if (fb) slopesCache.set(H, (await fb.op('alibiSlopes', { heads: H }, { out: H })).out);
    return slopesCache.get(H);
  }
  const tableCache = new Map();
  async function ropeTable(rows, R, base) {
    const key = `${R}:${base}`;
    const have = tableCache.get(key);
    if (have && have.rows >= rows) return have;
    const n = Math.max(rows, have ? 2 * have.rows : 0);
    const fb = await loadWasm('the RoPE cos/sin tables need the wasm backend');
    const t = { rows: n, ...(await fb.op('rotaryCache', { maxPosition: n, rotaryDim: R, base }, { cos: n * (R / 2), sin: n * (R / 2) })) };
    tableCache.set(key, t);
    return t;
  }

  // The sinusoidal encoding on the GPU (ops.js positionalEncoding).
  function encodingOnGpu({ seqLen, dModel, base }) {
    return run(async () => (await runJob('positionalEncoding', (job) => {
      const freq = job.input('the frequencies', [Math.ceil(dModel / 2), 4], peFrequencies(dModel, base));
      const pe = job.storage('the encoding', [seqLen, dModel], seqLen * dModel);
      ops.positionalEncoding(job, freq, pe, seqLen, dModel);
      job.read(pe, seqLen * dModel);
    }))[0], async (fb) => (await fb.op('positionalEncoding', { seqLen, dModel, base }, { out: seqLen * dModel })).out);
  }

  // RoPE on the GPU (ops.js rotaryEmbedding); the cos/sin tables (given, or from the C++ core) are its input.
  function rotaryOnGpu(where, p) {
    return run(async () => {
      const R = p.rotaryDim || p.headDim;
      const tables = p.cos ? { cos: p.cos, sin: p.sin } : await ropeTable(tableRows(p), R, p.base);
      const [y] = await runJob(where, (job) => {
        const x = recordRotary(job, p, tables);
        job.read(x, p.x.length);
      });
      return y;
    }, async (fb) => (await fb.op('rotaryEmbedding', p, { out: p.x.length })).out);
  }

  const backend = {
    async: true,
    get name() {
      return state.lost && state.fallback ? state.fallback.name : 'webgpu';
    },
    get kernelArch() {
      return state.lost && state.fallback ? state.fallback.kernelArch : `webgpu (${adapterLabel})`;
    },
    adapterInfo,
    get limits() {
      return { ...rt.limits };
    },
    /** True once calls go to the wasm fallback (device lost or failed). */
    get deviceLost() {
      return state.lost;
    },
    /** { reason, message } of the loss or failure, else null. */
    get lostInfo() {
      return state.lostInfo;
    },

    // ---- events -----------------------------------------------------------
    /** 'devicelost' | 'backendchange' */
    addEventListener(type, listener, options) {
      events.addEventListener(type, listener, options);
    },
    removeEventListener(type, listener, options) {
      events.removeEventListener(type, listener, options);
    },

    // ---- diagnostics and tests ---------------------------------------------
    /** Buffer pool: { bytesAllocated, largestBuffer, buffers, idleBytes, peakBytes, created, reused, persistentBytes }. */
    poolStats() {
      return { ...rt.pool.stats(), persistentBytes: rt.persistentBytes };
    },
    resetPoolStats() {
      rt.pool.resetStats();
    },
    /** Frees every idle pooled buffer. */
    trimPool() {
      rt.pool.trim();
    },
    /** { jobs, submissions, dispatches, readbacks, readbackBytes, fallbackCalls, reruns } since creation. */
    counters() {
      return { ...rt.counters, ...dl.counters };
    },
    memoryBytes() {
      return rt.pool.bytesAllocated + rt.persistentBytes;
    },
    /** Compiles every kernel's pipeline ahead of the first call (optional). */
    warmUp() {
      return state.lost ? Promise.resolve() : rt.warmUp();
    },
    /** Destroys the device as a driver reset would; resolves once the loss is handled. */
    simulateDeviceLoss() {
      rt.device.destroy();
      return dl.lostHandled;
    },

    // ---- the backend interface (see wasm-backend.js) -----------------------
    // k and v have kvHeads heads (GQA/MQA: query head h reads kv head h·Hkv/H, no copies).
    sdpa(p) {
      // Values the core refuses: the wasm backend reports them.
      if (refusedByCore(p)) return loadWasm('checking these options needs the wasm backend').then((fb) => fb.sdpa(p));
      return run(async () => {
        const { batch: B, heads: H, lq: Lq, lk: Lk, d: D, dv: Dv } = p;
        const Hkv = p.kvHeads ?? H;
        const scale = p.scale !== undefined ? Math.fround(p.scale) : defaultScale(D);
        if (!Number.isFinite(scale)) throw new RangeError(`${p.where}: scale must be a finite float32 number (got ${p.scale})`);
        const slopes = await slopesFor(p.mask, H);
        const rd = reads();
        const results = await runJob(p.where, (job) => {
          const q = job.input('q', [B, H, Lq, D], p.q);
          const k = p.k === p.q ? q : job.input('k', [B, Hkv, Lk, D], p.k);
          const v = p.v === p.k ? k : p.v === p.q ? q : job.input('v', [B, Hkv, Lk, Dv], p.v);
          const out = job.storage('output', [B, H, Lq, Dv], B * H * Lq * Dv);
          const weights = p.needWeights || p.trace ? ops.weightsBuffer(job, B, H, Lq, Lk) : null;
          const view = {
            batch: B, heads: H, kvHeads: Hkv, lq: Lq, lk: Lk, d: D, dv: Dv, scale,
            softcap: p.softcap === undefined ? undefined : Math.fround(p.softcap),
            q: { t: q, sb: H * Lq * D, sh: Lq * D, sl: D },
            k: { t: k, sb: Hkv * Lk * D, sh: Lk * D, sl: D },
            v: { t: v, sb: Hkv * Lk * Dv, sh: Lk * Dv, sl: Dv },
            out: { t: out, sb: H * Lq * Dv, sh: Lq * Dv, sl: Dv },
            ...ops.maskInputs(job, p.mask, maskStrides, slopes),
          };
          const tr = p.trace ? scoreBuffers(job, view) : null;
          ops.attention(job, view, weights);
          rd.add(job, 'output', out, B * H * Lq * Dv);
          if (p.needWeights) rd.add(job, 'weights', weights, B * H * Lq * Lk);
          if (tr) {
            rd.add(job, 't.scores', tr.scores, B * H * Lq * Lk);
            if (tr.capped) rd.add(job, 't.capped', tr.capped, B * H * Lq * Lk);
            rd.add(job, 't.masked', tr.masked, B * H * Lq * Lk);
            rd.add(job, 't.weights', weights, B * H * Lq * Lk);
          }
        });
        return result(rd.take(results), p.needWeights, p.trace);
      }, (fb) => fb.sdpa(p));
    },

    // The op table's ops (ops.js): two WGSL kernels; the others (and calls outside them) on wasm.
    op(name, args, outputs) {
      if (name === 'positionalEncoding') return encodingOnGpu(args).then((out) => ({ out }));
      if (name === 'rotaryEmbedding' && !rotaryOutsideGpu(args)) return rotaryOnGpu(name, args).then((out) => ({ out }));
      return loadWasm(`${name} needs the wasm backend`).then((fb) => fb.op(name, args, outputs));
    },

    addLayerNorm(rows, dim, x, residual, gamma, beta, eps) {
      return run(async () => {
        const [y] = await runJob('layerNorm', (job) => {
          const tx = job.input('x', [rows, dim], x);
          const tr = residual ? job.input('residual', [rows, dim], residual) : null;
          const tg = gamma ? job.input('gamma', [dim], gamma) : null;
          const tb = beta ? job.input('beta', [dim], beta) : null;
          const ty = job.storage('y', [rows, dim], rows * dim);
          ops.addLayerNorm(job, { x: tx, residual: tr, gamma: tg, beta: tb, y: ty, rows, dim, eps: Math.fround(eps) });
          job.read(ty, rows * dim);
        });
        return y;
      }, (fb) => fb.addLayerNorm(rows, dim, x, residual, gamma, beta, eps));
    },

    /** The dropout hash of the C++ core (through the wasm backend; the GPU copy is include/dropout_hash.wgsl). */
    dropoutUniform(seed, i) {
      if (!state.wasm) throw new Error('webgpu: dropoutUniform needs the wasm backend (the fallback); create the backend with a fallback');
      return state.wasm.dropoutUniform(seed, i);
    },

    /** Resolves once the wasm backend (the fallback) is loaded. */
    wasmReady: fallbackFactory ? loadWasm('the wasm backend is needed') : Promise.resolve(null),

    /**
     * Inverted dropout of x (a copy) on the GPU: element i becomes 0 when
     * dropoutUniform(seed, i) < p, else x[i]·1/(1-p). (Tests and the page.)
     */
    dropout(x, p, seed) {
      const pf = Math.fround(p);
      const scale = keepScale(pf);
      return run(async () => {
        const [y] = await runJob('dropout', (job) => {
          const t = job.input('x', [x.length], x);
          ops.dropout(job, t, x.length, pf, scale, seed);
          job.read(t, x.length);
        });
        return y;
      }, (fb) => x.map((v, i) => (fb.dropoutUniform(seed, i) < pf ? 0 : Math.fround(v * scale))));
    },

    ...modules.methods,
    ...createGpuModels(rt, dl).methods, // whole models (lab.loadModel): webgpu-model.js

    mhaForward(obj, p) {
      if (p.cache || refusedByCore(p)) {
        const c = p.cache;
        return loadWasm('a KV-cache forward needs the wasm backend').then((fb) => {
          // Disposed while the wasm backend loaded: make no wasm copy to leak.
          if (obj.disposed) throw disposedError(p.where, 'this object', 'create a new one');
          const mha = wasmObject(fb, obj);
          if (!c) return fb.mhaForward(mha, p);
          if (!c.wasm) c.wasm = fb.createKvCache(mha, c.batch, c.maxLength);
          return fb.mhaForward(mha, { ...p, cache: c.wasm });
        });
      }
      return run(async () => {
        const { cfg } = obj;
        const E = cfg.embedDim;
        const H = cfg.numHeads;
        const Hkv = cfg.numKvHeads ?? H;
        const { batch: B, lq: Lq, lk: Lk } = p;
        const extra = {
          slopes: await slopesFor(p.mask, H),
          rope: cfg.rope ? await ropeTable(Math.max(Lq, Lk), cfg.rope.rotaryDim, cfg.rope.base) : null,
        };
        const rd = reads();
        const results = await runJob(p.where, (job) => {
          const query = job.input('query', [B, Lq, E], p.query);
          const key = p.key === p.query ? query : job.input('key', [B, Lk, cfg.kdim], p.key);
          const value = p.value === p.key ? key : p.value === p.query ? query : job.input('value', [B, Lk, cfg.vdim], p.value);
          const { out, weights, trace } = recordMha(job, obj, p, query, key, value, extra);
          rd.add(job, 'output', out, B * Lq * E);
          if (p.needWeights) readWeights(job, rd, weights, B, H, Lq, Lk, p.averageWeights);
          if (trace) readMhaTrace(job, rd, trace, weights, B, H, Lq, Lk, E, Hkv * (E / H));
        });
        const named = rd.take(results);
        if (p.trace) {
          named['t.k'] = expandKv(named['t.k'], B, Lk, H, Hkv, E / H);
          named['t.v'] = expandKv(named['t.v'], B, Lk, H, Hkv, E / H);
        }
        return result(named, p.needWeights, p.trace);
      }, (fb) => fb.mhaForward(wasmObject(fb, obj), p));
    },

    layerForward(obj, p) {
      if (refusedByCore(p)) {
        return loadWasm('this attention variant needs the wasm backend').then((fb) => {
          if (obj.disposed) throw new Error(`${p.where}: this object has been disposed; create a new one`);
          return fb.layerForward(wasmObject(fb, obj), p);
        });
      }
      return run(async () => {
        const { cfg } = obj;
        const E = cfg.embedDim;
        const { batch: B, seqLen: L } = p;
        const pDrop = Math.fround(cfg.dropout);
        const extra = { slopes: await slopesFor(p.mask, cfg.numHeads) };
        const rd = reads();
        const results = await runJob(p.where, (job) => {
          const x = job.input('x', [B, L, E], p.x);
          const { out: attn, weights, trace } = recordMha(job, obj, { ...p, lq: L, lk: L }, x, x, x, extra);
          const n = B * L * E;
          let res = attn;
          if (trace) {
            // Out of place, so that the attention, dropout and residual steps can all be read.
            const dropped = job.storage('the trace dropout', [B, L, E], n);
            const residual = job.storage('the trace residual', [B, L, E], n);
            ops.traceDropoutResidual(job, {
              attn, x, dropped, residual, n, p: pDrop, keepScale: keepScale(pDrop), seed: p.dropoutSeed, training: p.training && pDrop > 0,
            });
            res = dropped;
            Object.assign(trace, { attention: attn, dropped, residual });
          } else if (p.training && pDrop > 0) {
            ops.dropout(job, attn, n, pDrop, keepScale(pDrop), p.dropoutSeed);
          }
          const y = job.storage('output', [B, L, E], n);
          ops.addLayerNorm(job, {
            x, residual: res, gamma: obj.gpu.gamma, beta: obj.gpu.beta, y, rows: B * L, dim: E, eps: Math.fround(cfg.eps),
          });
          rd.add(job, 'output', y, n);
          if (p.needWeights) readWeights(job, rd, weights, B, cfg.numHeads, L, L, p.averageWeights);
          if (trace) {
            readMhaTrace(job, rd, trace, weights, B, cfg.numHeads, L, L, E);
            rd.add(job, 't.attention', trace.attention, n);
            rd.add(job, 't.dropout', trace.dropped, n);
            rd.add(job, 't.residual', trace.residual, n);
          }
        });
        return result(rd.take(results), p.needWeights, p.trace);
      }, (fb) => fb.layerForward(wasmObject(fb, obj), p));
    },
  };
  return backend;
}
