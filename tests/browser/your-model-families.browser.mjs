// "Your model" with a folder of each decoder family of issue 32 (qwen2, qwen3,
// mistral, gemma, gemma2, gemma3_text, phi3, gpt_neox with parallel and with
// sequential residual, gpt_neo): the tiny golden folders of
// tests/reference/hf_families.py (tests/golden/models/<family>/, with their
// 64-token tokenizer.json) are chosen on the page one after another, listed,
// loaded into the model worker and run on a sentence. Every value the page
// shows is checked against the same library call made here in Node on the
// same files: the listing (type, layers, heads, KV heads, parameters =
// num_parameters() of expected.json, dtype, the heap limit of lab.heapLimit), the ids, every attention map
// (the view's whole [layers, heads, L, L] data and a clicked map) against
// model.forwardSync, the next-token list against nextTokens, a seeded
// generation against generate, and the head roles against headRoles; and
// gemma3-mqa18 (18 layers, 4 heads, 1 KV head: gemma-3-270m's layout) also
// through the head view and the heads section. The
// numpy references of these folders are checked in Jest (models-families).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, ARTIFACTS } from './harness.mjs';
import { init } from '../../web/node.js';
import { nodeModel, openYourModel, chooseFolder, loadIt, setSentence, ranOn, assertLocal } from './your-model-whole.browser.mjs';

const MODELS = path.join(REPO_ROOT, 'tests', 'golden', 'models');
export const FAMILIES = ['qwen2', 'qwen3', 'mistral', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neox-sequential', 'gpt_neo'];

const near = (a, b, tol, what) => {
  assert.equal(a.length, b.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  assert.ok(worst <= tol, `${what}: max |Δ| ${worst} > ${tol}`);
  return worst;
};

const listingOf = (page) => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#your-model .ym-model-table tbody tr')].map((tr) => [tr.dataset.key, tr.querySelector('td').textContent])));

/** One folder on an open page: listed, loaded, run; every shown value = Node's. Returns a summary line. */
export async function checkFolder(page, name, text) {
  const dir = path.join(MODELS, name);
  const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
  const node = await nodeModel(dir);
  try {
    await page.evaluate(() => { delete document.getElementById('your-model').dataset.model; });
    await chooseFolder(page, dir);
    const listed = await listingOf(page);
    assert.equal(listed.type, node.config.modelType, `${name}: type`);
    assert.equal(listed.layers, String(node.config.numLayers));
    assert.equal(listed.heads, String(node.config.numHeads));
    assert.equal(listed.kvHeads, String(node.config.numKvHeads));
    assert.equal(listed.parameters, expected.parameters.toLocaleString('en-US'), `${name}: parameters`);
    assert.equal(listed.dtype, expected.dtype, `${name}: dtype`);
    // The heap's limit as the library reports it (lab.heapLimit), not a constant of the page.
    const limit = (await init({ backend: 'wasm' })).heapLimit;
    assert.match(listed.memory, new RegExp(` MB of the wasm heap’s ${(limit / 2 ** 20).toFixed(1)} MB$`), `${name}: memory row`);
    await loadIt(page);
    await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun);
    // A new model: the view's run is of the previous one until the sentence runs again.
    await setSentence(page, `${text} `);
    await ranOn(page, `${text} `);
    await setSentence(page, text);
    await ranOn(page, text);
    const ref = node.forwardSync(text, { attentions: true });
    const L = ref.ids.length;
    const H = node.config.numHeads;
    const layers = node.config.numLayers;
    const run = await page.evaluate(() => {
      const v = document.getElementById('ym-model-view');
      return { ids: v.modelRun.ids, thumbs: v.shadowRoot.querySelectorAll('.al-mv-thumb').length, shape: [v.data.layers, v.data.heads, v.data.lq, v.data.lk], data: Array.from(v.data.data) };
    });
    assert.deepEqual(run.ids, ref.ids, `${name}: ids`);
    assert.equal(run.thumbs, layers * H, `${name}: thumbnails`);
    assert.deepEqual(run.shape, [layers, H, L, L]);
    const worst = near(run.data, ref.attentions.flatMap((a) => Array.from(a.data)), 1e-6, `${name}: every map`);
    // A clicked map (the last layer's last head) is the forward's.
    await page.click(`#ym-model-view .al-mv-thumb[data-layer="${layers - 1}"][data-head="${H - 1}"]`);
    const shown = await page.evaluate(() => Array.from(document.getElementById('ym-model-view').enlarged.data));
    near(shown, Array.from(ref.attentions[layers - 1].data.subarray((H - 1) * L * L, H * L * L)), 1e-6, `${name}: clicked map`);
    await page.click('#ym-model-view .al-mv-big .al-btn');
    // Next tokens = model.nextTokens at the panel's temperature.
    const next = await page.evaluate(() => ({ panel: document.getElementById('ym-model-view').modelRun.panels.next, rows: [...document.getElementById('ym-model-view').shadowRoot.querySelectorAll('.al-mv-next-panel .al-mv-next-row')].map((r) => Number(r.dataset.id)) }));
    const refNext = await node.nextTokens(text, { k: 10, temperature: next.panel.temperature });
    assert.deepEqual(next.rows, refNext.map((x) => x.id), `${name}: next tokens`);
    near(next.panel.list.map((x) => x.prob), refNext.map((x) => x.prob), 1e-7, `${name}: next-token probabilities`);
    // Generate with a seed = model.generate in Node.
    const maxNew = 6;
    await page.fill('#ym-model-view .al-mv-seed', '7');
    await page.fill('#ym-model-view .al-mv-max-new', String(maxNew));
    await page.click('#ym-model-view .al-mv-generate');
    await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun.panels.generated?.state === 'done', null, { timeout: 60000 });
    const gen = await page.evaluate(() => { const g = document.getElementById('ym-model-view').modelRun.panels.generated; return { ids: g.ids, text: g.text, temperature: g.temperature }; });
    const refGen = [];
    let refText = '';
    for await (const x of node.generate(text, { maxNewTokens: maxNew, temperature: gen.temperature, seed: 7 })) {
      refGen.push(x.id);
      refText += x.text;
    }
    assert.deepEqual(gen.ids, refGen, `${name}: generated ids`);
    assert.equal(gen.text, refText);
    // Head roles of every head = model.headRoles (one forward, as the view asks).
    const roles = await page.evaluate(() => document.getElementById('ym-model-view').modelRun.panels.roles);
    const refRoles = node.headRoles(text, { oneForward: true });
    assert.equal(roles.rows.length, layers * H, `${name}: head roles rows`);
    for (const r of roles.rows) {
      const e = refRoles.heads.find((x) => x.layer === r.layer && x.head === r.head);
      for (const k of ['previousToken', 'self', 'firstToken', 'induction']) assert.ok(Math.abs(r[k] - e[k]) < 1e-6, `${name}: ${k} of ${r.layer}.${r.head}`);
    }
    return `${name} (${expected.dtype}, ${layers}×${H}/${node.config.numKvHeads}): ${L} tokens, maps max |Δ| ${worst.toExponential(1)}, next and ${gen.ids.length} generated = Node`;
  } finally {
    node.dispose();
  }
}

async function checkAll(h, names) {
  const { page, requests } = await openYourModel(h);
  try {
    for (const name of names) console.log(`    ${await checkFolder(page, name, 'the cat sat on the mat.')}`);
    assertLocal(requests);
    assert.deepEqual(page.ownProblems(), []);
  } finally {
    await page.closeAll();
  }
}

/** The 18-layer, 4-head, 1-KV-head folder (gemma-3-270m's attention layout): the head view of every 6th layer and the heads section too. */
async function checkMqa18(h) {
  const name = 'gemma3-mqa18';
  const text = 'the cat sat on the mat, and the dog sat on the log.';
  const { page, requests } = await openYourModel(h);
  const node = await nodeModel(path.join(MODELS, name));
  try {
    console.log(`    ${await checkFolder(page, name, text)}`);
    await page.locator('#ym-model-view').screenshot({ path: path.join(ARTIFACTS, 'your-model-gemma3-mqa18.png') });
    const ref = node.forwardSync(text, { attentions: true });
    const L = ref.ids.length;
    assert.equal(node.config.numLayers, 18);
    assert.equal(node.config.numKvHeads, 1);
    // The head view of a sliding layer (4) and of the full layers 5 and 17: one left token per row,
    // lines = the nonzero weights of the drawn heads, drawn from the forward's data.
    await page.click('#ym-model-view [data-view="head"]');
    for (const layer of [4, 5, 17]) {
      await page.selectOption('#ym-model-view .al-mv-bar select', String(layer));
      const hv = await page.evaluate(() => { const r = document.getElementById('ym-model-view').shadowRoot; return { left: r.querySelectorAll('.al-hv-left').length, lines: r.querySelectorAll('.al-hv line').length, label: r.querySelector('.al-hv').getAttribute('aria-label') }; });
      assert.equal(hv.left, L, `layer ${layer}: tokens`);
      assert.ok(hv.lines > 0, `layer ${layer}: lines`);
      assert.match(hv.label, new RegExp(`layer ${layer}\\b`));
    }
    // A sliding layer's map is zero beyond the window of 4 (the data the thumbnails and head view draw).
    const outside = await page.evaluate((l) => { const d = document.getElementById('ym-model-view').data; let n = 0; for (let hh = 0; hh < d.heads; hh++) for (let i = 0; i < d.lq; i++) for (let j = 0; j < d.lk; j++) if ((j > i || i - j >= 4) && d.data[((l * d.heads + hh) * d.lq + i) * d.lk + j] !== 0) n++; return n; }, 4);
    assert.equal(outside, 0, 'sliding layer 4 attends within its window of 4');
    // "What the heads do": head scores of all 72 heads = model.headScores.
    await page.evaluate(() => document.getElementById('ym-model-view').openHeads());
    await page.waitForFunction(() => document.getElementById('ym-model-view').dataset.heads === 'ready', null, { timeout: 60000 });
    const s = await page.evaluate(() => JSON.parse(JSON.stringify(document.getElementById('ym-model-view').heads.shown)));
    const hs = node.headScores(text);
    for (const k of ['previousToken', 'duplicateToken', 'induction', 'firstToken']) {
      assert.equal(s.scores[k].length, 18 * 4, `${k}: one score per head`);
      near(s.scores[k], Array.from(hs[k].data), 1e-5, `headScores ${k}`);
    }
    assertLocal(requests);
    assert.deepEqual(page.ownProblems(), []);
  } finally {
    node.dispose();
    await page.closeAll();
  }
}

export default function (t) {
  t.test('qwen2, qwen3, mistral, gemma, gemma2: listed, loaded and run; maps, next tokens, seeded generation and head roles = Node', (h) => checkAll(h, FAMILIES.slice(0, 5)), { timeout: 240000, long: true });
  t.test('gemma3, phi3, gpt_neox (parallel, sequential), gpt_neo: the same checks', (h) => checkAll(h, FAMILIES.slice(5)), { timeout: 240000, long: true });
  t.test('gemma3 with 18 layers, 4 heads and 1 KV head (gemma-3-270m\'s layout): 72 thumbnails, every map, the head view, head roles and head scores = Node', checkMqa18, { timeout: 240000 });
}
