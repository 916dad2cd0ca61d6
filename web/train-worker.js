// The training Web Worker: owns a TrainingSession (session.js) and streams
// reports to the page. Messages in:
//   { type: 'configure', options }   new session (options as SESSION_DEFAULTS)
//   { type: 'play' } | { type: 'pause' } | { type: 'step', count }
//   { type: 'ablate', layer, head, enabled }   → { type: 'ablation', accuracy }
//   { type: 'getWeights' }                     → { type: 'weights', weights }
//   { type: 'setWeights', weights }            → a report
// Messages out: { type: 'report', report } every time slice (about 100 ms of
// training), { type: 'error', message }. The loop: worker-loop.js.
// (The slice: long enough that the page draws few reports, short enough that
// the curves move smoothly.)
import { serveSessionWorker } from './lib/train/worker-loop.js';
import { TrainingSession } from './lib/train/session.js';

serveSessionWorker({
  name: 'worker',
  sliceMs: 100,
  configure(w, m) {
    w.session = new TrainingSession(w.lab, m.options);
    w.report();
  },
  report: (w) => w.session.report(),
  messages: {
    ablate(w, m) {
      w.session.model.setHeadEnabled(m.layer, m.head, m.enabled);
      w.post({ type: 'ablation', layer: m.layer, head: m.head, enabled: m.enabled, accuracy: w.session.evaluate().sequenceAccuracy });
      w.report();
    },
    getWeights(w) {
      w.post({ type: 'weights', weights: w.session.model.getWeights() });
    },
    setWeights(w, m) {
      w.session.model.setWeights(m.weights);
      w.session.lastHeldOut = w.session.evaluate().sequenceAccuracy;
      w.report();
    },
  },
});
