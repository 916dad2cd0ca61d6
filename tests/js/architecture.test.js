// The structure the architecture promises (docs/ARCHITECTURE.md): module-level
// classes shared by every lab, and no web/lib file over 400 lines.
import { readdirSync, readFileSync } from 'node:fs';
import { init } from '../../web/node.js';
import { MultiHeadAttention, SelfAttentionLayer, KVCache } from '../../web/lib/lab.js';

const LIB = new URL('../../web/lib/', import.meta.url);
const WEB = new URL('../../web/', import.meta.url);

// Every .js/.mjs file under web/ (the package's code), generated files aside.
function webSources() {
  return readdirSync(WEB, { recursive: true })
    .filter((name) => /\.(m?js|cjs)$/.test(name) && !name.startsWith('dist/') && name !== 'lib/wgsl-sources.js');
}

describe('module-level classes', () => {
  let a;
  let b;
  beforeAll(async () => {
    a = await init({ backend: 'wasm' });
    b = await init({ backend: 'wasm-scalar' });
  });

  test('instanceof holds across labs and backends', () => {
    const m1 = a.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const m2 = b.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const l1 = a.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    const c2 = m2.createKVCache({ maxLength: 4 });
    expect(m1).toBeInstanceOf(MultiHeadAttention);
    expect(m2).toBeInstanceOf(m1.constructor);
    expect(l1).toBeInstanceOf(SelfAttentionLayer);
    expect(l1).not.toBeInstanceOf(MultiHeadAttention);
    expect(c2).toBeInstanceOf(KVCache);
    // A cache of another lab is a KVCache, but not this layer's.
    expect(() => m1.forwardSync([[0, 0, 0, 0, 0, 0, 0, 0]], undefined, undefined, { kvCache: c2 }))
      .toThrow(/kvCache belongs to another multiHeadAttention/);
    for (const o of [m1, m2, l1, c2]) o.dispose();
  });
});

describe('web/lib', () => {
  test('no file over 400 lines (wgsl-sources.js is generated)', () => {
    const long = [];
    for (const name of readdirSync(LIB, { recursive: true })) {
      if (name === 'wgsl-sources.js' || !/\.(js|mjs|cjs|ts)$/.test(name)) continue;
      const lines = readFileSync(new URL(name, LIB), 'utf8').split('\n').length;
      if (lines > 401) long.push(`${name}: ${lines} lines`);
    }
    expect(long).toEqual([]);
  });
});

describe('one source for each rule', () => {
  // The dropout hash and the seeded init live in C++ (src/dropout.cpp,
  // src/multi_head_attention.cpp); WGSL keeps the GPU copy of the hash
  // (web/webgpu/include/dropout_hash.wgsl). No JS in web/ copies them.
  test.each([
    ['the dropout hash (pcg multiplier)', /747796405/],
    ['the dropout hash (pcg increment)', /2891336453/],
    ['the seeded init (splitmix64 start)', /0x5eeda77e17|5EEDA77E17/i],
    ['the seeded init (splitmix64 mixer)', /0xbf58476d|BF58476D1CE4E5B9/i],
  ])('%s appears in no JS file under web/', (_, pattern) => {
    const found = webSources().filter((name) => pattern.test(readFileSync(new URL(name, WEB), 'utf8')));
    expect(found).toEqual([]);
  });
});

// The rooms of docs/ARCHITECTURE.md, top to bottom: a file may import files
// of its own room and of the rooms below it, never above. Where the doc's
// picture leaves a choice, the choice and its reason:
// - worker entries (the main modules of Web Workers, web/*-worker.js beside
//   the package entries, and their shared loop, lib/train/worker-loop.js)
//   call init from the package entry, and components
//   start them: between the two;
// - pretrained.js is lab.pretrained over loadModel: the models' room;
// - the family facts (web/lib/model/families/: each family's config keys,
//   tensor names, layout ops and per-layer state-dict format) sit below the
//   weight files, which read their 'hf-*' formats from them, and below the
//   models, which read everything else; they import errors.js only;
// - io (weight files) and the backends do not use each other; io is put above;
// - graph (the block graph's Transformer handle and the one wasm arena) is
//   below training and models, and below the backends too: the wasm backend
//   allocates in the same arena (graph/arena.js); graph uses no backend;
// - errors.js, tensor.js, mask.js and validate.js belong to the wrapper in the
//   doc, but every room reports errors and reads tensors with them (io:
//   "errors.js only"; webgpu-host.js: validate.js): one shared room below all;
// - vendor/ and dist/ (generated glue) are the floor.
// Paths are relative to web/; a path takes the first room whose pattern it
// matches, the wrapper's (every other web/lib/*.js) last.
export const ROOMS = [
  { room: 'page', files: /^page\// },
  { room: 'components', files: /^components\// },
  { room: 'worker entries', files: /^(train|lm|model)-worker\.js$|^lib\/train\/worker-loop\.js$/ },
  { room: 'wrapper', files: /^(index|node)\.c?js$|^lib\/[^/]+\.js$/, fallback: true },
  { room: 'training', files: /^lib\/train\// },
  { room: 'models', files: /^lib\/model\/(?!families\/)|^lib\/pretrained\.js$/ },
  { room: 'weight files', files: /^lib\/io\// },
  { room: 'family facts', files: /^lib\/model\/families\// },
  { room: 'backends', files: /^lib\/(wasm-backend|webgpu-[a-z-]+|wgsl-sources)\.js$/ },
  { room: 'graph', files: /^lib\/graph\// },
  { room: 'shared helpers', files: /^lib\/(errors|tensor|mask|validate)\.js$/ },
  { room: 'vendored and generated', files: /^lib\/vendor\/|^dist\// },
];

/** The room of a path relative to web/ (forward slashes), or null. */
export function roomOf(rel) {
  const hit = ROOMS.find((r) => !r.fallback && r.files.test(rel)) ?? ROOMS.find((r) => r.fallback && r.files.test(rel));
  return hit ? hit.room : null;
}

/** The relative specifiers a source imports: static, dynamic, and Worker/asset URLs. */
export function importsOf(text) {
  // JSDoc type imports (`{import('./x.js').T}`) are not dependencies: drop
  // comment lines and inline /* … */ spans before looking for import().
  const code = text.split('\n').filter((l) => !/^\s*(\*|\/\*|\/\/)/.test(l)).join('\n').replace(/\/\*.*?\*\//g, '');
  const found = [];
  for (const re of [
    /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /new URL\(\s*['"]([^'"?]+)[^'"]*['"]\s*,\s*import\.meta\.url\s*\)/g,
  ]) {
    for (const m of code.matchAll(re)) if (m[1].startsWith('.')) found.push(m[1]);
  }
  return found;
}

/** Every import under web/ that points up a room: 'from → to (room → room)'. */
export function upwardImports(files) {
  // Higher in ROOMS = higher room.
  const rank = (room) => -ROOMS.findIndex((r) => r.room === room);
  const bad = [];
  for (const [rel, text] of files) {
    const from = roomOf(rel);
    for (const spec of importsOf(text)) {
      if (!/\.(m?js|cjs)$/.test(spec)) continue; // data and wasm files are no code
      const path = new URL(spec, `file:///web/${rel}`).pathname;
      if (!path.startsWith('/web/')) {
        bad.push(`${rel} → ${path}: code outside web/`);
        continue;
      }
      const to = path.slice('/web/'.length);
      const target = roomOf(to);
      if (from === null || target === null) {
        bad.push(`${rel} → ${to}: a file in no room (add it to ROOMS)`);
      } else if (rank(target) > rank(from)) {
        bad.push(`${rel} → ${to} (${from} → ${target})`);
      }
    }
  }
  return bad;
}

function webFiles() {
  return webSources().filter((name) => !name.startsWith('lib/vendor/'))
    .map((name) => [name.split('\\').join('/'), readFileSync(new URL(name, WEB), 'utf8')]);
}

describe('rooms (docs/ARCHITECTURE.md)', () => {
  test('the check sees an upward import, a dynamic one, a Worker URL, and skips JSDoc types', () => {
    expect(upwardImports([['lib/model/x.js', "import { Trainer } from '../train/trainer.js';"]]))
      .toEqual(['lib/model/x.js → lib/train/trainer.js (models → training)']);
    expect(upwardImports([['lib/graph/x.js', "const m = await import('../model/load.js');"]]))
      .toEqual(['lib/graph/x.js → lib/model/load.js (graph → models)']);
    expect(upwardImports([['lib/io/x.js', "new Worker(new URL('../../train-worker.js', import.meta.url));"]]))
      .toEqual(['lib/io/x.js → train-worker.js (weight files → worker entries)']);
    expect(upwardImports([['lib/model/x.js', "import {\n  a,\n  b,\n} from '../lab.js';"]]))
      .toEqual(['lib/model/x.js → lib/lab.js (models → wrapper)']);
    expect(upwardImports([['lib/model/x.js', "/** @param {import('../train/trainer.js').Trainer} t */\nconst y = /** @type {import('../lab.js').X} */ (z);"]]))
      .toEqual([]);
    expect(upwardImports([['lib/train/x.js', "import { loadModel } from '../model/load.js';"]])).toEqual([]);
  });

  test('no import under web/ points up a room', () => {
    const files = webFiles();
    expect(files.length).toBeGreaterThan(100);
    expect(upwardImports(files)).toEqual([]);
  });
});

// One source for family facts: a Hugging Face tensor name is written in the
// family tables (web/lib/model/families/) and in at most one other source
// file under web/ (the page quoting a name to its reader, or reading one
// tensor of the shipped model). Comments and the message catalogs (the
// page's and components' translated prose, like docs) do not count.
const FAMILY_TABLES = /^lib\/model\/families\//;
const PROSE = /(^|\/)(messages|[a-z0-9-]+-messages|i18n)\.js$/;
// The names the issue names, and every module path of the family tables.
const NAMED = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'attn.c_attn', 'attn.c_proj',
  'attention.self.query', 'attention.self.key', 'attention.self.value', 'attention.output.dense', 'mlp.c_fc', 'mlp.c_proj',
  'input_layernorm', 'post_attention_layernorm', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj', 'intermediate.dense', 'query_key_value'];

async function familyTensorNames() {
  const { FAMILIES } = await import('../../web/lib/model/families/index.js');
  const small = { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 2 };
  const seq2seq = { d_model: 2, encoder_layers: 1, decoder_layers: 1, encoder_attention_heads: 1, decoder_attention_heads: 1,
    encoder_ffn_dim: 2, decoder_ffn_dim: 2, vocab_size: 2, max_position_embeddings: 2, decoder_start_token_id: 1 };
  const hf = {
    gpt2: { n_layer: 1, n_head: 1, n_embd: 2, vocab_size: 2, n_positions: 2 },
    llama: { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 2, attention_bias: true, mlp_bias: true },
    qwen2: { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 2 },
    bert: { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 2 },
    distilbert: { n_layers: 1, n_heads: 1, dim: 2, hidden_dim: 2, vocab_size: 2, max_position_embeddings: 2 },
    roberta: { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 3 },
    'xlm-roberta': { num_hidden_layers: 1, num_attention_heads: 1, hidden_size: 2, intermediate_size: 2, vocab_size: 2, max_position_embeddings: 3 },
    // two layers (layer 0 has no attn_norm), every bias and an untied decoder
    modernbert: { ...small, num_hidden_layers: 2, norm_bias: true, attention_bias: true, mlp_bias: true, classifier_bias: true, tie_word_embeddings: false },
    // the decoders of issue 32, each with every optional tensor it names (biases, untied heads, the four norms)
    qwen3: { ...small, head_dim: 2, attention_bias: true },
    mistral: { ...small },
    gemma: { ...small, head_dim: 2 },
    gemma2: { ...small, head_dim: 2 },
    gemma3_text: { ...small, head_dim: 2 },
    phi3: { ...small },
    gpt_neox: { ...small, rotary_pct: 1, tie_word_embeddings: false },
    gpt_neo: { num_layers: 1, num_heads: 1, hidden_size: 2, vocab_size: 2, max_position_embeddings: 2, attention_types: [[['global'], 1]], tie_word_embeddings: false },
    // the encoder-decoders of issue 34 item 2
    marian: { ...seq2seq },
    bart: { ...seq2seq },
    t5: { d_model: 2, d_kv: 1, num_heads: 2, d_ff: 2, num_layers: 1, vocab_size: 2, decoder_start_token_id: 0, feed_forward_proj: 'gated-gelu', tie_word_embeddings: false },
  };
  const names = new Set(NAMED);
  for (const [type, table] of Object.entries(FAMILIES)) {
    expect(hf[type]).toBeDefined(); // a new family: add its smallest config.json here
    // the MLM heads' first tensors (bert, distilbert, roberta, modernbert), so that the heads' names are counted
    const heads = new Set(['cls.predictions.transform.dense.weight', 'vocab_transform.weight', 'lm_head.dense.weight', 'head.dense.weight']);
    const c = { modelType: type, ...table.config(hf[type], heads) };
    for (const t of table.tensors(c)) {
      // 'model.layers.0.self_attn.q_proj.weight' → 'self_attn.q_proj'
      const path = t.file.replace(/^(.*?\.)?\d+\./, '').replace(/\.[^.]+$/, '');
      if (path.includes('.') || path.length >= 12) names.add(path);
    }
  }
  return [...names];
}

/** Code without comments (block comments, and // comments not inside a string's start). */
function codeOf(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').split('\n').map((l) => l.replace(/(^|[^:'"`\\])\/\/.*$/, '$1')).join('\n');
}

/** 'name: file, file' for each name written in more than one source file outside the family tables. */
export function repeatedTensorNames(files, names) {
  const bad = [];
  for (const name of names) {
    const where = files.filter(([rel, text]) => !FAMILY_TABLES.test(rel) && !PROSE.test(rel) && codeOf(text).includes(name)).map(([rel]) => rel);
    if (where.length > 1) bad.push(`${name}: ${where.join(', ')}`);
  }
  return bad;
}

describe('one source for family facts', () => {
  test('the check sees a name written twice, and skips comments, prose and the tables', () => {
    const files = [
      ['lib/model/families/gpt2.js', "const q = 'attn.c_attn';"],
      ['lib/io/x.js', "const w = get(`${p}attn.c_attn.weight`);"],
      ['page/y.js', "read('h.0.attn.c_attn.bias');"],
      ['lib/z.js', "// attn.c_attn in a comment\n/* self_attn.q_proj */ const a = 1;"],
      ['page/lib/messages.js', "'ch2.p': 'h.0.attn.c_attn holds W_Q | W_K | W_V'"],
    ];
    expect(repeatedTensorNames(files, ['attn.c_attn', 'self_attn.q_proj'])).toEqual(['attn.c_attn: lib/io/x.js, page/y.js']);
    expect(repeatedTensorNames(files.filter(([rel]) => rel !== 'page/y.js'), ['attn.c_attn'])).toEqual([]);
  });

  test('no Hugging Face tensor name is written in more than one source file under web/ outside the family tables', async () => {
    const names = await familyTensorNames();
    expect(names).toEqual(expect.arrayContaining(['attn.c_attn', 'self_attn.q_proj', 'attention.self.query', 'mlp.gate_proj', 'embeddings.word_embeddings']));
    expect(repeatedTensorNames(webFiles(), names)).toEqual([]);
  });
});
