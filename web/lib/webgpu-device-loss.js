// The device-loss state machine of the webgpu backend.
//
// States: 'gpu' (calls run on the device) → 'lost' (the device was lost or
// failed; every later call — including calls in flight, which are rerun — is
// answered by the wasm backend that `fallbackFactory()` loads once).
//   - `device.lost` resolving (driver reset, tab in background too long,
//     simulateDeviceLoss()) emits 'devicelost' (detail { reason, message })
//     and then 'backendchange' (detail { from: 'webgpu', to, reason }) once the
//     wasm backend is loaded.
//   - A WebGPU validation error (an internal failure: arguments are validated
//     before any GPU work) also moves to 'lost', with 'backendchange' only
//     (reason 'gpu-error').
// No rejection escapes unhandled: a failing fallback rejects the calls that
// need it, and a later call retries the load.
//
// The same wasm backend also answers, before any loss, the work that lives in
// wasm memory (KV-cache decode steps): `loadWasm` loads it without a switch.

function makeEvent(type, detail) {
  if (typeof CustomEvent === 'function') return new CustomEvent(type, { detail });
  const ev = new Event(type);
  Object.defineProperty(ev, 'detail', { value: detail });
  return ev;
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @param {{ device: any, pool: { destroyAll(): void } }} rt the GPU runtime
 * @param {(() => Promise<import('./backend.js').Backend>) | null} fallbackFactory
 */
export function createDeviceLoss(rt, fallbackFactory) {
  const events = new EventTarget();
  const state = {
    lost: false,
    /** @type {{ reason: string, message: string } | null} */
    lostInfo: null,
    /** @type {import('./backend.js').Backend | null} the wasm backend once calls moved to it */
    fallback: null,
    fallbackPromise: null,
    /** @type {import('./backend.js').Backend | null} the wasm backend once loaded */
    wasm: null,
    wasmPromise: null,
  };
  // Calls answered by the wasm fallback, and GPU calls cut short by the loss and rerun there.
  const counters = { fallbackCalls: 0, reruns: 0 };
  const emit = (type, detail) => events.dispatchEvent(makeEvent(type, detail));

  // The wasm backend, loaded once: it answers every call after a device loss
  // (ensureFallback) and, before one, the decode steps that use a KV cache,
  // whose cache lives in wasm memory (`state.wasm` holds it once loaded).
  function loadWasm(why) {
    if (state.wasmPromise) return state.wasmPromise;
    const p = Promise.resolve()
      .then(() => {
        if (typeof fallbackFactory !== 'function') throw new Error(`webgpu: ${why} and no wasm fallback was configured`);
        return fallbackFactory();
      })
      .then((fb) => {
        state.wasm = fb;
        return fb;
      });
    p.catch(() => {
      if (state.wasmPromise === p) state.wasmPromise = null;
    });
    state.wasmPromise = p;
    return p;
  }

  function ensureFallback() {
    if (state.fallbackPromise) return state.fallbackPromise;
    const p = loadWasm('the GPU device was lost')
      .then((fb) => {
        state.fallback = fb;
        emit('backendchange', { from: 'webgpu', to: fb.name, reason: state.lostInfo?.reason ?? 'unknown' });
        return fb;
      });
    // Whoever needs the fallback awaits p and sees its error; this handler
    // only keeps a failure from being an unhandled rejection (and allows a retry).
    p.catch(() => {
      if (state.fallbackPromise === p) state.fallbackPromise = null;
    });
    state.fallbackPromise = p;
    return p;
  }

  const lostHandled = rt.device.lost.then((lostInfo) => {
    const info = { reason: lostInfo?.reason ?? 'unknown', message: lostInfo?.message ?? '' };
    if (!state.lost) {
      state.lost = true;
      state.lostInfo = info;
    }
    try {
      rt.pool.destroyAll();
    } catch {
      // the device is gone; nothing to free
    }
    emit('devicelost', info);
    ensureFallback();
  });

  // A WebGPU validation error is internal (arguments are checked before any
  // GPU work): stop using the device and answer from wasm, as after a loss.
  function giveUpGpu(err) {
    if (state.lost) return;
    state.lost = true;
    state.lostInfo = { reason: 'gpu-error', message: err.message };
    rt.pool.destroyAll();
    ensureFallback();
  }

  /**
   * Runs a call on the GPU, or on the wasm fallback once the device is lost
   * (also when it is lost while the call is in flight) or has failed.
   * @template T
   * @param {() => Promise<T>} gpuCall
   * @param {(fb: import('./backend.js').Backend) => T | Promise<T>} wasmCall
   * @returns {Promise<T>}
   */
  async function run(gpuCall, wasmCall) {
    if (!state.lost) {
      try {
        return await gpuCall();
      } catch (err) {
        if (err && err.gpuValidation) giveUpGpu(err);
        if (!state.lost && !(err && err.gpuFailure)) throw err;
        if (!state.lost) await Promise.race([lostHandled, delay(200)]);
        if (!state.lost) throw err;
        counters.reruns++;
      }
    }
    const fb = await ensureFallback();
    counters.fallbackCalls++;
    return wasmCall(fb);
  }

  return { state, events, counters, lostHandled, loadWasm, run };
}
