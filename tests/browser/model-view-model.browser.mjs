// <attention-lab-model-view> with a whole model (issue 23): `src` naming a
// same-origin folder URL (gpt2; llama-sharded through its index; the PyTorch
// shards of tests/golden/torch/llama-sharded), loaded in
// a Web Worker, and the `model` property set to a Model loaded on the page's
// thread with lab.loadModel. The views' values equal the library's calls in
// Node; PNG, SVG and JSON exports; the language switch; no CSP problem.
import assert from 'node:assert/strict';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { nodeModel } from './your-model-whole.browser.mjs';

const PAGE = '/tests/browser/pages/model-view-model.html';
const MODELS = path.join(REPO_ROOT, 'tests', 'golden', 'models');

const ready = (page, id, text) => page.waitForFunction(([i, x]) => {
  const v = document.getElementById(i);
  return v && (v.dataset.state === 'error' || (v.modelRun && v._run.text === x && v.dataset.state === 'ready' && ['ready', 'error'].includes(v.dataset.panels)));
}, [id, text], { timeout: 60000 });

async function noError(page, id) {
  const e = await page.evaluate((i) => { const v = document.getElementById(i); return v.dataset.state === 'error' || v.dataset.panels === 'error' ? v.shadowRoot.querySelector('.al-error').textContent : null; }, id);
  assert.equal(e, null);
}

function near(a, b, tol, what) {
  assert.equal(a.length, b.length, what);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  assert.ok(w <= tol, `${what}: ${w}`);
}

export default function (t) {
  t.test('src folder URL (gpt2, llama-sharded) and the model property: maps, tokens, next tokens, Generate = Node; PNG/SVG/JSON exports', async (h) => {
    const gpt2 = await nodeModel(path.join(MODELS, 'gpt2'));
    const llama = await nodeModel(path.join(MODELS, 'llama'));
    const page = await h.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(h.url(PAGE));
      const text = 'The cat sat on the mat.';
      await ready(page, 'folder', text);
      await noError(page, 'folder');
      const ref = gpt2.forwardSync(text, { attentions: true });
      const L = ref.ids.length;
      const r = await page.evaluate(() => { const v = document.getElementById('folder'); return { thumbs: v.shadowRoot.querySelectorAll('.al-mv-thumb').length, run: v.modelRun, data: Array.from(v.data.data) }; });
      assert.equal(r.thumbs, 8);
      assert.deepEqual(r.run.ids, ref.ids);
      assert.deepEqual(r.run.shown, ['The', '␣cat', '␣sat', '␣on', '␣the', '␣mat', '.'], 'byte-level pieces shown readably');
      near(r.data, ref.attentions.flatMap((a) => Array.from(a.data)), 1e-6, 'all maps');
      const nt = await gpt2.nextTokens(text, { k: 10 });
      assert.deepEqual(r.run.panels.next.list.map((x) => x.id), nt.map((x) => x.id));
      // Keyboard: the sentence field, Enter runs it.
      await page.locator('#folder .al-mv-text').fill('The dog sat');
      await page.locator('#folder .al-mv-text').press('Enter');
      await ready(page, 'folder', 'The dog sat');
      assert.deepEqual(await page.evaluate(() => document.getElementById('folder').modelRun.ids), gpt2.encode('The dog sat'));
      // Exports.
      const ex = await page.evaluate(async () => {
        const v = document.getElementById('folder');
        const json = JSON.parse(await (await v.export('json')).text());
        const png = await v.export('png');
        const bytes = new Uint8Array(await png.arrayBuffer()).slice(0, 8);
        v.setAttribute('view', 'head');
        await v.updateComplete;
        const svg = await (await v.export('svg')).text();
        return { shape: json.shape, ids: json.ids, tokens: json.tokens, modelTokens: json.modelTokens, png: Array.from(bytes), svg: svg.slice(0, svg.indexOf(">") + 1), svgTitles: (svg.match(/<title>/g) ?? []).length };
      });
      const ids = gpt2.encode('The dog sat');
      assert.deepEqual(ex.shape, [2, 4, ids.length, ids.length]);
      assert.deepEqual(ex.ids, ids);
      assert.deepEqual(ex.modelTokens, gpt2.tokens(ids));
      assert.deepEqual(ex.png, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.match(ex.svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.equal(ex.svgTitles, 2 * ids.length);

      // llama-sharded through model.safetensors.index.json: the same maps as the single-file llama in Node.
      const lt = 'The dog is on the log.';
      await ready(page, 'sharded', lt);
      await noError(page, 'sharded');
      const lr = llama.forwardSync(lt, { attentions: true });
      const ld = await page.evaluate(() => { const v = document.getElementById('sharded'); return { data: Array.from(v.data.data), lines: v.shadowRoot.querySelectorAll('.al-hv line').length, heads: v.data.heads }; });
      assert.equal(ld.heads, 4);
      assert.ok(ld.lines > 0);
      near(ld.data, lr.attentions.flatMap((a) => Array.from(a.data)), 1e-6, 'llama-sharded (BF16 shards) vs llama F32');
      // A folder with PyTorch shards only: pytorch_model.bin.index.json and its two .bin files.
      await ready(page, 'torch', lt);
      await noError(page, 'torch');
      const td = await page.evaluate(() => Array.from(document.getElementById('torch').data.data));
      near(td, lr.attentions.flatMap((a) => Array.from(a.data)), 1e-6, 'llama from pytorch_model-0000N-of-00002.bin vs llama F32 safetensors');

      // The model property: a Model loaded on this thread with lab.loadModel.
      await page.evaluate(async () => {
        const { init } = await import('/web/index.js');
        const lab = await init({ backend: 'wasm' });
        const get = async (n) => new Uint8Array(await (await fetch(`/tests/golden/models/gpt2/${n}`)).arrayBuffer());
        const model = await lab.loadModel({ config: await get('config.json'), weights: await get('model.safetensors'), tokenizer: await get('tokenizer.json') });
        const v = document.getElementById('prop');
        v.setAttribute('text', 'Attention is all you need');
        v.model = model;
      });
      await ready(page, 'prop', 'Attention is all you need');
      await noError(page, 'prop');
      const pr = await page.evaluate(() => document.getElementById('prop').modelRun);
      assert.deepEqual(pr.ids, gpt2.encode('Attention is all you need'));
      await page.fill('#prop .al-mv-seed', '11');
      await page.fill('#prop .al-mv-max-new', '6');
      await page.evaluate(() => document.getElementById('prop').generate());
      const gen = await page.evaluate(() => document.getElementById('prop').modelRun.panels.generated);
      const want = [];
      for await (const x of gpt2.generate('Attention is all you need', { maxNewTokens: 6, temperature: 1, seed: 11 })) want.push(x.id);
      assert.deepEqual(gen.ids, want);
      assert.equal(gen.state, 'done');
      // Chinese labels follow lang.
      await page.evaluate(() => { const v = document.getElementById('prop'); v.setAttribute('lang', 'zh'); return v.updateComplete; });
      await ready(page, 'prop', 'Attention is all you need');
      assert.equal(await page.textContent('#prop .al-mv-generate'), '生成');
      assert.match(await page.textContent('#prop .al-mv-next-panel h4'), /下一个词元/);
      // Removed, the folder's worker model is disposed; connected again, the folder is loaded again.
      const re = await page.evaluate(async () => {
        const v = document.getElementById('folder');
        const first = v.model;
        v.remove();
        const disposed = first.disposed;
        document.body.append(v);
        const t0 = performance.now();
        while (performance.now() - t0 < 30000 && !(v.model && v.model !== first && v.dataset.panels === 'ready')) await new Promise((r) => setTimeout(r, 100));
        return { disposed, again: Boolean(v.model && v.model !== first), thumbs: v.shadowRoot.querySelectorAll('.al-mv-thumb').length };
      });
      assert.deepEqual(re, { disposed: true, again: true, thumbs: 8 });
      // Four 404s: the sharded folder has no model.safetensors, so the element then reads its index;
      // the PyTorch folder has no model.safetensors, its index or pytorch_model.bin, so it reads pytorch_model.bin.index.json.
      assert.deepEqual(page.problems(), Array(4).fill('console error: Failed to load resource: the server responded with a status of 404 (Not Found)'));
    } finally {
      gpt2.dispose();
      llama.dispose();
      await page.closeAll();
    }
  }, { timeout: 180000 });
}
