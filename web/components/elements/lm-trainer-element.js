// <attention-lab-lm-trainer>: trains a character-level GPT-2 from scratch in a Web Worker
// (web/lm-worker.js, an LmSession of web/lib/train/lm-session.js) on the corpus of one
// of the shipped models, and shows the training and held-out loss, samples every few seconds,
// the head-role scores (model.headRoles), the best head's induction score on repeated random
// characters (model.headScores.repeated's definition) as a curve, and every head's map of an
// example window as they form,
// with a timeline over the recorded snapshots. "Load the shipped model" shows lab.pretrained's
// model, the end point, on the same held-out windows, example, prompt and seeds.
//
//   <attention-lab-lm-trainer model="zh" corpus="/data/corpora/zh/"></attention-lab-lm-trainer>
//
// Attributes: model (zh: Tang poems | en: English prose | induction: English prose with repeated
// random spans, whose induction head forms in a few minutes), corpus (a folder URL holding train.txt
// and heldout.txt, as data/corpora/<model>/ of the repository; default: that folder beside the
// package, which the npm package does not ship), lang, eager, autoplay. Methods: play(), pause(),
// step(n), reset(), probe(), loadShipped(), showSnapshot(index | null). Properties: info (the
// session: recipe, sizes, example), report (the latest: step, loss, heldout, induction, stepMs,
// maps), history ([{ step, loss }]), heldout ([[step, loss]]), induction ([[step, best score,
// layer, head]]), snapshots ([{ step, heldOut, samples, roles, maps, induction }], one per probe),
// shipped (the end point, once loaded), reportMs.
import { AttentionLabElement } from './base.js';
import { viridis, indexFor } from '../lib/palette.js';
import { h, setRich } from '../lib/dom.js';
import { LM_TRAINER_MESSAGES } from '../lib/lm-trainer-messages.js';
import { simdSupported } from '../../index.js';
import { linearTicks } from './trainer-element.js';

// The default corpus folder, beside the repository's copy of this file. Not
// `new URL(literal, import.meta.url)`: bundlers (webpack 5 in Docusaurus)
// take that form for an asset of the package and fail on a folder the
// package does not ship (data/corpora/); a site passes corpus="…" instead.
const MODULE_URL = import.meta.url;

const MODELS = ['zh', 'en', 'induction'];
// The corpus folder of each model (the induction model trains on the English prose).
const CORPUS = { zh: 'zh', en: 'en', induction: 'en' };
// The element paints on its own compositor layer: its status line changes about ten times a
// second, and in a long page (the tutorial) each change repainted the page's whole layer, 50 to
// 400 ms main-thread tasks at a load of 8 on 2 cores (frame p95 33-50 ms); on its own layer, none
// (p95 16.7 ms, the display's own interval).
const CSS = ':host { will-change: transform; }';
let sheet = null;
const ROLES = ['previousToken', 'self', 'firstToken', 'induction', 'previousLine'];
const f3 = (x) => (Number.isFinite(x) ? x.toFixed(3) : '—');

export class AttentionLabLmTrainer extends AttentionLabElement {
  static get observedAttributes() {
    return ['model', 'corpus', 'lang'];
  }

  static extraSheets() {
    if (!sheet && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
    }
    return sheet ? [sheet] : [];
  }

  constructor() {
    super();
    this._reset();
    this._worker = null;
    this._waiters = [];
    this.reportMs = [];
  }

  _reset() {
    this.info = null;
    this.report = null;
    this.history = [];
    this.heldout = [];
    this.induction = [];
    this.snapshots = [];
    this.shipped = null;
    this._viewing = null; // snapshot index, or null for live
  }

  /** The element's own strings, beside the shared ones (base.js `t`). */
  static get messages() {
    return LM_TRAINER_MESSAGES;
  }

  _model() {
    const m = this.getAttribute('model') || 'zh';
    if (!MODELS.includes(m)) throw new RangeError(`<attention-lab-lm-trainer> model="${m}": expected zh, en or induction`);
    return m;
  }

  _corpus(model) {
    const base = this.getAttribute('corpus') || new URL(`../../../data/corpora/${CORPUS[model]}/`, MODULE_URL).href;
    const dir = new URL(base.endsWith('/') ? base : `${base}/`, document.baseURI);
    return { train: new URL('train.txt', dir).href, heldout: new URL('heldout.txt', dir).href };
  }

  _build() {
    const t = this.t;
    const btn = (key, fn, cls = '') => {
      const b = h('button', { class: `al-btn ${cls}`, type: 'button' }, t(key));
      b.addEventListener('click', () => fn().catch((e) => this._showError(e)));
      return b;
    };
    this._buttons = {
      play: btn('lm.play', () => this.play(), 'lm-play'),
      pause: btn('lm.pause', () => this.pause(), 'lm-pause'),
      reset: btn('lm.reset', () => this.reset(), 'lm-reset'),
      shipped: btn('lm.shipped', () => this.loadShipped(), 'lm-shipped'),
    };
    this._recipe = h('p', { class: 'al-readout lm-recipe' });
    // Not a live region: it changes about ten times a second while training.
    this._line = h('p', { class: 'al-readout lm-status' });
    this._chart = h('canvas', { class: 'lm-chart', width: 520, height: 180, role: 'img', 'aria-label': t('lm.chart') });
    this._chart.style.cssText = 'max-width:100%;height:auto;display:block';
    // The induction curve: the best head's score on repeated random characters, by step.
    this._indLine = h('p', { class: 'al-readout lm-induction' });
    this._indChart = h('canvas', { class: 'lm-induction-chart', width: 520, height: 120, role: 'img', 'aria-label': t('lm.inductionChart') });
    this._indChart.style.cssText = 'max-width:100%;height:auto;display:block';
    this._samples = h('div', { class: 'lm-samples' });
    this._roles = h('div', { class: 'lm-roles' });
    this._roles.style.overflowX = 'auto'; // six columns: scroll on a phone, never widen the page
    this._example = h('p', { class: 'al-readout lm-example' });
    this._heads = h('div', { class: 'lm-heads' });
    this._axes = h('p', { class: 'al-readout' }, t('lm.axes'));
    this._shippedInfo = h('p', { class: 'al-readout lm-shipped-info' });
    this._timeline = h('input', { type: 'range', class: 'lm-timeline', min: '0', max: '0', value: '0', 'aria-label': t('lm.timeline') });
    this._timeline.addEventListener('input', () => this.showSnapshot(Number(this._timeline.value)));
    this._timelineLabel = h('span', { class: 'al-readout lm-timeline-label' });
    const live = btn('lm.live', async () => this.showSnapshot(null), 'lm-live');
    this._body.append(
      h('div', { class: 'al-controls' }, ...Object.values(this._buttons)),
      this._recipe, this._line, this._chart, this._indLine, this._indChart,
      h('div', { class: 'al-controls' }, this._timeline, this._timelineLabel, live),
      this._samples, this._roles, this._example, this._heads, this._axes, this._shippedInfo);
    this._onDisconnect = () => this._terminate();
  }

  // The language changed: rebuild the labels, keep the run.
  _relabel() {
    if (!this._started) return;
    this._body.replaceChildren();
    this._mapsKey = null;
    this._colours = null;
    this._build();
    if (this._configured) this._line.textContent = this.t(this._sessionP ? 'lm.preparing' : 'lm.idle', { model: this.t(`lm.model.${this._model()}`) });
    this._drawAll();
  }

  // The site switched theme: repaint the canvases with the new colours.
  _repaint() {
    this._colours = null;
    this._drawAll();
  }

  _terminate() {
    this._worker?.terminate();
    this._worker = null;
    this._configured = null;
    this._sessionP = null;
    for (const w of this._waiters) w.reject(new Error('<attention-lab-lm-trainer>: the session was replaced'));
    this._waiters = [];
  }

  _ensureWorker() {
    if (this._worker) return this._worker;
    if (typeof Worker !== 'function') throw new Error(this.t('lm.noWorker'));
    const w = new Worker(new URL('../../lm-worker.js', import.meta.url), { type: 'module' });
    // Messages of a worker already replaced (a change of model) are dropped.
    w.onmessage = (ev) => this._worker === w && this._onMessage(ev.data);
    w.onerror = (ev) => this._worker === w && this._onMessage({ type: 'error', message: ev.message || 'worker error' });
    this._worker = w;
    return w;
  }

  // Resolves with the next message of type `want` (or rejects on an error).
  _send(msg, want) {
    const backend = simdSupported() ? 'wasm' : 'wasm-scalar';
    const p = new Promise((resolve, reject) => this._waiters.push({ resolve, reject, want }));
    this._ensureWorker().postMessage({ backend, ...msg });
    return p;
  }

  _onMessage(m) {
    if (m.type === 'error') {
      const e = new Error(m.message);
      this._showError(e);
      for (const w of this._waiters) w.reject(e);
      this._waiters = [];
      return;
    }
    if (m.type === 'ready') {
      this.info = m.info;
      this._drawRecipe();
    } else if (m.type === 'report') {
      this._onReport(m.report);
    } else if (m.type === 'probe') {
      const onShipped = this.shipped && this._viewing === this.snapshots.length;
      this.snapshots.push(m.probe);
      if (onShipped) this._viewing = this.snapshots.length; // the shipped model stays last
      this._syncTimeline();
      if (onShipped) this._timeline.value = String(this._viewing);
      if (this._viewing === null) this._queueDraw({ probe: true });
    } else if (m.type === 'shipped') {
      this.shipped = m.shipped;
      this._syncTimeline();
      this.showSnapshot(this.snapshots.length);
    }
    const value = m[m.type] ?? m.report ?? m.info;
    const keep = [];
    for (const w of this._waiters) (w.want === m.type ? w.resolve(value) : keep.push(w));
    this._waiters = keep;
    this.dispatchEvent(new CustomEvent(`al-lm-${m.type}`, { detail: value, bubbles: true, composed: true }));
  }

  _onReport(r) {
    this.report = r;
    for (const p of r.losses) this.history.push(p);
    this.heldout = r.heldout;
    this.induction = r.induction ?? [];
    this._queueDraw({});
  }

  // Reports arrive about every 100 ms: the drawing is coalesced into one animation frame, maps at
  // most every 150 ms, so that the page keeps its frame budget while the worker trains.
  _queueDraw(what) {
    this._dirty = { ...(this._dirty ?? {}), ...what };
    if (this._drawQueued) return;
    this._drawQueued = true;
    const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame : (f) => setTimeout(f, 16);
    raf(() => {
      this._drawQueued = false;
      const d = this._dirty;
      this._dirty = {};
      const t0 = performance.now();
      this._drawStatus();
      this._drawChart();
      this._drawInduction();
      if (this._viewing === null) {
        if (d.probe) this._drawProbe(this.snapshots[this.snapshots.length - 1], false);
        const now = performance.now();
        if (this.report?.maps && !(now - (this._mapsAt ?? -1e9) < 150)) {
          this._mapsAt = now;
          this._drawMaps(this.report.maps);
        }
      }
      this.reportMs.push(performance.now() - t0);
    });
  }

  _drawAll() {
    this._drawRecipe();
    this._drawStatus();
    this._drawChart();
    this._drawInduction();
    this._syncTimeline();
    const i = this._viewing;
    if (i === null) {
      const last = this.snapshots[this.snapshots.length - 1];
      if (last) this._drawProbe(last, false);
      if (this.report?.maps) this._drawMaps(this.report.maps);
    } else this.showSnapshot(i);
  }

  _drawRecipe() {
    const i = this.info;
    if (!i) return;
    const r = i.recipe;
    const n = (x) => x.toLocaleString(this.t.lang === 'zh' ? 'zh-CN' : 'en-US');
    this._recipe.textContent = this.t('lm.recipe', {
      model: this.t(`lm.model.${i.lang}`), params: n(i.parameters), E: r.embedDim, layers: r.numLayers, heads: r.numHeads, L: r.context,
      B: r.batch, lr: r.lr, minLr: r.minLr, warmup: r.warmup, tokens: n(i.trainTokens), windows: i.heldoutWindows,
    });
    const text = i.example.join('').replace(/\n/g, '⏎');
    this._example.textContent = this.t('lm.example', { text });
  }

  _drawStatus() {
    const r = this.report;
    if (!r) return;
    const held = this.heldout[this.heldout.length - 1]?.[1];
    this._line.textContent = r.stopped ? this.t('lm.stopped', { message: r.stopped })
      : this.t('lm.status', { step: r.step, loss: Number.isFinite(r.loss) ? r.loss.toFixed(3) : '—', held: f3(held), ms: r.stepMs ? r.stepMs.toFixed(0) : '—' });
  }

  _syncTimeline() {
    const n = this.snapshots.length + (this.shipped ? 1 : 0);
    this._timeline.max = String(Math.max(0, n - 1));
    if (this._viewing === null) this._timeline.value = this._timeline.max;
  }

  /** Shows snapshot `index` (this.snapshots.length: the shipped model), or the live run (null). */
  showSnapshot(index) {
    const shippedAt = this.snapshots.length;
    if (index === null || index < 0 || index > shippedAt || (index === shippedAt && !this.shipped)) {
      this._viewing = null;
      this._timeline.value = this._timeline.max;
      const last = this.snapshots[this.snapshots.length - 1];
      if (last) this._drawProbe(last, false);
      if (this.report?.maps) this._drawMaps(this.report.maps);
      this._drawChart();
      this._drawInduction();
      return;
    }
    this._viewing = index;
    this._timeline.value = String(index);
    const shipped = index === shippedAt;
    const snap = shipped ? this.shipped : this.snapshots[index];
    this._drawProbe(snap, shipped);
    this._drawMaps(snap.maps);
    this._drawChart();
    this._drawInduction();
  }

  // Samples, roles and the timeline label of a probe (a snapshot or the shipped model).
  _drawProbe(p, shipped) {
    if (!p) return;
    const t = this.t;
    const temp = p.temperature;
    this._samples.replaceChildren(
      h('p', { class: 'al-readout' }, shipped ? t('lm.samplesShipped', { temp }) : t('lm.samples', { step: p.step, temp })),
      ...p.samples.map((s) => {
        const el = h('pre', { class: 'lm-sample' }, s);
        el.style.cssText = 'white-space:pre-wrap;margin:.2rem 0;font-family:var(--al-mono,monospace);font-size:.85rem';
        return el;
      }));
    this._samples.dataset.step = shipped ? 'shipped' : String(p.step);
    const roles = ROLES.filter((k) => k in p.roles.chance);
    const cell = (v, best) => {
      const td = h('td', { class: 'num' }, f3(v));
      if (best) td.style.fontWeight = '700';
      return td;
    };
    const best = Object.fromEntries(roles.map((k) => [k, Math.max(...p.roles.heads.map((x) => x[k]))]));
    // model.headScores.repeated's induction score of each head (repeated random characters)
    const rep = p.induction ? p.induction.induction : null;
    const repAt = (x) => (rep ? rep.data[x.layer * rep.shape[1] + x.head] : NaN);
    const repBest = rep ? Math.max(...rep.data) : NaN;
    const table = h('table', { class: 'lm-roles-table' },
      h('caption', null, shipped ? t('lm.rolesShipped') : t('lm.roles', { step: p.step })),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('lm.role.head')), ...roles.map((k) => h('th', { scope: 'col' }, t(`lm.role.${k}`))),
        ...(rep ? [h('th', { scope: 'col' }, t('lm.role.repeated', { n: p.induction.length }))] : []))),
      h('tbody', null,
        ...p.roles.heads.map((x) => h('tr', { dataset: { layer: String(x.layer), head: String(x.head) } },
          h('th', { scope: 'row' }, `${x.layer} · ${x.head}`), ...roles.map((k) => cell(x[k], x[k] === best[k])),
          ...(rep ? [cell(repAt(x), repAt(x) === repBest)] : []))),
        h('tr', { class: 'lm-chance' }, h('th', { scope: 'row' }, t('lm.role.chance')), ...roles.map((k) => cell(p.roles.chance[k], false)),
          ...(rep ? [h('td', { class: 'num' }, '—')] : []))));
    table.style.cssText = 'border-collapse:collapse;font-size:.78rem;font-variant-numeric:tabular-nums';
    this._roles.replaceChildren(table);
    this._timelineLabel.textContent = shipped ? t('lm.snapshotShipped', { held: f3(p.heldOut) }) : t('lm.snapshot', { step: p.step, held: f3(p.heldOut) });
    if (this.shipped) {
      const c = this.shipped.config;
      setRich(this._shippedInfo, t('lm.shippedInfo', { E: c.embedDim, layers: c.numLayers, heads: c.numHeads, L: c.maxPositions, params: c.parameters.toLocaleString('en-US'), held: f3(this.shipped.heldOut) }));
    }
  }

  // Each head's [L, L] map as an L×L canvas (one pixel per cell, scaled by CSS, viridis on [0, 1]).
  _drawMaps(maps) {
    const t = this.t;
    const key = maps.map((m) => m.shape.join('x')).join(',');
    if (this._mapsKey !== key) {
      this._mapsKey = key;
      this._heads.replaceChildren();
      this._cells = maps.map((m, l) => {
        const [H, L] = m.shape;
        const label = h('div', { class: 'al-readout' }, t('lm.layer', { l }));
        label.style.flexBasis = '100%';
        const row = h('div', { class: 'lm-layer' }, label);
        row.style.cssText = 'display:flex;flex-wrap:wrap;gap:.25rem .75rem';
        const cells = [];
        for (let hh = 0; hh < H; hh++) {
          const canvas = h('canvas', { class: 'lm-map', width: L, height: L, role: 'img', 'aria-label': `${t('lm.layer', { l })}, ${t('lm.head', { h: hh })}` });
          canvas.style.cssText = 'width:112px;height:112px;image-rendering:pixelated;display:block';
          row.append(h('figure', { class: 'lm-head' }, h('figcaption', { class: 'al-readout' }, t('lm.head', { h: hh })), canvas));
          row.lastChild.style.margin = '0';
          const ctx = canvas.getContext?.('2d');
          cells.push({ ctx, image: ctx ? ctx.createImageData(L, L) : null });
        }
        this._heads.append(row);
        return cells;
      });
    }
    maps.forEach((m, l) => {
      const [H, L] = m.shape;
      for (let hh = 0; hh < H; hh++) {
        const cell = this._cells[l][hh];
        if (!cell.ctx) continue;
        const px = new Uint32Array(cell.image.data.buffer);
        for (let k = 0; k < L * L; k++) px[k] = viridis.packed[indexFor(m.data[hh * L * L + k], 0, 1)];
        cell.ctx.putImageData(cell.image, 0, 0);
      }
    });
  }

  // Training loss (thin) and held-out loss (thick, dots) on one linear axis in nats; the shipped
  // model's held-out loss as a dashed line; the viewed snapshot as a vertical marker.
  _drawChart() {
    const c = this._chart;
    const g = c.getContext?.('2d');
    if (!g) return;
    const W = c.width;
    const H = c.height;
    g.clearRect(0, 0, W, H);
    const k = Math.max(1, Math.ceil(this.history.length / 260));
    const train = this.history.filter((p, i) => i % k === 0 && Number.isFinite(p.loss));
    const held = this.heldout.filter(([, v]) => Number.isFinite(v));
    if (!held.length) return;
    if (!this._colours) {
      const style = getComputedStyle(this);
      this._colours = { fg: style.getPropertyValue('--al-fg').trim() || '#222', accent: style.getPropertyValue('--al-accent').trim() || '#1f77b4' };
    }
    const { fg, accent } = this._colours;
    const vals = [...train.map((p) => p.loss), ...held.map(([, v]) => v), ...(this.shipped ? [this.shipped.heldOut] : [])];
    const lo = Math.max(0, Math.floor(Math.min(...vals) - 0.25));
    const hi = Math.ceil(Math.max(...vals));
    const m = { l: 36, r: 12, t: 18, b: 18 };
    const x1 = Math.max(1, this.report?.step ?? 0, ...held.map(([s]) => s));
    const X = (s) => m.l + (s / x1) * (W - m.l - m.r);
    const Y = (v) => H - m.b - ((v - lo) / Math.max(1e-9, hi - lo)) * (H - m.t - m.b);
    g.font = '10px sans-serif';
    g.fillStyle = fg;
    g.strokeStyle = fg;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    const dy = Math.max(1, Math.ceil((hi - lo) / 5));
    for (let v = lo; v <= hi; v += dy) {
      g.globalAlpha = 0.15;
      g.beginPath();
      g.moveTo(m.l, Math.round(Y(v)) + 0.5);
      g.lineTo(W - m.r, Math.round(Y(v)) + 0.5);
      g.stroke();
      g.globalAlpha = 1;
      g.fillText(String(v), m.l - 4, Y(v));
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const s of linearTicks(x1)) g.fillText(String(s), X(s), H - m.b + 3);
    const line = (pts, colour, width, dash = []) => {
      g.strokeStyle = colour;
      g.lineWidth = width;
      g.setLineDash?.(dash);
      g.beginPath();
      pts.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
      g.stroke();
      g.setLineDash?.([]);
    };
    g.globalAlpha = 0.55;
    if (train.length >= 2) line(train.map((p) => [X(p.step), Y(p.loss)]), fg, 1);
    g.globalAlpha = 1;
    line(held.map(([s, v]) => [X(s), Y(v)]), accent, 2.5);
    g.fillStyle = accent;
    for (const [s, v] of held) g.fillRect(X(s) - 2, Y(v) - 2, 4, 4);
    if (this.shipped) line([[m.l, Y(this.shipped.heldOut)], [W - m.r, Y(this.shipped.heldOut)]], accent, 1.5, [5, 4]);
    const view = this._viewing;
    if (view !== null && view < this.snapshots.length) {
      g.globalAlpha = 0.5;
      line([[X(this.snapshots[view].step), m.t], [X(this.snapshots[view].step), H - m.b]], fg, 1, [2, 3]);
      g.globalAlpha = 1;
    }
    g.font = '11px sans-serif';
    g.textAlign = 'left';
    g.textBaseline = 'alphabetic';
    g.fillStyle = fg;
    g.fillText(this.t('lm.loss'), m.l, 12);
    g.fillStyle = accent;
    const shippedLabel = this.shipped ? ` · - - ${this.t('lm.shippedLine', { loss: f3(this.shipped.heldOut) })}` : '';
    g.fillText(`${this.t('lm.heldOut')}${shippedLabel}`, m.l + 110, 12);
    Object.assign(c.dataset, { heldout: held.map(([s, v]) => `${s}:${v.toFixed(4)}`).join(','), shipped: this.shipped ? String(this.shipped.heldOut) : '' });
  }

  // The best head's induction score on repeated random characters (LmSession's curve, every
  // held-out evaluation) by step, on [0, the ceiling]: the line of 0.4, the shipped model's best
  // head as a dashed line, the viewed snapshot as a marker; the readout says which head and how far.
  _drawInduction() {
    const t = this.t;
    const pts = this.induction.filter(([, v]) => Number.isFinite(v));
    const ceiling = this.info?.inductionCeiling;
    const last = pts[pts.length - 1];
    const shippedRep = this.shipped?.induction?.induction;
    const shippedBest = shippedRep ? Math.max(...shippedRep.data) : null;
    if (last && this.info) {
      this._indLine.textContent = t('lm.inductionNow', {
        step: last[0], score: last[1].toFixed(3), layer: last[2], head: last[3], n: this.info.inductionLength, ceiling: f3(ceiling),
      }) + (shippedBest !== null ? ` ${t('lm.inductionShipped', { score: shippedBest.toFixed(3) })}` : '');
    }
    const c = this._indChart;
    Object.assign(c.dataset, { induction: pts.map(([s, v]) => `${s}:${v.toFixed(4)}`).join(','), shipped: shippedBest === null ? '' : String(shippedBest) });
    const g = c.getContext?.('2d');
    if (!g) return;
    const W = c.width;
    const H = c.height;
    g.clearRect(0, 0, W, H);
    if (!pts.length) return;
    if (!this._colours) {
      const style = getComputedStyle(this);
      this._colours = { fg: style.getPropertyValue('--al-fg').trim() || '#222', accent: style.getPropertyValue('--al-accent').trim() || '#1f77b4' };
    }
    const { fg, accent } = this._colours;
    const hi = Math.max(0.5, Number.isFinite(ceiling) ? ceiling : 0, ...pts.map(([, v]) => v));
    const m = { l: 36, r: 12, t: 18, b: 18 };
    const x1 = Math.max(1, this.report?.step ?? 0, ...pts.map(([s]) => s));
    const X = (s) => m.l + (s / x1) * (W - m.l - m.r);
    const Y = (v) => H - m.b - (v / hi) * (H - m.t - m.b);
    const line = (xy, colour, width, dash = []) => {
      g.strokeStyle = colour;
      g.lineWidth = width;
      g.setLineDash?.(dash);
      g.beginPath();
      xy.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
      g.stroke();
      g.setLineDash?.([]);
    };
    g.font = '10px sans-serif';
    g.fillStyle = fg;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const v of [0, 0.1, 0.2, 0.3, 0.4, 0.5]) {
      if (v > hi + 1e-9) continue;
      g.globalAlpha = v === 0.4 ? 0.5 : 0.15;
      line([[m.l, Math.round(Y(v)) + 0.5], [W - m.r, Math.round(Y(v)) + 0.5]], fg, 1);
      g.globalAlpha = 1;
      g.fillText(v.toFixed(1), m.l - 4, Y(v));
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const s of linearTicks(x1)) g.fillText(String(s), X(s), H - m.b + 3);
    line(pts.map(([s, v]) => [X(s), Y(v)]), accent, 2);
    if (shippedBest !== null) line([[m.l, Y(shippedBest)], [W - m.r, Y(shippedBest)]], accent, 1.5, [5, 4]);
    const view = this._viewing;
    if (view !== null && view < this.snapshots.length) {
      g.globalAlpha = 0.5;
      line([[X(this.snapshots[view].step), m.t], [X(this.snapshots[view].step), H - m.b]], fg, 1, [2, 3]);
      g.globalAlpha = 1;
    }
    g.font = '11px sans-serif';
    g.textAlign = 'left';
    g.textBaseline = 'alphabetic';
    g.fillStyle = accent;
    g.fillText(t('lm.inductionLabel'), m.l, 12);
  }

  // A change of model or corpus: a new worker, and nothing is loaded until play() (or step(),
  // probe(), loadShipped()) asks for the session, so the page does not fetch a corpus unasked.
  async _render() {
    const model = this._model();
    const corpus = this._corpus(model);
    const key = JSON.stringify({ model, corpus });
    if (key === this._configured) return;
    this._configured = key;
    this._terminate();
    this._configured = key;
    this._sessionP = null;
    this._reset();
    this._heads.replaceChildren();
    this._mapsKey = null;
    for (const el of [this._samples, this._roles, this._shippedInfo, this._recipe, this._example, this._indLine]) el.replaceChildren();
    this._line.textContent = this.t('lm.idle', { model: this.t(`lm.model.${model}`) });
    this._drawChart();
    this._drawInduction();
    this._syncTimeline();
    this._corpusUrls = { lang: model, ...corpus };
    if (this.boolAttr('autoplay')) this.play().catch((e) => this._showError(e));
  }

  // The worker's session (configured once per model): resolves after its step-0 probe.
  async _session() {
    if (!this._started) this._start();
    await this.updateComplete;
    if (!this._sessionP) {
      this._line.textContent = this.t('lm.preparing');
      this._sessionP = this._send({ type: 'configure', ...this._corpusUrls }, 'probe');
      this._sessionP.catch(() => { this._sessionP = null; });
    }
    return this._sessionP;
  }

  /** Starts training (setting the session up first, once); resolves with the next report. */
  async play() {
    await this._session();
    return this._send({ type: 'play' }, 'report');
  }

  /** Pauses; resolves at once with the latest report. */
  pause() {
    this._worker?.postMessage({ type: 'pause' });
    return Promise.resolve(this.report);
  }

  /** Takes `n` steps; resolves with the report after them. */
  async step(n = 1) {
    await this._session();
    return this._send({ type: 'step', count: n }, 'report');
  }

  /** Samples, head roles and maps now; resolves with them (also recorded as a snapshot). */
  async probe() {
    await this._session();
    return this._send({ type: 'probe' }, 'probe');
  }

  /** The shipped model (lab.pretrained), the end point; resolves with its figures. */
  async loadShipped() {
    await this._session();
    return this._send({ type: 'shipped' }, 'shipped');
  }

  /** A fresh model from scratch. */
  reset() {
    this._configured = null;
    return this.requestRender();
  }
}
