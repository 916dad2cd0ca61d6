// The web components (attention-lab/components) on plain HTML pages that load
// nothing but the package's element script, under the strict CSP.
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS } from './harness.mjs';

const PLAIN = '/tests/browser/pages/components-plain.html';
const LAZY = '/tests/browser/pages/components-lazy.html';

async function open(h, url, opts) {
  const page = await h.newPage(opts);
  await page.goto(h.url(url));
  return page;
}

/** Waits until the element's data-state is ready (or error). */
function ready(page, sel, timeout = 30000) {
  return page.waitForFunction((s) => ['ready', 'error'].includes(document.querySelector(s)?.dataset.state), sel, { timeout });
}

export default function (t) {
  t.test('importing the entry in Node has no side effects and does not throw', async () => {
    const before = new Set(Object.getOwnPropertyNames(globalThis));
    const mod = await import('../../web/components/index.js');
    const added = Object.getOwnPropertyNames(globalThis).filter((k) => !before.has(k));
    assert.deepEqual(added, []);
    assert.equal(mod.defineAll(), false);
    assert.deepEqual(Object.keys(mod.ELEMENTS).sort(), ['attention-lab-explorer', 'attention-lab-heatmap', 'attention-lab-lm-trainer', 'attention-lab-model-view', 'attention-lab-next-token', 'attention-lab-positional-encoding', 'attention-lab-shape-flow', 'attention-lab-trainer']);
    assert.equal(typeof mod.AttentionLabHeatmap, 'function');
    assert.equal(typeof mod.AttentionLabLmTrainer, 'function');
  });

  t.test('each component works on a plain HTML page with only the element script', async (h) => {
    const page = await open(h, PLAIN, { viewport: { width: 1100, height: 900 } });
    try {
      for (const id of ['explorer', 'heatmap', 'flow', 'pe']) await ready(page, `#${id}`);
      const r = await page.evaluate(() => {
        const q = (id, sel) => [...document.getElementById(id).shadowRoot.querySelectorAll(sel)];
        return {
          states: ['explorer', 'heatmap', 'flow', 'pe'].map((id) => document.getElementById(id).dataset.state),
          explorerMaps: q('explorer', '.al-hm').length,
          explorerTokens: q('explorer', '.al-token').map((e) => e.textContent),
          explorerSteps: q('explorer', '.al-flow-steps button').map((b) => b.textContent),
          heatmapMaps: q('heatmap', '.al-hm').length,
          flowSteps: q('flow', '.al-flow-steps [data-step]').map((b) => b.dataset.step),
          flowSplit: q('flow', '.al-flow-steps [data-step="split_heads"] .al-step-shape')[0].textContent,
          peCanvases: q('pe', 'canvas').length,
          scripts: [...document.scripts].map((s) => s.getAttribute('src')),
          wasm: performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).map((e) => new URL(e.name).pathname),
          stylesheets: document.styleSheets.length,
        };
      });
      assert.deepEqual(r.states, ['ready', 'ready', 'ready', 'ready']);
      assert.equal(r.explorerMaps, 5, '4 heads + average');
      assert.deepEqual(r.explorerTokens, ['the', 'cat', 'sat', 'on', 'the', 'mat']);
      assert.match(r.explorerSteps.find((s) => s.includes('split')), /\[1,4,6,16\]/);
      assert.equal(r.heatmapMaps, 3, '2 heads + average');
      assert.deepEqual(r.flowSteps, ['input', 'linear_qkv', 'split_heads', 'scores', 'softmax', 'weighted_sum', 'merge_heads', 'output_linear', 'dropout', 'residual', 'layer_norm']);
      assert.equal(r.flowSplit, '[2,8,5,64]');
      assert.ok(r.peCanvases >= 3);
      assert.deepEqual(r.scripts, ['/web/components/define.js']);
      assert.equal(r.stylesheets, 0, 'the page has no stylesheet of its own');
      // The test server sends COOP/COEP, so the shared lab's threads: 'auto' picks the threaded build.
      assert.equal(r.wasm.length, 1, `one shared wasm instance: ${r.wasm}`);
      assert.match(r.wasm[0], /^\/web\/dist\/attention_lab_(simd|threads)\.wasm$/);

      // The causal heatmap: its upper triangle is viridis zero.
      const px = await page.evaluate(() => {
        const c = document.getElementById('heatmap').shadowRoot.querySelector('canvas.al-hm-canvas');
        const d = c.dataset;
        const ctx = c.getContext('2d');
        const out = [];
        for (let i = 0; i < 5; i++) for (let j = i + 1; j < 5; j++) out.push(Array.from(ctx.getImageData(Math.floor(Number(d.plotX) + (j + 0.5) * Number(d.cellW)), Math.floor(Number(d.plotY) + (i + 0.5) * Number(d.cellH)), 1, 1).data.slice(0, 3)));
        return out;
      });
      assert.ok(px.every((p) => Math.abs(p[0] - 68) <= 2 && Math.abs(p[1] - 1) <= 2 && Math.abs(p[2] - 84) <= 2), JSON.stringify(px));

      // Shape flow: stepping changes the shape label.
      const flow = page.locator('#flow');
      await flow.locator('.al-flow-next').click();
      await flow.locator('.al-flow-next').click();
      await page.waitForFunction(() => {
        const el = document.getElementById('flow');
        return el.shadowRoot.querySelector('.al-shape-label').textContent === '[2,8,5,64]' && !el.flow.el.dataset.animating;
      });
      // Clicking a block shows its values.
      await flow.locator('.al-slab[data-key="1:3"]').dispatchEvent('click');
      await page.waitForFunction(() => !document.getElementById('flow').shadowRoot.querySelector('.al-flow-values').hidden);
      assert.match(await flow.locator('.al-flow-values-title').textContent(), /split heads \[2,8,5,64\]/);
      assert.match(await flow.locator('.al-flow-values .al-hm-title').textContent(), /b = 1, h = 3/);
      assert.equal(await flow.locator('.al-flow-values canvas.al-hm-canvas').getAttribute('data-cols'), '64');

      await page.evaluate(() => { document.documentElement.style.setProperty('scroll-behavior', 'auto'); });
      await page.screenshot({ path: path.join(ARTIFACTS, 'components-plain.png'), fullPage: true });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('heatmap: attention arrays passed in as a property, with labels; bad shapes are refused', async (h) => {
    const page = await open(h, PLAIN);
    try {
      await ready(page, '#given');
      const r = await page.evaluate(async () => {
        const el = document.getElementById('given');
        el.tokens = ['<b>x</b>', 'y', 'z'];
        el.attention = { data: new Float32Array([1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5, 0.1, 0.2, 0.7, 0, 1, 0, 0, 0, 1]), shape: [2, 3, 3] };
        await el.updateComplete;
        const maps = el.shadowRoot.querySelectorAll('.al-hm').length;
        const first = el.maps[0];
        const v = first.valueAt(1, 0);
        el.attention = [[[0.9, 0.1], [0.3, 0.7]]];
        el.queryTokens = ['q0', 'q1'];
        el.keyTokens = ['k0', 'k1'];
        await el.updateComplete;
        const single = el.shadowRoot.querySelectorAll('.al-hm').length;
        let err = '';
        try {
          el.attention = { data: [1, 2, 3], shape: [2, 2] };
        } catch (e) {
          err = `${e.name}: ${e.message}`;
        }
        return { maps, v, single, err, bold: el.shadowRoot.querySelectorAll('b').length, shown: el.shadowRoot.querySelector('.al-error').textContent };
      });
      assert.equal(r.maps, 3);
      assert.ok(Math.abs(r.v - 0.5) < 1e-6);
      assert.equal(r.single, 1);
      assert.match(r.err, /RangeError: attention data has 3 values but shape \[1,2,2\] needs 4/);
      assert.match(r.shown, /needs 4/);
      assert.equal(r.bold, 0, 'labels are text, not HTML');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('explorer: attributes re-render, E/H mismatch shows the library error, typed text stays text, lang', async (h) => {
    const page = await open(h, PLAIN);
    try {
      await ready(page, '#explorer');
      const ex = page.locator('#explorer');
      await page.evaluate(() => document.getElementById('explorer').setAttribute('heads', '3'));
      await page.waitForFunction(() => document.getElementById('explorer').dataset.state === 'error');
      assert.match(await ex.locator('.al-error').textContent(), /embedDim \(64\) must be divisible by numHeads \(3\)/);
      await ex.locator('select#al-ex-heads').selectOption('2');
      await page.waitForFunction(() => document.getElementById('explorer').dataset.state === 'ready');
      assert.equal(await ex.locator('.al-hm').count(), 3);
      assert.ok(await ex.locator('.al-error').isHidden());
      await ex.locator('#al-ex-text').fill('<img src=x onerror=alert(1)> 注意力');
      await page.waitForFunction(() => document.getElementById('explorer').getAttribute('text').includes('img'));
      await page.waitForFunction(() => document.getElementById('explorer').dataset.state === 'ready' && document.getElementById('explorer').shadowRoot.querySelectorAll('.al-token').length === 6);
      const toks = await ex.locator('.al-token').allTextContents();
      assert.deepEqual(toks, ['<img', 'src=x', 'onerror=alert(1)>', '注', '意', '力']);
      assert.equal(await page.evaluate(() => document.getElementById('explorer').shadowRoot.querySelectorAll('img').length), 0);
      await page.evaluate(() => document.getElementById('explorer').setAttribute('lang', 'zh'));
      await page.waitForFunction(() => document.getElementById('explorer').shadowRoot.querySelector('label span').textContent === '句子');
      assert.match(await ex.locator('.al-hm-title').first().textContent(), /第 0 头/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('lazy start: nothing loads until the element scrolls into view; CSS variables theme it', async (h) => {
    const page = await open(h, LAZY, { viewport: { width: 900, height: 700 } });
    try {
      await page.waitForFunction(() => customElements.get('attention-lab-heatmap'));
      await page.waitForTimeout(400);
      const before = await page.evaluate(() => ({
        state: document.getElementById('far').dataset.state ?? null,
        wasm: performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).length,
      }));
      assert.deepEqual(before, { state: null, wasm: 0 });
      // Themed from outside through a CSS variable (set via CSSOM: no inline styles under the CSP).
      await page.evaluate(() => document.getElementById('far').style.setProperty('--al-accent', 'rgb(200, 0, 0)'));
      await page.locator('#far').scrollIntoViewIfNeeded();
      await ready(page, '#far');
      const after = await page.evaluate(() => {
        const el = document.getElementById('far');
        return {
          state: el.dataset.state,
          maps: el.shadowRoot.querySelectorAll('.al-hm').length,
          accent: getComputedStyle(el.shadowRoot.querySelector('.al-hm-plot')).getPropertyValue('--al-accent').trim(),
          wasm: performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).length,
        };
      });
      assert.deepEqual(after, { state: 'ready', maps: 3, accent: 'rgb(200, 0, 0)', wasm: 1 });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('examples/: plain HTML and docs-site pages run every component cleanly', async (h) => {
    for (const url of ['/examples/plain-html/', '/examples/docs-site/']) {
      const page = await open(h, url, { viewport: { width: 1200, height: 900 } });
      try {
        await page.waitForFunction(() => customElements.get('attention-lab-explorer'));
        const ids = await page.evaluate(() => [...document.querySelectorAll('*')].filter((e) => e.localName.startsWith('attention-lab-')).map((e, k) => {
          e.dataset.testId = String(k);
          return k;
        }));
        for (const k of ids) {
          await page.locator(`[data-test-id="${k}"]`).scrollIntoViewIfNeeded();
          await ready(page, `[data-test-id="${k}"]`);
        }
        const states = await page.evaluate(() => [...document.querySelectorAll('[data-test-id]')].map((e) => `${e.localName}:${e.dataset.state}`));
        assert.ok(states.length >= 4, url);
        assert.ok(states.every((s) => s.endsWith(':ready')), `${url}: ${states.join(', ')}`);
        if (url.includes('docs')) {
          assert.equal(await page.evaluate(() => document.getElementById('own-weights').maps.length), 3);
          await page.screenshot({ path: path.join(ARTIFACTS, 'example-docs-site.png') });
        }
        assert.deepEqual(page.problems(), []);
      } finally {
        await page.closeAll();
      }
    }
  });

  t.test('components respect reduced motion', async (h) => {
    const page = await open(h, PLAIN, { reducedMotion: 'reduce' });
    try {
      await ready(page, '#flow');
      const r = await page.evaluate(async () => {
        const el = document.getElementById('flow');
        let animating = false;
        const obs = new MutationObserver(() => {
          if (el.flow.el.dataset.animating) animating = true;
        });
        obs.observe(el.flow.el, { attributes: true });
        el.flow.next();
        const label = el.shadowRoot.querySelector('.al-shape-label').textContent;
        await new Promise((r2) => setTimeout(r2, 100));
        obs.disconnect();
        return { animating, label };
      });
      assert.equal(r.animating, false);
      assert.equal(r.label, '[2,5,512]');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
