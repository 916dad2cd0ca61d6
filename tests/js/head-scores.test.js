// model.headScores and model.headScores.repeated (web/lib/model/head-scores.js) against
// tests/reference/interp.py: float64 numpy head scores (TransformerLens head_detector.py, "mul"
// measure) of the committed tiny gpt2 and llama goldens, computed there by detection masks and by
// plain loops (agreeing to 1e-12), the repeated inputs drawn there by its own xorshift.
// Regenerate: /usr/bin/python3 tests/reference/interp.py
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init } from '../../web/node.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS = path.join(ROOT, 'tests', 'golden', 'models');
const BACKENDS = ['wasm', 'wasm-scalar'];
const KEYS = ['previousToken', 'duplicateToken', 'induction', 'firstToken'];

const labs = {};
beforeAll(async () => {
  for (const b of BACKENDS) labs[b] = await init({ backend: b });
});
afterAll(() => BACKENDS.forEach((b) => labs[b].dispose()));

function load(lab, family) {
  const dir = path.join(MODELS, family);
  const read = (f) => fs.readFileSync(path.join(dir, f));
  return lab.loadModel({ config: JSON.parse(read('config.json')), weights: read('model.safetensors'), tokenizer: JSON.parse(read('tokenizer.json')) });
}
const expected = (family) => JSON.parse(fs.readFileSync(path.join(MODELS, family, 'head_scores.json'), 'utf8'));

/** Each score within 1e-4 relative of the reference (absolute floor 1e-6). */
function expectScores(got, want) {
  const N = want.previousToken.length;
  const H = want.previousToken[0].length;
  for (const k of KEYS) {
    expect(got[k].shape).toEqual([N, H]);
    expect(got[k].data).toBeInstanceOf(Float32Array);
    const flat = want[k].flat();
    for (let i = 0; i < flat.length; i++) {
      const err = Math.abs(got[k].data[i] - flat[i]);
      if (err > Math.max(1e-6, 1e-4 * Math.abs(flat[i]))) throw new Error(`${k}[${i}]: ${got[k].data[i]} vs reference ${flat[i]}`);
    }
  }
}

describe.each(BACKENDS)('head scores against interp.py — %s', (backend) => {
  test.each(['gpt2', 'llama'])('%s: headScores(ids) and headScores.repeated', async (family) => {
    const model = await load(labs[backend], family);
    const ref = expected(family);
    for (const c of ref.cases) expectScores(model.headScores(c.ids), c);
    for (const c of ref.repeated) {
      const r = model.headScores.repeated({ length: c.length, seed: c.seed });
      expect(r.ids).toEqual(c.ids); // the same (bos) r r as the reference's own draw
      expectScores(r, c);
    }
    // firstToken's floor: row 0 of a causal map adds 1, so every head scores at least 1/L
    const L = ref.cases[0].ids.length;
    const s = model.headScores(ref.cases[0].ids);
    for (const v of s.firstToken.data) expect(v).toBeGreaterThanOrEqual(1 / L - 1e-6);
    model.dispose();
  });
});

describe('bad input', () => {
  let model;
  beforeAll(async () => { model = await load(labs.wasm, 'gpt2'); });
  afterAll(() => { if (!model.disposed) model.dispose(); });

  test('text and ids are validated as forward does', () => {
    expect(() => model.headScores(42)).toThrow(/model\.headScores: input must be a text \(string\) or an array of token ids/);
    expect(() => model.headScores([1, 2, 9999])).toThrow(/token ids must be integers in \[0, \d+\].*ids\[2\] is 9999/);
    expect(() => model.headScores([1, 2.5])).toThrow(/ids\[1\] is 2\.5/);
    expect(() => model.headScores([])).toThrow(/the input has no tokens/);
    expect(() => model.headScores(new Array(33).fill(1))).toThrow(/33 tokens, more than the model's 32 positions/);
    expect(() => model.headScores([3])).toThrow(/at least 2/);
  });

  test('unknown option keys, lengths and seeds out of range', () => {
    expect(() => model.headScores([1, 2], { k: 3 })).toThrow(/unknown key "k"/);
    expect(() => model.headScores.repeated({ length: 4, seeds: 1 })).toThrow(/unknown key "seeds"; allowed: length, seed/);
    expect(() => model.headScores.repeated()).toThrow(/options\.length is required: an integer in \[1, 15\]/);
    expect(() => model.headScores.repeated({ length: 0 })).toThrow(/length must be an integer in \[1, 15\], got 0/);
    expect(() => model.headScores.repeated({ length: 16 })).toThrow(/length must be an integer in \[1, 15\], got 16/);
    expect(() => model.headScores.repeated({ length: '4' })).toThrow(/length must be an integer/);
    expect(() => model.headScores.repeated({ length: 4, seed: -1 })).toThrow(/seed must be an integer in \[0, 4294967295\], got -1/);
    expect(() => model.headScores.repeated({ length: 4, seed: 1.5 })).toThrow(/seed must be an integer/);
    expect(() => model.headScores.repeated(7)).toThrow(/options must be an options object/);
  });

  test('a disposed model', async () => {
    const m = await load(labs.wasm, 'llama');
    const { headScores } = m; // taken before dispose: still refuses after
    m.dispose();
    expect(() => m.headScores([1, 2])).toThrow(/model\.headScores: this model has been disposed; load it again/);
    expect(() => headScores.repeated({ length: 3 })).toThrow(/model\.headScores\.repeated: this model has been disposed/);
  });
});

describe.each(BACKENDS)('memory — %s', (backend) => {
  test('20 repeated calls leave the wasm heap flat', async () => {
    const lab = labs[backend];
    const model = await load(lab, 'llama');
    const b = lab._backend;
    model.headScores.repeated({ length: 20, seed: 0 }); // warm-up: scratch buffers reach their size
    const heap0 = b.heapBytesInUse();
    for (let i = 0; i < 20; i++) model.headScores.repeated({ length: 20, seed: i });
    for (let i = 0; i < 20; i++) expect(() => model.headScores.repeated({ length: 99, seed: i })).toThrow(RangeError);
    expect(b.heapBytesInUse()).toBe(heap0);
    model.dispose();
  });
});
