// The training Web Worker: owns a TrainingSession (session.js) and streams
// reports to the page. Messages in:
//   { type: 'configure', options }   new session (options as SESSION_DEFAULTS)
//   { type: 'play' } | { type: 'pause' } | { type: 'step', count }
//   { type: 'ablate', layer, head, enabled }   → { type: 'ablation', accuracy }
//   { type: 'getWeights' }                     → { type: 'weights', weights }
//   { type: 'setWeights', weights }            → a report
// Messages out: { type: 'report', report } every time slice (about 100 ms of
// training), { type: 'error', message }.
// (SLICE_MS: long enough that the page draws few reports, short enough that
// the curves move smoothly.)
import { init } from '../../index.js';
import { TrainingSession } from './session.js';

const SLICE_MS = 100;
let lab = null;
let session = null;
let playing = false;
let timer = null;

function post(msg) {
  self.postMessage(msg);
}

function report() {
  const r = session.report();
  post({ type: 'report', report: r });
  if (r.stopped) playing = false;
}

function loop() {
  timer = null;
  if (!playing || !session) return;
  try {
    session.run(SLICE_MS);
    report();
  } catch (e) {
    playing = false;
    post({ type: 'error', message: e.message });
    return;
  }
  if (playing) timer = setTimeout(loop, 0);
}

self.onmessage = async (ev) => {
  const m = ev.data;
  try {
    if (!lab) lab = await init({ backend: m.backend ?? 'auto' });
    switch (m.type) {
      case 'configure':
        playing = false;
        session?.dispose();
        session = new TrainingSession(lab, m.options);
        report();
        break;
      case 'play':
        playing = true;
        if (!timer) timer = setTimeout(loop, 0);
        break;
      case 'pause':
        playing = false;
        break;
      case 'step':
        session.run(Infinity, m.count ?? 1);
        report();
        break;
      case 'ablate':
        session.model.setHeadEnabled(m.layer, m.head, m.enabled);
        post({ type: 'ablation', layer: m.layer, head: m.head, enabled: m.enabled, accuracy: session.evaluate().sequenceAccuracy });
        report();
        break;
      case 'getWeights':
        post({ type: 'weights', weights: session.model.getWeights() });
        break;
      case 'setWeights':
        session.model.setWeights(m.weights);
        session.lastHeldOut = session.evaluate().sequenceAccuracy;
        report();
        break;
      default:
        throw new TypeError(`worker: unknown message type ${m.type}`);
    }
  } catch (e) {
    post({ type: 'error', message: e.message });
  }
};
