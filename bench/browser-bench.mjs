// `npm run bench -- --browser`: the same configurations in headless Debian
// Chromium (tests/browser/harness.mjs: local server on 127.0.0.1 serving the
// repository root with the page's CSP, no other host reachable). Each
// configuration runs in a fresh browser context (its own renderer process)
// through bench/browser/page.mjs, which imports the same impl-*.mjs modules
// as the Node children. The ONNX models are written by Node into
// bench/results/models/ (gitignored) and fetched by the page.
// bench.mjs re-runs itself under `taskset -c 1` first, so Chromium and all
// its processes share the one pinned core.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHarness, CHROMIUM_ARGS } from '../tests/browser/harness.mjs';
import { writeModels } from './onnx-models.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export async function startBrowserRunner(configs, { dumpPath, webPath }) {
  const modelDir = path.join(here, 'results', 'models');
  writeModels(configs.filter((x) => x.impl.startsWith('ort-')).map((x) => [x.c, x.impl]), modelDir);
  // As in Node (bench.mjs V8_FLAGS): wasm compiled by TurboFan up front, so
  // no process is timed on baseline (Liftoff) code while tier-up is pending.
  // (This process's copy of the harness's argument list; the tests are unaffected.)
  if (!CHROMIUM_ARGS.some((a) => a.startsWith('--js-flags='))) CHROMIUM_ARGS.push('--js-flags=--no-liftoff');
  const harness = await startHarness();
  let userAgent = '';
  let isolated;

  async function run(c, impl, { dump, budgetMs, minRuns }) {
    const page = await harness.newPage();
    try {
      await page.goto(harness.url('/bench/browser/page.html'));
      const spec = { case: c.id, impl, budgetMs, minRuns, dump: dump ? 'yes' : undefined, web: webPath };
      const r = await page.evaluate(async (s) => (await import('/bench/browser/page.mjs')).run(s), spec);
      userAgent = r.userAgent ?? userAgent;
      isolated = r.crossOriginIsolated;
      if (dump && r.outputs) {
        for (const [k, b64] of Object.entries(r.outputs)) fs.writeFileSync(`${dumpPath(c, impl)}.${k}.f32`, Buffer.from(b64, 'base64'));
      }
      delete r.outputs;
      const problems = page.problems().filter((p) => !/favicon/.test(p));
      if (problems.length && !r.error && !r.skip) r.info = { ...r.info, pageProblems: problems.slice(0, 3) };
      return r;
    } catch (err) {
      return { error: String(err && err.message || err).split('\n')[0] };
    } finally {
      await page.closeAll();
    }
  }

  return {
    run,
    get environment() {
      return { browser: userAgent, crossOriginIsolated: isolated };
    },
    async close() {
      await harness.close();
    },
  };
}
