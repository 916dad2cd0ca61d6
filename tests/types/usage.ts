// Compile-only check of the public type declarations (tsc --noEmit).
import { init, simdSupported, threadsSupported, type Tensor, type AttentionLab, type KVCache } from '../../web/index.js';

async function main(): Promise<void> {
  const lab: AttentionLab = await init({ backend: 'auto' });
  const backend: 'wasm' | 'wasm-scalar' | 'webgpu' = lab.backend;
  const pe: Tensor = await lab.positionalEncoding(50, 64, { base: 10000 });
  const sa = await lab.selfAttention([[1, 0], [0, 1]], { mask: { kind: 'causal' } });
  const w: Tensor | null = sa.weights;
  const sdpa = await lab.scaledDotProductAttention(pe, pe, pe, {
    mask: [{ kind: 'padding', lengths: [40] }, { kind: 'keep', data: [[1, 0]], shape: [1, 2] }],
    scale: 0.5,
    needWeights: false,
  });
  const mha = lab.multiHeadAttention({ embedDim: 512, numHeads: 8, kdim: 256, bias: true, seed: 1 });
  mha.setWeights({ wq: { data: new Float32Array(512 * 512), shape: [512, 512] } }, { layout: 'torch' });
  const weights = mha.getWeights({ layout: 'keras' });
  const wq: Tensor = weights.wq;
  const x = { data: new Float32Array(2 * 5 * 512), shape: [2, 5, 512] };
  const r = await mha.forward(x, x, x, { mask: { kind: 'causal' }, needWeights: true, averageWeights: false, trace: true });
  const steps: string[] = (r.trace ?? []).map((s) => `${s.step} ${s.shape.join('x')}`);
  const sync = mha.forwardSync(x);
  const cache: KVCache = mha.createKVCache({ maxLength: 64, batch: 2 });
  const step = await mha.forward({ data: new Float32Array(2 * 512), shape: [2, 1, 512] }, undefined, undefined, { kvCache: cache, mask: { kind: 'causal' } });
  const held: number = cache.length + cache.maxLength + cache.heldBytes() + step.output.shape[1];
  cache.truncate(0);
  cache.reset();
  cache.dispose();
  mha.dispose();
  const layer = lab.selfAttentionLayer({ embedDim: 512, numHeads: 8, dropout: 0.1, seed: 2 });
  const lr = await layer.forward(x, { training: true, dropoutSeed: 7 });
  const seed: number = lr.dropoutSeed;
  layer.dispose();
  const tiny = lab.transformer({ vocabSize: 5, maxLength: 4, embedDim: 32, numHeads: 2 });
  tiny.writeParamQuant('embed.weight', 'Q8_0', new Uint8Array(5 * 34));
  tiny.writeParamQuant(0, 2, new Uint8Array(18), { first: 1 });
  tiny.dispose();
  const trace = lab.shapeTrace({ batch: 2, lq: 5, embedDim: 512, numHeads: 8, mask: true });
  const threaded = await init({ backend: 'wasm', threads: threadsSupported() ? 'auto' : 1 });
  const n: number = threaded.threads + (await init({ threads: 2 })).threads;
  threaded.dispose();
  console.log(backend, w, sdpa.output.shape, wq.shape, steps, sync.output, held, seed, trace.length, simdSupported(), n);
}
void main();
