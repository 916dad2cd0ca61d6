// A short pass of the weight-file fuzz target (tests/fuzz/fuzz-io.mjs; the
// long run is `npm run fuzz:io`): every corpus file and ~3 s of mutations
// either parse or throw a RangeError/TypeError naming the function, quickly.
import { runFuzz } from '../fuzz/fuzz-io.mjs';

test('mutated weight files parse or throw a clear RangeError/TypeError', () => {
  const res = runFuzz({ seconds: 3, seed: 20261130 });
  const shown = res.failures.slice(0, 3).map((f) => `${f.why} (input of ${f.input.length} bytes)`).join('\n');
  expect(shown).toBe('');
  expect(res.runs).toBeGreaterThan(1000);
  // No input of a few KB may take long (a GC pause on a loaded machine aside;
  // a hang would stop the test run).
  expect(res.slowest).toBeLessThan(5000);
  // The corpus files parse, so mutations reach past the first checks.
  expect(res.accepted.readSafetensors).toBeGreaterThan(6);
  expect(res.accepted.readNpz).toBeGreaterThan(2);
  expect(res.accepted.fromStateDict).toBeGreaterThan(2);
});
