// Runs every tests/browser/*.browser.mjs file. Each exports
//   export default async function (t) { t.test('name', async (ctx) => { ... }) }
// where ctx is the harness (see harness.mjs). Prints one line per test and a
// closing "N passed, N failed" line; exits non-zero on any failure.
//   node tests/browser/run.mjs [filter]          every test but the long ones
//   node tests/browser/run.mjs --long [filter]   the long ones only
// A long test (t.test(name, fn, { long: true })) is a size or stress check
// that would take npm test past its 20-minute budget; `npm run test:long`
// (scripts/test-long.sh, which .ci/run calls after npm test) runs them.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startHarness, REPO_ROOT } from './harness.mjs';

const args = process.argv.slice(2);
const long = args.includes('--long');
const filter = args.find((a) => a !== '--long') ?? '';
const dir = path.join(REPO_ROOT, 'tests', 'browser');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.browser.mjs')).sort();

const tests = [];
for (const f of files) {
  const mod = await import(pathToFileURL(path.join(dir, f)).href);
  await mod.default({
    test: (name, fn, { timeout = 120000, long: isLong = false } = {}) => {
      if (isLong === long) tests.push({ name: `${f.replace('.browser.mjs', '')} › ${name}`, fn, timeout });
    },
  });
}

const harness = await startHarness();
let passed = 0;
let failed = 0;
const started = Date.now();
for (const t of tests) {
  if (filter && !t.name.includes(filter)) continue;
  const t0 = Date.now();
  try {
    let timer;
    await Promise.race([
      t.fn(harness),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${t.timeout} ms`)), t.timeout); }),
    ]).finally(() => clearTimeout(timer));
    passed++;
    console.log(`  ✓ ${t.name} (${Date.now() - t0} ms)`);
  } catch (err) {
    failed++;
    console.log(`  ✗ ${t.name} (${Date.now() - t0} ms)\n    ${String(err && err.stack || err).split('\n').slice(0, 6).join('\n    ')}`);
  }
}
await harness.close();
console.log(`\nbrowser tests finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
