// "Your model" with an encoder-decoder (issue 34 item 4): the tiny Marian
// folder of tests/golden/models/marian chosen on the page, loaded into the
// model worker and run as a translation. Every value the page shows is
// checked against the same library calls made here in Node on the same
// files: the translation (model.generate, greedy at the default temperature 0
// and seeded at temperature 1), the alignment map (forwardSync's
// crossAttentions with decoderInputIds = [decoder start, …translation]) for
// every layer and head, its mean over heads (against a float64 mean of Node's
// heads), the encoder's and decoder's self-attention grids, and the hover of
// a target token. The tiny T5 folder (relative position bias, a Unigram
// tokenizer.json) runs the same way: its translations and cross maps = Node. A second test runs the element alone: a folder src (in the
// worker, in Chinese, view="encoder") and the model property (a Model on the
// page's thread, whose mean over heads the element takes from
// the library's headMean). A third test follows chapter 5's link to this section, then
// renames two vocabulary entries to markup (one in the source, one the model
// writes) and checks they show as text.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, ARTIFACTS } from './harness.mjs';
import { nodeModel, openYourModel, chooseFolder, loadIt, setSentence, ranOn } from './your-model-whole.browser.mjs';
import { trap, injections } from './your-model-xss.browser.mjs';

const MARIAN = path.join(REPO_ROOT, 'tests', 'golden', 'models', 'marian');
const T5 = path.join(REPO_ROOT, 'tests', 'golden', 'models', 't5');
const VIEW = '#ym-model-view';

const near = (a, b, tol, what) => {
  assert.equal(a.length, b.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  assert.ok(worst <= tol, `${what}: max |Δ| ${worst} > ${tol}`);
  return worst;
};

async function nodeTranslate(node, text, options) {
  const ids = [];
  for await (const t of node.generate(text, options)) ids.push(t.id);
  return ids;
}

/** Waits until the view has translated `text` with `ids` settled (a run of the Translate button). */
async function translated(page, { seed, temperature }) {
  await page.waitForFunction(([s, tt]) => {
    const v = document.getElementById('ym-model-view');
    const g = v?.modelRun?.generated;
    return g && g.seed === s && g.temperature === tt && g.state === 'done' && v.dataset.state === 'ready' && v.crossMap;
  }, [seed, temperature], { timeout: 60000 });
}

const crossOf = (page) => page.evaluate(() => { const m = document.getElementById('ym-model-view').crossMap; return { ...m, data: Array.from(m.data) }; });

async function setAttrs(page, attrs) {
  await page.evaluate(async (a) => {
    const v = document.getElementById('ym-model-view');
    for (const [k, x] of Object.entries(a)) v.setAttribute(k, x);
    await v.updateComplete;
  }, attrs);
}

export default function (t) {
  t.test('tiny Marian: translation, the alignment map (every layer, head and the mean), encoder and decoder views and the hover equal Node', async (h) => {
    const node = await nodeModel(MARIAN);
    const { page } = await openYourModel(h);
    try {
      await chooseFolder(page, MARIAN);
      const type = await page.evaluate(() => document.querySelector('#your-model .ym-model-table tr[data-key="type"] td')?.textContent);
      assert.equal(type, 'marian');
      await loadIt(page);
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun);
      const text = 'the dog is a cat';
      await setSentence(page, text);
      await ranOn(page, text);
      // The default: greedy (temperature 0), 20 new tokens at most.
      await translated(page, { seed: 0, temperature: 0 });
      const run = await page.evaluate(() => { const r = document.getElementById('ym-model-view').modelRun; return { ids: r.ids, decoderInputIds: r.decoderInputIds, generated: r.generated, targetShown: r.targetShown }; });
      const greedy = await nodeTranslate(node, text, { maxNewTokens: 20, temperature: 0 });
      assert.deepEqual(run.generated.ids, greedy);
      assert.deepEqual(run.ids, node.encode(text));
      const start = node.config.decoderStartTokenId;
      assert.deepEqual(run.decoderInputIds, [start, ...greedy]);
      const ref = node.forwardSync(text, { decoderInputIds: run.decoderInputIds, attentions: true });
      const { numLayers: N, numHeads: H, encoderLayers: Ne, encoderHeads: He } = node.config;
      const Le = ref.ids.length, Ld = ref.decoderInputIds.length;
      // The cross view is the default: every layer × head, and the mean over heads (float64 here).
      let worst = 0;
      for (let l = 0; l < N; l++) {
        for (const hh of ['mean', ...Array.from({ length: H }, (_, i) => i)]) {
          await setAttrs(page, { layer: String(l), head: String(hh) });
          const m = await crossOf(page);
          assert.equal(m.layer, l);
          assert.equal(m.head, hh);
          assert.deepEqual([m.rows, m.cols], [Ld, Le]);
          const a = ref.crossAttentions[l].data;
          const want = hh === 'mean'
            ? Array.from({ length: Ld * Le }, (_, q) => { let s = 0; for (let k = 0; k < H; k++) s += a[k * Ld * Le + q]; return s / H; })
            : Array.from(a.subarray(hh * Ld * Le, (hh + 1) * Ld * Le));
          worst = Math.max(worst, near(m.data, want, 1e-6, `cross layer ${l} head ${hh}`));
        }
      }
      console.log(`    cross-attention maps (${N} layers × (${H} heads + mean), [${Ld}, ${Le}]): max |Δ| vs Node ${worst.toExponential(2)}`);
      // The select shows the same head; the labels are the tokens as text.
      const labels = await page.evaluate(() => { const r = document.getElementById('ym-model-view').shadowRoot; return { head: r.querySelector('.al-mv-cross-head').value, tgt: [...r.querySelectorAll('.al-mv-cross-tgt')].map((x) => x.textContent), src: [...r.querySelectorAll('.al-mv-cross-src')].map((x) => x.textContent) }; });
      assert.equal(labels.head, String(H - 1));
      assert.deepEqual(labels.tgt, ref.decoderTokens);
      assert.deepEqual(labels.src, ref.tokens);
      // Hovering a target token shades the source tokens by its row of the map drawn.
      await setAttrs(page, { layer: String(N - 1), head: 'mean' });
      const k = Math.min(2, Ld - 1);
      await page.hover(`${VIEW} .al-mv-cross-tgt[data-i="${k}"]`);
      const hi = await page.evaluate(() => { const v = document.getElementById('ym-model-view'); return { ...v.highlighted, src: [...v.shadowRoot.querySelectorAll('.al-mv-cross-src')].map((x) => Number(x.dataset.weight)) }; });
      const m = await crossOf(page);
      assert.equal(hi.target, k);
      assert.deepEqual(hi.weights, m.data.slice(k * Le, (k + 1) * Le));
      assert.deepEqual(hi.src, hi.weights);
      await page.locator('#your-model').screenshot({ path: path.join(ARTIFACTS, 'your-model-marian-cross.png') });
      // The encoder's and decoder's self-attention: the layers × heads grids.
      for (const [view, list, layers, heads, L] of [['encoder', ref.encoderAttentions, Ne, He, Le], ['decoder', ref.decoderAttentions, N, H, Ld]]) {
        await page.click(`${VIEW} [data-view="${view}"]`);
        await page.waitForFunction((x) => document.getElementById('ym-model-view').getAttribute('view') === x && document.getElementById('ym-model-view').dataset.state === 'ready', view);
        assert.equal(await page.locator(`${VIEW} .al-mv-thumb`).count(), layers * heads);
        const d = await page.evaluate(() => { const x = document.getElementById('ym-model-view').data; return { layers: x.layers, heads: x.heads, lq: x.lq, lk: x.lk, data: Array.from(x.data) }; });
        assert.deepEqual([d.layers, d.heads, d.lq, d.lk], [layers, heads, L, L]);
        const want = list.flatMap((a) => Array.from(a.data));
        console.log(`    ${view} self-attention [${layers}, ${heads}, ${L}, ${L}]: max |Δ| vs Node ${near(d.data, want, 1e-6, view).toExponential(2)}`);
      }
      await page.click(`${VIEW} .al-mv-thumb[data-layer="0"][data-head="0"]`);
      const big = await page.evaluate(() => Array.from(document.getElementById('ym-model-view').enlarged.data));
      near(big, Array.from(ref.decoderAttentions[0].data.subarray(0, Ld * Ld)), 1e-6, 'decoder layer 0 head 0 enlarged');
      await page.click(`${VIEW} .al-mv-big .al-btn`);
      await page.click(`${VIEW} [data-view="cross"]`);
      // Seeded sampling (temperature 1, seed 7, 6 tokens): Translate again, the same tokens as Node's.
      await page.evaluate(() => {
        const r = document.getElementById('ym-model-view').shadowRoot;
        const temp = r.querySelector('.al-mv-temp');
        temp.value = '1';
        temp.dispatchEvent(new Event('input'));
        r.querySelector('.al-mv-seed').value = '7';
        r.querySelector('.al-mv-max-new').value = '6';
      });
      await page.click(`${VIEW} .al-mv-generate`);
      await translated(page, { seed: 7, temperature: 1 });
      const seeded = await page.evaluate(() => document.getElementById('ym-model-view').modelRun);
      const refSeeded = await nodeTranslate(node, text, { maxNewTokens: 6, temperature: 1, seed: 7 });
      assert.deepEqual(seeded.generated.ids, refSeeded);
      assert.deepEqual(seeded.decoderInputIds, [start, ...refSeeded]);
      const ref2 = node.forwardSync(text, { decoderInputIds: seeded.decoderInputIds, attentions: true });
      await setAttrs(page, { layer: '0', head: '1' });
      const Ld2 = seeded.decoderInputIds.length;
      near((await crossOf(page)).data, Array.from(ref2.crossAttentions[0].data.subarray(Ld2 * Le, 2 * Ld2 * Le)), 1e-6, 'seeded cross layer 0 head 1');
      // The first target token panel is nextTokens on the source (Node's, at temperature 1).
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun.panels.next?.temperature === 1);
      const next = await page.evaluate(() => document.getElementById('ym-model-view').modelRun.panels.next.list.map((x) => x.id));
      assert.deepEqual(next, (await node.nextTokens(text, { k: 10, temperature: 1 })).map((x) => x.id));
      assert.deepEqual(page.ownProblems(), []);
    } finally {
      node.dispose();
      await page.closeAll();
    }
  }, { timeout: 120000 });

  t.test('tiny T5 (relative position bias, Unigram tokenizer): greedy and seeded translation and every cross map equal Node', async (h) => {
    const node = await nodeModel(T5);
    const { page } = await openYourModel(h);
    try {
      await chooseFolder(page, T5);
      const type = await page.evaluate(() => document.querySelector('#your-model .ym-model-table tr[data-key="type"] td')?.textContent);
      assert.equal(type, 't5');
      await loadIt(page);
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun);
      const text = 'the dog is a cat';
      await setSentence(page, text);
      await ranOn(page, text);
      await translated(page, { seed: 0, temperature: 0 });
      const run = await page.evaluate(() => { const r = document.getElementById('ym-model-view').modelRun; return { ids: r.ids, decoderInputIds: r.decoderInputIds, generated: r.generated }; });
      const greedy = await nodeTranslate(node, text, { maxNewTokens: 20, temperature: 0 });
      assert.deepEqual(run.generated.ids, greedy);
      assert.deepEqual(run.ids, node.encode(text));
      assert.deepEqual(run.decoderInputIds, [node.config.decoderStartTokenId, ...greedy]);
      const ref = node.forwardSync(text, { decoderInputIds: run.decoderInputIds, attentions: true });
      const { numLayers: N, numHeads: H } = node.config;
      const Le = ref.ids.length, Ld = ref.decoderInputIds.length;
      let worst = 0;
      for (let l = 0; l < N; l++) {
        for (let hh = 0; hh < H; hh++) {
          await setAttrs(page, { layer: String(l), head: String(hh) });
          const m = await crossOf(page);
          assert.deepEqual([m.layer, m.head, m.rows, m.cols], [l, hh, Ld, Le]);
          worst = Math.max(worst, near(m.data, Array.from(ref.crossAttentions[l].data.subarray(hh * Ld * Le, (hh + 1) * Ld * Le)), 1e-6, `t5 cross layer ${l} head ${hh}`));
        }
      }
      console.log(`    t5 cross-attention maps (${N} layers × ${H} heads, [${Ld}, ${Le}]): max |Δ| vs Node ${worst.toExponential(2)}`);
      await page.evaluate(() => {
        const r = document.getElementById('ym-model-view').shadowRoot;
        const temp = r.querySelector('.al-mv-temp');
        temp.value = '1';
        temp.dispatchEvent(new Event('input'));
        r.querySelector('.al-mv-seed').value = '3';
        r.querySelector('.al-mv-max-new').value = '5';
      });
      await page.click(`${VIEW} .al-mv-generate`);
      await translated(page, { seed: 3, temperature: 1 });
      const seeded = await page.evaluate(() => document.getElementById('ym-model-view').modelRun.generated.ids);
      assert.deepEqual(seeded, await nodeTranslate(node, text, { maxNewTokens: 5, temperature: 1, seed: 3 }));
      assert.deepEqual(page.ownProblems(), []);
    } finally {
      node.dispose();
      await page.closeAll();
    }
  }, { timeout: 120000 });

  t.test('the element alone: a Marian folder src (worker) in Chinese with view="encoder", and the model property (a Model on the page\'s thread): its cross map and mean = Node', async (h) => {
    const node = await nodeModel(MARIAN);
    const page = await h.newPage({ viewport: { width: 1000, height: 800 } });
    const text = 'hello world';
    const done = (id) => page.waitForFunction((i) => { const v = document.getElementById(i); return v?.dataset.state === 'error' || (v?.modelRun?.generated?.state === 'done' && v.dataset.state === 'ready' && v.data); }, id, { timeout: 60000 });
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      await page.evaluate(async (x) => {
        await import('/web/components/define.js');
        const { init } = await import('/web/index.js');
        const lab = await init({ backend: 'wasm' });
        const get = async (n) => new Uint8Array(await (await fetch(`/tests/golden/models/marian/${n}`)).arrayBuffer());
        const model = await lab.loadModel({ config: await get('config.json'), weights: await get('model.safetensors'), tokenizer: await get('tokenizer.json') });
        const a = document.createElement('attention-lab-model-view');
        Object.assign(a, { id: 'src' });
        for (const [k, val] of Object.entries({ eager: '', lang: 'zh', view: 'encoder', src: '/tests/golden/models/marian/', text: x })) a.setAttribute(k, val);
        const b = document.createElement('attention-lab-model-view');
        b.id = 'prop';
        for (const [k, val] of Object.entries({ eager: '', layer: '1', text: x })) b.setAttribute(k, val);
        document.body.append(a, b);
        b.model = model;
      }, text);
      await done('src');
      await done('prop');
      const greedy = await nodeTranslate(node, text, { maxNewTokens: 20, temperature: 0 });
      const ref = node.forwardSync(text, { decoderInputIds: [node.config.decoderStartTokenId, ...greedy], attentions: true });
      const r = await page.evaluate(() => {
        const a = document.getElementById('src');
        const b = document.getElementById('prop');
        const err = (v) => (v.dataset.state === 'error' ? v.shadowRoot.querySelector('.al-error').textContent : null);
        return {
          errors: [err(a), err(b)],
          views: [...a.shadowRoot.querySelectorAll('[data-view]')].map((x) => [x.textContent, x.getAttribute('aria-pressed')]),
          translate: a.shadowRoot.querySelector('.al-mv-generate').textContent,
          enc: Array.from(a.data.data),
          gen: [a.modelRun.generated.ids, b.modelRun.generated.ids],
          cross: { ...b.crossMap, data: Array.from(b.crossMap.data) },
        };
      });
      await page.locator('#src').screenshot({ path: path.join(ARTIFACTS, 'model-view-marian-encoder-zh.png') });
      assert.deepEqual(r.errors, [null, null]);
      assert.deepEqual(r.views, [['编码器', 'true'], ['解码器', 'false'], ['交叉注意力', 'false']]);
      assert.equal(r.translate, '翻译');
      assert.deepEqual(r.gen, [greedy, greedy]);
      near(r.enc, ref.encoderAttentions.flatMap((x) => Array.from(x.data)), 1e-6, 'encoder view of the folder src');
      const Ld = ref.decoderInputIds.length, Le = ref.ids.length, H = node.config.numHeads;
      assert.deepEqual([r.cross.layer, r.cross.head, r.cross.rows, r.cross.cols], [1, 'mean', Ld, Le]);
      const a = ref.crossAttentions[1].data;
      near(r.cross.data, Array.from({ length: Ld * Le }, (_, q) => { let s = 0; for (let k = 0; k < H; k++) s += a[k * Ld * Le + q]; return s / H; }), 1e-6, 'mean cross map of the model property');
      assert.deepEqual(page.problems(), []);
    } finally {
      node.dispose();
      await page.closeAll();
    }
  }, { timeout: 120000 });

  t.test('tiny Marian: vocabulary entries that are markup show as text in the source, the translation, the map labels and the JSON export', async (h) => {
    const P = '<img src=x onerror=alert(1)>';
    const P2 = '<b onmouseover=alert(2)>u</b>';
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'al-xss-marian-'));
    for (const f of ['config.json', 'model.safetensors']) fs.copyFileSync(path.join(MARIAN, f), path.join(dir, f));
    // Source: ▁hund (15) renamed to P and matched as an added token; target: u (46), which the
    // model writes after this source, renamed to P2. Ids and weights unchanged.
    const tj = JSON.parse(fs.readFileSync(path.join(MARIAN, 'tokenizer.json'), 'utf8'));
    assert.deepEqual([tj.model.vocab[15][0], tj.model.vocab[46][0]], ['▁hund', 'u']);
    tj.model.vocab[15][0] = P;
    tj.model.vocab[46][0] = P2;
    tj.added_tokens.push({ id: 15, content: P, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tj));
    const node = await nodeModel(dir);
    const { page, requests } = await openYourModel(h, { csp: false, initScript: trap });
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    });
    try {
      // Chapter 5's cross-attention links here.
      const link = page.locator('#ch5 a.ch5-real-cross');
      await link.scrollIntoViewIfNeeded();
      assert.deepEqual([await link.textContent(), await link.getAttribute('href')], ['Cross-attention in a real translation model', '#ym-encdec']);
      await link.click();
      await page.waitForFunction(() => { const r = document.getElementById('ym-encdec').getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }, null, { timeout: 10000 });
      const text = `the cat ${P} sat on the mat`;
      const greedy = await nodeTranslate(node, text, { maxNewTokens: 20, temperature: 0 });
      assert.ok(node.encode(text).includes(15) && greedy.includes(46), 'precondition: both payloads are in the run');
      await chooseFolder(page, dir);
      await loadIt(page);
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun);
      await setSentence(page, text);
      await ranOn(page, text);
      await translated(page, { seed: 0, temperature: 0 });
      const shown = await page.evaluate(() => {
        const r = document.getElementById('ym-model-view').shadowRoot;
        const items = (sel) => [...r.querySelectorAll(sel)].map((x) => ({ text: x.textContent, title: x.title, children: x.children.length }));
        return { src: items('.al-mv-cross-src'), tgt: items('.al-mv-cross-tgt'), tok: items('.al-mv-tok-panel .al-mv-tok'), gen: items('.al-mv-gen-tok'), th: [...r.querySelectorAll('.al-mv-cross-map th')].map((x) => x.textContent) };
      });
      const k = node.encode(text).indexOf(15);
      assert.deepEqual(shown.src[k], { text: P, title: `id 15: ${P}`, children: 0 });
      assert.deepEqual(shown.tok[k], { text: P, title: `id 15: ${P}`, children: 0 });
      const j = greedy.indexOf(46) + 1;
      assert.deepEqual(shown.tgt[j], { text: P2, title: `id 46: ${P2}`, children: 0 });
      assert.deepEqual(shown.gen[j - 1], { text: P2, title: `id 46: ${P2}`, children: 0 });
      // The map's table fallback (opened) and the JSON export hold the strings as text.
      await page.evaluate(() => { const d = document.getElementById('ym-model-view').shadowRoot.querySelector('.al-mv-cross-map details'); if (d) d.open = true; });
      await page.waitForTimeout(100);
      const th = await page.evaluate(() => [...document.getElementById('ym-model-view').shadowRoot.querySelectorAll('.al-mv-cross-map th')].map((x) => x.textContent));
      assert.ok(th.some((x) => x.includes(P)) && th.some((x) => x.includes(P2)), `map labels: ${th.slice(0, 12).join(' | ')}`);
      const json = await page.evaluate(async () => JSON.parse(await (await document.getElementById('ym-model-view').export('json')).text()));
      assert.ok(json.keyTokens.includes(P) && json.tokens.includes(P2) && json.view === 'cross');
      await page.hover(`${VIEW} .al-mv-cross-tgt[data-i="${j}"]`);
      const r = await page.evaluate(injections);
      assert.deepEqual(r.xss, [], 'a script ran');
      assert.deepEqual(r.found, [], 'injected markup');
      assert.deepEqual(r.added, [], 'elements created from a token string');
      assert.deepEqual(dialogs, []);
      assert.deepEqual(requests.filter((u) => /\/x(\?|$)/.test(new URL(u.split(' ')[1]).pathname)), []);
      assert.deepEqual(page.ownProblems(), []);
    } finally {
      node.dispose();
      await page.closeAll();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, { timeout: 120000 });
}
