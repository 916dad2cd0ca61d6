// Shared browser-test harness: a local server (127.0.0.1, CSP on) and headless
// Debian Chromium driven by playwright-core. No downloaded browser, no network
// beyond 127.0.0.1: any other request fails the test that made it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'browser');

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--use-webgpu-adapter=swiftshader',
];

export function chromiumPath() {
  for (const p of [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (p && fs.existsSync(p)) return p;
  }
  throw new Error('Chromium not found: install Debian\'s chromium (apt-get install chromium) or set CHROMIUM_PATH');
}

/**
 * Starts the server and the browser. Returns a context with:
 *   url(path)             absolute URL on the local server
 *   newPage(opts)         a page that records console errors, page errors and
 *                         off-host requests (page.problems()) — opts: { csp, reducedMotion, viewport }
 *   browser, close()
 */
export async function startHarness({ csp = true } = {}) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const server = await startServer({ port: 0, csp, quiet: true });
  const noCspServer = await startServer({ port: 0, csp: false, quiet: true });
  const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  const base = server.url.replace(/\/$/, '');
  const baseNoCsp = noCspServer.url.replace(/\/$/, '');

  async function newPage({ reducedMotion = 'no-preference', viewport = { width: 1280, height: 900 }, csp: useCsp = true, initScript, locale } = {}) {
    const context = await browser.newContext({ reducedMotion, viewport, bypassCSP: false, serviceWorkers: 'block', ...(locale ? { locale } : {}) });
    const page = await context.newPage();
    const problems = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await context.route('**/*', (route) => {
      const u = new URL(route.request().url());
      if (u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1') return route.continue();
      problems.push(`request to another host: ${u.href}`);
      return route.abort();
    });
    if (initScript) await page.addInitScript(initScript);
    page.problems = () => problems.slice();
    page.url0 = (p) => (useCsp ? base : baseNoCsp) + p;
    page.closeAll = () => context.close();
    return page;
  }

  return {
    browser,
    url: (p) => base + p,
    urlNoCsp: (p) => baseNoCsp + p,
    newPage,
    async close() {
      await browser.close();
      await server.close();
      await noCspServer.close();
    },
  };
}
