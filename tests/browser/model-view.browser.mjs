// <attention-lab-model-view> with generated attention arrays (property) and
// with files written by tests/reference/make_weights.py (src): the layers ×
// heads thumbnails, the head view's lines, keyboard use, the table fallback,
// exports and accessible names, under the strict CSP.
import assert from 'node:assert/strict';

const PAGE = '/tests/browser/pages/model-view.html';

function ready(page, sel, timeout = 30000) {
  return page.waitForFunction((s) => ['ready', 'error'].includes(document.querySelector(s)?.dataset.state), sel, { timeout });
}

// Generated in the page: softmax rows of seeded scores, [layers, H, L, L].
const SET_ARRAYS = `(() => {
  const layers = 3, H = 4, L = 5;
  let s = 7;
  const rnd = () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 2 ** 32; };
  const data = new Float32Array(layers * H * L * L);
  for (let r = 0; r < layers * H * L; r++) {
    const row = Array.from({ length: L }, () => Math.exp(4 * rnd()));
    const sum = row.reduce((a, b) => a + b, 0);
    row.forEach((v, j) => { data[r * L + j] = v / sum; });
  }
  const el = document.getElementById('prop');
  el.tokens = ['we', 'like', 'small', 'test', 'arrays'];
  el.attention = { data, shape: [layers, H, L, L] };
  return Array.from(data);
})()`;

export default function (t) {
  t.test('model view: layers × heads thumbnails, keyboard, enlarge, table, export', async (h) => {
    const page = await h.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(h.url(PAGE));
      await ready(page, '#prop');
      await page.evaluate(SET_ARRAYS);
      await page.evaluate(() => document.getElementById('prop').updateComplete);
      const r = await page.evaluate(() => {
        const root = document.getElementById('prop').shadowRoot;
        const thumbs = [...root.querySelectorAll('.al-mv-thumb')];
        return {
          n: thumbs.length,
          labels: thumbs.slice(0, 2).map((b) => b.getAttribute('aria-label')),
          unlabeled: thumbs.filter((b) => !b.getAttribute('aria-label')).length,
          tabbable: thumbs.filter((b) => b.tabIndex === 0).length,
          grid: root.querySelector('[role=grid]').getAttribute('aria-label'),
          canvases: thumbs.every((b) => b.querySelector('canvas')?.width === 5),
          state: document.getElementById('prop').dataset.state,
        };
      });
      assert.equal(r.state, 'ready');
      assert.equal(r.n, 12, '3 layers × 4 heads');
      assert.match(r.labels[0], /^Layer 0, head 0: strongest weight 0\.\d+ from “\w+” to “\w+”/);
      assert.match(r.labels[1], /^Layer 0, head 1:/);
      assert.equal(r.unlabeled, 0);
      assert.equal(r.tabbable, 1, 'one roving tab stop');
      assert.equal(r.grid, 'Attention of 3 layers × 4 heads; arrow keys move, Enter enlarges');
      assert.ok(r.canvases);
      // Keyboard: focus the grid's tab stop, move right and down, Enter enlarges, Escape returns.
      await page.evaluate(() => document.getElementById('prop').shadowRoot.querySelector('.al-mv-thumb[tabindex="0"]').focus());
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowDown');
      const focused = await page.evaluate(() => { const a = document.getElementById('prop').shadowRoot.activeElement; return [a.dataset.layer, a.dataset.head]; });
      assert.deepEqual(focused, ['1', '1']);
      await page.keyboard.press('Enter');
      const big = await page.evaluate(() => {
        const root = document.getElementById('prop').shadowRoot;
        return { title: root.querySelector('.al-mv-big .al-hm-title')?.textContent, gridHidden: root.querySelector('.al-mv-grid').hidden, focus: root.activeElement?.className };
      });
      assert.equal(big.title, 'Layer 1, head 1');
      assert.equal(big.gridHidden, true);
      assert.match(big.focus, /al-hm-plot/);
      await page.keyboard.press('Escape');
      const back = await page.evaluate(() => { const root = document.getElementById('prop').shadowRoot; return [root.querySelector('.al-mv-grid').hidden, root.activeElement?.dataset.layer, root.activeElement?.dataset.head]; });
      assert.deepEqual(back, [false, '1', '1']);
      // Table fallback: one row per layer, one cell per head.
      const table = await page.evaluate(() => {
        const root = document.getElementById('prop').shadowRoot;
        root.querySelector('.al-mv-table').open = true;
        return new Promise((res) => setTimeout(() => res([...root.querySelectorAll('.al-mv-table tbody tr')].map((tr) => tr.cells.length)), 50));
      });
      assert.deepEqual(table, [5, 5, 5]);
      // JSON export carries the arrays and tokens.
      const json = await page.evaluate(async () => JSON.parse(await (await document.getElementById('prop').export('json')).text()));
      assert.deepEqual(json.shape, [3, 4, 5, 5]);
      assert.deepEqual(json.tokens, ['we', 'like', 'small', 'test', 'arrays']);
      const png = await page.evaluate(async () => (await document.getElementById('prop').export('png')).type);
      assert.equal(png, 'image/png');
      // Bad input throws and leaves the view as it was.
      const bad = await page.evaluate(() => { try { document.getElementById('prop').attention = { data: new Float32Array(7), shape: [2, 2, 2] }; return 'no error'; } catch (e) { return `${e.name}: ${e.message}`; } });
      assert.match(bad, /^RangeError: attention: data has 7 values but shape \[2,2,2\] needs 8/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('head view: one line per head and pair above min-weight, head colours, focus shows one token', async (h) => {
    const page = await h.newPage();
    try {
      await page.goto(h.url(PAGE));
      await ready(page, '#prop');
      const data = await page.evaluate(SET_ARRAYS);
      await page.evaluate(() => {
        const el = document.getElementById('prop');
        el.setAttribute('min-weight', '0.05');
        el.setAttribute('heads', '0,2');
        el.setAttribute('layer', '1');
        el.setAttribute('view', 'head');
        return el.updateComplete;
      });
      let expected = 0;
      for (const hh of [0, 2]) for (let k = 0; k < 25; k++) if (data[(1 * 4 + hh) * 25 + k] >= 0.05) expected++;
      const r = await page.evaluate(() => {
        const root = document.getElementById('prop').shadowRoot;
        const lines = [...root.querySelectorAll('.al-hv line')];
        return {
          lines: lines.length,
          heads: [...new Set(lines.map((l) => l.dataset.head))].sort(),
          colours: [...new Set(lines.map((l) => l.getAttribute('stroke')))].length,
          tokens: [...root.querySelectorAll('.al-hv-left text')].map((x) => x.textContent),
          tokenLabels: [...root.querySelectorAll('.al-hv-left')].every((g) => /^Token \d+ “\w+”: Head 0 → “\w+” 0\.\d+; Head 2 → /.test(g.getAttribute('aria-label'))),
          pressed: [...root.querySelectorAll('.al-mv-head-btn')].map((b) => b.getAttribute('aria-pressed')),
          layer: root.querySelector('select').value,
          svgLabel: root.querySelector('.al-hv').getAttribute('aria-label'),
        };
      });
      assert.equal(r.lines, expected);
      assert.ok(expected > 10);
      assert.deepEqual(r.heads, ['0', '2']);
      assert.equal(r.colours, 2);
      assert.deepEqual(r.tokens, ['we', 'like', 'small', 'test', 'arrays']);
      assert.ok(r.tokenLabels);
      assert.deepEqual(r.pressed, ['true', 'false', 'true', 'false']);
      assert.equal(r.layer, '1');
      assert.match(r.svgLabel, /^Head view of layer 1:/);
      // Keyboard: focus the first token, ArrowDown twice → only token 2's lines remain.
      await page.evaluate(() => document.getElementById('prop').shadowRoot.querySelector('.al-hv-left').focus());
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      const shown = await page.evaluate(() => [...document.getElementById('prop').shadowRoot.querySelectorAll('.al-hv line:not(.al-hv-dim)')].map((l) => l.dataset.i));
      assert.ok(shown.length > 0 && shown.every((i) => i === '2'));
      const readout = await page.evaluate(() => document.getElementById('prop').shadowRoot.querySelector('.al-hv-wrap output').textContent);
      assert.match(readout, /^Token 2 “small”/);
      await page.keyboard.press('Escape');
      assert.equal(await page.evaluate(() => document.getElementById('prop').shadowRoot.querySelectorAll('.al-hv line.al-hv-dim').length), 0);
      // Clicking a head button toggles it.
      await page.evaluate(() => document.getElementById('prop').shadowRoot.querySelector('.al-mv-head-btn[data-head="1"]').click());
      await page.evaluate(() => document.getElementById('prop').updateComplete);
      assert.equal(await page.evaluate(() => document.getElementById('prop').getAttribute('heads')), '0,1,2');
      const svg = await page.evaluate(async () => (await document.getElementById('prop').export('svg')).text());
      assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('src: per-layer safetensors (tokens from metadata) and a [layers,H,L,L] .npy, in Chinese', async (h) => {
    const page = await h.newPage();
    try {
      await page.goto(h.url(PAGE));
      await ready(page, '#st');
      await ready(page, '#npy');
      const r = await page.evaluate(() => {
        const st = document.getElementById('st');
        const npy = document.getElementById('npy');
        return {
          states: [st.dataset.state, npy.dataset.state],
          st: [st.data.layers, st.data.heads, st.data.lq],
          stTokens: [...st.shadowRoot.querySelectorAll('.al-hv-left text')].map((x) => x.textContent),
          stLines: st.shadowRoot.querySelectorAll('.al-hv line').length,
          npy: [npy.data.layers, npy.data.heads, npy.data.lq],
          npyThumbs: npy.shadowRoot.querySelectorAll('.al-mv-thumb').length,
          npyLabel: npy.shadowRoot.querySelector('.al-mv-thumb').getAttribute('aria-label'),
          npyViews: [...npy.shadowRoot.querySelectorAll('[data-view]')].map((b) => b.textContent),
          sameData: st.data.data.every((v, i) => v === npy.data.data[i]),
        };
      });
      assert.deepEqual(r.states, ['ready', 'ready']);
      assert.deepEqual(r.st, [2, 3, 6]);
      assert.deepEqual(r.stTokens, ['the', 'cat', 'sat', 'on', 'a', 'mat']);
      assert.ok(r.stLines > 0);
      assert.deepEqual(r.npy, [2, 3, 6]);
      assert.equal(r.npyThumbs, 6);
      assert.match(r.npyLabel, /^第 0 层第 0 头：最大权重/);
      assert.deepEqual(r.npyViews, ['模型视图', '头视图']);
      assert.ok(r.sameData, 'the per-layer safetensors and the .npy hold the same arrays');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
