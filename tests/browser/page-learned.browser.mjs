// Every chapter of the tutorial on the shipped model of the page's language (issue 22, item 4),
// the default view: in EN and 中文, chapters 1 to 9 show maps computed from lab.pretrained's
// weights; clicked (keyboard-locked) weights of chapters 3 and 5 equal Node's
// model.forwardSync(text, { attentions: true }); chapter 2's Q, chapter 6's wpe and chapter 7's
// maps equal the same library ops run in Node over the same weights (lib/learned-layer.js);
// chapter 9's heads carry model.headRoles' labels. The page's first paint does not wait for the
// model: with its download held back the page is ready and the chapters say "Loading…".
// "random" is one click away and goes into the permalink.
import assert from 'node:assert/strict';
import path from 'node:path';
import { init } from '../../web/node.js';
import { ARTIFACTS } from './harness.mjs';
import { nodePretrained, routeStandIns } from './pretrained-fixture.mjs';
import { headRoleLabels, modelTensor } from '../../web/page/lib/learned.js';
import { layerZero } from '../../web/page/lib/learned-layer.js';

const settle = (page) => page.evaluate(() => window.__attentionLab.settled());

function near(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: length ${a.length} vs ${b.length}`);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  assert.ok(w <= tol, `${what}: max |diff| ${w}`);
}

/** The data of the n-th heatmap of a chapter. */
const mapData = (page, id, n) => page.evaluate(([s, k]) => {
  const m = document.querySelectorAll(`#${s} figure.al-hm`)[k].heatmap;
  return { rows: m.rows, cols: m.cols, data: Array.from(m.data.subarray(m.offset ?? 0, (m.offset ?? 0) + m.rows * m.cols)), title: m.title };
}, [id, n]);

/** Locks cell (rows − 1, 1) of a heatmap from the keyboard and reads its value. */
async function lockedValue(page, sel) {
  const map = page.locator(sel);
  await map.scrollIntoViewIfNeeded();
  const plot = map.locator('.al-hm-plot');
  await plot.focus();
  for (const key of ['Control+End', 'Home', 'ArrowRight']) await plot.press(key);
  const ro = await map.locator('.al-hm-readout').textContent();
  assert.match(ro, /locked|已锁定/, ro);
  const m = ro.match(/[:：] ?([0-9.eE+\-\u2212]+)/);
  assert.ok(m, ro);
  return Number(m[1].replace(/\u2212/g, '-'));
}

async function checkChapters(page, lab, model, text, lang) {
  const ids = model.encode(text);
  const L = ids.length;
  const { embedDim: E, numHeads: H, numLayers: N, maxPositions: P } = model.config;
  const D = E / H;
  const ref = model.forwardSync(text, { attentions: true }).attentions;
  const z = await layerZero(lab, model, ids);
  // Chapters 1-9 on their learned view, rendered without error, their line naming the model.
  const name = lang === 'zh' ? '唐诗' : 'English';
  for (let k = 1; k <= 9; k++) {
    const s = await page.evaluate((id) => {
      const sec = document.getElementById(id);
      const line = sec.querySelector(`.${id}-learned`) ?? sec.querySelector('.ch4-learned-intro');
      return { state: sec.dataset.state, pressed: sec.querySelector('[data-weights="learned"]').getAttribute('aria-pressed'), line: line && !line.hidden ? line.textContent : null, maps: sec.querySelectorAll('figure.al-hm:not([hidden])').length };
    }, `ch${k}`);
    assert.equal(s.state, 'ok', `${lang} ch${k} state`);
    assert.equal(s.pressed, 'true', `${lang} ch${k} learned by default`);
    assert.ok(s.line && s.line.includes(name) && !s.line.includes('…'), `${lang} ch${k}: ${s.line}`);
    if (k !== 8 && k !== 9) assert.ok(s.maps > 0, `${lang} ch${k} draws maps`);
  }
  // ch2: Q = ln_1(x)·W_Q + b_Q of layer 0, [L, E].
  const q = await mapData(page, 'ch2', 0);
  assert.deepEqual([q.rows, q.cols], [L, E]);
  near(q.data, z.q, 1e-4, `${lang} ch2 Q`);
  // Layer 0 here = the model's own layer 0.
  near(z.weights.data, ref[0].data, 5e-5, `${lang} layer 0 vs forwardSync`);
  // ch3 (head 0, step 3 = the weights) and ch5 (weights after softmax): a locked weight = Node.
  const want = ref[0].data[(L - 1) * L + 1];
  const w3 = await lockedValue(page, '#ch3 .op-panel[data-op="3"] figure.al-hm');
  assert.ok(Math.abs(w3 - want) <= 5e-5, `${lang} ch3: clicked ${w3} vs Node ${want}`);
  assert.ok(Number(await page.getAttribute('#ch3 .ch3-model', 'data-diff')) <= 5e-5);
  const w5 = await lockedValue(page, '#ch5 .fig-row figure.al-hm:nth-child(3)');
  assert.ok(Math.abs(w5 - want) <= 5e-5, `${lang} ch5: clicked ${w5} vs Node ${want}`);
  // ch5: the model's attention is zero above the diagonal.
  assert.equal(await page.getAttribute('#ch5 .ch5-model', 'data-above'), '0');
  // ch6: the learned positions, beside the sinusoids at the same [P, E].
  const wpe = await mapData(page, 'ch6', 0);
  assert.deepEqual([wpe.rows, wpe.cols], [P, E]);
  near(wpe.data, modelTensor(lab, model, 'wpe.weight').data, 1e-6, `${lang} ch6 wpe`);
  near((await mapData(page, 'ch6', 1)).data, (await lab.positionalEncoding(P, E)).data, 1e-6, `${lang} ch6 sinusoids`);
  // ch7: x, ln_1(x), attention, residual, and the block's output (model.forwardSync's
  // hiddenStates 'all', the input of layer 1).
  const out7 = model.forwardSync(ids, { attentions: false, hiddenStates: 'all' }).hiddenStates[1].data;
  for (const [k, want7] of [[0, z.x], [1, z.ln1], [2, z.attn], [3, z.res], [4, out7]]) near((await mapData(page, 'ch7', k)).data, want7, 1e-4, `${lang} ch7 map ${k}`);
  assert.ok(Number(await page.getAttribute('#ch7-check', 'data-diff')) <= 5e-5);
  // ch8: the real shapes, and a sentence on what differs from the tutorial's example above.
  assert.match(await page.textContent('#ch8-flow .al-flow-steps [data-step="split_heads"]'), new RegExp(`\\[1,${H},${L},${D}\\]`));
  const differs = await page.textContent('#ch8 .ch8-differs');
  assert.ok(differs.includes('[2, 8, 5, 64]') && differs.includes(`[1, ${H}, ${L}, ${D}]`), differs);
  await tutorialFlow(page);
  // ch9: every head, labelled by its measured role.
  const labels = headRoleLabels(model.headRoles(text));
  const rows = await page.evaluate(() => [...document.querySelectorAll('#ch9 table.faq-heads tbody tr')].map((tr) => tr.dataset.role));
  assert.deepEqual(rows, labels.map((x) => x.role));
  assert.equal(rows.length, N * H);
}

/** Chapter 8's tutorial example, whatever the weights: [2,5,512] → [2,8,5,64] → [2,8,5,5] → [2,5,512]. */
async function tutorialFlow(page) {
  assert.equal(await page.textContent('#ch8 .ch8-tutorial-line'), '[2, 5, 512] → [2, 8, 5, 64] → [2, 8, 5, 5] → [2, 5, 512]');
  for (const [step, shape] of [['input', '[2,5,512]'], ['split_heads', '[2,8,5,64]'], ['scores', '[2,8,5,5]'], ['merge_heads', '[2,5,512]']]) {
    assert.ok((await page.textContent(`#ch8-tutorial-flow .al-flow-steps [data-step="${step}"]`)).includes(shape), `ch8 tutorial ${step} ${shape}`);
  }
}

export default function (t) {
  t.test('every chapter (1-9) on the shipped model by default, EN and 中文: values = Node forwardSync / the same library ops; first paint before the model; random one click away', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const en = await nodePretrained(lab, 'en');
    const zh = await nodePretrained(lab, 'zh');
    const page = await h.newPage({ viewport: { width: 1280, height: 900 }, reducedMotion: 'reduce' });
    try {
      await routeStandIns(page, lab);
      // Hold the model files back: the page must paint (ready, chapters rendered) without them.
      let release;
      const gate = new Promise((r) => { release = r; });
      const held = [];
      await page.route((u) => u.pathname.startsWith('/data/models/'), async (route) => {
        held.push(route.request().url());
        await gate;
        return route.fallback();
      });
      await page.goto(h.url('/web/page/#lang=en'));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      assert.ok(held.length > 0, 'the learned views asked for the model');
      assert.match(await page.textContent('#ch1 .ch1-learned'), /Loading the English model…/);
      // The tutorial's own example is on the page at load, before any model has arrived.
      await tutorialFlow(page);
      assert.equal(await page.getAttribute('#ch1', 'data-state'), 'ok');
      release();
      await settle(page);
      await checkChapters(page, lab, en, 'attention is all you need', 'en');
      await page.locator('#ch7').screenshot({ path: path.join(ARTIFACTS, 'page-learned-ch7-en.png') });

      const poem = '白日依山尽，黄河入海流。';
      await page.evaluate((p) => window.__attentionLab.store.set({ lang: 'zh', text: p }), poem);
      await settle(page);
      await checkChapters(page, lab, zh, poem, 'zh');
      await page.locator('#ch6').screenshot({ path: path.join(ARTIFACTS, 'page-learned-ch6-zh.png') });

      // Random weights: one click, today's batch view, and the permalink keeps it.
      await page.click('#ch5 [data-weights="random"]');
      await settle(page);
      assert.ok(await page.isHidden('#ch5 .ch5-learned'));
      assert.equal(await page.locator('#ch5 .batch-row').count(), 2);
      await page.waitForFunction(() => /w5=random/.test(location.hash));
      assert.deepEqual(page.problems(), []);
    } finally {
      en.dispose();
      zh.dispose();
      lab.dispose();
      await page.closeAll();
    }
  }, { timeout: 300000 });
}
