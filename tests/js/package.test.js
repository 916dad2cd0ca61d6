// The packed tarball works from an empty folder: Node ESM import and CommonJS
// require, offline, with no flags.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('npm pack', () => {
  let dir;
  let tarball;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-pack-'));
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const info = JSON.parse(out)[0];
    tarball = path.join(dir, info.filename);
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: app, stdio: 'ignore' });
  }, 120000);
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the tarball holds the wasm files, glue, wrapper and types', () => {
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const f of ['web/dist/attention_lab_simd.wasm', 'web/dist/attention_lab_scalar.wasm', 'web/dist/attention_lab_simd.mjs',
      'web/dist/attention_lab_scalar.mjs', 'web/index.js', 'web/node.js', 'web/node.cjs', 'web/index.d.ts', 'web/lib/lab.js']) {
      expect(list).toContain(`package/${f}`);
    }
    expect(list.some((f) => f.includes('/src/') || f.includes('/tests/'))).toBe(false);
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
});
