// <attention-lab-trainer>: trains a tiny transformer in a Web Worker
// (web/train-worker.js) and shows every head's attention map as it forms,
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
// history ([{ step, loss, heldOut }]), previous (the run before the last
// change of settings, { history, options }: drawn faintly on the same axes),
// ablationAccuracy (held-out accuracy after the last ablate()), snapshots.
import { AttentionLabElement } from './base.js';
import { viridis, indexFor } from '../lib/palette.js';
import { h } from '../lib/dom.js';
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
    this.previous = null;
    this.ablationAccuracy = null;
  }

  /** The element's own strings, beside the shared ones (base.js `t`). */
  static get messages() {
    return TRAINER_MESSAGES;
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
    this._chart = h('canvas', { class: 'al-tr-chart', width: 480, height: 170, role: 'img', 'aria-label': t('tr.chart') });
    this._heads = h('div', { class: 'al-tr-heads' });
    this._axes = h('p', { class: 'al-readout al-tr-axes' });
    this._ablation = h('p', { class: 'al-readout' });
    this._timeline = h('input', { type: 'range', min: '0', max: '0', value: '0', 'aria-label': t('tr.timeline') });
    this._timeline.addEventListener('input', () => this._showSnapshot(Number(this._timeline.value)));
    this._timelineLabel = h('span', { class: 'al-readout' });
    const live = btn('tr.live', () => this._showSnapshot(null));
    this._body.append(
      h('div', { class: 'al-controls' }, this._taskSel, this._sizeSel, this._lrSel, this._posSel, ...Object.values(this._buttons), this._file),
      this._line, this._chart, this._heads, this._axes, this._ablation,
      h('div', { class: 'al-controls' }, this._timeline, this._timelineLabel, live));
    this._onDisconnect = () => this._terminate();
  }

  // The language changed: rebuild the controls' labels, keep the model.
  _relabel() {
    if (!this._started) return;
    this._colours = null;
    this._mapsKey = null;
    this._labelsKey = null;
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
    const w = new Worker(new URL('../../train-worker.js', import.meta.url), { type: 'module' });
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
      this.ablationAccuracy = m.accuracy;
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
  // CSS, viridis on [0, 1]): an update is one putImageData, no layout. The
  // example sequence's tokens label the keys (columns, left to right) and the
  // queries (rows, top to bottom) of every map.
  _drawMaps(maps, step) {
    const t = this.t;
    const shapeKey = maps.map((m) => m.shape.join('x')).join(',');
    if (this._mapsKey !== shapeKey) {
      this._mapsKey = shapeKey;
      this._labelsKey = null;
      this._heads.replaceChildren();
      this._maps = maps.map((layerMaps, l) => {
        const [H, L] = layerMaps.shape;
        const size = Math.max(120, 9 * L);
        const label = h('div', { class: 'al-readout' }, t('tr.layer', { l }));
        label.style.flexBasis = '100%';
        const row = h('div', { class: 'al-tr-layer' }, label);
        row.style.cssText = 'display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:flex-start';
        const cells = [];
        for (let hh = 0; hh < H; hh++) {
          const canvas = h('canvas', { class: 'al-tr-map', width: L, height: L, role: 'img', 'aria-label': `${t('tr.layer', { l })}, ${t('tr.head', { h: hh })}` });
          canvas.style.cssText = `width:${size}px;height:${size}px;image-rendering:pixelated;display:block`;
          const keys = h('div', { class: 'al-tr-keys', 'aria-hidden': 'true' });
          const queries = h('div', { class: 'al-tr-queries', 'aria-hidden': 'true' });
          keys.style.cssText = 'display:flex;font-size:9px;line-height:1.1;text-align:center';
          queries.style.cssText = 'display:flex;flex-direction:column;font-size:9px;line-height:1;text-align:right';
          const corner = h('span', { class: 'al-tr-corner', 'aria-hidden': 'true' }, 'i\\j');
          corner.style.cssText = 'font-size:8px;line-height:1.1;opacity:.7';
          const grid = h('div', { class: 'al-tr-grid' }, corner, keys, queries, canvas);
          grid.style.cssText = `display:inline-grid;grid-template-columns:auto ${size}px;grid-template-rows:auto ${size}px;column-gap:2px`;
          const toggle = h('button', { class: 'al-btn small', type: 'button', 'aria-pressed': 'false', title: t('tr.ablate', { l, h: hh }) }, t('tr.ablated'));
          toggle.addEventListener('click', () => this.ablate(l, hh, toggle.getAttribute('aria-pressed') !== 'true'));
          const fig = h('figure', { class: 'al-tr-head' }, h('figcaption', null, t('tr.head', { h: hh })), grid, h('div', null, toggle));
          fig.style.margin = '0';
          row.append(fig);
          const ctx = canvas.getContext?.('2d');
          cells.push({ canvas, toggle, ctx, keys, queries, image: ctx ? ctx.createImageData(L, L) : null });
        }
        this._heads.append(row);
        return cells;
      });
    }
    this._drawLabels(maps);
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

  // The axis labels: the example's tokens (or the positions before a report).
  _drawLabels(maps) {
    const L = maps[0]?.shape[1] ?? 0;
    const tokens = this.report?.tokens?.length === L ? this.report.tokens : Array.from({ length: L }, (_, i) => i);
    const key = `${this._mapsKey}|${tokens.join(',')}`;
    if (this._labelsKey === key) return;
    this._labelsKey = key;
    const t = this.t;
    const span = (text, title, css) => {
      const s = h('span', { title }, String(text));
      s.style.cssText = css;
      return s;
    };
    for (const row of this._maps) {
      for (const cell of row) {
        cell.keys.replaceChildren(...tokens.map((tok, j) => span(tok, `j = ${j}`, 'flex:1 1 0;min-width:0')));
        cell.queries.replaceChildren(...tokens.map((tok, i) => span(tok, `i = ${i}`, 'flex:1 1 0;display:flex;align-items:center;justify-content:flex-end;padding-right:1px')));
      }
    }
    this._axes.textContent = t('tr.axes', { L, last: L - 1 });
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

  // Loss (log axis, labelled ticks) and held-out accuracy (right axis) by
  // step, for this run and, faintly and dashed, the previous one: both on the
  // same axes, so two learning rates can be compared.
  _drawChart() {
    const c = this._chart;
    const g = c.getContext?.('2d');
    if (!g) return;
    const W = c.width;
    const H = c.height;
    g.clearRect(0, 0, W, H);
    // At most ~240 points per run: every k-th entry of the history.
    const thin = (hist) => {
      const k = Math.max(1, Math.ceil(hist.length / 240));
      return hist.filter((p, i) => i % k === 0 && Number.isFinite(p.loss) && p.loss > 0);
    };
    const cur = thin(this.history);
    const prev = this.previous ? thin(this.previous.history) : [];
    const runs = [prev, cur].filter((r) => r.length >= 2);
    c.dataset.runs = String(runs.length);
    if (!runs.length) return;
    if (!this._colours) {
      const style = getComputedStyle(this);
      this._colours = { fg: style.getPropertyValue('--al-fg').trim() || '#222', accent: style.getPropertyValue('--al-accent').trim() || '#1f77b4' };
    }
    const { fg, accent } = this._colours;
    const t = this.t;
    const all = runs.flat();
    const m = { l: 44, r: 40, t: this.previous ? 32 : 20, b: 18 };
    const x1 = Math.max(1, ...all.map((p) => p.step));
    const X = (s) => m.l + (s / x1) * (W - m.l - m.r);
    const yTicks = logTicks(Math.min(...all.map((p) => p.loss)), Math.max(...all.map((p) => p.loss)));
    const lo = Math.log10(yTicks[0]);
    const hi = Math.log10(yTicks[yTicks.length - 1]);
    const Y = (v) => H - m.b - ((Math.log10(v) - lo) / Math.max(1e-9, hi - lo)) * (H - m.t - m.b);
    const A = (a) => H - m.b - a * (H - m.t - m.b);
    const xTicks = linearTicks(x1);
    Object.assign(c.dataset, { yTicks: yTicks.map(tickLabel).join(','), xTicks: xTicks.join(','), previous: this.previous ? runLabel(this.previous.options) : '' });
    // Grid and tick labels.
    g.font = '10px sans-serif';
    g.lineWidth = 1;
    g.strokeStyle = fg;
    g.fillStyle = fg;
    g.globalAlpha = 0.15;
    g.beginPath();
    for (const v of yTicks) {
      g.moveTo(m.l, Math.round(Y(v)) + 0.5);
      g.lineTo(W - m.r, Math.round(Y(v)) + 0.5);
    }
    g.stroke();
    g.globalAlpha = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const v of yTicks) g.fillText(tickLabel(v), m.l - 4, Y(v));
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const s of xTicks) g.fillText(String(s), X(s), H - m.b + 3);
    g.fillStyle = accent;
    g.textAlign = 'left';
    g.textBaseline = 'middle';
    for (const a of [0, 0.5, 1]) g.fillText(`${100 * a}%`, W - m.r + 4, A(a));
    const line = (colour, pts, faint) => {
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      g.globalAlpha = faint ? 0.35 : 1;
      g.setLineDash?.(faint ? [4, 3] : []);
      g.beginPath();
      pts.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
      g.stroke();
      g.globalAlpha = 1;
      g.setLineDash?.([]);
    };
    if (prev.length >= 2) {
      line(fg, prev.map((p) => [X(p.step), Y(p.loss)]), true);
      line(accent, prev.map((p) => [X(p.step), A(p.heldOut)]), true);
    }
    if (cur.length >= 2) {
      line(fg, cur.map((p) => [X(p.step), Y(p.loss)]));
      line(accent, cur.map((p) => [X(p.step), A(p.heldOut)]));
    }
    // Legend.
    g.textAlign = 'left';
    g.textBaseline = 'alphabetic';
    g.font = '11px sans-serif';
    g.fillStyle = fg;
    const opts = this._lastOptions ?? this._options();
    g.fillText(`${t('tr.loss')} · ${t('tr.thisRun', { run: runLabel(opts) })}`, m.l, 12);
    g.fillStyle = accent;
    g.textAlign = 'right';
    g.fillText(t('tr.heldOut'), W - m.r, 12);
    if (this.previous) {
      g.fillStyle = fg;
      g.globalAlpha = 0.6;
      g.textAlign = 'left';
      g.fillText(t('tr.previous', { run: runLabel(this.previous.options) }), m.l, 26);
      g.globalAlpha = 1;
    }
    c.setAttribute('aria-label', this.previous ? `${t('tr.chart')}; ${t('tr.previous', { run: runLabel(this.previous.options) })}` : t('tr.chart'));
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
    // The run so far stays on the chart, faintly, beside the next one.
    if (this.history.length >= 2) this.previous = { history: this.history, options: this._lastOptions };
    this._lastOptions = o;
    for (const row of this._maps) for (const cell of row) cell.toggle.setAttribute('aria-pressed', 'false');
    this.ablationAccuracy = null;
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

/** Ticks of a log axis covering [lo, hi]: 1·10^k (and 2, 5·10^k over at most two decades). */
export function logTicks(lo, hi) {
  if (!(lo > 0) || !(hi >= lo)) return [1];
  const d0 = Math.floor(Math.log10(lo) + 1e-9);
  const d1 = Math.ceil(Math.log10(hi) - 1e-9);
  const mant = d1 - d0 <= 2 ? [1, 2, 5] : [1];
  const all = [];
  for (let d = d0; d <= d1; d++) for (const k of mant) all.push(Number((k * 10 ** d).toPrecision(1)));
  let a = 0;
  while (a + 1 < all.length && all[a + 1] <= lo) a++;
  let b = all.length - 1;
  while (b - 1 > a && all[b - 1] >= hi) b--;
  const out = all.slice(a, b + 1);
  return out.length >= 2 ? out : [out[0], out[0] * 10];
}

/** Up to about 5 round ticks from 0 to x1. */
export function linearTicks(x1) {
  const raw = x1 / 4;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) ?? 10 * p;
  const out = [];
  for (let s = 0; s <= x1 + 1e-9; s += step) out.push(Math.round(s));
  return out;
}

const tickLabel = (v) => (v >= 1 ? String(v) : String(Number(v.toPrecision(1))));
const runLabel = (o) => (o ? `${o.task}, E = ${o.embedDim}, lr = ${o.lr}` : '');
