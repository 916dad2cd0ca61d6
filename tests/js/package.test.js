// The packed tarball (scripts/pack.mjs, as published) works from an empty
// folder: Node ESM import and CommonJS require, with no network at run time and no flags; and
// every js/ts code block of the shipped README compiles with tsc
// (`strict: true`) and runs in empty ESM and CommonJS TypeScript projects.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pack } from '../../scripts/pack.mjs';
import { ROOT, codeBlocks } from './readme-blocks.js';

const root = ROOT;
const TSC = path.join(root, 'node_modules/typescript/bin/tsc');

describe('npm pack', () => {
  let dir;
  let tarball;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-pack-'));
    const info = pack({ destination: dir });
    tarball = path.join(dir, info.filename);
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    // --prefer-offline, not --offline: `npm ci` caches the dependencies' tarballs
    // but not their registry metadata, which an install of a tarball resolves
    // (a fresh machine's cache has none; the npm registry is reachable).
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: app, stdio: 'ignore' });
  }, 180000);
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the tarball holds the wasm files, glue, wrapper and types', () => {
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const f of ['web/dist/attention_lab_simd.wasm', 'web/dist/attention_lab_scalar.wasm', 'web/dist/attention_lab_simd.mjs',
      'web/dist/attention_lab_scalar.mjs', 'web/index.js', 'web/node.js', 'web/node.cjs', 'web/index.d.ts', 'web/index.d.cts',
      'web/lib/lab.js', 'docs/js-api.md', 'README.md']) {
      expect(list).toContain(`package/${f}`);
    }
    expect(list.some((f) => f.includes('/src/') || f.includes('/tests/') || f.includes('/scripts/'))).toBe(false);
  });

  test('the installed package.json has no scripts and no dev-only fields', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'app/node_modules/attention-lab/package.json'), 'utf8'));
    expect(pkg.scripts).toBeUndefined();
    expect(pkg.devDependencies).toBeUndefined();
    expect(pkg.jest).toBeUndefined();
    expect(pkg.private).toBeUndefined();
    expect(pkg.repository).toBeDefined();
  });

  test('ESM import works in an empty app', () => {
    const app = path.join(dir, 'app');
    const script = `
      import { init } from 'attention-lab';
      const lab = await init();
      const mha = lab.multiHeadAttention({ embedDim: 512, numHeads: 8, seed: 1 });
      const x = { data: new Float32Array(2 * 5 * 512).fill(0.5), shape: [2, 5, 512] };
      const r = await mha.forward(x, x, x);
      const s = await init({ backend: 'wasm-scalar' });
      console.log(JSON.stringify({ backend: lab.backend, out: r.output.shape, w: r.weights.shape, scalar: s.backend }));`;
    fs.writeFileSync(path.join(app, 'esm.mjs'), script);
    const out = JSON.parse(execFileSync('node', ['esm.mjs'], { cwd: app, encoding: 'utf8' }));
    expect(out).toEqual({ backend: 'wasm', out: [2, 5, 512], w: [2, 8, 5, 5], scalar: 'wasm-scalar' });
  });

  test('CommonJS require works in an empty app', () => {
    const app = path.join(dir, 'app');
    const script = `
      const { init } = require('attention-lab');
      init().then((lab) => {
        const pe = lab.positionalEncoding(4, 6);
        console.log(JSON.stringify({ backend: lab.backend, shape: pe.shape, v: pe.data[6] }));
      });`;
    fs.writeFileSync(path.join(app, 'cjs.cjs'), script);
    const out = JSON.parse(execFileSync('node', ['cjs.cjs'], { cwd: app, encoding: 'utf8' }));
    expect(out.backend).toBe('wasm');
    expect(out.shape).toEqual([4, 6]);
    expect(out.v).toBeCloseTo(Math.sin(1), 6);
  });

  test('threads work from the installed package (ESM and CommonJS), offline, with no flags', () => {
    const app = path.join(dir, 'app');
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const f of ['attention_lab_threads.wasm', 'attention_lab_threads.mjs', 'attention_lab_threads.worker.js',
      'attention_lab_threads_node.cjs', 'attention_lab_threads_node.worker.cjs']) {
      expect(list).toContain(`package/web/dist/${f}`);
    }
    fs.writeFileSync(path.join(app, 'threads.mjs'), `
      import { init } from 'attention-lab';
      const one = await init();
      const two = await init({ threads: 2 });
      const x = { data: Float32Array.from({ length: 64 * 256 }, (_, i) => Math.sin(i)), shape: [1, 64, 256] };
      const run = (lab) => lab.multiHeadAttention({ embedDim: 256, numHeads: 4, seed: 1 }).forwardSync(x).output.data;
      const a = run(one), b = run(two);
      const same = a.every((v, i) => Object.is(v, b[i]));
      console.log(JSON.stringify({ threads: two.threads, same }));
      two.dispose();`);
    // The process must end by itself: no worker keeps it alive.
    const esm = JSON.parse(execFileSync('node', ['threads.mjs'], { cwd: app, encoding: 'utf8', timeout: 60000 }));
    expect(esm).toEqual({ threads: 2, same: true });
    fs.writeFileSync(path.join(app, 'threads.cjs'), `
      const { init, threadsSupported } = require('attention-lab');
      init({ threads: 'auto' }).then((lab) => {
        console.log(JSON.stringify({ threads: lab.threads, supported: threadsSupported() }));
      });`);
    const cjs = JSON.parse(execFileSync('node', ['threads.cjs'], { cwd: app, encoding: 'utf8', timeout: 60000 }));
    expect(cjs.supported).toBe(true);
    expect(cjs.threads).toBe(Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
  });

  // ---- the README's code blocks in TypeScript projects -------------------

  /**
   * Writes a TypeScript project (ESM or CommonJS) holding the README blocks,
   * with the installed package, compiles it with strict tsc and returns the
   * compiled files to run.
   */
  function tsProject(kind) {
    const proj = path.join(dir, `ts-${kind}`);
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: `ts-${kind}`, version: '1.0.0', private: true, ...(kind === 'esm' ? { type: 'module' } : {}) }));
    fs.cpSync(path.join(dir, 'app/node_modules'), path.join(proj, 'node_modules'), { recursive: true });
    fs.writeFileSync(path.join(proj, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true,
        outDir: 'out', rootDir: '.', lib: ['ES2022', 'DOM'], allowJs: true, checkJs: true, skipLibCheck: false,
        types: ['node'], typeRoots: [path.join(root, 'node_modules/@types')],
      },
      include: ['*.ts', '*.cjs'],
    }, null, 2));
    const run = [];
    codeBlocks().forEach((b, i) => {
      const name = `block${String(i).padStart(2, '0')}-line${b.line}`;
      const usesRequire = /\brequire\(/.test(b.code);
      if (usesRequire) {
        // CommonJS JavaScript: checked (checkJs) and run in the CommonJS project.
        if (kind !== 'cjs') return;
        fs.writeFileSync(path.join(proj, `${name}.cjs`), b.code);
        if (!b.compileOnly) run.push(`out/${name}.cjs`);
        return;
      }
      let code = b.code;
      if (kind === 'cjs') {
        // CommonJS has no top-level await: imports stay on top, the rest runs in main().
        const lines = code.split('\n');
        const imports = lines.filter((l) => /^import\s.*from\s.*;\s*$/.test(l));
        const body = lines.filter((l) => !imports.includes(l));
        code = `${imports.join('\n')}\nasync function main(): Promise<void> {\n${body.join('\n')}\n}\nmain().catch((e) => { console.error(e); process.exitCode = 1; });\n`;
      }
      fs.writeFileSync(path.join(proj, `${name}.ts`), code);
      if (!b.compileOnly) run.push(`out/${name}.js`);
    });
    let tscOut = '';
    try {
      execFileSync(process.execPath, [TSC, '-p', '.'], { cwd: proj, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      tscOut = `${e.stdout}${e.stderr}`;
    }
    return { proj, run, tscOut };
  }

  for (const kind of ['esm', 'cjs']) {
    test(`every README code block compiles (strict) and runs in an empty ${kind === 'esm' ? 'ESM' : 'CommonJS'} TypeScript project`, () => {
      const { proj, run, tscOut } = tsProject(kind);
      expect(tscOut).toBe('');
      expect(run.length).toBeGreaterThanOrEqual(6);
      const failed = [];
      for (const file of run) {
        try {
          execFileSync('node', [file], { cwd: proj, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
        } catch (e) {
          failed.push(`${file}: ${e.stderr || e.message}`);
        }
      }
      expect(failed).toEqual([]);
    }, 180000);
  }
});
