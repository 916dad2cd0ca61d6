// The canvas heatmap used everywhere (page and components).
//
// A matrix [rows, cols] is coloured once into an offscreen canvas at one pixel
// per cell, then scaled onto the visible canvas with smoothing off, so a
// 512×512 map costs one pass over 262k cells. Hover and lock marks are drawn
// on a second, transparent canvas on top: moving the mouse never recolours
// the map. Keyboard: the plot is focusable; arrows move a locked cell, Enter
// or Space lock/unlock, Escape unlocks, Home/End jump along the row. A table
// fallback (built when opened) and an aria-live read-out serve screen readers.
import { paletteByName, autoDomain, MASKED_THRESHOLD, MASKED_RGB } from './palette.js';
import { h, fmt, cssVar } from './dom.js';
import { saveBlob, saveTensor, safeName } from './export.js';
import { heatmapPNGBlob, heatmapSVG, FONT, trunc } from './heatmap-export.js';
import { translator } from './i18n.js';

const MAX_LABELS = 64;
const MAX_TABLE_CELLS = 64 * 64;
/** Colour of marked cells (e.g. dropped by dropout): dark grey, outside both palettes and unlike the masked grey. */
export const MARKED_RGB = [64, 64, 64];
const MARKED_PACKED = new Uint32Array(new Uint8ClampedArray([...MARKED_RGB, 255]).buffer)[0];

let nextId = 1;

export class Heatmap {
  /**
   * @param {object} [opts]
   * @param {'viridis'|'diverging'} [opts.palette]
   * @param {string} [opts.title]
   * @param {string} [opts.name] file name base for exports
   * @param {Function} [opts.t] translator (key, params) → string
   * @param {string} [opts.rowKind] 'query' | 'position' | 'row' | 'token' (read-out wording)
   * @param {string} [opts.colKind] 'key' | 'dimension' | 'column' | 'position'
   * @param {number} [opts.maxSize] largest plot side in CSS px
   * @param {number} [opts.cellMax] largest cell side in CSS px
   * @param {boolean} [opts.compact] small multiples: exports in a menu, no table
   * @param {boolean} [opts.tools] export buttons (default true)
   * @param {boolean} [opts.legend] colour legend (default true)
   * @param {'auto'|'unit'|number[]} [opts.domain]
   * @param {boolean} [opts.axisTitles] axis titles "query ↓" / "key →" (default true)
   * @param {(cell: {i:number,j:number,locked:boolean}|null) => void} [opts.onCell]
   */
  constructor(opts = {}) {
    this.opts = { palette: 'viridis', rowKind: 'query', colKind: 'key', maxSize: 360, cellMax: 40, tools: true, legend: true, domain: 'auto', axisTitles: true, ...opts };
    this.t = opts.t ?? translator('en');
    this.palette = paletteByName(this.opts.palette);
    this.id = `al-hm-${nextId++}`;
    this.rows = 0;
    this.cols = 0;
    this.data = null;
    this.hover = null;
    this.locked = null;
    this.geom = null;
    this._build();
  }

  _build() {
    const o = this.opts;
    this.titleEl = h('figcaption', { class: 'al-hm-title', id: `${this.id}-title` });
    this.canvas = h('canvas', { class: 'al-hm-canvas', 'aria-hidden': 'true' });
    this.overlay = h('canvas', { class: 'al-hm-overlay', 'aria-hidden': 'true' });
    this.readout = h('output', { class: 'al-hm-readout', 'aria-live': 'polite', id: `${this.id}-readout` });
    this.plot = h('div', {
      class: 'al-hm-plot',
      tabindex: '0',
      role: 'img',
      'aria-roledescription': 'heatmap',
      'aria-describedby': `${this.id}-readout`,
    }, this.canvas, this.overlay);
    this.legendCanvas = h('canvas', { class: 'al-hm-legend-bar', width: '160', height: '10', 'aria-hidden': 'true' });
    this.legendLo = h('span', { class: 'al-hm-legend-lo' });
    this.legendHi = h('span', { class: 'al-hm-legend-hi' });
    this.legendMasked = h('span', { class: 'al-hm-legend-masked', hidden: true }, h('span', { class: 'al-hm-swatch' }), h('span', { class: 'al-hm-masked-label' }));
    this.legendMarked = h('span', { class: 'al-hm-legend-masked al-hm-legend-marked', hidden: true }, h('span', { class: 'al-hm-swatch al-hm-swatch-marked' }), h('span', { class: 'al-hm-marked-label' }));
    this.legend = h('div', { class: 'al-hm-legend', hidden: !o.legend }, this.legendLo, this.legendCanvas, this.legendHi, this.legendMasked, this.legendMarked);
    this.toolButtons = {};
    const mk = (fmtName) => {
      const b = h('button', { type: 'button', class: 'al-btn al-btn-small', dataset: { export: fmtName } });
      b.addEventListener('click', () => this.export(fmtName));
      this.toolButtons[fmtName] = b;
      return b;
    };
    const buttons = ['png', 'svg', 'csv', 'json'].map(mk);
    if (o.compact) {
      this.exportSummary = h('summary', { class: 'al-btn al-btn-small' });
      this.tools = h('details', { class: 'al-hm-tools al-hm-menu', hidden: !o.tools }, this.exportSummary, h('div', { class: 'al-hm-menu-body' }, buttons));
    } else {
      this.tools = h('div', { class: 'al-hm-tools', hidden: !o.tools }, buttons);
    }
    this.tableSummary = h('summary', null);
    this.tableBody = h('div', { class: 'al-hm-table-body' });
    this.table = h('details', { class: 'al-hm-table', hidden: Boolean(o.compact) }, this.tableSummary, this.tableBody);
    this.table.addEventListener('toggle', () => {
      if (this.table.open) this._buildTable();
    });
    this.el = h('figure', { class: `al-hm${o.compact ? ' al-hm-compact' : ''}`, 'aria-labelledby': `${this.id}-title` },
      this.titleEl, this.plot, h('div', { class: 'al-hm-foot' }, this.legend, this.tools), this.readout, this.table);
    this.el.heatmap = this;

    this.overlay.addEventListener('pointermove', (e) => this._pointer(e, false));
    this.overlay.addEventListener('pointerleave', () => {
      this.hover = null;
      this._drawOverlay();
      this._announce();
      this._emit();
    });
    this.overlay.addEventListener('click', (e) => this._pointer(e, true));
    this.plot.addEventListener('keydown', (e) => this._key(e));
    this.plot.addEventListener('focus', () => {
      if (!this.locked && this.rows) this.hover = this.hover ?? { i: 0, j: 0 };
      this._drawOverlay();
      this._announce();
    });
    this.plot.addEventListener('blur', () => {
      this._drawOverlay();
    });
    // The space a map may use is its container's width, watched without
    // forcing layout on every redraw.
    this._avail = 0;
    if (typeof ResizeObserver === 'function') {
      this._ro = new ResizeObserver((entries) => {
        const w = Math.floor(entries[entries.length - 1].contentRect.width);
        if (w && w !== this._avail) {
          this._avail = w;
          if (this.data && this.geom && Math.abs(this._layout().width - this.geom.width) > 1) this.draw();
        }
      });
    }
    this.setMessages(this.t);
  }

  /** Re-labels everything after a language switch. */
  setMessages(t) {
    this.t = t;
    const b = this.toolButtons;
    b.png.textContent = 'PNG';
    b.svg.textContent = 'SVG';
    b.csv.textContent = 'CSV';
    b.json.textContent = 'JSON';
    for (const [k, el] of Object.entries(b)) el.setAttribute('aria-label', t('hm.export', { format: k.toUpperCase(), title: this.title || '' }));
    if (this.exportSummary) this.exportSummary.textContent = t('hm.exportMenu');
    this.tableSummary.textContent = t('hm.table');
    this.legendMasked.lastChild.textContent = t('hm.masked');
    if (this.table.open) this._buildTable();
    this._label();
    this._announce();
  }

  /**
   * @param {object} d
   * @param {Float32Array} d.data
   * @param {number} d.rows
   * @param {number} d.cols
   * @param {number} [d.offset] flat offset of the [rows, cols] block in data
   * @param {string[]} [d.rowLabels]
   * @param {string[]} [d.colLabels]
   * @param {number[]} [d.domain] fixed [lo, hi] (else opts.domain)
   * @param {string} [d.title]
   * @param {{data: Float32Array, shape: number[]}} [d.tensor] what CSV/JSON export (default the block)
   * @param {string[]} [d.dimNames] names of the tensor's dims for CSV
   * @param {Uint8Array} [d.marks] [rows·cols] flags (1 = marked, e.g. dropped), drawn in a
   *        colour outside the palette and named in the legend by d.marksLabel
   * @param {string} [d.marksLabel]
   */
  setData(d) {
    const { rows, cols } = d;
    const offset = d.offset ?? 0;
    this.data = d.data.subarray ? d.data.subarray(offset, offset + rows * cols) : Float32Array.from(d.data).subarray(offset, offset + rows * cols);
    if (rows !== this.rows || cols !== this.cols) {
      this.hover = null;
      if (this.locked && (this.locked.i >= rows || this.locked.j >= cols)) this.locked = null;
    }
    this.rows = rows;
    this.cols = cols;
    this.rowLabels = d.rowLabels ?? null;
    this.colLabels = d.colLabels ?? null;
    if (d.title !== undefined) this.title = d.title;
    this.tensor = d.tensor ?? null;
    this.dimNames = d.dimNames ?? null;
    this.marks = d.marks ?? null;
    this.marksLabel = d.marksLabel ?? '';
    const dom = d.domain ?? this.opts.domain;
    this.domain = Array.isArray(dom) ? dom : dom === 'unit' ? [0, 1] : autoDomain(this.data, { signed: this.palette.diverging });
    let masked = false;
    for (let k = 0; k < this.data.length; k++) {
      if (this.data[k] <= MASKED_THRESHOLD) {
        masked = true;
        break;
      }
    }
    this.hasMasked = masked;
    this.draw();
    if (this.table.open) this._buildTable();
    return this;
  }

  setTitle(title) {
    this.title = title;
    this._label();
  }

  _label() {
    setText(this.titleEl, this.title ?? '');
    if (this.titleEl.hidden !== !this.title) this.titleEl.hidden = !this.title;
    const t = this.t;
    this.plot.setAttribute('aria-label', t('hm.aria', { title: this.title ?? '', rows: this.rows, cols: this.cols, lo: fmt(this.domain?.[0]), hi: fmt(this.domain?.[1]) }));
  }

  /** Value of cell (i, j). */
  valueAt(i, j) {
    return this.data ? this.data[i * this.cols + j] : undefined;
  }

  _container() {
    const p = this.el.parentElement;
    if (p && this._ro && p !== this._observed) {
      if (this._observed) this._ro.unobserve(this._observed);
      this._ro.observe(p);
      this._observed = p;
      this._avail = p.clientWidth;
    }
    return this._avail || this.opts.maxSize;
  }

  _layout() {
    const o = this.opts;
    const avail = Math.max(80, Math.min(o.maxSize, this._container() - 4));
    const ctx = this._ctx();
    ctx.font = FONT;
    const showRows = this.rowLabels && this.rows <= MAX_LABELS;
    const showCols = this.colLabels && this.cols <= MAX_LABELS;
    // Label widths, measured once per label set (redraws reuse them).
    const widths = (labels) => {
      const key = labels.join('\u0000');
      this._widths ??= new Map();
      let w = this._widths.get(key);
      if (!w) {
        if (this._widths.size > 8) this._widths.clear();
        w = labels.map((s) => Math.min(84, ctx.measureText(trunc(s)).width));
        this._widths.set(key, w);
      }
      return w;
    };
    const measure = (labels) => Math.max(0, ...widths(labels));
    const left = showRows ? Math.ceil(measure(this.rowLabels)) + 8 : 26;
    const plotMaxW = Math.max(40, avail - left - 4);
    let cellW = Math.min(o.cellMax, plotMaxW / this.cols);
    let cellH = Math.min(o.cellMax, (o.maxHeight ?? o.maxSize) / this.rows);
    if (this.rows === this.cols || o.square) cellW = cellH = Math.min(cellW, cellH);
    // A whole number of device pixels per cell: a fractional upscale (1.2 px
    // per column, say) draws columns 1 and 2 px wide in a beat pattern, the
    // moiré of a fast-oscillating map.
    const dpr = Math.min(3, globalThis.devicePixelRatio || 1);
    const snap = (c) => (c * dpr >= 1 ? Math.floor(c * dpr) / dpr : c);
    cellW = snap(cellW);
    cellH = snap(cellH);
    const colW = showCols ? measure(this.colLabels) : 0;
    const rotate = showCols && colW > cellW - 2;
    const axis = o.axisTitles ? 15 : 0;
    const top = axis + (showCols ? (rotate ? Math.ceil(Math.min(84, colW) * 0.72) + 12 : 16) : 14);
    const plotW = cellW * this.cols;
    const plotH = cellH * this.rows;
    // Rotated (−45°) column labels reach up and to the right of their column:
    // widen the canvas so the last ones are not clipped.
    let right = 6;
    if (rotate) {
      const w = widths(this.colLabels);
      for (let j = 0; j < this.cols; j++) right = Math.max(right, (j + 0.5) * cellW + w[j] * Math.SQRT1_2 + 8 - plotW);
    }
    return { left, top, axis, cellW, cellH, plotW, plotH, width: Math.ceil(left + plotW + right), height: Math.ceil(top + plotH + 4), showRows, showCols, rotate };
  }

  /** Recolours and redraws the map (call after changing data in place). */
  draw() {
    if (!this.data || !this.rows || !this.cols) return;
    const g = this._layout();
    const dpr = Math.min(3, globalThis.devicePixelRatio || 1);
    g.dpr = dpr;
    this.geom = g;
    for (const c of [this.canvas, this.overlay]) {
      const w = Math.round(g.width * dpr);
      const hh = Math.round(g.height * dpr);
      if (c.width !== w) c.width = w;
      if (c.height !== hh) c.height = hh;
      if (c.style.width !== `${g.width}px`) c.style.setProperty('width', `${g.width}px`);
      if (c.style.height !== `${g.height}px`) c.style.setProperty('height', `${g.height}px`);
    }
    if (this.plot.style.width !== `${g.width}px`) this.plot.style.setProperty('width', `${g.width}px`);
    if (this.plot.style.height !== `${g.height}px`) this.plot.style.setProperty('height', `${g.height}px`);
    const ctx = this._ctx();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    this._paintCells(ctx, g, dpr);
    this._paintLabels(ctx, g, dpr);
    const ds = this.canvas.dataset;
    ds.plotX = String(Math.round(g.left * dpr));
    ds.plotY = String(Math.round(g.top * dpr));
    ds.cellW = String(g.cellW * dpr);
    ds.cellH = String(g.cellH * dpr);
    ds.rows = String(this.rows);
    ds.cols = String(this.cols);
    ds.lo = String(this.domain[0]);
    ds.hi = String(this.domain[1]);
    this._drawLegend();
    this._label();
    this._drawOverlay();
  }

  _ctx() {
    this._c2d ??= this.canvas.getContext('2d');
    return this._c2d;
  }

  /** The [cols, rows] bitmap at one pixel per cell. */
  _bitmap() {
    const { rows, cols, data } = this;
    if (!this._off || this._off.width !== cols || this._off.height !== rows) {
      this._off = typeof OffscreenCanvas === 'function' ? new OffscreenCanvas(cols, rows) : Object.assign(document.createElement('canvas'), { width: cols, height: rows });
    }
    const octx = this._off.getContext('2d');
    if (!this._img || this._img.width !== cols || this._img.height !== rows) this._img = octx.createImageData(cols, rows);
    const img = this._img;
    const px = new Uint32Array(img.data.buffer);
    const lut = this.palette.packed;
    const [lo, hi] = this.domain;
    const k = hi > lo ? 255 / (hi - lo) : 0;
    const masked = this.palette.maskedPacked;
    const marks = this.marks;
    for (let i = 0, n = data.length; i < n; i++) {
      const v = data[i];
      if (marks && marks[i]) {
        px[i] = MARKED_PACKED;
        continue;
      }
      if (v <= MASKED_THRESHOLD) {
        px[i] = masked;
        continue;
      }
      let idx = Math.round((v - lo) * k);
      if (!(idx > 0)) idx = 0;
      else if (idx > 255) idx = 255;
      px[i] = lut[idx];
    }
    octx.putImageData(img, 0, 0);
    return this._off;
  }

  _paintCells(ctx, g, dpr) {
    const bmp = this._bitmap();
    // Upscaling: crisp cells. Downscaling (more cells than pixels): average them.
    ctx.imageSmoothingEnabled = g.cellW * dpr < 1 || g.cellH * dpr < 1;
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(bmp, 0, 0, this.cols, this.rows, Math.round(g.left * dpr), Math.round(g.top * dpr), Math.round(g.plotW * dpr), Math.round(g.plotH * dpr));
  }

  _paintLabels(ctx, g, dpr) {
    const fg = cssVar(this.el, '--al-fg', '#1d2330');
    const muted = cssVar(this.el, '--al-muted', '#5b6475');
    ctx.save();
    ctx.scale(dpr, dpr);
    ctx.font = FONT;
    ctx.fillStyle = fg;
    ctx.textBaseline = 'middle';
    if (g.showRows) {
      ctx.textAlign = 'right';
      for (let i = 0; i < this.rows; i++) ctx.fillText(trunc(this.rowLabels[i]), g.left - 5, g.top + (i + 0.5) * g.cellH);
    } else {
      ctx.fillStyle = muted;
      ctx.textAlign = 'right';
      for (const i of ticks(this.rows, g.plotH)) ctx.fillText(String(i), g.left - 4, g.top + (i + 0.5) * g.cellH);
    }
    ctx.fillStyle = fg;
    if (g.showCols) {
      for (let j = 0; j < this.cols; j++) {
        const x = g.left + (j + 0.5) * g.cellW;
        if (g.rotate) {
          ctx.save();
          ctx.translate(x, g.top - 4);
          ctx.rotate(-Math.PI / 4);
          ctx.textAlign = 'left';
          ctx.fillText(trunc(this.colLabels[j]), 0, 0);
          ctx.restore();
        } else {
          ctx.textAlign = 'center';
          ctx.fillText(trunc(this.colLabels[j]), x, g.top - 8);
        }
      }
    } else {
      ctx.fillStyle = muted;
      ctx.textAlign = 'center';
      for (const j of ticks(this.cols, g.plotW)) ctx.fillText(String(j), g.left + (j + 0.5) * g.cellW, g.top - 7);
    }
    if (g.axis) {
      // Axis titles: rows ↓ (e.g. query), columns → (e.g. key).
      const t = this.t;
      ctx.fillStyle = muted;
      ctx.textBaseline = 'middle';
      ctx.textAlign = 'left';
      const rowTitle = `${t(`hm.kind.${this.opts.rowKind}`)} ↓`;
      const colTitle = `${t(`hm.kind.${this.opts.colKind}`)} →`;
      const rw = ctx.measureText(rowTitle).width;
      ctx.fillText(rowTitle, 2, 8);
      ctx.fillText(colTitle, Math.max(g.left + 2, rw + 12), 8);
    }
    ctx.restore();
  }

  _drawLegend() {
    if (this._legendPalette !== this.palette) {
      this._legendPalette = this.palette;
      const c = this.legendCanvas;
      const ctx = c.getContext('2d');
      const img = ctx.createImageData(c.width, c.height);
      const px = new Uint32Array(img.data.buffer);
      for (let x = 0; x < c.width; x++) {
        const col = this.palette.packed[Math.round((x / (c.width - 1)) * 255)];
        for (let y = 0; y < c.height; y++) px[y * c.width + x] = col;
      }
      ctx.putImageData(img, 0, 0);
    }
    const lo = fmt(this.domain[0], 3);
    const hi = fmt(this.domain[1], 3);
    setText(this.legendLo, lo);
    setText(this.legendHi, hi);
    if (this.legendMasked.hidden === this.hasMasked) this.legendMasked.hidden = !this.hasMasked;
    const marked = Boolean(this.marks && this.marksLabel);
    if (this.legendMarked.hidden === marked) this.legendMarked.hidden = !marked;
    if (marked) setText(this.legendMarked.lastChild, this.marksLabel);
    const label = this.t('hm.legend', { palette: this.palette.diverging ? this.t('hm.diverging') : 'viridis', lo, hi });
    if (this.legend.getAttribute('aria-label') !== label) this.legend.setAttribute('aria-label', label);
    this.legend.setAttribute('role', 'img');
  }

  _cellAt(e) {
    const g = this.geom;
    if (!g) return null;
    const r = this.overlay.getBoundingClientRect();
    const x = ((e.clientX - r.left) / r.width) * g.width - g.left;
    const y = ((e.clientY - r.top) / r.height) * g.height - g.top;
    const j = Math.floor(x / g.cellW);
    const i = Math.floor(y / g.cellH);
    if (i < 0 || j < 0 || i >= this.rows || j >= this.cols) return null;
    return { i, j };
  }

  _pointer(e, click) {
    const c = this._cellAt(e);
    if (click) {
      if (!c || (this.locked && this.locked.i === c.i && this.locked.j === c.j)) this.locked = null;
      else this.locked = c;
      this.hover = c;
    } else {
      if (this.hover && c && this.hover.i === c.i && this.hover.j === c.j) return;
      this.hover = c;
    }
    this._drawOverlay();
    this._announce();
    this._emit();
  }

  _key(e) {
    if (!this.rows) return;
    const cur = this.locked ?? this.hover ?? { i: 0, j: 0 };
    let { i, j } = cur;
    switch (e.key) {
      case 'ArrowUp': i = Math.max(0, i - 1); break;
      case 'ArrowDown': i = Math.min(this.rows - 1, i + 1); break;
      case 'ArrowLeft': j = Math.max(0, j - 1); break;
      case 'ArrowRight': j = Math.min(this.cols - 1, j + 1); break;
      case 'Home': j = 0; if (e.ctrlKey) i = 0; break;
      case 'End': j = this.cols - 1; if (e.ctrlKey) i = this.rows - 1; break;
      case 'PageUp': i = Math.max(0, i - 8); break;
      case 'PageDown': i = Math.min(this.rows - 1, i + 8); break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.locked = this.locked ? null : { i, j };
        this.hover = { i, j };
        this._drawOverlay();
        this._announce();
        this._emit();
        return;
      case 'Escape':
        if (!this.locked) return;
        this.locked = null;
        this._drawOverlay();
        this._announce();
        this._emit();
        return;
      default:
        return;
    }
    e.preventDefault();
    this.locked = { i, j };
    this.hover = { i, j };
    this._drawOverlay();
    this._announce();
    this._emit();
  }

  _emit() {
    const c = this.locked ?? this.hover;
    this.opts.onCell?.(c ? { ...c, locked: Boolean(this.locked) } : null, this);
    this.el.dispatchEvent(new CustomEvent('al-cell', { bubbles: true, composed: true, detail: c ? { ...c, locked: Boolean(this.locked), value: this.valueAt(c.i, c.j) } : null }));
  }

  /** Shows a highlight driven from elsewhere (linked maps); null clears it. */
  highlight(cell) {
    if (this.locked) return;
    this.hover = cell && cell.i < this.rows && cell.j < this.cols ? { i: cell.i, j: cell.j } : null;
    this._drawOverlay();
    this._announce();
  }

  /**
   * Highlights whole rows and columns, e.g. the q_i row and k_j column that a
   * score hovered in another map was computed from; null clears. The plot's
   * data-band-rows / data-band-cols attributes name them.
   * @param {{rows?: number[], cols?: number[]}|null} bands
   */
  setBands(bands) {
    this.bands = bands && (bands.rows?.length || bands.cols?.length) ? bands : null;
    const ds = this.plot.dataset;
    ds.bandRows = this.bands?.rows?.join(',') ?? '';
    ds.bandCols = this.bands?.cols?.join(',') ?? '';
    this._drawOverlay();
  }

  /** Locks (or with null, unlocks) a cell. */
  lock(cell) {
    this.locked = cell ? { i: cell.i, j: cell.j } : null;
    this.hover = this.locked;
    this._drawOverlay();
    this._announce();
  }

  _drawOverlay() {
    const g = this.geom;
    if (!g) return;
    const ctx = this.overlay.getContext('2d');
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.overlay.width, this.overlay.height);
    const c = this.locked ?? this.hover;
    ctx.scale(g.dpr, g.dpr);
    const fg = cssVar(this.el, '--al-fg', '#1d2330');
    const accent = cssVar(this.el, '--al-accent', '#2f5fb3');
    if (this.bands) {
      // Rows and columns that another map's hovered cell was computed from.
      ctx.lineWidth = 2;
      ctx.strokeStyle = accent;
      ctx.fillStyle = accent;
      for (const i of this.bands.rows ?? []) {
        if (i < 0 || i >= this.rows) continue;
        ctx.globalAlpha = 0.18;
        ctx.fillRect(g.left, g.top + i * g.cellH, g.plotW, g.cellH);
        ctx.globalAlpha = 1;
        ctx.strokeRect(g.left - 1, g.top + i * g.cellH - 1, g.plotW + 2, g.cellH + 2);
      }
      for (const j of this.bands.cols ?? []) {
        if (j < 0 || j >= this.cols) continue;
        ctx.globalAlpha = 0.18;
        ctx.fillRect(g.left + j * g.cellW, g.top, g.cellW, g.plotH);
        ctx.globalAlpha = 1;
        ctx.strokeRect(g.left + j * g.cellW - 1, g.top - 1, g.cellW + 2, g.plotH + 2);
      }
    }
    if (!c) return;
    const x = g.left + c.j * g.cellW;
    const y = g.top + c.i * g.cellH;
    ctx.lineWidth = 1;
    ctx.strokeStyle = fg;
    ctx.globalAlpha = 0.55;
    ctx.strokeRect(g.left + 0.5, y + 0.5, g.plotW - 1, Math.max(1, g.cellH - 1));
    ctx.strokeRect(x + 0.5, g.top + 0.5, Math.max(1, g.cellW - 1), g.plotH - 1);
    ctx.globalAlpha = 1;
    ctx.lineWidth = this.locked ? 2.5 : 2;
    ctx.strokeStyle = this.locked ? accent : '#ffffff';
    const pad = Math.min(1, g.cellW / 4);
    ctx.strokeRect(x - pad, y - pad, g.cellW + 2 * pad, g.cellH + 2 * pad);
    if (g.showRows || g.showCols) {
      ctx.fillStyle = accent;
      if (g.showRows) ctx.fillRect(0, y, 3, g.cellH);
      if (g.showCols) ctx.fillRect(x, 0, g.cellW, 3);
    }
  }

  _announce() {
    const c = this.locked ?? this.hover;
    const t = this.t;
    if (!c || !this.data) {
      setText(this.readout, this.rows ? t('hm.hint') : '');
      return;
    }
    const rl = this.rowLabels?.[c.i];
    const cl = this.colLabels?.[c.j];
    setText(this.readout, t('hm.readout', {
      row: t(`hm.kind.${this.opts.rowKind}`),
      col: t(`hm.kind.${this.opts.colKind}`),
      i: c.i,
      j: c.j,
      rowLabel: rl !== undefined ? ` “${rl}”` : '',
      colLabel: cl !== undefined ? ` “${cl}”` : '',
      value: fmt(this.valueAt(c.i, c.j), 4) + (this.marks?.[c.i * this.cols + c.j] && this.marksLabel ? ` (${this.marksLabel})` : ''),
      locked: this.locked ? t('hm.locked') : '',
    }));
  }

  _buildTable() {
    const t = this.t;
    if (!this.data) return;
    if (this.rows * this.cols > MAX_TABLE_CELLS) {
      this.tableBody.replaceChildren(h('p', null, t('hm.tableTooBig', { rows: this.rows, cols: this.cols })));
      return;
    }
    const head = h('tr', null, h('th', { scope: 'col' }, `${t(`hm.kind.${this.opts.rowKind}`)} \\ ${t(`hm.kind.${this.opts.colKind}`)}`),
      Array.from({ length: this.cols }, (_, j) => h('th', { scope: 'col' }, this.colLabels?.[j] ?? String(j))));
    const body = [];
    for (let i = 0; i < this.rows; i++) {
      const cells = [h('th', { scope: 'row' }, this.rowLabels?.[i] ?? String(i))];
      for (let j = 0; j < this.cols; j++) cells.push(h('td', null, fmt(this.valueAt(i, j), 3)));
      body.push(h('tr', null, cells));
    }
    this.tableBody.replaceChildren(h('div', { class: 'al-hm-table-scroll' }, h('table', null, h('caption', null, this.title ?? ''), h('thead', null, head), h('tbody', null, body))));
  }

  /** The tensor CSV/JSON export writes. */
  exportTensor() {
    return this.tensor ?? { data: Float32Array.from(this.data), shape: [this.rows, this.cols] };
  }

  fileName() {
    return safeName(this.opts.name ?? this.title ?? 'heatmap');
  }

  async export(format) {
    if (!this.data) return;
    if (format === 'png') return saveBlob(await this.toPNGBlob(), `${this.fileName()}.png`);
    if (format === 'svg') return saveBlob(new Blob([this.toSVG()], { type: 'image/svg+xml' }), `${this.fileName()}.svg`);
    const tensor = this.exportTensor();
    const dims = this.dimNames ?? (tensor.shape.length === 2 ? [this.opts.rowKind, this.opts.colKind] : undefined);
    return saveTensor(tensor, this.fileName(), format, dims);
  }

  /** A PNG of the figure: title, map with labels, legend (lib/heatmap-export.js). */
  toPNGBlob() {
    return heatmapPNGBlob(this);
  }

  /** An SVG of the figure: cells as rects, or one pixelated image when huge (lib/heatmap-export.js). */
  toSVG() {
    return heatmapSVG(this);
  }

  destroy() {
    this._ro?.disconnect();
    this.el.remove();
  }
}

/** Sets text only when it changed (no needless layout invalidation). */
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function r2(v) {
  return Math.round(v * 100) / 100;
}

function ticks(n, px) {
  const maxTicks = Math.max(2, Math.floor(px / 28));
  const step = niceStep(Math.ceil(n / maxTicks));
  const out = [];
  for (let i = 0; i < n; i += step) out.push(i);
  return out;
}

function niceStep(s) {
  for (const c of [1, 2, 5, 10, 16, 20, 32, 50, 64, 100, 128, 200, 256, 500]) if (c >= s) return c;
  return s;
}

/**
 * Links maps so that hovering one highlights the same cell in the others.
 * Returns a function that unlinks them.
 */
export function linkHeatmaps(maps) {
  const handler = (e) => {
    const src = e.currentTarget.heatmap;
    for (const m of maps) if (m !== src) m.highlight(e.detail);
  };
  for (const m of maps) m.el.addEventListener('al-cell', handler);
  return () => maps.forEach((m) => m.el.removeEventListener('al-cell', handler));
}
