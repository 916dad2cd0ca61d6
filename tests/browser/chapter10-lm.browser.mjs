// Chapter 10 trains a language model live (issue 22, item 6): "Train a poet" trains a
// character-level GPT-2 from scratch in <attention-lab-lm-trainer>'s Web Worker
// (web/lm-worker.js) on the Tang poems. After 30 s of training the held-out loss is
// lower than at step 0 and the samples (the same seeds each time) have changed; the page kept
// drawing meanwhile, its frame p95 ≤ 32 ms where the machine allows it (the idle p95 and the
// load average say so; otherwise the figure is printed); the head-role table and the maps are
// drawn; the timeline scrubs back to step 0; the shipped model loads as the end point, with a
// lower held-out loss on the same windows. The page is in 中文, and the element's strings too.
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { ARTIFACTS } from './harness.mjs';

const PAGE = '/web/page/index.html';
const TRAIN_MS = 30000;

const p95 = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(0.95 * (s.length - 1))];
};

export default function (t) {
  t.test('ch10: training "a poet" for 30 s in the worker lowers the held-out loss and changes the samples; the page keeps its frames; the shipped model is the end point', async (h) => {
    const page = await h.newPage({ viewport: { width: 1200, height: 1000 } });
    try {
      await page.goto(h.url(`${PAGE}#lang=zh&ch=ch10`));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      // The other chapters' learned views (the shipped model, loaded and drawn on the main thread) first.
      await page.evaluate(() => window.__attentionLab.settled());
      await page.evaluate(() => document.getElementById('ch10-lm').scrollIntoView());
      await page.waitForFunction(() => document.getElementById('ch10-lm')?.dataset.state === 'ready', null, { timeout: 60000 });
      // Nothing is fetched or trained until asked.
      assert.equal(await page.evaluate(() => document.getElementById('ch10-lm').snapshots.length), 0);
      // Idle frame intervals: what this machine allows now.
      const idle = await page.evaluate(() => new Promise((resolve) => {
        const f = [];
        let last = performance.now();
        const tick = (now) => {
          f.push(now - last);
          last = now;
          if (f.length < 120) requestAnimationFrame(tick);
          else resolve(f.slice(5).sort((a, b) => a - b)[Math.floor(0.95 * 114)]);
        };
        requestAnimationFrame(tick);
      }));
      // "Train a poet": set up (corpus, tokenizer, step-0 probe), then play.
      const t0 = Date.now();
      await page.click('#ch10 button[data-lm="zh"]');
      await page.waitForFunction(() => document.getElementById('ch10-lm').report?.step > 0, null, { timeout: 120000, polling: 100 });
      const setupMs = Date.now() - t0;
      const start = await page.evaluate(() => {
        const el = document.getElementById('ch10-lm');
        window.__long = [];
        new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask' });
        window.__frames = [];
        let last = performance.now();
        const tick = (now) => {
          window.__frames.push(now - last);
          last = now;
          if (!window.__stopFrames) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        const s0 = el.snapshots[0];
        return { info: el.info, step: el.report.step, held0: el.heldout[0][1], samples0: s0.samples, snapStep: s0.step };
      });
      assert.equal(start.snapStep, 0);
      assert.equal(start.info.lang, 'zh');
      await page.waitForTimeout(TRAIN_MS);
      const run = await page.evaluate(async () => {
        window.__stopFrames = true;
        const el = document.getElementById('ch10-lm');
        await el.pause();
        await new Promise((r) => setTimeout(r, 300));
        const probe = await el.probe();
        const root = el.shadowRoot;
        return {
          step: el.report.step, stepMs: el.report.stepMs, heldout: el.heldout, frames: window.__frames.slice(5), reportMs: el.reportMs.slice(), long: window.__long.slice(),
          samples: probe.samples, probeHeld: probe.heldOut, snapshots: el.snapshots.length, roles: probe.roles,
          tableRows: root.querySelectorAll('.lm-roles-table tbody tr').length, maps: root.querySelectorAll('canvas.lm-map').length,
          status: root.querySelector('.lm-status').textContent, play: root.querySelector('.lm-play').textContent,
          chart: root.querySelector('.lm-chart').dataset.heldout,
        };
      });
      await page.locator('#ch10-lm').screenshot({ path: path.join(ARTIFACTS, 'ch10-lm-trained.png') });
      const frameP95 = p95(run.frames);
      const load = os.loadavg()[0];
      const held1 = run.heldout[run.heldout.length - 1][1];
      console.log(`    setup ${setupMs} ms; ${run.step} steps in ${TRAIN_MS / 1000} s, ${run.stepMs.toFixed(0)} ms a step; held-out loss ${start.held0.toFixed(3)} → ${held1.toFixed(3)} (step ${run.heldout[run.heldout.length - 1][0]}); ${run.snapshots} snapshots`);
      console.log(`    samples at step 0: ${JSON.stringify(start.samples0)}`);
      console.log(`    samples at step ${run.step}: ${JSON.stringify(run.samples)}`);
      console.log(`    frames: ${run.frames.length}, p95 ${frameP95.toFixed(1)} ms (idle p95 ${idle.toFixed(1)} ms; load average ${load.toFixed(1)} on ${os.cpus().length} cores); draws p95 ${p95(run.reportMs).toFixed(1)} ms on the main thread; main-thread long tasks ${run.long.length ? `${run.long.length}, max ${Math.max(...run.long).toFixed(0)} ms` : 'none'}`);
      const best = (k) => Math.max(...run.roles.heads.map((x) => x[k]));
      console.log(`    best head scores: previous token ${best('previousToken').toFixed(3)} (chance ${run.roles.chance.previousToken.toFixed(3)}), previous line ${best('previousLine').toFixed(3)} (chance ${run.roles.chance.previousLine.toFixed(3)})`);
      assert.ok(held1 < start.held0 - 0.5, `held-out loss ${start.held0} → ${held1}`);
      assert.notDeepEqual(run.samples, start.samples0, 'the samples changed');
      assert.ok(run.snapshots >= 3, `${run.snapshots} snapshots recorded`);
      assert.equal(run.tableRows, start.info.recipe.numLayers * start.info.recipe.numHeads + 1);
      assert.equal(run.maps, start.info.recipe.numLayers * start.info.recipe.numHeads);
      assert.match(run.status, /留出损失/);
      assert.equal(run.play, '播放');
      assert.ok(run.chart.split(',').length >= 2);
      assert.ok(run.frames.length >= 30, `the page drew ${run.frames.length} frames while training`);
      // The frame goal holds when the machine allows it: a calm idle page and a load below the cores.
      if (idle <= 20 && load < os.cpus().length) assert.ok(frameP95 <= 32, `frame p95 ${frameP95.toFixed(1)} ms while training`);
      else console.log(`    (frame goal not asserted: idle p95 ${idle.toFixed(1)} ms, load ${load.toFixed(1)})`);

      // The timeline: back to step 0 shows its samples; then the shipped model, the end point.
      const scrub = await page.evaluate(async () => {
        const el = document.getElementById('ch10-lm');
        const range = el.shadowRoot.querySelector('.lm-timeline');
        range.value = '0';
        range.dispatchEvent(new Event('input'));
        const at0 = { step: el.shadowRoot.querySelector('.lm-samples').dataset.step, label: el.shadowRoot.querySelector('.lm-timeline-label').textContent };
        const shipped = await el.loadShipped();
        return {
          at0, shipped: { heldOut: shipped.heldOut, samples: shipped.samples, layers: shipped.maps.length, config: shipped.config },
          view: el.shadowRoot.querySelector('.lm-samples').dataset.step, max: Number(range.max), snapshots: el.snapshots.length,
          maps: el.shadowRoot.querySelectorAll('canvas.lm-map').length, info: el.shadowRoot.querySelector('.lm-shipped-info').textContent,
          chartShipped: el.shadowRoot.querySelector('.lm-chart').dataset.shipped,
        };
      });
      console.log(`    shipped model: held-out loss ${scrub.shipped.heldOut.toFixed(3)} on the same windows; samples ${JSON.stringify(scrub.shipped.samples)}`);
      assert.equal(scrub.at0.step, '0');
      assert.match(scrub.at0.label, /第 0 步/);
      assert.equal(scrub.view, 'shipped');
      assert.equal(scrub.max, scrub.snapshots, 'the shipped model is the last position of the timeline');
      assert.equal(scrub.maps, scrub.shipped.config.numLayers * scrub.shipped.config.numHeads);
      assert.ok(scrub.shipped.heldOut < held1, `shipped ${scrub.shipped.heldOut} < live ${held1}`);
      assert.equal(Number(scrub.chartShipped), scrub.shipped.heldOut);
      assert.match(scrub.info, /随包发布的模型/);
      await page.locator('#ch10-lm').screenshot({ path: path.join(ARTIFACTS, 'ch10-lm-shipped.png') });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
    }
  }, { timeout: 300000, serial: true }); // trains for 30 s of wall time and records frame gaps: alone

  t.test('ch10 in English: "train an English model" trains in the worker; switching to the poet starts a new session', async (h) => {
    const page = await h.newPage({ viewport: { width: 1200, height: 1000 } });
    try {
      await page.goto(h.url(`${PAGE}#lang=en&ch=ch10`));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await page.evaluate(() => document.getElementById('ch10-lm').scrollIntoView());
      await page.click('#ch10 button[data-lm="en"]');
      await page.waitForFunction(() => document.getElementById('ch10-lm').report?.step >= 30, null, { timeout: 120000, polling: 200 });
      const en = await page.evaluate(async () => {
        const el = document.getElementById('ch10-lm');
        // The shipped model loads while training goes on.
        const shipped = await el.loadShipped();
        const at = el.report.step;
        const t0 = performance.now();
        while (el.report.step <= at + 2 && performance.now() - t0 < 20000) await new Promise((r) => setTimeout(r, 100));
        const kept = el.report.step > at + 2;
        await el.pause();
        const probe = await el.probe();
        return {
          shippedHeld: shipped.heldOut, kept, viewing: el.shadowRoot.querySelector('.lm-samples').dataset.step,
          model: el.getAttribute('model'), info: el.info, held: el.heldout, samples0: el.snapshots[0].samples, samples: probe.samples, roles: Object.keys(probe.roles.chance),
          recipe: el.shadowRoot.querySelector('.lm-recipe').textContent, pressed: document.querySelector('#ch10 button[data-lm="en"]').getAttribute('aria-pressed'),
        };
      });
      console.log(`    en: shipped model ${en.shippedHeld.toFixed(3)} on the same windows; ${en.info.parameters} parameters, held-out ${en.held[0][1].toFixed(3)} → ${en.held[en.held.length - 1][1].toFixed(3)} (step ${en.held[en.held.length - 1][0]}); samples ${JSON.stringify(en.samples)}`);
      assert.equal(en.model, 'en');
      assert.ok(en.kept, 'training went on after the shipped model loaded');
      assert.equal(en.viewing, 'shipped', 'the view stays on the shipped model while new snapshots arrive');
      assert.ok(en.shippedHeld < en.held[en.held.length - 1][1], `shipped ${en.shippedHeld}`);
      assert.equal(en.info.lang, 'en');
      assert.equal(en.info.vocabSize, 100);
      assert.ok(en.held[en.held.length - 1][1] < en.held[0][1] - 0.5);
      assert.notDeepEqual(en.samples, en.samples0);
      assert.ok(!en.roles.includes('previousLine'), 'prose has no previous-line score');
      assert.match(en.recipe, /an English model/);
      assert.equal(en.pressed, 'true');
      // On a phone the trained view (table, maps, samples) does not widen the page.
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(document.documentElement.scrollWidth - window.innerWidth))));
      assert.ok(overflow <= 1, `horizontal overflow ${overflow}px on a phone`);
      await page.setViewportSize({ width: 1200, height: 1000 });
      // The poet: a new worker and session from step 0.
      await page.click('#ch10 button[data-lm="zh"]');
      await page.waitForFunction(() => document.getElementById('ch10-lm').info?.lang === 'zh' && document.getElementById('ch10-lm').report?.step > 0, null, { timeout: 120000, polling: 200 });
      const zh = await page.evaluate(async () => {
        const el = document.getElementById('ch10-lm');
        await el.pause();
        return { first: el.history[0].step, snap0: el.snapshots[0].step, vocab: el.info.vocabSize };
      });
      assert.deepEqual(zh, { first: 1, snap0: 0, vocab: 3874 });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
    }
  }, { timeout: 300000, long: true });
}
