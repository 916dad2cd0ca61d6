// Large weight files: a GPT-2-small-sized safetensors file (124M float32
// parameters, ~498 MB, the tensor names and shapes of the Hugging Face
// checkpoint) is generated once, then
//   1. Node: listed with openSafetensors (header only) + listAttentionLayers,
//      and one layer (h.5.) read alone and loaded into a multiHeadAttention;
//   2. the tutorial page in headless Chromium: the file is chosen in the
//      "Your model" section (a File; read with File.slice), listed, and the
//      layer run on the page's sentence.
// Reports the times and the bytes read (never the whole file). Not part of
// npm test (it writes ~500 MB to the temporary directory):
//   npm run check:large-weights            (exit 1 when listing takes ≥ 2 s)
//   node scripts/check-large-weights.mjs --keep   (keep the file for the next run)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { init } from '../web/node.js';
import { openSafetensors, listAttentionLayers, layerTensorNames } from '../web/lib/io/index.js';

const E = 768;
const LAYERS = 12;
const FILE = path.join(os.tmpdir(), 'attention-lab-large', 'gpt2-small.safetensors');
const keep = process.argv.includes('--keep');
const LIMIT_MS = 2000;

function gpt2Tensors() {
  const t = [['wte.weight', [50257, E]], ['wpe.weight', [1024, E]]];
  for (let i = 0; i < LAYERS; i++) {
    const p = `h.${i}.`;
    t.push([`${p}ln_1.weight`, [E]], [`${p}ln_1.bias`, [E]],
      [`${p}attn.c_attn.weight`, [E, 3 * E]], [`${p}attn.c_attn.bias`, [3 * E]],
      [`${p}attn.c_proj.weight`, [E, E]], [`${p}attn.c_proj.bias`, [E]],
      [`${p}ln_2.weight`, [E]], [`${p}ln_2.bias`, [E]],
      [`${p}mlp.c_fc.weight`, [E, 4 * E]], [`${p}mlp.c_fc.bias`, [4 * E]],
      [`${p}mlp.c_proj.weight`, [4 * E, E]], [`${p}mlp.c_proj.bias`, [E]]);
  }
  t.push(['ln_f.weight', [E]], ['ln_f.bias', [E]]);
  return t;
}

// Element k of every tensor: a small deterministic value (≈ ±0.02), so a
// read can be checked without keeping the data.
const valueAt = (k) => (((Math.imul(k + 1, 2654435761) >>> 0) % 2001) - 1000) * 2e-5;

/** Writes the file by the format spec, streaming 4 MiB blocks. */
function generate(file) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const header = { __metadata__: { format: 'pt', note: 'attention-lab check:large-weights (synthetic values)' } };
  let offset = 0;
  for (const [name, shape] of gpt2Tensors()) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const fd = fs.openSync(file, 'w');
  const pre = Buffer.alloc(8);
  pre.writeBigUInt64LE(BigInt(text.length));
  fs.writeSync(fd, pre);
  fs.writeSync(fd, text);
  const block = new Float32Array(1 << 20);
  for (const [, shape] of gpt2Tensors()) {
    const n = shape.reduce((a, b) => a * b, 1);
    for (let k0 = 0; k0 < n; k0 += block.length) {
      const m = Math.min(block.length, n - k0);
      for (let k = 0; k < m; k++) block[k] = valueAt(k0 + k);
      fs.writeSync(fd, new Uint8Array(block.buffer, 0, m * 4));
    }
  }
  fs.closeSync(fd);
  return 8 + text.length + offset;
}

const mb = (n) => `${(n / 2 ** 20).toFixed(2)} MiB`;

async function nodeCheck(file) {
  const stats = { bytes: 0 };
  const blob = await fs.openAsBlob(file);
  const counting = { size: blob.size, slice: (a, b) => { stats.bytes += b - a; return blob.slice(a, b); } };
  const t0 = performance.now();
  const f = await openSafetensors(counting);
  const layers = listAttentionLayers(f.entries);
  const listMs = performance.now() - t0;
  const listBytes = stats.bytes;
  const layer = layers.find((l) => l.prefix === 'h.5.');
  const rss0 = process.memoryUsage().rss;
  const t1 = performance.now();
  const tensors = await f.read(layerTensorNames(f.entries, layer));
  const lab = await init({ backend: 'wasm' });
  const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 12 });
  mha.loadStateDict(tensors, { format: 'hf-gpt2', prefix: 'h.5.' });
  const loadMs = performance.now() - t1;
  const w = tensors['h.5.attn.c_attn.weight'].data;
  const ok = [0, 1, 12345, w.length - 1].every((k) => w[k] === Math.fround(valueAt(k)));
  const x = { data: new Float32Array(16 * E).map((_, k) => Math.sin(k)), shape: [16, E] };
  const out = mha.forwardSync(x, undefined, undefined, { mask: { kind: 'causal' } });
  mha.dispose();
  return {
    layers: layers.length, listMs, listBytes, loadMs, layerBytes: stats.bytes - listBytes, valuesOk: ok,
    rssGrowth: process.memoryUsage().rss - rss0, maxRss: process.resourceUsage().maxRSS * 1024, outShape: out.output.shape,
  };
}

async function browserCheck(file) {
  const { startHarness } = await import('../tests/browser/harness.mjs');
  const h = await startHarness();
  try {
    const page = await h.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(h.url('/web/page/index.html#your-model'));
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
    await page.locator('#your-model').scrollIntoViewIfNeeded();
    const t0 = Date.now();
    await page.setInputFiles('#ym-file', file);
    await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '12', null, { timeout: 60000 });
    const wallMs = Date.now() - t0;
    const listed = await page.evaluate(() => ({ ms: Number(document.getElementById('your-model').dataset.listMs), info: document.querySelector('#your-model .ym-info').textContent }));
    await page.fill('#your-model tr[data-prefix="h.5."] .ym-heads', '12');
    const t1 = Date.now();
    await page.click('#your-model tr[data-prefix="h.5."] .ym-run');
    await page.waitForFunction(() => document.getElementById('your-model').dataset.ran === 'h.5.', null, { timeout: 120000 });
    const runWallMs = Date.now() - t1;
    const ran = await page.textContent('#your-model .ym-ran');
    const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? null);
    const problems = page.problems();
    await page.closeAll();
    return { wallMs, listMs: listed.ms, info: listed.info, runWallMs, ran, heap, problems };
  } finally {
    await h.close();
  }
}

const t0 = performance.now();
let size;
if (fs.existsSync(FILE) && keep) {
  size = fs.statSync(FILE).size;
  console.log(`using ${FILE} (${mb(size)})`);
} else {
  size = generate(FILE);
  console.log(`generated ${FILE}: ${mb(size)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
let failed = false;
try {
  const n = await nodeCheck(FILE);
  console.log(`node: listed ${n.layers} attention layers in ${n.listMs.toFixed(1)} ms reading ${mb(n.listBytes)} of ${mb(size)}`);
  console.log(`node: layer h.5. read (${mb(n.layerBytes)}) and loaded in ${n.loadMs.toFixed(0)} ms; values ${n.valuesOk ? 'match' : 'DIFFER'}; RSS grew ${mb(n.rssGrowth)} (peak RSS ${mb(n.maxRss)}); forward → [${n.outShape}]`);
  if (!n.valuesOk || n.layers !== 12 || n.listMs >= LIMIT_MS) failed = true;
  const b = await browserCheck(FILE);
  console.log(`page: listed in ${b.listMs.toFixed(1)} ms (section's own timer), ${b.wallMs} ms from setInputFiles to the table`);
  console.log(`page: ${b.info}`);
  console.log(`page: run ${b.runWallMs} ms wall — ${b.ran}`);
  console.log(`page: JS heap after the run ${b.heap === null ? 'n/a' : mb(b.heap)}; problems: ${JSON.stringify(b.problems)}`);
  if (b.wallMs >= LIMIT_MS || b.problems.length) failed = true;
} finally {
  if (!keep) fs.rmSync(FILE, { force: true });
}
console.log(failed ? 'check:large-weights FAILED' : 'check:large-weights passed');
process.exit(failed ? 1 : 0);
