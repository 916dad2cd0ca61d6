// <attention-lab-trainer> under the strict CSP: trains reverse (L=8, vocab
// 10, one layer, E=64, H=4) in its Web Worker to ≥ 99% held-out sequence
// accuracy while the page keeps drawing (its frame-interval goal is a figure
// of `npm run bench -- --ui`), the trained maps are closest to the
// anti-diagonal, switching heads off drops the accuracy, and after a reload
// the saved safetensors weights give the same held-out accuracy.
import assert from 'node:assert/strict';

const PAGE = '/tests/browser/pages/trainer.html';

function ready(page, timeout = 60000) {
  return page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('tr')?.dataset.state) && document.getElementById('tr').report, null, { timeout });
}

// Mean weight on the cells of a pattern, over every head's [L, L] map.
const SCORES = `(() => {
  const r = document.getElementById('tr').report;
  const out = { 'anti-diagonal': 0, diagonal: 0, previous: 0, uniform: 0 };
  let n = 0;
  for (const m of r.maps) {
    const [H, L] = m.shape;
    for (let h = 0; h < H; h++) {
      n++;
      for (let i = 0; i < L; i++) {
        const row = h * L * L + i * L;
        out['anti-diagonal'] += m.data[row + L - 1 - i] / L;
        out.diagonal += m.data[row + i] / L;
        out.previous += m.data[row + (i + L - 1) % L] / L;
        out.uniform += 1 / L / L;
      }
    }
  }
  for (const k of Object.keys(out)) out[k] /= n;
  return out;
})()`;

export default function (t) {
  t.test('trainer: reverse to ≥ 99% in the page, anti-diagonal maps, the page keeps drawing, ablation, reload + saved weights', async (h) => {
    const page = await h.newPage({ viewport: { width: 1100, height: 1000 } });
    try {
      await page.goto(h.url(PAGE));
      await ready(page);
      assert.equal(await page.evaluate(() => document.getElementById('tr').dataset.state), 'ready');
      // Frame intervals idle (the machine's own budget), then while training.
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
      await page.evaluate(() => {
        window.__frames = [];
        let last = performance.now();
        const tick = (now) => {
          window.__frames.push(now - last);
          last = now;
          if (!window.__stopFrames) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        return document.getElementById('tr').play();
      });
      await page.waitForFunction(() => document.getElementById('tr').report?.heldOut >= 0.99, null, { timeout: 240000, polling: 250 });
      const run = await page.evaluate(async () => {
        window.__stopFrames = true;
        const el = document.getElementById('tr');
        await el.pause();
        const f = window.__frames.slice(5).sort((a, b) => a - b);
        const ms = el.reportMs.slice().sort((a, b) => a - b);
        return { step: el.report.step, heldOut: el.report.heldOut, frames: f.length, p95: f[Math.floor(0.95 * (f.length - 1))], snapshots: el.snapshots.length, state: el.dataset.state, reportP95: ms[Math.floor(0.95 * (ms.length - 1))], reports: ms.length };
      });
      console.log(`    trained to ${(100 * run.heldOut).toFixed(1)}% at step ${run.step}; ${run.frames} frames, p95 ${run.p95.toFixed(1)} ms (idle p95 ${idle.toFixed(1)} ms); ${run.reports} reports drawn, p95 ${run.reportP95.toFixed(1)} ms on the main thread; ${run.snapshots} snapshots`);
      assert.ok(run.heldOut >= 0.99);
      // The frame-interval goal (p95 < 32 ms while training) depends on the
      // CPU the browser gets: it is a figure of `npm run bench -- --ui`. Here
      // the page must have kept drawing while the worker trained.
      assert.ok(run.frames >= 30, `the page drew ${run.frames} frames while training`);
      assert.ok(run.reports >= 2, `${run.reports} progress reports were drawn`);
      assert.ok(run.snapshots >= 2, 'the timeline holds snapshots');
      const scores = await page.evaluate(SCORES);
      const best = Object.entries(scores).sort((a, b) => b[1] - a[1])[0][0];
      assert.equal(best, 'anti-diagonal', `maps closest to ${best}: ${JSON.stringify(scores)}`);
      // Save, then read back the accuracy of exactly these weights.
      const saved = await page.evaluate(async () => {
        const el = document.getElementById('tr');
        const bytes = await el.saveSafetensors();
        const r = await el.loadSafetensors(bytes);
        return { bytes: Array.from(bytes), heldOut: r.heldOut };
      });
      assert.ok(saved.heldOut >= 0.99);
      // Ablation: every head of the layer off → the accuracy collapses; back on → restored.
      const abl = await page.evaluate(async () => {
        const el = document.getElementById('tr');
        for (let hh = 0; hh < 4; hh++) await el.ablate(0, hh, true);
        const off = await el.loadWeights(await el.weights());
        for (let hh = 0; hh < 4; hh++) await el.ablate(0, hh, false);
        const on = await el.loadWeights(await el.weights());
        return { off: off.heldOut, on: on.heldOut, text: el.shadowRoot.querySelector('.al-readout:nth-of-type(2)')?.textContent ?? '' };
      });
      assert.ok(abl.off < 0.5, `held-out accuracy with every head off: ${abl.off}`);
      assert.equal(abl.on, saved.heldOut);
      // Reload: a fresh, untrained model; the saved weights give the same accuracy.
      await page.reload();
      await ready(page);
      const fresh = await page.evaluate(() => document.getElementById('tr').report.heldOut);
      assert.ok(fresh < 0.5, `an untrained model: ${fresh}`);
      const reloaded = await page.evaluate(async (bytes) => (await document.getElementById('tr').loadSafetensors(new Uint8Array(bytes))).heldOut, saved.bytes);
      assert.equal(reloaded, saved.heldOut);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
    }
  }, { timeout: 420000, serial: true }); // records frame intervals while training: alone
  chapterTest(t);
}

export function chapterTest(t) {
  t.test('chapter "Watch attention learn": a pre-trained snapshot loads and is right at once (EN and zh)', async (h) => {
    const page = await h.newPage({ viewport: { width: 1100, height: 1000 } });
    try {
      await page.goto(h.url('/web/page/index.html#lang=zh'));
      await page.waitForSelector('#ch10 attention-lab-trainer');
      await page.evaluate(() => document.getElementById('ch10').scrollIntoView());
      await page.waitForFunction(() => document.getElementById('ch10-trainer')?.report, null, { timeout: 60000 });
      const r = await page.evaluate(async () => {
        const el = document.getElementById('ch10-trainer');
        document.querySelector('#ch10 button[data-task="shift"]').click();
        const t0 = performance.now();
        while (performance.now() - t0 < 30000 && !(el.report?.heldOut >= 0.99 && el.getAttribute('task') === 'shift')) await new Promise((res) => setTimeout(res, 100));
        return { task: el.getAttribute('task'), heldOut: el.report.heldOut, heading: document.querySelector('#ch10 h2').textContent, play: el.shadowRoot.querySelector('button').textContent };
      });
      assert.equal(r.task, 'shift');
      assert.ok(r.heldOut >= 0.99, `held-out accuracy of the shift snapshot: ${r.heldOut}`);
      assert.match(r.heading, /看注意力如何学习/);
      assert.equal(r.play, '播放');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.close();
    }
  });
}
