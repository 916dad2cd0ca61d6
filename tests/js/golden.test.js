// golden.test.js — runs tests/golden/cases.json (format: tests/golden/README.md)
// through the JS API on both wasm backends.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { ref, BACKENDS, expectTensorClose, goldenTensor } from './helpers.js';

const golden = JSON.parse(readFileSync(new URL('../golden/cases.json', import.meta.url), 'utf8'));
const WEIGHT_NAMES = ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo'];

function weightsFrom(inputs, names) {
  const w = {};
  for (const n of names) if (inputs[n]) w[n] = goldenTensor(inputs[n]);
  return w;
}

async function runCase(lab, c) {
  const inp = Object.fromEntries(Object.entries(c.inputs).map(([k, v]) => [k, goldenTensor(v)]));
  const p = c.params;
  const mask = p.mask ? ref.maskToApi(p.mask) : undefined;
  switch (c.op) {
    case 'positional_encoding':
      return { pe: lab.positionalEncoding(p.seqLen, p.dModel, { base: p.base }) };
    case 'sdpa': {
      const r = lab.scaledDotProductAttention(inp.q, inp.k, inp.v,
        { mask, scale: p.scale ?? undefined, needWeights: p.needWeights ?? true });
      return { output: r.output, weights: r.weights };
    }
    case 'mha': {
      const mha = lab.multiHeadAttention({ embedDim: p.embedDim, numHeads: p.numHeads, kdim: p.kdim, vdim: p.vdim, bias: p.bias });
      try {
        mha.setWeights(weightsFrom(inp, WEIGHT_NAMES), { layout: p.layout ?? 'torch' });
        const r = await mha.forward(inp.query, inp.key, inp.value, { mask, averageWeights: p.averageWeights });
        return { output: r.output, weights: r.weights };
      } finally {
        mha.dispose();
      }
    }
    case 'layer_norm': {
      // No stand-alone LayerNorm in the JS API: a layer with numHeads 1 and all
      // MHA weights zero computes LayerNorm(z + 0)·gamma + beta; z = x + residual
      // is exact in float32 for the golden inputs (multiples of 2^-12).
      const E = inp.x.shape[inp.x.shape.length - 1];
      const z = { data: new Float32Array(inp.x.data.length), shape: [1, ...inp.x.shape] };
      for (let i = 0; i < z.data.length; i++) z.data[i] = inp.x.data[i] + inp.residual.data[i];
      const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: 1, dropout: 0, eps: p.eps });
      try {
        const zeros = (n) => new Float32Array(n);
        layer.setWeights({
          wq: { data: zeros(E * E), shape: [E, E] }, wk: { data: zeros(E * E), shape: [E, E] },
          wv: { data: zeros(E * E), shape: [E, E] }, wo: { data: zeros(E * E), shape: [E, E] },
          bq: zeros(E), bk: zeros(E), bv: zeros(E), bo: zeros(E), gamma: inp.gamma, beta: inp.beta,
        });
        const r = layer.forwardSync(z, { needWeights: false });
        return { y: { data: r.output.data, shape: r.output.shape.slice(1) } };
      } finally {
        layer.dispose();
      }
    }
    case 'layer': {
      const layer = lab.selfAttentionLayer({ embedDim: p.embedDim, numHeads: p.numHeads, dropout: p.dropout, bias: p.bias, eps: p.eps });
      try {
        layer.setWeights(weightsFrom(inp, [...WEIGHT_NAMES, 'gamma', 'beta']), { layout: p.layout ?? 'torch' });
        const opts = { mask, training: p.training, averageWeights: p.averageWeights };
        if (p.dropoutSeed !== null && p.dropoutSeed !== undefined) opts.dropoutSeed = p.dropoutSeed;
        const r = await layer.forward(inp.x, opts);
        return { output: r.output, weights: r.weights };
      } finally {
        layer.dispose();
      }
    }
    default:
      throw new Error(`unknown op ${c.op}`);
  }
}

test('golden file is well formed', () => {
  expect(golden.format).toBe('attention-lab-golden');
  expect(golden.version).toBe(1);
  expect(golden.cases.length).toBeGreaterThanOrEqual(15);
  const ops = new Set(golden.cases.map((c) => c.op));
  for (const op of ['positional_encoding', 'sdpa', 'mha', 'layer_norm', 'layer']) expect(ops.has(op)).toBe(true);
  for (const c of golden.cases) {
    for (const t of [...Object.values(c.inputs), ...Object.values(c.outputs)]) {
      expect(t.data.length).toBe(ref.numel(t.shape));
    }
    expect(typeof c.tolerance.abs).toBe('number');
    expect(typeof c.tolerance.rel).toBe('number');
  }
});

test('golden file is up to date with the reference generator', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'golden-'));
  try {
    const out = path.join(dir, 'cases.json');
    const gen = fileURLToPath(new URL('../reference/generate-golden.mjs', import.meta.url));
    execFileSync(process.execPath, [gen, out], { stdio: 'pipe' });
    const committed = readFileSync(new URL('../golden/cases.json', import.meta.url), 'utf8');
    expect(readFileSync(out, 'utf8') === committed).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe.each(BACKENDS)('golden cases — %s', (backend) => {
  let lab;
  beforeAll(async () => {
    lab = await init({ backend });
  });

  test.each(golden.cases.map((c) => [c.name, c]))('%s', async (_, c) => {
    const got = await runCase(lab, c);
    for (const [name, exp] of Object.entries(c.outputs)) {
      expectTensorClose(got[name], { data: exp.data, shape: exp.shape }, c.tolerance, `${c.name}.${name}`);
    }
  });
});
