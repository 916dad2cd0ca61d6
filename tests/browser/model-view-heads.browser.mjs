// <attention-lab-model-view>'s "What the heads do" section (issue 33 item 7; lib/heads-panel.js)
// on whole models loaded from a folder src into the model worker: on gpt2 (pre-norm) the head
// scores, logit lens, next tokens, attribution and a typed patching pair equal Node's calls on
// the same files, and a head click gives Node's ablated nextTokens; on bert (post-norm) the head
// scores are drawn and the logit lens, attribution and patching show the library's Error.
import assert from 'node:assert/strict';
import path from 'node:path';
import { REPO_ROOT, ARTIFACTS } from './harness.mjs';
import { nodeModel } from './your-model-whole.browser.mjs';

const PAGE = '/tests/browser/pages/model-view-heads.html';
const MODELS = path.join(REPO_ROOT, 'tests', 'golden', 'models');

function near(got, want, what, tol = 1e-5) {
  assert.equal(got.length, want.length, `${what}: length`);
  let w = 0;
  for (let i = 0; i < want.length; i++) w = Math.max(w, Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i])));
  assert.ok(w <= tol, `${what}: max relative diff ${w}`);
}

const panelsReady = (page, id) => page.waitForFunction((i) => {
  const v = document.getElementById(i);
  return v && v.modelRun && ['ready', 'error'].includes(v.dataset.panels);
}, id, { timeout: 60000 });

const headsReady = (page, id) => page.waitForFunction((i) => document.getElementById(i)?.dataset.heads === 'ready', id, { timeout: 60000 });

const shown = (page, id) => page.evaluate((i) => JSON.parse(JSON.stringify(document.getElementById(i).heads.shown)), id);

export default function (t) {
  t.test('model view, heads section: gpt2 = Node (scores, lens, next, attribution, patch, ablation click); bert shows headScores and the library\'s post-norm Errors', async (h) => {
    const gpt2 = await nodeModel(path.join(MODELS, 'gpt2'));
    const bert = await nodeModel(path.join(MODELS, 'bert'));
    const page = await h.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(h.url(PAGE));
      const text = 'The cat sat on the mat.';
      await panelsReady(page, 'gpt2');
      // Closed at first: nothing computed until the reader opens it.
      assert.equal(await page.evaluate(() => document.getElementById('gpt2').dataset.heads), undefined);
      await page.click('#gpt2 .al-mv-heads > summary');
      await headsReady(page, 'gpt2');
      let s = await shown(page, 'gpt2');
      const hs = gpt2.headScores(text);
      for (const k of ['previousToken', 'duplicateToken', 'induction', 'firstToken']) near(s.scores[k], Array.from(hs[k].data), `gpt2 ${k}`);
      const rep = gpt2.headScores.repeated({ length: s.repeated.length, seed: 0 });
      assert.deepEqual(s.repeated.ids, Array.from(rep.ids));
      near(s.repeated.induction, Array.from(rep.induction.data), 'gpt2 repeated induction');
      const lens = gpt2.logitLens(text, { k: 3 });
      assert.deepEqual(s.lens.topIds, Array.from(lens.topIds.data));
      near(s.lens.topProbs, Array.from(lens.topProbs.data), 'gpt2 lens');
      const next = await gpt2.nextTokens(text, { k: 10 });
      assert.deepEqual(s.next.base.map((p) => p.id), next.map((p) => p.id));
      const attr = gpt2.attribute(text, { target: next[0].id, baseline: next[1].id });
      near(s.attribution.heads, Array.from(attr.heads.data), 'gpt2 attribution');
      // No example pairs here: the clean box holds the sentence, and a corrupted one is asked for.
      assert.equal(s.patch, null);
      assert.equal(await page.inputValue('#gpt2 .al-hp-clean'), text);
      const corrupted = 'The dog sat on the mat.';
      await page.fill('#gpt2 .al-hp-corrupted', corrupted);
      await page.waitForFunction(() => document.getElementById('gpt2').heads.shown.patch !== null, null, { timeout: 30000 });
      s = await shown(page, 'gpt2');
      const a = await gpt2.nextTokens(text, { k: 2 });
      const b = await gpt2.nextTokens(corrupted, { k: 2 });
      const baseline = b[0].id !== a[0].id ? b[0].id : b[1].id;
      near(s.patch.data, Array.from(gpt2.patch({ clean: text, corrupted, target: a[0].id, baseline }).data), 'gpt2 patch');
      // A click on a head: the list becomes Node's ablated one.
      await page.click('#gpt2 .al-hp-abl[data-layer="1"][data-head="2"]');
      await page.waitForFunction(() => document.getElementById('gpt2').heads.shown.next?.ablated !== null, null, { timeout: 30000 });
      s = await shown(page, 'gpt2');
      const abl = await gpt2.nextTokens(text, { k: 10, ablate: [{ layer: 1, head: 2, mode: 'zero' }] });
      assert.deepEqual(s.next.ablated.map((p) => p.id), abl.map((p) => p.id));
      near(s.next.ablated.map((p) => p.prob), abl.map((p) => p.prob), 'gpt2 ablated next');
      const domNext = await page.evaluate(() => [...document.getElementById('gpt2').shadowRoot.querySelectorAll('.al-hp-next li')].map((li) => Number(li.dataset.prob)));
      near(domNext, abl.map((p) => p.prob), 'gpt2 ablated list drawn');
      await page.locator('#gpt2').screenshot({ path: path.join(ARTIFACTS, 'model-view-heads-gpt2.png') });

      // bert: post-norm.
      await panelsReady(page, 'bert');
      await page.evaluate(() => document.getElementById('bert').openHeads());
      await headsReady(page, 'bert');
      s = await shown(page, 'bert');
      near(s.scores.previousToken, Array.from(bert.headScores('the cat sat on the mat.').previousToken.data), 'bert previousToken');
      const errs = await page.evaluate(() => Object.fromEntries(['lens-sec', 'attr-sec', 'patch-sec'].map((k) => {
        const e = document.getElementById('bert').shadowRoot.querySelector(`.al-hp-${k} .al-hp-err`);
        return [k, e.hidden ? null : e.textContent];
      })));
      for (const [k, call] of [['lens-sec', 'logitLens'], ['attr-sec', 'attribute'], ['patch-sec', 'patch']]) {
        assert.match(errs[k] ?? '', new RegExp(`TypeError: model\\.${call}: bert is a post-norm model`), `${k}: ${errs[k]}`);
      }
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
      gpt2.dispose();
      bert.dispose();
    }
  }, { timeout: 180000 });
}
