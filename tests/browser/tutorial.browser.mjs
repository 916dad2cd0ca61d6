// The tutorial page read closely (issue 15): the statements with numbers
// match what the charts show, the charts show their point (shared scales,
// visible masks, unclipped labels, marked dropout), hover provenance lights
// the right row and column, and the Chinese page renders its glyphs.
import assert from 'node:assert/strict';
import path from 'node:path';
import { ARTIFACTS } from './harness.mjs';
import { RANDOM_WEIGHTS } from '../../web/page/lib/state.js';

const PAGE = '/web/page/';
// These checks read the seeded ("random") view of chapters 1-9; the learned one, the default, is
// page-learned.browser.mjs's.
const RANDOM_HASH = Object.entries(RANDOM_WEIGHTS).map(([k, v]) => `${k}=${v}`).join('&');

async function openPage(h, { hash = '', ...opts } = {}) {
  hash = hash ? `${hash}&${RANDOM_HASH}` : `#${RANDOM_HASH}`;
  const page = await h.newPage(opts);
  await page.goto(h.url(PAGE + hash));
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
  await settle(page);
  return page;
}

const settle = (page) => page.evaluate(() => window.__attentionLab.settled());

async function setState(page, patch) {
  await page.evaluate((p) => window.__attentionLab.store.set(p), patch);
  await settle(page);
}

/** Data and geometry of the n-th heatmap in a section. */
function mapInfo(page, sel, n) {
  return page.evaluate(([s, k]) => {
    const fig = document.querySelectorAll(`${s} figure.al-hm:not([hidden])`)[k];
    const m = fig.heatmap;
    return { rows: m.rows, cols: m.cols, data: Array.from(m.data), domain: m.domain, title: m.title, ds: { ...m.canvas.dataset } };
  }, [sel, n]);
}

/** Mean RGB of each cell's centre pixel, from the canvas. */
function cellColours(page, sel, n) {
  return page.evaluate(([s, k]) => {
    const c = document.querySelectorAll(`${s} figure.al-hm:not([hidden])`)[k].querySelector('canvas.al-hm-canvas');
    const d = c.dataset;
    const ctx = c.getContext('2d');
    const out = [];
    for (let i = 0; i < Number(d.rows); i++) {
      for (let j = 0; j < Number(d.cols); j++) {
        const x = Math.floor(Number(d.plotX) + (j + 0.5) * Number(d.cellW));
        const y = Math.floor(Number(d.plotY) + (i + 0.5) * Number(d.cellH));
        out.push(Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
      }
    }
    return out;
  }, [sel, n]);
}

/** Hovers cell (i, j) of the n-th heatmap of a section. */
async function hoverCell(page, sel, n, i, j) {
  const fig = page.locator(`${sel} figure.al-hm:not([hidden])`).nth(n);
  await fig.scrollIntoViewIfNeeded();
  const g = await fig.locator('canvas.al-hm-canvas').evaluate((c) => ({ ...c.dataset, dpr: devicePixelRatio }));
  await fig.locator('.al-hm-overlay').hover({ position: { x: (Number(g.plotX) + (j + 0.5) * Number(g.cellW)) / g.dpr, y: (Number(g.plotY) + (i + 0.5) * Number(g.cellH)) / g.dpr } });
}

const argmax = (row) => row.reduce((a, v, k) => (v > row[a] ? k : a), 0);

export default function (t) {
  t.test('statements: the numbers in the text are the numbers of the charts (ch1, ch3, ch6, ch9)', async (h) => {
    const page = await openPage(h);
    try {
      // ch1: "a token is always most similar to itself" is gone; the count of rows
      // whose largest weight is their own token is read from the weights drawn.
      const w = await mapInfo(page, '#ch1', 1);
      let own = 0;
      for (let i = 0; i < w.rows; i++) if (argmax(w.data.slice(i * w.cols, (i + 1) * w.cols)) === i) own++;
      assert.equal(await page.getAttribute('#ch1-try2', 'data-own'), String(own));
      assert.ok(own < w.rows, `at the defaults some row peaks on another token (${own} of ${w.rows})`);
      assert.match(await page.textContent('#ch1-try2'), new RegExp(`${own} of ${w.rows} rows`));
      assert.match(await page.textContent('#ch1-try2'), /not a rule: a token is not always most similar to itself/);
      assert.match(w.title, /softmax\(X·Xᵀ\/√d\)/);
      assert.match(await page.textContent('#ch1 .ch1-pe'), /Positional encoding is added to X/);
      await setState(page, { scale: false });
      assert.match((await mapInfo(page, '#ch1', 1)).title, /softmax\(X·Xᵀ\) \[/);
      await setState(page, { scale: true });

      // ch6: the "Try this" numbers are the map's own cosine similarities.
      const far = Number(await page.getAttribute('#ch6-try1', 'data-far'));
      const sim = await mapInfo(page, '#ch6', 2);
      assert.equal(sim.rows, 64);
      assert.ok(Math.abs(sim.data[0] - 1) < 1e-5, 'normalised: 1 on the diagonal');
      assert.deepEqual(sim.domain.map((v) => Math.round(v * 1e6) / 1e6), [0, 1]);
      assert.equal(Number(await page.getAttribute('#ch6-try1', 'data-now')), sim.data[far]);
      const v10000 = Number(await page.getAttribute('#ch6-try1', 'data-v10000'));
      const v100 = Number(await page.getAttribute('#ch6-try1', 'data-v100'));
      assert.equal(v10000, sim.data[far]);
      await setState(page, { peBase: 100 });
      const sim100 = await mapInfo(page, '#ch6', 2);
      assert.equal(v100, sim100.data[far]);
      assert.ok(v100 < v10000 - 0.3, `distance ${far}: base 100 gives ${v100}, base 10000 gives ${v10000}`);
      assert.match(await page.textContent('#ch6-try1'), /less alike, not more/);
      await setState(page, { peBase: 10000 });

      // ch9: W_Q ≠ W_K removes self-focus, not H; tied W_K = W_Q brings it back.
      const note = await page.evaluate(() => ({ ...document.getElementById('ch9-note').dataset }));
      const rows = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#ch9 tr[data-row]')].map((r) => [r.dataset.row, Number(r.dataset.self)])));
      assert.equal(Number(note.s1), rows.h1);
      assert.equal(Number(note.sH), rows.hH);
      assert.equal(Number(note.st), rows.tied);
      assert.ok(rows.tied > 0.8 && rows.bare > 0.8, `tied ${rows.tied}, bare ${rows.bare}`);
      assert.ok(rows.h1 < 0.5 && rows.hH < 0.5, `H=1 ${rows.h1}, H=8 ${rows.hH}`);
      // The view error only for H > 1.
      assert.equal(await page.locator('#ch9 .ch9-view-err').count(), 1);
      await page.selectOption('#ch9-h', '1');
      assert.equal(await page.locator('#ch9 .ch9-view-err').count(), 0);
      assert.match(await page.textContent('#ch9 .ch9-view-ok'), /still contiguous/);

      // ch9: tutorial 3's forward(v, k, q) order: refused at unequal lengths, silently wrong at equal ones.
      assert.match(await page.textContent('#ch9-order .ch9-order-err'), /key and value must have the same length/);
      assert.ok(Number(await page.getAttribute('#ch9-order .ch9-order-equal', 'data-diff')) > 0.1);
      // ch6: a whole number of device pixels per PE column (no beat pattern).
      const pe = await mapInfo(page, '#ch6', 0);
      assert.equal(pe.cols, 512);
      assert.ok(Number(pe.ds.cellW) >= 1 && Number.isInteger(Number(pe.ds.cellW)), `PE cell width ${pe.ds.cellW} device px`);

      // ch3: under the causal mask row i's entropy is bounded by ln(i + 1), not ln Lk.
      await setState(page, { mask: 'causal' });
      const maxima = await page.evaluate(() => [...document.querySelectorAll('#ch3 .entropy [data-max]')].map((e) => Number(e.dataset.max)));
      assert.deepEqual(maxima.map((v) => Math.round(v * 1e6)), [1, 2, 3, 4, 5].map((n) => Math.round(Math.log(n) * 1e6)));
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('ch5: opens with a visible mask; one-word sentence keeps key 0, an empty one gives uniform rows', async (h) => {
    const page = await openPage(h);
    try {
      const keep = await mapInfo(page, '#ch5', 0);
      const blocked = keep.data.filter((v) => v === 0).length;
      assert.ok(blocked >= 10, `the opening mask blocks ${blocked} cells`);
      const after = await mapInfo(page, '#ch5', 2);
      const colours = await cellColours(page, '#ch5', 2);
      keep.data.forEach((k, n) => {
        if (k === 0) {
          assert.equal(after.data[n], 0);
          assert.ok(colours[n].every((v, c) => Math.abs(v - [68, 1, 84][c]) <= 2), `blocked cell ${n} drawn as zero`);
        }
      });
      await setState(page, { text2: 'heads' });
      const one = await mapInfo(page, '#ch5', 2);
      for (let i = 0; i < one.rows; i++) assert.ok(Math.abs(one.data[i * one.cols] - 1) < 1e-6, `row ${i} puts weight 1 on key 0: ${one.data[i * one.cols]}`);
      await setState(page, { text2: '', mask5: 'padding' });
      const none = await mapInfo(page, '#ch5', 2);
      for (const v of none.data) assert.ok(Math.abs(v - 1 / none.cols) < 1e-6, `uniform 1/Lk: ${v}`);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('charts: ch3 shared scale differs visibly, ch4 labels unclipped, ch7 shared scale with dropout marked', async (h) => {
    const page = await openPage(h);
    try {
      // ch3: the scores before and after scaling on one scale, visibly different.
      const a = await mapInfo(page, '#ch3', 0);
      const b = await mapInfo(page, '#ch3', 1);
      assert.deepEqual(a.domain, b.domain);
      const ca = await cellColours(page, '#ch3', 0);
      const cb = await cellColours(page, '#ch3', 1);
      const diff = ca.reduce((s, px, n) => s + px.reduce((u, v, c) => u + Math.abs(v - cb[n][c]), 0) / 3, 0) / ca.length;
      console.log(`    ch3: mean colour difference before/after scaling ${diff.toFixed(1)} (of 255)`);
      assert.ok(diff > 40, `mean colour difference ${diff}`);

      // ch2 / ch4 formulas: W^Q's superscript sits above the baseline, head_i's subscript below.
      const f = await page.evaluate(() => {
        const box = (el) => el.getBoundingClientRect();
        const sup = document.querySelector('#ch2 .formula sup');
        const base = sup.previousElementSibling;
        const sub = document.querySelector('#ch4 .formula sub');
        const subBase = sub.previousElementSibling;
        return { supBottom: box(sup).bottom, baseBottom: box(base).bottom, subTop: box(sub).top, subBaseTop: box(subBase).top, subBottom: box(sub).bottom, subBaseBottom: box(subBase).bottom };
      });
      assert.ok(f.supBottom < f.baseBottom - 3, `superscript raised: ${JSON.stringify(f)}`);
      assert.ok(f.subBottom > f.subBaseBottom + 1, `subscript lowered: ${JSON.stringify(f)}`);

      // ch4: rotated column labels stay inside their canvas (ink bounding box).
      for (const sel of ['#ch4 .head-map[data-head="0"]', '#ch4 .avg-map', '#ch5 figure.al-hm']) {
        const r = await page.evaluate((s) => {
          const c = document.querySelector(`${s} canvas.al-hm-canvas`);
          const { width, height } = c;
          const px = c.getContext('2d').getImageData(0, 0, width, height).data;
          let x1 = -1;
          let y0 = height;
          for (let y = 0; y < height; y++) {
            for (let x = 0; x < width; x++) {
              if (px[(y * width + x) * 4 + 3] > 40) {
                if (x > x1) x1 = x;
                if (y < y0) y0 = y;
              }
            }
          }
          return { width, height, x1, y0, rotate: Number(c.dataset.cellW) < 30 };
        }, sel);
        assert.ok(r.x1 <= r.width - 2, `${sel}: ink reaches x = ${r.x1} of ${r.width}`);
        assert.ok(r.y0 >= 1, `${sel}: ink reaches y = ${r.y0}`);
      }
      assert.match(await page.textContent('#ch4 .ch4-avg-note'), /concatenates/);

      // ch7: one scale for five maps; dropped elements drawn apart from zeros.
      await setState(page, { train: true, drop: 0.5 });
      const infos = [];
      for (let k = 0; k < 5; k++) infos.push(await mapInfo(page, '#ch7', k));
      for (const m of infos) assert.deepEqual(m.domain, infos[0].domain);
      const drop = await page.evaluate(() => {
        const m = document.querySelectorAll('#ch7 figure.al-hm')[2].heatmap;
        const c = m.canvas;
        const d = c.dataset;
        const ctx = c.getContext('2d');
        let marked = 0;
        let markedDark = 0;
        for (let i = 0; i < m.rows; i++) {
          for (let j = 0; j < Math.min(m.cols, 40); j++) {
            if (!m.marks[i * m.cols + j]) continue;
            marked++;
            const x = Math.floor(Number(d.plotX) + (j + 0.5) * Number(d.cellW));
            const y = Math.floor(Number(d.plotY) + (i + 0.5) * Number(d.cellH));
            const px = ctx.getImageData(x, y, 1, 1).data;
            if (px[0] === 64 && px[1] === 64 && px[2] === 64) markedDark++;
          }
        }
        return { marked, markedDark, legend: !m.legendMarked.hidden };
      });
      assert.ok(drop.marked > 20, `dropped cells ${drop.marked}`);
      assert.equal(drop.markedDark, drop.marked);
      assert.ok(drop.legend);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('hover provenance: a score lights its q_i row and k_j column, a weight shows its row softmax', async (h) => {
    const page = await openPage(h);
    try {
      await hoverCell(page, '#ch3', 1, 1, 3);
      assert.equal(await page.getAttribute('#ch3 .ch3-q .al-hm-plot', 'data-band-rows'), '1');
      assert.equal(await page.getAttribute('#ch3 .ch3-kt .al-hm-plot', 'data-band-cols'), '3');
      // The band is drawn: the overlay has ink on row 1 of Q and none on row 3.
      const ink = await page.evaluate(() => {
        const c = document.querySelector('#ch3 .ch3-q canvas.al-hm-canvas');
        const ov = document.querySelector('#ch3 .ch3-q canvas.al-hm-overlay');
        const d = c.dataset;
        const ctx = ov.getContext('2d');
        const at = (i) => ctx.getImageData(Math.floor(Number(d.plotX) + 2.5 * Number(d.cellW)), Math.floor(Number(d.plotY) + (i + 0.5) * Number(d.cellH)), 1, 1).data[3];
        return { row1: at(1), row3: at(3) };
      });
      assert.ok(ink.row1 > 0 && ink.row3 === 0, JSON.stringify(ink));
      const prov = await page.evaluate(() => ({ ...document.getElementById('ch3-prov').dataset, text: document.getElementById('ch3-prov').textContent }));
      assert.equal(prov.kind, 'score');
      assert.equal(prov.i, '1');
      assert.equal(prov.j, '3');
      assert.match(prov.text, /q_i · k_j/);

      await hoverCell(page, '#ch3', 2, 2, 0);
      const w = await mapInfo(page, '#ch3', 2);
      const row = await page.evaluate(() => [...document.querySelectorAll('#ch3-prov .prov-row li')].map((li) => Number(li.dataset.w)));
      assert.deepEqual(row, w.data.slice(2 * w.cols, 3 * w.cols));
      assert.equal(await page.getAttribute('#ch3-prov', 'data-kind'), 'weights');
      assert.equal(await page.evaluate(() => document.querySelectorAll('#ch3 figure.al-hm')[1].heatmap.plot.dataset.bandRows), '2');

      // ch1: a weight shows its row's scores and weights, both from the library's trace.
      await hoverCell(page, '#ch1', 1, 2, 3);
      const ch1 = await page.evaluate(() => [...document.querySelectorAll('#ch1-prov .prov-row li')].map((li) => [Number(li.dataset.s), Number(li.dataset.w)]));
      assert.equal(ch1.length, 5);
      assert.ok(ch1.every(([sc]) => Number.isFinite(sc)), 'scores shown');
      assert.equal(await page.evaluate(() => document.querySelector('#ch1 figure.al-hm').heatmap.plot.dataset.bandRows), '2,3');

      // ch4: a head's weight shows that head's row.
      assert.equal(await page.evaluate(() => document.querySelectorAll('#ch4 figure.al-hm')[3].dataset.head), '3');
      await hoverCell(page, '#ch4', 3, 4, 1);
      const head = await page.evaluate(() => {
        const m = document.querySelector('#ch4 .head-map[data-head="3"]').heatmap;
        return { row: Array.from(m.data.slice(4 * m.cols, 5 * m.cols)), shown: [...document.querySelectorAll('#ch4-prov .prov-row li')].map((li) => Number(li.dataset.w)) };
      });
      assert.deepEqual(head.shown, head.row);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test("ch8: a clicked intermediate equals the library's trace: 'values' of the same call", async (h) => {
    const page = await openPage(h, { reducedMotion: 'reduce' });
    try {
      await page.locator('#ch8').scrollIntoViewIfNeeded();
      const pick = async (step, b, hh, which) => {
        await page.click(`#ch8-flow .al-flow-steps [data-step="${step}"]`);
        await page.dispatchEvent(`#ch8-flow g.al-slab[data-key="${b}:${hh}"]`, 'click');
        if (which) await page.selectOption('#ch8-flow .al-flow-picks label:last-child select', which);
        const name = which ? `${step}_${which}` : step;
        const slice = hh >= 0 ? `b = ${b}, h = ${hh}` : `b = ${b}`;
        await page.waitForFunction(([n, sl]) => {
          const m = document.querySelector('#ch8-flow .al-flow-values figure.al-hm')?.heatmap;
          return m && m.opts.name === n && m.title.endsWith(sl) && m.data;
        }, [name, slice]);
        return page.evaluate(() => {
          const m = document.querySelector('#ch8-flow .al-flow-values figure.al-hm').heatmap;
          return { rows: m.rows, cols: m.cols, data: Array.from(m.data) };
        });
      };
      const shown = {
        softmax: await pick('softmax', 1, 2),
        scores: await pick('scores', 0, 5),
        k: await pick('linear_qkv', 1, -1, 'k'),
        norm: await pick('layer_norm', 1, -1),
      };
      // The same call, made here: the page's inputs, a fresh layer with the same seed.
      const ref = await page.evaluate(async () => {
        const { init } = await import('/web/index.js');
        const { deriveTokens } = await import('/web/page/lib/model.js');
        const { embedBatch } = await import('/web/components/lib/tokens.js');
        const st = window.__attentionLab.store.get();
        const lab = await init({ backend: 'wasm' });
        const tk = deriveTokens(st);
        const x = embedBatch(tk.tokens, tk.L, st.E, st.seed, (await lab.positionalEncoding(tk.L, st.E)).data);
        const layer = lab.selfAttentionLayer({ embedDim: st.E, numHeads: st.H, seed: st.seed, dropout: st.drop });
        const r = await layer.forward({ data: x, shape: [tk.B, tk.L, st.E] }, { trace: 'values' });
        layer.dispose();
        const get = (step) => r.trace.find((s) => s.step === step);
        const L = tk.L;
        const E = st.E;
        const H = st.H;
        const block = (data, off, n) => Array.from(data.subarray(off, off + n));
        return {
          softmax: block(get('softmax').value.data, (1 * H + 2) * L * L, L * L),
          scores: block(get('scores').value.data, (0 * H + 5) * L * L, L * L),
          k: block(get('linear_qkv').values.k.data, 1 * L * E, L * E),
          norm: block(get('layer_norm').value.data, 1 * L * E, L * E),
        };
      });
      for (const k of Object.keys(ref)) assert.deepEqual(shown[k].data, ref[k], k);
      assert.equal(shown.softmax.rows, 5);
      assert.equal(shown.k.cols, 512);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('简体中文: every chapter screenshot in zh, and no CJK glyph renders as a missing-glyph box', async (h) => {
    const page = await openPage(h, { hash: '#lang=zh' });
    try {
      assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN');
      // Trace step names and formulas are localised (形状, not 维度, for shape).
      assert.match(await page.textContent('#ch4 .shape-chain [data-step="scores"]'), /注意力分数/);
      assert.match(await page.getAttribute('#ch4 .shape-chain [data-step="softmax"]', 'title'), /沿键轴/);
      assert.equal(await page.textContent('#ch2 .qkv-table thead th:nth-child(2)'), '形状');
      // The canvas labels of a map are Chinese in zh (axis titles).
      assert.match(await page.evaluate(() => document.querySelector('#ch1 figure.al-hm').heatmap.t('hm.kind.query')), /查询/);
      const r = await page.evaluate(() => {
        // Each CJK character of the visible page text and of the canvas labels,
        // drawn with the page's fonts, against U+10FFFD (no font has it: the
        // missing-glyph box).
        const text = document.body.innerText;
        const chars = [...new Set([...text].filter((ch) => /[\u4e00-\u9fff]/.test(ch)))];
        const fonts = [getComputedStyle(document.body).font, '11px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif'];
        const c = document.createElement('canvas');
        c.width = 40;
        c.height = 40;
        const ctx = c.getContext('2d', { willReadFrequently: true });
        const draw = (ch, font) => {
          ctx.clearRect(0, 0, 40, 40);
          ctx.font = font.replace(/\d+(\.\d+)?px/, '28px');
          ctx.fillStyle = '#000';
          ctx.textBaseline = 'middle';
          ctx.fillText(ch, 4, 20);
          const d = ctx.getImageData(0, 0, 40, 40).data;
          let bits = '';
          for (let k = 3; k < d.length; k += 4) bits += d[k] > 100 ? '1' : '0';
          return bits;
        };
        const out = [];
        for (const font of fonts) {
          const tofu = draw('\u{10FFFD}', font);
          const seen = new Map();
          let boxes = 0;
          let same = 0;
          for (const ch of chars) {
            const g = draw(ch, font);
            if (g === tofu) boxes++;
            if (seen.has(g)) same++;
            seen.set(g, ch);
          }
          out.push({ font, chars: chars.length, boxes, same, distinct: seen.size });
        }
        return out;
      });
      for (const f of r) {
        console.log(`    ${f.font.slice(0, 40)}…: ${f.chars} CJK characters, ${f.distinct} distinct glyphs, ${f.boxes} missing-glyph boxes`);
        assert.ok(f.chars > 200, `${f.chars} CJK characters on the page`);
        assert.equal(f.boxes, 0, `${f.boxes} CJK characters render as the missing-glyph box (install fonts-noto-cjk for the browser tests)`);
        assert.ok(f.distinct > f.chars * 0.95, `${f.distinct} distinct glyphs for ${f.chars} characters`);
      }
      await page.evaluate(() => { document.documentElement.dataset.screenshot = '1'; });
      for (const id of await page.evaluate(() => window.__attentionLab.chapters)) {
        await page.locator(`#${id}`).screenshot({ path: path.join(ARTIFACTS, `page-zh-${id}.png`) });
      }
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { long: true });
}
