// The tutorial page (web/page/) in headless Chromium under the strict CSP:
// loading, every chapter, the acceptance checks of issue 5, and the
// per-frame benchmark. Screenshots go to test-artifacts/browser/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS } from './harness.mjs';
import { routeStandIns } from './pretrained-fixture.mjs';
import { RANDOM_WEIGHTS } from '../../web/page/lib/state.js';

const PAGE = '/web/page/';
const VIRIDIS_ZERO = [68, 1, 84];
// Chapters 1-9 open on the shipped model (page-learned.browser.mjs); these checks are about the
// seeded view and its controls, so they put every chapter on "random" unless asked otherwise.
const RANDOM_HASH = Object.entries(RANDOM_WEIGHTS).map(([k, v]) => `${k}=${v}`).join('&');

async function openPage(h, { hash = '', learned = false, ...opts } = {}) {
  if (!learned) hash = hash ? `${hash}&${RANDOM_HASH}` : `#${RANDOM_HASH}`;
  const page = await h.newPage(opts);
  // The shipped models (the trained-model chapter, chapter 4's learned view), or stand-ins while
  // data/models/ lacks their trained files.
  await routeStandIns(page);
  const t0 = Date.now();
  await page.goto(h.url(PAGE + hash));
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 30000 });
  page.loadMs = Date.now() - t0;
  await settle(page);
  return page;
}

/** Waits until every chapter has rendered the current state. */
async function settle(page) {
  await page.evaluate(() => window.__attentionLab.settled());
}

async function setControl(page, key, value) {
  const sel = `#ctl-${key}`;
  const tag = await page.$eval(sel, (el) => el.tagName);
  if (tag === 'SELECT') await page.selectOption(sel, String(value));
  else {
    await page.fill(sel, String(value));
    await page.press(sel, 'Enter');
  }
  await settle(page);
}

function splitLabel(page) {
  return page.textContent('#ch4 .shape-chain [data-step="split_heads"]');
}

async function screenshotChapters(page, prefix) {
  await page.evaluate(() => { document.documentElement.dataset.screenshot = '1'; });
  for (const id of await page.evaluate(() => window.__attentionLab.chapters)) {
    await page.locator(`#${id}`).screenshot({ path: path.join(ARTIFACTS, `${prefix}-${id}.png`) });
  }
  await page.evaluate(() => { delete document.documentElement.dataset.screenshot; });
}

export default function (t) {
  t.test('page loads offline under CSP, every chapter renders (screenshots saved)', async (h) => {
    // The default page: chapters 1-9 on the shipped model of its language.
    const page = await openPage(h, { learned: true });
    try {
      const r = await page.evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        return {
          registered: window.__attentionLab.chapters,
          toc: [...document.querySelectorAll('.toc a')].map((a) => a.getAttribute('href')),
          chapters: [...document.querySelectorAll('section.chapter')].map((s) => ({ id: s.id, rendered: s.dataset.rendered, state: s.dataset.state, canvases: s.querySelectorAll('canvas').length, heading: s.querySelector('h2').textContent.trim() })),
          backend: document.documentElement.dataset.backend,
          domInteractive: nav.domInteractive,
          firstChapter: performance.getEntriesByName('attention-lab:first-chapter')[0]?.startTime,
          allChapters: performance.getEntriesByName('attention-lab:all-chapters')[0]?.startTime,
          hosts: [...new Set(performance.getEntriesByType('resource').map((e) => new URL(e.name).hostname))],
          modules: performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname).filter((p) => /\.m?js$/.test(p)),
          preloaded: [...document.querySelectorAll('link[rel="modulepreload"]')].map((l) => new URL(l.href).pathname),
        };
      });
      // One section and one TOC entry per registered chapter, in registry order.
      assert.deepEqual(r.chapters.map((c) => c.id), r.registered);
      assert.deepEqual(r.toc, r.registered.map((id) => `#${id}`));
      for (let k = 1; k <= 9; k++) assert.ok(r.registered.includes(`ch${k}`), `ch${k} registered`);
      for (const c of r.chapters) {
        assert.equal(c.rendered, 'true', `${c.id} rendered`);
        assert.equal(c.state, 'ok', `${c.id} state`);
        assert.ok(c.heading.length > 3, `${c.id} has a heading`);
      }
      for (const id of ['ch1', 'ch2', 'ch3', 'ch4', 'ch5', 'ch6', 'ch7']) assert.ok(r.chapters.find((c) => c.id === id).canvases > 0, `${id} draws canvases`);
      assert.equal(r.backend, 'wasm');
      assert.deepEqual(r.hosts.filter((x) => x !== '127.0.0.1'), []);
      // index.html preloads the whole module graph (no import waterfall): keep the list complete.
      // The scalar module is loaded lazily, after the first render, for the
      // cross-backend difference; it is not on the critical path.
      // The threaded build is picked at run time (crossOriginIsolated pages with
      // SharedArrayBuffer), so it cannot be preloaded unconditionally either.
      assert.deepEqual(r.modules.filter((m) => !r.preloaded.includes(m) && !m.includes('webgpu') && !m.includes('wgsl') && !m.includes('attention_lab_scalar') && !m.includes('attention_lab_threads')), []);
      fs.writeFileSync(path.join(ARTIFACTS, 'page-load.json'), JSON.stringify({ domInteractiveMs: r.domInteractive, firstChapterMs: r.firstChapter, allChaptersMs: r.allChapters }, null, 2));
      console.log(`    DOM interactive ${r.domInteractive.toFixed(0)} ms, first chapter computed ${r.firstChapter.toFixed(0)} ms, all ${r.registered.length} ${r.allChapters.toFixed(0)} ms after navigation`);
      assert.ok(r.firstChapter < r.allChapters);
      await screenshotChapters(page, 'page');
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('H 8 → 4: split-heads label [2,8,5,64] → [2,4,5,128], 8 → 4 heatmaps', async (h) => {
    const page = await openPage(h);
    try {
      assert.match(await splitLabel(page), /\[2,8,5,64\]/);
      assert.equal(await page.locator('#ch4 .head-map').count(), 8);
      await setControl(page, 'H', 4);
      assert.match(await splitLabel(page), /\[2,4,5,128\]/);
      assert.equal(await page.locator('#ch4 .head-map').count(), 4);
      // Chapter 8's step list follows the same trace.
      assert.match(await page.textContent('#ch8-flow .al-flow-steps [data-step="split_heads"]'), /\[2,4,5,128\]/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('E/H mismatch shows the library error inline and the page recovers', async (h) => {
    const page = await openPage(h);
    try {
      await setControl(page, 'H', 3);
      const err = page.locator('#ch4 .chapter-error');
      await err.waitFor({ state: 'visible' });
      assert.match(await err.textContent(), /RangeError: multiHeadAttention: embedDim \(512\) must be divisible by numHeads \(3\)/);
      assert.equal(await page.getAttribute('#ch4', 'data-state'), 'error');
      // Chapters that do not depend on H keep working.
      for (const id of ['ch1', 'ch2', 'ch3', 'ch5', 'ch6']) assert.equal(await page.getAttribute(`#${id}`, 'data-state'), 'ok', id);
      await setControl(page, 'E', 96);
      assert.equal(await page.getAttribute('#ch4', 'data-state'), 'ok');
      assert.match(await splitLabel(page), /\[2,3,5,32\]/);
      await setControl(page, 'E', 512);
      await setControl(page, 'H', 4);
      await err.waitFor({ state: 'hidden' });
      assert.equal(await page.locator('#ch4 .head-map').count(), 4);
      for (let k = 1; k <= 9; k++) assert.equal(await page.getAttribute(`#ch${k}`, 'data-state'), 'ok', `ch${k}`);
      // Out-of-range input is refused next to the control, the state untouched.
      await page.fill('#ctl-E', '5000');
      await page.press('#ctl-E', 'Enter');
      assert.match(await page.textContent('#ctl-E-msg'), /between 1 and 1024/);
      assert.equal(await page.evaluate(() => window.__attentionLab.store.get().E), 512);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('causal mask: the upper triangle of the heatmap canvas is the palette zero colour', async (h) => {
    const page = await openPage(h);
    try {
      await setControl(page, 'mask', 'causal');
      const r = await page.evaluate(() => {
        const out = [];
        for (const sel of ['#ch4 .head-map[data-head="0"] canvas.al-hm-canvas', '#ch4 .head-map[data-head="5"] canvas.al-hm-canvas', '#ch4 .avg-map canvas.al-hm-canvas', '#ch5 canvas.al-hm-canvas']) {
          const c = document.querySelector(sel);
          const d = c.dataset;
          const ctx = c.getContext('2d');
          const n = Number(d.rows);
          const upper = [];
          const lower = [];
          for (let i = 0; i < n; i++) {
            for (let j = 0; j < n; j++) {
              const x = Math.floor(Number(d.plotX) + (j + 0.5) * Number(d.cellW));
              const y = Math.floor(Number(d.plotY) + (i + 0.5) * Number(d.cellH));
              const px = Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3));
              (j > i ? upper : lower).push(px);
            }
          }
          out.push({ sel, n, upper, lower });
        }
        return out;
      });
      const isZero = (px) => px.every((v, k) => Math.abs(v - [68, 1, 84][k]) <= 2);
      for (const m of r.slice(0, 3)) {
        assert.equal(m.n, 5);
        assert.equal(m.upper.length, 10);
        assert.ok(m.upper.every(isZero), `${m.sel}: upper triangle ${JSON.stringify(m.upper)}`);
        assert.ok(!m.lower.every(isZero), `${m.sel}: the lower triangle is not all zero`);
      }
      // Chapter 5's first map is the keep mask itself: 1 (bright) below, 0 above.
      assert.ok(r[3].upper.every(isZero));
      assert.deepEqual(VIRIDIS_ZERO, [68, 1, 84]);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('language switch changes the visible strings (English ↔ 简体中文)', async (h) => {
    const page = await openPage(h);
    try {
      const before = { h1: await page.textContent('h1'), ch4: await page.textContent('#ch4 h2'), ctl: await page.textContent('#ctl-H-label'), btn: await page.textContent('#permalink') };
      await page.selectOption('#lang', 'zh');
      await settle(page);
      const after = { h1: await page.textContent('h1'), ch4: await page.textContent('#ch4 h2'), ctl: await page.textContent('#ctl-H-label'), btn: await page.textContent('#permalink') };
      for (const k of Object.keys(before)) {
        assert.notEqual(after[k], before[k], k);
        assert.match(after[k], /[\u4e00-\u9fff]/, `${k} is Chinese: ${after[k]}`);
      }
      assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN');
      assert.match(await page.textContent('#ch4 .head-map .al-hm-title'), /第 0 头/);
      assert.match(page.url(), /lang=zh/);
      await page.selectOption('#lang', 'en');
      await settle(page);
      assert.equal(await page.textContent('h1'), before.h1);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('exports: PNG (signature), SVG, CSV and JSON downloads', async (h) => {
    const page = await openPage(h);
    try {
      const grab = async (sel) => {
        const [dl] = await Promise.all([page.waitForEvent('download'), page.click(sel)]);
        const file = await dl.path();
        return { name: dl.suggestedFilename(), bytes: fs.readFileSync(file) };
      };
      const png = await grab('#ch4 .avg-map [data-export="png"]');
      assert.match(png.name, /\.png$/);
      assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.ok(png.bytes.length > 500);
      fs.writeFileSync(path.join(ARTIFACTS, 'export-head-average.png'), png.bytes);
      const svg = await grab('#ch1 .al-hm:nth-of-type(2) [data-export="svg"]');
      assert.match(svg.bytes.toString('utf8'), /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.match(svg.bytes.toString('utf8'), /<rect /);
      const csv = await grab('#ch4 .avg-map [data-export="csv"]');
      const lines = csv.bytes.toString('utf8').trim().split('\n');
      assert.equal(lines.length, 6);
      assert.equal(lines[0].split(',').length, 6);
      const json = JSON.parse((await grab('#ch4 .avg-map [data-export="json"]')).bytes.toString('utf8'));
      assert.deepEqual(json.shape, [5, 5]);
      const rowSum = json.data[0].reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(rowSum - 1) < 1e-5, `row sums to 1: ${rowSum}`);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('permalink round-trips the whole state; malformed and oversized hashes are refused', async (h) => {
    const page = await openPage(h);
    let other;
    try {
      await setControl(page, 'text', '我爱 attention 层');
      await setControl(page, 'H', 4);
      await setControl(page, 'mask', 'both');
      await setControl(page, 'seed', 42);
      await page.selectOption('#theme', 'dark');
      await page.click('#ch7-train');
      await settle(page);
      await page.click('#permalink');
      const url = await page.inputValue('#permalink-out');
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/web\/page\/#/);
      const state = await page.evaluate(() => window.__attentionLab.store.get());
      other = await h.newPage();
      await other.goto(url);
      await other.waitForFunction(() => document.documentElement.dataset.ready === 'true');
      await settle(other);
      const state2 = await other.evaluate(() => window.__attentionLab.store.get());
      assert.deepEqual(state2, state);
      assert.equal(await other.inputValue('#ctl-text'), '我爱 attention 层');
      assert.equal(await other.inputValue('#ctl-H'), '4');
      assert.equal(await other.getAttribute('html', 'data-theme'), 'dark');
      assert.equal(await other.locator('#ch4 .head-map').count(), 4);
      assert.match(await other.textContent('#ch1 .tokens'), /我.*爱.*attention.*层/s);
      assert.deepEqual(other.problems(), []);
      await other.closeAll();
      other = null;

      // A malformed hash on load: a message, and the defaults.
      const p = await h.newPage();
      try {
        await p.goto(h.url(`${PAGE}#H=3x`));
        await p.waitForFunction(() => document.documentElement.dataset.ready === 'true');
        const banner = p.locator('#banner');
        await banner.waitFor({ state: 'visible' });
        assert.match(await banner.textContent(), /H must be an integer, got "3x"/);
        assert.equal(await p.evaluate(() => window.__attentionLab.store.get().H), 8);
        assert.equal(await p.evaluate(() => window.__attentionLab.store.get().w4), 'learned');
        // Edited by hand in the address bar (hashchange): each refused with its reason, state kept.
        for (const [hash, re] of [['#E=512&E=256', /given twice/], ['#nope=1', /unknown setting "nope"/], [`#text=${'a'.repeat(2100)}`, /too long \(2105 characters; at most 2048\)/], ['#B=9', /between 1 and 4/], ['#text=%E0%A4%A', /%-encoded/], ['#H=4&&E=64', /empty setting/], ['#mask=all', /one of none, padding, causal, both/]]) {
          const prev = await banner.textContent();
          await p.evaluate((x) => { location.hash = x; }, hash);
          await p.waitForFunction((x) => document.getElementById('banner').textContent !== x, prev);
          assert.match(await banner.textContent(), re, hash.slice(0, 30));
          assert.equal(await p.evaluate(() => window.__attentionLab.store.get().H), 8);
        }
        // A good hash applies and clears the message.
        await p.evaluate(() => { location.hash = '#H=2&w4=random'; });
        await p.waitForFunction(() => window.__attentionLab.store.get().H === 2);
        await banner.waitFor({ state: 'hidden' });
        await settle(p);
        assert.match(await p.textContent('#ch4 .shape-chain [data-step="split_heads"]'), /\[2,2,5,256\]/);
        assert.deepEqual(p.problems(), []);
      } finally {
        await p.closeAll();
      }
      assert.deepEqual(page.problems(), []);
    } finally {
      if (other) await other.closeAll();
      await page.closeAll();
    }
  }, { long: true });

  t.test('reduced motion disables the animations', async (h) => {
    const run = async (reducedMotion) => {
      const page = await openPage(h, { reducedMotion });
      try {
        await page.locator('#ch8').scrollIntoViewIfNeeded();
        const before = await page.evaluate(() => ({ ...window.__attentionLab.motionStats }));
        await page.click('#ch8-flow .al-flow-next');
        await page.waitForTimeout(1200);
        await page.click('#ch8-flow .al-flow-next');
        await page.waitForTimeout(1200);
        const after = await page.evaluate(() => ({ ...window.__attentionLab.motionStats }));
        const css = await page.evaluate(() => getComputedStyle(document.querySelector('#ch3 .entropy .bar > span')).transitionDuration);
        const step = await page.textContent('#ch8-flow .al-shape-label');
        assert.deepEqual(page.problems(), []);
        return { frames: after.frames - before.frames, tweens: after.tweens - before.tweens, skipped: after.skipped - before.skipped, css, step };
      } finally {
        await page.closeAll();
      }
    };
    const moving = await run('no-preference');
    const still = await run('reduce');
    assert.ok(moving.frames > 5, `animated frames without the preference: ${moving.frames}`);
    assert.equal(still.frames, 0);
    assert.equal(still.tweens, 0);
    assert.ok(still.skipped >= 2);
    assert.equal(still.css, '0s');
    assert.notEqual(moving.css, '0s');
    assert.equal(still.step, moving.step);
    assert.equal(still.step, '[2,8,5,64]');
  }, { long: true });

  t.test('heatmap: hover read-out, click lock, arrow keys, table fallback, aria', async (h) => {
    const page = await openPage(h);
    try {
      const map = page.locator('#ch1 .al-hm').nth(1);
      const plot = map.locator('.al-hm-plot');
      assert.match(await plot.getAttribute('aria-label'), /heatmap of 5 rows by 5 columns/);
      const geom = await map.locator('canvas.al-hm-canvas').evaluate((c) => ({ ...c.dataset, dpr: devicePixelRatio }));
      const at = (i, j) => ({ x: (Number(geom.plotX) + (j + 0.5) * Number(geom.cellW)) / geom.dpr, y: (Number(geom.plotY) + (i + 0.5) * Number(geom.cellH)) / geom.dpr });
      await map.locator('.al-hm-overlay').hover({ position: at(1, 2) });
      assert.match(await map.locator('.al-hm-readout').textContent(), /query 1 “is” → key 2 “all”: 0\.\d+/);
      await map.locator('.al-hm-overlay').click({ position: at(3, 0) });
      await page.mouse.move(5, 5);
      assert.match(await map.locator('.al-hm-readout').textContent(), /query 3 “you” → key 0 “attention”: .*\(locked\)/);
      await plot.focus();
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowDown');
      assert.match(await map.locator('.al-hm-readout').textContent(), /query 4 “need” → key 1 “is”/);
      await page.keyboard.press('Escape');
      await map.locator('.al-hm-table summary').click();
      await map.locator('.al-hm-table tbody tr').first().waitFor();
      assert.equal(await map.locator('.al-hm-table tbody tr').count(), 5);
      assert.equal(await map.locator('.al-hm-table thead th').count(), 6);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  // The time per move is a figure of `npm run bench -- --ui` (goal: under a
  // frame); here the read-out must follow the pointer over 512 × 512 cells.
  t.test('L = 512: heatmap hover read-out follows the pointer', async (h) => {
    const page = await openPage(h, { hash: '#B=1&L=512&E=64&H=2&dk=16&dv=16&peN=128' });
    try {
      const map = page.locator('#ch4 .avg-map');
      await map.scrollIntoViewIfNeeded();
      const canvas = map.locator('canvas.al-hm-canvas');
      assert.equal(await canvas.getAttribute('data-rows'), '512');
      const geom = await canvas.evaluate((c) => ({ ...c.dataset }));
      const seen = await map.locator('.al-hm-overlay').evaluate(async (ov, g) => {
        const readout = ov.closest('.al-hm').querySelector('.al-hm-readout');
        const out = [];
        for (const [i, j] of [[3, 500], [256, 7], [511, 511]]) {
          // (Read each time: the first read-out's text may move the map.)
          const r = ov.getBoundingClientRect();
          // The map may be drawn narrower than its canvas (CSS pixels per canvas pixel).
          const sx = r.width / ov.width;
          const sy = r.height / ov.height;
          const x = r.left + (Number(g.plotX) + (j + 0.5) * Number(g.cellW)) * sx;
          const y = r.top + (Number(g.plotY) + (i + 0.5) * Number(g.cellH)) * sy;
          ov.dispatchEvent(new PointerEvent('pointermove', { clientX: x, clientY: y, bubbles: true }));
          out.push(readout.textContent);
        }
        return out;
      }, geom);
      console.log(`    L=512 hover read-outs: ${seen.map((s) => s.split(':')[0]).join(' | ')}`);
      assert.match(seen[0], /query 3 .*→ key 500 .*: \d\.\d+/);
      assert.match(seen[1], /query 256 .*→ key 7 .*: \d\.\d+/);
      assert.match(seen[2], /query 511 .*→ key 511 .*: \d\.\d+/);
      // The chapter's provenance panel shows the 33 keys around key 511 of
      // that row (not all 512), the hovered one marked, and stays small.
      const prov = await page.evaluate(() => {
        const el = document.getElementById('ch4-prov');
        const lis = [...el.querySelectorAll('.prov-row li')];
        return { i: el.dataset.i, keys: lis.map((li) => Number(li.dataset.k)), cur: lis.filter((li) => li.classList.contains('cur')).map((li) => Number(li.dataset.k)), height: el.getBoundingClientRect().height, note: el.querySelector('.prov-window')?.textContent };
      });
      assert.equal(prov.i, '511');
      assert.deepEqual(prov.keys, Array.from({ length: 33 }, (_, n) => 479 + n));
      assert.deepEqual(prov.cur, [511]);
      assert.match(prov.note, /Keys 479 to 511 of 512/);
      assert.ok(prov.height < 600, `provenance panel ${prov.height}px tall`);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('phone-sized viewport and dark theme', async (h) => {
    const page = await openPage(h, { viewport: { width: 390, height: 844 }, hash: '#theme=dark' });
    try {
      const r = await page.evaluate(() => ({
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        bg: getComputedStyle(document.body).backgroundColor,
      }));
      assert.ok(r.overflow <= 1, `horizontal overflow ${r.overflow}px`);
      assert.equal(r.bg, 'rgb(17, 20, 24)');
      await page.evaluate(() => { document.documentElement.dataset.screenshot = '1'; });
      await page.screenshot({ path: path.join(ARTIFACTS, 'page-phone-top.png') });
      await page.locator('#ch4').screenshot({ path: path.join(ARTIFACTS, 'page-phone-ch4.png') });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('benchmark: recompute + redraw at [B=1, L=32, E=128, H=4] on wasm SIMD', async (h) => {
    const page = await openPage(h);
    try {
      const r = await page.evaluate(() => window.__attentionLabBench({ B: 1, L: 32, E: 128, H: 4, frames: 60, backend: 'wasm' }));
      fs.writeFileSync(path.join(ARTIFACTS, 'bench-frame.json'), JSON.stringify(r, null, 2));
      // The goal (median under 16 ms) is a figure of `npm run bench -- --ui`:
      // it depends on the CPU the browser gets, so it is printed here, not asserted.
      console.log(`    ${r.config}: median ${r.medianMs.toFixed(2)} ms, p95 ${r.p95Ms.toFixed(2)} ms, max ${r.maxMs.toFixed(2)} ms per frame`);
      assert.equal(r.frames, 60);
      assert.ok(Number.isFinite(r.medianMs) && r.medianMs > 0 && r.p95Ms >= r.medianMs && r.maxMs >= r.p95Ms);
      assert.equal(await page.locator('#ch4 .head-map').count(), 8);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { serial: true }); // measures frame times: alone
}
