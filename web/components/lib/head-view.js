// BertViz-style head view: the query tokens in a column on the left, the key
// tokens on the right, and a line from query i to key j for every selected
// head whose weight is at least `minWeight` (colour = head, opacity =
// weight). Focusing or hovering a left token shows only its lines; arrow keys
// move between tokens and Escape shows all lines again. SVG, built with
// createElementNS and textContent only.
import { h, fmt } from './dom.js';

const ROW = 22;
const PAD = 8;
const LINE_GAP = 120;

function textWidth(tokens) {
  return Math.min(140, Math.max(28, ...tokens.map((s) => 7.2 * Math.min(18, s.length) + 10)));
}

export class HeadView {
  /**
   * @param {object} o
   * @param {(key: string, params?: object) => string} o.t
   * @param {string[]} o.colours
   */
  constructor({ t, colours }) {
    this.t = t;
    this.colours = colours;
    this.focus = -1;
    this.svg = h('svg:svg', { class: 'al-hv', role: 'group' });
    this.readout = h('output', { class: 'al-hm-readout', 'aria-live': 'polite' });
    this.el = h('div', { class: 'al-hv-wrap' }, this.svg, this.readout);
    this.svg.addEventListener('keydown', (e) => this._key(e));
  }

  /**
   * @param {object} d
   * @param {Float32Array} d.data [layers, H, Lq, Lk]
   * @param {number} d.layer
   * @param {number[]} d.heads selected head indices
   * @param {number} d.H
   * @param {number} d.lq
   * @param {number} d.lk
   * @param {string[]} d.qTokens
   * @param {string[]} d.kTokens
   * @param {number} d.minWeight
   */
  setData(d) {
    this.d = d;
    const { lq, lk, qTokens, kTokens } = d;
    const wl = textWidth(qTokens);
    const wr = textWidth(kTokens);
    const x0 = PAD + wl;
    const x1 = x0 + LINE_GAP;
    const height = PAD * 2 + Math.max(lq, lk) * ROW;
    const width = x1 + wr + PAD;
    const svg = this.svg;
    svg.replaceChildren();
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    svg.setAttribute('width', String(width));
    svg.setAttribute('height', String(height));
    svg.setAttribute('aria-label', this.t('mv.headLines', { l: d.layer }));
    const y = (i) => PAD + i * ROW + ROW / 2;
    const lines = h('svg:g', { class: 'al-hv-lines' });
    const per = d.lq * d.lk;
    this.lines = [];
    for (const hh of d.heads) {
      const base = (d.layer * d.H + hh) * per;
      const colour = this.colours[hh % this.colours.length];
      for (let i = 0; i < lq; i++) {
        for (let j = 0; j < lk; j++) {
          const w = d.data[base + i * lk + j];
          if (!(w >= d.minWeight)) continue;
          const line = h('svg:line', {
            x1: x0 + 4, y1: y(i), x2: x1 - 4, y2: y(j), stroke: colour,
            'stroke-opacity': Math.min(1, w).toFixed(3), 'stroke-width': '2', dataset: { head: hh, i, j },
          });
          lines.append(line);
          this.lines.push(line);
        }
      }
    }
    svg.append(lines);
    this.left = qTokens.map((tok, i) => {
      const g = h('svg:g', { class: 'al-hv-token al-hv-left', tabindex: i === 0 ? '0' : '-1', role: 'button', dataset: { i } },
        h('svg:rect', { x: PAD, y: y(i) - ROW / 2 + 2, width: wl - 6, height: ROW - 4, rx: 3 }),
        h('svg:title', { text: tok }),
        h('svg:text', { x: x0 - 4, y: y(i) + 4, 'text-anchor': 'end', text: trunc(tok) }));
      g.setAttribute('aria-label', this._summary(i));
      g.addEventListener('pointerenter', () => this.show(i));
      g.addEventListener('pointerleave', () => this.show(-1));
      g.addEventListener('focus', () => this.show(i));
      g.addEventListener('click', () => g.focus());
      return g;
    });
    const right = kTokens.map((tok, j) => h('svg:g', { class: 'al-hv-token al-hv-right', 'aria-hidden': 'true' },
      h('svg:title', { text: tok }),
      h('svg:text', { x: x1 + 4, y: y(j) + 4, 'text-anchor': 'start', text: trunc(tok) })));
    svg.append(h('svg:g', null, this.left), h('svg:g', null, right));
    this.show(-1);
  }

  /** Text summary of query i: the key each selected head attends to most. */
  _summary(i) {
    const d = this.d;
    const parts = d.heads.map((hh) => {
      const base = (d.layer * d.H + hh) * d.lq * d.lk + i * d.lk;
      let best = 0;
      for (let j = 1; j < d.lk; j++) if (d.data[base + j] > d.data[base + best]) best = j;
      return `${this.t('mv.headN', { h: hh })} → “${d.kTokens[best]}” ${fmt(d.data[base + best], 3)}`;
    });
    return this.t('mv.tokenFocus', { i, token: d.qTokens[i], summary: parts.join('; ') });
  }

  /** Shows only query i's lines (i = -1: all lines). */
  show(i) {
    this.focus = i;
    for (const line of this.lines) line.classList.toggle('al-hv-dim', i >= 0 && Number(line.dataset.i) !== i);
    this.left.forEach((g, k) => g.classList.toggle('al-hv-active', k === i));
    this.readout.textContent = i >= 0 ? this._summary(i) : '';
  }

  _key(e) {
    const n = this.left?.length ?? 0;
    if (!n) return;
    const cur = Math.max(0, this.left.indexOf(e.target));
    let next = null;
    if (e.key === 'ArrowDown' || e.key === 'ArrowRight') next = Math.min(n - 1, cur + 1);
    else if (e.key === 'ArrowUp' || e.key === 'ArrowLeft') next = Math.max(0, cur - 1);
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = n - 1;
    else if (e.key === 'Escape') {
      this.show(-1);
      e.preventDefault();
      return;
    }
    if (next === null) return;
    e.preventDefault();
    this.left.forEach((g, k) => g.setAttribute('tabindex', k === next ? '0' : '-1'));
    this.left[next].focus();
  }

  /** The SVG as a standalone file (styles inlined as attributes already). */
  toSvgText() {
    const clone = this.svg.cloneNode(true);
    clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
    for (const l of clone.querySelectorAll('.al-hv-dim')) l.classList.remove('al-hv-dim');
    for (const r of clone.querySelectorAll('rect')) r.setAttribute('fill', 'none');
    return new XMLSerializer().serializeToString(clone);
  }
}

function trunc(s) {
  return s.length > 18 ? `${s.slice(0, 17)}…` : s;
}

export const HEAD_VIEW_CSS = `
.al-hv-wrap { display: flex; flex-direction: column; gap: 4px; max-width: 100%; overflow-x: auto; }
.al-hv { display: block; font: 12px var(--al-mono, ui-monospace, monospace); }
.al-hv text { fill: var(--al-fg, #1d2330); }
.al-hv-token rect { fill: transparent; stroke: none; }
.al-hv-left { cursor: pointer; outline: none; }
.al-hv-left:focus rect, .al-hv-active rect { fill: var(--al-card, #fff); stroke: var(--al-accent, #2f5fb3); stroke-width: 1.5; }
.al-hv-lines line.al-hv-dim { display: none; }
`;
