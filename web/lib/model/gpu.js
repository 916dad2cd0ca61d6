// A loaded model's GPU copy (lab.loadModel on a webgpu lab): the weights read
// a second time from the parsed files, through the same plan of the
// architecture table that filled the wasm block graph (load.js), and uploaded
// once to the webgpu backend (web/lib/webgpu-model.js), which runs
// model.forward there. Nothing is read from the wasm heap, whose layout of
// the projections (packed GEMM panels) is the core's own business.
//
// Layout on the GPU: every matrix in keras layout [in, out] (what
// linear.wgsl reads), the transposed torch layout [out, in]; the embedding
// tables too ([E, V], [E, P], [E, T]), so that the word table is also the
// tied head's weight and is held once. The table ops say where a file's
// tensor goes (architectures.js):
//   copy       torch [out, in] → transposed; vectors as they are
//   transpose  Conv1D [in, out]: already keras
//   split      GPT-2's c_attn: [E, 3E] Conv1D → column block k of each row
//              (wq, wk, wv); [3E] → thirds (bq, bk, bv)
import { decode } from '../io/dtypes.js';

const WHERE = 'loadModel';

function transpose(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[row + c];
  }
  return out;
}

/** [[name, shape, data]] of one file tensor as the GPU keeps it. */
export function gpuTensors(t, shape, data) {
  if (shape.length === 1) {
    if (t.op !== 'split') return [[t.to[0], shape, data]];
    const e = shape[0] / t.to.length;
    return t.to.map((name, k) => [name, [e], data.subarray(k * e, (k + 1) * e)]);
  }
  const [rows, cols] = shape;
  if (t.op === 'copy') return [[t.to[0], [cols, rows], transpose(data, rows, cols)]];
  if (t.op === 'transpose') return [[t.to[0], shape, data]];
  const e = cols / t.to.length;
  return t.to.map((name, k) => {
    const out = new Float32Array(rows * e);
    for (let r = 0; r < rows; r++) out.set(data.subarray(r * cols + k * e, r * cols + (k + 1) * e), r * e);
    return [name, [rows, e], out];
  });
}

/**
 * Uploads the planned tensors (load.js `plan`: [{ entry, t }]) to `gpu` (a
 * webgpu backend), one file tensor at a time. Returns the model's GPU side:
 * { forward(ids, want), dispose(), bytes }. Frees what it uploaded on failure.
 * @param {import('../backend.js').WebGpuBackend} gpu
 * @param {object} c the normalised config (architectures.js)
 * @param {number} maxLength the model's longest input
 * @param {Array<{ entry: any, t: any }>} steps
 * @param {{ signal?: AbortSignal, progress: (bytes: number) => void, abortError: () => Error }} io
 */
export async function uploadToGpu(gpu, c, maxLength, steps, io) {
  const handle = await gpu.modelCreate({
    numLayers: c.numLayers, numHeads: c.numHeads, numKvHeads: c.numKvHeads, embedDim: c.embedDim,
    ffnDim: c.ffnDim, vocabSize: c.vocabSize, maxPositions: c.maxPositions, maxLength,
    typeVocab: c.typeVocab, eps: c.eps, core: c.core,
  });
  try {
    for (const { entry, t } of steps) {
      if (io.signal?.aborted) throw io.abortError();
      const bytes = await entry.source.read(entry.begin, entry.end);
      const data = decode(WHERE, `tensor ${JSON.stringify(entry.name)}`, entry.dtype, bytes, entry.count);
      for (const [name, shape, d] of gpuTensors(t, entry.shape, data)) gpu.modelUpload(handle, WHERE, name, shape, d);
      io.progress(entry.end - entry.begin);
      await Promise.resolve();
    }
  } catch (err) {
    gpu.modelDispose(handle);
    throw err;
  }
  return {
    forward: (ids, want) => gpu.modelForward(handle, ids, want),
    dispose: () => gpu.modelDispose(handle),
    bytes: gpu.modelBytes(handle),
  };
}
