// <attention-lab-next-token>: what the package's shipped model (lab.pretrained('en' | 'zh'),
// issue 22) predicts after a prompt, and what it writes.
//
//   <attention-lab-next-token model="zh" text="白"></attention-lab-next-token>
//   Attributes: model ('en' default | 'zh'), text (the prompt; default a sample), k (10: how many
//   next characters are listed), temperature (1), seed (0), max-new (how many characters Generate
//   writes at most; default: zh the rest of a five-character quatrain, 五言绝句, 4 × (5 + 1)
//   characters with its punctuation; en 120), layer (the layer whose attention is drawn; default
//   the last), lang.
//
// The list is model.nextTokens(prompt, { k, temperature }); Generate streams
// model.generate(prompt, { maxNewTokens, temperature, seed }) one character per frame (en stops
// after the first . ! or ? it writes, zh at the end of the poem; both at the model's newline, its
// end-of-text token) and draws the attention of the newest character, one row per head of the
// layer, from model.forwardSync of the text so far. Stop (or Escape) ends it. Token strings are
// always shown as text.
import { AttentionLabElement } from './base.js';
import { Heatmap } from '../lib/heatmap.js';
import { h } from '../lib/dom.js';
import { readableToken } from '../lib/token-text.js';
import { pretrainedModel, checkModelName, SAMPLE_PROMPT } from '../lib/pretrained-model.js';

const CSS = `
.al-nt-list { list-style: none; margin: 0; padding: 0; display: grid; grid-template-columns: auto minmax(80px, 1fr) auto; gap: 2px 8px; align-items: center; max-width: 420px; font: 0.82rem/1.3 var(--al-mono, ui-monospace, monospace); }
.al-nt-list li { display: contents; }
.al-nt-tok { min-width: 2.2em; text-align: center; border: 1px solid var(--al-border, #d9dde6); border-radius: 4px; padding: 0 4px; background: var(--al-card, #fff); }
.al-nt-bar { display: block; height: 10px; border-radius: 2px; background: var(--al-accent, #2f5fb3); min-width: 1px; }
.al-nt-prob { text-align: right; color: var(--al-muted, #5b6475); }
.al-nt-out { display: block; min-height: 1.6em; padding: 6px 8px; border: 1px solid var(--al-border, #d9dde6); border-radius: 6px; font: 1rem/1.6 var(--al-font, system-ui, sans-serif); white-space: pre-wrap; overflow-wrap: anywhere; }
.al-nt-new { color: var(--al-accent, #2f5fb3); }
.al-nt-temp-row { display: flex; align-items: center; gap: 6px; }
.al-nt-temp { accent-color: var(--al-accent, #2f5fb3); }
.al-nt-head { font: 600 0.85rem/1.3 var(--al-font, system-ui, sans-serif); margin: 0; }
`;
let sheet = null;

const SENTENCE_END = new Set(['.', '!', '?']);
const POEM_CHARS = 24; // 五言绝句: four lines of five characters, each with its ，or 。

/** How many characters Generate writes at most, by default. */
export function defaultMaxNew(lang, prompt) {
  return lang === 'zh' ? Math.max(1, POEM_CHARS - [...prompt].length) : 120;
}

/** True when the character just written ends what Generate writes (en: a sentence). */
export function endsGeneration(lang, token, written) {
  return lang === 'en' && written > 1 && SENTENCE_END.has(token);
}

const frame = () => new Promise((res) => {
  if (typeof requestAnimationFrame === 'function' && document.visibilityState !== 'hidden') requestAnimationFrame(() => res());
  else setTimeout(res, 0);
});

export class AttentionLabNextToken extends AttentionLabElement {
  static get observedAttributes() {
    return ['model', 'text', 'k', 'temperature', 'seed', 'max-new', 'layer', 'lang'];
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
    this._nextRun = null;
    this._generation = null;
    this._applied = {};
    this._busy = null;
  }

  /** The list shown: { model, text, temperature, k, list: [{ id, token, prob }] } (null before). */
  get nextRun() {
    return this._nextRun;
  }

  /**
   * The last Generate: { model, prompt, temperature, seed, maxNewTokens, ids (the new ones),
   * text (what they add), state: 'running' | 'done' | 'stopped' | 'error', attention: { layer,
   * position, data [H, L] } of the newest character } (null before the first).
   */
  get generation() {
    return this._generation;
  }

  get _lang() {
    return checkModelName('attention-lab-next-token', this.getAttribute('model') || 'en');
  }

  _build() {
    const t = this.t;
    this._input = h('input', { class: 'al-input al-input-text al-nt-text', type: 'text', spellcheck: 'false', autocomplete: 'off' });
    this._temp = h('input', { class: 'al-nt-temp', type: 'range', min: '0', max: '2', step: '0.05', value: '1' });
    this._tempOut = h('output', { class: 'al-nt-temp-value' });
    this._seed = h('input', { class: 'al-input al-nt-seed', type: 'number', min: '0', step: '1', value: '0', inputmode: 'numeric' });
    this._genBtn = h('button', { class: 'al-btn al-nt-generate', type: 'button' });
    this._stopBtn = h('button', { class: 'al-btn al-nt-stop', type: 'button', disabled: true });
    this._labels = {
      prompt: h('span'), temp: h('span'), seed: h('span'),
    };
    const controls = h('div', { class: 'al-controls' },
      h('label', null, this._labels.prompt, this._input),
      h('label', null, this._labels.temp, h('span', { class: 'al-nt-temp-row' }, this._temp, this._tempOut)),
      h('label', null, this._labels.seed, this._seed),
      this._genBtn, this._stopBtn);
    this._listTitle = h('h4', { class: 'al-nt-head', id: `${this._uid()}-list` });
    this._list = h('ol', { class: 'al-nt-list', 'aria-labelledby': this._listTitle.id });
    this._outTitle = h('h4', { class: 'al-nt-head', id: `${this._uid()}-out` });
    this._outPrompt = h('span', { class: 'al-nt-prompt' });
    this._outNew = h('span', { class: 'al-nt-new' });
    this._out = h('output', { class: 'al-nt-out', 'aria-labelledby': this._outTitle.id }, this._outPrompt, this._outNew);
    this._hint = h('p', { class: 'al-status al-nt-hint' });
    this._map = new Heatmap({ t, rowKind: 'row', colKind: 'key', maxSize: 720, cellMax: 28, legend: true, name: 'newest_character_attention' });
    this._map.el.classList.add('al-nt-map');
    this._map.el.hidden = true;
    this._body.append(controls, this._listTitle, this._list, this._outTitle, this._out, this._hint, this._map.el);

    let timer = 0;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.requestRender(), 120);
    };
    this._input.addEventListener('input', later);
    this._input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        clearTimeout(timer);
        this.generate();
      }
    });
    this._temp.addEventListener('input', () => {
      this._tempOut.textContent = Number(this._temp.value).toFixed(2);
      later();
    });
    this._genBtn.addEventListener('click', () => this.generate());
    this._stopBtn.addEventListener('click', () => this.stop());
    this._rootEl.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this._abort) this.stop();
    });
    this._relabel();
  }

  _uid() {
    this._id ??= `al-nt-${Math.random().toString(36).slice(2, 9)}`;
    return this._id;
  }

  _relabel() {
    if (!this._input) return;
    const t = this.t;
    this._labels.prompt.textContent = t('nt.prompt');
    this._labels.temp.textContent = t('nt.temperature');
    this._labels.seed.textContent = t('nt.seed');
    this._genBtn.textContent = t('nt.generate');
    this._stopBtn.textContent = t('nt.stop');
    this._outTitle.textContent = t('nt.output');
    this._map.setMessages(t);
  }

  _repaint() {
    this._map.draw();
  }

  /** Copies the attributes that changed into the controls (the reader's edits stay otherwise). */
  _syncAttributes() {
    const lang = this._lang;
    const apply = (name, fn) => {
      const v = this.getAttribute(name);
      if (this._applied[name] === v) return;
      this._applied[name] = v;
      fn(v);
    };
    apply('model', () => {
      this._applied.text = undefined;
    });
    apply('text', (v) => { this._input.value = v ?? SAMPLE_PROMPT[lang]; });
    apply('temperature', () => {
      const T = this.numAttr('temperature', 1);
      if (T < 0) throw new RangeError(`<attention-lab-next-token> temperature="${T}": must be ≥ 0`);
      this._temp.value = String(T);
    });
    apply('seed', () => { this._seed.value = String(this.intAttr('seed', 0, 0, 2 ** 32 - 1)); });
    this._tempOut.textContent = Number(this._temp.value).toFixed(2);
  }

  _temperature() {
    return Number(this._temp.value);
  }

  async _render() {
    this._syncAttributes();
    this._relabel();
    const t = this.t;
    const lang = this._lang;
    const k = this.intAttr('k', 10, 1, 100);
    this._hint.textContent = t(`nt.hint.${lang}`);
    this._status.textContent = t('hm.modelLoading', { model: lang });
    let model;
    try {
      model = await pretrainedModel(lang);
    } finally {
      this._status.textContent = '';
    }
    if (this._abort) return; // Generate is drawing; the list follows when it ends
    const text = this._input.value;
    const temperature = this._temperature();
    if (!text) {
      this._nextRun = { model: lang, text, temperature, k, list: [] };
      this._listTitle.textContent = t('nt.noPrompt');
      this._list.replaceChildren();
      this._outPrompt.textContent = '';
      this._outNew.textContent = '';
      this._map.el.hidden = true;
      return;
    }
    const list = await model.nextTokens(text, { k, temperature });
    this._nextRun = { model: lang, text, temperature, k, list };
    const chars = [...text];
    this._listTitle.textContent = t('nt.next', { last: readableToken(chars[chars.length - 1]), T: temperature.toFixed(2) });
    this._list.replaceChildren(...list.map((x) => {
      const pct = `${(100 * x.prob).toFixed(x.prob >= 0.1 ? 1 : 2)} %`;
      const tok = readableToken(x.token);
      const bar = h('span', { class: 'al-nt-bar', 'aria-hidden': 'true' });
      bar.style.width = `${Math.max(0.5, 100 * x.prob / Math.max(list[0].prob, 1e-12))}%`;
      return h('li', { 'aria-label': t('nt.item', { token: tok, p: pct }) }, h('span', { class: 'al-nt-tok' }, tok), h('span', null, bar), h('span', { class: 'al-nt-prob' }, pct));
    }));
    if (!this._generation || this._generation.prompt !== text) {
      this._outPrompt.textContent = text;
      this._outNew.textContent = '';
      this._drawNewest(model, model.encode(text));
    }
  }

  /** The attention of the last position of `ids`, one row per head of the chosen layer. */
  _drawNewest(model, ids) {
    const t = this.t;
    const max = model.config.maxPositions;
    const win = ids.length > max ? ids.slice(ids.length - max) : ids;
    const N = model.config.numLayers;
    const layer = this.intAttr('layer', N - 1, 0, N - 1);
    const r = model.forwardSync(win, { attentions: true });
    const a = r.attentions[layer];
    const [, H, L] = a.shape;
    const rows = new Float32Array(H * L);
    for (let hh = 0; hh < H; hh++) rows.set(a.data.subarray((hh * L + L - 1) * L, (hh * L + L) * L), hh * L);
    const labels = r.tokens.map((x) => readableToken(x));
    let hi = 0;
    for (const v of rows) if (v > hi) hi = v;
    this._map.el.hidden = false;
    this._map.setData({
      data: rows, rows: H, cols: L, rowLabels: Array.from({ length: H }, (_, hh) => t('hm.head', { h: hh })), colLabels: labels,
      domain: [0, hi > 0 ? hi : 1], title: t('nt.newest', { ch: labels[L - 1], l: layer }), tensor: { data: rows, shape: [H, L] }, dimNames: ['head', 'key'],
    });
    return { layer, position: ids.length - 1, data: rows, shape: [H, L] };
  }

  /**
   * Writes characters after the prompt, one per frame; resolves with this.generation when it
   * ends. A second call while one runs returns the running one.
   */
  async generate() {
    if (this._busy) return this._busy;
    if (!this._started) await this._start();
    this._busy = this._generate().finally(() => { this._busy = null; });
    return this._busy;
  }

  /** Ends a running Generate (it resolves with state 'stopped'). */
  stop() {
    this._abort?.abort();
  }

  async _generate() {
    const t = this.t;
    await this.updateComplete;
    const lang = this._lang;
    const model = await pretrainedModel(lang);
    const prompt = this._input.value;
    if (!prompt) {
      this._status.textContent = t('nt.noPrompt');
      return this._generation;
    }
    const temperature = this._temperature();
    const seed = Number(this._seed.value);
    const maxNewTokens = this.intAttr('max-new', defaultMaxNew(lang, prompt), 1, 4096);
    const ac = new AbortController();
    this._abort = ac;
    const g = { model: lang, prompt, temperature, seed, maxNewTokens, ids: [], text: '', state: 'running', attention: null };
    this._generation = g;
    this._genBtn.disabled = true;
    this._stopBtn.disabled = false;
    this._stopBtn.focus?.({ preventScroll: true });
    this._status.textContent = t('nt.running');
    this._outPrompt.textContent = prompt;
    this._outNew.textContent = '';
    const all = Array.from(model.encode(prompt));
    try {
      for await (const x of model.generate(prompt, { maxNewTokens, temperature, seed, signal: ac.signal })) {
        g.ids.push(x.id);
        g.text += x.text;
        all.push(x.id);
        this._outNew.textContent = g.text;
        g.attention = this._drawNewest(model, all);
        if (endsGeneration(lang, x.token, g.ids.length)) break;
        await frame();
        if (ac.signal.aborted) break;
      }
      g.state = ac.signal.aborted ? 'stopped' : 'done';
      this._status.textContent = t(g.state === 'done' ? 'nt.done' : 'nt.stopped', { n: g.ids.length });
    } catch (e) {
      g.state = 'error';
      this._showError(e);
    } finally {
      this._abort = null;
      this._genBtn.disabled = false;
      this._stopBtn.disabled = true;
      if (this._rootEl.contains(this._root.activeElement)) this._genBtn.focus?.({ preventScroll: true });
    }
    this.dispatchEvent(new CustomEvent('al-generated', { bubbles: true, composed: true, detail: g }));
    return g;
  }
}
