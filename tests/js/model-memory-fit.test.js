// The one memory-fit rule (web/lib/model/plan.js memoryFit): loadModel's
// refusal and the folder listing (web/components/lib/model-client.js
// listModel) agree, over header-only fake safetensors files (a few KB: no
// tensor data exists, and reading past the header throws). The byte counts
// expected here are computed from the tensor list written below; the limit is
// the one the wasm module reports (lab.heapLimit: 4 GB less one 64 KiB page).
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../../web/node.js';
import { listModel } from '../../web/components/lib/model-client.js';
import { memoryFit, HEADROOM_BYTES } from '../../web/lib/model/plan.js';

const BYTES = { F32: 4, F16: 2, BF16: 2 };

/** A File-like safetensors of `tensors` ([name, dtype, shape]) whose data region is never read. */
function headerOnly(name, tensors) {
  const header = {};
  let at = 0;
  for (const [n, dtype, shape] of tensors) {
    const bytes = shape.reduce((a, d) => a * d, 1) * BYTES[dtype];
    header[n] = { dtype, shape, data_offsets: [at, at + bytes] };
    at += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(json, 8);
  const file = {
    name,
    size: head.length + at,
    slice(a = 0, b = file.size) {
      if (b > head.length) throw new Error(`read past the header: [${a}, ${b})`);
      const part = head.slice(a, b);
      return { size: part.length, arrayBuffer: async () => part.buffer, slice: () => { throw new Error('nested slice'); } };
    },
    arrayBuffer: async () => { throw new Error('whole-file read'); },
    text: async () => { throw new Error('whole-file read'); },
  };
  return { file, dataBytes: at };
}

const jsonFile = (name, obj) => {
  const text = JSON.stringify(obj);
  return { name, size: text.length, text: async () => text, arrayBuffer: async () => new TextEncoder().encode(text).buffer, slice: () => { throw new Error('no slice'); } };
};

// GPT-2 F32 of E = 1536 and L layers (15: about 504M parameters, 1.88 GiB of float32).
function gpt2Files(L = 15) {
  const E = 1536, V = 50257, P = 1024;
  const t = [['wte.weight', 'F32', [V, E]], ['wpe.weight', 'F32', [P, E]]];
  for (let l = 0; l < L; l++) {
    const h = `h.${l}.`;
    t.push([`${h}ln_1.weight`, 'F32', [E]], [`${h}ln_1.bias`, 'F32', [E]],
      [`${h}attn.c_attn.weight`, 'F32', [E, 3 * E]], [`${h}attn.c_attn.bias`, 'F32', [3 * E]],
      [`${h}attn.c_proj.weight`, 'F32', [E, E]], [`${h}attn.c_proj.bias`, 'F32', [E]],
      [`${h}ln_2.weight`, 'F32', [E]], [`${h}ln_2.bias`, 'F32', [E]],
      [`${h}mlp.c_fc.weight`, 'F32', [E, 4 * E]], [`${h}mlp.c_fc.bias`, 'F32', [4 * E]],
      [`${h}mlp.c_proj.weight`, 'F32', [4 * E, E]], [`${h}mlp.c_proj.bias`, 'F32', [E]]);
  }
  t.push(['ln_f.weight', 'F32', [E]], ['ln_f.bias', 'F32', [E]]);
  const config = { model_type: 'gpt2', n_embd: E, n_layer: L, n_head: 12, vocab_size: V, n_positions: P };
  return { config, tensors: t };
}

// Llama BF16, L layers of E = 2048, F = 5632, untied head (24: about 1.40G parameters).
function llamaFiles(dtype, tied, L = 24) {
  const E = 2048, F = 5632, V = 32000;
  const t = [['model.embed_tokens.weight', dtype, [V, E]]];
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}.`;
    t.push([`${p}input_layernorm.weight`, dtype, [E]],
      [`${p}self_attn.q_proj.weight`, dtype, [E, E]], [`${p}self_attn.k_proj.weight`, dtype, [E, E]],
      [`${p}self_attn.v_proj.weight`, dtype, [E, E]], [`${p}self_attn.o_proj.weight`, dtype, [E, E]],
      [`${p}post_attention_layernorm.weight`, dtype, [E]],
      [`${p}mlp.gate_proj.weight`, dtype, [F, E]], [`${p}mlp.up_proj.weight`, dtype, [F, E]], [`${p}mlp.down_proj.weight`, dtype, [E, F]]);
  }
  t.push(['model.norm.weight', dtype, [E]]);
  if (!tied) t.push(['lm_head.weight', dtype, [V, E]]);
  const config = {
    model_type: 'llama', hidden_size: E, intermediate_size: F, num_hidden_layers: L, num_attention_heads: 16,
    vocab_size: V, max_position_embeddings: 2048, tie_word_embeddings: tied,
  };
  return { config, tensors: t };
}

/** The bytes load keeps, by hand: 16-bit matrices (when `half`), float32 vectors. */
function keptBytes(tensors, half) {
  let n = 0;
  for (const [, , shape] of tensors) n += shape.reduce((a, d) => a * d, 1) * (half && shape.length === 2 ? 2 : 4);
  return n;
}

describe('one memory-fit rule (model/plan.js) for loadModel and the folder listing', () => {
  let lab;
  let LIMIT;
  beforeAll(async () => {
    lab = await init({ backend: 'wasm' });
    LIMIT = lab.heapLimit;
  });

  test('the limit is the one the wasm module reports: 4 GB less one 64 KiB page (MAXIMUM_MEMORY=4GB)', () => {
    expect(LIMIT).toBe(2 ** 32 - 2 ** 16);
    expect(lab._backend.wasmModule.heapMaxBytes()).toBe(LIMIT);
  });

  test('a float32 model within the limit but not its headroom: refused by loadModel before any tensor is read, and listed as too large', async () => {
    // The most layers whose float32 bytes stay within the limit: then the headroom does not fit.
    const perLayer = keptBytes(gpt2Files(1).tensors, false) - keptBytes(gpt2Files(0).tensors, false);
    const L = Math.floor((LIMIT - keptBytes(gpt2Files(0).tensors, false)) / perLayer);
    const { config, tensors } = gpt2Files(L);
    const { file, dataBytes } = headerOnly('model.safetensors', tensors);
    const need = keptBytes(tensors, false);
    expect(need).toBe(dataBytes);
    expect(need > 2 ** 31).toBe(true); // more than the old 2 GiB heap
    expect(need < LIMIT).toBe(true);
    expect(need + HEADROOM_BYTES > LIMIT).toBe(true);
    await expect(lab.loadModel({ config, weights: file })).rejects.toThrow(new RegExp(`more than the wasm heap can hold: its limit is ${(LIMIT / 2 ** 20).toFixed(1)} MiB`));
    const listed = await listModel([jsonFile('config.json', config), file], { heapLimit: LIMIT });
    expect(listed.fits).toBe(false);
    expect(listed.heapLimit).toBe(LIMIT);
    expect(listed.keptBytes).toBe(need);
    // The same model one layer shorter fits (listed; loading it would read its 3.8 GB).
    const shorter = gpt2Files(L - 1);
    const listed2 = await listModel([jsonFile('config.json', shorter.config), headerOnly('model.safetensors', shorter.tensors).file], { heapLimit: LIMIT });
    expect(keptBytes(shorter.tensors, false) + HEADROOM_BYTES <= LIMIT).toBe(listed2.fits);
    // Without a limit the listing does not guess one.
    const unknown = await listModel([jsonFile('config.json', config), file]);
    expect([unknown.fits, unknown.heapLimit]).toEqual([null, null]);
    await expect(listModel([jsonFile('config.json', config), file], { heapLimit: -1 })).rejects.toThrow(/heapLimit must be a positive number of bytes/);
  });

  test('a BF16 model of 5.2 GiB as float32 fits in 16 bits: listed as fitting (the old rule called it too large)', async () => {
    const { config, tensors } = llamaFiles('BF16', false);
    const { file } = headerOnly('model.safetensors', tensors);
    const params = tensors.reduce((n, [, , s]) => n + s.reduce((a, d) => a * d, 1), 0);
    expect(params * 4 > LIMIT).toBe(true);
    const need = keptBytes(tensors, true);
    expect(need + HEADROOM_BYTES <= LIMIT).toBe(true);
    const listed = await listModel([jsonFile('config.json', config), file], { heapLimit: LIMIT });
    expect(listed.fits).toBe(true);
    expect(listed.keptBytes).toBe(need);
  });

  test('the same model in F32 (or mixed dtypes) does not fit', async () => {
    for (const dtypes of [['F32'], ['BF16', 'F16']]) {
      const base = llamaFiles('BF16', false);
      const tensors = base.tensors.map(([n, , s], i) => [n, dtypes[i % dtypes.length], s]);
      const { file } = headerOnly('model.safetensors', tensors);
      const listed = await listModel([jsonFile('config.json', base.config), file], { heapLimit: LIMIT });
      expect(listed.fits).toBe(false);
      expect(listed.keptBytes).toBe(keptBytes(tensors, false));
      await expect(lab.loadModel({ config: base.config, weights: file })).rejects.toThrow(/more than the wasm heap can hold/);
    }
  });

  test('a tied 16-bit head counts its 16-bit copy in the bytes kept, not in the fit', () => {
    const { config, tensors } = llamaFiles('F16', true);
    const V = config.vocab_size, E = config.hidden_size;
    const entries = tensors.map(([, , shape]) => ({ shape, count: shape.reduce((a, d) => a * d, 1) }));
    const c = { vocabSize: V, embedDim: E, core: { tieEmbeddings: true, hasHead: true } };
    const fit = memoryFit(c, entries, 1, LIMIT);
    expect(fit.need).toBe(keptBytes(tensors, true));
    expect(fit.headCopy).toBe(V * E * 2);
    expect(fit.bytes).toBe(fit.need + V * E * 2);
    expect(memoryFit(c, entries, 0, LIMIT).headCopy).toBe(0);
    expect(memoryFit({ ...c, core: { tieEmbeddings: false } }, entries, 1, LIMIT).headCopy).toBe(0);
  });
});

describe('a dropped .gguf is listed from its header (listModel), as loadModel keeps it', () => {
  // The K-quant fixture (Q4_K with attn_v, ffn_down and output in Q6_K) and
  // the llama Q8_0 one: each tensor group's types and bytes, the kept bytes
  // equal to the loaded model's config.bytes (the one rule), and only the
  // header read.
  const dir = path.join(process.cwd(), 'tests', 'golden', 'gguf', 'models');
  test.each([['kquant-q4_k_m.gguf', false], ['llama-q8_0.gguf', true]])('%s', async (name, hasTokenizer) => {
    const bytes = new Uint8Array(fs.readFileSync(path.join(dir, name)));
    const file = new File([bytes], name);
    const L = await listModel([file]);
    expect(L.format).toBe('gguf');
    expect(L.hasTokenizer).toBe(hasTokenizer);
    expect(L.headerBytes).toBe(Math.min(bytes.length, 2 ** 20)); // one read of the first MiB (gguf.js: the header of a bigger file only)
    const lab = await init({ backend: 'wasm' });
    const m = await lab.loadModel({ weights: bytes, tokenizer: hasTokenizer ? undefined : null });
    expect(L.keptBytes).toBe(m.config.bytes);
    expect(L.quantGroups.reduce((n, g) => n + g.keptBytes, 0)).toBe(m.config.bytes);
    const byRole = Object.fromEntries(L.quantGroups.map((g) => [g.role, g]));
    if (name.startsWith('kquant')) {
      expect(byRole.attn_q.types).toEqual(['Q4_K']);
      expect(byRole.attn_v.types).toEqual(['Q6_K']);
      expect(byRole.ffn_down.types).toEqual(['Q6_K']);
      expect(byRole.output.types).toEqual(['Q6_K']);
      expect(byRole.attn_norm.types).toEqual(['F32']);
      expect(byRole.attn_q.quantized).toBe(true);
      expect(byRole.attn_q.keptBytes).toBe(byRole.attn_q.bytes);
    } else {
      expect(byRole.token_embd.types).toEqual(['Q8_0']);
      expect(byRole.token_embd.keptBytes).toBe(byRole.token_embd.bytes);
    }
    m.dispose();
  });
});
