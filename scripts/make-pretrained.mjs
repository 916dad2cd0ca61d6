// Trains the pre-trained snapshots the tutorial's "Watch attention learn"
// chapter offers (web/page/pretrained/<task>.safetensors, F16), with the
// settings of <attention-lab-trainer> (web/lib/train/session.js defaults),
// until the held-out sequence accuracy reaches 99.5%; checks the accuracy
// again after the F16 round trip.
//   node scripts/make-pretrained.mjs [task ...]
import fs from 'node:fs';
import { init } from '../web/node.js';
import { TrainingSession, SESSION_DEFAULTS } from '../web/lib/train/session.js';
import { writeSafetensors, readSafetensors } from '../web/lib/io/safetensors.js';

const tasks = process.argv.slice(2).length ? process.argv.slice(2) : ['copy', 'reverse', 'sort', 'shift'];
const lab = await init({ backend: 'wasm' });
for (const task of tasks) {
  const options = { ...SESSION_DEFAULTS, task };
  const s = new TrainingSession(lab, options);
  while (s.lastHeldOut < 0.995 && s.step < 5000) s.run(Infinity, options.evalEvery);
  const weights = s.model.getWeights();
  const f16 = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, { ...t, dtype: 'F16' }]));
  const meta = { ...options };
  const bytes = writeSafetensors(f16, { 'attention-lab': JSON.stringify(meta), step: String(s.step) });
  const check = new TrainingSession(lab, options);
  check.model.setWeights(readSafetensors(bytes).tensors);
  const acc = check.evaluate().sequenceAccuracy;
  fs.writeFileSync(new URL(`../web/page/pretrained/${task}.safetensors`, import.meta.url), bytes);
  console.log(`${task}: step ${s.step}, held-out ${(100 * s.lastHeldOut).toFixed(1)}%, after F16 ${(100 * acc).toFixed(1)}%, ${bytes.length} bytes`);
  s.dispose();
  check.dispose();
}
