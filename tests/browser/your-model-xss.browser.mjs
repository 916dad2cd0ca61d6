// Token strings are text, never HTML (issue 23): the tiny GPT-2 folder with a
// tokenizer whose token 296 is `<img src=x onerror=alert(1)>` (the
// <|endoftext|> added token renamed; ids, weights and merges unchanged),
// loaded on the page served WITHOUT the CSP (an injected handler would run).
// The payload must show as those characters in the tokens, the next-token
// list, the head view's labels, the enlarged map's labels and the JSON and
// SVG exports; no element is created from it, no dialog opens, no request
// goes to its URL.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { nodeModel, openYourModel, chooseFolder, loadIt, setSentence, ranOn } from './your-model-whole.browser.mjs';

const P = '<img src=x onerror=alert(1)>';
// A sentence after which the model ranks token 296 in its top 10 (found by
// a search over short ASCII strings; checked below in Node).
const NEXT_TEXT = 'p.NU';

export function trap() {
  window.__xss = [];
  for (const name of ['alert', 'confirm', 'prompt', 'print']) window[name] = (...a) => window.__xss.push(`${name}(${a.join(',')})`);
  window.__added = [];
  const watch = (root) => new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) if (n.nodeType === 1 && /^(img|script|iframe|object|embed)$/i.test(n.localName)) window.__added.push(`<${n.localName} ${[...n.attributes].map((a) => `${a.name}="${a.value}"`).join(' ')}>`);
    }
  }).observe(root, { childList: true, subtree: true });
  watch(document);
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    watch(root);
    return root;
  };
}

export function injections() {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      for (const a of el.attributes) {
        if (a.name.toLowerCase().startsWith('on')) found.push(`${a.name} on <${el.localName}>`);
        if (a.name === 'src' && /(^|\/)x$/.test(a.value)) found.push(`<${el.localName} src=x>`);
      }
      if (el.localName === 'img') found.push('<img>');
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return { found, xss: window.__xss.slice(), added: window.__added.filter((x) => /alert\(|src="x"/.test(x)) };
}

export default function (t) {
  t.test('a vocabulary entry <img src=x onerror=alert(1)> shows as text in tokens, next tokens, head view, exports; no element, no dialog', async (h) => {
    const src = path.join(REPO_ROOT, 'tests', 'golden', 'models', 'gpt2');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'al-xss-gpt2-'));
    for (const f of ['config.json', 'model.safetensors']) fs.copyFileSync(path.join(src, f), path.join(dir, f));
    const tj = JSON.parse(fs.readFileSync(path.join(src, 'tokenizer.json'), 'utf8'));
    assert.equal(tj.added_tokens[0].id, 296);
    tj.added_tokens[0].content = P;
    tj.added_tokens[0].special = false;
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tj));
    const node = await nodeModel(dir);
    const { page, requests } = await openYourModel(h, { csp: false, initScript: trap });
    const dialogs = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    });
    try {
      const refNext = await node.nextTokens(NEXT_TEXT, { k: 10 });
      assert.ok(refNext.some((x) => x.id === 296 && x.token === P), 'precondition: token 296 is in the top 10 after the sentence');
      await chooseFolder(page, dir);
      await loadIt(page);
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun);
      const text = `The cat ${P} sat`;
      await setSentence(page, text);
      await ranOn(page, text);
      const ids = node.encode(text);
      assert.ok(ids.includes(296));
      const k = ids.indexOf(296);
      // Tokens: the li's text is the payload itself.
      const tok = await page.evaluate((i) => { const li = document.getElementById('ym-model-view').shadowRoot.querySelectorAll('.al-mv-tok')[i]; return { text: li.textContent, title: li.title, children: li.children.length }; }, k);
      assert.deepEqual(tok, { text: P, title: `id 296: ${P}`, children: 0 });
      // Enlarged map: its row/column labels (table fallback) hold the payload as text.
      await page.click('#ym-model-view .al-mv-thumb[data-layer="0"][data-head="0"]');
      const labels = await page.evaluate(() => { const r = document.getElementById('ym-model-view').shadowRoot; r.querySelector('.al-mv-big details')?.setAttribute('open', ''); return new Promise((res) => setTimeout(() => res([...r.querySelectorAll('.al-mv-big th')].map((x) => x.textContent)), 100)); });
      assert.ok(labels.some((l) => l.includes(P)), `map labels: ${labels.slice(0, 12).join(' | ')}`);
      await page.click('#ym-model-view .al-mv-big .al-btn');
      // Head view: the label's <title> is the payload, its text the payload cut to 17 characters + '…'.
      await page.click('#ym-model-view [data-view="head"]');
      const hv = await page.evaluate((i) => { const g = document.getElementById('ym-model-view').shadowRoot.querySelectorAll('.al-hv-left')[i]; return { title: g.querySelector('title').textContent, text: g.querySelector('text').textContent, aria: g.getAttribute('aria-label') }; }, k);
      assert.equal(hv.title, P);
      assert.equal(hv.text, `${P.slice(0, 17)}…`);
      assert.ok(hv.aria.includes(P));
      // Exports: the JSON holds the string; the SVG escapes it and parses to no <img>.
      const ex = await page.evaluate(async () => {
        const v = document.getElementById('ym-model-view');
        const json = JSON.parse(await (await v.export('json')).text());
        const svg = await (await v.export('svg')).text();
        const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
        return { tokens: json.tokens, modelTokens: json.modelTokens, svg, imgs: doc.getElementsByTagName('img').length + doc.getElementsByTagNameNS('http://www.w3.org/1999/xhtml', 'img').length, titles: [...doc.getElementsByTagName('title')].map((x) => x.textContent) };
      });
      assert.ok(ex.tokens.includes(P) && ex.modelTokens.includes(P));
      assert.ok(ex.svg.includes('&lt;img src=x onerror=alert(1)&gt;'));
      assert.ok(!ex.svg.includes(P), 'the SVG text is escaped');
      assert.equal(ex.imgs, 0);
      assert.ok(ex.titles.includes(P));
      // The next-token list: the payload is one row's text.
      await setSentence(page, NEXT_TEXT);
      await ranOn(page, NEXT_TEXT);
      const next = await page.evaluate(() => [...document.getElementById('ym-model-view').shadowRoot.querySelectorAll('.al-mv-next-panel .al-mv-next-row')].map((r) => ({ id: Number(r.dataset.id), text: r.querySelector('.al-mv-next-tok').textContent, title: r.title, children: r.querySelector('.al-mv-next-tok').children.length })));
      assert.deepEqual(next.map((r) => r.id), refNext.map((x) => x.id));
      assert.deepEqual(next.find((r) => r.id === 296), { id: 296, text: P, title: `id 296: ${P}`, children: 0 });
      // Generate (its text pieces) until the end: the payload is the end-of-text token, shown as text if drawn.
      await page.fill('#ym-model-view .al-mv-max-new', '20');
      await page.click('#ym-model-view .al-mv-generate');
      await page.waitForFunction(() => document.getElementById('ym-model-view').modelRun.panels.generated?.state === 'done', null, { timeout: 60000 });
      const r = await page.evaluate(injections);
      assert.deepEqual(r.xss, [], 'a script ran');
      assert.deepEqual(r.found, [], 'injected markup');
      assert.deepEqual(r.added, [], 'elements created from a token string');
      assert.deepEqual(dialogs, [], 'a dialog opened');
      assert.deepEqual(requests.filter((u) => /\/x(\?|$)/.test(new URL(u.split(' ')[1]).pathname)), [], 'requests made by the payload');
      assert.deepEqual(page.ownProblems(), []);
    } finally {
      node.dispose();
      await page.closeAll();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, { timeout: 180000 });
}
