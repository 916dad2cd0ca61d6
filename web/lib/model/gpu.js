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
// tied head's weight and is held once. The table ops' GPU faces
// (families/layout.js) say where a file's tensor goes. From an F16 or BF16
// file the projections, the head and the word table stay 16-bit
// (keptHalfOnGpu): the kernels widen them as they read them.
import { rangeError } from '../errors.js';
import { decode, halfToFloatBits, halfBitsFromFloatBits } from '../io/dtypes.js';
import { layoutOp } from './families/index.js';
import { gpuUnsupportedFields, keptHalfOnGpu } from '../webgpu-graph-fields.js';

const WHERE = 'loadModel';

/**
 * Refuses, before any tensor is read, a model whose block graph uses a field
 * the GPU path does not run (webgpu-graph-fields.js, the rule modelCreate
 * also asks).
 * @param {{ modelType: string, embedDim: number, numHeads: number, core: Record<string, any> }} c
 */
export function checkGpuRuns(c) {
  const used = gpuUnsupportedFields(c).map((f) => f.label);
  if (used.length) {
    throw rangeError(WHERE, `the webgpu backend's model path does not run ${used.join(', ')}, which model_type ${JSON.stringify(c.modelType)} uses here; load it on backend 'wasm' (init({ backend: 'wasm' }))`);
  }
}

/** [[name, shape, data]] of one file tensor as the GPU keeps it (the op's GPU face, families/layout.js). */
export function gpuTensors(t, shape, data) {
  return layoutOp(t.op).gpu(t, shape, data);
}

/**
 * The float32 values of a tensor read from an F16 or BF16 file as those 16-bit
 * values again (padded with a zero to an even count: the GPU reads them two a
 * word), or null when one of them is not exactly representable (a layout op
 * that computed new values, such as Gemma's 1 + w).
 * @param {Float32Array} data
 * @param {'F16' | 'BF16'} dtype
 */
export function toHalf(data, dtype) {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = new Uint16Array(data.length + (data.length & 1));
  if (dtype === 'BF16') {
    for (let i = 0; i < bits.length; i++) {
      if (bits[i] & 0xffff) return null;
      out[i] = bits[i] >>> 16;
    }
    return out;
  }
  const table = halfToFloatBits();
  for (let i = 0; i < bits.length; i++) {
    const h = halfBitsFromFloatBits(bits[i]);
    if (table[h] !== bits[i]) return null;
    out[i] = h;
  }
  return out;
}

/**
 * One GPU tensor as uploaded: [data, half] (16-bit for the tensors the GPU keeps so, from a 16-bit file).
 * @returns {[Float32Array | Uint16Array, 'F16' | 'BF16' | undefined]}
 */
function gpuData(name, data, dtype) {
  if ((dtype !== 'F16' && dtype !== 'BF16') || !keptHalfOnGpu(name) || !(data instanceof Float32Array)) return [data, undefined];
  const h = toHalf(data, dtype);
  return h ? [h, dtype] : [data, undefined];
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
      const data = entry.decode ? entry.decode(bytes, entry.count) : decode(WHERE, `tensor ${JSON.stringify(entry.name)}`, entry.dtype, bytes, entry.count);
      for (const [name, shape, d] of gpuTensors(t, entry.shape, data)) {
        const [values, half] = gpuData(name, d, entry.dtype);
        gpu.modelUpload(handle, WHERE, name, shape, values, half);
      }
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
