// lab.warmUp() and init({ warmUp }): runs every function once per round and
// leaves nothing behind (no objects, no heap growth after the first call);
// results are unchanged. Its effect on the first call's time is a benchmark
// (npm run bench: "First call after init"), not a timed test.
import { init } from '../../web/node.js';
import { BACKENDS, ref, TOL, expectTensorClose, rand, f32Weights } from './helpers.js';

describe.each(BACKENDS)('warmUp — %s', (backend) => {
  test('lab.warmUp() resolves with the rounds it ran and leaks nothing', async () => {
    const lab = await init({ backend });
    const small = { embedDim: 16, numHeads: 2, seqLen: 8, budgetMs: 200 };
    await lab.warmUp(small); // the heap may grow once (pools, caches)
    const heap = lab._backend.heapBytesInUse();
    const r = await lab.warmUp(small);
    expect(r.rounds).toBeGreaterThanOrEqual(2);
    expect(r.ms).toBeGreaterThanOrEqual(0);
    expect(lab._backend.heapBytesInUse()).toBe(heap);
  });

  test('init({ warmUp: true | {…} }) warms up before resolving; results are unchanged', async () => {
    const rng = ref.mulberry32(77);
    const W = ref.randomMhaWeights(rng, { embedDim: 8 });
    const x = rand(rng, [2, 3, 8]);
    const exp = ref.multiHeadAttention({ embedDim: 8, numHeads: 2 }, W, x);
    for (const warmUp of [true, { embedDim: 8, numHeads: 2, seqLen: 4, batch: 2, budgetMs: 100 }]) {
      const lab = await init({ backend, warmUp: warmUp === true ? { embedDim: 32, numHeads: 4, seqLen: 16, budgetMs: 100 } : warmUp });
      const mha = lab.multiHeadAttention({ embedDim: 8, numHeads: 2 });
      mha.setWeights(f32Weights(W));
      const r = mha.forwardSync(x);
      expectTensorClose(r.output, exp.output, TOL.attention, 'output after warm-up');
      mha.dispose();
    }
  });

  test('bad options: unknown key (TypeError), sizes (RangeError)', async () => {
    const lab = await init({ backend });
    await expect(lab.warmUp({ embedDims: 8 })).rejects.toThrow(TypeError);
    await expect(lab.warmUp({ embedDims: 8 })).rejects.toThrow(/unknown key "embedDims".*embedDim, numHeads, seqLen, batch, budgetMs/);
    await expect(lab.warmUp({ embedDim: 10, numHeads: 4 })).rejects.toThrow(RangeError);
    await expect(lab.warmUp({ seqLen: 0 })).rejects.toThrow(RangeError);
    await expect(lab.warmUp('fast')).rejects.toThrow(TypeError);
    await expect(init({ backend, warmUp: 'yes' })).rejects.toThrow(TypeError);
    await expect(init({ backend, warmUp: { seqLen: -1 } })).rejects.toThrow(RangeError);
  });
});
