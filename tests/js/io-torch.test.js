// The PyTorch checkpoint reader (web/lib/io/zip.js, torch-pickle.js,
// torch.js) on files written by real torch.save (Debian's python3-torch 1.13,
// tests/reference/torch_fixtures.py, from the golden safetensors checkpoints):
// every tensor's bytes equal its safetensors twin's bit for bit (F32, F16,
// BF16; tied storages, views at offsets, a transposed view, deflated
// entries, the legacy format of torch < 1.6), hostile pickles are refused by name and run nothing, damaged zips
// are refused, and a short fuzz pass of tests/fuzz/fuzz-torch.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTorchBytes, openLegacyTorch, openTorchFile } from '../../web/lib/io/torch.js';
import { openSafetensors, listAttentionLayers } from '../../web/lib/io/index.js';
import { unpickle, ALLOWED_GLOBALS } from '../../web/lib/io/torch-pickle.js';
import { pickleRange } from '../fuzz/fuzz-torch.mjs';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TORCH = path.join(ROOT, 'tests', 'golden', 'torch');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const bin = (...p) => new Uint8Array(fs.readFileSync(path.join(TORCH, ...p)));

/** A safetensors file's tensors as raw bytes (parsed here, not by the library). */
function rawSafetensors(file) {
  const b = fs.readFileSync(path.join(MODELS, file));
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    out[name] = { dtype: e.dtype, shape: e.shape, bytes: b.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]) };
  }
  return out;
}

/**
 * The same zip with its directory in zip64 form (as torch writes past 4 GiB):
 * every central entry's sizes and offset moved into a zip64 extra field, a
 * zip64 end record and locator, the classic end record saturated.
 */
function toZip64(b) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const eocd = b.length - 22;
  const count = dv.getUint16(eocd + 10, true);
  const cdOffset = dv.getUint32(eocd + 16, true);
  const parts = [b.subarray(0, cdOffset)];
  let p = cdOffset;
  let cdSize = 0;
  for (let i = 0; i < count; i++) {
    const nameLen = dv.getUint16(p + 28, true);
    const extraLen = dv.getUint16(p + 30, true);
    const commentLen = dv.getUint16(p + 32, true);
    const head = b.slice(p, p + 46);
    const hv = new DataView(head.buffer);
    const extra = new Uint8Array(28);
    const ev = new DataView(extra.buffer);
    ev.setUint16(0, 1, true);
    ev.setUint16(2, 24, true);
    ev.setBigUint64(4, BigInt(hv.getUint32(24, true)), true);
    ev.setBigUint64(12, BigInt(hv.getUint32(20, true)), true);
    ev.setBigUint64(20, BigInt(hv.getUint32(42, true)), true);
    hv.setUint32(20, 0xffffffff, true);
    hv.setUint32(24, 0xffffffff, true);
    hv.setUint32(42, 0xffffffff, true);
    hv.setUint16(30, extraLen + 28, true);
    const entry = [head, b.subarray(p + 46, p + 46 + nameLen + extraLen), extra, b.subarray(p + 46 + nameLen + extraLen, p + 46 + nameLen + extraLen + commentLen)];
    parts.push(...entry);
    cdSize += entry.reduce((n, x) => n + x.length, 0);
    p += 46 + nameLen + extraLen + commentLen;
  }
  const rec = new DataView(new ArrayBuffer(56 + 20 + 22));
  rec.setUint32(0, 0x06064b50, true);
  rec.setBigUint64(4, 44n, true);
  rec.setUint16(12, 45, true);
  rec.setUint16(14, 45, true);
  rec.setBigUint64(24, BigInt(count), true);
  rec.setBigUint64(32, BigInt(count), true);
  rec.setBigUint64(40, BigInt(cdSize), true);
  rec.setBigUint64(48, BigInt(cdOffset), true);
  rec.setUint32(56, 0x07064b50, true);
  rec.setBigUint64(64, BigInt(cdOffset + cdSize), true);
  rec.setUint32(72, 1, true);
  rec.setUint32(76, 0x06054b50, true);
  rec.setUint16(84, 0xffff, true);
  rec.setUint16(86, 0xffff, true);
  rec.setUint32(88, 0xffffffff, true);
  rec.setUint32(92, 0xffffffff, true);
  parts.push(new Uint8Array(rec.buffer));
  return new Uint8Array(Buffer.concat(parts));
}

const TWINS = [
  ['gpt2/pytorch_model.bin', 'gpt2/model.safetensors', { 'lm_head.weight': 'wte.weight' }],
  ['gpt2-views/pytorch_model.bin', 'gpt2/model.safetensors', {}],
  ['bert/pytorch_model.bin', 'bert/model.safetensors', { 'cls.predictions.decoder.weight': 'bert.embeddings.word_embeddings.weight' }],
  ['bert-deflated/pytorch_model.bin', 'bert/model.safetensors', { 'cls.predictions.decoder.weight': 'bert.embeddings.word_embeddings.weight' }],
  ['bert-legacy/pytorch_model.bin', 'bert/model.safetensors', { 'cls.predictions.decoder.weight': 'bert.embeddings.word_embeddings.weight' }],
  ['llama-f16/pytorch_model.bin', 'llama/model-f16.safetensors', {}],
  ['llama-bf16/pytorch_model.bin', 'llama/model-bf16.safetensors', {}],
];

describe('torch.save checkpoints equal their safetensors twins bit for bit', () => {
  test.each(TWINS)('%s = %s', async (file, twin, tied) => {
    const { tensors } = await readTorchBytes(bin(file));
    const want = rawSafetensors(twin);
    for (const [name, w] of Object.entries(want)) {
      const t = tensors[name];
      expect([name, t.dtype, t.shape]).toEqual([name, w.dtype, w.shape]);
      expect(Buffer.from(t.data).equals(w.bytes)).toBe(true);
    }
    for (const [name, of] of Object.entries(tied)) expect(Buffer.from(tensors[name].data).equals(want[of].bytes)).toBe(true);
    const extra = Object.keys(tensors).filter((n) => !(n in want) && !(n in tied));
    if (file.startsWith('bert')) {
      expect(extra).toEqual(['bert.embeddings.position_ids']);
      const ids = tensors['bert.embeddings.position_ids'];
      expect([ids.dtype, ids.shape]).toEqual(['I64', [1, 32]]);
      expect(Array.from(new BigInt64Array(ids.data.slice().buffer), Number)).toEqual([...Array(32).keys()]);
    } else {
      expect(extra).toEqual([]);
    }
  });

  test('two shards hold the F32 llama between them', async () => {
    const index = JSON.parse(fs.readFileSync(path.join(TORCH, 'llama-sharded', 'pytorch_model.bin.index.json')));
    const want = rawSafetensors('llama/model.safetensors');
    const seen = new Set();
    for (const shard of [...new Set(Object.values(index.weight_map))]) {
      const { tensors } = await readTorchBytes(bin('llama-sharded', shard));
      for (const [name, t] of Object.entries(tensors)) {
        expect(index.weight_map[name]).toBe(shard);
        expect(Buffer.from(t.data).equals(want[name].bytes)).toBe(true);
        seen.add(name);
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(want).sort());
  });

  test('a zip64 directory (torch past 4 GiB) reads as the plain one', async () => {
    const plain = bin('gpt2', 'pytorch_model.bin');
    const z64 = toZip64(plain);
    const a = await readTorchBytes(z64);
    const b = await readTorchBytes(plain);
    expect(Object.keys(a.tensors)).toEqual(Object.keys(b.tensors));
    for (const n of Object.keys(b.tensors)) expect(Buffer.from(a.tensors[n].data).equals(Buffer.from(b.tensors[n].data))).toBe(true);
    // a locator pointing nowhere
    const bad = z64.slice();
    new DataView(bad.buffer).setUint32(bad.length - 22 - 20 + 8, 0x7ffffff0, true);
    await expect(readTorchBytes(bad)).rejects.toThrow(/damaged zip64: the zip64 end record's offset \d+ lies outside the file/);
  });

  test('directory entries of other zip tools are passed over', async () => {
    const { tensors } = await readTorchBytes(bin('dir-entries.bin'));
    const want = rawSafetensors('gpt2/model.safetensors')['wte.weight'].bytes.subarray(0, 2 * 32 * 4);
    expect(Buffer.from(tensors['wte.weight'].data).equals(want)).toBe(true);
  });

  test('legacy pickles longer than the first read are read in growing pieces', async () => {
    const b = bin('bert-legacy', 'pytorch_model.bin');
    const reads = [];
    const src = { label: 'x', size: b.length, read: async (a, e) => { reads.push([a, e]); return b.subarray(a, e); } };
    const { entries } = await openLegacyTorch('t', src, 64);
    const heads = reads.filter(([a]) => a === 0).map(([, e]) => e);
    expect(heads.slice(0, 3)).toEqual([64, 256, 1024]);
    const want = (await readTorchBytes(b)).tensors;
    for (const e of entries) expect(Buffer.from(await e.source.read(e.begin, e.end)).equals(Buffer.from(want[e.name].data))).toBe(true);
  });

  test('a Blob reads as the bytes do', async () => {
    const a = await readTorchBytes(new Blob([bin('gpt2-views', 'pytorch_model.bin')]));
    const b = await readTorchBytes(bin('gpt2-views', 'pytorch_model.bin'));
    for (const n of Object.keys(b.tensors)) expect(Buffer.from(a.tensors[n].data).equals(Buffer.from(b.tensors[n].data))).toBe(true);
  });
});

describe('openTorchFile (the page\'s one-file drop) = openSafetensors on the twin', () => {
  test.each([['weights/torch_mha.pth', 'torch_mha.safetensors'], ['weights/hf_gpt2.bin', 'hf_gpt2.safetensors']])('%s', async (file, twin) => {
    const t = await openTorchFile(new Blob([bin(file)]));
    const s = await openSafetensors(fs.readFileSync(path.join(ROOT, 'tests', 'golden', 'weights', twin)));
    const sorted = (x) => x.slice().sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(sorted(t.entries)).toEqual(sorted(s.entries));
    expect(listAttentionLayers(t.entries)).toEqual(listAttentionLayers(s.entries));
    const [a, b] = [await t.read(), await s.read()];
    for (const n of Object.keys(b)) {
      expect(a[n].data.constructor).toBe(b[n].data.constructor);
      expect(Array.from(a[n].data)).toEqual(Array.from(b[n].data));
    }
    await expect(t.read(['nope'])).rejects.toThrow(/openTorchFile\(\)\.read: the file has no tensor "nope"/);
    await expect(openTorchFile(fs.readFileSync(path.join(ROOT, 'tests', 'golden', 'weights', twin)))).rejects.toThrow(/openTorchFile: not a torch\.save checkpoint/);
  });
});

describe('refused', () => {
  const refuse = async (bytes, pattern) => {
    const err = await readTorchBytes(bytes).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect(err.message).toMatch(pattern);
  };

  test('a pickle that calls os.system: refused by name, and nothing runs', async () => {
    await refuse(bin('bad', 'os-system.bin'), /readTorch: the pickle asks for the global posix\.system, which a state dict does not need and this reader never calls; allowed: collections\.OrderedDict, torch\._utils\._rebuild_tensor_v2/);
  });

  test('a storage class outside the list (complex64)', async () => {
    await refuse(bin('bad', 'complex.bin'), /the global torch\.ComplexFloatStorage/);
  });

  test('a pickle that calls os.system in the legacy format', async () => {
    await refuse(bin('bad', 'legacy-os-system.bin'), /readTorch: the pickle asks for the global posix\.system/);
  });

  test('damaged legacy files', async () => {
    const b = bin('bert-legacy', 'pytorch_model.bin');
    await refuse(b.subarray(0, b.length - 1), /truncated legacy torch checkpoint: storage "\d+" \[\d+, \d+\) runs past the end/);
    await refuse(b.subarray(0, 300), /truncated pickle/);
    await refuse(Uint8Array.from([0x80, 0x02, 0x8a, 0x0a, ...Array(10).fill(0), 0x2e]), /a pickle that does not start with torch's magic number/);
  });

  test('big-endian storages, an entry outside the folder, a nested training checkpoint', async () => {
    await refuse(bin('bad', 'big-endian.bin'), /saved on a big-endian machine \(byteorder "big"\)/);
    await refuse(bin('bad', 'outside.bin'), /zip entry "small\/\.\.\/evil" lies outside the checkpoint's folder "small\/"/);
    await refuse(bin('bad', 'nested.bin'), /state dict entry "model" is a dict, not a tensor/);
  });

  test('a stride-0 view too large to gather', async () => {
    await refuse(bin('bad', 'expand.bin'), /tensor "x" is a non-contiguous view of 4398046511104 bytes, more than the 2147483648 this reader gathers/);
  });

  test('truncated zips', async () => {
    const b = bin('gpt2', 'pytorch_model.bin');
    await refuse(b.subarray(0, b.length >> 1), /truncated or damaged zip: no end of central directory record/);
    await refuse(b.subarray(0, b.length - 5), /truncated or damaged zip: no end of central directory record/);
    await refuse(b.subarray(0, 10), /truncated zip: 10 bytes/);
    await refuse(new Uint8Array([0x50, 0x4b, 3, 4]), /truncated zip: 4 bytes/);
  });

  test('a deflated entry that inflates past its declared size', async () => {
    const b = bin('bert-deflated', 'pytorch_model.bin').slice();
    const dv = new DataView(b.buffer);
    let p = dv.getUint32(b.length - 22 + 16, true);
    while (!Buffer.from(b.subarray(p + 46, p + 46 + dv.getUint16(p + 28, true))).toString().endsWith('/data.pkl')) {
      p += 46 + dv.getUint16(p + 28, true) + dv.getUint16(p + 30, true) + dv.getUint16(p + 32, true);
    }
    dv.setUint32(p + 24, dv.getUint32(p + 24, true) - 1, true);
    await refuse(b, /zip entry "pytorch_model\/data\.pkl" inflates to more than \d+ bytes, but the directory says \d+/);
  });

  test('damaged pickles in a real checkpoint', async () => {
    const edit = (f) => {
      const b = bin('gpt2', 'pytorch_model.bin').slice();
      const [begin, end] = pickleRange(b);
      f(b, begin, end);
      return b;
    };
    const text = (b, begin, end, from, to) => {
      const at = Buffer.from(b.subarray(begin, end)).indexOf(from);
      expect(at).toBeGreaterThan(0);
      b.set(Buffer.from(to), begin + at);
    };
    await refuse(edit((b, s, e) => text(b, s, e, '_rebuild_tensor_v2', '_rebuild_tensor_v3')), /the global torch\._utils\._rebuild_tensor_v3/);
    await refuse(edit((b, s, e) => text(b, s, e, 'collections\nOrderedDict', 'collections\nOrderedDicx')), /the global collections\.OrderedDicx/);
    await refuse(edit((b, s) => { b[s + 3] = 0x69; }), /the pickle uses opcode INST at byte 3/); // the first BINPUT → INST
    await refuse(edit((b, s, e) => { b[e - 1] = 0x4e; }), /truncated pickle: it ends without a STOP opcode/); // STOP → NONE
    await refuse(edit((b, s) => { b[s + 1] = 9; }), /unsupported pickle protocol 9/);
  });
});

describe('the unpickler alone', () => {
  const enc = (s) => Uint8Array.from(Buffer.from(s, 'latin1'));
  const run = (s) => unpickle('t', enc(s), () => { throw new Error('no persistent ids here'); });

  test('GLOBAL and STACK_GLOBAL of anything off the list are refused before any call', () => {
    for (const g of ['builtins\neval', 'os\nsystem', 'subprocess\nPopen', 'torch\nload', 'torch._utils\n_rebuild_qtensor', '__builtin__\ngetattr']) {
      expect(() => run(`\x80\x02c${g}\n(X\x01\x00\x00\x00xtR.`)).toThrow(new RegExp(`the global ${g.replace('\n', '\\.')},`));
    }
    // protocol 4: STACK_GLOBAL with SHORT_BINUNICODE names
    expect(() => run('\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x02hi\x85R.')).toThrow(/the global os\.system,/);
    expect(ALLOWED_GLOBALS).not.toContain('builtins.eval');
  });

  test('opcodes that build objects are refused; REDUCE calls only the stand-ins', () => {
    expect(() => run('\x80\x02(X\x01\x00\x00\x00xios\nsystem\n.')).toThrow(/opcode INST/);
    expect(() => run('\x80\x02)\x81.')).toThrow(/opcode NEWOBJ/);
    expect(() => run('\x80\x02X\x01\x00\x00\x00x)R.')).toThrow(/REDUCE at byte \d+ calls something that is not an allowed global/);
    expect(() => run('\x80\x02]}b.')).toThrow(/BUILD at byte \d+ sets state on something other than an OrderedDict/);
    expect(() => run('\x80\x02ccollections\nOrderedDict\nK\x01\x85R.')).toThrow(/OrderedDict is called with arguments/);
  });

  test('stack and memo misuse', () => {
    expect(() => run('\x80\x02h\x05.')).toThrow(/memo key 5 .* was never put/);
    expect(() => run('\x80\x02t.')).toThrow(/TUPLE at byte 2 without a MARK/);
    expect(() => run('\x80\x02K\x01K\x02.')).toThrow(/STOP with 2 values on the stack/);
    expect(() => run('\x80\x02X\xff\xff\xff\x7f')).toThrow(/truncated pickle: BINUNICODE/);
  });

  test('the plain values of a state dict\'s _metadata', () => {
    const d = run('\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01}q\x02X\x09\x00\x00\x00_metadatah\x00)R(X\x00\x00\x00\x00}X\x07\x00\x00\x00versionK\x01susbX\x01\x00\x00\x00a\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01s.');
    expect([...d.map.keys()]).toEqual(['a']);
    expect(d.map.get('a')).toBe(2n ** 64n);
    expect(d.state.map.get('_metadata').map.get('').map.get('version')).toBe(1);
  });
});

describe('fuzz (short pass of tests/fuzz/fuzz-torch.mjs)', () => {
  test('mutated checkpoints read or throw readTorch: RangeError/TypeError, none slow', async () => {
    const { runFuzz } = await import('../fuzz/fuzz-torch.mjs');
    const failures = await runFuzz({ iterations: 4000, seed: 36 });
    expect(failures.map((f) => String(f.error))).toEqual([]);
  });
});
