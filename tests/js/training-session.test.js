// The training session behind <attention-lab-trainer> (web/lib/train/
// session.js): its position encoding option. Checked by what training
// achieves: the shift task (target = the previous token) needs positions —
// without them attention cannot tell the previous token from any other, and
// held-out accuracy stays at 0 — while RoPE (rotary positions, in the
// attention scores only) learns it.
import { init } from '../../web/node.js';
import { TrainingSession, positionalFor } from '../../web/lib/train/session.js';

let lab;
beforeAll(async () => {
  lab = await init({ backend: 'wasm' });
});

test("positional 'auto' is learned for the causal induction task, sinusoidal for the others", () => {
  expect(positionalFor('induction')).toBe('learned');
  for (const task of ['copy', 'reverse', 'sort', 'shift']) expect(positionalFor(task)).toBe('sinusoidal');
  expect(positionalFor('shift', 'rope')).toBe('rope');
  expect(new TrainingSession(lab, { task: 'reverse' }).model.config.positional).toBe('sinusoidal');
});

test('shift learns with RoPE and cannot without positions', () => {
  const run = (positional) => {
    const s = new TrainingSession(lab, { task: 'shift', positional, evalEvery: 50 });
    expect(s.model.config.positional).toBe(positional);
    s.run(Infinity, 300);
    return s.history.at(-1);
  };
  const rope = run('rope');
  const none = run('none');
  expect(rope.heldOut).toBeGreaterThan(0.9);
  expect(none.heldOut).toBeLessThan(0.1);
  expect(none.loss).toBeGreaterThan(10 * rope.loss);
});

test('an unknown position encoding is a RangeError naming the allowed ones', () => {
  expect(() => new TrainingSession(lab, { task: 'shift', positional: 'alibi' })).toThrow(/positional must be 'sinusoidal', 'learned', 'rope' or 'none'/);
});
