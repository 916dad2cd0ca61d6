// lab.loadModel's bad input: each case gets an Error of the right class
// whose message names the problem, what was expected and what was found;
// nothing is left half-loaded (the wasm heap is back at its baseline), and
// load → forward → dispose cycles leave the heap flat.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';

const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'models');
const read = (name, file) => fs.readFileSync(path.join(MODELS, name, file));
const json = (name, file) => JSON.parse(read(name, file));

let lab;
let backend;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
  backend = lab._backend;
});

const gpt2 = () => ({ config: json('gpt2', 'config.json'), weights: read('gpt2', 'model.safetensors'), tokenizer: json('gpt2', 'tokenizer.json') });

/** The gpt2 file with its tensors edited. */
function editedWeights(edit) {
  const { tensors } = lab.readSafetensors(read('gpt2', 'model.safetensors'));
  edit(tensors);
  return lab.writeSafetensors(tensors);
}

// Each case runs twice and the heap is compared across the second run: the
// first may grow the core's last-error string, which it keeps for the next.
async function expectLoadError(args, Class, pattern) {
  let before = 0;
  for (let run = 0; run < 2; run++) {
    before = backend.heapBytesInUse();
    let error = null;
    try {
      await lab.loadModel(args);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(Class);
    expect(error.message).toMatch(pattern);
  }
  expect(backend.heapBytesInUse()).toBe(before);
}

describe('loadModel refuses bad files with a clear Error', () => {
  test('an unknown model_type lists the supported ones', async () => {
    await expectLoadError({ ...gpt2(), config: { ...gpt2().config, model_type: 'mamba' } }, RangeError,
      /model_type "mamba" is not supported; supported: gpt2, llama, qwen2, bert/);
    await expectLoadError({ ...gpt2(), config: { n_layer: 2 } }, RangeError, /no "model_type"/);
  });

  test('a missing config key', async () => {
    const config = gpt2().config;
    delete config.n_embd;
    await expectLoadError({ ...gpt2(), config }, RangeError, /config\.json has no "n_embd" or "hidden_size"/);
    const bad = { ...gpt2().config, n_head: 5 };
    await expectLoadError({ ...gpt2(), config: bad }, RangeError, /hidden size \(32\) must be divisible by the head count \(5\)/);
  });

  test('a tensor whose shape disagrees with the config names the tensor and both shapes', async () => {
    const weights = editedWeights((t) => {
      t['h.1.mlp.c_fc.weight'] = { data: new Float32Array(32 * 100), shape: [32, 100] };
    });
    await expectLoadError({ ...gpt2(), weights }, RangeError,
      /tensor "h\.1\.mlp\.c_fc\.weight" has shape \[32, 100\], but config\.json implies \[32, 128\]/);
  });

  test('missing and unexpected tensors are listed', async () => {
    const missing = editedWeights((t) => {
      delete t['h.0.ln_1.bias'];
      delete t['ln_f.weight'];
    });
    await expectLoadError({ ...gpt2(), weights: missing }, RangeError, /lack 2 tensors .*"h\.0\.ln_1\.bias", "ln_f\.weight"/);
    const extra = editedWeights((t) => {
      t['h.2.ln_1.weight'] = { data: new Float32Array(32), shape: [32] };
    });
    await expectLoadError({ ...gpt2(), weights: extra }, RangeError, /does not use: "h\.2\.ln_1\.weight".*same model/);
    // A config with more layers than the file: the missing ones are named.
    await expectLoadError({ ...gpt2(), config: { ...gpt2().config, n_layer: 3 } }, RangeError, /"h\.2\.ln_1\.weight"/);
  });

  test('non-finite weights, integer dtypes and damaged files', async () => {
    const nan = editedWeights((t) => {
      t['wpe.weight'].data[5] = NaN;
    });
    await expectLoadError({ ...gpt2(), weights: nan }, RangeError, /finite: pos\.weight element 5 is nan/i);
    // F16 kept in 16 bits: an Inf (0x7c00) in a projection is refused too,
    // and a NaN (0x7e00) in a vector converted to float32.
    const f16 = (name, at, bits) => {
      const bytes = new Uint8Array(read('gpt2', 'model-f16.safetensors'));
      const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
      const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
      new DataView(bytes.buffer).setUint16(8 + n + header[name].data_offsets[0] + 2 * at, bits, true);
      return bytes;
    };
    await expectLoadError({ ...gpt2(), weights: f16('h.0.attn.c_proj.weight', 3, 0x7c00) }, RangeError, /finite: blocks\.0\.attn\.wo element \d+ is Inf/);
    await expectLoadError({ ...gpt2(), weights: f16('h.1.mlp.c_fc.bias', 2, 0x7e00) }, RangeError, /finite: blocks\.1\.ffn\.b1 element 2 is NaN/);
    await expectLoadError({ ...gpt2(), dtype: 'float16' }, RangeError, /dtype must be 'auto' or 'float32', got "float16"/);
    const ints = editedWeights((t) => {
      t['ln_f.bias'] = { data: new Int32Array(32), shape: [32] };
    });
    await expectLoadError({ ...gpt2(), weights: ints }, RangeError, /"ln_f\.bias" has dtype I32; weights must be F32, F16, BF16 or F64/);
    await expectLoadError({ ...gpt2(), weights: new Uint8Array(20) }, RangeError, /header/);
    await expectLoadError({ ...gpt2(), weights: 'model.safetensors' }, TypeError, /must be a Blob\/File, an ArrayBuffer or a Uint8Array/);
  });

  test('a tokenizer whose vocabulary disagrees with vocab_size, and a malformed tokenizer.json', async () => {
    await expectLoadError({ ...gpt2(), tokenizer: json('llama', 'tokenizer.json') }, RangeError,
      /tokenizer\.json has ids up to 323 .*config\.json vocab_size is 297/);
    await expectLoadError({ ...gpt2(), tokenizer: { version: '1.0' } }, RangeError, /tokenizer\.json is malformed/);
    await expectLoadError({ ...gpt2(), tokenizer: new TextEncoder().encode('{"model": ') }, RangeError, /tokenizer\.json is not valid JSON/);
    await expectLoadError({ ...gpt2(), tokenizer: 42 }, TypeError, /tokenizer\.json must be the parsed JSON object/);
  });

  test('shards: an index that names a missing file, and a tensor in the wrong shard', async () => {
    const dir = 'llama-sharded';
    const index = json(dir, 'model.safetensors.index.json');
    const first = new File([read(dir, 'model-00001-of-00002.safetensors')], 'model-00001-of-00002.safetensors');
    await expectLoadError({ config: json(dir, 'config.json'), weights: [index, first] }, RangeError, /needs shard files that were not given: model-00002-of-00002\.safetensors/);
    const second = new File([read(dir, 'model-00002-of-00002.safetensors')], 'model-00002-of-00002.safetensors');
    const moved = JSON.parse(JSON.stringify(index));
    const name = Object.keys(moved.weight_map)[0];
    moved.weight_map[name] = moved.weight_map[name].includes('00001') ? 'model-00002-of-00002.safetensors' : 'model-00001-of-00002.safetensors';
    await expectLoadError({ config: json(dir, 'config.json'), weights: [moved, first, second] }, RangeError, /but the index puts it in/);
  });

  test('a model too large for the wasm heap is refused before any tensor is read, with its size and the limit', async () => {
    // A header that claims GPT-2-XL-sized tensors over a file with no data:
    // reading any tensor would fail, so the refusal must come first.
    const config = { ...gpt2().config, n_embd: 1600, n_head: 25, n_layer: 48, vocab_size: 50257, n_positions: 1024 };
    const header = {};
    let at = 0;
    const add = (name, shape) => {
      const n = shape.reduce((a, b) => a * b, 1) * 4;
      header[name] = { dtype: 'F32', shape, data_offsets: [at, at + n] };
      at += n;
    };
    add('wte.weight', [50257, 1600]);
    add('wpe.weight', [1024, 1600]);
    for (let l = 0; l < 48; l++) {
      for (const [n, s] of [['ln_1.weight', [1600]], ['ln_1.bias', [1600]], ['attn.c_attn.weight', [1600, 4800]], ['attn.c_attn.bias', [4800]],
        ['attn.c_proj.weight', [1600, 1600]], ['attn.c_proj.bias', [1600]], ['ln_2.weight', [1600]], ['ln_2.bias', [1600]],
        ['mlp.c_fc.weight', [1600, 6400]], ['mlp.c_fc.bias', [6400]], ['mlp.c_proj.weight', [6400, 1600]], ['mlp.c_proj.bias', [1600]]]) add(`h.${l}.${n}`, s);
    }
    add('ln_f.weight', [1600]);
    add('ln_f.bias', [1600]);
    const text = new TextEncoder().encode(JSON.stringify(header));
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setUint32(0, text.length, true);
    // A Blob whose size claims the data; slice() of the data part throws.
    const headBytes = new Uint8Array([...prefix, ...text]);
    const size = headBytes.length + at;
    const fake = {
      size,
      name: 'model.safetensors',
      slice(a, b) {
        if (b > headBytes.length) throw new Error('a tensor was read');
        return new Blob([headBytes.subarray(a, b)]);
      },
      arrayBuffer() {
        throw new Error('the whole file was read');
      },
    };
    await expectLoadError({ config, weights: fake }, RangeError, /needs 59\d\d\.\d MiB of float32 weights \(155\d{7} parameters.*limit is 4095\.9 MiB/);
  });

  test('unknown keys, a missing argument and a bad signal', async () => {
    await expectLoadError({ ...gpt2(), tokeniser: {} }, TypeError, /unknown key "tokeniser"; allowed: config, weights, tokenizer, dtype, signal, onProgress/);
    await expectLoadError({ config: gpt2().config }, TypeError, /weights is missing/);
    await expectLoadError({ ...gpt2(), signal: {} }, TypeError, /signal must be an AbortSignal/);
    const ctrl = new AbortController();
    ctrl.abort();
    await expect(lab.loadModel({ ...gpt2(), signal: ctrl.signal })).rejects.toThrow();
  });

  test('__proto__ and constructor keys in config.json or tokenizer.json change no prototype', async () => {
    const configText = read('gpt2', 'config.json').toString().replace('{', '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 2}},');
    const tokText = read('gpt2', 'tokenizer.json').toString().replace('{', '{"__proto__": {"polluted": 3},');
    const model = await lab.loadModel({ config: new TextEncoder().encode(configText), weights: read('gpt2', 'model.safetensors'), tokenizer: tokText });
    expect({}.polluted).toBeUndefined();
    expect(Object.prototype.polluted).toBeUndefined();
    expect(model.config.numLayers).toBe(2);
    model.dispose();
  });
});

describe('the model after dispose, and the heap over load cycles', () => {
  test('every call on a disposed model throws', async () => {
    const model = await lab.loadModel(gpt2());
    model.dispose();
    model.dispose();
    expect(model.disposed).toBe(true);
    expect(() => model.forwardSync([1])).toThrow(/disposed/);
    expect(() => model.encode('a')).toThrow(/disposed/);
    await expect(model.nextTokens([1])).rejects.toThrow(/disposed/);
    expect(() => model.generate([1])).toThrow(/disposed/);
    expect(() => model.save()).toThrow(/disposed/);
  });

  test('five load → forward → generate → dispose cycles leave the wasm heap flat within 64 KB', async () => {
    const cycle = async () => {
      const model = await lab.loadModel(gpt2());
      model.forwardSync('the cat sat');
      for await (const t of model.generate('the', { maxNewTokens: 3 })) void t;
      model.dispose();
    };
    await cycle();
    const before = backend.heapBytesInUse();
    for (let i = 0; i < 5; i++) await cycle();
    expect(Math.abs(backend.heapBytesInUse() - before)).toBeLessThan(64 * 1024);
  });

  test('the progress callback reports bytes up to the total', async () => {
    const seen = [];
    const model = await lab.loadModel({ ...gpt2(), onProgress: (p) => seen.push(p) });
    expect(seen[0].loaded).toBe(0);
    expect(seen.at(-1).loaded).toBe(seen.at(-1).total);
    expect(seen.at(-1).total).toBe(36000 * 4);
    model.dispose();
  });
});
