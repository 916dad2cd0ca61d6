// Where a cell comes from. Hovering (or locking, or moving to with the keys)
// a score highlights the q_i row and the k_j column it was computed from and
// lists the terms of their dot product; hovering a weight shows the softmax
// of its row: the row's scores and weights, as the library returned them.
// The panel only reads values: every number in it is one the library
// computed, except the products q_i,d·k_j,d of the term list (shown as such).
import { h, fmt } from '../../components/lib/dom.js';

const MAX_TERMS = 8;
// A row longer than this shows the keys around the hovered one (a wider
// list is neither readable nor cheap to rebuild on every pointer move: 512
// keys took about 48 ms per move, `npm run bench -- --ui`); its sum is still
// over the whole row.
const MAX_KEYS = 33;

/**
 * A read-out panel for one chapter, fed by heatmaps' al-cell events.
 * @param {{ text: Function, get t(): Function }} ctx the page context
 */
export class Provenance {
  constructor(ctx, { id } = {}) {
    this.ctx = ctx;
    this.el = h('div', { class: 'provenance', 'aria-live': 'polite', id, hidden: true });
    this.hint = ctx.text('p', 'prov.hint', { class: 'small muted provenance-hint' });
    this.box = h('div', { class: 'provenance-box' }, this.hint, this.el);
    this.sources = new Map();
  }

  /**
   * A score map: cell (i, j) = scale · q_i · k_j.
   * @param {object} s
   * @param {import('../../components/lib/heatmap.js').Heatmap} s.map the score map
   * @param {() => {q: Float32Array, k: Float32Array, D: number, scale: number, rowLabels?: string[], colLabels?: string[]}|null} s.source
   *        q [Lq, D] and k [Lk, D] of the shown block, and the factor applied to q·k
   * @param {Array<{map: object, axis: 'rows'|'cols', of: 'q'|'k'}>} [s.bands] maps to highlight:
   *        q_i as row i (axis 'rows') of a Q map, k_j as row j of a K map or column j of a Kᵀ map
   */
  scores({ map, source, bands = [] }) {
    this._listen(map, (c) => {
      for (const b of bands) b.map.setBands(c ? { [b.axis]: [b.of === 'q' ? c.i : c.j] } : null);
      if (!c) return this._clear(map);
      const src = source();
      if (!src) return this._clear(map);
      this._showScore(map, c, src);
    });
  }

  /**
   * A weight map: row i = softmax(scores row i).
   * @param {object} s
   * @param {object} s.map the weight map
   * @param {() => {scores?: Float32Array, weights: Float32Array, Lk: number, rowLabels?: string[], colLabels?: string[]}|null} s.source
   *        scores (after scaling and masking) and weights of the shown block [Lq, Lk]
   * @param {object[]} [s.bandMaps] maps (e.g. the score map) whose row i to highlight
   */
  weights({ map, source, bandMaps = [] }) {
    this._listen(map, (c) => {
      for (const m of bandMaps) m.setBands(c ? { rows: [c.i] } : null);
      if (!c) return this._clear(map);
      const src = source();
      if (!src) return this._clear(map);
      this._showRow(map, c, src);
    });
  }

  _listen(map, fn) {
    map.el.addEventListener('al-cell', (e) => {
      if (e.currentTarget !== map.el) return;
      fn(e.detail);
    });
  }

  _clear(map) {
    if (this.owner && this.owner !== map) return;
    this.owner = null;
    this.el.hidden = true;
    this.el.replaceChildren();
    delete this.el.dataset.kind;
  }

  _showScore(map, { i, j }, { q, k, D, scale, rowLabels, colLabels }) {
    const t = this.ctx.t;
    this.owner = map;
    const terms = [];
    let sum = 0;
    for (let d = 0; d < D; d++) {
      const p = q[i * D + d] * k[j * D + d];
      terms.push([d, q[i * D + d], k[j * D + d], p]);
      sum += p;
    }
    const top = terms.slice().sort((a, b) => Math.abs(b[3]) - Math.abs(a[3])).slice(0, MAX_TERMS);
    const value = map.valueAt(i, j);
    const lbl = (arr, n) => (arr?.[n] !== undefined ? ` “${arr[n]}”` : '');
    this.el.hidden = false;
    Object.assign(this.el.dataset, { kind: 'score', i: String(i), j: String(j) });
    this.el.replaceChildren(
      h('p', { class: 'prov-title' }, t('prov.score', { i, j, q: lbl(rowLabels, i), k: lbl(colLabels, j), D, s: fmt(scale, 4) })),
      h('table', { class: 'data prov-terms' },
        h('thead', null, h('tr', null, ['d', `q[${i}, d]`, `k[${j}, d]`, t('prov.product')].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', null, top.map(([d, a, b, p]) => h('tr', null, h('td', { class: 'num' }, String(d)), h('td', { class: 'num' }, fmt(a, 3)), h('td', { class: 'num' }, fmt(b, 3)), h('td', { class: 'num' }, fmt(p, 3)))))),
      h('p', { class: 'small' }, t('prov.scoreSum', { n: top.length, D, sum: fmt(sum, 4), s: fmt(scale, 4), v: fmt(sum * scale, 4), lib: fmt(value, 4) })),
    );
  }

  _showRow(map, { i, j }, { scores, weights, Lk, rowLabels, colLabels }) {
    const t = this.ctx.t;
    this.owner = map;
    const items = [];
    let sum = 0;
    for (let k = 0; k < Lk; k++) sum += weights[i * Lk + k];
    const a = Lk > MAX_KEYS ? Math.max(0, Math.min(Lk - MAX_KEYS, j - (MAX_KEYS >> 1))) : 0;
    const b = Math.min(Lk, a + MAX_KEYS);
    for (let k = a; k < b; k++) {
      const w = weights[i * Lk + k];
      const bar = h('span');
      bar.style.setProperty('--w', String(Math.max(0, Math.min(1, w))));
      items.push(h('li', { class: k === j ? 'cur' : '', dataset: { k: String(k), w: String(w), s: scores ? String(scores[i * Lk + k]) : '' } },
        h('span', { class: 'lbl' }, `${k}${colLabels?.[k] !== undefined ? ` ${colLabels[k]}` : ''}`),
        h('span', { class: 'num' }, scores ? fmt(scores[i * Lk + k], 3) : ''),
        h('span', { class: 'bar', 'aria-hidden': 'true' }, bar),
        h('span', { class: 'num' }, fmt(w, 4))));
    }
    this.el.hidden = false;
    Object.assign(this.el.dataset, { kind: 'weights', i: String(i), j: String(j) });
    const list = h('ol', { class: 'prov-row' }, items);
    this.el.replaceChildren(
      h('p', { class: 'prov-title' }, t('prov.row', { i, q: rowLabels?.[i] !== undefined ? ` “${rowLabels[i]}”` : '' })),
      h('p', { class: 'small muted' }, t(scores ? 'prov.rowFormula' : 'prov.rowNoScores')),
      Lk > b - a ? h('p', { class: 'small muted prov-window' }, t('prov.rowWindow', { a, b: b - 1, n: Lk, j })) : null,
      h('div', { class: 'prov-head small muted' }, h('span', null, t('prov.key')), h('span', null, scores ? t('prov.scoreCol') : ''), h('span'), h('span', null, t('prov.weightCol'))),
      list,
      h('p', { class: 'small' }, t('prov.rowSum', { sum: fmt(sum, 5) })),
    );
    // Where the list is taller than the panel allows (page.css), key j is
    // brought into view inside it, without scrolling the page.
    const cur = items[j - a];
    if (cur && list.scrollHeight > list.clientHeight) {
      list.scrollTop = Math.max(0, cur.offsetTop - (list.clientHeight - cur.offsetHeight) / 2);
    }
  }
}
