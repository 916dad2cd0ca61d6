// <attention-lab-trainer>: trains a tiny transformer in a Web Worker
// (web/lib/train/worker.js) and shows every head's attention map as it forms,
// the loss and held-out accuracy curves, a timeline of map snapshots, head
// ablation, and saving/loading the weights as safetensors.
//
//   <attention-lab-trainer task="reverse" size="64" lr="0.003"></attention-lab-trainer>
//
// Attributes: task (copy | reverse | sort | shift | induction), size (E: 32 |
// 64 | 128), lr, positional (sinusoidal | learned | rope | none; default:
// learned for induction, sinusoidal otherwise), lang, eager, autoplay. Methods (each resolves after the
// worker's next report): play(), pause(), step(n), reset(), ablate(layer,
// head, off), weights() → { name: tensor }, loadWeights(weights),
// saveSafetensors() → Uint8Array, loadSafetensors(bytes), loadPretrained(url). Properties:
// report (the latest: step, loss, accuracy, heldOut, maps [layers][H, L, L]),
// history ([{ step, loss, heldOut }]), snapshots.
import { AttentionLabElement } from './base.js';
import { viridis, indexFor } from '../lib/palette.js';
import { h } from '../lib/dom.js';
import { translator, normalizeLang } from '../lib/i18n.js';
import { TRAINER_MESSAGES } from '../lib/trainer-messages.js';
import { simdSupported } from '../../index.js';
import { readSafetensors, writeSafetensors } from '../../lib/io/safetensors.js';
import { positionalFor } from '../../lib/train/session.js';

const TASKS = ['copy', 'reverse', 'sort', 'shift', 'induction'];
const SIZES = [32, 64, 128];
const RATES = [0.001, 0.003, 0.01];
const POSITIONALS = ['sinusoidal', 'learned', 'rope', 'none'];
const SNAPSHOT_EVERY = 25; // steps between timeline snapshots

export class AttentionLabTrainer extends AttentionLabElement {
  static get observedAttributes() {
    return ['task', 'size', 'lr', 'positional', 'lang'];
  }

  constructor() {
    super();
    this.report = null;
    this.history = [];
    this.snapshots = [];
    this._worker = null;
    this._waiters = [];
    this._maps = [];
    this._ablated = new Set();
    this._viewing = null; // snapshot index, or null for live
    this._configured = null;
  }

  get t() {
    const own = this.getAttribute('lang') || this.closest?.('[lang]')?.getAttribute('lang') || 'en';
    const lang = normalizeLang(own);
    if (this._t?.lang !== lang) this._t = translator(lang, TRAINER_MESSAGES);
    return this._t;
  }

  _options() {
    const task = this.getAttribute('task') || 'reverse';
    if (!TASKS.includes(task)) throw new RangeError(`<attention-lab-trainer> task="${task}": expected one of ${TASKS.join(', ')}`);
    const E = this.intAttr('size', 64, 8, 256);
    const lr = this.numAttr('lr', 0.003);
    if (!(lr > 0)) throw new RangeError(`<attention-lab-trainer> lr="${lr}": expected a number > 0`);
    const positional = this.getAttribute('positional') || positionalFor(task);
    if (!POSITIONALS.includes(positional)) {
      throw new RangeError(`<attention-lab-trainer> positional="${positional}": expected one of ${POSITIONALS.join(', ')}`);
    }
    const induction = task === 'induction';
    return {
      task, embedDim: E, numHeads: 4, ffnDim: 2 * E, lr, positional, numLayers: induction ? 2 : 1,
      length: induction ? 16 : 8, vocab: induction ? 32 : 10, batch: 64, warmup: 50, seed: 1,
    };
  }

  _build() {
    const t = this.t;
    const sel = (label, values, fmt) => h('select', { class: 'al-select', 'aria-label': label }, values.map((v) => h('option', { value: String(v) }, fmt(v))));
    this._taskSel = sel(t('tr.task'), TASKS, (v) => t(`tr.task.${v}`));
    this._sizeSel = sel(t('tr.size'), SIZES, (v) => `E = ${v}`);
    this._lrSel = sel(t('tr.lr'), RATES, (v) => `lr = ${v}`);
    this._posSel = sel(t('tr.positional'), POSITIONALS, (v) => t(`tr.pos.${v}`));
    const btn = (key, fn) => {
      const b = h('button', { class: 'al-btn', type: 'button' }, t(key));
      b.addEventListener('click', fn);
      return b;
    };
    this._buttons = {
      play: btn('tr.play', () => this.play()),
      pause: btn('tr.pause', () => this.pause()),
      step: btn('tr.step', () => this.step(1)),
      reset: btn('tr.reset', () => this.reset()),
      save: btn('tr.save', () => this._download()),
    };
    this._file = h('input', { type: 'file', accept: '.safetensors', 'aria-label': t('tr.load') });
    this._file.addEventListener('change', async () => {
      const f = this._file.files?.[0];
      if (f) await this.loadSafetensors(new Uint8Array(await f.arrayBuffer()));
    });
    for (const [s, attr] of [[this._taskSel, 'task'], [this._sizeSel, 'size'], [this._lrSel, 'lr'], [this._posSel, 'positional']]) {
      s.addEventListener('change', () => this.setAttribute(attr, s.value));
    }
    this._line = h('p', { class: 'al-readout', 'aria-live': 'polite' });
    this._chart = h('canvas', { class: 'al-tr-chart', width: 480, height: 140, role: 'img', 'aria-label': t('tr.chart') });
    this._heads = h('div', { class: 'al-tr-heads' });
    this._ablation = h('p', { class: 'al-readout' });
    this._timeline = h('input', { type: 'range', min: '0', max: '0', value: '0', 'aria-label': t('tr.timeline') });
    this._timeline.addEventListener('input', () => this._showSnapshot(Number(this._timeline.value)));
    this._timelineLabel = h('span', { class: 'al-readout' });
    const live = btn('tr.live', () => this._showSnapshot(null));
    this._body.append(
      h('div', { class: 'al-controls' }, this._taskSel, this._sizeSel, this._lrSel, this._posSel, ...Object.values(this._buttons), this._file),
      this._line, this._chart, this._heads, this._ablation,
      h('div', { class: 'al-controls' }, this._timeline, this._timelineLabel, live));
    this._onDisconnect = () => this._terminate();
  }

  // The language changed: rebuild the controls' labels, keep the model.
  _relabel() {
    if (!this._started) return;
    this._colours = null;
    this._mapsKey = null;
    this._body.replaceChildren();
    this._build();
    if (this.report) this._drawReport(this.report);
  }

  _terminate() {
    this._worker?.terminate();
    this._worker = null;
    this._configured = null;
  }

  _ensureWorker() {
    if (this._worker) return this._worker;
    if (typeof Worker !== 'function') throw new Error(this.t('tr.noWorker'));
    const w = new Worker(new URL('../../lib/train/worker.js', import.meta.url), { type: 'module' });
    w.onmessage = (ev) => this._onMessage(ev.data);
    w.onerror = (ev) => this._onMessage({ type: 'error', message: ev.message || 'worker error' });
    this._worker = w;
    return w;
  }

  _send(msg) {
    const backend = simdSupported() ? 'wasm' : 'wasm-scalar';
    this._ensureWorker().postMessage({ backend, ...msg });
    return new Promise((resolve, reject) => this._waiters.push({ resolve, reject, type: msg.type }));
  }

  _settle(type, value, error) {
    const keep = [];
    for (const w of this._waiters) {
      if (error) w.reject(error);
      else if (type === 'report' && w.type !== 'getWeights') w.resolve(value);
      else if (type === 'weights' && w.type === 'getWeights') w.resolve(value);
      else keep.push(w);
    }
    this._waiters = keep;
  }

  _onMessage(m) {
    if (m.type === 'report') {
      this._onReport(m.report);
      this._settle('report', m.report);
    } else if (m.type === 'weights') {
      this._settle('weights', m.weights);
    } else if (m.type === 'ablation') {
      this._ablation.textContent = this._ablated.size ? this.t('tr.ablation', { acc: `${(100 * m.accuracy).toFixed(1)}%` }) : '';
    } else if (m.type === 'error') {
      const e = new Error(m.message);
      this._showError(e);
      this._settle(null, null, e);
    }
  }

  // Reports arrive about every 100 ms; the metrics are kept at once, the
  // drawing is coalesced into one animation frame (maps at most every 150 ms)
  // so that the page keeps its frame budget while the worker trains.
  _onReport(r) {
    this.report = r;
    if (this.history.length === 0 || r.step > this.history[this.history.length - 1].step) {
      this.history.push({ step: r.step, loss: r.loss, heldOut: r.heldOut });
    }
    const last = this.snapshots[this.snapshots.length - 1];
    if (!last || r.step >= last.step + SNAPSHOT_EVERY || r.step === 0) {
      if (!last || last.step !== r.step) this.snapshots.push({ step: r.step, maps: r.maps });
      this._timeline.max = String(this.snapshots.length - 1);
      if (this._viewing === null) this._timeline.value = this._timeline.max;
    }
    this.dispatchEvent(new CustomEvent('al-train-report', { detail: r, bubbles: true, composed: true }));
    if (this._drawQueued) return;
    this._drawQueued = true;
    const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame : (f) => setTimeout(f, 16);
    raf(() => {
      this._drawQueued = false;
      const t0 = performance.now();
      this._drawReport(this.report);
      (this.reportMs ??= []).push(performance.now() - t0);
    });
  }

  _drawReport(r) {
    const t = this.t;
    const pct = (x) => `${(100 * x).toFixed(1)}%`;
    this._line.textContent = r.stopped
      ? t('tr.stopped', { message: r.stopped })
      : t('tr.status', { step: r.step, loss: Number.isFinite(r.loss) ? r.loss.toFixed(4) : '—', acc: pct(r.accuracy), held: pct(r.heldOut) });
    this._drawChart();
    const now = performance.now();
    if (this._viewing === null && (!(now - (this._mapsAt ?? -1e9) < 150) || r.stopped || !this._playing)) {
      this._mapsAt = now;
      this._drawMaps(r.maps, r.step);
    }
  }

  // Each head's [L, L] map as an L×L canvas (one pixel per cell, scaled up by
  // CSS, viridis on [0, 1]): an update is one putImageData, no layout.
  _drawMaps(maps, step) {
    const t = this.t;
    const shapeKey = maps.map((m) => m.shape.join('x')).join(',');
    if (this._mapsKey !== shapeKey) {
      this._mapsKey = shapeKey;
      this._heads.replaceChildren();
      this._maps = maps.map((layerMaps, l) => {
        const [H, L] = layerMaps.shape;
        const row = h('div', { class: 'al-tr-layer' }, h('div', { class: 'al-readout' }, t('tr.layer', { l })));
        const cells = [];
        for (let hh = 0; hh < H; hh++) {
          const canvas = h('canvas', { class: 'al-tr-map', width: L, height: L, role: 'img', 'aria-label': `${t('tr.layer', { l })}, ${t('tr.head', { h: hh })}` });
          canvas.style.cssText = 'width:120px;height:120px;image-rendering:pixelated;display:block';
          const toggle = h('button', { class: 'al-btn small', type: 'button', 'aria-pressed': 'false', title: t('tr.ablate', { l, h: hh }) }, t('tr.ablated'));
          toggle.addEventListener('click', () => this.ablate(l, hh, toggle.getAttribute('aria-pressed') !== 'true'));
          row.append(h('figure', { class: 'al-tr-head' }, h('figcaption', null, t('tr.head', { h: hh })), canvas, toggle));
          const ctx = canvas.getContext?.('2d');
          cells.push({ canvas, toggle, ctx, image: ctx ? ctx.createImageData(L, L) : null });
        }
        this._heads.append(row);
        return cells;
      });
    }
    maps.forEach((layerMaps, l) => {
      const [H, L] = layerMaps.shape;
      for (let hh = 0; hh < H; hh++) {
        const cell = this._maps[l][hh];
        if (!cell.ctx) continue;
        const px = new Uint32Array(cell.image.data.buffer);
        for (let k = 0; k < L * L; k++) px[k] = viridis.packed[indexFor(layerMaps.data[hh * L * L + k], 0, 1)];
        cell.ctx.putImageData(cell.image, 0, 0);
      }
    });
    this._timelineLabel.textContent = t('tr.snapshot', { step });
  }

  _showSnapshot(index) {
    this._viewing = index;
    const snap = index === null ? null : this.snapshots[index];
    if (snap) this._drawMaps(snap.maps, snap.step);
    else if (this.report) {
      this._timeline.value = this._timeline.max;
      this._drawMaps(this.report.maps, this.report.step);
    }
  }

  _drawChart() {
    const c = this._chart;
    const g = c.getContext?.('2d');
    if (!g) return;
    const W = c.width;
    const H = c.height;
    g.clearRect(0, 0, W, H);
    // At most ~240 points: every k-th entry of the history.
    const k = Math.max(1, Math.ceil(this.history.length / 240));
    const hist = this.history.filter((p, i) => i % k === 0 && Number.isFinite(p.loss) && p.loss > 0);
    if (hist.length < 2) return;
    if (!this._colours) {
      const style = getComputedStyle(this);
      this._colours = { fg: style.getPropertyValue('--al-fg').trim() || '#222', accent: style.getPropertyValue('--al-accent').trim() || '#1f77b4' };
    }
    const { fg, accent } = this._colours;
    const x0 = hist[0].step;
    const x1 = hist[hist.length - 1].step || 1;
    const X = (s) => 30 + ((s - x0) / Math.max(1, x1 - x0)) * (W - 60);
    const lo = Math.log(Math.min(...hist.map((p) => p.loss)));
    const hi = Math.log(Math.max(...hist.map((p) => p.loss)));
    const Y = (v) => H - 10 - ((Math.log(v) - lo) / Math.max(1e-9, hi - lo)) * (H - 20);
    const A = (a) => H - 10 - a * (H - 20);
    const line = (colour, pts) => {
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      g.beginPath();
      pts.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
      g.stroke();
    };
    line(fg, hist.map((p) => [X(p.step), Y(p.loss)]));
    line(accent, hist.map((p) => [X(p.step), A(p.heldOut)]));
    g.fillStyle = fg;
    g.font = '11px sans-serif';
    g.fillText(this.t('tr.loss'), 32, 12);
    g.fillStyle = accent;
    g.fillText(this.t('tr.heldOut'), W - 130, 12);
  }

  async _render() {
    const o = this._options();
    this._taskSel.value = o.task;
    this._sizeSel.value = String(o.embedDim);
    this._lrSel.value = String(o.lr);
    this._posSel.value = o.positional;
    const key = JSON.stringify(o);
    if (key === this._configured) return;
    this._configured = key;
    this.history = [];
    this.snapshots = [];
    this._ablated.clear();
    this._ablation.textContent = '';
    this._viewing = null;
    await this._send({ type: 'configure', options: o });
    if (this.boolAttr('autoplay')) this.play();
  }

  /** Starts training; resolves with the next report. */
  play() {
    this._playing = true;
    return this._send({ type: 'play' });
  }

  /** Pauses; resolves with the worker's next report or at once when idle. */
  pause() {
    this._playing = false;
    this._worker?.postMessage({ type: 'pause' });
    return Promise.resolve(this.report);
  }

  /** Takes `n` training steps; resolves with the report after them. */
  step(n = 1) {
    return this._send({ type: 'step', count: n });
  }

  /** A fresh model with the current settings. */
  reset() {
    this._configured = null;
    return this.requestRender();
  }

  /** Switches a head off (ablation) or back on; resolves with the next report. */
  ablate(layer, head, off) {
    const k = `${layer}:${head}`;
    if (off) this._ablated.add(k);
    else this._ablated.delete(k);
    const cell = this._maps[layer]?.[head];
    cell?.toggle.setAttribute('aria-pressed', String(Boolean(off)));
    return this._send({ type: 'ablate', layer, head, enabled: !off });
  }

  /** The model's weights by name ({ data, shape } in torch layout). */
  weights() {
    return this._send({ type: 'getWeights' });
  }

  /** Sets the weights (names and shapes as weights()); resolves with a report. */
  loadWeights(weights) {
    return this._send({ type: 'setWeights', weights });
  }

  /** The weights as a safetensors file (metadata: the model options). */
  async saveSafetensors() {
    const w = await this.weights();
    return writeSafetensors(w, { 'attention-lab': JSON.stringify(this._options()) });
  }

  /**
   * Loads a snapshot written by saveSafetensors (or scripts/make-pretrained.mjs)
   * from a same-origin URL: the element takes the snapshot's task and size,
   * then its weights. Resolves with the report of the loaded model.
   */
  async loadPretrained(url) {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`<attention-lab-trainer>: could not load ${url} (HTTP ${res.status})`);
    const file = readSafetensors(new Uint8Array(await res.arrayBuffer()));
    const meta = JSON.parse(file.metadata?.['attention-lab'] ?? '{}');
    this.pause();
    if (meta.task) this.setAttribute('task', meta.task);
    if (meta.embedDim) this.setAttribute('size', String(meta.embedDim));
    if (meta.lr) this.setAttribute('lr', String(meta.lr));
    if (meta.positional) this.setAttribute('positional', meta.positional);
    else this.removeAttribute('positional');
    await this.requestRender();
    return this.loadWeights(file.tensors);
  }

  /** Loads weights from safetensors bytes; resolves with the next report. */
  loadSafetensors(bytes) {
    return this.loadWeights(readSafetensors(bytes).tensors);
  }

  async _download() {
    const bytes = await this.saveSafetensors();
    const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    const a = h('a', { href: url, download: `attention-lab-${this._options().task}.safetensors` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}
