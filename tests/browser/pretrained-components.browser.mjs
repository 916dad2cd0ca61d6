// The components on the package's shipped models (issue 22, items 5 and 7): <attention-lab-heatmap
// model="en|zh"> draws lab.pretrained(lang)'s real heads, loaded lazily through the components'
// shared lab; the maps equal model.forwardSync of the same text in Node (the same library, the same
// files) within 1e-6; characters outside the vocabulary are [UNK]; labels are text; no request
// leaves the origin. Until data/models/<lang>/ holds the trained files, a stand-in is used
// (tests/browser/pretrained-fixture.mjs).
import assert from 'node:assert/strict';
import { init } from '../../web/node.js';
import { nodePretrained, routeStandIns } from './pretrained-fixture.mjs';
import { defaultMaxNew, endsGeneration } from '../../web/components/elements/next-token-element.js';

const PAGE = '/tests/browser/pages/pretrained.html';

function near(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  assert.ok(w <= tol, `${what}: max |diff| ${w}`);
}

const ready = (page, id) => page.waitForFunction((i) => {
  const v = document.getElementById(i);
  return v && (v.dataset.state === 'error' || (v.dataset.state === 'ready' && v.modelRun));
}, id, { timeout: 90000 });

async function noError(page, id) {
  const e = await page.evaluate((i) => { const v = document.getElementById(i); return v.dataset.state === 'error' ? v.shadowRoot.querySelector('.al-error').textContent : null; }, id);
  assert.equal(e, null, `#${id}`);
}

export default function (t) {
  t.test('heatmap model="en|zh": the shipped heads = model.forwardSync in Node (1e-6), [UNK] for unknown characters, same-origin only', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const en = await nodePretrained(lab, 'en');
    const zh = await nodePretrained(lab, 'zh');
    const page = await h.newPage({ viewport: { width: 1100, height: 900 } });
    const requests = [];
    page.on('request', (r) => requests.push(r.url()));
    try {
      const standIns = await routeStandIns(page, lab);
      if (standIns.length) console.log(`    (stand-in models for ${standIns.join(', ')}: data/models/ lacks their trained files)`);
      await page.goto(h.url(PAGE));
      for (const [id, model, text, layer] of [['hm-en', en, 'The cat sat on the mat. 中', 0], ['hm-zh', zh, '白日依山尽，黄河入海流。😀', 1], ['hm-default', en, 'The cat sat on the mat.', 0]]) {
        await ready(page, id);
        await noError(page, id);
        const ref = model.forwardSync(text, { attentions: true });
        const run = await page.evaluate((i) => { const v = document.getElementById(i); const r = v.modelRun; return { ...r, data: Array.from(r.attention.data), maps: v.maps.length, titles: v.maps.map((m) => m.el.querySelector('.al-hm-title')?.textContent), note: v.shadowRoot.querySelector('.al-hm-note').textContent }; }, id);
        const H = model.config.numHeads;
        assert.equal(run.layer, layer);
        assert.deepEqual(run.ids, ref.ids, `${id} ids`);
        assert.deepEqual(run.attention.shape, [H, ref.ids.length, ref.ids.length]);
        near(run.data, ref.attentions[layer].data, 1e-6, `${id} layer ${layer}`);
        assert.equal(run.maps, id === 'hm-default' ? 1 : H + 1, `${id}: one map per head and their average`);
        if (id === 'hm-en') {
          assert.equal(run.tokens.at(-1), '[UNK]');
          assert.deepEqual(run.unknown, ['中']);
          assert.match(run.note, /\[UNK\]: 中/);
          assert.equal(run.labels[3], '␣');
          assert.equal(run.titles[1], 'layer 0 · head 1');
        }
        if (id === 'hm-zh') {
          assert.deepEqual(run.unknown, ['😀']);
          assert.equal(run.labels[0], '白');
          assert.equal(run.titles[0], '第 1 层 · 第 0 头');
        }
      }
      // A clicked cell reads the drawn weight: cell (5, 2) of head 1 of the English map.
      // A locked cell reads the drawn weight: the cell (L − 1, 1) of head 1 of
      // the English map, locked from the keyboard (Ctrl+End: the last row and
      // column, Home: column 0, ArrowRight: a moved-to cell is locked), as
      // page-trained does (with four wrapping maps, mouse coordinates raced
      // the layout).
      const plot = await page.evaluateHandle(() => document.getElementById('hm-en').maps[1].el.querySelector('.al-hm-plot'));
      await plot.asElement().focus();
      for (const key of ['Control+End', 'Home', 'ArrowRight']) await page.keyboard.press(key);
      const clicked = await page.evaluate(() => { const m = document.getElementById('hm-en').maps[1]; return { locked: m.locked, value: m.locked && m.valueAt(m.locked.i, m.locked.j), readout: m.readout.textContent }; });
      const refEn = en.forwardSync('The cat sat on the mat. 中', { attentions: true }).attentions[0];
      const L = refEn.shape[2];
      assert.deepEqual(clicked.locked, { i: L - 1, j: 1 });
      assert.ok(Math.abs(clicked.value - refEn.data[(1 * L + L - 1) * L + 1]) <= 1e-6, `locked ${clicked.value}`);
      assert.match(clicked.readout, new RegExp(`query ${L - 1} .* → key 1 `));
      // Markup in the text is text: labels and the note, never elements.
      let dialogs = 0;
      page.on('dialog', (d) => { dialogs++; return d.dismiss(); });
      const xss = '<img src=x onerror=alert(1)>';
      await page.evaluate((x) => document.getElementById('hm-en').setAttribute('text', x), xss);
      await page.waitForFunction((x) => document.getElementById('hm-en').modelRun?.text === x && document.getElementById('hm-en').dataset.state === 'ready', xss);
      const x = await page.evaluate(() => { const v = document.getElementById('hm-en'); return { imgs: v.shadowRoot.querySelectorAll('img').length + document.querySelectorAll('img').length, labels: v.modelRun.labels.map((l) => (l === '[UNK]' ? '?' : l)).join('') }; });
      assert.equal(x.imgs, 0);
      assert.equal(x.labels, [...xss].map((c) => (c === ' ' ? '␣' : c)).join(''), 'one label per character, as typed (every one is in the English vocabulary)');
      assert.equal(dialogs, 0);
      const models = requests.filter((u) => u.includes('/data/models/'));
      assert.ok(models.some((u) => u.includes('/data/models/zh/model.safetensors')), 'the zh weights were fetched');
      assert.ok(requests.every((u) => new URL(u).hostname === '127.0.0.1' || /^(data|blob):/.test(u)), 'no request leaves the origin');
      assert.deepEqual(page.problems(), []);
    } finally {
      en.dispose();
      zh.dispose();
      lab.dispose();
      await page.closeAll();
    }
  }, { timeout: 240000 });

  t.test('next-token model="en|zh": the list = model.nextTokens in Node, the temperature slider, a seeded Generate streams model.generate\'s characters, Stop, accessible names (en, zh)', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const en = await nodePretrained(lab, 'en');
    const zh = await nodePretrained(lab, 'zh');
    const page = await h.newPage({ viewport: { width: 1100, height: 1400 } });
    const listReady = (id, text, T) => page.waitForFunction(([i, x, tt]) => {
      const v = document.getElementById(i);
      return v && (v.dataset.state === 'error' || (v.dataset.state === 'ready' && v.nextRun && v.nextRun.text === x && Math.abs(v.nextRun.temperature - tt) < 1e-9));
    }, [id, text, T], { timeout: 90000 });
    async function sameList(id, model, text, T) {
      await listReady(id, text, T);
      await noError(page, id);
      const got = await page.evaluate((i) => document.getElementById(i).nextRun.list, id);
      const want = await model.nextTokens(text, { k: 10, temperature: T });
      assert.deepEqual(got.map((x) => x.id), want.map((x) => x.id), `${id}: ids after ${JSON.stringify(text)} at T ${T}`);
      near(got.map((x) => x.prob), want.map((x) => x.prob), 1e-6, `${id}: probabilities`);
      const shown = await page.evaluate((i) => [...document.getElementById(i).shadowRoot.querySelectorAll('.al-nt-list li')].map((li) => li.querySelector('.al-nt-tok').textContent), id);
      assert.equal(shown.length, 10);
    }
    async function nodeGeneration(model, lang, prompt, { temperature, seed, maxNewTokens }) {
      const ids = [];
      for await (const x of model.generate(prompt, { maxNewTokens, temperature, seed })) {
        ids.push(x.id);
        if (endsGeneration(lang, x.token, ids.length)) break;
      }
      return ids;
    }
    try {
      await routeStandIns(page, lab);
      await page.goto(h.url(PAGE));
      const nt = page.locator('#nt-en');
      await sameList('nt-en', en, 'The cat ', 0.8);
      // Accessible names, and the keyboard: the slider one step right (0.05), Enter in the prompt generates.
      await nt.getByRole('textbox', { name: 'Prompt' }).waitFor();
      await nt.getByRole('spinbutton', { name: 'Seed' }).waitFor();
      await nt.getByRole('button', { name: 'Stop' }).waitFor();
      const slider = nt.getByRole('slider', { name: 'Temperature' });
      await slider.focus();
      await slider.press('ArrowRight');
      await sameList('nt-en', en, 'The cat ', 0.85);
      await nt.getByRole('textbox', { name: 'Prompt' }).fill('The dog');
      await sameList('nt-en', en, 'The dog', 0.85);
      await nt.getByRole('textbox', { name: 'Prompt' }).press('Enter');
      await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.getElementById('nt-en').generation?.state), null, { timeout: 90000 });
      const gEn = await page.evaluate(() => { const v = document.getElementById('nt-en'); const g = v.generation; return { ...g, attention: { ...g.attention, data: Array.from(g.attention.data) }, out: v.shadowRoot.querySelector('.al-nt-out').textContent }; });
      assert.equal(gEn.state, 'done');
      assert.equal(gEn.seed, 5);
      const wantEn = await nodeGeneration(en, 'en', 'The dog', { temperature: 0.85, seed: 5, maxNewTokens: defaultMaxNew('en', 'The dog') });
      assert.deepEqual(gEn.ids, wantEn, 'seeded Generate = model.generate in Node');
      assert.equal(gEn.out, 'The dog' + en.decode(wantEn));
      // The newest character's attention: the last row of each head of the last layer, in Node.
      const all = [...en.encode('The dog'), ...wantEn];
      const ref = en.forwardSync(all, { attentions: true }).attentions.at(-1);
      const [, H, L] = ref.shape;
      const rows = [];
      for (let hh = 0; hh < H; hh++) rows.push(...ref.data.subarray((hh * L + L - 1) * L, (hh * L + L) * L));
      near(gEn.attention.data, rows, 1e-6, 'newest character attention');

      // 中文: a poem from its first character, the labels, Stop.
      const nz = page.locator('#nt-zh');
      await sameList('nt-zh', zh, '白', 1);
      assert.match(await page.evaluate(() => document.getElementById('nt-zh').shadowRoot.querySelector('.al-nt-list').getAttribute('aria-labelledby')), /list$/);
      await nz.getByRole('button', { name: '生成' }).click();
      await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.getElementById('nt-zh').generation?.state), null, { timeout: 90000 });
      const gZh = await page.evaluate(() => document.getElementById('nt-zh').generation);
      assert.equal(gZh.state, 'done');
      const wantZh = await nodeGeneration(zh, 'zh', '白', { temperature: 1, seed: 3, maxNewTokens: 23 });
      assert.deepEqual(gZh.ids, wantZh);
      assert.ok(gZh.ids.length <= 23);
      await nz.getByRole('slider', { name: '温度' }).waitFor();
      await nz.getByRole('textbox', { name: '提示' }).waitFor();
      await page.evaluate(() => { const v = document.getElementById('nt-zh'); v.generate(); });
      await page.waitForFunction(() => (document.getElementById('nt-zh').generation?.ids.length ?? 0) >= 2 || document.getElementById('nt-zh').generation?.state !== 'running', null, { timeout: 60000 });
      // The shipped poet may end its poem (the newline, its eos) before the
      // click lands: then the button is disabled and there is nothing to stop.
      await nz.getByRole('button', { name: '停止' }).click({ timeout: 5000 }).catch(() => {});
      await page.waitForFunction(() => document.getElementById('nt-zh').generation.state !== 'running', null, { timeout: 60000 });
      const stopped = await page.evaluate(() => document.getElementById('nt-zh').generation);
      assert.deepEqual(stopped.ids, wantZh.slice(0, stopped.ids.length), 'what was written before Stop is the seeded sequence');
      if (stopped.ids.length < wantZh.length) assert.equal(stopped.state, 'stopped');
      assert.match(await page.evaluate(() => document.getElementById('nt-zh').shadowRoot.querySelector('.al-status').textContent), /停止|已生成/);
      assert.deepEqual(page.problems(), []);
    } finally {
      en.dispose();
      zh.dispose();
      lab.dispose();
      await page.closeAll();
    }
  }, { timeout: 240000 });
}
