// Chapter 10's induction model (issue 33 item 8): "Train an induction head" trains chapter 10's
// small English model with repeated random spans in <attention-lab-lm-trainer>'s worker. The
// induction readout (the curve of the best head's score on 31 random characters written twice,
// its line of text, the table's last column) shows the library's values: the live curve equals
// LmSession's in Node for the same steps (the same recipe, seed and data), and "Load the shipped
// model" shows lab.pretrained('induction')'s best head, >= 0.4, equal to
// model.headScores.repeated in Node. A second test trains until the phase change: the best head's
// score passes 0.4 in the reader's tab (about 2,600 steps, a few minutes; docs/training.md).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';
import { ARTIFACTS } from './harness.mjs';
import { Tokenizer } from '../../web/lib/vendor/tokenizers.js';
import { LmSession } from '../../web/lib/train/lm-session.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PAGE = '/web/page/index.html';
const STEPS = 30;

export default function (t) {
  t.test('ch10 "Train an induction head": the induction readout is LmSession\'s curve (Node, same steps) and the shipped model\'s best head (>= 0.4, = headScores.repeated in Node), in English and 中文', async (h) => {
    const lab = await init({ backend: 'wasm' });
    const page = await h.newPage({ viewport: { width: 1200, height: 1000 } });
    try {
      // Node: the same session, STEPS steps.
      const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');
      const tj = JSON.parse(read('data/models/en/tokenizer.json'));
      const tok = new Tokenizer(tj, JSON.parse(read('data/models/en/tokenizer_config.json')));
      const s = new LmSession(lab, { lang: 'induction', tokenizer: tok, tokenizerJson: tj, trainText: read('data/corpora/en/train.txt'), heldoutText: read('data/corpora/en/heldout.txt') });
      s.run(1e9, STEPS);
      const nodeCurve = s.induction.slice();
      const nodeInfo = s.describe();
      s.dispose();
      const shipped = await lab.pretrained('induction');
      const rep = shipped.headScores.repeated({ length: nodeInfo.inductionLength, seed: 0 });
      const nodeBest = Math.max(...rep.induction.data);
      shipped.dispose();

      await page.goto(h.url(`${PAGE}#lang=en&ch=ch10`));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.evaluate(() => document.getElementById('ch10-lm').scrollIntoView());
      await page.evaluate(() => document.querySelector('#ch10 button[data-lm="induction"]').click());
      await page.waitForFunction(() => document.getElementById('ch10-lm').report?.step > 0, null, { timeout: 120000, polling: 100 });
      // Pause at STEPS exactly: step the rest after a pause.
      const run = await page.evaluate(async (n) => {
        const el = document.getElementById('ch10-lm');
        await el.pause();
        await new Promise((r) => setTimeout(r, 300));
        if (el.report.step < n) await el.step(n - el.report.step);
        // the drawing waits for an animation frame
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const root = el.shadowRoot;
        return {
          step: el.report.step, info: el.info, induction: el.induction, pressed: document.querySelector('#ch10 button[data-lm="induction"]').getAttribute('aria-pressed'),
          line: root.querySelector('.lm-induction').textContent, chart: root.querySelector('.lm-induction-chart').dataset.induction,
          recipe: root.querySelector('.lm-recipe').textContent,
        };
      }, STEPS);
      console.log(`    induction: ${run.step} steps in the worker; curve ${JSON.stringify(run.induction.slice(-2))}; Node ${JSON.stringify(nodeCurve.slice(-2))}`);
      assert.equal(run.info.lang, 'induction');
      assert.equal(run.pressed, 'true');
      assert.match(run.recipe, /repeated random spans/);
      assert.equal(run.info.inductionLength, nodeInfo.inductionLength);
      assert.equal(run.info.inductionCeiling, nodeInfo.inductionCeiling);
      // The steps past STEPS (a slice can overrun the pause) are compared up to STEPS.
      const upTo = run.induction.filter(([st]) => st <= STEPS);
      assert.equal(upTo.length, nodeCurve.length);
      for (let i = 0; i < upTo.length; i++) {
        assert.equal(upTo[i][0], nodeCurve[i][0]);
        assert.ok(Math.abs(upTo[i][1] - nodeCurve[i][1]) <= 1e-5, `step ${upTo[i][0]}: ${upTo[i][1]} vs Node ${nodeCurve[i][1]}`);
        assert.deepEqual(upTo[i].slice(2), nodeCurve[i].slice(2));
      }
      const last = run.induction[run.induction.length - 1];
      assert.ok(run.line.includes(`Induction at step ${last[0]}: head ${last[2]} · ${last[3]} scores ${last[1].toFixed(3)}`), run.line);
      assert.equal(run.chart.split(',').length, run.induction.length);

      // The shipped induction model, the end point.
      const end = await page.evaluate(async () => {
        const el = document.getElementById('ch10-lm');
        const sh = await el.loadShipped();
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const root = el.shadowRoot;
        const head = [...root.querySelectorAll('.lm-roles-table thead th')].map((th) => th.textContent);
        const rows = [...root.querySelectorAll('.lm-roles-table tbody tr[data-layer]')].map((tr) => Number(tr.lastElementChild.textContent));
        return {
          best: Math.max(...sh.induction.induction.data), chartShipped: root.querySelector('.lm-induction-chart').dataset.shipped,
          line: root.querySelector('.lm-induction').textContent, head, rows,
        };
      });
      console.log(`    shipped induction model: best head ${end.best.toFixed(4)} (Node ${nodeBest.toFixed(4)}); table column ${JSON.stringify(end.rows)}`);
      assert.ok(Math.abs(end.best - nodeBest) <= 1e-6, `${end.best} vs ${nodeBest}`);
      assert.ok(end.best >= 0.4, `shipped best induction ${end.best}`);
      assert.equal(Number(end.chartShipped), end.best);
      assert.ok(end.line.includes(`The shipped model’s best head: ${end.best.toFixed(3)}.`), end.line);
      assert.equal(end.head[end.head.length - 1], 'induction, 31 random characters × 2');
      assert.equal(Math.max(...end.rows).toFixed(3), end.best.toFixed(3));

      // 中文: the same readout in the page's other language.
      await page.evaluate(() => { location.hash = 'lang=zh&ch=ch10'; });
      await page.waitForFunction(() => /第 \d+ 步的归纳/.test(document.getElementById('ch10-lm')?.shadowRoot.querySelector('.lm-induction')?.textContent ?? ''), null, { timeout: 30000 });
      const zh = await page.evaluate(() => document.getElementById('ch10-lm').shadowRoot.querySelector('.lm-induction').textContent);
      assert.match(zh, /随包发布的模型的最佳头/);
      await page.locator('#ch10-lm').screenshot({ path: path.join(ARTIFACTS, 'ch10-induction.png') });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
      lab.dispose();
    }
  }, { timeout: 300000, long: true });

  t.test('ch10 "Train an induction head": the phase change in the worker, the best head passing 0.4 within 10 minutes, the curve plotted as it goes', async (h) => {
    const page = await h.newPage({ viewport: { width: 1200, height: 1000 } });
    try {
      await page.goto(h.url(`${PAGE}#lang=en&ch=ch10`));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.evaluate(() => document.getElementById('ch10-lm').scrollIntoView());
      await page.evaluate(() => document.querySelector('#ch10 button[data-lm="induction"]').click());
      await page.waitForFunction(() => document.getElementById('ch10-lm').report?.step > 0, null, { timeout: 120000, polling: 100 });
      const t0 = Date.now();
      const seen = [];
      let last = null;
      while (Date.now() - t0 < 600000) {
        await page.waitForTimeout(5000);
        last = await page.evaluate(() => {
          const el = document.getElementById('ch10-lm');
          const c = el.induction[el.induction.length - 1];
          return { step: el.report.step, stepMs: el.report.stepMs, best: c ? c[1] : 0, head: c ? `L${c[2]} H${c[3]}` : '', chart: el.shadowRoot.querySelector('.lm-induction-chart').dataset.induction.split(',').length };
        });
        seen.push({ s: Math.round((Date.now() - t0) / 1000), ...last });
        if (last.best >= 0.4) break;
      }
      const line = await page.evaluate(async () => {
        const el = document.getElementById('ch10-lm');
        await el.pause();
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        return el.shadowRoot.querySelector('.lm-induction').textContent;
      });
      const every = seen.filter((p, i) => i % 6 === 5 || i === seen.length - 1);
      console.log(`    ${every.map((p) => `${p.s} s: step ${p.step} best ${p.best.toFixed(3)} (${p.head})`).join('; ')}`);
      console.log(`    ${last.step} steps, ${last.stepMs.toFixed(0)} ms a step in the worker; ${line}`);
      await page.locator('#ch10-lm').screenshot({ path: path.join(ARTIFACTS, 'ch10-induction-formed.png') });
      assert.ok(last.best >= 0.4, `best induction ${last.best} at step ${last.step} after 10 minutes`);
      assert.ok(last.chart >= last.step / 10, 'the curve has a point every 10 steps');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
    }
  }, { timeout: 800000, long: true, serial: true });
}
