// The message loop the training Web Workers share (web/train-worker.js: a
// TrainingSession; web/lm-worker.js: chapter 10's LmSession): the lab created on
// the first message, 'configure' replacing the session, 'play' / 'pause' /
// 'step' running it in time slices of `sliceMs` with a report after each,
// and the worker's own messages. Errors go out as { type: 'error', message }.
import { init } from '../../index.js';

/**
 * Serves `self.onmessage`.
 * @param {object} spec
 * @param {string} spec.name the worker's name, for messages
 * @param {(w: SessionWorker, m: any) => Promise<void>|void} spec.configure sets w.session (w.lab is ready) and posts what it must
 * @param {(w: SessionWorker) => object} spec.report the session's report (posted as { type: 'report', report })
 * @param {(w: SessionWorker, ms: number) => Promise<void>|void} [spec.afterSlice] after a played slice of `ms` and its report
 * @param {Record<string, (w: SessionWorker, m: any) => Promise<void>|void>} [spec.messages] the worker's other messages
 * @param {number} [spec.sliceMs]
 */
export function serveSessionWorker({ name, configure, report, afterSlice, messages = {}, sliceMs = 100 }) {
  const w = new SessionWorker(name, report);
  const loop = async () => {
    w.timer = null;
    if (!w.playing || !w.session) return;
    const g = w.generation;
    try {
      const t0 = performance.now();
      w.session.run(sliceMs);
      const ms = performance.now() - t0;
      w.report();
      await afterSlice?.(w, ms);
    } catch (e) {
      w.playing = false;
      w.post({ type: 'error', message: e.message });
      return;
    }
    if (w.playing && g === w.generation && !w.timer) w.timer = setTimeout(loop, 0);
  };
  self.onmessage = async (ev) => {
    const m = ev.data;
    try {
      if (!w.lab) w.lab = await init({ backend: m.backend ?? 'auto' });
      if (m.type === 'configure') {
        w.generation++;
        w.playing = false;
        w.session?.dispose();
        w.session = null;
        return await configure(w, m);
      }
      if (!w.session) throw new Error(`${name}: configure first`);
      switch (m.type) {
        case 'play':
          w.playing = true;
          if (!w.timer) w.timer = setTimeout(loop, 0);
          break;
        case 'pause':
          w.playing = false;
          break;
        case 'step':
          w.session.run(Infinity, m.count ?? 1);
          w.report();
          break;
        default:
          if (!Object.hasOwn(messages, m.type)) throw new TypeError(`${name}: unknown message type ${m.type}`);
          await messages[m.type](w, m);
      }
    } catch (e) {
      w.post({ type: 'error', message: e.message });
    }
  };
  return w;
}

/** A worker's state: its lab, session, play state and configure generation (a stale loop or probe posts nothing). */
class SessionWorker {
  constructor(name, report) {
    this.name = name;
    this._report = report;
    this.lab = null;
    this.session = null;
    this.playing = false;
    this.timer = null;
    this.generation = 0;
  }

  post(msg) {
    self.postMessage(msg);
  }

  /** Posts the session's report; a stopped session stops playing. */
  report() {
    const r = this._report(this);
    this.post({ type: 'report', report: r });
    if (r.stopped) this.playing = false;
  }
}
