// Browser side of `npm run bench -- --browser`: the same implementation
// modules as the Node children, with browser loaders. Everything is served by
// the local test server from the repository root (node_modules included).
// bench/browser-bench.mjs calls run(spec) in a fresh browser context per
// configuration.
import { runOne } from '../common.mjs';

const ROOT = new URL('../../', import.meta.url);
const at = (p) => new URL(p, ROOT).href;

function script(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`failed to load ${src}`));
    document.head.append(s);
  });
}

const env = {
  mode: 'browser',
  // spec.web: the driver's snapshot of web/ (one build per run).
  async loadOurs(backend) {
    const { init } = await import(new URL('index.js', new URL(webPath, ROOT)).href);
    return init({ backend });
  },
  // The bench module (bindings/bench/), built by scripts/bench.sh.
  async loadBenchModule(variant) {
    const base = at(`build/wasm-${variant}/attention_lab_bench_${variant}`);
    let factory;
    try {
      factory = (await import(`${base}.mjs`)).default;
    } catch {
      return null;
    }
    return factory({ locateFile: () => `${base}.wasm`, print: () => {}, printErr: () => {} });
  },
  async loadOrt() {
    const ort = await import(at('node_modules/onnxruntime-web/dist/ort.wasm.min.mjs'));
    ort.env.wasm.wasmPaths = at('node_modules/onnxruntime-web/dist/');
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.proxy = false;
    ort.env.logLevel = 'error';
    return ort;
  },
  async loadTf() {
    await script(at('node_modules/@tensorflow/tfjs-core/dist/tf-core.min.js'));
    await script(at('node_modules/@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js'));
    const tf = globalThis.tf;
    tf.wasm.setWasmPaths(at('node_modules/@tensorflow/tfjs-backend-wasm/dist/'));
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    tf.env().set('WASM_HAS_SIMD_SUPPORT', true);
    await tf.setBackend('wasm');
    await tf.ready();
    return tf;
  },
  async modelBytes(c, variant) {
    const r = await fetch(at(`bench/results/models/${c.id}.${variant}.onnx`));
    if (!r.ok) throw new Error(`model ${c.id}.${variant}: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  },
};

const MODULES = {
  ours: () => import('../impl-ours.mjs'),
  ort: () => import('../impl-ort.mjs'),
  tfjs: () => import('../impl-tfjs.mjs'),
  ceiling: () => import('../ceiling.mjs'),
};

function toBase64(arr) {
  const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Runs one configuration; outputs come back base64-encoded (float32 bytes). */
let webPath = 'web/';

export async function run(spec) {
  if (spec.web) webPath = spec.web;
  const family = spec.impl.startsWith('ours-') ? 'ours' : spec.impl.startsWith('ort-') ? 'ort' : spec.impl === 'tfjs' ? 'tfjs' : 'ceiling';
  const { prepare } = await MODULES[family]();
  const r = await runOne(prepare, spec, env);
  if (r.outputs) {
    const enc = {};
    for (const [k, v] of Object.entries(r.outputs)) if (v) enc[k] = toBase64(v);
    r.outputs = enc;
  }
  r.userAgent = navigator.userAgent;
  if (spec.impl === 'ours-webgpu' && navigator.gpu) {
    try {
      const adapter = await navigator.gpu.requestAdapter();
      const i = adapter?.info ?? {};
      r.info = { ...r.info, gpuAdapter: [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ') || 'unknown' };
    } catch {
      // informational only
    }
  }
  r.crossOriginIsolated = globalThis.crossOriginIsolated;
  return r;
}
