// A small SVG x–y chart for the page: labelled axes with ticks, a legend, one
// or more series drawn as lines or dots, optional horizontal reference lines,
// and a hover read-out naming the nearest point and its series. It draws the
// numbers it is given (the library's results); it computes none of its own.
import { h, fmt } from '../../components/lib/dom.js';
import { HEAD_COLOURS } from '../../components/lib/shape-flow.js';

const W = 520;
const H = 260;
const M = { l: 52, r: 14, t: 12, b: 40 };
const tickText = (v) => (v !== 0 && (Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3) ? v.toExponential(1) : String(Number(v.toFixed(3)))).replace('-', '−');

function ticks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) ?? step0;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

export class XYChart {
  /**
   * @param {object} [o]
   * @param {string} [o.name] class hook (data-chart)
   */
  constructor({ name = 'chart' } = {}) {
    this.svg = h('svg:svg', { class: 'xy-chart', viewBox: `0 0 ${W} ${H}`, role: 'img', dataset: { chart: name } });
    this.title = h('figcaption', { class: 'al-hm-title' });
    this.legend = h('div', { class: 'xy-legend small' });
    this.readout = h('output', { class: 'al-hm-readout small', 'aria-live': 'polite' });
    this.el = h('figure', { class: 'xy-fig' }, this.title, this.svg, this.legend, this.readout);
    this.svg.addEventListener('pointermove', (e) => this._hover(e));
    this.svg.addEventListener('pointerleave', () => this._hover(null));
  }

  /**
   * @param {object} d
   * @param {string} d.title
   * @param {string} d.xLabel
   * @param {string} d.yLabel
   * @param {Array<{name: string, x: ArrayLike<number>, y: ArrayLike<number>, kind?: 'line'|'dots', dash?: boolean}>} d.series
   * @param {Array<{y: number, label: string}>} [d.hlines]
   * @param {(p: {series: string, x: number, y: number}) => string} [d.describe] hover text
   */
  setData(d) {
    this.d = d;
    this.title.textContent = d.title;
    let x0 = Infinity;
    let x1 = -Infinity;
    let y0 = Infinity;
    let y1 = -Infinity;
    for (const s of d.series) {
      for (let k = 0; k < s.x.length; k++) {
        x0 = Math.min(x0, s.x[k]);
        x1 = Math.max(x1, s.x[k]);
        y0 = Math.min(y0, s.y[k]);
        y1 = Math.max(y1, s.y[k]);
      }
    }
    for (const l of d.hlines ?? []) {
      y0 = Math.min(y0, l.y);
      y1 = Math.max(y1, l.y);
    }
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) {
      y0 -= 1;
      y1 += 1;
    }
    const pad = (y1 - y0) * 0.05;
    y0 -= pad;
    y1 += pad;
    const sx = (v) => M.l + ((v - x0) / (x1 - x0)) * (W - M.l - M.r);
    const sy = (v) => H - M.b - ((v - y0) / (y1 - y0)) * (H - M.t - M.b);
    this.scale = { sx, sy, x0, x1 };
    const g = [];
    const axisY = H - M.b;
    for (const v of ticks(x0, x1)) {
      g.push(h('svg:line', { x1: sx(v), x2: sx(v), y1: M.t, y2: axisY, class: 'xy-grid' }));
      g.push(h('svg:text', { x: sx(v), y: axisY + 14, 'text-anchor': 'middle', class: 'xy-tick' }, tickText(v)));
    }
    for (const v of ticks(y0, y1)) {
      g.push(h('svg:line', { x1: M.l, x2: W - M.r, y1: sy(v), y2: sy(v), class: 'xy-grid' }));
      g.push(h('svg:text', { x: M.l - 5, y: sy(v) + 4, 'text-anchor': 'end', class: 'xy-tick' }, tickText(v)));
    }
    g.push(h('svg:line', { x1: M.l, x2: W - M.r, y1: axisY, y2: axisY, class: 'xy-axis' }));
    g.push(h('svg:line', { x1: M.l, x2: M.l, y1: M.t, y2: axisY, class: 'xy-axis' }));
    g.push(h('svg:text', { x: (M.l + W - M.r) / 2, y: H - 6, 'text-anchor': 'middle', class: 'xy-label' }, d.xLabel));
    g.push(h('svg:text', { x: 12, y: (M.t + axisY) / 2, 'text-anchor': 'middle', class: 'xy-label', transform: `rotate(-90 12 ${(M.t + axisY) / 2})` }, d.yLabel));
    for (const l of d.hlines ?? []) {
      g.push(h('svg:line', { x1: M.l, x2: W - M.r, y1: sy(l.y), y2: sy(l.y), class: 'xy-ref' }));
      g.push(h('svg:text', { x: W - M.r - 2, y: l.y < 0 ? sy(l.y) + 11 : sy(l.y) - 3, 'text-anchor': 'end', class: 'xy-tick' }, l.label));
    }
    d.series.forEach((s, k) => {
      const colour = HEAD_COLOURS[k % HEAD_COLOURS.length];
      if (s.kind === 'dots') {
        const dots = [];
        for (let n = 0; n < s.x.length; n++) dots.push(h('svg:circle', { cx: sx(s.x[n]).toFixed(1), cy: sy(s.y[n]).toFixed(1), r: k ? 2.2 : 3.2, fill: colour, 'fill-opacity': k ? 0.9 : 0.45 }));
        g.push(h('svg:g', { class: 'xy-series', dataset: { series: String(k) } }, dots));
      } else {
        let p = '';
        for (let n = 0; n < s.x.length; n++) p += `${n ? 'L' : 'M'}${sx(s.x[n]).toFixed(1)},${sy(s.y[n]).toFixed(1)}`;
        g.push(h('svg:path', { d: p, fill: 'none', stroke: colour, 'stroke-width': 2, 'stroke-dasharray': s.dash ? '5 4' : null, class: 'xy-series', dataset: { series: String(k) } }));
      }
    });
    this.marker = h('svg:circle', { r: 5, class: 'xy-marker', visibility: 'hidden' });
    g.push(this.marker);
    this.svg.replaceChildren(...g);
    this.svg.setAttribute('aria-label', `${d.title}: ${d.xLabel} → ${d.yLabel}`);
    this.legend.replaceChildren(...d.series.map((s, k) => {
      const sw = h('span', { class: 'xy-swatch', 'aria-hidden': 'true' });
      sw.style.setProperty('background', HEAD_COLOURS[k % HEAD_COLOURS.length]);
      return h('span', { class: 'xy-key' }, sw, s.name);
    }));
    this.readout.textContent = '';
  }

  _hover(e) {
    if (!e || !this.d) {
      this.marker?.setAttribute('visibility', 'hidden');
      if (this.readout) this.readout.textContent = '';
      return;
    }
    const r = this.svg.getBoundingClientRect();
    const px = ((e.clientX - r.left) / r.width) * W;
    const py = ((e.clientY - r.top) / r.height) * H;
    let best = null;
    this.d.series.forEach((s, k) => {
      for (let n = 0; n < s.x.length; n++) {
        const dx = this.scale.sx(s.x[n]) - px;
        const dy = this.scale.sy(s.y[n]) - py;
        const dd = dx * dx + dy * dy;
        if (!best || dd < best.dd) best = { dd, k, n };
      }
    });
    if (!best) return;
    const s = this.d.series[best.k];
    const p = { series: s.name, x: s.x[best.n], y: s.y[best.n], index: best.n, k: best.k };
    this.marker.setAttribute('cx', this.scale.sx(p.x));
    this.marker.setAttribute('cy', this.scale.sy(p.y));
    this.marker.setAttribute('visibility', 'visible');
    this.readout.textContent = this.d.describe ? this.d.describe(p) : `${s.name}: (${fmt(p.x)}, ${fmt(p.y)})`;
  }
}
