// trace.test.js — the shape trace of tutorial 2 ("dimension flow in one take")
// for B=2, L=5, E=512, H=8, from forward(…, {trace:true}) and lab.shapeTrace.
import { init } from '../../web/node.js';
import { ref, BACKENDS, rand } from './helpers.js';

const TUTORIAL2_SHAPES = [
  [2, 5, 512], // input
  [2, 5, 512], // linear
  [2, 8, 5, 64], // split heads
  [2, 8, 5, 5], // scores
  [2, 8, 5, 5], // softmax
  [2, 8, 5, 64], // weights × V
  [2, 5, 512], // merge heads
  [2, 5, 512], // output layer
];
const STEPS = ['input', 'linear_qkv', 'split_heads', 'scores', 'softmax', 'weighted_sum', 'merge_heads', 'output_linear'];

/** The {step, shape} part of trace records (records may carry more fields). */
const stepsAndShapes = (trace) => trace.map((r) => ({ step: r.step, shape: Array.from(r.shape) }));

function expectWellFormed(trace) {
  expect(Array.isArray(trace)).toBe(true);
  for (const r of trace) {
    expect(typeof r.step).toBe('string');
    expect(Array.isArray(r.shape)).toBe(true);
    expect(typeof r.formula).toBe('string');
    expect(r.formula.length).toBeGreaterThan(0);
  }
}

describe.each(BACKENDS)('shape trace — %s', (backend) => {
  let lab;
  let mha;
  let layer;
  const x = rand(ref.mulberry32(512), [2, 5, 512]);
  beforeAll(async () => {
    lab = await init({ backend });
    mha = lab.multiHeadAttention({ embedDim: 512, numHeads: 8 });
    layer = lab.selfAttentionLayer({ embedDim: 512, numHeads: 8, dropout: 0.1 });
  });
  afterAll(() => {
    mha?.dispose();
    layer?.dispose();
  });

  test('tutorial 2: B=2, L=5, E=512, H=8 without a mask', async () => {
    const r = await mha.forward(x, x, x, { trace: true });
    expect(r.output.shape).toEqual([2, 5, 512]);
    expect(r.weights.shape).toEqual([2, 8, 5, 5]);
    expectWellFormed(r.trace);
    expect(r.trace.map((t) => Array.from(t.shape))).toEqual(TUTORIAL2_SHAPES);
    expect(r.trace.map((t) => t.step)).toEqual(STEPS);
    expect(stepsAndShapes(r.trace)).toEqual(ref.shapeTraceReference({ batch: 2, lq: 5, embedDim: 512, numHeads: 8 }));
  });

  test('forward(…, {trace: true}).trace equals lab.shapeTrace(…)', async () => {
    const r = await mha.forward(x, x, x, { trace: true });
    const st = lab.shapeTrace({ batch: 2, lq: 5, embedDim: 512, numHeads: 8 });
    expectWellFormed(st);
    expect(r.trace).toEqual(st);
    const rs = mha.forwardSync(x, x, x, { trace: true });
    expect(rs.trace).toEqual(st);
  });

  test('the mask step appears only with a mask', async () => {
    const noMask = await mha.forward(x, x, x, { trace: true });
    expect(noMask.trace.some((t) => t.step === 'mask')).toBe(false);
    for (const mask of [{ kind: 'causal' }, { kind: 'padding', lengths: [5, 3] },
      [{ kind: 'causal' }, { kind: 'keep', data: new Float32Array(5).fill(1), shape: [1, 1, 1, 5] }]]) {
      const r = await mha.forward(x, x, x, { trace: true, mask });
      const exp = ref.shapeTraceReference({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: true });
      expect(stepsAndShapes(r.trace)).toEqual(exp);
      expect(r.trace[4].step).toBe('mask');
      expect(Array.from(r.trace[4].shape)).toEqual([2, 8, 5, 5]);
      expect(r.trace).toEqual(lab.shapeTrace({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: true }));
    }
  });

  test('the layer appends dropout, residual, layer_norm', async () => {
    for (const [mask, training] of [[undefined, false], [{ kind: 'causal' }, true]]) {
      const r = await layer.forward(x, { trace: true, mask, training, dropoutSeed: 1 });
      expect(r.output.shape).toEqual([2, 5, 512]);
      expectWellFormed(r.trace);
      const exp = ref.shapeTraceReference({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: !!mask, layer: true });
      expect(stepsAndShapes(r.trace)).toEqual(exp);
      expect(r.trace.slice(-3).map((t) => t.step)).toEqual(['dropout', 'residual', 'layer_norm']);
      const st = lab.shapeTrace({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: !!mask, layer: true });
      // shapeTrace has no `training` option, so the dropout record's formula
      // may say "identity in eval mode"; the records are equal in eval mode
      // and equal in step and shape always.
      if (!training) expect(r.trace).toEqual(st);
      else expect(stepsAndShapes(r.trace)).toEqual(stepsAndShapes(st));
    }
  });

  test('cross attention Lq ≠ Lk', () => {
    const q = rand(ref.mulberry32(1), [2, 3, 512]);
    const r = mha.forwardSync(q, x, x, { trace: true });
    expect(stepsAndShapes(r.trace)).toEqual(ref.shapeTraceReference({ batch: 2, lq: 3, lk: 5, embedDim: 512, numHeads: 8 }));
    expect(r.trace).toEqual(lab.shapeTrace({ batch: 2, lq: 3, lk: 5, embedDim: 512, numHeads: 8 }));
  });

  test('unbatched inputs drop B from every shape', () => {
    const xu = rand(ref.mulberry32(2), [5, 512]);
    const r = mha.forwardSync(xu, xu, xu, { trace: true });
    expect(stepsAndShapes(r.trace)).toEqual(ref.shapeTraceReference({ batch: null, lq: 5, embedDim: 512, numHeads: 8 }));
    const rl = layer.forwardSync(xu, { trace: true, mask: { kind: 'causal' } });
    expect(stepsAndShapes(rl.trace)).toEqual(ref.shapeTraceReference({ batch: null, lq: 5, embedDim: 512, numHeads: 8, mask: true, layer: true }));
  });

  test('no trace unless asked', async () => {
    const r = await mha.forward(x);
    expect(r.trace == null).toBe(true);
  });

  test('shapeTrace computes nothing and works for large sizes', () => {
    const t = lab.shapeTrace({ batch: 64, lq: 4096, embedDim: 4096, numHeads: 32, layer: true });
    expect(stepsAndShapes(t)).toEqual(ref.shapeTraceReference({ batch: 64, lq: 4096, embedDim: 4096, numHeads: 32, layer: true }));
  });
});
