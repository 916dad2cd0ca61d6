// Bad weight files: each gets a RangeError (or a TypeError for wrong kinds of
// argument) whose message names the problem.
import { readFileSync } from 'node:fs';
import { readSafetensors, openSafetensors, readNpy, readNpz, writeSafetensors, writeNpy } from '../../web/lib/io/index.js';

const DIR = new URL('../golden/weights/', import.meta.url);
const file = (name) => new Uint8Array(readFileSync(new URL(name, DIR)));

/** A safetensors file from a header (object or raw string) and data bytes. */
function st(header, dataBytes = 0, { length } = {}) {
  const text = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + dataBytes);
  const dv = new DataView(out.buffer);
  const n = length ?? text.length;
  dv.setUint32(0, n % 2 ** 32, true);
  dv.setUint32(4, Math.floor(n / 2 ** 32), true);
  out.set(text, 8);
  return out;
}

const f32 = (begin, end, shape = [(end - begin) / 4]) => ({ dtype: 'F32', shape, data_offsets: [begin, end] });

describe('safetensors: bad files', () => {
  test.each([
    ['empty file', new Uint8Array(0), /truncated file: 0 bytes/],
    ['only 5 bytes', new Uint8Array(5), /truncated file: 5 bytes/],
    ['header cut short', st({ a: f32(0, 8) }, 8).subarray(0, 20), /truncated file: the header claims \d+ bytes but only 12 follow/],
    ['data cut short', st({ a: f32(0, 8) }, 8).subarray(0, -1), /tensor "a": data_offsets \[0, 8\] lie outside the data, which has 7 bytes/],
    ['offsets past the end', st({ a: f32(0, 1000, [250]) }, 12), /tensor "a": data_offsets \[0, 1000\] lie outside the data, which has 12 bytes \(truncated file or a header that lies about offsets\)/],
    ['end before begin', st({ a: f32(8, 4, [1]) }, 12), /data_offsets \[8, 4\] end before they begin/],
    ['overlap', st({ a: f32(0, 8), b: f32(4, 12) }, 12), /tensors "a" \[0, 8\] and "b" \[4, 12\] overlap/],
    ['unknown dtype', st({ a: { dtype: 'F8_E4M3', shape: [4], data_offsets: [0, 4] } }, 4), /tensor "a": unknown dtype "F8_E4M3"; supported: F64, F32, F16, BF16/],
    ['shape vs byte length', st({ a: f32(0, 8, [3]) }, 8), /tensor "a": shape \[3\] of F32 needs 3 × 4 = 12 bytes, but data_offsets \[0, 8\] span 8/],
    ['2^40 header length', st({}, 0, { length: 2 ** 40 }), /header length 1099511627776 bytes \(about 2\^40.0\) exceeds the limit of 100000000 bytes/],
    ['header longer than the file', st({}, 0, { length: 5000 }), /truncated file: the header claims 5000 bytes but only 2 follow/],
    ['header not JSON', st('{"a": '), /the header is not valid JSON/],
    ['header not an object', st('[1,2]'), /must be a JSON object starting with '\{'/],
    ['header not UTF-8', (() => { const b = st('{"\u00e9":1}'); b[10] = 0xff; return b; })(), /not valid UTF-8/],
    ['entry not an object', st({ a: 5 }), /tensor "a": the entry must be an object/],
    ['missing dtype', st({ a: { shape: [1], data_offsets: [0, 4] } }, 4), /tensor "a": dtype is missing/],
    ['negative dim', st({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, 4), /shape must be an array of non-negative integers/],
    ['offsets not a pair', st({ a: { dtype: 'F32', shape: [1], data_offsets: [0] } }, 4), /data_offsets must be \[begin, end\]/],
    ['metadata not strings', st({ __metadata__: { a: 1 } }), /__metadata__\["a"\] must be a string/],
  ])('%s', (_, bytes, message) => {
    let err;
    try {
      readSafetensors(bytes);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RangeError);
    expect(err.message).toMatch(/^readSafetensors: /);
    expect(err.message).toMatch(message);
  });

  test('openSafetensors refuses the same problems from a Blob, reading only the 8-byte prefix for a huge length', async () => {
    await expect(openSafetensors(new Blob([st({}, 0, { length: 2 ** 40 })]))).rejects.toThrow(/openSafetensors: header length 1099511627776 bytes \(about 2\^40.0\)/);
    await expect(openSafetensors(new Blob([st({ a: f32(0, 8), b: f32(4, 12) }, 12)]))).rejects.toThrow(RangeError);
  });

  test('wrong kinds of argument are TypeErrors', () => {
    expect(() => readSafetensors('file.safetensors')).toThrow(TypeError);
    expect(() => readSafetensors(new Uint8Array(16), { nope: 1 })).toThrow(/unknown option "nope"/);
    expect(() => writeSafetensors([1])).toThrow(TypeError);
    expect(() => writeSafetensors({ a: { data: [1, 2], shape: [3] } })).toThrow(/shape \[3\] needs 3 elements but data has 2/);
    expect(() => writeSafetensors({ a: { data: [1], shape: [1], dtype: 'Q4' } })).toThrow(/cannot write dtype "Q4"/);
    expect(() => writeSafetensors({ a: { data: [1], shape: [1] } }, { v: 2 })).toThrow(/metadata\["v"\] must be a string/);
    expect(() => writeSafetensors({ a: { data: [1.5], shape: [1], dtype: 'I32' } })).toThrow(/element 0 \(1.5\) is not an int32/);
  });
});

describe('.npy: bad files', () => {
  const good = writeNpy({ data: new Float32Array(6), shape: [2, 3] });
  const withHeader = (dict) => {
    const b = good.slice();
    const text = dict.padEnd(good.length - 10 - 24 - 1) + '\n';
    b.set(new TextEncoder().encode(text), 10);
    return b;
  };
  test.each([
    ['empty', new Uint8Array(0), /truncated file: 0 bytes/],
    ['bad magic', new Uint8Array(64), /not a .npy file/],
    ['version 9', (() => { const b = good.slice(); b[6] = 9; return b; })(), /unsupported .npy format version 9.0/],
    ['truncated data', good.subarray(0, good.length - 1), /needs 24 bytes of data, but the file has 23 after the header \(truncated file\)/],
    ['extra bytes', new Uint8Array([...good, 0]), /needs 24 bytes of data, but the file has 25/],
    ['header past the end', good.subarray(0, 40), /truncated file: the header claims/],
    ['object dtype', withHeader("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }"), /unsupported dtype "\|O" \(object arrays hold pickles, which are never read\)/],
    ['structured dtype', withHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"), /structured dtypes/],
    ['missing shape', withHeader("{'descr': '<f4', 'fortran_order': False}"), /the header has no 'shape'/],
    ['broken dict', withHeader("{'descr': '<f4', 'fortran_order': Maybe"), /not a valid .npy header dict/],
    ['shape vs bytes', withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"), /shape \(2, 4\) of <f4 needs 32 bytes of data, but the file has 24/],
  ])('%s', (_, bytes, message) => {
    expect(() => readNpy(bytes)).toThrow(RangeError);
    expect(() => readNpy(bytes)).toThrow(message);
  });
});

describe('.npz: bad files', () => {
  const good = file('torch_mha_kvdim.npz');
  const at = (i, v) => {
    const b = good.slice();
    b[i] = v;
    return b;
  };
  const eocd = good.length - 22;
  const cd = new DataView(good.buffer, good.byteOffset).getUint32(eocd + 16, true);
  test.each([
    ['empty', new Uint8Array(0), /truncated file: 0 bytes is too short for a zip archive/],
    ['not a zip', new Uint8Array(100), /not a zip archive \(.npz\): no end-of-central-directory record/],
    ['truncated', good.subarray(0, good.length - 30), /no end-of-central-directory record \(truncated file\?\)|lies outside the archive/],
    ['central directory offset lies', at(eocd + 19, 0x7f), /the central directory \[\d+, \d+\) lies outside the archive/],
    ['member offset lies', at(cd + 42, 0x33), /no local header at offset|overlaps|CRC-32 mismatch/],
    ['damaged data', at(200, good[200] ^ 0xff), /CRC-32 mismatch \(damaged file\)/],
    ['deflated', file('compressed.npz'), /deflated \(numpy.savez_compressed\)/],
  ])('%s', (_, bytes, message) => {
    expect(() => readNpz(bytes)).toThrow(RangeError);
    expect(() => readNpz(bytes)).toThrow(message);
  });
});
