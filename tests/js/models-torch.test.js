// lab.loadModel from PyTorch checkpoints (pytorch_model.bin as torch.save
// writes it; tests/golden/torch, made by tests/reference/torch_fixtures.py
// with real torch 1.13 from the golden safetensors checkpoints): the logits
// match the float64 references of tests/golden/models/*/expected.json (the
// tolerance of models.test.js) and equal, bit for bit, those of the same
// model loaded from its safetensors twin; Uint8Array, ArrayBuffer, Blob,
// a folder of Files, two shards with their index; bad input refused with the
// heap back at its baseline.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { BACKENDS, maxRel } from './helpers.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TORCH = path.join(ROOT, 'tests', 'golden', 'torch');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const read = (...p) => fs.readFileSync(path.join(...p));
const json = (family, file) => JSON.parse(read(MODELS, family, file));

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});

// [fixture folder, family, safetensors twin, weightsDtype]
const CASES = [
  ['gpt2', 'gpt2', 'model.safetensors', 'float32'],
  ['gpt2-views', 'gpt2', 'model.safetensors', 'float32'],
  ['bert', 'bert', 'model.safetensors', 'float32'],
  ['bert-deflated', 'bert', 'model.safetensors', 'float32'],
  ['bert-legacy', 'bert', 'model.safetensors', 'float32'],
  ['llama-f16', 'llama', 'model-f16.safetensors', 'float16'],
  ['llama-bf16', 'llama', 'model-bf16.safetensors', 'bfloat16'],
];

const same = (a, b) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

describe.each(BACKENDS)('pytorch_model.bin — %s', (backend) => {
  test.each(CASES)('%s: the references\' logits, and bit for bit those of %s/%s', async (dir, family, twin, weightsDtype) => {
    const lab = labs[backend];
    const exp = json(family, 'expected.json');
    const model = await lab.loadModel({ config: json(family, 'config.json'), weights: read(TORCH, dir, 'pytorch_model.bin'), tokenizer: json(family, 'tokenizer.json') });
    const ref = await lab.loadModel({ config: json(family, 'config.json'), weights: read(MODELS, family, twin) });
    expect(model.config.parameters).toBe(exp.parameters);
    expect(model.config.weightsDtype).toBe(weightsDtype);
    expect(model.config.bytes).toBe(ref.config.bytes);
    for (const c of exp.cases) {
      const r = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      const s = ref.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      if (c.logits) {
        expect(maxRel(r.logits.data, c.logits)).toBeLessThan(1e-4);
        expect(same(r.logits.data, s.logits.data)).toBe(true);
      }
      expect(maxRel(r.hiddenStates.data, c.hidden_states)).toBeLessThan(1e-4);
      r.attentions.forEach((a, l) => expect(same(a.data, s.attentions[l].data)).toBe(true));
    }
    model.dispose();
    ref.dispose();
  });
});

describe('inputs', () => {
  const lab = () => labs.wasm;
  const check = async (model, family) => {
    const c = json(family, 'expected.json').cases[0];
    expect(maxRel(model.forwardSync(c.ids).logits.data, c.logits)).toBeLessThan(1e-4);
    model.dispose();
  };

  test('an ArrayBuffer and a Blob', async () => {
    const b = read(TORCH, 'gpt2', 'pytorch_model.bin');
    const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    await check(await lab().loadModel({ config: json('gpt2', 'config.json'), weights: ab }), 'gpt2');
    await check(await lab().loadModel({ config: json('gpt2', 'config.json'), weights: new Blob([b]) }), 'gpt2');
  });

  test('a folder of Files: config.json, pytorch_model.bin, tokenizer.json', async () => {
    const files = [
      new File([read(MODELS, 'llama', 'config.json')], 'config.json'),
      new File([read(MODELS, 'llama', 'tokenizer.json')], 'tokenizer.json'),
      new File([read(TORCH, 'llama-bf16', 'pytorch_model.bin')], 'pytorch_model.bin'),
    ];
    const model = await lab().loadModel(files);
    expect(model.config.weightsDtype).toBe('bfloat16');
    expect(model.encode('the')).toEqual(expect.any(Array));
    await check(model, 'llama');
  });

  test('a folder with two shards and pytorch_model.bin.index.json', async () => {
    const dir = path.join(TORCH, 'llama-sharded');
    const files = [
      new File([read(MODELS, 'llama', 'config.json')], 'config.json'),
      ...fs.readdirSync(dir).map((n) => new File([read(dir, n)], n)),
    ];
    await check(await lab().loadModel(files), 'llama');
    // and as { weights: [index, ...shards] }
    const weights = fs.readdirSync(dir).filter((n) => /\.bin(\.index\.json)?$/.test(n)).map((n) => new File([read(dir, n)], n));
    await check(await lab().loadModel({ config: json('llama', 'config.json'), weights }), 'llama');
  });

  test('the page lists a pytorch_model.bin folder from its directory and pickle alone (model-client listModel)', async () => {
    const { listModel, isModelFolder } = await import('../../web/components/lib/model-client.js');
    const bin = read(TORCH, 'bert', 'pytorch_model.bin');
    const files = [
      new File([read(MODELS, 'bert', 'config.json')], 'config.json'),
      new File([read(MODELS, 'bert', 'tokenizer.json')], 'tokenizer.json'),
      new File([bin], 'pytorch_model.bin'),
      new File(['x'], 'README.md'),
    ];
    expect(isModelFolder(files)).toBe(true);
    const L = await listModel(files);
    expect(L.modelType).toBe('bert');
    expect(L.shards).toEqual(['pytorch_model.bin']);
    expect(L.dtypes.sort()).toEqual(['F32', 'I64']);
    expect(L.bytes).toBe(bin.length);
    expect(L.headerBytes).toBeGreaterThan(0);
    expect(L.headerBytes).toBeLessThan(bin.length / 4);
    const sharded = fs.readdirSync(path.join(TORCH, 'llama-sharded')).map((n) => new File([read(TORCH, 'llama-sharded', n)], n));
    expect(isModelFolder([new File(['{}'], 'config.json'), ...sharded])).toBe(true);
  });

  test('safetensors win when a folder has both', async () => {
    const files = [
      new File([read(MODELS, 'gpt2', 'config.json')], 'config.json'),
      new File([read(MODELS, 'gpt2', 'model-f16.safetensors')], 'model.safetensors'),
      new File([read(TORCH, 'gpt2', 'pytorch_model.bin')], 'pytorch_model.bin'),
    ];
    const model = await lab().loadModel(files);
    expect(model.config.weightsDtype).toBe('float16');
    model.dispose();
  });
});

describe('bad input: refused, the heap back at its baseline', () => {
  const lab = () => labs.wasm;
  async function expectLoadError(args, pattern) {
    const backend = lab()._backend;
    let before = 0;
    for (let run = 0; run < 2; run++) {
      before = backend.heapBytesInUse();
      const err = await lab().loadModel(args()).then(() => null, (e) => e);
      expect(err).toBeInstanceOf(RangeError);
      expect(err.message).toMatch(pattern);
    }
    expect(backend.heapBytesInUse()).toBe(before);
  }
  const gpt2 = (weights) => () => ({ config: json('gpt2', 'config.json'), weights });

  test('a hostile pickle (os.system)', async () => {
    await expectLoadError(gpt2(read(TORCH, 'bad', 'os-system.bin')), /^loadModel: pytorch_model\.bin: the pickle asks for the global posix\.system/);
  });

  test('a hostile pickle in the legacy format, as a named File', async () => {
    const f = new File([read(TORCH, 'bad', 'legacy-os-system.bin')], 'pytorch_model.bin');
    await expectLoadError(gpt2(f), /^loadModel: pytorch_model\.bin: the pickle asks for the global posix\.system/);
  });

  test('int8 weights', async () => {
    await expectLoadError(gpt2(read(TORCH, 'bad', 'int8.bin')), /tensor "wte\.weight" has dtype I8; weights must be F32, F16, BF16 or F64/);
  });

  test('a truncated checkpoint', async () => {
    const b = read(TORCH, 'gpt2', 'pytorch_model.bin');
    await expectLoadError(gpt2(b.subarray(0, b.length - 100)), /truncated or damaged zip/);
  });

  test('a shard missing from the index', async () => {
    const dir = path.join(TORCH, 'llama-sharded');
    const weights = fs.readdirSync(dir).filter((n) => /\.bin(\.index\.json)?$/.test(n) && !n.startsWith('pytorch_model-00002')).map((n) => new File([read(dir, n)], n));
    await expectLoadError(() => ({ config: json('llama', 'config.json'), weights }), /the index needs shard files that were not given: pytorch_model-00002-of-00002\.bin/);
  });
});
