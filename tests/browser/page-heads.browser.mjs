// "What the heads do" (issue 33 item 7) on the shipped models: every view of the chapter (head
// scores on the text and on repeated random tokens, the head map a click opens, the logit lens,
// the next-token list, the attribution map, the patching map) equals what Node computes with the
// same library calls on the same model (lab.pretrained in Node, computed inside the test); a click
// on a head ablates it and the list becomes Node's ablated nextTokens (zero, then mean); a typed
// text re-runs the views; on the 中文 page no English string of the chapter, its panel or its maps
// is shown. Stand-ins while data/models/<lang>/ lacks trained files (pretrained-fixture.mjs).
import assert from 'node:assert/strict';
import path from 'node:path';
import { init } from '../../web/node.js';
import { ARTIFACTS } from './harness.mjs';
import { nodePretrained, routeStandIns } from './pretrained-fixture.mjs';
import { HEADS_TEXT, HEADS_PAIRS } from '../../web/page/chapters/heads.js';
import { MESSAGES as CHAPTER } from '../../web/page/chapters/heads-messages.js';
import { HEADS_PANEL_MESSAGES as PANEL } from '../../web/components/lib/heads-panel-messages.js';
import { COMPONENT_MESSAGES } from '../../web/components/lib/i18n.js';

const SCORES = ['previousToken', 'duplicateToken', 'induction', 'firstToken'];
const REPEATED = { length: 20, seed: 0 };

function near(got, want, what, tol = 1e-5) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} vs ${want.length}`);
  let w = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i]));
    if (!(d <= w)) {
      w = d;
      at = i;
    }
  }
  assert.ok(w <= tol, `${what}: max relative diff ${w} at ${at} (${got[at]} vs ${want[at]})`);
}

const ready = (page, text) => page.waitForFunction((t) => {
  const s = document.getElementById('heads');
  return s.dataset.heads === 'ready' && (t === null || s.dataset.headsText === t);
}, text, { timeout: 90000 });

/** What the chapter's DOM shows, as numbers. */
function shownValues(page) {
  return page.evaluate(() => {
    const s = document.getElementById('heads');
    const cells = (sel) => [...s.querySelectorAll(sel)].map((b) => Number(b.dataset.value));
    const lens = [...s.querySelectorAll('.al-hp-lens tbody td')].map((td) => ({ id: Number(td.dataset.id), prob: Number(td.dataset.prob), text: td.textContent }));
    const next = [...s.querySelectorAll('.al-hp-next li')].map((li) => ({ id: Number(li.dataset.id), prob: Number(li.dataset.prob) }));
    const values = (sel) => (s.querySelector(sel)?.dataset.values ?? '').split(',').filter(Boolean).map(Number);
    return {
      text: cells('.al-hp-scores-text .al-hp-cell'), repeated: cells('.al-hp-scores-rep .al-hp-cell'),
      score: s.querySelector('.al-hp-scores-text table')?.dataset.score,
      lens, next, ablated: s.querySelector('.al-hp-next')?.dataset.ablated,
      attribution: values('.al-hp-attr-sec figure.al-hm'), patch: values('.al-hp-patch-sec figure.al-hm'),
      target: Number(s.querySelector('.al-hp-target')?.value),
    };
  });
}

async function checkChapter(page, model, text, lang) {
  const { numLayers: N, numHeads: H } = model.config;
  // Head scores, each kind picked in turn.
  const scores = model.headScores(text);
  const rep = model.headScores.repeated(REPEATED);
  for (const k of SCORES) {
    await page.click(`#heads .al-hp-scores button[data-score="${k}"]`);
    const v = await shownValues(page);
    assert.equal(v.score, k);
    near(v.text, Array.from(scores[k].data), `${lang} headScores ${k}`);
    near(v.repeated, Array.from(rep[k].data), `${lang} headScores.repeated ${k}`);
  }
  // The first-token floor 1/L is said while firstToken is shown.
  const L = model.encode(text).length;
  const floor = await page.textContent('#heads .al-hp-floor');
  assert.ok(floor.includes((1 / L).toFixed(4)), `${lang} floor line ${floor} (1/L = ${1 / L})`);
  assert.ok(floor.includes((1 / rep.ids.length).toFixed(4)), `${lang} floor line ${floor} (repeated L = ${rep.ids.length})`);

  // A click on a score cell opens that head's map = Node's attentions.
  const fwd = model.forwardSync(text, { attentions: true });
  const cell = { l: N - 1, h: 1 };
  await page.click(`#heads .al-hp-scores-text .al-hp-cell[data-layer="${cell.l}"][data-head="${cell.h}"]`);
  await page.waitForFunction((c) => { const m = document.querySelector('#heads .al-hp-map'); return m && !m.hidden && m.dataset.layer === String(c.l) && m.dataset.head === String(c.h) && m.dataset.which === 'text'; }, cell);
  const map = await page.evaluate(() => Array.from(window.__attentionLab.runners.find((r) => r.id === 'heads').inst.panel.shown.map.data));
  near(map, Array.from(fwd.attentions[cell.l].data.subarray(cell.h * L * L, (cell.h + 1) * L * L)), `${lang} map L${cell.l}H${cell.h}`);
  // … and on the repeated tokens.
  const frep = model.forwardSync(rep.ids, { attentions: true });
  const Lr = rep.ids.length;
  await page.click('#heads .al-hp-scores-rep .al-hp-cell[data-layer="0"][data-head="2"]');
  await page.waitForFunction(() => document.querySelector('#heads .al-hp-map')?.dataset.which === 'repeated');
  const mapR = await page.evaluate(() => Array.from(window.__attentionLab.runners.find((r) => r.id === 'heads').inst.panel.shown.map.data));
  near(mapR, Array.from(frep.attentions[0].data.subarray(2 * Lr * Lr, 3 * Lr * Lr)), `${lang} repeated map L0H2`);

  const v = await shownValues(page);
  // The logit lens: the top token and its probability in every cell.
  const lens = model.logitLens(text, { k: 1 });
  assert.equal(v.lens.length, (N + 1) * L, `${lang} lens cells`);
  assert.deepEqual(v.lens.map((c) => c.id), Array.from(lens.topIds.data), `${lang} lens top ids`);
  near(v.lens.map((c) => c.prob), Array.from(lens.topProbs.data), `${lang} lens probs`);
  // The next tokens.
  const next = await model.nextTokens(text, { k: 10 });
  assert.deepEqual(v.next.map((p) => p.id), next.map((p) => p.id), `${lang} next ids`);
  near(v.next.map((p) => p.prob), next.map((p) => p.prob), `${lang} next probs`);
  assert.equal(v.ablated, 'false');
  // Attribution: target the top token, baseline the second.
  assert.equal(v.target, next[0].id);
  const attr = model.attribute(text, { target: next[0].id, baseline: next[1].id });
  near(v.attribution, Array.from(attr.heads.data), `${lang} attribution`);
  // The target picked from the list: the third token (baseline still the second).
  await page.selectOption('#heads .al-hp-target', String(next[2].id));
  const attr2 = model.attribute(text, { target: next[2].id, baseline: next[1].id });
  await page.waitForFunction((want) => Math.abs(Number(document.querySelector('#heads .al-hp-attr-sec figure.al-hm')?.dataset.values.split(',')[0]) - want) < 1e-6, attr2.heads.data[0]);
  near((await shownValues(page)).attribution, Array.from(attr2.heads.data), `${lang} attribution, target ${next[2].token}`);
  // Patching the chapter's first example pair.
  const pair = HEADS_PAIRS[lang][0];
  const a = await model.nextTokens(pair.clean, { k: 2 });
  const b = await model.nextTokens(pair.corrupted, { k: 2 });
  const baseline = b[0].id !== a[0].id ? b[0].id : b[1].id;
  const patch = model.patch({ clean: pair.clean, corrupted: pair.corrupted, target: a[0].id, baseline, over: 'heads' });
  near(v.patch, Array.from(patch.data), `${lang} patch ${pair.clean} | ${pair.corrupted}`);
  // Every example pair makes the point: the logit difference flips sign, and one head restores at
  // least half of it.
  for (const ex of HEADS_PAIRS[lang]) {
    const c = await model.nextTokens(ex.clean, { k: 2 });
    const d = await model.nextTokens(ex.corrupted, { k: 2 });
    const r = model.patch({ clean: ex.clean, corrupted: ex.corrupted, target: c[0].id, baseline: d[0].id !== c[0].id ? d[0].id : d[1].id });
    assert.ok(r.ldClean > 0 && r.ldCorrupted < 0, `${lang} ${ex.clean}: LD ${r.ldClean} / ${r.ldCorrupted}`);
    assert.ok(Math.max(...r.data) >= 0.5, `${lang} ${ex.clean}: best head restores ${Math.max(...r.data)}`);
  }
  const note = await page.textContent('#heads .heads-patch-note');
  let k = 0;
  patch.data.forEach((x, i) => { if (x > patch.data[k]) k = i; });
  assert.ok(note.includes(`L${Math.floor(k / H)} H${k % H}`), `${lang} note ${note}`);

  // Ablation: click the head with the largest attribution; the list becomes Node's ablated one.
  let best = 0;
  attr.heads.data.forEach((x, i) => { if (Math.abs(x) > Math.abs(attr.heads.data[best])) best = i; });
  const head = { layer: Math.floor(best / H), head: best % H };
  await page.click(`#heads .al-hp-abl[data-layer="${head.layer}"][data-head="${head.head}"]`);
  await page.waitForFunction(() => document.querySelector('#heads .al-hp-next')?.dataset.ablated === 'true');
  const zero = await model.nextTokens(text, { k: 10, ablate: [{ ...head, mode: 'zero' }] });
  let got = (await shownValues(page)).next;
  assert.deepEqual(got.map((p) => p.id), zero.map((p) => p.id), `${lang} zero-ablated ids`);
  near(got.map((p) => p.prob), zero.map((p) => p.prob), `${lang} zero-ablated probs`);
  assert.notDeepEqual(zero.map((p) => p.prob), next.map((p) => p.prob));
  assert.equal(await page.getAttribute(`#heads .al-hp-abl[data-layer="${head.layer}"][data-head="${head.head}"]`, 'aria-pressed'), 'true');
  // The mean toggle.
  const mean = await model.nextTokens(text, { k: 10, ablate: [{ ...head, mode: 'mean' }] });
  await page.check('#heads .al-hp-mean');
  await page.waitForFunction((want) => Math.abs(Number(document.querySelector('#heads .al-hp-next li')?.dataset.prob) - want) < 1e-7, mean[0].prob);
  got = (await shownValues(page)).next;
  assert.deepEqual(got.map((p) => p.id), mean.map((p) => p.id), `${lang} mean-ablated ids`);
  near(got.map((p) => p.prob), mean.map((p) => p.prob), `${lang} mean-ablated probs`);
  // A second head, then all back on.
  const second = { layer: 0, head: head.layer === 0 && head.head === 0 ? 1 : 0 };
  await page.click(`#heads .al-hp-abl[data-layer="${second.layer}"][data-head="${second.head}"]`);
  const two = await model.nextTokens(text, { k: 10, ablate: [{ ...head, mode: 'mean' }, { ...second, mode: 'mean' }] });
  await page.waitForFunction((want) => Math.abs(Number(document.querySelector('#heads .al-hp-next li')?.dataset.prob) - want) < 1e-7, two[0].prob);
  near((await shownValues(page)).next.map((p) => p.prob), two.map((p) => p.prob), `${lang} two heads mean-ablated`);
  await page.click('#heads .al-hp-clear');
  await page.waitForFunction(() => document.querySelector('#heads .al-hp-next')?.dataset.ablated === 'false');
  near((await shownValues(page)).next.map((p) => p.prob), next.map((p) => p.prob), `${lang} all heads back on`);
  await page.uncheck('#heads .al-hp-mean');
}

/** The English strings the 中文 chapter must not show: each en value's literal parts (placeholders and `code` out). */
function englishParts(keys) {
  const out = new Set();
  for (const [cat, key] of keys) {
    const en = cat.en[key];
    const zh = cat.zh[key];
    if (en === zh) continue;
    for (const part of String(en).replace(/`[^`]*`/g, '\u0000').split(/\{\w+\}|\u0000|\*\*/)) {
      const p = part.trim();
      // Words, not symbols or API names.
      if (/[A-Za-z]{3,}.*\s.*[A-Za-z]{2,}/.test(p) || /^[A-Za-z]{4,}$/.test(p)) out.add(p);
    }
  }
  return [...out];
}

export default function (t) {
  t.test('the chapter = Node\'s headScores, repeated scores, head map, logit lens, nextTokens, attribute and patch on lab.pretrained(\'en\'); a head click = Node\'s ablated nextTokens (zero, mean, two heads); a typed text re-runs', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const en = await nodePretrained(lab, 'en');
    const page = await h.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await routeStandIns(page, lab);
      await page.goto(h.url('/web/page/#lang=en'));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.locator('#heads').scrollIntoViewIfNeeded();
      await ready(page, HEADS_TEXT.en);
      await checkChapter(page, en, HEADS_TEXT.en, 'en');
      await page.locator('#heads').screenshot({ path: path.join(ARTIFACTS, 'page-heads-en.png') });

      // The reader's own text: every view re-runs on it.
      const typed = 'She sells sea shells by the sea sh';
      await page.fill('#heads-text', typed);
      await ready(page, typed);
      const v = await shownValues(page);
      const next = await en.nextTokens(typed, { k: 10 });
      near(v.next.map((p) => p.prob), next.map((p) => p.prob), 'typed text: next');
      near(v.text, Array.from(en.headScores(typed)[v.score].data), `typed text: ${v.score}`);
      assert.deepEqual(v.lens.map((c) => c.id), Array.from(en.logitLens(typed, { k: 1 }).topIds.data), 'typed text: lens');

      // The second example pair, and a corrupted text of another length (the library's Error).
      const pair = HEADS_PAIRS.en[1];
      await page.click('#heads .al-hp-example[data-k="1"]');
      const a = await en.nextTokens(pair.clean, { k: 2 });
      const b = await en.nextTokens(pair.corrupted, { k: 2 });
      const want = en.patch({ clean: pair.clean, corrupted: pair.corrupted, target: a[0].id, baseline: b[0].id !== a[0].id ? b[0].id : b[1].id });
      await page.waitForFunction((w) => Math.abs(Number(document.querySelector('#heads .al-hp-patch-sec figure.al-hm')?.dataset.values.split(',')[0]) - w) < 1e-6, want.data[0]);
      near((await shownValues(page)).patch, Array.from(want.data), 'second example pair');
      await page.fill('#heads .al-hp-corrupted', 'one, two');
      await page.waitForFunction(() => !document.querySelector('#heads .al-hp-patch-sec .al-hp-err').hidden);
      assert.match(await page.textContent('#heads .al-hp-patch-sec .al-hp-err'), /equal token length/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
      en.dispose();
    }
  }, { timeout: 240000 });

  t.test('the induction model button: the chapter on lab.pretrained(\'induction\') = Node (scores, map, lens, next tokens, attribution, patching, ablation); its best head scores induction >= 0.4 on repeated random tokens; the button again goes back to the English model', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const ind = await lab.pretrained('induction');
    const page = await h.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await routeStandIns(page, lab);
      await page.goto(h.url('/web/page/#lang=en'));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.locator('#heads').scrollIntoViewIfNeeded();
      await ready(page, HEADS_TEXT.en);
      await page.click('#heads .heads-induction');
      await page.waitForFunction(() => { const s = document.getElementById('heads'); return s.dataset.heads === 'ready' && s.dataset.headsLang === 'induction'; }, null, { timeout: 90000 });
      assert.equal(await page.getAttribute('#heads .heads-induction', 'aria-pressed'), 'true');
      // The choice is in the permalink (hm), and a page opened on it starts on the induction model.
      await page.waitForFunction(() => /(^#|&)hm=induction(&|$)/.test(location.hash), null, { timeout: 10000 });
      assert.match(await page.textContent('#heads .heads-status'), /^induction \(English\) model: 2 layers × 4 heads/);
      await checkChapter(page, ind, HEADS_TEXT.induction, 'induction');
      await page.click('#heads .al-hp-scores button[data-score="induction"]');
      const rep = (await shownValues(page)).repeated;
      assert.ok(Math.max(...rep) >= 0.4, `best induction on repeated tokens ${Math.max(...rep)}`);
      await page.locator('#heads').screenshot({ path: path.join(ARTIFACTS, 'page-heads-induction.png') });
      await page.click('#heads .heads-induction');
      await page.waitForFunction(() => { const s = document.getElementById('heads'); return s.dataset.heads === 'ready' && s.dataset.headsLang === 'en'; }, null, { timeout: 90000 });
      assert.equal(await page.getAttribute('#heads .heads-induction', 'aria-pressed'), 'false');
      assert.ok(!/hm=/.test(await page.evaluate(() => location.hash)), 'the default model is not written into the permalink');
      // A permalink with hm=induction opens the chapter on the induction model.
      await page.goto(h.url('/web/page/#lang=en&hm=induction'));
      await page.reload();
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.locator('#heads').scrollIntoViewIfNeeded();
      await page.waitForFunction(() => { const s = document.getElementById('heads'); return s.dataset.heads === 'ready' && s.dataset.headsLang === 'induction'; }, null, { timeout: 90000 });
      assert.equal(await page.getAttribute('#heads .heads-induction', 'aria-pressed'), 'true');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
      ind.dispose();
    }
  }, { timeout: 240000 });

  t.test('中文: the chapter on lab.pretrained(\'zh\') = Node (scores, map, lens, next tokens, attribution, patching, ablation), and no English UI string leaks into it', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const zh = await nodePretrained(lab, 'zh');
    const page = await h.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await routeStandIns(page, lab);
      await page.goto(h.url('/web/page/#lang=zh'));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.locator('#heads').scrollIntoViewIfNeeded();
      await ready(page, HEADS_TEXT.zh);
      assert.match(await page.textContent('#heads-title'), /注意力头在做什么$/);
      await checkChapter(page, zh, HEADS_TEXT.zh, 'zh');
      // Open a map (its heatmap strings too) and look at everything the chapter shows.
      await page.click('#heads .al-hp-scores-text .al-hp-cell[data-layer="0"][data-head="0"]');
      for (const d of await page.locator('#heads details.al-hm-table').all()) await d.evaluate((el) => { el.open = true; });
      const shown = await page.evaluate(() => {
        // The code spans (API names such as over: 'heads') are the same in both languages.
        const s = document.getElementById('heads').cloneNode(true);
        s.querySelectorAll('code').forEach((c) => c.remove());
        document.body.append(s);
        s.id = 'heads-copy';
        const attrs = [...s.querySelectorAll('[aria-label], [title]')].flatMap((el) => [el.getAttribute('aria-label'), el.getAttribute('title')]).filter(Boolean);
        const out = [s.innerText, ...attrs].join('\n');
        s.remove();
        return out;
      });
      const keys = [
        ...Object.keys(CHAPTER.en).map((k) => [CHAPTER, k]),
        ...Object.keys(PANEL.en).map((k) => [PANEL, k]),
        ...Object.keys(COMPONENT_MESSAGES.en).filter((k) => k.startsWith('hm.')).map((k) => [COMPONENT_MESSAGES, k]),
      ];
      const parts = englishParts(keys);
      assert.ok(parts.length > 50, `${parts.length} English parts checked`);
      const esc = (p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const leaked = parts.filter((p) => new RegExp(`(^|[^A-Za-z])${esc(p)}($|[^A-Za-z])`).test(shown));
      assert.deepEqual(leaked, [], 'English strings on the 中文 chapter');
      assert.match(shown, /注意力头得分/);
      assert.match(shown, /激活修补/);
      await page.locator('#heads').screenshot({ path: path.join(ARTIFACTS, 'page-heads-zh.png') });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
      zh.dispose();
    }
  }, { timeout: 240000 });
}
