// ggml tensor types: block layouts (ggml/src/ggml-common.h) and the reference
// dequantizers (dequantize_row_* in ggml/src/ggml-quants.c), in float32
// arithmetic (Math.fround at each C float operation), so the values equal
// llama.cpp's scalar path. The SIMD kernels come later; this is the oracle.

export const QK_K = 256;
export const K_SCALE_SIZE = 12;

/** ggml type id → { name, blockSize (elements), typeSize (bytes a block) }. */
export const GGML_TYPES = Object.freeze({
  0: { name: 'F32', blockSize: 1, typeSize: 4 },
  1: { name: 'F16', blockSize: 1, typeSize: 2 },
  2: { name: 'Q4_0', blockSize: 32, typeSize: 18 },
  3: { name: 'Q4_1', blockSize: 32, typeSize: 20 },
  6: { name: 'Q5_0', blockSize: 32, typeSize: 22 },
  7: { name: 'Q5_1', blockSize: 32, typeSize: 24 },
  8: { name: 'Q8_0', blockSize: 32, typeSize: 34 },
  9: { name: 'Q8_1', blockSize: 32, typeSize: 36 },
  10: { name: 'Q2_K', blockSize: QK_K, typeSize: 84 },
  11: { name: 'Q3_K', blockSize: QK_K, typeSize: 110 },
  12: { name: 'Q4_K', blockSize: QK_K, typeSize: 144 },
  13: { name: 'Q5_K', blockSize: QK_K, typeSize: 176 },
  14: { name: 'Q6_K', blockSize: QK_K, typeSize: 210 },
  15: { name: 'Q8_K', blockSize: QK_K, typeSize: 292 },
  24: { name: 'I8', blockSize: 1, typeSize: 1 },
  25: { name: 'I16', blockSize: 1, typeSize: 2 },
  26: { name: 'I32', blockSize: 1, typeSize: 4 },
  27: { name: 'I64', blockSize: 1, typeSize: 8 },
  28: { name: 'F64', blockSize: 1, typeSize: 8 },
  30: { name: 'BF16', blockSize: 1, typeSize: 2 },
});

/** The types dequantizeGgml turns into a Float32Array. */
export const DEQUANTIZABLE = Object.freeze(['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_K', 'Q6_K']);

export function ggmlTypeId(name) {
  for (const [id, t] of Object.entries(GGML_TYPES)) if (t.name === name) return Number(id);
  return -1;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** IEEE half bits → float (exact). */
export function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function bf16ToFloat(b) { u32[0] = b << 16; return f32[0]; }

/** Bytes of `count` elements of a ggml type; count must be whole blocks. */
export function ggmlByteSize(typeName, count) {
  const t = Object.values(GGML_TYPES).find((x) => x.name === typeName);
  return (count / t.blockSize) * t.typeSize;
}

const fr = Math.fround;

function getScaleMinK4(j, q, o) {
  if (j < 4) return [q[o + j] & 63, q[o + j + 4] & 63];
  return [(q[o + j + 4] & 0xf) | ((q[o + j - 4] >> 6) << 4), (q[o + j + 4] >> 4) | ((q[o + j] >> 6) << 4)];
}

/**
 * Dequantizes `count` elements of ggml type `typeName` from `bytes` (the
 * tensor's own bytes, little-endian) into a new Float32Array.
 * @param {string} where  the caller's name, for messages
 * @param {string} tensor the tensor's name, for messages
 */
export function dequantizeGgml(where, tensor, typeName, bytes, count) {
  if (!DEQUANTIZABLE.includes(typeName)) {
    throw new TypeError(`${where}: tensor '${tensor}' has ggml type ${typeName}, which this reader does not dequantize; allowed: ${DEQUANTIZABLE.join(', ')}`);
  }
  const need = ggmlByteSize(typeName, count);
  if (!Number.isInteger(need) || bytes.length < need) {
    throw new RangeError(`${where}: tensor '${tensor}' (${typeName}, ${count} elements) needs ${Math.ceil(need)} bytes, got ${bytes.length} (a truncated block)`);
  }
  const out = new Float32Array(count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = (o) => halfToFloat(dv.getUint16(o, true));
  if (typeName === 'F32') {
    for (let i = 0; i < count; i++) out[i] = dv.getFloat32(4 * i, true);
  } else if (typeName === 'F16') {
    for (let i = 0; i < count; i++) out[i] = h(2 * i);
  } else if (typeName === 'BF16') {
    for (let i = 0; i < count; i++) out[i] = bf16ToFloat(dv.getUint16(2 * i, true));
  } else if (typeName === 'Q8_0') {
    for (let b = 0; b < count / 32; b++) {
      const o = 34 * b; const d = h(o);
      for (let j = 0; j < 32; j++) out[32 * b + j] = fr(dv.getInt8(o + 2 + j) * d);
    }
  } else if (typeName === 'Q4_0') {
    for (let b = 0; b < count / 32; b++) {
      const o = 18 * b; const d = h(o);
      for (let j = 0; j < 16; j++) {
        const q = bytes[o + 2 + j];
        out[32 * b + j] = fr(((q & 0xf) - 8) * d);
        out[32 * b + j + 16] = fr(((q >> 4) - 8) * d);
      }
    }
  } else if (typeName === 'Q4_K') {
    for (let b = 0; b < count / QK_K; b++) {
      const o = 144 * b; const d = h(o); const dmin = h(o + 2);
      let q = o + 4 + K_SCALE_SIZE; let y = QK_K * b; let is = 0;
      for (let j = 0; j < QK_K; j += 64) {
        const [sc1, m1b] = getScaleMinK4(is, bytes, o + 4);
        const [sc2, m2b] = getScaleMinK4(is + 1, bytes, o + 4);
        const d1 = fr(d * sc1); const m1 = fr(dmin * m1b);
        const d2 = fr(d * sc2); const m2 = fr(dmin * m2b);
        for (let l = 0; l < 32; l++) out[y++] = fr(fr(d1 * (bytes[q + l] & 0xf)) - m1);
        for (let l = 0; l < 32; l++) out[y++] = fr(fr(d2 * (bytes[q + l] >> 4)) - m2);
        q += 32; is += 2;
      }
    }
  } else { // Q6_K: ql[128] qh[64] scales[16] (int8) d (f16)
    for (let b = 0; b < count / QK_K; b++) {
      const o = 210 * b; const d = h(o + 208);
      let ql = o; let qh = o + 128; let sc = o + 192; let y = QK_K * b;
      for (let n = 0; n < QK_K; n += 128) {
        for (let l = 0; l < 32; l++) {
          const is = l >> 4;
          const q1 = ((bytes[ql + l] & 0xf) | (((bytes[qh + l] >> 0) & 3) << 4)) - 32;
          const q2 = ((bytes[ql + l + 32] & 0xf) | (((bytes[qh + l] >> 2) & 3) << 4)) - 32;
          const q3 = ((bytes[ql + l] >> 4) | (((bytes[qh + l] >> 4) & 3) << 4)) - 32;
          const q4 = ((bytes[ql + l + 32] >> 4) | (((bytes[qh + l] >> 6) & 3) << 4)) - 32;
          out[y + l] = fr(fr(d * dv.getInt8(sc + is)) * q1);
          out[y + l + 32] = fr(fr(d * dv.getInt8(sc + is + 2)) * q2);
          out[y + l + 64] = fr(fr(d * dv.getInt8(sc + is + 4)) * q3);
          out[y + l + 96] = fr(fr(d * dv.getInt8(sc + is + 6)) * q4);
        }
        y += 128; ql += 64; qh += 32; sc += 8;
      }
    }
  }
  return out;
}

