// "What the heads do" (issue 33 item 7): the interpretability calls of a loaded decoder
// (docs/interpretability.md), drawn for one text. Used by the page's chapter on the shipped models
// and by <attention-lab-model-view> for any model it holds (so "Your model" has it too). Every
// number comes from the model's own calls, awaited, so a Model of this thread and a WorkerModel
// (lib/model-client.js, the calls run in the model worker) work alike:
//   - head scores: model.headScores(text) and model.headScores.repeated({ length, seed }), a
//     layers × heads table per input; a click on a head opens its attention map (model.forward);
//   - the logit lens: model.logitLens(text), (layers + 1) × positions, the top token per cell
//     coloured by its probability;
//   - next tokens with heads switched off: model.nextTokens(text, { k: 10, ablate });
//   - direct logit attribution: model.attribute(text, { target, baseline }) as a layers × heads map;
//   - activation patching: model.patch({ clean, corrupted, target, baseline, over: 'heads' }).
// A call the model refuses (a post-norm model's logit lens, attribution and patching) shows the
// library's Error in its section; the others carry on. Token strings go into textContent only.
import { h, fmt } from './dom.js';
import { Heatmap } from './heatmap.js';
import { viridis } from './palette.js';
import { readableToken } from './token-text.js';

export const SCORE_KINDS = ['previousToken', 'duplicateToken', 'induction', 'firstToken'];
const K_NEXT = 10;

// Its styles are in lib/styles.js (WIDGET_CSS, .al-hp-*): adopted by the page and by shadow roots.

const pct = (p) => (p >= 0.001 ? `${(100 * p).toFixed(1)}%` : p.toExponential(1));
const sum = (a) => a.reduce((s, x) => s + x, 0);

function textOn(bg) {
  const [r, g, b] = bg;
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? '#111' : '#fff';
}

/** A section: heading, hint, a body, an error line. */
function section(cls) {
  const head = h('h4', { class: 'al-hp-h' });
  const hint = h('p', { class: 'al-hp-hint' });
  const body = h('div', { class: 'al-hp-body' });
  const err = h('p', { class: 'al-hp-err', role: 'alert', hidden: true });
  const el = h('section', { class: `al-hp-sec ${cls}` }, head, hint, body, err);
  return { el, head, hint, body, err };
}

export class HeadsPanel {
  /**
   * @param {{ t: Function, onError?: (e: Error) => void, examples?: { clean: string, corrupted: string }[] }} o
   *   examples: text pairs of equal token length offered for patching (the first fills the boxes).
   */
  constructor({ t, onError, examples = [] }) {
    this.t = t;
    this.onError = onError ?? (() => {});
    this.examples = examples;
    this.model = null;
    this.text = '';
    this.byteLevel = false;
    this._seq = 0;
    this._score = 'previousToken';
    this._ablate = new Map(); // `${l},${h}` → { layer, head }
    this._mean = false;
    this._target = null;
    this._forwards = new Map();
    /** What each view last showed (for tests and scripts). */
    this.shown = { scores: null, repeated: null, map: null, lens: null, next: null, attribution: null, patch: null };

    this._scores = section('al-hp-scores');
    this._scoreBtns = SCORE_KINDS.map((k) => h('button', { type: 'button', class: 'al-btn al-btn-small', dataset: { score: k }, onclick: () => this._pickScore(k) }));
    this._scorePick = h('span', { class: 'al-hp-group', role: 'group' }, this._scoreBtns);
    this._len = h('input', { type: 'number', class: 'al-input al-hp-num al-hp-len', min: '1', step: '1', value: '20' });
    this._seedIn = h('input', { type: 'number', class: 'al-input al-hp-num al-hp-seed', min: '0', step: '1', value: '0' });
    this._lenLabel = h('label', null, h('span'), this._len);
    this._seedLabel = h('label', null, h('span'), this._seedIn);
    for (const el of [this._len, this._seedIn]) el.addEventListener('change', () => this._runRepeated(this._seq).catch((e) => this.onError(e)));
    this._textTable = h('div', { class: 'al-hp-scroll al-hp-scores-text' });
    this._repTable = h('div', { class: 'al-hp-scroll al-hp-scores-rep' });
    this._floor = h('p', { class: 'al-hp-line al-hp-floor' });
    this._mapBox = h('div', { class: 'al-hp-map', hidden: true });
    this._scores.body.append(h('div', { class: 'al-hp-bar' }, this._scorePick, this._lenLabel, this._seedLabel),
      h('div', { class: 'al-hp-tables' }, this._textTable, this._repTable), this._floor, this._mapBox);

    this._lens = section('al-hp-lens-sec');
    this._lensBox = h('div', { class: 'al-hp-scroll' });
    this._lens.body.append(this._lensBox);

    this._next = section('al-hp-next-sec');
    this._ablGrid = h('div', { class: 'al-hp-scroll al-hp-abl-grid' });
    this._meanBox = h('input', { type: 'checkbox', class: 'al-hp-mean', onchange: () => { this._mean = this._meanBox.checked; this._runNext(this._seq).catch((e) => this.onError(e)); } });
    this._meanLabel = h('label', null, this._meanBox, h('span'));
    this._clearBtn = h('button', { type: 'button', class: 'al-btn al-btn-small al-hp-clear', onclick: () => { this._ablate.clear(); this._drawAblGrid(); this._runNext(this._seq).catch((e) => this.onError(e)); } });
    this._ablLine = h('p', { class: 'al-hp-line al-hp-abl-line', 'aria-live': 'polite' });
    this._nextHead = h('p', { class: 'al-hp-line' });
    this._nextList = h('ol', { class: 'al-hp-next' });
    this._next.body.append(h('div', { class: 'al-hp-bar' }, this._meanLabel, this._clearBtn), this._ablGrid, this._ablLine, this._nextHead, this._nextList);

    this._attr = section('al-hp-attr-sec');
    this._targetSel = h('select', { class: 'al-select al-hp-target', onchange: () => { this._target = Number(this._targetSel.value); this._runAttribute(this._seq).catch((e) => this.onError(e)); } });
    this._targetLabel = h('label', null, h('span'), this._targetSel);
    this._baseLine = h('span', { class: 'al-hp-baseline' });
    this._attrMap = new Heatmap({ t, palette: 'diverging', rowKind: 'layer', colKind: 'head', maxSize: 300, cellMax: 44, name: 'attribution' });
    this._attrSum = h('p', { class: 'al-hp-line al-hp-attr-sum' });
    this._attr.body.append(h('div', { class: 'al-hp-bar' }, this._targetLabel, this._baseLine), this._attrMap.el, this._attrSum);

    this._patch = section('al-hp-patch-sec');
    this._clean = h('input', { type: 'text', class: 'al-input al-hp-text al-hp-clean', spellcheck: 'false' });
    this._corrupted = h('input', { type: 'text', class: 'al-input al-hp-text al-hp-corrupted', spellcheck: 'false' });
    this._cleanLabel = h('label', { class: 'al-hp-bar' }, h('span'), this._clean);
    this._corruptedLabel = h('label', { class: 'al-hp-bar' }, h('span'), this._corrupted);
    this._exLabel = h('span');
    this._exBtns = examples.map((ex, k) => h('button', { type: 'button', class: 'al-btn al-btn-small al-hp-example', dataset: { k }, text: `${ex.clean} | ${ex.corrupted}`, onclick: () => this.setPair(ex.clean, ex.corrupted) }));
    this._patchLine = h('p', { class: 'al-hp-line al-hp-patch-line' });
    this._patchMap = new Heatmap({ t, palette: 'diverging', rowKind: 'layer', colKind: 'head', maxSize: 300, cellMax: 44, name: 'patching' });
    let timer = 0;
    const typed = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this._runPatch(this._seq).catch((e) => this.onError(e)), 250);
    };
    this._clean.addEventListener('input', typed);
    this._corrupted.addEventListener('input', typed);
    this._patch.body.append(h('div', { class: 'al-hp-bar', hidden: !examples.length }, this._exLabel, this._exBtns), this._cleanLabel, this._corruptedLabel, this._patchLine, this._patchMap.el);
    if (examples.length) {
      this._clean.value = examples[0].clean;
      this._corrupted.value = examples[0].corrupted;
    }

    this.el = h('div', { class: 'al-hp' }, this._scores.el, this._lens.el, this._next.el, this._attr.el, this._patch.el);
    this.relabel();
  }

  /** The model's number of layers and heads. */
  get _NH() {
    return { N: this.model.config.numLayers, H: this.model.config.numHeads };
  }

  _label(tok) {
    return readableToken(tok, this.byteLevel);
  }

  _headName(l, hh) {
    return this.t('hp.layerHead', { l, h: hh });
  }

  /** Re-labels everything (a language switch) and redraws what was shown. */
  setMessages(t) {
    this.t = t;
    this._attrMap.setMessages(t);
    this._patchMap.setMessages(t);
    this._mapHeat?.setMessages(t);
    this.relabel();
    if (this.model) this._redraw();
  }

  relabel() {
    const t = this.t;
    const head = (s, key) => {
      s.head.textContent = t(`${key}.title`);
      s.hint.textContent = t(`${key}.hint`);
    };
    head(this._scores, 'hp.scores');
    head(this._lens, 'hp.lens');
    head(this._next, 'hp.next');
    head(this._attr, 'hp.attr');
    head(this._patch, 'hp.patch');
    this._scorePick.setAttribute('aria-label', t('hp.scores.pick'));
    this._scoreBtns.forEach((b) => {
      b.textContent = t(`hp.score.${b.dataset.score}`);
      b.setAttribute('aria-pressed', String(b.dataset.score === this._score));
    });
    this._lenLabel.firstChild.textContent = t('hp.scores.length');
    this._seedLabel.firstChild.textContent = t('hp.scores.seed');
    this._meanLabel.lastChild.textContent = t('hp.next.mean');
    this._clearBtn.textContent = t('hp.next.clear');
    this._nextHead.textContent = t('hp.next.list');
    this._nextList.setAttribute('aria-label', t('hp.next.list'));
    this._targetLabel.firstChild.textContent = t('hp.attr.target');
    this._cleanLabel.firstChild.textContent = t('hp.patch.clean');
    this._corruptedLabel.firstChild.textContent = t('hp.patch.corrupted');
    this._exLabel.textContent = t('hp.patch.examples');
  }

  /** Sets the patching pair (the boxes) and runs it. */
  setPair(clean, corrupted) {
    this._clean.value = clean;
    this._corrupted.value = corrupted;
    return this._runPatch(this._seq);
  }

  /** The heads switched off: [{ layer, head, mode }] as the ablate option takes them. */
  get ablation() {
    const mode = this._mean ? 'mean' : 'zero';
    return [...this._ablate.values()].map(({ layer, head }) => ({ layer, head, mode }));
  }

  /** Switches head (layer, head) off or back on (as a click on its button does); resolves when the list is redrawn. */
  toggleHead(layer, head) {
    const key = `${layer},${head}`;
    if (this._ablate.has(key)) this._ablate.delete(key);
    else this._ablate.set(key, { layer, head });
    this._drawAblGrid();
    return this._runNext(this._seq);
  }

  /**
   * Runs every view for `model` on `text`. byteLevel: the tokenizer's pieces are GPT-2's byte
   * symbols (shown decoded). Resolves when all have been drawn; a newer update supersedes it.
   */
  async update(model, text, { byteLevel = false } = {}) {
    const seq = ++this._seq;
    if (model !== this.model) {
      this._ablate.clear();
      this._target = null;
      this._forwards.clear();
      this._repKey = null;
      this._patchKey = null;
      this._mapHeat = null;
      this._mapBox.replaceChildren();
      this._mapBox.hidden = true;
      const P = model.config.maxPositions;
      const bos = 1;
      const maxLen = Math.max(1, Math.floor((P - bos) / 2));
      this._len.max = String(maxLen);
      if (Number(this._len.value) > maxLen) this._len.value = String(Math.min(maxLen, 20));
    }
    if (text !== this.text) this._forwards.clear();
    this.model = model;
    this.text = text;
    this.byteLevel = byteLevel;
    if (!this.examples.length && !this._clean.value) this._clean.value = text;
    const ids = Array.from(await model.encode(text));
    if (seq !== this._seq) return;
    this._ids = ids;
    this._tokens = (await model.tokens(ids)).map((tok) => this._label(tok));
    if (seq !== this._seq) return;
    this._drawAblGrid();
    const steps = [() => this._runScores(seq), () => this._runLens(seq), () => this._runNext(seq), () => this._runAttribute(seq), () => this._runRepeated(seq), () => this._runPatch(seq)];
    for (const step of steps) {
      if (seq !== this._seq) return;
      await step();
    }
  }

  _redraw() {
    this._drawScores();
    this._drawLens();
    this._drawAblGrid();
    this._drawNext();
    this._drawAttribute();
    this._drawPatch();
    if (this.shown.map) this._openMap(this.shown.map.which, this.shown.map.layer, this.shown.map.head, false);
  }

  /** Runs fn, showing an Error it throws in the section `sec` (and null as the value). */
  async _guard(sec, seq, fn) {
    try {
      const v = await fn();
      if (seq === this._seq) {
        sec.err.hidden = true;
        sec.err.textContent = '';
      }
      return v;
    } catch (e) {
      if (seq === this._seq) {
        sec.err.hidden = false;
        sec.err.textContent = `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
      }
      return undefined;
    }
  }

  // ---- head scores ----------------------------------------------------------
  _pickScore(k) {
    this._score = k;
    this.relabel();
    this._drawScores();
  }

  async _runScores(seq) {
    const model = this.model;
    const r = await this._guard(this._scores, seq, () => model.headScores(this.text));
    if (seq !== this._seq || !r) return;
    this.shown.scores = { L: this._ids.length, ids: this._ids, ...Object.fromEntries(SCORE_KINDS.map((k) => [k, Array.from(r[k].data)])) };
    this._drawScores();
  }

  async _runRepeated(seq) {
    const model = this.model;
    if (!model) return;
    const length = Math.floor(Number(this._len.value));
    const seed = Math.floor(Number(this._seedIn.value));
    const key = `${length},${seed}`;
    if (this._repKey === key && this.shown.repeated) return;
    const r = await this._guard(this._scores, seq, () => model.headScores.repeated({ length, seed }));
    if (seq !== this._seq || !r) return;
    this._repKey = key;
    const tokens = (await model.tokens(Array.from(r.ids))).map((tok) => this._label(tok));
    this.shown.repeated = { length, seed, L: r.ids.length, ids: Array.from(r.ids), tokens, ...Object.fromEntries(SCORE_KINDS.map((k) => [k, Array.from(r[k].data)])) };
    this._drawScores();
  }

  _scoreTable(which) {
    const t = this.t;
    const s = which === 'text' ? this.shown.scores : this.shown.repeated;
    if (!s) return null;
    const { N, H } = this._NH;
    const v = s[this._score];
    const hi = Math.max(0.05, ...v);
    const caption = which === 'text' ? t('hp.scores.onText', { L: s.L }) : t('hp.scores.onRepeated', { length: s.length, seed: s.seed, L: s.L });
    const head = h('tr', null, h('th', { scope: 'col' }), Array.from({ length: H }, (_, hh) => h('th', { scope: 'col', text: t('hp.headN', { h: hh }) })));
    const rows = Array.from({ length: N }, (_, l) => h('tr', null, h('th', { scope: 'row', text: t('hp.layerN', { l }) }), Array.from({ length: H }, (_, hh) => {
      const x = v[l * H + hh];
      const bg = viridis.rgbAt(x, 0, hi);
      const open = this.shown.map?.which === which && this.shown.map.layer === l && this.shown.map.head === hh;
      const b = h('button', {
        type: 'button', class: 'al-hp-cell', text: x.toFixed(3), 'aria-pressed': String(open),
        'aria-label': t('hp.scores.cell', { head: this._headName(l, hh), score: t(`hp.score.${this._score}`), value: x.toFixed(3) }),
        dataset: { layer: l, head: hh, value: String(x), score: this._score, which },
        onclick: () => this._openMap(which, l, hh).catch((e) => this.onError(e)),
      });
      b.style.setProperty('background', `rgb(${bg.join(',')})`);
      b.style.setProperty('color', textOn(bg));
      return h('td', null, b);
    })));
    return h('table', { class: 'al-hp-table', dataset: { which, score: this._score, L: s.L } }, h('caption', { text: caption }), h('thead', null, head), h('tbody', null, rows));
  }

  _drawScores() {
    if (!this.model) return;
    this._textTable.replaceChildren(this._scoreTable('text') ?? '');
    this._repTable.replaceChildren(this._scoreTable('repeated') ?? '');
    const floors = [this.shown.scores, this.shown.repeated].filter(Boolean).map((s) => fmt(1 / s.L, 4));
    this._floor.hidden = this._score !== 'firstToken';
    this._floor.textContent = this._score === 'firstToken' ? this.t('hp.scores.floor', { floor: floors.join(' / ') }) : '';
  }

  /** Opens the attention map of head (layer, head) on the text or on the repeated tokens. */
  async _openMap(which, layer, head, run = true) {
    const model = this.model;
    const input = which === 'text' ? this.text : this.shown.repeated?.ids;
    if (!model || input === undefined) return;
    const key = which === 'text' ? `t:${this.text}` : `r:${this._repKey}`;
    let f = this._forwards.get(key);
    if (!f && run) {
      f = await model.forward(input, { attentions: true });
      this._forwards.set(key, f);
    }
    if (!f) return;
    const att = f.attentions[layer];
    const L = att.shape[att.shape.length - 1];
    const per = L * L;
    const block = att.data.slice(head * per, (head + 1) * per);
    const labels = which === 'text' ? this._tokens : this.shown.repeated.tokens;
    if (!this._mapHeat) {
      this._mapHeat = new Heatmap({ t: this.t, maxSize: 420, cellMax: 28, name: 'attention' });
      this._mapBox.replaceChildren(this._mapHeat.el);
    }
    this._mapHeat.opts.name = `attention_layer${layer}_head${head}`;
    const t = this.t;
    this._mapHeat.setData({
      data: block, rows: L, cols: L, rowLabels: labels, colLabels: labels, domain: [0, Math.max(1e-9, ...block)], tensor: { data: block, shape: [L, L] },
      title: t('hp.scores.map', { head: this._headName(layer, head), input: t(which === 'text' ? 'hp.scores.mapText' : 'hp.scores.mapRepeated') }),
    });
    this._mapBox.hidden = false;
    this._mapBox.dataset.layer = String(layer);
    this._mapBox.dataset.head = String(head);
    this._mapBox.dataset.which = which;
    this.shown.map = { which, layer, head, L, data: block };
    this._drawScores();
  }

  // ---- logit lens -------------------------------------------------------------
  async _runLens(seq) {
    const model = this.model;
    let refused = false;
    const r = await this._guard(this._lens, seq, () => Promise.resolve(model.logitLens(this.text, { k: 3 })).catch((e) => {
      refused = e?.name === 'TypeError';
      throw e;
    }));
    if (seq !== this._seq) return;
    // A model the logit lens refuses (post-norm, or no causal head) is refused by attribute and
    // patch for the same reason: their sections then show their own Error.
    this._refused = refused;
    if (!r) {
      this.shown.lens = null;
      this._lensBox.replaceChildren();
      return;
    }
    const topTokens = r.topTokens ?? (await model.tokens(Array.from(r.topIds.data)));
    this.shown.lens = { shape: r.topIds.shape, topIds: Array.from(r.topIds.data), topProbs: Array.from(r.topProbs.data), topTokens: topTokens.map((tok) => this._label(tok)) };
    this._drawLens();
  }

  _drawLens() {
    const s = this.shown.lens;
    if (!s) return;
    const t = this.t;
    const [R, L, k] = s.shape;
    const rowName = (r) => (r === 0 ? t('hp.embedRow') : t('hp.blockRow', { l: r - 1 }));
    const head = h('tr', null, h('th', { scope: 'col', text: t('hp.lens.position') }), Array.from({ length: L }, (_, i) => h('th', { scope: 'col', title: String(i), text: this._tokens?.[i] ?? String(i) })));
    const rows = Array.from({ length: R }, (_, r) => h('tr', { dataset: { row: r } }, h('th', { scope: 'row', text: rowName(r) }), Array.from({ length: L }, (_, i) => {
      const o = (r * L + i) * k;
      const p = s.topProbs[o];
      const bg = viridis.rgbAt(p, 0, 1);
      const rest = Array.from({ length: k - 1 }, (_, j) => `“${s.topTokens[o + j + 1]}” ${pct(s.topProbs[o + j + 1])}`).join(', ');
      const td = h('td', { text: s.topTokens[o], title: t('hp.lens.cell', { row: rowName(r), i, token: s.topTokens[o], prob: pct(p), rest }), dataset: { i, id: s.topIds[o], prob: String(p) } });
      td.style.setProperty('background', `rgb(${bg.join(',')})`);
      td.style.setProperty('color', textOn(bg));
      return td;
    })));
    this._lensBox.replaceChildren(h('table', { class: 'al-hp-table al-hp-lens' }, h('caption', { text: t('hp.lens.caption') }), h('thead', null, head), h('tbody', null, rows)));
  }

  // ---- next tokens and ablation --------------------------------------------------
  _drawAblGrid() {
    if (!this.model) return;
    const t = this.t;
    const { N, H } = this._NH;
    const head = h('tr', null, h('th', { scope: 'col' }), Array.from({ length: H }, (_, hh) => h('th', { scope: 'col', text: t('hp.headN', { h: hh }) })));
    const rows = Array.from({ length: N }, (_, l) => h('tr', null, h('th', { scope: 'row', text: t('hp.layerN', { l }) }), Array.from({ length: H }, (_, hh) => {
      const off = this._ablate.has(`${l},${hh}`);
      return h('td', null, h('button', {
        type: 'button', class: 'al-hp-abl', 'aria-pressed': String(off), text: this._headName(l, hh),
        'aria-label': t('hp.next.head', { head: this._headName(l, hh), state: t(off ? 'hp.next.stateOn' : 'hp.next.stateOff') }),
        dataset: { layer: l, head: hh }, onclick: () => this.toggleHead(l, hh).catch((e) => this.onError(e)),
      }));
    })));
    this._ablGrid.replaceChildren(h('table', { class: 'al-hp-table' }, h('caption', { text: t('hp.next.grid') }), h('thead', null, head), h('tbody', null, rows)));
    const list = this.ablation;
    this._ablLine.textContent = list.length
      ? t('hp.next.off', { mode: t(`hp.mode.${this._mean ? 'mean' : 'zero'}`), heads: list.map((a) => this._headName(a.layer, a.head)).join(', ') })
      : t('hp.next.none');
  }

  async _runNext(seq) {
    const model = this.model;
    if (!model) return;
    const ablate = this.ablation;
    const r = await this._guard(this._next, seq, async () => {
      const base = await model.nextTokens(this.text, { k: K_NEXT });
      const ablated = ablate.length ? await model.nextTokens(this.text, { k: K_NEXT, ablate }) : null;
      return { base, ablated };
    });
    if (seq !== this._seq) return;
    if (!r) {
      this.shown.next = null;
      this._nextList.replaceChildren();
      this._targetSel.replaceChildren();
      return;
    }
    const plain = (list) => list.map((p) => ({ id: p.id, token: p.token, prob: p.prob }));
    this.shown.next = { ablate, base: plain(r.base), ablated: r.ablated ? plain(r.ablated) : null };
    this._drawNext();
  }

  _drawNext() {
    const s = this.shown.next;
    if (!s) return;
    const t = this.t;
    const baseProb = new Map(s.base.map((p) => [p.id, p.prob]));
    const list = s.ablated ?? s.base;
    this._nextList.replaceChildren(...list.map((p) => h('li', { dataset: { id: p.id, prob: String(p.prob) } },
      h('span', { class: 'al-hp-tok', text: this._label(p.token) }),
      h('span', { class: 'al-hp-p', text: pct(p.prob) }),
      h('span', { class: 'al-hp-was', text: s.ablated && baseProb.has(p.id) ? t('hp.next.was', { p: pct(baseProb.get(p.id)) }) : '' }))));
    this._nextList.dataset.ablated = String(Boolean(s.ablated));
    // The attribution's targets: the intact model's list.
    const ids = s.base.map((p) => p.id);
    if (this._target === null || !ids.includes(this._target)) this._target = ids[0];
    this._targetSel.replaceChildren(...s.base.map((p) => h('option', { value: p.id, selected: p.id === this._target, text: `${this._label(p.token)}  ${pct(p.prob)}` })));
  }

  // ---- attribution ---------------------------------------------------------------
  async _runAttribute(seq) {
    const model = this.model;
    const s = this.shown.next;
    if (!model) return;
    if (this._refused || !s || s.base.length < 2) {
      this.shown.attribution = null;
      this._attrMap.el.hidden = true;
      this._attrSum.textContent = '';
      this._baseLine.textContent = '';
      if (this._refused) await this._guard(this._attr, seq, () => model.attribute(this.text, { target: 0 }));
      return;
    }
    const target = this._target ?? s.base[0].id;
    const baseline = target === s.base[1].id ? s.base[0].id : s.base[1].id;
    const r = await this._guard(this._attr, seq, () => model.attribute(this.text, { target, baseline }));
    if (seq !== this._seq) return;
    if (!r) {
      this.shown.attribution = null;
      this._attrMap.el.hidden = true;
      this._attrSum.textContent = '';
      return;
    }
    const tok = (id) => this._label(s.base.find((p) => p.id === id)?.token ?? String(id));
    this.shown.attribution = {
      target, baseline, targetToken: tok(target), baselineToken: tok(baseline), position: r.position,
      heads: Array.from(r.heads.data), embed: r.embed, attnBias: Array.from(r.attnBias.data), mlps: Array.from(r.mlps.data), constant: r.constant, logitDiff: r.logitDiff,
    };
    this._drawAttribute();
  }

  _drawAttribute() {
    const a = this.shown.attribution;
    if (!a) return;
    const t = this.t;
    const { N, H } = this._NH;
    this._attrMap.el.hidden = false;
    this._baseLine.textContent = t('hp.attr.baseline', { token: a.baselineToken });
    const data = Float32Array.from(a.heads);
    const m = Math.max(1e-6, ...a.heads.map(Math.abs));
    this._attrMap.setData({
      data, rows: N, cols: H, domain: [-m, m], tensor: { data, shape: [N, H] }, dimNames: ['layer', 'head'],
      rowLabels: Array.from({ length: N }, (_, l) => String(l)), colLabels: Array.from({ length: H }, (_, hh) => String(hh)),
      title: t('hp.attr.map', { target: a.targetToken, baseline: a.baselineToken }),
    });
    this._attrMap.el.dataset.values = a.heads.join(',');
    this._attrSum.textContent = t('hp.attr.sum', {
      target: a.targetToken, baseline: a.baselineToken, ld: fmt(a.logitDiff, 3), heads: fmt(sum(a.heads), 3), embed: fmt(a.embed, 3),
      mlps: fmt(sum(a.mlps), 3), bias: fmt(sum(a.attnBias), 3), constant: fmt(a.constant, 3),
    });
  }

  // ---- patching ------------------------------------------------------------------
  async _runPatch(seq) {
    const model = this.model;
    if (!model) return;
    const clean = this._clean.value;
    const corrupted = this._corrupted.value;
    const key = `${clean}\u0000${corrupted}`;
    if (this._patchKey === key && this.shown.patch) return;
    const t = this.t;
    if (this._refused) {
      this.shown.patch = null;
      this._patchKey = null;
      this._patchMap.el.hidden = true;
      this._patchLine.textContent = '';
      await this._guard(this._patch, seq, () => model.patch({ clean, corrupted: corrupted || clean, target: 0, baseline: 0, over: 'heads' }));
      return;
    }
    if (!corrupted) {
      const n = (await model.encode(clean)).length;
      if (seq !== this._seq) return;
      this.shown.patch = null;
      this._patchKey = null;
      this._patchMap.el.hidden = true;
      this._patchLine.textContent = t('hp.patch.need', { n });
      return;
    }
    const r = await this._guard(this._patch, seq, async () => {
      const a = await model.nextTokens(clean, { k: 2 });
      const b = await model.nextTokens(corrupted, { k: 2 });
      const target = a[0].id;
      const baseline = b[0].id !== target ? b[0].id : b[1].id;
      const p = await model.patch({ clean, corrupted, target, baseline, over: 'heads' });
      const token = (id) => [...a, ...b].find((x) => x.id === id)?.token ?? String(id);
      return { p, target, baseline, targetToken: this._label(token(target)), baselineToken: this._label(token(baseline)) };
    });
    if (seq !== this._seq || clean !== this._clean.value || corrupted !== this._corrupted.value) return;
    if (!r) {
      this.shown.patch = null;
      this._patchKey = null;
      this._patchMap.el.hidden = true;
      this._patchLine.textContent = '';
      return;
    }
    this._patchKey = key;
    this.shown.patch = { clean, corrupted, target: r.target, baseline: r.baseline, targetToken: r.targetToken, baselineToken: r.baselineToken, data: Array.from(r.p.data), ldClean: r.p.ldClean, ldCorrupted: r.p.ldCorrupted };
    this._drawPatch();
  }

  _drawPatch() {
    const s = this.shown.patch;
    if (!s) return;
    const t = this.t;
    const { N, H } = this._NH;
    this._patchMap.el.hidden = false;
    this._patchLine.textContent = t('hp.patch.line', { target: s.targetToken, baseline: s.baselineToken, clean: fmt(s.ldClean, 3), corrupted: fmt(s.ldCorrupted, 3) });
    const data = Float32Array.from(s.data);
    const m = Math.max(1, ...s.data.map(Math.abs));
    this._patchMap.setData({
      data, rows: N, cols: H, domain: [-m, m], tensor: { data, shape: [N, H] }, dimNames: ['layer', 'head'],
      rowLabels: Array.from({ length: N }, (_, l) => String(l)), colLabels: Array.from({ length: H }, (_, hh) => String(hh)),
      title: t('hp.patch.map'),
    });
    this._patchMap.el.dataset.values = s.data.join(',');
    this.el.dispatchEvent(new CustomEvent('al-hp-patch', { bubbles: true, composed: true, detail: s }));
  }
}
