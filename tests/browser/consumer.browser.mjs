// Consumer builds: the package as users get it. `npm run pack`, then the tarball
// is installed (offline) into fresh temporary apps that run multi-head
// attention in headless Chromium, each served from its own 127.0.0.1 server
// under the strict CSP (no other network: the harness aborts and reports any
// other request):
//   * a Vite production build (vite build, the repo's devDependency);
//   * a webpack 5 production build (webpack's Node API, mode 'production');
//   * a plain static folder: the installed package copied as is, an
//     index.html with <script type="module"> and no bundler at all.
// (Node ESM `import` and CommonJS `require` of the tarball are covered by
// tests/js/package.test.js.) Each app checks the backend `init()` picks and
// both wasm variants explicitly, against expected values computed here in
// Node with the same seed, and records CSP violations. The servers send
// COOP/COEP, so each app also runs init({ backend: 'wasm', threads: 2 }): the
// threaded build (its worker script and glue emitted or copied as assets).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from './harness.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { pack } from '../../scripts/pack.mjs';

const E = 64;
const H = 4;
const SEED = 7;
const SHAPE = [2, 5, E];

// The app code, the same in every consumer: MHA with a causal mask on a fixed
// input, through init() ('auto'), 'wasm', 'wasm-scalar' and 'wasm' on 2 threads.
const APP_JS = (importFrom) => `import { init } from ${JSON.stringify(importFrom)};

async function run(backend, threads) {
  const lab = await init(backend ? { backend, ...(threads ? { threads } : {}) } : undefined);
  const mha = lab.multiHeadAttention({ embedDim: ${E}, numHeads: ${H}, seed: ${SEED} });
  const n = ${SHAPE.reduce((a, b) => a * b, 1)};
  const x = { data: Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)), shape: ${JSON.stringify(SHAPE)} };
  const r = await mha.forward(x, x, x, { mask: { kind: 'causal' } });
  mha.dispose();
  const result = { backend: lab.backend, threads: lab.threads, output: Array.from(r.output.data), weights: Array.from(r.weights.data), shape: r.output.shape };
  if (threads) lab.dispose();
  return result;
}

async function main() {
  const out = document.getElementById('out');
  try {
    const results = [];
    for (const b of [null, 'wasm', 'wasm-scalar']) results.push(await run(b));
    results.push(await run('wasm', 2));
    window.__consumer = { ok: true, results };
    out.textContent = 'ok';
  } catch (e) {
    window.__consumer = { ok: false, error: String(e && e.stack || e) };
    out.textContent = 'error';
  }
}
main();
`;

const HTML = (src) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>attention-lab consumer</title>
<script type="module" src="${src}"></script></head>
<body><p id="out">loading</p></body></html>
`;

// ---------------------------------------------------------------------------
// Shared setup: pack once, install into each app (memoised).

let workDir = null;
let tarball = null;
let expected = null;
process.on('exit', () => {
  if (workDir && !process.env.KEEP_CONSUMER_APPS) fs.rmSync(workDir, { recursive: true, force: true });
});

async function setup() {
  if (tarball) return;
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-consumer-'));
  // Packed as published (scripts/pack.mjs: the manifest without repository-only fields).
  tarball = path.join(workDir, pack({ destination: workDir, root: REPO_ROOT }).filename);
  // Expected values, computed in Node from the repository's own entry.
  const { init } = await import(pathToFileURL(path.join(REPO_ROOT, 'web/node.js')).href);
  const lab = await init({ backend: 'wasm-scalar' });
  const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: SEED });
  const n = SHAPE.reduce((a, b) => a * b, 1);
  const x = { data: Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)), shape: SHAPE };
  const r = mha.forwardSync(x, x, x, { mask: { kind: 'causal' } });
  mha.dispose();
  expected = { output: Array.from(r.output.data), weights: Array.from(r.weights.data) };
}

/** A fresh app folder with the tarball installed; returns its path. */
function makeApp(name, files) {
  const app = path.join(workDir, name);
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true, type: 'module' }));
  // --prefer-offline: see tests/js/package.test.js.
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', tarball], { cwd: app, stdio: 'ignore' });
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(app, f)), { recursive: true });
    fs.writeFileSync(path.join(app, f), text);
  }
  return app;
}

function listFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out;
}

/**
 * Serves `root` on 127.0.0.1 under the strict CSP, opens `page` in Chromium,
 * waits for the app, and checks its results, requests and CSP violations.
 */
async function runInBrowser(h, root, pagePath, label) {
  const server = await startServer({ port: 0, root, csp: true, quiet: true, redirectRoot: pagePath });
  const page = await h.newPage({
    initScript: () => {
      window.__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    },
  });
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  try {
    await page.goto(server.url.replace(/\/$/, '') + pagePath);
    await page.waitForFunction(() => window.__consumer !== undefined, null, { timeout: 60000 });
    const r = await page.evaluate(() => ({ consumer: window.__consumer, csp: window.__csp }));
    assert.ok(r.consumer.ok, `${label}: the app failed: ${r.consumer.error}`);
    assert.deepEqual(r.csp, [], `${label}: CSP violations`);
    assert.deepEqual(page.problems(), [], `${label}: console errors or off-host requests`);
    const [auto, simd, scalar, threaded] = r.consumer.results;
    assert.deepEqual([simd.backend, scalar.backend, threaded.backend], ['wasm', 'wasm-scalar', 'wasm'], label);
    assert.deepEqual([simd.threads, threaded.threads], [1, 2], `${label}: threads`);
    assert.deepEqual(threaded.output, simd.output, `${label}: 2 threads differ from 1 thread`);
    assert.ok(['wasm', 'wasm-scalar', 'webgpu'].includes(auto.backend), `${label}: auto picked ${auto.backend}`);
    for (const res of r.consumer.results) {
      assert.deepEqual(res.shape, SHAPE, label);
      let maxDiff = 0;
      for (let i = 0; i < expected.output.length; i++) maxDiff = Math.max(maxDiff, Math.abs(res.output[i] - expected.output[i]));
      for (let i = 0; i < expected.weights.length; i++) maxDiff = Math.max(maxDiff, Math.abs(res.weights[i] - expected.weights[i]));
      assert.ok(maxDiff < 1e-4, `${label} (${res.backend}): max difference from Node ${maxDiff}`);
    }
    const wasmFetched = requests.filter((u) => /\.wasm(\?|$)/.test(u));
    assert.ok(wasmFetched.length >= 3, `${label}: expected the simd, scalar and threads wasm to be fetched, got ${wasmFetched.join(', ')}`);
    assert.ok(requests.every((u) => u.startsWith(server.url.replace(/\/$/, '')) || u.startsWith('data:') || u.startsWith('blob:')), `${label}: requests outside the app's server`);
    return { backend: auto.backend, wasm: wasmFetched.map((u) => new URL(u).pathname) };
  } finally {
    await page.closeAll();
    await server.close();
  }
}

// ---------------------------------------------------------------------------

export default function (t) {
  t.test('Vite production build of an app that imports the packed package', async (h) => {
    await setup();
    const app = makeApp('vite', { 'index.html': HTML('/main.js'), 'main.js': APP_JS('attention-lab') });
    const { build } = await import('vite');
    await build({ root: app, configFile: false, logLevel: 'error', build: { outDir: path.join(app, 'dist'), emptyOutDir: true } });
    const files = listFiles(path.join(app, 'dist'));
    assert.equal(files.filter((f) => f.endsWith('.wasm')).length, 3, `vite emitted ${files.join(', ')}`);
    const r = await runInBrowser(h, path.join(app, 'dist'), '/index.html', 'vite');
    console.log(`    vite: ${files.length} files, auto → ${r.backend}, wasm ${r.wasm.join(' ')}`);
  }, { timeout: 240000 });

  t.test('webpack 5 production build of an app that imports the packed package', async (h) => {
    await setup();
    const app = makeApp('webpack', { 'src/main.js': APP_JS('attention-lab'), 'dist/index.html': HTML('./main.js') });
    const { default: webpack } = await import('webpack');
    const stats = await new Promise((resolve, reject) => {
      webpack({
        mode: 'production',
        context: app,
        entry: './src/main.js',
        target: 'web',
        devtool: false,
        output: { path: path.join(app, 'dist'), filename: 'main.js', publicPath: 'auto', clean: false },
        resolve: { modules: [path.join(app, 'node_modules')] },
        performance: { hints: false },
        infrastructureLogging: { level: 'error' },
      }, (err, s) => (err ? reject(err) : resolve(s)));
    });
    assert.ok(!stats.hasErrors(), `webpack errors:\n${stats.toString({ all: false, errors: true })}`);
    const files = listFiles(path.join(app, 'dist'));
    assert.equal(files.filter((f) => f.endsWith('.wasm')).length, 3, `webpack emitted ${files.join(', ')}`);
    const r = await runInBrowser(h, path.join(app, 'dist'), '/index.html', 'webpack');
    console.log(`    webpack: ${files.length} files, auto → ${r.backend}, wasm ${r.wasm.join(' ')}`);
  }, { timeout: 240000, long: true });

  // Rollup and esbuild do not copy assets referenced as
  // new URL('./x.wasm', import.meta.url); the README's recipe (ESM output,
  // copy web/dist/*.wasm (+ the threaded build's worker script and glue), pass locateFile) is checked here with rolldown, the
  // Rollup-compatible bundler that ships with Vite (skipped if absent).
  t.test('Rollup-style build (rolldown, ESM output) with the README recipe: copy the .wasm, pass locateFile', async (h) => {
    let rolldown;
    try {
      ({ rolldown } = await import('rolldown'));
    } catch {
      console.log('    rolldown not installed: skipped');
      return;
    }
    await setup();
    const app = makeApp('rollup', {
      'src/main.js': APP_JS('attention-lab').replace(
        'await init(backend ? { backend, ...(threads ? { threads } : {}) } : undefined)',
        'await init({ ...(backend ? { backend, ...(threads ? { threads } : {}) } : {}), locateFile: (name) => new URL(`./assets/${name}`, document.baseURI).href })',
      ),
      'dist/index.html': HTML('./main.js'),
    });
    const bundle = await rolldown({ input: path.join(app, 'src/main.js'), platform: 'browser', logLevel: 'silent', cwd: app });
    await bundle.write({ dir: path.join(app, 'dist'), format: 'es', entryFileNames: 'main.js' });
    await bundle.close();
    fs.mkdirSync(path.join(app, 'dist', 'assets'));
    for (const f of ['attention_lab_simd.wasm', 'attention_lab_scalar.wasm', 'attention_lab_threads.wasm',
      'attention_lab_threads.worker.js', 'attention_lab_threads.mjs']) {
      fs.copyFileSync(path.join(app, 'node_modules/attention-lab/web/dist', f), path.join(app, 'dist', 'assets', f));
    }
    const r = await runInBrowser(h, path.join(app, 'dist'), '/index.html', 'rolldown');
    console.log(`    rolldown: auto → ${r.backend}, wasm ${r.wasm.join(' ')}`);
  }, { timeout: 120000 });

  t.test('plain static folder with <script type="module">, no bundler', async (h) => {
    await setup();
    const app = makeApp('static', {});
    // What a user without a bundler does: copy the installed package next to
    // the page and import its browser entry by relative URL.
    const site = path.join(app, 'site');
    fs.cpSync(path.join(app, 'node_modules', 'attention-lab'), path.join(site, 'vendor', 'attention-lab'), { recursive: true });
    fs.writeFileSync(path.join(site, 'index.html'), HTML('./app.js'));
    fs.writeFileSync(path.join(site, 'app.js'), APP_JS('./vendor/attention-lab/web/index.js'));
    const r = await runInBrowser(h, site, '/index.html', 'static');
    console.log(`    static: auto → ${r.backend}, wasm ${r.wasm.join(' ')}`);
  }, { timeout: 120000 });
}
