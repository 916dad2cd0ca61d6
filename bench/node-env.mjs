// Node side of the implementation scripts: how to load each library in Node,
// and the child-process entry every bench/impl-*.mjs uses:
//
//   node bench/impl-ort.mjs '{"case":"mha-1x128x512h8","impl":"ort-attn","budgetMs":1500,"dump":"/tmp/x"}'
//
// prints one JSON line: { median, min, runs, flops?, info } or { skip } / { error }.
// With "dump", the outputs are written to <dump>.output.f32 (and
// <dump>.weights.f32) for the driver's cross-check.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runOne } from './common.mjs';
import { buildModel } from './onnx-models.mjs';

const require = createRequire(import.meta.url);

export const nodeEnv = {
  mode: 'node',
  // ATTNLAB_BENCH_WEB: the driver's snapshot of web/ (one build per run).
  async loadOurs(backend, threads = 1) {
    const dir = process.env.ATTNLAB_BENCH_WEB;
    const { init } = await import(dir ? pathToFileURL(path.join(dir, 'node.js')).href : '../web/node.js');
    return init(threads > 1 ? { backend, threads } : { backend });
  },
  // The bench module (bindings/bench/: internal kernel timings such as
  // benchGemm), built by scripts/bench.sh into build/wasm-<variant>/.
  async loadBenchModule(variant) {
    const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'build', `wasm-${variant}`);
    const glue = path.join(dir, `attention_lab_bench_${variant}.mjs`);
    if (!fs.existsSync(glue)) return null;
    const factory = (await import(pathToFileURL(glue).href)).default;
    const wasmBinary = fs.readFileSync(path.join(dir, `attention_lab_bench_${variant}.wasm`));
    return factory({ wasmBinary, print: () => {}, printErr: () => {} });
  },
  async loadOrt(threads = 1) {
    const ort = await import('onnxruntime-web');
    const dist = path.dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
    ort.env.wasm.wasmPaths = pathToFileURL(dist + path.sep).href;
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.proxy = false;
    ort.env.logLevel = 'error';
    return ort;
  },
  async loadTf() {
    const tf = require('@tensorflow/tfjs-core');
    const wasm = require('@tensorflow/tfjs-backend-wasm');
    const dist = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
    wasm.setWasmPaths(dist + path.sep);
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    tf.env().set('WASM_HAS_SIMD_SUPPORT', true);
    await tf.setBackend('wasm');
    await tf.ready();
    return tf;
  },
  async modelBytes(c, variant) {
    return buildModel(c, variant);
  },
};

/** Runs `prepare` as a child process when `moduleUrl` is the main script. */
export async function runIfMain(moduleUrl, prepare) {
  if (!process.argv[1] || pathToFileURL(path.resolve(process.argv[1])).href !== moduleUrl) return;
  const spec = JSON.parse(process.argv[2] ?? '{}');
  const result = await runOne(prepare, spec, nodeEnv);
  if (spec.dump && result.outputs) {
    for (const [k, arr] of Object.entries(result.outputs)) {
      if (arr) fs.writeFileSync(`${spec.dump}.${k}.f32`, new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength));
    }
  }
  delete result.outputs;
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}
