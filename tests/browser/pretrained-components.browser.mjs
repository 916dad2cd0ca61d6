// The components on the package's shipped models (issue 22, items 5 and 7): <attention-lab-heatmap
// model="en|zh"> draws lab.pretrained(lang)'s real heads, loaded lazily through the components'
// shared lab; the maps equal model.forwardSync of the same text in Node (the same library, the same
// files) within 1e-6; characters outside the vocabulary are [UNK]; labels are text; no request
// leaves the origin. Until data/models/<lang>/ holds the trained files, a stand-in is used
// (tests/browser/pretrained-fixture.mjs).
import assert from 'node:assert/strict';
import { init } from '../../web/node.js';
import { nodePretrained, routeStandIns } from './pretrained-fixture.mjs';

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
      const box = await page.evaluate(() => {
        const m = document.getElementById('hm-en').maps[1];
        m.el.scrollIntoView();
        const r = m.overlay.getBoundingClientRect();
        const g = m.geom;
        return { x: r.left + g.left + (2 + 0.5) * g.cellW, y: r.top + g.top + (5 + 0.5) * g.cellH };
      });
      await page.mouse.click(box.x, box.y);
      const clicked = await page.evaluate(() => { const m = document.getElementById('hm-en').maps[1]; return { locked: m.locked, value: m.locked && m.valueAt(m.locked.i, m.locked.j), readout: m.readout.textContent }; });
      assert.deepEqual(clicked.locked, { i: 5, j: 2 });
      const refEn = en.forwardSync('The cat sat on the mat. 中', { attentions: true }).attentions[0];
      const L = refEn.shape[2];
      assert.ok(Math.abs(clicked.value - refEn.data[(1 * L + 5) * L + 2]) <= 1e-6, `clicked ${clicked.value}`);
      assert.match(clicked.readout, /query 5 “a” → key 2 “e”: /);
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
}
