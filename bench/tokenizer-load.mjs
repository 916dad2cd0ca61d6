// How long the largest tokenizer of issue 32 takes to load: a Gemma-style
// tokenizer.json of 262,144 tokens (SentencePiece-style BPE with byte
// fallback, merges as [a, b] pairs, pretty-printed as transformers writes it:
// about 33 MB), generated here (test-artifacts/bench/, not committed) and read
// by @huggingface/tokenizers through the library's ModelTokenizer:
//   - in Node: read + parseJson (files.js) + new ModelTokenizer, each run apart,
//     and, interleaved, the parse with a reviver call per value as before;
//   - in headless Chromium, in a module Worker of the page's origin (the same
//     code path as web/model-worker.js): fetch + text + parse + construct;
//   - on the page: "Your model" loads a tiny gemma3_text folder with that
//     tokenizer (vocab 262,144, hidden 8) in its model worker; the main
//     thread's long tasks (PerformanceObserver 'longtask') while it loads show
//     that the parse happens off it.
//   node bench/tokenizer-load.mjs [--repeats N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIR = path.join(ROOT, 'test-artifacts', 'bench', 'gemma-tokenizer');
const V = 262144;
const args = process.argv.slice(2);
const repeats = Number(args[args.indexOf('--repeats') + 1] || 3) || 3;

/** Deterministic 32-bit generator. */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Gemma 3's layout: <pad> <eos> <bos> <unk> <mask>, then 100 control tokens,
 * the 256 <0xNN> byte tokens, then pieces. Pieces are built by joining two
 * earlier pieces (so every merge's parts and result are in the vocabulary),
 * from characters of Latin, Cyrillic, CJK and a few symbols; each multi-char
 * piece gets one or two merges (Gemma's file has about twice as many merges as
 * pieces), ranked in the order the pieces were made.
 */
export function gemmaTokenizer() {
  const r = rng(262144);
  const vocab = new Map();
  const add = (t) => {
    if (!vocab.has(t)) vocab.set(t, vocab.size);
    return vocab.get(t);
  };
  const specials = ['<pad>', '<eos>', '<bos>', '<unk>', '<mask>'];
  for (let i = 0; i < 100; i++) specials.push(`<unused${i}>`);
  specials.forEach(add);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const chars = ['▁'];
  for (let c = 0x61; c <= 0x7a; c++) chars.push(String.fromCharCode(c), String.fromCharCode(c - 32));
  for (let c = 0x430; c <= 0x44f; c++) chars.push(String.fromCharCode(c));
  for (let c = 0x4e00; c < 0x4e00 + 3000; c++) chars.push(String.fromCharCode(c));
  chars.push(...'0123456789.,;:!?\'"()-'.split(''));
  chars.forEach(add);
  const pieces = [...chars];
  const merges = [];
  const lastSplit = new Map();
  while (vocab.size < V) {
    // Short pieces more often: a = a piece of the last 20,000 made or a character, b a character or short piece.
    const a = r() < 0.5 ? chars[Math.floor(r() * 54)] : pieces[Math.max(0, pieces.length - 1 - Math.floor(r() * 20000))];
    const b = r() < 0.7 ? chars[Math.floor(r() * 54) + 1] : pieces[Math.floor(r() * Math.min(pieces.length, 5000))];
    const t = (r() < 0.4 && !a.startsWith('▁') ? '▁' : '') + a + b;
    if (t.length > 16 || vocab.has(t)) continue;
    // The parts must themselves be pieces: '▁' + a is one when a starts a word.
    const left = t.slice(0, t.length - b.length);
    if (!vocab.has(left)) continue;
    add(t);
    pieces.push(t);
    merges.push([left, b]);
    lastSplit.set(t, [left, b]);
  }
  // More merges for the pieces of three or more characters: up to six other splits whose parts
  // exist, until the count of Gemma 3's file (514,906).
  for (const [t] of lastSplit) {
    if (merges.length >= 514906) break;
    if (t.length < 3) continue;
    let extra = 0;
    for (let k = 1; k < t.length && extra < 6; k++) {
      const a = t.slice(0, k);
      const b = t.slice(k);
      if (vocab.has(a) && vocab.has(b) && a !== lastSplit.get(t)[0]) {
        merges.push([a, b]);
        extra++;
      }
    }
  }
  const added = specials.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
    pre_tokenizer: { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<bos>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<bos>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<bos>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<bos>': { id: '<bos>', ids: [2], tokens: ['<bos>'] } },
    },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }] },
    model: {
      type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab: Object.fromEntries(vocab), merges,
    },
  };
}

/** A gemma3_text folder of that vocabulary at hidden 8 (8 MiB of float32 embeddings): config.json + model.safetensors. */
function tinyGemmaFolder(dir) {
  const E = 8, H = 2, D = 4, I = 16;
  const config = {
    model_type: 'gemma3_text', architectures: ['Gemma3ForCausalLM'], vocab_size: V, hidden_size: E, intermediate_size: I,
    num_hidden_layers: 1, num_attention_heads: H, num_key_value_heads: 1, head_dim: D, max_position_embeddings: 64,
    rms_norm_eps: 1e-6, rope_theta: 1000000.0, rope_local_base_freq: 10000.0, rope_scaling: null, sliding_window: 4,
    layer_types: ['full_attention'], query_pre_attn_scalar: D, hidden_activation: 'gelu_pytorch_tanh',
    attn_logit_softcapping: null, final_logit_softcapping: null, tie_word_embeddings: true,
    bos_token_id: 2, eos_token_id: 1, pad_token_id: 0, torch_dtype: 'float32',
  };
  const r = rng(7);
  const t = [['model.embed_tokens.weight', [V, E]]];
  const p = 'model.layers.0.';
  t.push([`${p}input_layernorm.weight`, [E]], [`${p}self_attn.q_proj.weight`, [H * D, E]], [`${p}self_attn.k_proj.weight`, [D, E]],
    [`${p}self_attn.v_proj.weight`, [D, E]], [`${p}self_attn.o_proj.weight`, [E, H * D]], [`${p}self_attn.q_norm.weight`, [D]],
    [`${p}self_attn.k_norm.weight`, [D]], [`${p}post_attention_layernorm.weight`, [E]], [`${p}pre_feedforward_layernorm.weight`, [E]],
    [`${p}mlp.gate_proj.weight`, [I, E]], [`${p}mlp.up_proj.weight`, [I, E]], [`${p}mlp.down_proj.weight`, [E, I]],
    [`${p}post_feedforward_layernorm.weight`, [E]], ['model.norm.weight', [E]]);
  const header = {};
  let at = 0;
  const datas = [];
  for (const [name, shape] of t) {
    const n = shape.reduce((a, b) => a * b, 1);
    const d = new Float32Array(n);
    for (let i = 0; i < n; i++) d[i] = (r() - 0.5) * 0.2;
    header[name] = { dtype: 'F32', shape, data_offsets: [at, at + 4 * n] };
    at += 4 * n;
    datas.push(Buffer.from(d.buffer));
  }
  const text = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(text.length));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([head, text, ...datas]));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
}

function prepare() {
  const stamp = path.join(DIR, 'stamp');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === 'v3') return;
  fs.mkdirSync(DIR, { recursive: true });
  const t0 = performance.now();
  const tok = gemmaTokenizer();
  // transformers' save_pretrained writes tokenizer.json with indent 2.
  fs.writeFileSync(path.join(DIR, 'tokenizer.json'), JSON.stringify(tok, null, 2));
  tinyGemmaFolder(DIR);
  fs.writeFileSync(stamp, 'v3');
  console.log(`generated ${DIR} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function nodeRuns() {
  const { ModelTokenizer } = await import('../web/lib/model/tokenizer.js');
  const { parseJson } = await import('../web/lib/model/files.js');
  const file = path.join(DIR, 'tokenizer.json');
  const out = [];
  for (let i = 0; i < repeats; i++) {
    // (interleaved: the parse as loadModel did it before, with a reviver call per value)
    const r0 = performance.now();
    JSON.parse(fs.readFileSync(file, 'utf8'), (k, v) => (k === '__proto__' ? undefined : v));
    const reviverMs = performance.now() - r0;
    const t0 = performance.now();
    const text = fs.readFileSync(file, 'utf8');
    const t1 = performance.now();
    const json = parseJson(text, 'tokenizer.json');
    const t2 = performance.now();
    const tok = new ModelTokenizer(json, V);
    const t3 = performance.now();
    const ids = tok.encode('The cat sat on the mat. 你好');
    out.push({ read: t1 - t0, parse: t2 - t1, construct: t3 - t2, total: t3 - t0, ids: ids.length, size: tok.size, reviverMs });
  }
  return out;
}

async function browserRuns() {
  const { startHarness } = await import('../tests/browser/harness.mjs');
  const h = await startHarness();
  try {
    const page = await h.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(h.urlNoCsp('/web/page/index.html#your-model'));
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
    // (a) A module worker of the page's origin, the model worker's code path.
    const worker = [];
    for (let i = 0; i < repeats; i++) {
      worker.push(await page.evaluate(async (V) => {
        const code = `import { ModelTokenizer } from '${location.origin}/web/lib/model/tokenizer.js';
          self.onmessage = async () => {
            const t0 = performance.now();
            const text = await (await fetch('${location.origin}/test-artifacts/bench/gemma-tokenizer/tokenizer.json')).text();
            const t1 = performance.now();
            const json = JSON.parse(text);
            const t2 = performance.now();
            const tok = new ModelTokenizer(json, ${V});
            const t3 = performance.now();
            self.postMessage({ fetch: t1 - t0, parse: t2 - t1, construct: t3 - t2, total: t3 - t0, ids: tok.encode('The cat sat').length });
          };`;
        const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), { type: 'module' });
        const r = await new Promise((resolve, reject) => { w.onmessage = (e) => resolve(e.data); w.onerror = (e) => reject(new Error(e.message)); w.postMessage(0); });
        w.terminate();
        return r;
      }, V));
    }
    // (b) The page's "Your model": the folder loaded in its model worker; the main thread's long tasks meanwhile.
    await page.locator('#your-model').scrollIntoViewIfNeeded();
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push({ start: e.startTime, ms: e.duration }); }).observe({ type: 'longtask', buffered: false });
    });
    const tList = Date.now();
    await page.setInputFiles('#ym-folder', DIR);
    await page.waitForFunction(() => ['listed', 'error'].includes(document.getElementById('your-model').dataset.model), null, { timeout: 60000 });
    const listMs = Date.now() - tList;
    const t0 = await page.evaluate(() => performance.now());
    await page.click('#your-model .ym-load');
    await page.waitForFunction(() => ['loaded', 'error'].includes(document.getElementById('your-model').dataset.model), null, { timeout: 300000 });
    const res = await page.evaluate((from) => ({
      state: document.getElementById('your-model').dataset.model,
      error: document.querySelector('#your-model .ym-model-error')?.textContent ?? '',
      info: document.querySelector('#your-model .ym-load-info, #your-model .ym-loaded')?.textContent ?? '',
      wall: performance.now() - from,
      // the worker's lab.loadModel (config, plan, tokenizer, then the tensors), and when the first tensor bytes arrived
      workerLoadMs: document.getElementById('ym-model-view').model?.loadMs ?? null,
      firstProgressMs: window.__attentionLab.runners.find((r) => r.id === 'your-model').inst.whole.progressEvents[0]?.ms ?? null,
      longTasks: window.__longTasks.filter((t) => t.start >= from),
    }), t0);
    await page.closeAll();
    return { worker, page: { listMs, ...res } };
  } finally {
    await h.close?.();
  }
}

prepare();
const size = fs.statSync(path.join(DIR, 'tokenizer.json')).size;
const json = JSON.parse(fs.readFileSync(path.join(DIR, 'tokenizer.json'), 'utf8'));
console.log(`tokenizer.json: ${(size / 2 ** 20).toFixed(1)} MiB, ${Object.keys(json.model.vocab).length} tokens, ${json.model.merges.length} merges; CPU ${os.cpus()[0].model}, ${os.cpus().length} cores (shared machine)`);
const node = await nodeRuns();
console.log(`Node (read + parseJson + new ModelTokenizer, as loadModel): ${node.map((r) => `${r.total.toFixed(0)} ms (read ${r.read.toFixed(0)}, parse ${r.parse.toFixed(0)}, construct ${r.construct.toFixed(0)})`).join('; ')}; median ${median(node.map((r) => r.total)).toFixed(0)} ms`);
console.log(`  read + parse with a reviver per value (loadModel before this change), interleaved: ${node.map((r) => r.reviverMs.toFixed(0)).join(', ')} ms against read + parse ${node.map((r) => (r.read + r.parse).toFixed(0)).join(', ')} ms`);
const b = await browserRuns();
console.log(`Chromium, a module worker of the page (fetch + parse + construct): ${b.worker.map((r) => `${r.total.toFixed(0)} ms (fetch ${r.fetch.toFixed(0)}, parse ${r.parse.toFixed(0)}, construct ${r.construct.toFixed(0)})`).join('; ')}; median ${median(b.worker.map((r) => r.total)).toFixed(0)} ms`);
const lt = b.page.longTasks;
console.log(`the page's "Your model" (vocab 262,144, hidden 8, 8 MiB of weights): listed in ${b.page.listMs} ms, Load → ${b.page.state} in ${b.page.wall.toFixed(0)} ms ${b.page.error}(the worker's lab.loadModel ${b.page.workerLoadMs?.toFixed(0)} ms; first tensor bytes at ${b.page.firstProgressMs?.toFixed(0)} ms: worker start, wasm, tokenizer); main-thread long tasks meanwhile: ${lt.length} (longest ${lt.length ? Math.max(...lt.map((t) => t.ms)).toFixed(0) : 0} ms, total ${lt.reduce((s, t) => s + t.ms, 0).toFixed(0)} ms)`);
