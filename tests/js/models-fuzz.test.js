// A short pass of the model-file fuzz target (tests/fuzz/fuzz-models.mjs):
// mutated config.json and model.safetensors.index.json files are accepted or
// refused with a RangeError/TypeError naming loadModel, never another error.
import { runModelFuzz } from '../fuzz/fuzz-models.mjs';

test('mutated config.json and index files parse or throw a clear error', async () => {
  const res = await runModelFuzz({ seconds: 3, seed: 20261201 });
  expect(res.failures.slice(0, 3).map((f) => f.why)).toEqual([]);
  expect(res.runs).toBeGreaterThan(300);
  expect(res.accepted.config).toBeGreaterThan(10);
  expect(res.accepted.index).toBeGreaterThan(5);
});
