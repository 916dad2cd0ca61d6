// Compile-only check: the lab's type follows the backend asked for.
import { init, type AttentionLab, type Tensor } from '../../web/index.js';

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
  console.log(out, pe, name, p, a, f, s);
}
void modes();
