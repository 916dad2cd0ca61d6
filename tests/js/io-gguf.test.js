// GGUF reader/writer (web/lib/io/gguf.js) against fixtures written from the
// spec by tests/reference/gguf_fixtures.py (numpy, independent of the JS).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readGguf, openGguf, parseGgufHeader, writeGguf } from '../../web/lib/io/index.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'gguf');
const file = (n) => new Uint8Array(readFileSync(path.join(DIR, n)));
const ref = JSON.parse(readFileSync(path.join(DIR, 'tiny.ref.json'), 'utf8'));

describe('readGguf', () => {
  const g = readGguf(file('tiny.gguf'));
  test('header: version, alignment, metadata of every value type', () => {
    expect(g.version).toBe(3);
    expect(g.alignment).toBe(32);
    for (const [k, v] of Object.entries(ref.metadata)) expect([k, g.metadata.get(k)]).toEqual([k, v]);
    expect(g.metadata.get('test.floats')).toEqual([0.5, -2]);
    expect(g.metadata.get('llama.attention.layer_norm_rms_epsilon')).toBe(Math.fround(1e-5));
    expect(g.metadataTypes.get('test.strings')).toBe('ARRAY');
  });
  test('tensor infos: names, types, shapes in torch order, byte ranges', () => {
    expect(g.tensors.map((t) => [t.name, t.ggmlType, t.shape, t.end - t.begin]))
      .toEqual(ref.tensors.map((t) => [t.name, t.ggmlType, t.shape, t.bytes]));
    for (const t of g.tensors) expect(t.begin % 32).toBe(0);
  });
  // Exact: every dequantizer is a fixed sequence of float32 operations that
  // the generator repeats step by step in numpy float32, so the two agree to the bit.
  test.each(ref.tensors.map((t) => [t.ggmlType, t]))('dequantized %s equals the float64 reference exactly', (_, t) => {
    const y = g.tensor(t.name);
    expect(y).toBeInstanceOf(Float32Array);
    expect(y.length).toBe(t.values.length);
    let bad = 0;
    for (let i = 0; i < y.length; i++) if (y[i] !== t.values[i]) bad++;
    expect(bad).toBe(0);
  });
  test('version 2 reads too', () => {
    const v2 = readGguf(file('tiny-v2.gguf'));
    expect(v2.version).toBe(2);
    expect(Array.from(v2.tensor('t.f16'))).toEqual(ref.tensors[1].values);
  });
  test('openGguf reads a Blob lazily and agrees', async () => {
    const o = await openGguf(new Blob([file('tiny.gguf')]));
    expect(o.tensors).toEqual(g.tensors);
    expect(Array.from(await o.tensor('t.q4_k'))).toEqual(ref.tensors[5].values);
  });
});

describe('writeGguf', () => {
  const src = Float32Array.from(ref.source.flat());
  const py = readGguf(file('tiny.gguf'));
  test.each([['F32', 't.f32'], ['F16', 't.f16'], ['Q8_0', 't.q8_0'], ['Q4_0', 't.q4_0']])('%s bytes equal the Python generator\'s', (type, name) => {
    const out = readGguf(writeGguf({ w: { data: src, shape: [4, 64], type } }, { 'general.architecture': 'llama' }));
    expect(out.metadata.get('general.architecture')).toBe('llama');
    expect(out.tensors[0].shape).toEqual([4, 64]);
    expect(Buffer.from(out.bytes('w')).equals(Buffer.from(py.bytes(name)))).toBe(true);
  });
  test('refuses what it cannot write', () => {
    expect(() => writeGguf({ w: { data: src, shape: [4, 64], type: 'Q4_K' } })).toThrow(/writeGguf: tensor 'w' has type Q4_K; allowed: F32, F16, Q8_0, Q4_0/);
    expect(() => writeGguf({ w: { data: new Float32Array(10), shape: [10], type: 'Q8_0' } })).toThrow(/multiple of 32/);
  });
});

describe('hostile GGUF files are refused, each with its own Error', () => {
  const cases = {
    magic: /not a GGUF file/,
    version1: /GGUF version 1 is not supported; allowed: 2 or 3/,
    'string-past-end': /a string of 1000000000000 bytes.*past the end of the file/,
    'array-past-end': /array of 1000000000000000 UINT32 values, past the end/,
    ndims: /tensor 't' has n_dims 5; allowed: 1 to 4/,
    'offset-outside': /tensor 't' starts at data byte 4096, outside the data section/,
    overlap: /tensors 'a' and 'b' overlap/,
    alignment: /general.alignment is 24; allowed: a power of two/,
    'unknown-type': /tensor 't' has unknown ggml type 99/,
    'wrong-type-alignment': /metadata key 'general.alignment' has value type STRING; allowed: UINT32/,
    'wrong-type-arch': /metadata key 'general.architecture' has value type UINT32; allowed: STRING/,
    'wrong-type-block-count': /metadata key 'llama.block_count' has value type STRING/,
    'truncated-block': /tensor 'q' \(Q8_0\) ends at data byte 34, past the data section .*truncated block/,
  };
  test('every hostile fixture has a case', () => {
    const files = readdirSync(DIR).filter((f) => f.startsWith('bad-')).map((f) => f.slice(4, -5)).sort();
    expect(files).toEqual(Object.keys(cases).sort());
  });
  test.each(Object.entries(cases))('%s', (name, re) => {
    expect(() => readGguf(file(`bad-${name}.gguf`))).toThrow(re);
    expect(() => parseGgufHeader(file(`bad-${name}.gguf`))).toThrow(/^readGguf: /);
  });
  test('a type read but not dequantized names the type and the tensor', () => {
    const bytes = file('tiny.gguf');
    const g = readGguf(bytes);
    const t = g.tensors.find((x) => x.name === 't.f32');
    const dv = new DataView(bytes.buffer.slice(0));
    // rewrite t.f32's type id in place (F32=0 → I32=26, same size) in a copy
    const copy = new Uint8Array(dv.buffer);
    const nameAt = Buffer.from(copy).indexOf(Buffer.from('t.f32'));
    new DataView(copy.buffer).setUint32(nameAt + 5 + 4 + 16, 26, true);
    expect(t).toBeTruthy();
    expect(() => readGguf(copy).tensor('t.f32')).toThrow(/tensor 't.f32' has ggml type I32, which this reader does not dequantize; allowed: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K/);
  });
});

describe('fuzz (short pass of tests/fuzz/fuzz-gguf.mjs)', () => {
  test('mutated GGUF files parse or throw readGguf: RangeError/TypeError, none slow', async () => {
    const { runFuzz } = await import('../fuzz/fuzz-gguf.mjs');
    const failures = runFuzz({ iterations: 3000, seed: 36 });
    expect(failures.map((f) => String(f.error))).toEqual([]);
  });
});
