// The "dimensions in one take" animation. Input: the library's shape trace
// (lab.shapeTrace or forward(…, {trace: true})), never hard-coded shapes.
// Every tensor is drawn as blocks ("slabs"): one per batch item for [B, L, W]
// tensors, one per (batch item, head) for [B, H, L, D] tensors, stacked as a
// deck along the head axis. Moving between steps morphs the blocks: a split
// cuts each [L, E] slab into H slices of width D, spreads them (the
// [B, L, H, D] view) and stacks them (the permute); a merge does the reverse.
// Shape legend: B batch, L (Lq/Lk) sequence, E embed, H heads, D head dim.
import { h, shapeText } from './dom.js';
import { tween, lerp, reducedMotion } from './motion.js';
import { translator } from './i18n.js';
import { Heatmap } from './heatmap.js';
import { viridis, diverging } from './palette.js';

const SVG_W = 760;
const SVG_H = 330;
const HEAD_STEPS = new Set(['split_heads', 'scores', 'mask', 'softmax', 'weighted_sum']);
// Okabe–Ito: a categorical palette readable with colour-vision deficiencies.
export const HEAD_COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999999'];

export const STEP_NAMES = {
  en: {
    input: 'input', linear_qkv: 'linear Q, K, V', split_heads: 'split heads', scores: 'scores QKᵀ/√D', mask: 'mask (−1e9)',
    softmax: 'softmax', weighted_sum: 'weights × V', merge_heads: 'merge heads', output_linear: 'output linear',
    dropout: 'dropout', residual: 'residual x + …', layer_norm: 'LayerNorm',
  },
  zh: {
    input: '输入', linear_qkv: '线性变换 Q、K、V', split_heads: '拆分多头', scores: '注意力分数 QKᵀ/√D', mask: '掩码（−1e9）',
    softmax: 'Softmax', weighted_sum: '权重 × V', merge_heads: '合并多头', output_linear: '输出层',
    dropout: 'Dropout', residual: '残差 x + …', layer_norm: '层归一化',
  },
};

// The trace's formulas are the library's (English); other languages give
// their own wording per step here (a step missing here shows the library's).
export const STEP_FORMULAS = {
  zh: {
    input: '查询 [B, Lq, E]',
    linear_qkv: 'Q = 查询·W_Q + b_Q，K = 键·W_K + b_K，V = 值·W_V + b_V',
    split_heads: 'view [B, L, H, D] → permute → [B, H, L, D]，D = E / H',
    scores: 'Q·Kᵀ / √D',
    mask: 'masked_fill(mask == 0, -1e9)（PyTorch）/ 分数 + mask·(-1e9)（TensorFlow）',
    softmax: '沿键轴做 softmax（每行之和为 1）',
    weighted_sum: '权重·V',
    merge_heads: 'permute → [B, Lq, H, D] → contiguous → view [B, Lq, E]',
    output_linear: '输出 = 拼接·W_O + b_O',
    dropout_train: 'dropout(p)：反向缩放，保留的值乘以 1/(1-p)',
    dropout_eval: 'dropout：评估模式下为恒等映射',
    residual: 'x + dropout(注意力)',
    layer_norm: 'LayerNorm：(y - 均值) / √(方差 + eps) · γ + β',
  },
};

/** The formula of a trace record in a language (the library's English text by default). */
export function stepFormula(rec, lang) {
  const table = STEP_FORMULAS[lang];
  if (!table) return rec.formula ?? '';
  const key = rec.step === 'dropout' ? (/identity/.test(rec.formula ?? '') ? 'dropout_eval' : 'dropout_train') : rec.step;
  return table[key] ?? rec.formula ?? '';
}

const ICONS = {
  play: 'M4 2 L13 8 L4 14 Z',
  pause: 'M3 2 H7 V14 H3 Z M9 2 H13 V14 H9 Z',
  prev: 'M12 2 L4 8 L12 14 Z',
  next: 'M4 2 L12 8 L4 14 Z',
  restart: 'M2 2 H4 V14 H2 Z M14 2 L6 8 L14 14 Z',
};

/** A 16×16 SVG icon (no icon fonts or emoji needed). */
export function icon(name) {
  return h('svg:svg', { class: 'al-icon', viewBox: '0 0 16 16', width: '12', height: '12', 'aria-hidden': 'true', focusable: 'false' }, h('svg:path', { d: ICONS[name], fill: 'currentColor' }));
}

export function stepName(step, lang) {
  return (STEP_NAMES[lang] ?? STEP_NAMES.en)[step] ?? step;
}

/** Reads [B, H, L, W] (H = 0 for non-head tensors) from a trace record. */
export function dimsOf(rec, unbatched) {
  const s = rec.shape;
  const head = HEAD_STEPS.has(rec.step);
  if (head) {
    const [B, H, L, W] = unbatched ? [1, ...s] : s;
    return { B, H, L, W, head: true };
  }
  const [B, L, W] = unbatched ? [1, ...s] : s;
  return { B, H: 0, L, W, head: false };
}

const sizeW = (n) => 12 + 24 * Math.log2(1 + n);
const sizeH = (n) => 10 + 17 * Math.log2(1 + n);

/** Abstract layout of one step: pieces keyed "b:h" (h = -1 for non-head). */
function layoutStep(rec, unbatched, numHeads) {
  const d = dimsOf(rec, unbatched);
  const pieces = [];
  const depth = d.head ? Math.min(14, 110 / Math.max(1, d.H)) : 0;
  const w = sizeW(d.W);
  const hh = sizeH(d.L);
  const groupW = w + (d.head ? (d.H - 1) * depth : 0);
  const groupH = hh + (d.head ? (d.H - 1) * depth : 0);
  const gap = 34;
  for (let b = 0; b < d.B; b++) {
    const gx = b * (groupW + gap);
    if (d.head) {
      for (let k = 0; k < d.H; k++) {
        pieces.push({ key: `${b}:${k}`, b, h: k, x: gx + k * depth, y: groupH - hh - k * depth, w, hgt: hh });
      }
    } else {
      pieces.push({ key: `${b}:-1`, b, h: -1, x: gx, y: groupH - hh, w, hgt: hh, bands: numHeads });
    }
  }
  return { dims: d, pieces, width: d.B * groupW + (d.B - 1) * gap, height: groupH };
}

export class ShapeFlow {
  /**
   * @param {object} [opts]
   * @param {Function} [opts.t] translator
   * @param {(step: string, which: string) => Promise<{data: Float32Array, shape: number[]}|null>|null} [opts.values]
   *        returns the values of a step's tensor (which: 'q' | 'k' | 'v' for Q/K/V steps)
   * @param {number} [opts.stepMs] autoplay period
   */
  constructor(opts = {}) {
    this.opts = { stepMs: 1700, morphMs: 950, showValues: true, ...opts };
    this.t = opts.t ?? translator('en');
    this.trace = [];
    this.index = 0;
    this.playing = false;
    this.nodes = new Map();
    this.selection = null;
    this._build();
  }

  _build() {
    const btn = (cls, onclick) => h('button', { type: 'button', class: `al-btn ${cls}`, onclick });
    this.btnRestart = btn('al-flow-restart', () => this.goTo(0));
    this.btnPrev = btn('al-flow-prev', () => this.prev());
    this.btnPlay = btn('al-flow-play', () => (this.playing ? this.pause() : this.play()));
    this.btnNext = btn('al-flow-next', () => this.next());
    this.range = h('input', { type: 'range', class: 'al-flow-range', min: '0', max: '0', value: '0', step: '1' });
    this.range.addEventListener('input', () => {
      this.pause();
      this.goTo(Number(this.range.value));
    });
    this.counter = h('span', { class: 'al-flow-counter', 'aria-live': 'polite' });
    this.bar = h('div', { class: 'al-flow-bar' }, this.btnRestart, this.btnPrev, this.btnPlay, this.btnNext, this.range, this.counter);
    this.stepList = h('ol', { class: 'al-flow-steps' });
    this.svg = h('svg:svg', { class: 'al-flow-stage', viewBox: `0 0 ${SVG_W} ${SVG_H}`, role: 'group' });
    this.gSlabs = h('svg:g', { class: 'al-flow-slabs' });
    this.gLabels = h('svg:g', { class: 'al-flow-labels' });
    this.stepLabel = h('svg:text', { class: 'al-step-label', x: '16', y: '26' });
    this.shapeLabel = h('svg:text', { class: 'al-shape-label', x: `${SVG_W - 16}`, y: '26', 'text-anchor': 'end' });
    this.formula = h('svg:text', { class: 'al-formula', x: '16', y: `${SVG_H - 12}` });
    this.svg.append(this.gSlabs, this.gLabels, this.stepLabel, this.shapeLabel, this.formula);
    this.hint = h('p', { class: 'al-muted al-flow-hint' });
    this.valuesTitle = h('h3', { class: 'al-flow-values-title' });
    this.picks = h('div', { class: 'al-flow-picks' });
    this.valuesMsg = h('p', { class: 'al-muted', hidden: true });
    this.valuesMap = new Heatmap({ palette: 'diverging', t: this.t, rowKind: 'position', colKind: 'dimension', maxSize: 720, cellMax: 30, maxHeight: 260 });
    this.valuesBox = h('section', { class: 'al-flow-values', hidden: true }, this.valuesTitle, this.picks, this.valuesMsg, this.valuesMap.el);
    this.el = h('div', { class: 'al-flow' }, this.bar, this.stepList, this.svg, this.hint, this.valuesBox);
    if (!this.opts.showValues) {
      this.hint.hidden = true;
      this.valuesBox.remove();
    }
    this.el.tabIndex = -1;
    this.el.addEventListener('keydown', (e) => {
      if (e.target.closest?.('input, select, .al-hm-plot')) return;
      if (e.key === 'ArrowRight') { this.next(); e.preventDefault(); }
      if (e.key === 'ArrowLeft') { this.prev(); e.preventDefault(); }
    });
    this.setMessages(this.t);
  }

  setMessages(t) {
    this.t = t;
    this.btnRestart.replaceChildren(icon('restart'));
    this.btnRestart.setAttribute('aria-label', t('flow.restart'));
    this.btnRestart.title = t('flow.restart');
    this.btnPrev.replaceChildren(icon('prev'));
    this.btnPrev.setAttribute('aria-label', t('flow.prev'));
    this.btnPrev.title = t('flow.prev');
    this.btnNext.replaceChildren(icon('next'));
    this.btnNext.setAttribute('aria-label', t('flow.next'));
    this.btnNext.title = t('flow.next');
    this.range.setAttribute('aria-label', t('flow.scrub'));
    this.hint.textContent = t('flow.clickHint');
    this.valuesMap.setMessages(t);
    this._syncPlay();
    if (this.trace.length) {
      this._renderStepList();
      this._render(this.index, this.index, 1);
      if (this.selection) this._showValues();
    }
  }

  _syncPlay() {
    this.btnPlay.replaceChildren(icon(this.playing ? 'pause' : 'play'), ' ', this.playing ? this.t('flow.pause') : this.t('flow.play'));
    this.btnPlay.setAttribute('aria-pressed', String(this.playing));
    this.el.dataset.playing = String(this.playing);
  }

  /** Sets the trace; keeps the current step when the step still exists. */
  setTrace(trace, { unbatched = false } = {}) {
    const prevStep = this.trace[this.index]?.step;
    this.trace = trace.slice();
    this.unbatched = unbatched;
    const split = trace.find((r) => r.step === 'split_heads');
    this.numHeads = split ? dimsOf(split, unbatched).H : 1;
    this.layouts = this.trace.map((r) => layoutStep(r, unbatched, this.numHeads));
    const maxW = Math.max(...this.layouts.map((l) => l.width));
    const maxH = Math.max(...this.layouts.map((l) => l.height));
    this.scale = Math.min(1.6, (SVG_W - 120) / maxW, (SVG_H - 110) / maxH);
    this.range.max = String(Math.max(0, this.trace.length - 1));
    let idx = this.trace.findIndex((r) => r.step === prevStep);
    if (idx < 0) idx = Math.min(this.index, this.trace.length - 1);
    this.index = Math.max(0, idx);
    this._renderStepList();
    this._render(this.index, this.index, 1);
    if (this.selection) {
      this.selection.index = this.trace.findIndex((r) => r.step === this.selection.step);
      if (this.selection.index < 0) this.selection = null;
      this._showValues();
    }
  }

  _renderStepList() {
    const lang = this.t.lang;
    this.stepList.replaceChildren(...this.trace.map((r, i) => h('li', null,
      h('button', {
        type: 'button',
        dataset: { step: r.step },
        'aria-current': i === this.index ? 'step' : false,
        onclick: () => {
          this.pause();
          this.goTo(i);
        },
      }, h('span', { class: 'al-step-name' }, stepName(r.step, lang)), h('span', { class: 'al-step-shape' }, shapeText(r.shape))))));
  }

  /** Goes to step i, morphing from the current one. */
  goTo(i, { animate = true } = {}) {
    if (!this.trace.length) return Promise.resolve();
    i = Math.max(0, Math.min(this.trace.length - 1, i));
    const from = this.index;
    this.index = i;
    this.range.value = String(i);
    for (const [k, li] of [...this.stepList.children].entries()) {
      const b = li.firstChild;
      if (k === i) b.setAttribute('aria-current', 'step');
      else b.removeAttribute('aria-current');
    }
    this._anim?.cancel();
    this.el.dispatchEvent(new CustomEvent('al-step', { bubbles: true, composed: true, detail: { index: i, step: this.trace[i].step } }));
    if (!animate || from === i) {
      this._render(i, i, 1);
      return Promise.resolve();
    }
    if (!reducedMotion()) this.el.dataset.animating = 'true';
    this._anim = tween(this.opts.morphMs, (p) => this._render(from, i, p));
    return this._anim.promise.then(() => {
      delete this.el.dataset.animating;
    });
  }

  next() {
    if (this.index >= this.trace.length - 1) {
      this.pause();
      return Promise.resolve();
    }
    return this.goTo(this.index + 1);
  }

  prev() {
    this.pause();
    return this.goTo(this.index - 1);
  }

  play() {
    if (!this.trace.length) return;
    if (this.index >= this.trace.length - 1) this.goTo(0, { animate: false });
    this.playing = true;
    this._syncPlay();
    const tick = () => {
      if (!this.playing) return;
      this.next().then(() => {
        if (this.playing) this._timer = setTimeout(tick, reducedMotion() ? this.opts.stepMs : this.opts.stepMs - this.opts.morphMs);
      });
    };
    this._timer = setTimeout(tick, 250);
  }

  pause() {
    this.playing = false;
    clearTimeout(this._timer);
    this._syncPlay();
  }

  _place(p) {
    const s = this.scale;
    const lay = this._curLayout;
    const ox = (SVG_W - lay.width * s) / 2;
    const oy = 44 + (SVG_H - 110 - lay.height * s) / 2;
    return { ...p, x: ox + p.x * s, y: oy + p.y * s, w: p.w * s, hgt: p.hgt * s };
  }

  _placed(idx) {
    this._curLayout = this.layouts[idx];
    return this.layouts[idx].pieces.map((p) => this._place(p));
  }

  /** Draws the morph from step a to step b at progress p ∈ [0, 1]. */
  _render(a, b, p) {
    const A = this._placed(a);
    const Bp = this._placed(b);
    const la = this.layouts[a];
    const lb = this.layouts[b];
    let frame;
    if (p >= 1 || a === b) {
      frame = Bp.map((q) => ({ ...q }));
    } else if (la.dims.head === lb.dims.head) {
      const byKey = new Map(A.map((q) => [q.key, q]));
      frame = Bp.map((q) => {
        const s = byKey.get(q.key) ?? q;
        return { ...q, x: lerp(s.x, q.x, p), y: lerp(s.y, q.y, p), w: lerp(s.w, q.w, p), hgt: lerp(s.hgt, q.hgt, p), opacity: byKey.has(q.key) ? 1 : p };
      });
    } else {
      // Split (non-head → head) or merge (head → non-head): head pieces travel
      // between a slice of their batch slab, a spread-out view and the deck.
      const split = !la.dims.head;
      const heads = split ? Bp : A;
      const slabs = new Map((split ? A : Bp).map((q) => [q.b, q]));
      const H = split ? lb.dims.H : la.dims.H;
      const t = split ? p : 1 - p;
      frame = heads.map((q) => {
        const slab = slabs.get(q.b);
        const sw = slab.w / H;
        const slice = { x: slab.x + q.h * sw, y: slab.y, w: sw, hgt: slab.hgt };
        const spread = { x: slab.x + q.h * (sw + 6) - (H - 1) * 3, y: slab.y, w: sw, hgt: slab.hgt };
        let r;
        if (t < 0.5) {
          const u = t * 2;
          r = { x: lerp(slice.x, spread.x, u), y: slice.y, w: sw, hgt: slice.hgt };
        } else {
          const u = (t - 0.5) * 2;
          r = { x: lerp(spread.x, q.x, u), y: lerp(spread.y, q.y, u), w: lerp(sw, q.w, u), hgt: lerp(spread.hgt, q.hgt, u) };
        }
        return { ...q, ...r };
      });
    }
    this._drawPieces(frame, p >= 1 ? b : p < 0.5 ? a : b);
    this._drawLabels(b, p >= 1 ? Bp : null);
  }

  _drawPieces(frame, idx) {
    const rec = this.trace[idx];
    const lang = this.t.lang;
    const seen = new Set();
    // Back to front: higher heads sit further back.
    const order = frame.slice().sort((u, v) => (v.h - u.h) || (u.b - v.b));
    for (const q of order) {
      seen.add(q.key);
      let g = this.nodes.get(q.key);
      if (!g) {
        g = h('svg:g', { class: 'al-slab', tabindex: '0', role: 'button' });
        g.addEventListener('click', () => this._select(g.dataset.b, g.dataset.h));
        g.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            this._select(g.dataset.b, g.dataset.h);
          }
        });
        this.nodes.set(q.key, g);
      }
      g.dataset.b = String(q.b);
      g.dataset.h = String(q.h);
      g.dataset.key = q.key;
      g.setAttribute('aria-label', this.t('flow.aria', { step: stepName(rec.step, lang), shape: shapeText(rec.shape) }) + (q.h >= 0 ? ` · b=${q.b}, h=${q.h}` : ` · b=${q.b}`));
      const bands = q.h < 0 ? Math.max(1, Math.min(q.bands ?? 1, 64)) : 1;
      while (g.childNodes.length > bands) g.lastChild.remove();
      while (g.childNodes.length < bands) g.append(h('svg:rect', {}));
      for (let k = 0; k < bands; k++) {
        const r = g.childNodes[k];
        const bw = q.w / bands;
        r.setAttribute('x', (q.x + k * bw).toFixed(2));
        r.setAttribute('y', q.y.toFixed(2));
        r.setAttribute('width', Math.max(0.5, bw).toFixed(2));
        r.setAttribute('height', Math.max(0.5, q.hgt).toFixed(2));
        const col = HEAD_COLOURS[(q.h >= 0 ? q.h : k) % HEAD_COLOURS.length];
        r.setAttribute('fill', col);
        r.setAttribute('fill-opacity', q.h >= 0 ? '0.92' : '0.78');
        if (bands > 1) r.setAttribute('stroke-opacity', k === 0 ? '1' : '0.25');
        else r.removeAttribute('stroke-opacity');
      }
      g.setAttribute('opacity', String(q.opacity ?? 1));
      this.gSlabs.append(g);
    }
    for (const [k, g] of this.nodes) {
      if (!seen.has(k)) {
        g.remove();
        this.nodes.delete(k);
      }
    }
  }

  _drawLabels(idx, placed) {
    const rec = this.trace[idx];
    const lang = this.t.lang;
    this.stepLabel.textContent = `${idx + 1}. ${stepName(rec.step, lang)}`;
    this.shapeLabel.textContent = shapeText(rec.shape);
    this.shapeLabel.dataset.step = rec.step;
    this.formula.textContent = stepFormula(rec, lang);
    this.counter.textContent = this.t('flow.step', { n: idx + 1, total: this.trace.length });
    this.gLabels.replaceChildren();
    if (!placed) return;
    const d = this.layouts[idx].dims;
    const first = placed[0];
    const lbl = (x, y, text, anchor = 'middle') => this.gLabels.append(h('svg:text', { class: 'al-dim-label', x: x.toFixed(1), y: y.toFixed(1), 'text-anchor': anchor }, text));
    const wName = d.head ? (rec.step === 'scores' || rec.step === 'mask' || rec.step === 'softmax' ? 'Lk' : 'D') : 'E';
    const lName = d.head && (rec.step === 'scores' || rec.step === 'mask' || rec.step === 'softmax') ? 'Lq' : 'L';
    lbl(first.x - 6, first.y + first.hgt / 2 + 4, `${lName}=${d.L}`, 'end');
    lbl(first.x + first.w / 2, first.y + first.hgt + 14, `${wName}=${d.W}`);
    if (d.head && d.H > 1) {
      const back = placed.find((q) => q.b === 0 && q.h === d.H - 1);
      lbl(back.x + back.w + 4, back.y + 8, `H=${d.H}`, 'start');
    }
    if (!this.unbatched) {
      const groups = new Map();
      for (const q of placed) {
        const g = groups.get(q.b) ?? { x0: Infinity, x1: -Infinity, y0: Infinity };
        g.x0 = Math.min(g.x0, q.x);
        g.x1 = Math.max(g.x1, q.x + q.w);
        g.y0 = Math.min(g.y0, q.y);
        groups.set(q.b, g);
      }
      for (const [b, g] of groups) lbl((g.x0 + g.x1) / 2, g.y0 - 6, `b=${b}`);
      lbl(SVG_W - 16, 46, `B=${d.B}`, 'end');
    }
  }

  _select(b, hh) {
    if (!this.opts.showValues) return;
    const rec = this.trace[this.index];
    this.selection = { index: this.index, step: rec.step, b: Number(b), h: Math.max(0, Number(hh)), which: this.selection?.which ?? 'q' };
    this._showValues();
    this.el.dispatchEvent(new CustomEvent('al-select', { bubbles: true, composed: true, detail: { ...this.selection, shape: rec.shape } }));
  }

  /** Shows the values of step i (slice b, h) in the panel. */
  select(i, b = 0, hh = 0, which = 'q') {
    this.goTo(i, { animate: false });
    this.selection = { index: i, step: this.trace[i].step, b, h: hh, which };
    return this._showValues();
  }

  async _showValues() {
    const sel = this.selection;
    if (!sel) {
      this.valuesBox.hidden = true;
      return;
    }
    const rec = this.trace[sel.index];
    const t = this.t;
    const d = dimsOf(rec, this.unbatched);
    sel.b = Math.min(sel.b, d.B - 1);
    sel.h = Math.min(sel.h, Math.max(0, d.H - 1));
    this.valuesBox.hidden = false;
    this.valuesTitle.textContent = t('flow.values', { step: stepName(rec.step, t.lang), shape: shapeText(rec.shape) });
    const mkSel = (label, n, value, on, names) => {
      const s = h('select', { class: 'al-select' }, Array.from({ length: n }, (_, k) => h('option', { value: String(names ? names[k] : k), selected: String(names ? names[k] : k) === String(value) }, names ? names[k].toUpperCase() : String(k))));
      s.addEventListener('change', () => on(s.value));
      return h('label', null, label, s);
    };
    const picks = [];
    if (d.B > 1) picks.push(mkSel('b', d.B, sel.b, (v) => { sel.b = Number(v); this._showValues(); }));
    if (d.head && d.H > 1) picks.push(mkSel('h', d.H, sel.h, (v) => { sel.h = Number(v); this._showValues(); }));
    if (rec.step === 'linear_qkv' || rec.step === 'split_heads') picks.push(mkSel('', 3, sel.which, (v) => { sel.which = v; this._showValues(); }, ['q', 'k', 'v']));
    this.picks.replaceChildren(...picks);
    let tensor = null;
    let msg = '';
    try {
      tensor = this.opts.values ? await this.opts.values(rec.step, sel.which) : null;
      if (!tensor) msg = t('flow.noValues');
    } catch (e) {
      msg = e && e.tooBig ? t('flow.tooBig', { n: e.tooBig.toExponential(1) }) : String(e.message ?? e);
    }
    if (this.selection !== sel) return;
    this.valuesMsg.hidden = !msg;
    this.valuesMsg.textContent = msg;
    this.valuesMap.el.hidden = Boolean(msg);
    if (msg) return;
    const rows = d.L;
    const cols = d.W;
    const offset = d.head ? ((sel.b * d.H + sel.h) * rows * cols) : sel.b * rows * cols;
    const weights = rec.step === 'softmax';
    this.valuesMap.palette = weights ? viridis : diverging;
    this.valuesMap.opts.colKind = rec.step === 'scores' || rec.step === 'mask' || weights ? 'key' : 'dimension';
    this.valuesMap.opts.rowKind = d.head && (rec.step !== 'split_heads' && rec.step !== 'weighted_sum') ? 'query' : 'position';
    this.valuesMap.opts.name = `${rec.step}${sel.which && (rec.step === 'linear_qkv' || rec.step === 'split_heads') ? '_' + sel.which : ''}`;
    this.valuesMap.setData({
      data: tensor.data,
      offset,
      rows,
      cols,
      rowLabels: this.opts.rowLabels?.(sel.b),
      colLabels: cols === rows || weights || rec.step === 'scores' || rec.step === 'mask' ? this.opts.rowLabels?.(sel.b) : undefined,
      title: `${stepName(rec.step, t.lang)} ${shapeText(rec.shape)} · ${t('flow.slice', { b: sel.b, head: d.head ? `, h = ${sel.h}` : '' })}`,
      tensor,
      domain: weights ? 'unit' : undefined,
    });
  }

  destroy() {
    this.pause();
    this._anim?.cancel();
    this.el.remove();
  }
}
