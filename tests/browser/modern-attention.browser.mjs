// Chapter 11 "Attention in today's models" (issue 11, item 8) in English and
// 简体中文, and the components' attention-variant attributes. References are
// independent of the page: the KV-cache bytes from the formula
// 2·Hkv·D·4, the ALiBi slopes from the paper's 2^(−8(h+1)/H), softcap's bound
// |c·tanh(s/c)| < c; the component's weights against `lab` called directly.
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS } from './harness.mjs';

const PAGE = '/web/page/';
const BLANK = '/tests/browser/pages/blank.html';

async function openChapter(h, lang) {
  const page = await h.newPage();
  await page.goto(h.url(`${PAGE}#lang=${lang}&ch=ch11`));
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
  await page.evaluate(() => window.__attentionLab.settled());
  return page;
}

async function chapterFacts(page) {
  return page.evaluate(() => {
    const s = document.getElementById('ch11');
    const rope = s.querySelector('.ch11-toeplitz').dataset;
    return {
      state: s.dataset.state,
      heading: s.querySelector('h2').textContent,
      devRope: Number(rope.devRope),
      devSin: Number(rope.devSin),
      maxRope: Number(rope.maxRope),
      kv: [...s.querySelectorAll('.ch11-kv-table tbody tr')].map((tr) => [Number(tr.dataset.kv), Number(tr.dataset.bytes)]),
      groups: s.querySelectorAll('.ch11-group').length,
      groupHeads: [...s.querySelectorAll('.ch11-group')].map((g) => g.querySelectorAll('.al-hm').length),
      window: { ...s.querySelector('.ch11-window-line').dataset },
      times: [...s.querySelectorAll('.ch11-times [data-ms]')].map((e) => [Number(e.dataset.w), Number(e.dataset.ms)]),
      maxCapped: Number(s.querySelector('[data-chart="softcap"]').closest('figure').dataset.maxCapped),
      slopes: [...s.querySelectorAll('.ch11-slopes [data-slope]')].map((e) => Number(e.dataset.slope)),
      texts: [...s.querySelectorAll('[data-i18n-key]')].map((e) => ({ key: e.dataset.i18nKey, text: e.textContent })),
      titles: [...s.querySelectorAll('.al-hm-title')].map((e) => e.textContent),
      error: s.querySelector('.chapter-error')?.hidden === false ? s.querySelector('.chapter-error').textContent : '',
    };
  });
}

export default function (t) {
  for (const lang of ['en', 'zh']) {
    t.test(`chapter 11 in ${lang}: renders, Toeplitz RoPE map, KV bytes, window, softcap, ALiBi, no console errors`, async (h) => {
      const page = await openChapter(h, lang);
      try {
        const r = await chapterFacts(page);
        assert.equal(r.error, '');
        assert.equal(r.state, 'ok');
        // RoPE: q·k depends only on the offset (float32 rounding); the sinusoidal map does not.
        assert.ok(r.devRope < 1e-5, `RoPE deviation along diagonals ${r.devRope}`);
        assert.ok(r.maxRope > 0.5, `the RoPE map is not trivially zero (${r.maxRope})`);
        assert.ok(r.devSin > 0.1, `sinusoidal deviation ${r.devSin}`);
        // KV cache per token and layer: 2 (K, V) · Hkv · D · 4 bytes, D = 256 / 8.
        assert.deepEqual(r.kv, [8, 4, 2, 1].map((kv) => [kv, 2 * kv * 32 * 4]));
        // Default H_kv = 2: two boxes of four query heads.
        assert.equal(r.groups, 2);
        assert.deepEqual(r.groupHeads, [4, 4]);
        // Window 16 over L = 128: at most 16 keys per query, Σ min(i + 1, 16) visible pairs.
        assert.equal(Number(r.window.maxSeen), 16);
        let pairs = 0;
        for (let i = 0; i < 128; i++) pairs += Math.min(i + 1, 16);
        assert.equal(Number(r.window.pairs), pairs);
        assert.deepEqual(r.times.map((x) => x[0]), [64, 256, 1024, 0]);
        assert.ok(r.times.every((x) => x[1] > 0));
        // Softcap c = 5: every capped score is inside (−5, 5); at |s| = 4c it is 5·tanh(4) ≈ 4.9966.
        assert.ok(r.maxCapped < 5 && Math.abs(r.maxCapped - 5 * Math.tanh(4)) < 1e-5, `max |capped| ${r.maxCapped}`);
        // ALiBi slopes for H = 8: 2^(−8(h+1)/8).
        assert.deepEqual(r.slopes, Array.from({ length: 8 }, (_, k) => 2 ** -(k + 1)));
        if (lang === 'zh') {
          assert.match(r.heading, /当今模型中的注意力/);
          for (const x of r.texts) assert.match(x.text, /[\u4e00-\u9fff]/, `${x.key} is Chinese: ${x.text}`);
          for (const x of r.titles) assert.match(x, /[\u4e00-\u9fff]|^RoPE/, `map title in Chinese: ${x}`);
        } else {
          assert.match(r.heading, /Attention in today’s models/);
        }
        // The window slider re-renders with the library's band.
        await page.fill('#ch11-window', '1');
        await page.dispatchEvent('#ch11-window', 'input');
        await page.evaluate(() => window.__attentionLab.settled());
        assert.equal(await page.getAttribute('#ch11 .ch11-window-line', 'data-max-seen'), '1');
        // The chapter's controls are page state: the permalink carries them.
        await page.waitForFunction(() => /(^|[#&])win11=1(&|$)/.test(location.hash));
        await page.locator('#ch11').screenshot({ path: path.join(ARTIFACTS, `page-ch11-${lang}.png`) });
        assert.deepEqual(page.problems(), []);
      } finally {
        await page.closeAll();
      }
    }, { timeout: 240000 });
  }

  t.test('heatmap component: softcap, scale and the other variant attributes match lab called directly; bad values show the error state', async (h) => {
    const page = await h.newPage();
    try {
      await page.goto(h.url(BLANK));
      const r = await page.evaluate(async () => {
        await import('/web/components/define.js');
        const { getLab } = await import('/web/components/lib/lab-instance.js');
        const { tokenize, embedBatch } = await import('/web/components/lib/tokens.js');
        const lab = await getLab('cpu');
        const mk = async (attrs) => {
          const el = document.createElement('attention-lab-heatmap');
          for (const [k, v] of Object.entries({ tokens: 'the cat sat on the mat', heads: '4', 'embed-dim': '16', seed: '3', head: '1', eager: '', ...attrs })) el.setAttribute(k, v);
          document.body.append(el);
          await new Promise((res) => {
            const check = () => (['ready', 'error'].includes(el.dataset.state) ? res() : setTimeout(check, 20));
            check();
          });
          await el.updateComplete;
          return el;
        };
        const toks = tokenize('the cat sat on the mat');
        const L = toks.length;
        const E = 16;
        // Direct library calls with the same inputs: head 1 of the weights.
        const direct = async ({ config = {}, mask, opts = {}, positional = true }) => {
          const pe = positional ? (await lab.positionalEncoding(L, E)).data : null;
          const x = { data: embedBatch([toks], L, E, 3, pe), shape: [1, L, E] };
          const mha = lab.multiHeadAttention({ embedDim: E, numHeads: 4, seed: 3, ...config });
          try {
            if (opts.softcap === undefined && opts.scale === undefined) return (await mha.forward(x, undefined, undefined, { mask, ...opts })).weights.data.slice(L * L, 2 * L * L);
            const tr = await mha.forward(x, undefined, undefined, { mask, trace: 'values' });
            const v = tr.trace.find((s) => s.step === 'split_heads').values;
            return (await lab.scaledDotProductAttention(v.q, v.k, v.v, { mask, ...opts })).weights.data.slice(L * L, 2 * L * L);
          } finally {
            mha.dispose();
          }
        };
        const drawn = (el) => Array.from({ length: L * L }, (_, n) => el.maps[0].valueAt(Math.floor(n / L), n % L));
        const diff = (a, b) => Math.max(...a.map((x, n) => Math.abs(x - b[n])));
        const out = {};
        const plainEl = await mk({ mask: 'causal' });
        const capEl = await mk({ mask: 'causal', softcap: '0.5' });
        const plain = drawn(plainEl);
        const capped = drawn(capEl);
        out.capState = capEl.dataset.state;
        out.capVsDirect = diff(capped, await direct({ mask: [{ kind: 'causal' }], opts: { softcap: 0.5 } }));
        out.capVsPlain = diff(capped, plain);
        out.plainVsDirect = diff(plain, await direct({ mask: [{ kind: 'causal' }] }));
        // scale: the factor of Q·Kᵀ (default 1/√D = 0.5 here).
        const scaled = drawn(await mk({ mask: 'causal', scale: '1.5' }));
        out.scaleVsDirect = diff(scaled, await direct({ mask: [{ kind: 'causal' }], opts: { scale: 1.5 } }));
        out.scaleVsPlain = diff(scaled, plain);
        const varEl = await mk({ window: '2,0', alibi: '', 'num-kv-heads': '2', rope: '', 'mask-fill': '-inf' });
        out.varState = varEl.dataset.state;
        out.varVsDirect = diff(drawn(varEl), await direct({ config: { numKvHeads: 2, rope: {} }, mask: [{ kind: 'window', left: 2, right: 0 }, { kind: 'alibi' }], opts: { maskFill: -Infinity }, positional: false }));
        out.varZeros = drawn(varEl).filter((x, n) => Math.floor(n / L) - (n % L) > 2 || n % L > Math.floor(n / L)).every((x) => x === 0);
        const errors = {};
        for (const [k, v] of [['softcap', '0'], ['softcap', 'abc'], ['window', 'a,b'], ['window', '-2,0'], ['num-kv-heads', '3'], ['alibi', '1,2'], ['rope', 'x'], ['causal-align', 'middle'], ['scale', 'abc'], ['scale', '1e40']]) {
          const el = await mk({ [k]: v });
          const msg = el.shadowRoot.querySelector('.al-error');
          errors[`${k}=${v}`] = { state: el.dataset.state, shown: !msg.hidden, text: msg.textContent };
        }
        // The explorer takes the same attributes: its head maps are the same weights.
        const ex = document.createElement('attention-lab-explorer');
        for (const [k, v] of Object.entries({ text: 'the cat sat on the mat', heads: '4', 'embed-dim': '16', seed: '3', mask: 'causal', softcap: '0.5', eager: '' })) ex.setAttribute(k, v);
        document.body.append(ex);
        await new Promise((res) => {
          const check = () => (['ready', 'error'].includes(ex.dataset.state) ? res() : setTimeout(check, 20));
          check();
        });
        await ex.updateComplete;
        out.explorerState = ex.dataset.state;
        out.explorerVsHeatmap = diff(Array.from(ex.result.weights.data.slice(L * L, 2 * L * L)), capped);
        ex.setAttribute('window', '1');
        await new Promise((res) => setTimeout(res, 0));
        await ex.updateComplete;
        out.explorerBad = { state: ex.dataset.state, text: ex.shadowRoot.querySelector('.al-error').textContent };
        return { ...out, errors };
      });
      assert.equal(r.capState, 'ready');
      assert.ok(r.plainVsDirect === 0, `plain weights vs lab: ${r.plainVsDirect}`);
      assert.ok(r.capVsDirect === 0, `softcap weights vs lab: ${r.capVsDirect}`);
      assert.ok(r.capVsPlain > 1e-3, `softcap changes the drawn weights (${r.capVsPlain})`);
      assert.ok(r.scaleVsDirect === 0, `scaled weights vs lab: ${r.scaleVsDirect}`);
      assert.ok(r.scaleVsPlain > 1e-3, `scale changes the drawn weights (${r.scaleVsPlain})`);
      assert.equal(r.varState, 'ready');
      assert.ok(r.varVsDirect === 0, `variant weights vs lab: ${r.varVsDirect}`);
      assert.ok(r.varZeros, 'outside the window the weights are zero');
      for (const [k, e] of Object.entries(r.errors)) {
        assert.equal(e.state, 'error', k);
        assert.ok(e.shown, k);
        assert.doesNotMatch(e.text, /NaN/, `${k}: ${e.text}`);
      }
      assert.match(r.errors['softcap=0'].text, /softcap="0"/);
      assert.match(r.errors['window=a,b'].text, /window="a,b".*left,right/);
      assert.match(r.errors['window=-2,0'].text, /RangeError: .*window left must be -1/);
      assert.match(r.errors['num-kv-heads=3'].text, /numKvHeads \(3\) must divide numHeads \(4\)/);
      assert.match(r.errors['alibi=1,2'].text, /one slope per query head \(H = 4\), got 2/);
      assert.match(r.errors['causal-align=middle'].text, /top-left or bottom-right/);
      assert.match(r.errors['scale=abc'].text, /scale="abc": expected a number/);
      assert.match(r.errors['scale=1e40'].text, /RangeError: .*scale/);
      assert.equal(r.explorerState, 'ready');
      assert.ok(r.explorerVsHeatmap === 0, `explorer vs heatmap with softcap: ${r.explorerVsHeatmap}`);
      assert.equal(r.explorerBad.state, 'error');
      assert.match(r.explorerBad.text, /window="1".*left,right/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 120000 });
}
