// `npm run test:examples`: builds the documentation-site examples (cached by
// their inputs: scripts/examples-build.mjs) and checks each in headless
// Chromium (playwright-core + Debian's chromium, as tests/browser):
//   - every embedded element renders (its screenshot has non-background
//     pixels; a heatmap's canvas has painted pixels);
//   - the heatmap of the shipped English model (<attention-lab-heatmap
//     model="en" text="…">, loaded lazily) draws that model's real heads: its
//     maps equal, within 1e-5, the attention of the shown layer that Node
//     computes with the package the site was built from
//     (init({ backend: 'wasm' }) → lab.pretrained('en') → forwardSync);
//     the model's four files are fetched from the site's own origin, under
//     its base path, with the package's bytes;
//   - no console error, page error, hydration warning, failed request,
//     CSP violation (securitypolicyviolation events) or request that leaves
//     the origin, under the site's CSP (tests/examples/sites.mjs), and no
//     inline script of ours (those the CSP allows are the framework's);
//   - one wasm instance on the page;
//   - the site's dark toggle changes the components' background and repaints the canvas;
//   - going to another page and back (on the client where the framework has a
//     client-side router) leaves one element of each kind, working, and still
//     one wasm instance.
//
//   node tests/examples/run.mjs [name ...]      (default: all five)
// Not part of `npm test` (the builds take minutes): .ci/run runs it after.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { chromiumPath, CHROMIUM_ARGS, REPO_ROOT } from '../browser/harness.mjs';
import { buildSite, OUT_ROOT } from '../../scripts/examples-build.mjs';
import { startSiteServer } from './server.mjs';
import { SITES, EMBEDS, SEEDED_HEATMAP, MODEL_EMBED } from './sites.mjs';
import { decodePng, pixelStats } from './png.mjs';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'examples');

// Counts wasm instances made on the page (not in workers); collects CSP violations.
const INIT_SCRIPT = () => {
  window.__alWasm = { calls: 0, instances: 0 };
  window.__alCsp = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__alCsp.push(`${e.effectiveDirective} refused ${e.blockedURI || '(inline)'} (${e.sourceFile || ''}:${e.lineNumber || 0})`);
  });
  for (const k of ['instantiate', 'instantiateStreaming']) {
    const f = WebAssembly[k];
    if (typeof f !== 'function') continue;
    WebAssembly[k] = function (...args) {
      window.__alWasm.calls++;
      const p = f.apply(this, args);
      p.then((r) => { if (r && r.instance) window.__alWasm.instances++; }, () => {});
      return p;
    };
  }
};

async function checkElements(page, label, problems = []) {
  const out = {};
  for (const tag of EMBEDS) {
    const loc = page.locator(tag);
    await loc.first().waitFor({ state: 'attached', timeout: 15000 });
    assert.equal(await loc.count(), 1, `${label}: expected one <${tag}>, found ${await loc.count()}`);
    await loc.scrollIntoViewIfNeeded();
    await page.waitForFunction((t) => document.querySelector(t)?.dataset.state === 'ready', tag, { timeout: 60000 })
      .catch(async () => {
        const state = await loc.evaluate((el) => `${el.dataset.state}: ${el.shadowRoot?.querySelector('.al-error')?.textContent ?? ''}`);
        // What the page reported so far (a CSP refusal explains a bare "Failed to fetch").
        const csp = await cspViolations(page);
        const seen = [...problems, ...csp.map((v) => `CSP violation: ${v}`)].map((p) => (p.length > 240 ? `${p.slice(0, 240)}…` : p));
        throw new Error(`${label}: <${tag}> did not become ready (${state})${seen.length ? `; so far:\n  ${seen.join('\n  ')}` : ''}`);
      });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const shot = await loc.screenshot();
    const stats = pixelStats(decodePng(shot));
    assert.ok(stats.nonBackground > 0.02 && stats.colours > 16, `${label}: <${tag}> looks blank (${(stats.nonBackground * 100).toFixed(1)}% non-background, ${stats.colours} colours)`);
    out[tag] = stats;
  }
  // Each heatmap's (first) canvas has painted pixels.
  for (const sel of [SEEDED_HEATMAP, MODEL_EMBED.selector]) {
    const painted = await page.locator(sel).evaluate((el) => {
      const c = el.shadowRoot.querySelector('canvas.al-hm-canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n / (c.width * c.height);
    });
    assert.ok(painted > 0.2, `${label}: the canvas of <${sel}> is ${(painted * 100).toFixed(1)}% painted`);
  }
  return out;
}

/**
 * Node's reference for the model heatmap: lab.pretrained(MODEL_EMBED.model)
 * of the package installed in the site's folder (the tarball the site was
 * built from), run on MODEL_EMBED.text. Also the SHA-256 of each model file.
 */
async function modelReference(name) {
  const pkg = path.join(REPO_ROOT, 'examples', name, 'node_modules', 'attention-lab');
  const { init } = await import(pathToFileURL(path.join(pkg, 'web', 'node.js')).href);
  const lab = await init({ backend: 'wasm' });
  const model = await lab.pretrained(MODEL_EMBED.model);
  try {
    const r = model.forwardSync(MODEL_EMBED.text, { attentions: true });
    const files = {};
    for (const f of MODEL_EMBED.files) {
      const bytes = fs.readFileSync(path.join(pkg, 'data', 'models', MODEL_EMBED.model, f));
      files[f] = { sha: crypto.createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
    }
    return {
      ids: Array.from(r.ids),
      layers: r.attentions.map((a) => ({ shape: a.shape.slice(-3), data: Float32Array.from(a.data) })),
      files,
    };
  } finally {
    model.dispose();
  }
}

/**
 * The model heatmap draws the shipped model's attention: what the element
 * computed (modelRun) and what each of its maps holds equal Node's
 * reference for the shown layer, within 1e-5.
 */
async function checkModelHeatmap(page, label, ref) {
  const got = await page.locator(MODEL_EMBED.selector).evaluate((el) => {
    const run = el.modelRun;
    return run && {
      model: run.model,
      text: run.text,
      layer: run.layer,
      ids: Array.from(run.ids),
      shape: Array.from(run.attention.shape),
      data: Array.from(run.attention.data),
      head: el.getAttribute('head'),
      maps: el.maps.map((m) => ({ rows: m.rows, cols: m.cols, data: Array.from(m.data) })),
    };
  });
  assert.ok(got, `${label}: the model heatmap has no modelRun`);
  assert.equal(got.model, MODEL_EMBED.model, `${label}: model heatmap of model "${got.model}"`);
  assert.equal(got.text, MODEL_EMBED.text, `${label}: the model heatmap's text`);
  assert.deepEqual(got.ids, ref.ids, `${label}: the model heatmap's token ids differ from Node's`);
  assert.ok(Number.isInteger(got.layer) && got.layer >= 0 && got.layer < ref.layers.length, `${label}: layer ${got.layer}`);
  const want = ref.layers[got.layer];
  assert.deepEqual(got.shape, want.shape, `${label}: attention shape of layer ${got.layer}`);
  const [H, L] = want.shape;
  const maxDiff = (a, b, off = 0) => {
    let m = 0;
    for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[off + i]));
    return m;
  };
  const d = maxDiff(got.data, want.data);
  assert.ok(d <= 1e-5, `${label}: the model heatmap's layer ${got.layer} differs from Node's lab.pretrained('${MODEL_EMBED.model}').forwardSync by ${d}`);
  // What is drawn: head="all" (the default) is one map per head, then their average.
  assert.ok(got.head === null || got.head === 'all', `${label}: the check expects head="all", the page has head="${got.head}"`);
  assert.equal(got.maps.length, H + 1, `${label}: ${got.maps.length} maps for ${H} heads`);
  for (let h = 0; h < H; h++) {
    const m = got.maps[h];
    assert.ok(m.rows === L && m.cols === L, `${label}: map ${h} is ${m.rows}×${m.cols}, expected ${L}×${L}`);
    const dh = maxDiff(m.data, want.data, h * L * L);
    assert.ok(dh <= 1e-5, `${label}: map ${h} (layer ${got.layer} head ${h}) differs from Node's by ${dh}`);
  }
  const avg = new Float64Array(L * L);
  for (let h = 0; h < H; h++) for (let k = 0; k < L * L; k++) avg[k] += want.data[h * L * L + k] / H;
  const da = maxDiff(got.maps[H].data, avg);
  assert.ok(da <= 1e-5, `${label}: the average map differs from the mean of Node's heads by ${da}`);
  return { layer: got.layer, heads: H, length: L, maxDiff: Math.max(d, da) };
}

/**
 * The model's files were fetched from the site's origin, under its base path,
 * each with the bytes of the package's file (by SHA-256; bundlers rename them).
 */
function checkModelFiles(label, fetched, ref, origin, base) {
  for (const f of MODEL_EMBED.files) {
    const hits = fetched.filter((r) => r.sha === ref.files[f].sha);
    assert.ok(hits.length > 0, `${label}: no fetch answered with the bytes of data/models/${MODEL_EMBED.model}/${f} (${ref.files[f].size} bytes); fetched: ${fetched.map((r) => r.url).join(', ') || 'nothing'}`);
    for (const h of hits) {
      const u = new URL(h.url);
      assert.ok(u.origin === origin && u.pathname.startsWith(base), `${label}: data/models/${MODEL_EMBED.model}/${f} came from ${h.url}, not from ${origin}${base}`);
    }
  }
}

async function cspViolations(page) {
  return page.evaluate(() => window.__alCsp ?? []);
}

/** The heatmap host's computed background and the mean colour of one of its map canvases' label area. */
async function themeProbe(page) {
  return page.locator(SEEDED_HEATMAP).evaluate((el) => {
    const c = el.shadowRoot.querySelector('canvas.al-hm-canvas');
    // The canvas paints cells and label text on a transparent ground: the
    // text colour is what follows the theme. Mean grey of the painted pixels
    // left of the cells (the row labels).
    const w = Number(c.dataset.plotX);
    const d = c.getContext('2d').getImageData(0, 0, w, c.height).data;
    let sum = 0, n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 60) { sum += (d[i] + d[i + 1] + d[i + 2]) / 3; n++; }
    }
    return { background: getComputedStyle(el).backgroundColor, labelGrey: n ? sum / n : null };
  });
}

async function testSite(browser, name) {
  const site = SITES[name];
  const t0 = Date.now();
  const built = buildSite(name);
  const buildS = built.seconds;
  const ref = await modelReference(name);
  const server = await startSiteServer({ root: OUT_ROOT, csp: site.csp });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block', colorScheme: 'light' });
  const problems = [];
  try {
    await context.addInitScript(INIT_SCRIPT);
    await context.route('**/*', (route) => {
      const u = new URL(route.request().url());
      if (u.protocol === 'data:' || u.protocol === 'blob:' || u.origin === server.url) return route.continue();
      problems.push(`request to another origin: ${u.href}`);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('console', (msg) => {
      const text = msg.text();
      if (msg.type() === 'error') problems.push(`console error: ${text}`);
      else if (/hydrat/i.test(text)) problems.push(`console ${msg.type()}: ${text}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    // Every fetch's bytes (by hash), to find the model files under their built names.
    const fetched = [];
    const bodies = [];
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
      if (r.request().resourceType() === 'fetch' && r.status() === 200) {
        bodies.push(r.body().then(
          (b) => fetched.push({ url: r.url(), sha: crypto.createHash('sha256').update(b).digest('hex') }),
          () => {},
        ));
      }
    });
    const allFetched = async () => {
      await Promise.all(bodies);
      return fetched;
    };

    // No inline script of ours: the inline scripts the CSP allows by hash are the framework's.
    const html = await (await fetch(server.url + site.page)).text();
    for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
      if (!/\bsrc\s*=/.test(m[1])) assert.doesNotMatch(m[2], /defineAll|attention-lab\/components|attention_lab_|["']attention-lab-[a-z-]+["']/, `${name}: an inline script loads or defines the elements: ${m[2].slice(0, 120)}`);
    }

    await page.goto(server.url + site.page, { waitUntil: 'load' });
    await checkElements(page, `${name} first load`, problems);
    const model1 = await checkModelHeatmap(page, `${name} first load`, ref);
    const base = '/' + name + '/';
    checkModelFiles(`${name} first load`, await allFetched(), ref, server.url, base);
    assert.deepEqual(await cspViolations(page), [], `${name}: CSP violations on first load`);
    const wasm1 = await page.evaluate(() => window.__alWasm);
    assert.equal(wasm1.instances, 1, `${name}: ${wasm1.instances} wasm instances on the page (${wasm1.calls} instantiate calls)`);

    // Dark toggle.
    assert.equal(await page.evaluate(site.isDark), false, `${name}: starts light`);
    const light = await themeProbe(page);
    await site.toggleDark(page);
    await page.waitForFunction(site.isDark, null, { timeout: 10000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const dark = await themeProbe(page);
    assert.notEqual(dark.background, light.background, `${name}: the dark toggle left the component background at ${light.background}`);
    assert.ok(light.labelGrey !== null && dark.labelGrey !== null && dark.labelGrey > light.labelGrey + 40,
      `${name}: the heatmap's canvas labels were not repainted for the dark theme (mean grey ${light.labelGrey?.toFixed(0)} → ${dark.labelGrey?.toFixed(0)})`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}-dark.png`), fullPage: true });

    // Away and back.
    await page.evaluate(() => { window.__alSamePage = true; });
    await page.locator(site.away).first().click();
    await page.waitForURL((u) => u.pathname !== site.page, { timeout: 15000 });
    await page.waitForFunction(() => document.querySelectorAll('attention-lab-heatmap').length === 0, null, { timeout: 15000 });
    if (site.clientNav) assert.equal(await page.evaluate(() => window.__alSamePage === true), true, `${name}: navigating away reloaded the page (expected the client-side router)`);
    await page.locator(site.back).first().click();
    await page.waitForURL((u) => u.pathname === site.page, { timeout: 15000 });
    await checkElements(page, `${name} after away and back`, problems);
    await checkModelHeatmap(page, `${name} after away and back`, ref);
    assert.deepEqual(await cspViolations(page), [], `${name}: CSP violations after away and back`);
    const wasm2 = await page.evaluate(() => ({ ...window.__alWasm, same: window.__alSamePage === true }));
    if (site.clientNav) assert.equal(wasm2.same, true, `${name}: coming back reloaded the page (expected the client-side router)`);
    assert.equal(wasm2.instances, 1, `${name}: ${wasm2.instances} wasm instances after away and back`);
    // Still dark after coming back, and the heatmap still drawn for it.
    assert.equal(await page.evaluate(site.isDark), true, `${name}: the theme did not persist`);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}-back.png`), fullPage: true });

    assert.deepEqual(problems, [], `${name}: problems:\n  ${problems.join('\n  ')}`);
    await allFetched();
    return { buildS, built: built.built, testS: (Date.now() - t0) / 1000 - buildS, clientNav: site.clientNav && wasm2.same, model: model1 };
  } finally {
    await context.close();
    await server.close();
  }
}

const names = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const list = names.length ? names : Object.keys(SITES);
for (const n of list) if (!SITES[n]) throw new Error(`unknown site "${n}": one of ${Object.keys(SITES).join(', ')}`);

const started = Date.now();
const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
let passed = 0;
let failed = 0;
for (const n of list) {
  try {
    const r = await testSite(browser, n);
    passed++;
    console.log(`  ✓ examples › ${n} (build ${r.built ? `${r.buildS.toFixed(1)} s` : 'cached'}, test ${r.testS.toFixed(1)} s${r.clientNav ? ', client-side navigation' : ''}; model="en": layer ${r.model.layer}, ${r.model.heads} heads × ${r.model.length} characters, max |Δ| vs Node ${r.model.maxDiff.toExponential(1)})`);
  } catch (err) {
    failed++;
    console.log(`  ✗ examples › ${n}\n    ${String((err && err.stack) || err).split('\n').slice(0, 12).join('\n    ')}`);
  }
}
await browser.close();
console.log(`\nexamples tests finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
