// The layout ops of the family tables, each defined once with its faces:
//   core(ctx)   loadModel's write plan (load.js `place`): a chunk of the
//               file tensor's rows, staged in wasm memory, written into the
//               block graph's parameters (Transformer::WriteParam, which takes
//               torch's [out, in] rows, or rows of the transposed weight);
//   gpu(t, shape, data)  the GPU copy (gpu.js): [[name, shape, data]] with
//               every matrix in keras layout [in, out], vectors as they are;
//   file(entry, parts)   model.save (save.js): the file tensor rebuilt from
//               the block graph's torch-layout parts (entry.to's weights);
//   torch(shape, data, entry)  the file tensor as the block graph's parts,
//               torch layout [out, in] (the inverse of file).
// The ops:
//   copy         the file holds torch's layout [out, in] (vectors as they are)
//   transpose    Conv1D [in, out] → [out, in]
//   split        GPT-2's fused c_attn: [E, 3E] (Conv1D) or [3E] → q, k, v
//                (column blocks, or thirds)
//   split-heads  GPT-NeoX's fused query_key_value: torch [3E, E] or [3E],
//                rows ordered [head][q|k|v][D] (entry.heads = H) → q, k, v
//   rows-from    RoBERTa's position table [P, E]: the block graph keeps rows
//                entry.from … P-1 (padding_idx + 1 on, the positions an
//                unpadded input reads) as its rows 0 … P-from-1; model.save
//                writes the rows before `from` as zeros
//   rope-unpermute  a GGUF llama Q or K: torch [Hx·D, E] or [Hx·D] whose
//                rows convert_hf_to_gguf.py's LlamaModel.permute interleaved
//                within each head for llama.cpp's RoPE (entry.heads = Hx)
//                → the Hugging Face order
//   split-rows   torch rows cut into consecutive blocks of entry.sizes rows
//                (Phi-3's qkv_proj [H·D | Hkv·D | Hkv·D, E] → q, k, v;
//                gate_up_proj [F | F, E] → gate, up), or a vector likewise
//   add-one      Gemma's RMSNorm weight w, applied as x·(1 + w): the core
//                holds 1 + w (added in float32, as llama.cpp's
//                convert_hf_to_gguf does for Gemma); the file face subtracts 1
// 1-D tensors of every op but the splits are copied as they are (add-one
// adds its 1).
// The core face's context: write(index, first, rows, src, ld, transposed)
// writes staged rows (16-bit values as they were staged); floats(count) reads
// the staged values as float32; writeFloats(index, first, rows, data, ld,
// transposed) writes float32 values computed here.

/** data [rows, cols] → [cols, rows]. */
export function transpose(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const row = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[row + c];
  }
  return out;
}

/** Copies of `count` rows of `width` from row `from`. */
export function rows(data, from, count, width) {
  return data.slice(from * width, (from + count) * width);
}

/** Rows of [3E, width] ordered [head][part][D] gathered into part k's [E, width] (head-major). */
function gatherHeads(data, k, E, width, heads) {
  const D = E / heads;
  const out = new Float32Array(E * width);
  for (let h = 0; h < heads; h++) {
    const from = (h * 3 + k) * D * width;
    out.set(data.subarray(from, from + D * width), h * D * width);
  }
  return out;
}

/** The inverse of gatherHeads over the three parts. */
function scatterHeads(parts, E, width, heads) {
  const D = E / heads;
  const out = new Float32Array(3 * E * width);
  parts.forEach((p, k) => {
    for (let h = 0; h < heads; h++) out.set(p.subarray(h * D * width, (h + 1) * D * width), (h * 3 + k) * D * width);
  });
  return out;
}

/**
 * The Hugging Face row of GGUF row g of a permuted Q/K (LlamaModel.permute:
 * w.reshape(Hx, 2, D/2, …).swapaxes(1, 2), so GGUF row h·D + 2i + j holds HF
 * row h·D + j·D/2 + i).
 */
export function ropeRowOf(g, D) {
  const h = Math.floor(g / D);
  const rem = g % D;
  return h * D + (rem & 1) * (D / 2) + (rem >> 1);
}

/** Rows of [R, width] in GGUF order → Hugging Face order (inverse: back to GGUF order). */
function ropeRows(data, R, width, heads, inverse = false) {
  const D = R / heads;
  const out = new Float32Array(R * width);
  for (let g = 0; g < R; g++) {
    const hf = ropeRowOf(g, D);
    const [from, to] = inverse ? [hf, g] : [g, hf];
    out.set(data.subarray(from * width, (from + 1) * width), to * width);
  }
  return out;
}

const whole = (to, shape, data) => [[to[0], shape, data]];

export const LAYOUT_OPS = {
  copy: {
    core({ write, params, r0, n, staging, rowElems }) {
      write(params[0], r0, n, staging, rowElems, false);
    },
    gpu(t, shape, data) {
      if (shape.length === 1) return whole(t.to, shape, data);
      const [r, c] = shape;
      return [[t.to[0], [c, r], transpose(data, r, c)]];
    },
    file(entry, parts) {
      return { data: parts[0], shape: entry.shape.slice() };
    },
    torch(shape, data) {
      return [{ data, shape: shape.slice() }];
    },
  },

  transpose: {
    core({ write, params, r0, n, staging, rowElems }) {
      // file [in, out]: its rows are rows of the transposed weight
      write(params[0], r0, n, staging, rowElems, true);
    },
    gpu(t, shape, data) {
      return whole(t.to, shape, data);
    },
    file(entry, parts) {
      // file [in, out] from the block graph's [out, in]
      const shape = entry.shape.slice();
      if (shape.length === 1) return { data: parts[0], shape };
      const [r, c] = shape;
      const src = parts[0];
      const out = new Float32Array(r * c);
      for (let o = 0; o < c; o++) for (let i = 0; i < r; i++) out[i * c + o] = src[o * r + i];
      return { data: out, shape };
    },
    torch(shape, data) {
      if (shape.length === 1) return [{ data, shape: shape.slice() }];
      return [{ data: transpose(data, shape[0], shape[1]), shape: [shape[1], shape[0]] }];
    },
  },

  split: {
    core({ write, params, r0, n, staging, rowElems, stagedBytes, shape }) {
      const e = rowElems / params.length;
      if (shape.length === 1) {
        // [3E] → three [E]
        for (let k = 0; k < params.length; k++) write(params[k], 0, 1, staging + stagedBytes * k * e, e, false);
      } else {
        // [E, 3E] (Conv1D) → three [E, E]: column block k of each file row
        for (let k = 0; k < params.length; k++) write(params[k], r0, n, staging + stagedBytes * k * e, rowElems, true);
      }
    },
    gpu(t, shape, data) {
      if (shape.length === 1) {
        const e = shape[0] / t.to.length;
        return t.to.map((name, k) => [name, [e], data.subarray(k * e, (k + 1) * e)]);
      }
      const [r, cols] = shape;
      const e = cols / t.to.length;
      return t.to.map((name, k) => {
        const out = new Float32Array(r * e);
        for (let i = 0; i < r; i++) out.set(data.subarray(i * cols + k * e, i * cols + (k + 1) * e), i * e);
        return [name, [r, e], out];
      });
    },
    file(entry, parts) {
      const shape = entry.shape.slice();
      if (shape.length === 1) {
        const out = new Float32Array(shape[0]);
        let at = 0;
        for (const p of parts) {
          out.set(p, at);
          at += p.length;
        }
        return { data: out, shape };
      }
      const [e, e3] = shape;
      const out = new Float32Array(e * e3);
      parts.forEach((p, k) => {
        for (let o = 0; o < e; o++) for (let i = 0; i < e; i++) out[i * e3 + k * e + o] = p[o * e + i];
      });
      return { data: out, shape };
    },
    torch(shape, data, entry = {}) {
      const parts = entry.to?.length ?? 3;
      if (shape.length === 1) {
        const e = shape[0] / parts;
        return Array.from({ length: parts }, (_, k) => ({ data: data.slice(k * e, (k + 1) * e), shape: [e] }));
      }
      const [E, cols] = shape;
      const wT = transpose(data, E, cols); // [3E, E]: rows q, k, v in torch layout
      const e = cols / parts;
      return Array.from({ length: parts }, (_, k) => ({ data: rows(wT, k * e, e, E), shape: [e, E] }));
    },
  },

  'split-heads': {
    core({ write, params, r0, n, staging, rowElems, stagedBytes, shape, entry, Module }) {
      const E = shape[0] / 3;
      const D = E / entry.heads;
      if (shape.length === 1) {
        // [3E] ordered [head][q|k|v][D] → reorder in the staging buffer to q | k | v, then three [E]
        const bytes = Module.HEAPU8.slice(staging, staging + 3 * E * stagedBytes);
        for (let h = 0; h < entry.heads; h++) {
          for (let k = 0; k < 3; k++) {
            const from = (h * 3 + k) * D * stagedBytes;
            Module.HEAPU8.set(bytes.subarray(from, from + D * stagedBytes), staging + (k * E + h * D) * stagedBytes);
          }
        }
        for (let k = 0; k < 3; k++) write(params[k], 0, 1, staging + stagedBytes * k * E, E, false);
        return;
      }
      // torch [3E, E]: runs of D rows of one head and part go to rows h·D + d of part k
      for (let r = r0; r < r0 + n;) {
        const h = Math.floor(r / (3 * D));
        const k = Math.floor((r % (3 * D)) / D);
        const d = r % D;
        const run = Math.min(D - d, r0 + n - r);
        write(params[k], h * D + d, run, staging + (r - r0) * rowElems * stagedBytes, rowElems, false);
        r += run;
      }
    },
    gpu(t, shape, data) {
      return LAYOUT_OPS['split-heads'].torch(shape, data, t).map((p, k) => (shape.length === 1
        ? [t.to[k], p.shape, p.data]
        : [t.to[k], [p.shape[1], p.shape[0]], transpose(p.data, p.shape[0], p.shape[1])]));
    },
    file(entry, parts) {
      const shape = entry.shape.slice();
      const E = shape[0] / 3;
      return { data: scatterHeads(parts, E, shape.length === 1 ? 1 : shape[1], entry.heads), shape };
    },
    torch(shape, data, entry) {
      const heads = entry.heads;
      const E = shape[0] / 3;
      const width = shape.length === 1 ? 1 : shape[1];
      return [0, 1, 2].map((k) => ({ data: gatherHeads(data, k, E, width, heads), shape: shape.length === 1 ? [E] : [E, width] }));
    },
  },

  'rows-from': {
    core({ write, params, r0, n, staging, rowElems, stagedBytes, entry }) {
      // the chunk holds file rows r0 … r0+n-1; those from entry.from on are kept
      const skip = Math.max(0, entry.from - r0);
      if (skip >= n) return;
      write(params[0], r0 + skip - entry.from, n - skip, staging + skip * rowElems * stagedBytes, rowElems, false);
    },
    gpu(t, shape, data) {
      const [p] = LAYOUT_OPS['rows-from'].torch(shape, data, t);
      return [[t.to[0], [p.shape[1], p.shape[0]], transpose(p.data, p.shape[0], p.shape[1])]];
    },
    file(entry, parts) {
      const shape = entry.shape.slice();
      const out = new Float32Array(shape[0] * shape[1]);
      out.set(parts[0], entry.from * shape[1]);
      return { data: out, shape };
    },
    torch(shape, data, entry) {
      const [r, c] = shape;
      return [{ data: rows(data, entry.from, r - entry.from, c), shape: [r - entry.from, c] }];
    },
  },
};

LAYOUT_OPS['rope-unpermute'] = {
  core({ write, params, r0, n, staging, rowElems, stagedBytes, shape, entry, Module }) {
    const D = shape[0] / entry.heads;
    if (shape.length === 1) {
      // [Hx·D]: reorder in the staging buffer, then one write
      const R = shape[0];
      const bytes = Module.HEAPU8.slice(staging, staging + R * stagedBytes);
      for (let g = 0; g < R; g++) {
        Module.HEAPU8.set(bytes.subarray(g * stagedBytes, (g + 1) * stagedBytes), staging + ropeRowOf(g, D) * stagedBytes);
      }
      write(params[0], 0, 1, staging, R, false);
      return;
    }
    for (let r = r0; r < r0 + n; r++) write(params[0], ropeRowOf(r, D), 1, staging + (r - r0) * rowElems * stagedBytes, rowElems, false);
  },
  gpu(t, shape, data) {
    const [p] = LAYOUT_OPS['rope-unpermute'].torch(shape, data, t);
    return LAYOUT_OPS.copy.gpu(t, shape, p.data);
  },
  file(entry, parts) {
    const shape = entry.shape.slice();
    return { data: ropeRows(parts[0], shape[0], shape.length === 1 ? 1 : shape[1], entry.heads, true), shape };
  },
  torch(shape, data, entry) {
    return [{ data: ropeRows(data, shape[0], shape.length === 1 ? 1 : shape[1], entry.heads), shape: shape.slice() }];
  },
};

/** Row offsets of consecutive blocks of `sizes` rows. */
function offsets(sizes) {
  const out = [0];
  for (const n of sizes) out.push(out[out.length - 1] + n);
  return out;
}

LAYOUT_OPS['split-rows'] = {
  core({ write, params, r0, n, staging, rowElems, stagedBytes, shape, entry }) {
    const at = offsets(entry.sizes);
    if (shape.length === 1) {
      // [Σ sizes] → vectors of entry.sizes[k]
      for (let k = 0; k < params.length; k++) write(params[k], 0, 1, staging + stagedBytes * at[k], entry.sizes[k], false);
      return;
    }
    // rows r0 … r0 + n: each run inside one block goes to its part's rows
    for (let r = r0; r < r0 + n;) {
      let k = 0;
      while (r >= at[k + 1]) k++;
      const run = Math.min(at[k + 1], r0 + n) - r;
      write(params[k], r - at[k], run, staging + (r - r0) * rowElems * stagedBytes, rowElems, false);
      r += run;
    }
  },
  gpu(t, shape, data) {
    return LAYOUT_OPS['split-rows'].torch(shape, data, t).map((p, k) => (shape.length === 1
      ? [t.to[k], p.shape, p.data]
      : [t.to[k], [p.shape[1], p.shape[0]], transpose(p.data, p.shape[0], p.shape[1])]));
  },
  file(entry, parts) {
    const shape = entry.shape.slice();
    const out = new Float32Array(shape.length === 1 ? shape[0] : shape[0] * shape[1]);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return { data: out, shape };
  },
  torch(shape, data, entry) {
    const at = offsets(entry.sizes);
    const width = shape.length === 1 ? 1 : shape[1];
    return entry.sizes.map((rowsOf, k) => ({
      data: data.slice(at[k] * width, at[k + 1] * width),
      shape: shape.length === 1 ? [rowsOf] : [rowsOf, width],
    }));
  },
};

/** data + 1 in float32. */
function plusOne(data) {
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = data[i] + 1;
  return out;
}

LAYOUT_OPS['add-one'] = {
  core({ floats, writeFloats, params, r0, n, rowElems }) {
    const d = floats(n * rowElems);
    for (let i = 0; i < d.length; i++) d[i] += 1; // float32, like the core's (1 + w)
    writeFloats(params[0], r0, n, d, rowElems, false);
  },
  gpu(t, shape, data) {
    return LAYOUT_OPS.copy.gpu(t, shape, plusOne(data));
  },
  file(entry, parts) {
    const src = parts[0];
    const out = new Float32Array(src.length);
    for (let i = 0; i < src.length; i++) out[i] = src[i] - 1;
    return { data: out, shape: entry.shape.slice() };
  },
  torch(shape, data) {
    return [{ data: plusOne(data), shape: shape.slice() }];
  },
};

/** The layout op of a table entry, or an internal Error. */
export function layoutOp(op) {
  const o = Object.hasOwn(LAYOUT_OPS, op) ? LAYOUT_OPS[op] : null;
  if (!o) throw new Error(`internal: unknown layout op ${JSON.stringify(op)}`);
  return o;
}
