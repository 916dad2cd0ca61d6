// loadModel keeps a GGUF file's Q8_0/Q4_0 matrices as the file's blocks
// (plan.js keptQuantKind, Transformer::WriteParamQuant), the token embedding
// too (a row table of the weight store: looked up a row at a time, read as
// blocks by the tied head). So loading a Q4_0 file takes about the file's
// size in the wasm heap: the bound is a peak of 1.15 × the file.
//   - the file: a 4-layer llama of SmolLM2-135M's width (hidden 576, 9
//     heads, 3 KV heads, intermediate 1536) with GPT-2's 50,257-token
//     vocabulary, every matrix Q4_0 (scripts/lib/synthetic-gguf.mjs, random
//     blocks), about 23 MiB, two thirds of it the embedding;
//   - the peak: the heap in use (mallinfo, backend.heapBytesInUse) less its
//     value before the call, sampled at every onProgress (after each chunk
//     written: every allocation that lasts) and after the call;
//   - model.config.bytes: the file's block bytes plus the F32 norms.
import { init } from '../../web/node.js';
import { syntheticLlamaGguf } from '../../scripts/lib/synthetic-gguf.mjs';
import { parseGgufHeader } from '../../web/lib/io/gguf.js';
import { BACKENDS } from './helpers.js';

const SHAPE = { hidden: 576, layers: 4, heads: 9, kvHeads: 3, ffn: 1536, vocab: 50257, context: 2048 };

describe.each(BACKENDS)('a Q4_0 GGUF file loads within 1.15 × its size — %s', (backend) => {
  test('peak heap ≤ 1.15 × the file; the bytes kept are the file\'s blocks', async () => {
    const lab = await init({ backend });
    const heap = () => lab._backend.heapBytesInUse();
    const file = syntheticLlamaGguf({ type: 'Q4_0', shape: SHAPE, fast: true, tokenizer: false });
    const { tensors } = parseGgufHeader(file, file.length, 'test');
    const blockBytes = tensors.filter((t) => t.ggmlType === 'Q4_0').reduce((n, t) => n + t.end - t.begin, 0);
    const normFloats = tensors.filter((t) => t.ggmlType === 'F32').reduce((n, t) => n + t.count, 0);
    const base = heap();
    let peak = 0;
    const model = await lab.loadModel({ weights: file, tokenizer: null, onProgress: () => { peak = Math.max(peak, heap() - base); } });
    peak = Math.max(peak, heap() - base);
    expect(model.config.quantized).toEqual({ Q4_0: blockBytes });
    expect(model.config.bytes).toBe(blockBytes + 4 * normFloats);
    // eslint-disable-next-line no-console
    console.log(`${backend}: file ${file.length} bytes, peak heap ${peak} (${(peak / file.length).toFixed(3)} × the file), kept ${model.config.bytes}`);
    expect(peak).toBeLessThanOrEqual(1.15 * file.length);
    // It runs, greedy decoding through the KV cache included.
    const out = model.forwardSync([1, 2, 3]).logits.data;
    expect(out.every(Number.isFinite)).toBe(true);
    model.dispose();
    expect(heap()).toBeLessThan(base + 1024); // (a kernel's per-thread scratch, once a process)
  });
});
