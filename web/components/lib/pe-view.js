// Positional-encoding figures: the [positions × dimensions] heatmap, sin/cos
// curves of chosen dimensions and the PE·PEᵀ similarity of positions.
import { h, fmt, cssVar } from './dom.js';
import { Heatmap } from './heatmap.js';
import { HEAD_COLOURS } from './shape-flow.js';
import { translator } from './i18n.js';

/** Parses "0, 1, 8" → [0, 1, 8] (unique, in [0, max)), at most 8 entries. */
export function parseDims(text, max) {
  const out = [];
  for (const part of String(text ?? '').split(/[\s,，]+/)) {
    if (!part) continue;
    const n = Number(part);
    if (Number.isInteger(n) && n >= 0 && n < max && !out.includes(n)) out.push(n);
    if (out.length >= 8) break;
  }
  return out;
}

/** A canvas line chart of PE columns against position. */
export class CurveChart {
  constructor({ t = translator('en'), height = 200 } = {}) {
    this.t = t;
    this.height = height;
    this.canvas = h('canvas', { class: 'al-curves', role: 'img' });
    this.legend = h('div', { class: 'al-curves-legend' });
    this.readout = h('output', { class: 'al-hm-readout', 'aria-live': 'polite' });
    this.title = h('figcaption', { class: 'al-hm-title' });
    this.el = h('figure', { class: 'al-hm al-curves-fig' }, this.title, this.canvas, this.legend, this.readout);
    this.canvas.addEventListener('pointermove', (e) => this._hover(e));
    this.canvas.addEventListener('pointerleave', () => {
      this.hoverPos = null;
      this.draw();
    });
    if (typeof ResizeObserver === 'function') {
      this._ro = new ResizeObserver(() => this.pe && this.draw());
      this._ro.observe(this.el);
    }
  }

  setMessages(t) {
    this.t = t;
    if (this.pe) this.setData(this.pe, this.positions, this.dModel, this.dims);
  }

  /** pe: Float32Array [positions, dModel]; dims: columns to draw. */
  setData(pe, positions, dModel, dims) {
    Object.assign(this, { pe, positions, dModel, dims });
    const t = this.t;
    this.title.textContent = t('pe.curves');
    this.legend.replaceChildren(...dims.map((d, k) => {
      const s = h('span', null, t('pe.dim', { d, fn: d % 2 === 0 ? 'sin' : 'cos' }));
      s.style.setProperty('--al-line-color', HEAD_COLOURS[k % HEAD_COLOURS.length]);
      return s;
    }));
    this.canvas.setAttribute('aria-label', `${t('pe.curves')}: ${dims.map((d) => t('pe.dim', { d, fn: d % 2 === 0 ? 'sin' : 'cos' })).join(', ')}`);
    this.draw();
  }

  draw() {
    const W = Math.max(200, Math.min(720, (this.el.clientWidth || 560) - 4));
    const Hh = this.height;
    const dpr = Math.min(3, globalThis.devicePixelRatio || 1);
    const c = this.canvas;
    c.width = Math.round(W * dpr);
    c.height = Math.round(Hh * dpr);
    c.style.setProperty('width', `${W}px`);
    c.style.setProperty('height', `${Hh}px`);
    const ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    const fg = cssVar(this.el, '--al-fg', '#1d2330');
    const muted = cssVar(this.el, '--al-muted', '#5b6475');
    const border = cssVar(this.el, '--al-border', '#d9dde6');
    const L = { x: 34, y: 8, w: W - 44, h: Hh - 30 };
    this.geom = L;
    ctx.strokeStyle = border;
    ctx.lineWidth = 1;
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = muted;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const v of [-1, 0, 1]) {
      const y = L.y + (1 - (v + 1) / 2) * L.h;
      ctx.beginPath();
      ctx.moveTo(L.x, y + 0.5);
      ctx.lineTo(L.x + L.w, y + 0.5);
      ctx.stroke();
      ctx.fillText(String(v).replace('-', '−'), L.x - 5, y);
    }
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const n = this.positions;
    const xOf = (p) => L.x + (n <= 1 ? 0 : (p / (n - 1)) * L.w);
    for (const p of niceTicks(n)) ctx.fillText(String(p), xOf(p), L.y + L.h + 5);
    // The library gives PE at whole positions only. Straight segments between
    // them turn a dimension with a period of ~6 positions into a zig-zag, so
    // the samples are joined by a Catmull–Rom spline (a drawing aid that
    // passes through every sample) and marked with dots when there is room.
    const dx = n > 1 ? L.w / (n - 1) : L.w;
    this.dims.forEach((d, k) => {
      const col = HEAD_COLOURS[k % HEAD_COLOURS.length];
      const pt = (p) => {
        const q = Math.max(0, Math.min(n - 1, p));
        return [xOf(q), L.y + (1 - (this.pe[q * this.dModel + d] + 1) / 2) * L.h];
      };
      ctx.strokeStyle = col;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(...pt(0));
      for (let p = 0; p < n - 1; p++) {
        const [x0, y0] = pt(p - 1);
        const [x1, y1] = pt(p);
        const [x2, y2] = pt(p + 1);
        const [x3, y3] = pt(p + 2);
        ctx.bezierCurveTo(x1 + (x2 - x0) / 6, y1 + (y2 - y0) / 6, x2 - (x3 - x1) / 6, y2 - (y3 - y1) / 6, x2, y2);
      }
      ctx.stroke();
      if (dx >= 5) {
        ctx.fillStyle = col;
        for (let p = 0; p < n; p++) {
          const [x, y] = pt(p);
          ctx.beginPath();
          ctx.arc(x, y, 2, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
    });
    if (this.hoverPos !== null && this.hoverPos !== undefined) {
      const x = xOf(this.hoverPos);
      ctx.strokeStyle = fg;
      ctx.globalAlpha = 0.5;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(x + 0.5, L.y);
      ctx.lineTo(x + 0.5, L.y + L.h);
      ctx.stroke();
      ctx.globalAlpha = 1;
    }
  }

  _hover(e) {
    const r = this.canvas.getBoundingClientRect();
    const L = this.geom;
    if (!L || !this.pe) return;
    const x = e.clientX - r.left;
    const p = Math.round(((x - L.x) / L.w) * (this.positions - 1));
    if (p < 0 || p >= this.positions) return;
    this.hoverPos = p;
    this.readout.textContent = this.t('pe.readout', { pos: p, values: this.dims.map((d) => `PE[${p},${d}] = ${fmt(this.pe[p * this.dModel + d], 3)}`).join(' · ') });
    this.draw();
  }
}

function niceTicks(n) {
  const step = [1, 2, 5, 10, 20, 25, 50, 100, 128, 200, 250, 500].find((s) => n / s <= 8) ?? Math.ceil(n / 8);
  const out = [];
  for (let p = 0; p < n; p += step) out.push(p);
  return out;
}

/**
 * PE·PEᵀ [n, n] of the first n positions, computed by the library: the
 * scores of scaledDotProductAttention(PE, PE, PE) with scale 1.
 * @param {object} lab an attention-lab instance
 * @param {Float32Array} pe [≥ n, dModel]
 */
export async function peGram(lab, pe, n, dModel) {
  const t = { data: pe.subarray(0, n * dModel), shape: [n, dModel] };
  const r = await lab.scaledDotProductAttention(t, t, t, { scale: 1, trace: 'values', needWeights: false });
  return r.trace.find((s) => s.step === 'scores').value.data;
}

/**
 * Cosine similarity of positions from PE·PEᵀ [n, n]: s_ij / √(s_ii·s_jj)
 * (1 on the diagonal). Returns a new Float32Array.
 */
export function cosineFromGram(gram, n) {
  const out = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) out[i * n + j] = gram[i * n + j] / Math.sqrt(gram[i * n + i] * gram[j * n + j] || 1);
  }
  return out;
}

/** The colour range of a cosine-similarity map on a sequential scale: [min(0, lowest), 1]. */
export function cosineDomain(sim) {
  let lo = 0;
  for (const v of sim) if (v < lo) lo = v;
  return [lo, 1];
}

/** The three PE figures together (used by the component; the page lays them out itself). */
export class PEView {
  constructor({ t = translator('en') } = {}) {
    this.t = t;
    this.map = new Heatmap({ palette: 'diverging', t, rowKind: 'position', colKind: 'dimension', maxSize: 560, cellMax: 14, maxHeight: 300, domain: [-1, 1], name: 'positional_encoding' });
    this.curves = new CurveChart({ t });
    this.sim = new Heatmap({ palette: 'viridis', t, rowKind: 'position', colKind: 'position', maxSize: 300, cellMax: 14, name: 'pe_similarity' });
    this.el = h('div', { class: 'al-pe' }, this.map.el, this.curves.el, this.sim.el);
  }

  setMessages(t) {
    this.t = t;
    this.map.setMessages(t);
    this.curves.setMessages(t);
    this.sim.setMessages(t);
    if (this.last) this.setData(this.last);
  }

  /** Redraws the three figures (after a theme switch). */
  draw() {
    this.map.draw();
    if (this.curves.pe) this.curves.draw();
    this.sim.draw();
  }

  /** { pe: {data, shape:[P, d]}, dims: number[], showSimilarity, gram: PE·PEᵀ [P, P] from peGram (needed when showSimilarity) } */
  setData(last) {
    this.last = last;
    const { pe, dims, showSimilarity = true, gram } = last;
    const [P, d] = pe.shape;
    const t = this.t;
    this.map.setData({ data: pe.data, rows: P, cols: d, title: `${t('pe.heatmap')} [${P},${d}]`, tensor: pe, dimNames: ['position', 'dimension'] });
    this.curves.setData(pe.data, P, d, dims);
    this.sim.el.hidden = !showSimilarity || !gram;
    if (showSimilarity && gram) {
      const s = cosineFromGram(gram, P);
      this.sim.setData({ data: s, rows: P, cols: P, title: `${t('pe.similarity')} [${P},${P}]`, tensor: { data: s, shape: [P, P] }, domain: cosineDomain(s) });
    }
  }
}
