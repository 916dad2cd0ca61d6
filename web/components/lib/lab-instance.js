// One shared library instance per page and backend: every component and the
// tutorial page ask here, so the wasm module is fetched and compiled once.
import { init, simdSupported } from '../../index.js';

const labs = new Map();

/**
 * The shared lab for a backend: 'cpu' (the default: wasm SIMD where the
 * engine has SIMD128, else wasm scalar; the best choice for the small sizes
 * of figures), or any init() backend: 'auto' | 'wasm' | 'wasm-scalar' | 'webgpu'.
 * A failed load is forgotten, so a later call can try again.
 */
export function getLab(backend = 'cpu') {
  if (backend === 'cpu') backend = simdSupported() ? 'wasm' : 'wasm-scalar';
  if (!labs.has(backend)) {
    // Threads where the page is crossOriginIsolated (one thread elsewhere, silently).
    const p = init(backend === 'wasm' ? { backend, threads: 'auto' } : { backend });
    labs.set(backend, p);
    p.catch(() => labs.delete(backend));
  }
  return labs.get(backend);
}

/** Resolves to true when init({ backend: 'webgpu' }) works here (never rejects). */
export function webgpuAvailable() {
  if (typeof navigator === 'undefined' || !navigator.gpu) return Promise.resolve(false);
  return getLab('webgpu').then((lab) => lab.backend === 'webgpu', () => false);
}
