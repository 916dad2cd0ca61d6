// Runs every tests/browser/*.browser.mjs file. Each exports
//   export default async function (t) { t.test('name', async (ctx) => { ... }, opts) }
// where ctx is the harness (see harness.mjs). Prints one block per test (its
// own console output, then its ✓/✗ line) and a closing "N passed, N failed"
// line; exits non-zero on any failure.
//   node tests/browser/run.mjs [filter]          every test but the long ones
//   node tests/browser/run.mjs --long [filter]   the long ones only
//   --jobs N (or ATTNLAB_BROWSER_JOBS=N)          tests at a time: 2 by default,
//                                                 1 with --long; --jobs 1 = one by one
// opts: { timeout (ms, default 120000), long, serial }.
// A long test (long: true) is a size or stress check that would take npm test
// past its 12-minute budget; `npm run test:long` (scripts/test-long.sh, which
// .ci/run calls after npm test) runs them.
// Tests run two at a time in one browser (each in its own context), except:
//   - a serial test (serial: true) runs alone, after the others: one that
//     measures time (frames, training for a fixed time, a benchmark) or needs
//     the machine to itself;
//   - two tests of the same file never overlap, and keep their order (a file
//     may memoise set-up across its tests).
// Console output is kept per test (AsyncLocalStorage) and printed as one block
// when the test ends, so two tests' lines never interleave.
import fs from 'node:fs';
import path from 'node:path';
import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import { pathToFileURL } from 'node:url';
import { startHarness, REPO_ROOT } from './harness.mjs';

const args = process.argv.slice(2);
const long = args.includes('--long');
let jobs = Number(process.env.ATTNLAB_BROWSER_JOBS || (long ? 1 : 2));
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--long') continue;
  if (args[i] === '--jobs') { jobs = Number(args[++i]); continue; }
  if (args[i].startsWith('--jobs=')) { jobs = Number(args[i].slice(7)); continue; }
  if (args[i] === '--help' || args[i] === '-h') {
    console.log('usage: node tests/browser/run.mjs [--long] [--jobs N] [filter]\n'
      + '  filter: a substring of "file › test name"; --jobs: tests at a time (default 2, 1 with --long)');
    process.exit(0);
  }
  rest.push(args[i]);
}
if (!Number.isInteger(jobs) || jobs < 1) {
  console.error(`run.mjs: --jobs must be a whole number ≥ 1 (got ${jobs})`);
  process.exit(2);
}
const filter = rest[0] ?? '';
const dir = path.join(REPO_ROOT, 'tests', 'browser');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.browser.mjs')).sort();

const tests = [];
for (const f of files) {
  const mod = await import(pathToFileURL(path.join(dir, f)).href);
  const file = f.replace('.browser.mjs', '');
  await mod.default({
    test: (name, fn, { timeout = 120000, long: isLong = false, serial = false } = {}) => {
      if (isLong === long) tests.push({ name: `${file} › ${name}`, file, fn, timeout, serial });
    },
  });
}
const queue = tests.filter((t) => !filter || t.name.includes(filter));

// Per-test console: a line logged inside a test's async context goes to its
// buffer; anything else (the runner's own lines) is printed at once.
const store = new AsyncLocalStorage();
const write = console.log.bind(console);
for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
  const orig = console[level].bind(console);
  console[level] = (...a) => {
    const buf = store.getStore();
    if (buf) buf.push(format(...a));
    else orig(...a);
  };
}

const harness = await startHarness();
let passed = 0;
let failed = 0;
const started = Date.now();
const running = new Set();

async function runOne(t) {
  const out = [];
  const t0 = Date.now();
  let line;
  try {
    let timer;
    await store.run(out, () => Promise.race([
      t.fn(harness),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${t.timeout} ms`)), t.timeout); }),
    ])).finally(() => clearTimeout(timer));
    passed++;
    line = `  ✓ ${t.name} (${Date.now() - t0} ms${t.serial ? ', alone' : ''})`;
  } catch (err) {
    failed++;
    line = `  ✗ ${t.name} (${Date.now() - t0} ms${t.serial ? ', alone' : ''})\n    ${String(err && err.stack || err).split('\n').slice(0, 6).join('\n    ')}`;
  }
  write([...out, line].join('\n'));
}

// The next test that may start now, or null: the first queued test that is not
// serial and whose file is not running, while fewer than `jobs` run and no
// serial test does; a serial test only when nothing runs (so serial tests end
// up after the others, one by one).
function next() {
  if ([...running].some((t) => t.serial) || running.size >= jobs) return null;
  const busy = new Set([...running].map((t) => t.file));
  let i = queue.findIndex((t) => !t.serial && !busy.has(t.file));
  if (i < 0 && running.size === 0) i = 0;
  return i < 0 ? null : queue.splice(i, 1)[0];
}

await new Promise((resolve) => {
  const pump = () => {
    for (let t = next(); t; t = next()) {
      running.add(t);
      runOne(t).finally(() => { running.delete(t); pump(); });
    }
    if (running.size === 0 && queue.length === 0) resolve();
  };
  pump();
});
await harness.close();
console.log(`\nbrowser tests finished in ${((Date.now() - started) / 1000).toFixed(1)} s (${jobs} at a time; ${tests.filter((t) => t.serial && (!filter || t.name.includes(filter))).length} serial, alone)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
