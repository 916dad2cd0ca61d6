// Compile-only check: the lab's type follows the backend asked for.
import { init, DisposedError, type AttentionLab, type Tensor, type WarmUpReport } from '../../web/index.js';

async function modes(): Promise<void> {
  const x = { data: new Float32Array(2 * 4 * 8), shape: [2, 4, 8] };

  // 'wasm' / 'wasm-scalar': values.
  const wasm: AttentionLab<'sync'> = await init({ backend: 'wasm' });
  const out: Tensor = wasm.selfAttention(x).output;
  const pe: Tensor = (await init({ backend: 'wasm-scalar' })).positionalEncoding(4, 8);
  const name: 'wasm' | 'wasm-scalar' = wasm.backend;

  // 'webgpu': Promises.
  const gpu: AttentionLab<'async'> = await init({ backend: 'webgpu' });
  const p: Promise<Tensor> = gpu.positionalEncoding(4, 8);
  // @ts-expect-error a Promise has no .output
  gpu.selfAttention(x).output;

  // 'auto' (and no options): either; await works, direct access does not type-check.
  const auto: AttentionLab<'either'> = await init();
  const a: Tensor = (await auto.selfAttention(x)).output;
  // @ts-expect-error may be a Promise
  auto.selfAttention(x).output;
  const opts: { backend: 'wasm' | 'webgpu' } = { backend: 'wasm' };
  const either: AttentionLab = await init(opts);
  // @ts-expect-error may be a Promise
  either.positionalEncoding(2, 2).data;

  // forward() is a Promise everywhere; forwardSync() a value.
  const mha = wasm.multiHeadAttention({ embedDim: 8, numHeads: 2 });
  const f: Tensor = (await mha.forward(x)).output;
  const s: Tensor = mha.forwardSync(x).output;
  // init options: warmUp, checkFinite; lab.warmUp(); DisposedError.
  const warmed: AttentionLab<'sync'> = await init({ backend: 'wasm', warmUp: { embedDim: 64, numHeads: 4 }, checkFinite: true });
  const report: WarmUpReport = await warmed.warmUp({ seqLen: 16, budgetMs: 100 });
  warmed.selfAttention(x, { checkFinite: false });
  mha.setWeights({}, { layout: 'keras', checkFinite: true });
  const trace = warmed.shapeTrace({ lq: 4, embedDim: 8, numHeads: 2, layout: 'keras' });
  const err: TypeError = new DisposedError('x');
  // @ts-expect-error unknown init option
  await init({ backnd: 'wasm' });
  console.log(out, pe, name, p, a, f, s, report.rounds, trace.length, err.name);
}
void modes();
