// The layout ops of the family tables (web/lib/model/families/layout.js): each
// op's four faces agree. The expected layouts are built here from the
// definitions (torch [out, in]; Conv1D [in, out]; GPT-2's c_attn column
// blocks; GPT-NeoX's query_key_value rows [head][q|k|v][D]), not by the faces.
import { LAYOUT_OPS } from '../../web/lib/model/families/layout.js';

const E = 6;
const H = 3;
const D = E / H;
const seq = (n, base) => Float32Array.from({ length: n }, (_, i) => base + i);
// Three torch-layout parts [E, E] (or [E]) with distinct values.
const parts2 = [0, 1, 2].map((k) => seq(E * E, 1000 * (k + 1)));
const parts1 = [0, 1, 2].map((k) => seq(E, 1000 * (k + 1)));
const tr = (a, r, c) => Float32Array.from({ length: r * c }, (_, i) => a[(i % r) * c + Math.floor(i / r)]);

/** The file tensors of each op, built from the definitions. */
function fileOf(op, vector) {
  if (op === 'copy') return vector ? parts1[0] : parts2[0];
  if (op === 'transpose') return vector ? parts1[0] : tr(parts2[0], E, E); // [in, out]
  if (op === 'split') {
    if (vector) return Float32Array.from([...parts1[0], ...parts1[1], ...parts1[2]]);
    // [E_in, 3E]: row i holds q[:, i] | k[:, i] | v[:, i]
    const out = new Float32Array(E * 3 * E);
    for (let i = 0; i < E; i++) for (let k = 0; k < 3; k++) for (let o = 0; o < E; o++) out[i * 3 * E + k * E + o] = parts2[k][o * E + i];
    return out;
  }
  // split-heads: rows (h·3 + k)·D + d hold row h·D + d of part k
  const width = vector ? 1 : E;
  const src = vector ? parts1 : parts2;
  const out = new Float32Array(3 * E * width);
  for (let h = 0; h < H; h++) for (let k = 0; k < 3; k++) for (let d = 0; d < D; d++) {
    for (let j = 0; j < width; j++) out[((h * 3 + k) * D + d) * width + j] = src[k][(h * D + d) * width + j];
  }
  return out;
}

const CASES = [];
for (const op of ['copy', 'transpose', 'split', 'split-heads']) {
  for (const vector of [false, true]) {
    const n = op === 'copy' || op === 'transpose' ? 1 : 3;
    const shape = vector ? [n * E] : op === 'split' ? [E, 3 * E] : op === 'split-heads' ? [3 * E, E] : [E, E];
    const entry = { op, shape, to: ['a', 'b', 'c'].slice(0, n), heads: H };
    CASES.push([`${op} ${vector ? '[n·E]' : `[${shape}]`}`, op, vector, entry]);
  }
}

/** The block graph's Transformer::WriteParam over a fake heap, for the core face. */
function fakeCore(entry, file, chunkRows) {
  const want = LAYOUT_OPS[entry.op].torch(entry.shape, file, entry);
  const params = want.map((p) => ({ data: new Float32Array(p.data.length), shape: p.shape }));
  const heap = new ArrayBuffer(4 * file.length + 64);
  const f32 = new Float32Array(heap);
  const Module = { HEAPU8: new Uint8Array(heap) };
  const staging = 0;
  const write = (index, first, rows, src, ld, transposed) => {
    const p = params[index];
    const base = src / 4;
    if (p.shape.length === 1) {
      for (let j = 0; j < p.shape[0]; j++) p.data[j] = f32[base + j];
      return;
    }
    const [out, inn] = p.shape;
    for (let i = 0; i < rows; i++) {
      if (transposed) for (let j = 0; j < out; j++) p.data[j * inn + first + i] = f32[base + i * ld + j];
      else for (let j = 0; j < inn; j++) p.data[(first + i) * inn + j] = f32[base + i * ld + j];
    }
  };
  const shape = entry.shape;
  const rows = shape.length === 1 ? 1 : shape[0];
  const rowElems = shape.length === 1 ? shape[0] : file.length / rows;
  for (let r0 = 0; r0 < rows; r0 += chunkRows) {
    const n = Math.min(chunkRows, rows - r0);
    f32.set(file.subarray(r0 * rowElems, (r0 + n) * rowElems), 0);
    LAYOUT_OPS[entry.op].core({ write, params: [0, 1, 2].slice(0, entry.to.length), r0, n, staging, rowElems, stagedBytes: 4, shape, entry, Module });
  }
  return { params, want };
}

describe('layout ops: core, GPU, file and torch faces', () => {
  test.each(CASES)('%s', (_, op, vector, entry) => {
    const file = fileOf(op, vector);
    const expectParts = (op === 'copy' || op === 'transpose') ? [vector ? parts1[0] : parts2[0]] : (vector ? parts1 : parts2);
    // torch: the block graph's parts, torch layout
    const torch = LAYOUT_OPS[op].torch(entry.shape, file, entry);
    expect(torch.map((p) => [...p.data])).toEqual(expectParts.map((p) => [...p]));
    // file: the inverse
    expect([...LAYOUT_OPS[op].file(entry, expectParts).data]).toEqual([...file]);
    expect(LAYOUT_OPS[op].file(entry, expectParts).shape).toEqual(entry.shape);
    // gpu: keras layout [in, out] of each part (vectors as they are)
    const gpu = LAYOUT_OPS[op].gpu(entry, entry.shape, file);
    expect(gpu.map(([name]) => name)).toEqual(entry.to);
    expect(gpu.map(([, , d]) => [...d])).toEqual(expectParts.map((p) => [...(vector ? p : tr(p, E, E))]));
    // core: the write plan, one row per chunk and the whole tensor at once
    for (const chunk of [1, 4, 1 << 20]) {
      const { params } = fakeCore(entry, file, chunk);
      expect(params.map((p) => [...p.data])).toEqual(expectParts.map((p) => [...p]));
    }
  });
});

describe('layout op rows-from (RoBERTa\'s positions from padding_idx + 1)', () => {
  // file [P, E] = [5, E]; the block graph keeps rows 2 … 4
  const P = 5;
  const entry = { op: 'rows-from', from: 2, shape: [P, E], to: ['pos.weight'] };
  const file = seq(P * E, 1);
  const kept = file.slice(2 * E);
  test('torch, file, GPU and core faces', () => {
    const [t] = LAYOUT_OPS['rows-from'].torch(entry.shape, file, entry);
    expect(t.shape).toEqual([P - 2, E]);
    expect([...t.data]).toEqual([...kept]);
    // file: the kept rows back in place, the rows before `from` zero
    const back = LAYOUT_OPS['rows-from'].file(entry, [kept]);
    expect(back.shape).toEqual([P, E]);
    expect([...back.data]).toEqual([...new Float32Array(2 * E), ...kept]);
    const gpu = LAYOUT_OPS['rows-from'].gpu(entry, entry.shape, file);
    expect(gpu.map(([name, shape]) => [name, shape])).toEqual([['pos.weight', [E, P - 2]]]);
    expect([...gpu[0][2]]).toEqual([...tr(kept, P - 2, E)]);
    // core: chunks of 1, 2 (one straddles row 2), 4 and all rows
    for (const chunk of [1, 2, 3, 4, 1 << 20]) {
      const { params } = fakeCore(entry, file, chunk);
      expect([...params[0].data]).toEqual([...kept]);
    }
  });
});

// split-rows (Phi-3's qkv_proj [H·D | Hkv·D | Hkv·D, E] and gate_up_proj
// [F | F, E]: consecutive row blocks, modeling_phi3.py) and add-one (Gemma's
// RMSNorm weight w applied as 1 + w): expected layouts from the definitions.
/** Rows r of part k are rows offset_k + r of the file. */
function rowsCase(sizes, width) {
  const parts = sizes.map((n, k) => seq(n * width, 1000 * (k + 1)));
  const file = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    file.set(p, at);
    at += p.length;
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  return { parts, file, shape: width === 1 ? [total] : [total, width] };
}

/** The core face over a fake heap, with floats/writeFloats as load.js gives them (float32 staging). */
function fakeCore2(entry, file, chunkRows, partShapes) {
  const params = partShapes.map((shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape }));
  const heap = new ArrayBuffer(4 * file.length + 64);
  const f32 = new Float32Array(heap);
  const Module = { HEAPU8: new Uint8Array(heap) };
  const write = (index, first, rows, src, ld, transposed) => {
    expect(transposed).toBe(false);
    const p = params[index];
    const base = src / 4;
    if (p.shape.length === 1) {
      for (let j = 0; j < p.shape[0]; j++) p.data[j] = f32[base + j];
      return;
    }
    const inn = p.shape[1];
    expect(first + rows).toBeLessThanOrEqual(p.shape[0]);
    for (let i = 0; i < rows; i++) for (let j = 0; j < inn; j++) p.data[(first + i) * inn + j] = f32[base + i * ld + j];
  };
  const floats = (count) => f32.slice(0, count);
  const writeFloats = (index, first, rows, data, ld, transposed) => {
    f32.set(data, 0);
    write(index, first, rows, 0, ld, transposed);
  };
  const shape = entry.shape;
  const rows = shape.length === 1 ? 1 : shape[0];
  const rowElems = shape.length === 1 ? shape[0] : file.length / rows;
  for (let r0 = 0; r0 < rows; r0 += chunkRows) {
    const n = Math.min(chunkRows, rows - r0);
    f32.set(file.subarray(r0 * rowElems, (r0 + n) * rowElems), 0);
    LAYOUT_OPS[entry.op].core({ write, floats, writeFloats, params: partShapes.map((_, i) => i), r0, n, staging: 0, rowElems, stagedBytes: 4, shape, entry, Module });
  }
  return params;
}

describe('layout ops split-rows and add-one: core, GPU, file and torch faces', () => {
  test.each([
    ['qkv_proj [H·D | Hkv·D | Hkv·D, E] (4 | 2 | 2 rows of 3)', [4, 2, 2], 3],
    ['gate_up_proj [F | F, E] (gate first)', [3, 3], 5],
    ['a vector [4 | 2 | 2]', [4, 2, 2], 1],
  ])('split-rows %s', (_, sizes, width) => {
    const { parts, file, shape } = rowsCase(sizes, width);
    const entry = { op: 'split-rows', sizes, shape, to: sizes.map((__, k) => `p${k}`) };
    const partShapes = sizes.map((n) => (width === 1 ? [n] : [n, width]));
    const torch = LAYOUT_OPS['split-rows'].torch(shape, file, entry);
    expect(torch.map((p) => [...p.data])).toEqual(parts.map((p) => [...p]));
    expect(torch.map((p) => p.shape)).toEqual(partShapes);
    expect([...LAYOUT_OPS['split-rows'].file(entry, parts).data]).toEqual([...file]);
    const gpu = LAYOUT_OPS['split-rows'].gpu(entry, shape, file);
    expect(gpu.map(([name]) => name)).toEqual(entry.to);
    expect(gpu.map(([, s]) => s)).toEqual(partShapes.map((s) => (s.length === 1 ? s : [s[1], s[0]])));
    expect(gpu.map(([, , d]) => [...d])).toEqual(parts.map((p, k) => [...(width === 1 ? p : tr(p, sizes[k], width))]));
    for (const chunk of [1, 3, 1 << 20]) {
      const params = fakeCore2(entry, file, chunk, partShapes);
      expect(params.map((p) => [...p.data])).toEqual(parts.map((p) => [...p]));
    }
  });

  test.each([[[5]], [[2, 3]]])('add-one %j', (shape) => {
    const n = shape.reduce((a, b) => a * b, 1);
    // Gemma's norm weights sit near 0 (the scale is 1 + w)
    const file = Float32Array.from({ length: n }, (_, i) => (i - 2) / 8);
    const core = Float32Array.from(file, (w) => 1 + w);
    const entry = { op: 'add-one', shape, to: ['g'] };
    expect([...LAYOUT_OPS['add-one'].torch(shape, file, entry)[0].data]).toEqual([...core]);
    expect([...LAYOUT_OPS['add-one'].file(entry, [core]).data]).toEqual([...file]);
    const [[name, gshape, gdata]] = LAYOUT_OPS['add-one'].gpu(entry, shape, file);
    expect(name).toBe('g');
    expect(gshape).toEqual(shape.length === 1 ? shape : [shape[1], shape[0]]);
    expect([...gdata]).toEqual([...(shape.length === 1 ? core : tr(core, shape[0], shape[1]))]);
    for (const chunk of [1, 1 << 20]) {
      const [p] = fakeCore2(entry, file, chunk, [shape]);
      expect([...p.data]).toEqual([...core]);
    }
  });
});
