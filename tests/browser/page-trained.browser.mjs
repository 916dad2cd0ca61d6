// The tutorial on the shipped models (issue 22, item 4 for chapters 1 and 4, item 5): chapter 1's
// "learned" X is the model's character embeddings (rows of wte; a locked weight = Node's
// lab.selfAttention over them); chapter 4's
// "learned" weights draw every head of lab.pretrained(page language) on the reader's sentence,
// titled by the roles model.headRoles measures; the maps and a clicked value equal Node's
// model.forwardSync; "random" brings today's view back; the trained-model chapter's next-token
// list equals Node's model.nextTokens; in EN and 中文. The models load lazily: with every chapter
// on its random view (the default is learned: page-learned.browser.mjs), nothing under
// data/models/ is requested at all while no chapter asks. Stand-ins while data/models/<lang>/
// lacks trained files (pretrained-fixture.mjs).
import assert from 'node:assert/strict';
import path from 'node:path';
import { init } from '../../web/node.js';
import { ARTIFACTS } from './harness.mjs';
import { nodePretrained, routeStandIns } from './pretrained-fixture.mjs';
import { headRoleLabels, embeddingRows } from '../../web/page/lib/learned.js';
import { SAMPLE_PROMPT } from '../../web/components/lib/pretrained-model.js';
import { RANDOM_WEIGHTS } from '../../web/page/lib/state.js';

const RANDOM_HASH = Object.entries(RANDOM_WEIGHTS).map(([k, v]) => `${k}=${v}`).join('&');

const settle = (page) => page.evaluate(() => window.__attentionLab.settled());

function near(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  assert.ok(w <= tol, `${what}: max |diff| ${w}`);
}

async function learnedMaps(page, n) {
  await page.waitForFunction((k) => document.querySelectorAll('#ch4-learned-grid .learned-map').length === k && document.getElementById('ch4').dataset.state === 'ok' && !document.querySelector('.ch4-learned-status')?.textContent.includes('…'), n, { timeout: 90000 });
  await settle(page);
  return page.evaluate(() => [...document.querySelectorAll('#ch4-learned-grid .learned-map')].map((el) => ({
    layer: Number(el.dataset.layer), head: Number(el.dataset.head), role: el.dataset.role, title: el.querySelector('.al-hm-title').textContent,
  })));
}

async function checkLearned(page, model, text, lang) {
  const { numLayers: N, numHeads: H } = model.config;
  const shown = await learnedMaps(page, N * H);
  const ref = model.forwardSync(text, { attentions: true });
  const L = ref.ids.length;
  const labels = headRoleLabels(model.headRoles(text));
  for (const m of shown) {
    const k = m.layer * H + m.head;
    assert.equal(m.role, labels[k].role, `${lang} L${m.layer} H${m.head} role`);
    if (m.role !== 'spread') assert.ok(m.title.includes(labels[k].score.toFixed(2)), `${lang} title ${m.title}`);
  }
  // Lock the cell (L − 1, 1) of the last head from the keyboard: Ctrl+End (last row, last column),
  // Home (column 0), ArrowRight (a moved-to cell is locked).
  const k = N * H - 1;
  const map = page.locator('#ch4-learned-grid .learned-map').nth(k);
  await map.scrollIntoViewIfNeeded();
  const cell = { i: L - 1, j: 1 };
  const plot = map.locator('.al-hm-plot');
  await plot.focus();
  for (const key of ['Control+End', 'Home', 'ArrowRight']) await plot.press(key);
  const readout = await map.locator('.al-hm-readout').textContent();
  assert.match(readout, /locked|已锁定/);
  assert.match(readout, new RegExp(` ${cell.i} .*→ .* ${cell.j} `), readout);
  const want = ref.attentions[N - 1].data[((H - 1) * L + cell.i) * L + cell.j];
  // The read-out writes small weights as 7.65e−17 (a minus sign, U+2212).
  const m = readout.match(/[:：] ?([0-9.eE+\-\u2212]+)/);
  assert.ok(m, readout);
  const got = Number(m[1].replace(/\u2212/g, '-'));
  assert.ok(Math.abs(got - want) <= 5e-5 * Math.max(1, Math.abs(want)), `${lang}: clicked ${m[1]} vs Node ${want}`);
  return { L };
}

export default function (t) {
  t.test('chapter 1 learned = Node selfAttention over wte rows; chapter 4 learned = the shipped heads (= Node forwardSync, roles = headRoles), random keeps today\'s view; trained-model chapter = Node nextTokens; EN and 中文; models load lazily', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const en = await nodePretrained(lab, 'en');
    const zh = await nodePretrained(lab, 'zh');
    const page = await h.newPage({ viewport: { width: 1280, height: 900 } });
    const modelRequests = [];
    page.on('request', (r) => { if (r.url().includes('/data/models/')) modelRequests.push({ url: r.url(), at: Date.now() }); });
    try {
      await routeStandIns(page, lab);
      await page.goto(h.url(`/web/page/#lang=en&${RANDOM_HASH}`));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await settle(page);
      // Lazy: the page on random weights (the trained-model chapter below the fold) asks for no model file.
      assert.deepEqual(modelRequests.map((r) => r.url), [], 'no model file before a chapter asks');
      assert.equal(await page.getAttribute('#ch4 [data-weights="random"]', 'aria-pressed'), 'true');

      // Learned weights, English.
      await page.click('#ch4 [data-weights="learned"]');
      const text = 'attention is all you need';
      await checkLearned(page, en, text, 'en');
      assert.ok(modelRequests.some((r) => r.url.includes('/data/models/en/model.safetensors')));
      assert.ok(await page.isHidden('#ch4 .ch4-random'));
      assert.match(await page.textContent('#ch4 .ch4-learned-intro'), /character-level GPT-2/);
      assert.ok((await page.locator('#ch4 table.ch4-roles tbody tr').count()) === en.config.numLayers * en.config.numHeads + 1);
      await page.locator('#ch4').screenshot({ path: path.join(ARTIFACTS, 'page-trained-ch4-en.png') });

      // Chapter 1 on the learned character embeddings: a keyboard-locked weight = Node's
      // lab.selfAttention over the same rows of wte.
      await page.click('#ch1 [data-weights="learned"]');
      await page.waitForFunction(() => { const l = document.querySelector('#ch1 .ch1-learned'); return l && !l.hidden && !l.textContent.includes('…') && document.getElementById('ch1').dataset.state === 'ok'; }, null, { timeout: 60000 });
      await settle(page);
      {
        const ids = en.encode(text);
        const E = en.config.embedDim;
        const x = embeddingRows(lab, en, ids);
        const L = ids.length;
        const want = (await lab.selfAttention({ data: x, shape: [L, E] }, { scale: 1 / Math.sqrt(E) })).weights.data;
        const wmap = page.locator('#ch1 figure.al-hm').nth(1);
        await wmap.scrollIntoViewIfNeeded();
        const plot = wmap.locator('.al-hm-plot');
        await plot.focus();
        for (const key of ['Control+End', 'Home', 'ArrowRight']) await plot.press(key);
        const ro = await wmap.locator('.al-hm-readout').textContent();
        assert.match(ro, new RegExp(` ${L - 1} .*→ .* 1 .*locked`), ro);
        const v = Number(ro.match(/[:：] ?([0-9.e-]+)/)[1]);
        assert.ok(Math.abs(v - want[(L - 1) * L + 1]) <= 5e-5, `ch1 learned: ${v} vs Node ${want[(L - 1) * L + 1]}`);
        assert.ok(await page.isHidden('#ch1-d'));
        assert.match(await page.textContent('#ch1 .ch1-p2'), /one token per character/);
      }

      // The trained-model chapter: the element loads when scrolled to.
      await page.locator('#trained-model').scrollIntoViewIfNeeded();
      await page.waitForFunction((p) => { const v = document.getElementById('tm-next'); return v && v.dataset.state === 'ready' && v.nextRun?.text === p; }, SAMPLE_PROMPT.en, { timeout: 90000 });
      const listEn = await page.evaluate(() => document.getElementById('tm-next').nextRun.list);
      assert.deepEqual(listEn.map((x) => x.id), (await en.nextTokens(SAMPLE_PROMPT.en, { k: 10 })).map((x) => x.id));
      await page.locator('#trained-model').screenshot({ path: path.join(ARTIFACTS, 'page-trained-model-en.png') });

      // 中文: the Tang-poem model's heads on the same sentence, a poem line, the next characters after 白.
      await page.evaluate(() => window.__attentionLab.store.set({ lang: 'zh', text: '白日依山尽，黄河入海流。' }));
      await settle(page);
      await checkLearned(page, zh, '白日依山尽，黄河入海流。', 'zh');
      assert.match(await page.textContent('#ch4 .ch4-learned-intro'), /字符级 GPT-2/);
      assert.equal(await page.textContent('#ch4 [data-weights="random"]'), '随机（带种子）');
      assert.match(await page.textContent('#ch4 table.ch4-roles thead'), /上一句同一位置/);
      await page.waitForFunction((p) => { const v = document.getElementById('tm-next'); return v.dataset.state === 'ready' && v.nextRun?.model === 'zh' && v.nextRun.text === p; }, SAMPLE_PROMPT.zh, { timeout: 90000 });
      const listZh = await page.evaluate(() => document.getElementById('tm-next').nextRun.list);
      assert.deepEqual(listZh.map((x) => x.id), (await zh.nextTokens(SAMPLE_PROMPT.zh, { k: 10 })).map((x) => x.id));
      assert.equal(await page.textContent('#tm-next >> .al-nt-generate'), '生成');
      await page.locator('#ch4').screenshot({ path: path.join(ARTIFACTS, 'page-trained-ch4-zh.png') });

      // Random weights: today's view again (H = 8 seeded heads).
      await page.click('#ch4 [data-weights="random"]');
      await settle(page);
      assert.equal(await page.locator('#ch4 .head-map').count(), 8);
      assert.ok(await page.isVisible('#ch4 .ch4-random'));
      assert.ok(await page.isHidden('#ch4 .ch4-learned'));
      assert.match(await page.evaluate(() => location.hash), /lang=zh/);
      assert.deepEqual(page.problems(), []);
    } finally {
      en.dispose();
      zh.dispose();
      lab.dispose();
      await page.closeAll();
    }
  }, { timeout: 300000 });
}
