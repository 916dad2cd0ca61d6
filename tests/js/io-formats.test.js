// Weight-file readers and writers (web/lib/io) against files written by
// tests/reference/make_weights.py (numpy, by the format specs) and against
// independent formulas for float16/bfloat16.
import { readFileSync } from 'node:fs';
import {
  readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz,
} from '../../web/lib/io/index.js';

const DIR = new URL('../golden/weights/', import.meta.url);
const file = (name) => readFileSync(new URL(name, DIR));
const expected = (name) => JSON.parse(readFileSync(new URL(`${name}.expected.json`, DIR), 'utf8'));
const bitsOf = (a) => Array.from(new Uint32Array(Float32Array.from(a).buffer));

// float16 → float64 by the IEEE 754 formula (independent of the bit-building table).
function halfValue(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

describe('safetensors', () => {
  test('every dtype of a numpy-written file converts exactly', () => {
    const { tensors, metadata } = readSafetensors(file('dtypes.safetensors'));
    const exp = expected('dtypes');
    expect(metadata).toEqual({ note: 'dtype conversions' });
    for (const name of ['f16', 'bf16', 'f64', 'f32_after_f16']) {
      const e = exp[name];
      expect(tensors[name].data).toBeInstanceOf(Float32Array);
      expect(tensors[name].shape).toEqual(e.shape);
      expect(bitsOf(tensors[name].data)).toEqual(e.bits ?? bitsOf(e.data));
    }
    for (const name of ['i64', 'i32', 'u8']) {
      expect(tensors[name].data).toBeInstanceOf(Int32Array);
      expect(Array.from(tensors[name].data)).toEqual(exp[name].data);
      expect(tensors[name].shape).toEqual(exp[name].shape);
    }
    expect(tensors.empty.shape).toEqual([0, 3]);
    expect(tensors.empty.data.length).toBe(0);
    expect(tensors.f16.dtype).toBe('F16');
  });

  test('I64 values outside int32 are an error naming the tensor and value', () => {
    expect(() => readSafetensors(file('i64_out_of_range.safetensors'))).toThrow(RangeError);
    expect(() => readSafetensors(file('i64_out_of_range.safetensors'))).toThrow(/"ids": element 1 of this I64 tensor is 1099511627776, outside the int32 range/);
  });

  test('all 65536 float16 and bfloat16 values decode exactly and write back bit for bit', () => {
    const halves = new Uint16Array(65536).map((_, i) => i);
    const header = JSON.stringify({ h: { dtype: 'F16', shape: [65536], data_offsets: [0, 131072] }, b: { dtype: 'BF16', shape: [65536], data_offsets: [131072, 262144] } }).padEnd(160);
    const st = new Uint8Array(8 + 160 + 2 * 65536 * 2);
    new DataView(st.buffer).setUint32(0, 160, true);
    st.set(new TextEncoder().encode(header), 8);
    st.set(new Uint8Array(halves.buffer), 168);
    st.set(new Uint8Array(halves.buffer), 168 + 131072);
    const { tensors } = readSafetensors(st);
    const h = tensors.h.data;
    const hb = new Uint32Array(h.buffer, h.byteOffset, h.length);
    const b = new Uint32Array(tensors.b.data.buffer, tensors.b.data.byteOffset, 65536);
    let bad = 0;
    for (let i = 0; i < 65536; i++) {
      const v = halfValue(i);
      if (Number.isNaN(v) ? !Number.isNaN(h[i]) : !Object.is(h[i], v)) bad++;
      if (b[i] !== i * 65536) bad++;
    }
    expect(bad).toBe(0);
    expect(hb[0x7e00]).toBe(0x7fc00000);
    // Round trip: read → write (same dtypes) → identical data bytes.
    const again = writeSafetensors(tensors);
    const back = readSafetensors(again);
    expect(Buffer.compare(again.subarray(again.byteLength - 262144), st.subarray(168))).toBe(0);
    expect(Buffer.compare(new Uint8Array(back.tensors.h.data.slice().buffer), new Uint8Array(h.slice().buffer))).toBe(0);
  });

  test('float32 → F16/BF16 writing rounds to nearest even like numpy', () => {
    const exp = expected('dtypes');
    const src = Float32Array.from(exp.f16_source.bits ? new Float32Array(Uint32Array.from(exp.f16_source.bits).buffer) : exp.f16_source.data);
    const bsrc = Float32Array.from(exp.bf16_source.bits ? new Float32Array(Uint32Array.from(exp.bf16_source.bits).buffer) : exp.bf16_source.data);
    const out = readSafetensors(writeSafetensors({
      h: { data: src, shape: [src.length], dtype: 'F16' },
      b: { data: bsrc, shape: [bsrc.length], dtype: 'BF16' },
    }));
    expect(bitsOf(out.tensors.h.data)).toEqual(exp.f16.bits);
    expect(bitsOf(out.tensors.b.data)).toEqual(exp.bf16.bits);
  });

  test('write → read is bit-exact for float32 (NaN payloads, -0, subnormals) and int32, with metadata', () => {
    const bits = new Uint32Array(4099);
    let x = 12345;
    for (let i = 0; i < bits.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      bits[i] = x;
    }
    bits.set([0x7fc00001, 0xffa00000, 0x80000000, 0x00000001, 0x7f800000], 0);
    const f = new Float32Array(bits.buffer);
    const ints = Int32Array.from([0, -1, 2147483647, -2147483648, 5]);
    const bytes = writeSafetensors({ f: { data: f, shape: [4099] }, odd: { data: new Float32Array([1, 2, 3]), shape: [3], dtype: 'F16' }, n: { data: ints, shape: [5, 1] }, l: { data: ints, shape: [5], dtype: 'I64' } }, { a: 'b' });
    const r = readSafetensors(bytes);
    expect(Buffer.compare(new Uint8Array(r.tensors.f.data.buffer, r.tensors.f.data.byteOffset, 4 * 4099), new Uint8Array(bits.buffer))).toBe(0);
    expect(r.tensors.n).toEqual({ data: ints, shape: [5, 1], dtype: 'I32' });
    expect(r.tensors.l.data).toEqual(ints);
    expect(r.metadata).toEqual({ a: 'b' });
    // Header padded to 8 bytes; F32 data aligned, so it is a view (no copy).
    expect(new DataView(bytes.buffer).getUint32(0, true) % 8).toBe(0);
    expect(r.tensors.f.data.buffer).toBe(bytes.buffer);
    expect(readSafetensors(bytes, { copy: true }).tensors.f.data.buffer).not.toBe(bytes.buffer);
    // A second write of what was read gives the same bytes.
    expect(Buffer.compare(writeSafetensors(r.tensors, r.metadata), bytes)).toBe(0);
  });

  test('names picks tensors; openSafetensors lists a Blob by its header and reads only what is asked', async () => {
    const bytes = file('hf_gpt2.safetensors');
    const some = readSafetensors(bytes, { names: ['h.0.ln_1.weight'] });
    expect(Object.keys(some.tensors)).toEqual(['h.0.ln_1.weight']);
    expect(() => readSafetensors(bytes, { names: ['nope'] })).toThrow(/no tensor "nope"/);
    const blob = new Blob([bytes]);
    let sliced = 0;
    const slice = blob.slice.bind(blob);
    blob.slice = (a, b) => {
      sliced += b - a;
      return slice(a, b);
    };
    const f = await openSafetensors(blob);
    expect(f.entries.map((e) => e.name)).toContain('h.1.attn.c_attn.weight');
    expect(f.entries.find((e) => e.name === 'h.1.attn.c_attn.weight')).toEqual({ name: 'h.1.attn.c_attn.weight', dtype: 'F32', shape: [8, 24], byteLength: 768 });
    const headerBytes = sliced;
    expect(headerBytes).toBeLessThan(bytes.length / 2);
    const t = await f.read(['h.1.attn.c_attn.weight']);
    expect(sliced - headerBytes).toBe(768);
    expect(t['h.1.attn.c_attn.weight'].data).toEqual(readSafetensors(bytes).tensors['h.1.attn.c_attn.weight'].data);
  });
});

describe('.npy and .npz', () => {
  const a = Float32Array.from({ length: 12 }, (_, i) => i / 8);
  test.each(['fortran_f8.npy', 'big_endian_f4.npy', 'f2.npy'])('%s reads as C-order float32', (name) => {
    const t = readNpy(file(name));
    expect(t.shape).toEqual([3, 4]);
    expect(t.data).toEqual(a);
  });

  test('npz written by numpy.savez reads; savez_compressed is refused with the reason', () => {
    const { tensors } = readNpz(file('keras_mha.npz'));
    expect(tensors['multi_head_attention/query/kernel'].shape).toEqual([8, 2, 4]);
    expect(() => readNpz(file('compressed.npz'))).toThrow(RangeError);
    expect(() => readNpz(file('compressed.npz'))).toThrow(/"a.npy" is deflated \(numpy.savez_compressed\); only stored members \(numpy.savez\)/);
  });

  test('write → read round trips bit-exactly', () => {
    const f = new Float32Array(new Uint32Array([0x7fc00001, 0x80000000, 1, 0x3f800000, 0xff800000, 0x12345678]).buffer);
    const t = readNpy(writeNpy({ data: f, shape: [2, 3] }));
    expect(new Uint32Array(t.data.buffer, t.data.byteOffset, 6)).toEqual(new Uint32Array(f.buffer));
    expect(t.shape).toEqual([2, 3]);
    expect(readNpy(writeNpy({ data: [1.5], shape: [] }))).toEqual({ data: new Float32Array([1.5]), shape: [], dtype: 'F32' });
    expect(readNpy(writeNpy({ data: new Int32Array([-3, 4]), shape: [2], dtype: 'I64' })).data).toEqual(new Int32Array([-3, 4]));
    const z = readNpz(writeNpz({ 'a.b/c': { data: f, shape: [6] }, i: { data: new Int32Array([7]), shape: [1, 1] } }));
    expect(new Uint32Array(z.tensors['a.b/c'].data.slice().buffer)).toEqual(new Uint32Array(f.buffer));
    expect(z.tensors.i).toEqual({ data: new Int32Array([7]), shape: [1, 1], dtype: 'I32' });
    // A .npz of numpy is rewritten by writeNpz and read back to the same tensors.
    const orig = readNpz(file('torch_mha_kvdim.npz')).tensors;
    expect(readNpz(writeNpz(orig)).tensors).toEqual(orig);
    expect(() => writeNpy({ data: f, shape: [6], dtype: 'BF16' })).toThrow(/.npy has no BF16 dtype/);
  });
});
