// <attention-lab-model-view>: the attention of a whole model, from arrays
// computed anywhere (transformers' output_attentions=True, Keras, this
// library), in BertViz's two views:
//   - model view: a layers × heads grid of thumbnails; click (or Enter) one to
//     enlarge it as a full heatmap (table fallback, PNG/SVG/CSV/JSON export);
//   - head view: lines between tokens, one colour per head.
// Input: the `attention` property (a list of per-layer [B,H,L,L] / [H,L,L]
// tensors, or one [layers,H,L,L] tensor; nested arrays work too) with
// `tokens`, or the `src` attribute (a URL of a .npy, .npz, .safetensors or
// .json file), or load(blob | bytes) for a file the reader dropped. Nothing
// is computed by wasm here: the element only draws.
//
//   <attention-lab-model-view src="attentions.safetensors" view="model"></attention-lab-model-view>
//   el.attention = outputs; el.tokens = ['[CLS]', 'the', 'cat', …];
//
// A whole model: the `model` property (a Model of lab.loadModel, or the
// page's WorkerModel of lib/model-client.js) with the `text` attribute, or
// `src` naming a same-origin folder URL (ending in '/') that holds
// config.json, tokenizer.json and model.safetensors (or, when that answers
// 404, model.safetensors.index.json and its shards; without either,
// pytorch_model.bin or its index and shards), loaded in a Web Worker. The
// element then runs the model on the text (a sentence field the reader can
// edit) and draws the same views from its attentions, with the tokens, the
// next-token panel, Generate and the head roles (lib/model-panels.js).
//
//   <attention-lab-model-view src="/models/gpt2/" text="The cat sat on the mat."></attention-lab-model-view>
//   el.model = await lab.loadModel(files); el.setAttribute('text', 'The cat sat');
//
// An encoder-decoder model (config.isEncoderDecoder: Marian, BART, T5) is run
// as a translation: Translate (model.generate on the sentence, seeded, greedy
// at temperature 0) writes the target, then one forward with decoderInputIds
// = [decoder start, …target] gives the three views, chosen by `view`:
// 'encoder' (the encoder's self-attention, layers × heads over the source),
// 'decoder' (the decoder's self-attention over the target) and 'cross' (the
// default: the alignment map, target tokens down, source tokens across, for
// the `layer` and `head` ('mean' (default): the mean over heads, which the
// model worker sends), and the tokens: hovering or focusing a target token
// shades the source tokens by the weight it gave them).
//
//   <attention-lab-model-view src="/models/opus-mt-en-de/" text="The cat sat." view="cross"></attention-lab-model-view>
//
// Attributes: src, text, tokens (space-separated), view ('model' | 'head'; with an
// encoder-decoder 'encoder' | 'decoder' | 'cross'), layer
// (head and cross views; default: the layer of the map last enlarged, at first 0), head (cross view:
// 'mean' or an index; default mean), heads (head view: comma list; default all), batch
// (default 0), min-weight (head view lines; default 0.01), thumb-size (px,
// default 56), lang, eager.
// A whole model also gets a "What the heads do" section (lib/heads-panel.js), computed when the
// reader opens it: head scores, the logit lens, heads switched off, attribution and patching.
import { AttentionLabElement } from './base.js';
import { Heatmap } from '../lib/heatmap.js';
import { HeadView, HEAD_VIEW_CSS } from '../lib/head-view.js';
import { normalizeAttention, parseAttentionFile, strongest } from '../lib/model-data.js';
import { MODEL_VIEW_MESSAGES, HEAD_COLOURS } from '../lib/model-view-messages.js';
import { paletteByName } from '../lib/palette.js';
import { saveBlob, canvasToBlob, tensorToJSON } from '../lib/export.js';
import { h, fmt } from '../lib/dom.js';
import { ModelPanels } from '../lib/model-panels.js';
import { HeadsPanel } from '../lib/heads-panel.js';
import { HEADS_PANEL_MESSAGES } from '../lib/heads-panel-messages.js';
import { readableToken, looksByteLevel } from '../lib/token-text.js';
import { WorkerModel } from '../lib/model-client.js';
import { headMean } from '../../index.js';

/** The longest slice of thumbnail painting (ms): well under a 50 ms long task. */
const SLICE_MS = 12;
/** Runs fn in the page's next idle period (at the latest after 200 ms), or on a 0 ms timer. */
const idle = (fn) => (typeof requestIdleCallback === 'function' ? requestIdleCallback(fn, { timeout: 200 }) : setTimeout(() => fn(null), 0));

const CSS = `
.al-mv-bar { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: center; }
.al-mv-group { display: inline-flex; gap: 4px; align-items: center; flex-wrap: wrap; font-size: 0.8rem; color: var(--al-muted, #5b6475); }
.al-mv-grid { display: grid; gap: 3px; align-items: center; justify-items: center; justify-content: start; max-width: 100%; overflow-x: auto; }
.al-mv-bar[hidden], .al-mv-group[hidden], .al-mv-grid[hidden], .al-mv-table[hidden], .al-btn[hidden] { display: none; }
.al-mv-axis { font: 0.7rem/1 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); }
.al-mv-thumb { padding: 0; border: 2px solid transparent; border-radius: 3px; background: none; cursor: zoom-in; line-height: 0; }
.al-mv-thumb:focus-visible, .al-mv-thumb:hover { border-color: var(--al-accent, #2f5fb3); outline: none; }
.al-mv-thumb canvas { image-rendering: pixelated; display: block; }
.al-mv-head-btn { border-left-width: 6px; }
.al-mv-big[hidden], .al-mv-pane[hidden] { display: none; }
.al-mv-table table { border-collapse: collapse; font: 0.72rem/1.2 var(--al-mono, ui-monospace, monospace); }
.al-mv-table th, .al-mv-table td { border: 1px solid var(--al-border, #d9dde6); padding: 1px 4px; text-align: left; white-space: nowrap; }
.al-mv-table summary { cursor: pointer; color: var(--al-muted, #5b6475); font-size: 0.8rem; }
.al-mv-table-scroll { max-width: 100%; max-height: 320px; overflow: auto; }
.al-mv-text-row { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; font-size: 0.85rem; }
.al-mv-text { flex: 1 1 20em; min-width: 12em; }
.al-mv-text-row[hidden], .al-mv-panel[hidden], .al-mv-model-top[hidden], .al-mv-model-panels[hidden] { display: none; }
.al-mv-h { margin: 8px 0 4px; font-size: 0.85rem; }
.al-mv-tokens { display: flex; flex-wrap: wrap; gap: 3px; list-style: none; margin: 0 0 6px; padding: 0; }
.al-mv-tok { font: 0.75rem/1.4 var(--al-mono, ui-monospace, monospace); padding: 0 4px; border: 1px solid var(--al-border, #d9dde6); border-radius: 3px; background: var(--al-card, #fff); white-space: pre; }
.al-mv-next { list-style: none; margin: 0; padding: 0; display: grid; grid-template-columns: max-content minmax(60px, 200px) max-content; gap: 2px 8px; align-items: center; font: 0.75rem/1.3 var(--al-mono, ui-monospace, monospace); }
.al-mv-next-row { display: contents; }
.al-mv-next-tok { white-space: pre; }
.al-mv-bar-track { display: block; height: 8px; background: var(--al-border, #d9dde6); border-radius: 2px; }
.al-mv-bar-fill { display: block; height: 8px; background: var(--al-accent, #2f5fb3); border-radius: 2px; }
.al-mv-gen-out { font: 0.85rem/1.5 var(--al-mono, ui-monospace, monospace); white-space: pre-wrap; overflow-wrap: anywhere; }
.al-mv-gen-tok { background: var(--al-card, #fff); border-bottom: 2px solid var(--al-accent, #2f5fb3); }
.al-mv-hint, .al-mv-gen-status { color: var(--al-muted, #5b6475); font-size: 0.8rem; }
.al-mv-roles-table { border-collapse: collapse; font: 0.72rem/1.2 var(--al-mono, ui-monospace, monospace); }
.al-mv-roles-table th, .al-mv-roles-table td { border: 1px solid var(--al-border, #d9dde6); padding: 1px 4px; text-align: left; }
.al-mv-roles-table caption { text-align: left; font-size: 0.75rem; color: var(--al-muted, #5b6475); }
.al-mv-strong { font-weight: 700; }
.al-mv-max-new, .al-mv-seed { width: 6em; }
.al-mv-heads { margin-top: 10px; }
.al-mv-heads[hidden] { display: none; }
.al-mv-heads > summary { cursor: pointer; font-weight: 600; font-size: 0.9rem; }
.al-mv-cross-row { display: flex; gap: 6px; align-items: baseline; flex-wrap: wrap; }
.al-mv-cross-row > .al-mv-axis { min-width: 11em; }
.al-mv-cross-row .al-mv-tokens { margin: 0 0 4px; }
.al-mv-cross-tgt { cursor: pointer; }
.al-mv-cross-tgt:focus-visible, .al-mv-cross-tgt.al-mv-on { outline: 2px solid var(--al-accent, #2f5fb3); outline-offset: 1px; }
.al-mv-cross-src { background: rgba(47, 95, 179, var(--al-w, 0)); }
.al-mv-cross-src.al-mv-strong-src { color: #fff; }
${HEAD_VIEW_CSS}`;

let sheet = null;
// The element's strings and those of its "what the heads do" section.
const MESSAGES = { en: { ...MODEL_VIEW_MESSAGES.en, ...HEADS_PANEL_MESSAGES.en }, zh: { ...MODEL_VIEW_MESSAGES.zh, ...HEADS_PANEL_MESSAGES.zh } };

export class AttentionLabModelView extends AttentionLabElement {
  static get observedAttributes() {
    return ['src', 'text', 'tokens', 'view', 'layer', 'head', 'heads', 'batch', 'min-weight', 'thumb-size', 'lang'];
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
    if (!sheet) this._root.append(h('style', null, CSS));
    this._input = null;
    this._tokens = null;
    this._fileTokens = null;
    this._loadedSrc = null;
    this._data = null;
    this._cell = { l: 0, h: 0 };
    this._model = null;
    this._ownModel = null; // loaded here from a folder src (disposed with it)
    this._text = null; // the sentence as the reader edited it
    this._run = null; // { model, text, ids, tokens, ms }
  }

  /**
   * A whole model (lab.loadModel's Model, or a WorkerModel): the element runs
   * it on the text and draws its attentions, tokens, next tokens and roles.
   */
  get model() {
    return this._model;
  }

  set model(m) {
    if (m !== null && m !== undefined && (typeof m !== 'object' || typeof m.forward !== 'function' || !m.config)) {
      throw new TypeError('<attention-lab-model-view>.model must be a Model of lab.loadModel (with forward and config)');
    }
    this._panels?.stop();
    this._model = m ?? null;
    this._run = null;
    this._crossShown = null;
    this.requestRender();
  }

  /** The sentence the model runs on (the text attribute until the reader edits it). */
  get text() {
    return this._text ?? this.getAttribute('text') ?? '';
  }

  set text(v) {
    this._text = v === null || v === undefined ? null : String(v);
    if (this._textInput) this._textInput.value = this.text;
    this.requestRender();
  }

  /** The last whole-model run: { ids, tokens, shown (readable), forwardMs }, and what the panels show. */
  get modelRun() {
    const r = this._run;
    if (!r) return null;
    const out = { ids: r.ids, tokens: r.tokens, shown: r.encdec ? r.sourceShown : this._qTokens, forwardMs: r.ms, panels: this._panels?.shown ?? null };
    // An encoder-decoder's: the decoder's input (start token + translation) and what was generated.
    if (r.encdec) Object.assign(out, { decoderInputIds: r.decoderIds, decoderTokens: r.decoderTokens, targetShown: r.targetShown, generated: r.generated });
    return out;
  }

  /**
   * The cross view's alignment map as drawn: { layer, head ('mean' or an
   * index), rows (target tokens), cols (source tokens), data [rows·cols],
   * rowLabels, colLabels } or null.
   */
  get crossMap() {
    return this._crossShown ?? null;
  }

  /** The target token whose reading the cross view shows: { target, token, weights (per source token) } or null. */
  get highlighted() {
    return this._crossHi ?? null;
  }

  /** The enlarged map: { layer, head, data (the values drawn) } or null. */
  get enlarged() {
    return this._enlarged ?? null;
  }

  /**
   * Starts Generate (as its button does); resolves when it ends. An
   * encoder-decoder translates again with the panel's settings and redraws
   * the three views from the new target.
   */
  generate() {
    if (this._model?.config?.isEncoderDecoder) {
      this._retranslate = true;
      return this.requestRender();
    }
    return this._panels?.generate();
  }

  /** Stops a generation in flight. */
  stop() {
    this._panels?.stop();
  }

  /** Translator with this element's strings over the shared catalogue. */
  /** The element's own strings, beside the shared ones (base.js `t`). */
  static get messages() {
    return MESSAGES;
  }

  /**
   * The "what the heads do" section of a whole model (lib/heads-panel.js): head scores, logit
   * lens, ablation, attribution and patching; it computes when opened (openHeads() or a click on
   * its summary). data-heads says when it has drawn ('pending' | 'ready' | 'error').
   */
  get heads() {
    return this._heads ?? null;
  }

  /** Opens the heads section and resolves when its views are drawn. */
  openHeads() {
    if (!this._headsBox) return Promise.resolve();
    this._headsBox.open = true;
    return this._updateHeads();
  }

  _updateHeads() {
    const run = this._run;
    if (!run || !this._headsBox?.open) return Promise.resolve();
    if (this._headsRun === run) return this._headsDone;
    this._headsRun = run;
    this.dataset.heads = 'pending';
    this._headsDone = this._heads.update(run.model, run.text, { byteLevel: run.byteLevel }).then(() => {
      if (this._headsRun !== run) return;
      this.dataset.heads = 'ready';
      this.dispatchEvent(new CustomEvent('al-model-heads', { bubbles: true, composed: true }));
    }, (e) => {
      if (this._headsRun === run) this.dataset.heads = 'error';
      this._showError(e);
    });
    return this._headsDone;
  }

  /** The normalised arrays: { layers, heads, lq, lk, data [layers,H,Lq,Lk] } (null before data). */
  get data() {
    return this._data;
  }

  get attention() {
    return this._input;
  }

  /** Per-layer [B,H,L,L]/[H,L,L] tensors or one [layers,H,L,L] tensor (nested arrays too). Bad shapes throw. */
  set attention(value) {
    normalizeAttention(value, { batch: this._batch() });
    this._input = value;
    this._fileTokens = null;
    this.requestRender();
  }

  get tokens() {
    return this._tokens;
  }

  set tokens(list) {
    this._tokens = list ? Array.from(list, String) : null;
    this.requestRender();
  }

  /** Reads a dropped File/Blob or bytes (.npy, .npz, .safetensors, .json) locally. */
  async load(source) {
    const bytes = typeof Blob === 'function' && source instanceof Blob ? new Uint8Array(await source.arrayBuffer()) : source;
    const r = parseAttentionFile(bytes);
    normalizeAttention(r.attention, { batch: this._batch() });
    this._input = r.attention;
    this._fileTokens = r.tokens;
    await this.requestRender();
    return this._data;
  }

  _batch() {
    return this.intAttr('batch', 0, 0);
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (name === 'text' && oldValue !== newValue) {
      this._text = null;
      if (this._textInput) this._textInput.value = newValue ?? '';
    }
    super.attributeChangedCallback(name, oldValue, newValue);
  }

  connectedCallback() {
    super.connectedCallback();
    if (this._started && this.getAttribute('src') && !this._loadedSrc) this.requestRender();
  }

  _onDisconnect() {
    this._panels?.stop();
    // A model this element loaded from a folder src goes with it (a worker
    // and its weights); connected again, it loads the folder again.
    if (this._ownModel) {
      if (this._model === this._ownModel) this._model = null;
      this._ownModel.dispose();
      this._ownModel = null;
      this._loadedSrc = null;
      this._run = null;
    }
  }

  /** A folder URL (ending in '/'): the model's three files, fetched from the same origin. */
  async _loadFolder(url) {
    if (url.origin !== location.origin) throw new RangeError(`<attention-lab-model-view> src="${url.href}": a model folder is read from this page's origin only`);
    const get = async (name, optional = false) => {
      const res = await fetch(new URL(name, url).href);
      if (!res.ok) {
        if (optional) return null;
        throw new Error(`${new URL(name, url).pathname}: HTTP ${res.status}`);
      }
      return new File([await res.blob()], name);
    };
    const config = await get('config.json');
    // One model.safetensors (the common case), else the shards of the index;
    // a folder without safetensors: pytorch_model.bin, else its index's shards.
    let weights = await get('model.safetensors', true);
    let index = weights ? null : await get('model.safetensors.index.json', true);
    let shardName = /^[\w.-]+\.safetensors$/;
    if (!weights && !index) {
      weights = await get('pytorch_model.bin', true);
      index = weights ? null : await get('pytorch_model.bin.index.json', true);
      shardName = /^[\w.-]+\.bin$/;
      if (!weights && !index) throw new Error(`${url.pathname}: no model.safetensors, model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json (HTTP 404)`);
    }
    if (index) {
      const map = JSON.parse(await index.text()).weight_map ?? {};
      const shards = [...new Set(Object.values(map))].filter((n) => typeof n === 'string' && shardName.test(n));
      weights = [index, ...(await Promise.all(shards.map((n) => get(n))))];
    }
    const tokenizer = await get('tokenizer.json');
    this._ownModel?.dispose();
    this._ownModel = null;
    const files = { config, weights, tokenizer };
    let model;
    if (typeof Worker === 'function') {
      model = await WorkerModel.load(files, { onProgress: (p) => { this._status.textContent = this.t('mv.loadingModel', { pct: ((100 * p.loaded) / Math.max(1, p.total)).toFixed(0) }); } });
    } else {
      model = await (await this.lab()).loadModel(files);
    }
    this._ownModel = model;
    this._model = model;
    this._run = null;
  }

  /** Runs the model on the text (once per model and text) and sets the arrays and tokens it draws. */
  async _runModel() {
    const model = this._model;
    const text = this.text;
    if (model.config?.isEncoderDecoder) return this._runEncDec(model, text);
    if (this._run?.model === model && this._run.text === text) return;
    const t0 = performance.now();
    const r = await model.forward(text, { attentions: true });
    const ms = model.lastMs ?? performance.now() - t0;
    const byteLevel = model.byteLevel ?? (model.config.modelType === 'gpt2' || looksByteLevel(r.tokens));
    this._run = { model, text, ids: r.ids, tokens: r.tokens ?? r.ids.map(String), attentions: r.attentions, ms, byteLevel };
    this._input = r.attentions.map((a) => ({ data: a.data, shape: a.shape }));
    this._fileTokens = this._run.tokens.map((tok) => readableToken(tok, byteLevel));
    this._panelsPending = true;
  }

  /**
   * An encoder-decoder's run: the translation of `text` (the Generate panel's
   * model.generate, streamed), then one forward with decoderInputIds = [start,
   * …translation] and its encoder, decoder and cross attentions (and the
   * cross-attention's mean over heads, from the model worker). One at a time:
   * a new text stops the translation in flight.
   */
  async _runEncDec(model, text) {
    const same = () => this._run?.model === model && this._run.text === text && !this._retranslate;
    if (same()) return;
    const busy = this._translating;
    if (busy) {
      if (busy.model === model && busy.text === text && !this._retranslate) return busy.done;
      this._panels.stop();
      await busy.done.catch(() => {});
      if (same()) return;
    }
    this._retranslate = false;
    const job = { model, text };
    job.done = (async () => {
      const gen = await this._panels.generate(model, text);
      if (!gen || this._model !== model) return;
      const decoderInputIds = [model.config.decoderStartTokenId, ...gen.ids];
      const t0 = performance.now();
      const r = await model.forward(text, { attentions: true, decoderInputIds });
      const ms = model.lastMs ?? performance.now() - t0;
      if (this._model !== model) return;
      const tokens = r.tokens ?? r.ids.map(String);
      const decoderTokens = r.decoderTokens ?? r.decoderInputIds.map(String);
      const byteLevel = model.byteLevel ?? looksByteLevel(tokens);
      const shape = (a) => ({ data: a.data, shape: a.shape });
      this._run = {
        model, text, encdec: true, ids: r.ids, tokens, decoderIds: r.decoderInputIds, decoderTokens, ms, byteLevel,
        sourceShown: tokens.map((x) => readableToken(x, byteLevel)),
        targetShown: decoderTokens.map((x) => readableToken(x, byteLevel)),
        encoder: r.encoderAttentions.map(shape),
        decoder: r.decoderAttentions.map(shape),
        cross: r.crossAttentions.map(shape),
        // The mean over heads [1, Ld, Le], the library's headMean (PyTorch's average_attn_weights=True):
        // a WorkerModel sends it from the worker; for a Model of this thread it is taken here.
        crossMean: (r.crossMean ?? r.crossAttentions.map((a) => headMean(a))).map(shape),
        generated: { ids: gen.ids.slice(), tokens: gen.tokens.slice(), text: gen.text, seed: gen.seed, temperature: gen.temperature, maxNewTokens: gen.maxNewTokens, state: gen.state },
      };
      this._panelsPending = true;
    })();
    this._translating = job;
    try {
      await job.done;
    } finally {
      if (this._translating === job) this._translating = null;
    }
  }

  _build() {
    const t = this.t;
    this._viewBtns = ['model', 'head', 'encoder', 'decoder', 'cross'].map((v) => h('button', { type: 'button', class: 'al-btn', dataset: { view: v }, onclick: () => this.setAttribute('view', v) }));
    this._layerSel = h('select', { class: 'al-select', onchange: () => this.setAttribute('layer', this._layerSel.value) });
    this._headBtns = h('span', { class: 'al-mv-group', role: 'group' });
    this._exportBtns = ['png', 'svg', 'json'].map((f) => h('button', { type: 'button', class: 'al-btn al-btn-small', dataset: { export: f }, onclick: () => this.export(f) }));
    this._layerLabel = h('label', { class: 'al-mv-group' }, h('span'), this._layerSel);
    this._crossHeadSel = h('select', { class: 'al-select al-mv-cross-head', onchange: () => this.setAttribute('head', this._crossHeadSel.value) });
    this._crossHeadLabel = h('label', { class: 'al-mv-group', hidden: true }, h('span'), this._crossHeadSel);
    this._bar = h('div', { class: 'al-mv-bar' },
      (this._viewGroup = h('span', { class: 'al-mv-group', role: 'group' }, this._viewBtns.slice(0, 2))), this._layerLabel, this._crossHeadLabel, this._headBtns,
      h('span', { class: 'al-mv-group' }, this._exportBtns));
    this._grid = h('div', { class: 'al-mv-grid', role: 'grid' });
    this._grid.addEventListener('keydown', (e) => this._gridKey(e));
    this._bigClose = h('button', { type: 'button', class: 'al-btn', onclick: () => this._closeBig() });
    this._big = h('div', { class: 'al-mv-big', hidden: true }, this._bigClose);
    this._big.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') this._closeBig();
    });
    this._modelPane = h('div', { class: 'al-mv-pane' }, this._grid, this._big);
    this._head = new HeadView({ t, colours: HEAD_COLOURS });
    this._headPane = h('div', { class: 'al-mv-pane', hidden: true }, this._head.el);
    // The cross view: the hint, the target and source tokens, the alignment map.
    this._crossHint = h('p', { class: 'al-mv-hint al-mv-cross-hint' });
    this._crossTgtLabel = h('span', { class: 'al-mv-axis' });
    this._crossTgt = h('ol', { class: 'al-mv-tokens al-mv-cross-target' });
    this._crossSrcLabel = h('span', { class: 'al-mv-axis' });
    this._crossSrc = h('ol', { class: 'al-mv-tokens al-mv-cross-source' });
    this._crossMapBox = h('div', { class: 'al-mv-cross-map' });
    this._crossPane = h('div', { class: 'al-mv-pane al-mv-cross', hidden: true }, this._crossHint,
      h('div', { class: 'al-mv-cross-row' }, this._crossTgtLabel, this._crossTgt),
      h('div', { class: 'al-mv-cross-row' }, this._crossSrcLabel, this._crossSrc), this._crossMapBox);
    this._tableSummary = h('summary');
    this._tableBody = h('div', { class: 'al-mv-table-scroll' });
    this._table = h('details', { class: 'al-mv-table' }, this._tableSummary, this._tableBody);
    this._table.addEventListener('toggle', () => this._table.open && this._buildTable());
    this._textInput = h('input', { type: 'text', class: 'al-input al-mv-text', value: this.text, maxlength: '4000' });
    this._textInput.addEventListener('change', () => { this.text = this._textInput.value; });
    this._textInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.text = this._textInput.value;
    });
    this._textLabel = h('label', { class: 'al-mv-text-row', hidden: true }, h('span'), this._textInput);
    this._forwardInfo = h('span', { class: 'al-mv-hint al-mv-forward-info' });
    this._panels = new ModelPanels({ t, onError: (e) => this._showError(e), onGenerate: () => this.generate() });
    this._panels.top.hidden = true;
    this._panels.el.hidden = true;
    this._headsSummary = h('summary', { class: 'al-mv-heads-summary' });
    this._heads = new HeadsPanel({ t, onError: (e) => this._showError(e) });
    this._headsBox = h('details', { class: 'al-mv-heads', hidden: true }, this._headsSummary, this._heads.el);
    this._headsBox.addEventListener('toggle', () => { if (this._headsBox.open) this._updateHeads(); });
    this._body.append(this._textLabel, this._panels.top, this._bar, this._modelPane, this._headPane, this._crossPane, this._table, this._panels.el, this._headsBox);
  }

  async _render() {
    const t = this.t;
    const src = this.getAttribute('src');
    if (src && src !== this._loadedSrc) {
      const url = new URL(src, document.baseURI);
      if (!['http:', 'https:', 'blob:'].includes(url.protocol)) {
        throw new RangeError(`<attention-lab-model-view> src="${src}": only http(s) and blob: URLs are fetched`);
      }
      this._status.textContent = t('mv.loading', { src });
      if (url.pathname.endsWith('/')) {
        this._loadedSrc = src;
        await this._loadFolder(url);
        return this._render();
      }
      const res = await fetch(url.href);
      if (!res.ok) throw new Error(`${src}: HTTP ${res.status}`);
      this._loadedSrc = src;
      await this.load(new Uint8Array(await res.arrayBuffer()));
      return;
    }
    const whole = Boolean(this._model);
    this._textLabel.hidden = !whole;
    this._panels.top.hidden = !whole;
    this._panels.el.hidden = !whole;
    const isEncDec = whole && Boolean(this._model.config?.isEncoderDecoder);
    this._headsBox.hidden = !whole || isEncDec;
    if (whole) {
      this._headsSummary.textContent = t('hp.heading');
      if (this._headsLang !== t.lang) {
        this._headsLang = t.lang;
        this._heads.setMessages(t);
      }
      this._textLabel.firstChild.textContent = t('mv.sentence');
      this._textInput.setAttribute('aria-label', t('mv.sentenceLabel'));
      if (this._textInput.value !== this.text && this._root.activeElement !== this._textInput) this._textInput.value = this.text;
      this._panels.t = t;
      this._panels.relabel();
      if (this._panelsLang !== t.lang) {
        this._panelsLang = t.lang;
        this._panelsPending = true;
      }
      await this._runModel();
    }
    // The view: 'model' | 'head'; an encoder-decoder's 'encoder' | 'decoder' | 'cross' (default).
    const asked = this.getAttribute('view');
    const view = isEncDec ? (['encoder', 'decoder'].includes(asked) ? asked : 'cross') : asked === 'head' ? 'head' : 'model';
    const run = this._run;
    const encdec = isEncDec && Boolean(run?.encdec) && run.model === this._model;
    if (isEncDec && !encdec) return; // stopped or superseded before its forward
    if (encdec) {
      this._input = view === 'encoder' ? run.encoder : view === 'decoder' ? run.decoder : run.cross;
      this._fileTokens = view === 'encoder' ? run.sourceShown : run.targetShown;
    }
    this._data = this._input ? normalizeAttention(this._input, { batch: this._batch() }) : null;
    const d = this._data;
    this._status.textContent = d ? (encdec ? t('mv.forwardEncDec', { Le: run.ids.length, Ld: run.decoderIds.length, ms: fmt(run.ms, 3), type: this._model.config.modelType })
      : whole ? t('mv.forwardMs', { L: this._run.ids.length, ms: fmt(this._run.ms, 3), type: this._model.config.modelType }) : '') : t('mv.noData');
    this._bar.hidden = !d;
    this._table.hidden = !d;
    if (!d) {
      this._grid.replaceChildren();
      this._headPane.hidden = true;
      return;
    }
    const given = this._tokens ?? this._fileTokens ?? (this.getAttribute('tokens') ? this.getAttribute('tokens').trim().split(/\s+/) : null);
    const numbered = (n) => Array.from({ length: n }, (_, i) => String(i));
    this._qTokens = given && given.length === d.lq ? given : numbered(d.lq);
    this._kTokens = given && given.length === d.lk ? given : this._qTokens.length === d.lk ? this._qTokens : numbered(d.lk);
    if (encdec && view === 'cross') this._kTokens = run.sourceShown;
    if (given && given.length !== d.lq) this._status.textContent = t('mv.tokenCount', { n: given.length, L: d.lq });
    // The encoder's and decoder's self-attention are drawn as the model view's grid.
    const pane = view === 'head' || view === 'cross' ? view : 'model';
    this._shownView = view;
    const VIEW_KEYS = { model: 'mv.modelView', head: 'mv.headView', encoder: 'mv.encoderView', decoder: 'mv.decoderView', cross: 'mv.crossView' };
    // Model and head views, or an encoder-decoder's three.
    const shownBtns = this._viewBtns.filter((b) => encdec === ['encoder', 'decoder', 'cross'].includes(b.dataset.view));
    if (shownBtns.some((b, i) => this._viewGroup.children[i] !== b) || this._viewGroup.children.length !== shownBtns.length) this._viewGroup.replaceChildren(...shownBtns);
    shownBtns.forEach((b) => {
      b.textContent = t(VIEW_KEYS[b.dataset.view]);
      b.setAttribute('aria-pressed', String(b.dataset.view === view));
    });
    this._exportBtns.forEach((b) => {
      b.textContent = t(`mv.export${b.dataset.export[0].toUpperCase()}${b.dataset.export.slice(1)}`);
      b.setAttribute('aria-label', `${t('mv.export')} ${b.textContent}`);
      b.hidden = (b.dataset.export === 'svg' && pane !== 'head') || (b.dataset.export === 'png' && pane !== 'model');
    });
    this._bigClose.textContent = t('mv.close');
    this._tableSummary.textContent = t('mv.table');
    this._modelPane.hidden = pane !== 'model';
    this._headPane.hidden = pane !== 'head';
    this._crossPane.hidden = pane !== 'cross';
    // The cross map has its own table (the heatmap's).
    this._table.hidden = pane === 'cross';
    this._layerLabel.hidden = pane !== 'head' && pane !== 'cross';
    this._crossHeadLabel.hidden = pane !== 'cross';
    this._headBtns.hidden = pane !== 'head';
    const tr = performance.now();
    if (pane === 'model') this._renderGrid();
    else if (pane === 'cross') this._renderCross();
    else this._renderHead();
    /** Milliseconds the last model or head view took to draw (on the page's thread). */
    this.lastDrawMs = performance.now() - tr;
    if (this._table.open && pane !== 'cross') this._buildTable();
    if (whole && this._panelsPending) {
      this._panelsPending = false;
      const run = this._run;
      // The panels fill in after the maps are drawn (their calls are queued
      // behind the forward); data-panels says when they have (tests wait on it).
      const seq = (this._panelsSeq = (this._panelsSeq ?? 0) + 1);
      this.dataset.panels = 'pending';
      this._panels.update(run.model, run.text, run, { byteLevel: run.byteLevel }).then(() => {
        if (seq !== this._panelsSeq) return;
        this.dataset.panels = 'ready';
        this.dispatchEvent(new CustomEvent('al-model-panels', { bubbles: true, composed: true }));
      }, (e) => {
        if (seq === this._panelsSeq) this.dataset.panels = 'error';
        this._showError(e);
      }).then(() => this._updateHeads());
    }
  }

  _renderGrid() {
    const d = this._data;
    const t = this.t;
    const size = this.intAttr('thumb-size', 56, 16, 400);
    const lut = paletteByName('viridis').packed;
    const per = d.lq * d.lk;
    this._grid.setAttribute('aria-label', t('mv.gridLabel', { layers: d.layers, heads: d.heads }));
    this._grid.style.setProperty('grid-template-columns', `max-content repeat(${d.heads}, ${size + 4}px)`);
    const cells = [h('span', { class: 'al-mv-axis', role: 'columnheader' })];
    for (let hh = 0; hh < d.heads; hh++) cells.push(h('span', { class: 'al-mv-axis', role: 'columnheader', text: t('mv.headN', { h: hh }) }));
    const rows = [h('div', { role: 'row', class: 'al-mv-row' }, cells)];
    this._thumbs = [];
    const paints = [];
    for (let l = 0; l < d.layers; l++) {
      const row = [h('span', { class: 'al-mv-axis', role: 'rowheader', text: t('mv.layerN', { l }) })];
      for (let hh = 0; hh < d.heads; hh++) {
        const off = (l * d.heads + hh) * per;
        const canvas = h('canvas', { width: d.lk, height: d.lq, 'aria-hidden': 'true' });
        canvas.style.setProperty('width', `${size}px`);
        canvas.style.setProperty('height', `${Math.max(8, Math.round(size * d.lq / d.lk))}px`);
        const s = strongest(d.data, off, d.lq, d.lk);
        paints.push(() => {
          const ctx = canvas.getContext('2d');
          if (!ctx) return;
          const img = ctx.createImageData(d.lk, d.lq);
          const px = new Uint32Array(img.data.buffer);
          const k = s.value > 0 ? 255 / s.value : 0;
          for (let q = 0; q < per; q++) px[q] = lut[Math.max(0, Math.min(255, Math.round(d.data[off + q] * k))) | 0];
          ctx.putImageData(img, 0, 0);
        });
        const btn = h('button', {
          type: 'button', class: 'al-mv-thumb', role: 'gridcell', tabindex: l === this._cell.l && hh === this._cell.h ? '0' : '-1',
          'aria-label': t('mv.thumb', { l, h: hh, value: fmt(s.value, 3), from: this._qTokens[s.i], to: this._kTokens[s.j] }),
          dataset: { layer: l, head: hh }, onclick: () => this.enlarge(l, hh),
        }, canvas);
        row.push(btn);
        this._thumbs.push(btn);
      }
      rows.push(h('div', { role: 'row', class: 'al-mv-row' }, row));
    }
    // Rows are laid out by the parent grid (display: contents).
    for (const r of rows) r.style.setProperty('display', 'contents');
    this._grid.replaceChildren(...rows);
    this._paintThumbs(paints);
    if (this._bigMap && !this._big.hidden) this.enlarge(this._cell.l, this._cell.h, false);
  }

  /**
   * Paints the thumbnails' canvases in idle slices (requestIdleCallback; a
   * 0 ms timer where there is none), each at most SLICE_MS and no longer than
   * the idle period the browser offers, so that no task of the page's thread
   * grows with the number of heads (GPT-2 small: 144, one task of 56-229 ms
   * when painted at once). A newer grid stops an older one's slices.
   * `thumbsPainted` resolves when they are painted (or superseded).
   */
  _paintThumbs(paints) {
    const token = (this._paintToken = {});
    let k = 0;
    this.thumbsPainted = new Promise((resolve) => {
      const slice = (deadline) => {
        if (token !== this._paintToken) return resolve();
        const t0 = performance.now();
        while (k < paints.length) {
          paints[k++]();
          const used = performance.now() - t0;
          const left = deadline && !deadline.didTimeout ? deadline.timeRemaining() : SLICE_MS - used;
          if (used >= SLICE_MS || left <= 1) break;
        }
        if (k < paints.length) idle(slice);
        else resolve();
      };
      idle(slice);
    });
  }

  _gridKey(e) {
    const d = this._data;
    const btn = e.target.closest?.('.al-mv-thumb');
    if (!d || !btn) return;
    let l = Number(btn.dataset.layer);
    let hh = Number(btn.dataset.head);
    if (e.key === 'ArrowRight') hh = Math.min(d.heads - 1, hh + 1);
    else if (e.key === 'ArrowLeft') hh = Math.max(0, hh - 1);
    else if (e.key === 'ArrowDown') l = Math.min(d.layers - 1, l + 1);
    else if (e.key === 'ArrowUp') l = Math.max(0, l - 1);
    else if (e.key === 'Home') hh = 0;
    else if (e.key === 'End') hh = d.heads - 1;
    else return;
    e.preventDefault();
    this._focusThumb(l, hh);
  }

  _focusThumb(l, hh) {
    this._cell = { l, h: hh };
    for (const b of this._thumbs) b.setAttribute('tabindex', Number(b.dataset.layer) === l && Number(b.dataset.head) === hh ? '0' : '-1');
    this._thumbs[l * this._data.heads + hh]?.focus();
  }

  /** Shows one layer/head as a full heatmap (model view). */
  enlarge(l, hh, focus = true) {
    const d = this._data;
    const t = this.t;
    this._cell = { l, h: hh };
    if (!this._bigMap) {
      this._bigMap = new Heatmap({ t, maxSize: 420, cellMax: 36, name: 'attention' });
      this._big.append(this._bigMap.el);
    }
    const per = d.lq * d.lk;
    const block = d.data.slice((l * d.heads + hh) * per, (l * d.heads + hh + 1) * per);
    this._bigMap.setMessages(t);
    this._bigMap.opts.name = `attention_layer${l}_head${hh}`;
    this._enlarged = { layer: l, head: hh, data: block };
    this._bigMap.setData({ data: block, rows: d.lq, cols: d.lk, rowLabels: this._qTokens, colLabels: this._kTokens, title: t('mv.enlarged', { l, h: hh }), domain: [0, Math.max(1e-9, ...block)], tensor: { data: block, shape: [d.lq, d.lk] } });
    this._grid.hidden = true;
    this._big.hidden = false;
    if (focus) this._bigMap.plot.focus();
  }

  _closeBig() {
    this._big.hidden = true;
    this._grid.hidden = false;
    this._focusThumb(this._cell.l, this._cell.h);
  }

  /** The head view's layer: the `layer` attribute, else the layer of the map last selected in the model view. */
  _headLayer() {
    const d = this._data;
    return this.intAttr('layer', Math.min(this._cell.l, d.layers - 1), 0, d.layers - 1);
  }

  _selectedHeads() {
    const d = this._data;
    const attr = this.getAttribute('heads');
    if (!attr || attr === 'all') return Array.from({ length: d.heads }, (_, i) => i);
    const list = attr.split(',').map((s) => Number(s.trim()));
    for (const x of list) {
      if (!Number.isInteger(x) || x < 0 || x >= d.heads) throw new RangeError(`<attention-lab-model-view> heads="${attr}": use all or head indices 0…${d.heads - 1}`);
    }
    return list;
  }

  _renderHead() {
    const d = this._data;
    const t = this.t;
    const layer = this._headLayer();
    const heads = this._selectedHeads();
    this._layerLabel.firstChild.textContent = t('mv.layer');
    this._layerSel.replaceChildren(...Array.from({ length: d.layers }, (_, l) => h('option', { value: l, text: String(l), selected: l === layer })));
    this._headBtns.setAttribute('aria-label', t('mv.heads'));
    this._headBtns.replaceChildren(...Array.from({ length: d.heads }, (_, hh) => {
      const b = h('button', { type: 'button', class: 'al-btn al-btn-small al-mv-head-btn', 'aria-pressed': String(heads.includes(hh)), text: t('mv.headN', { h: hh }), dataset: { head: hh } });
      b.style.setProperty('border-left-color', HEAD_COLOURS[hh % HEAD_COLOURS.length]);
      b.addEventListener('click', () => {
        const next = heads.includes(hh) ? heads.filter((x) => x !== hh) : [...heads, hh].sort((a, b2) => a - b2);
        this.setAttribute('heads', next.length === d.heads ? 'all' : next.join(',') || String(hh));
      });
      return b;
    }));
    this._head.t = t;
    this._head.setData({ data: d.data, layer, heads, H: d.heads, lq: d.lq, lk: d.lk, qTokens: this._qTokens, kTokens: this._kTokens, minWeight: this.numAttr('min-weight', 0.01) });
  }

  /** The cross view: the alignment map of the chosen layer and head (or the mean over heads) and the tokens. */
  _renderCross() {
    const d = this._data;
    const run = this._run;
    const t = this.t;
    const layer = this._headLayer();
    const attr = (this.getAttribute('head') ?? '').trim();
    let head = 'mean';
    if (attr !== '' && attr !== 'mean') {
      head = Number(attr);
      if (!Number.isInteger(head) || head < 0 || head >= d.heads) throw new RangeError(`<attention-lab-model-view> head="${attr}": use mean or a head index 0…${d.heads - 1}`);
    }
    this._layerLabel.firstChild.textContent = t('mv.layer');
    this._layerSel.replaceChildren(...Array.from({ length: d.layers }, (_, l) => h('option', { value: l, text: String(l), selected: l === layer })));
    this._crossHeadLabel.firstChild.textContent = t('mv.crossHead');
    this._crossHeadSel.replaceChildren(h('option', { value: 'mean', text: t('mv.headMean'), selected: head === 'mean' }),
      ...Array.from({ length: d.heads }, (_, hh) => h('option', { value: hh, text: t('mv.headN', { h: hh }), selected: hh === head })));
    const per = d.lq * d.lk;
    const block = head === 'mean' ? run.crossMean[layer].data.slice(0, per) : d.data.slice((layer * d.heads + head) * per, (layer * d.heads + head + 1) * per);
    const rowLabels = run.targetShown;
    const colLabels = run.sourceShown;
    this._crossShown = { layer, head, rows: d.lq, cols: d.lk, data: block, rowLabels, colLabels };
    if (!this._crossMap) {
      this._crossMap = new Heatmap({ t, maxSize: 420, cellMax: 36, rowKind: 'target', colKind: 'source', name: 'cross-attention',
        onCell: (c) => this._highlightTarget(c ? c.i : -1, false) });
      this._crossMapBox.append(this._crossMap.el);
    }
    this._crossMap.setMessages(t);
    this._crossMap.opts.name = `cross_attention_layer${layer}_${head === 'mean' ? 'mean' : `head${head}`}`;
    const headName = head === 'mean' ? t('mv.headMean') : t('mv.headN', { h: head });
    this._crossMap.setData({ data: block, rows: d.lq, cols: d.lk, rowLabels, colLabels, title: t('mv.crossTitle', { l: layer, head: headName }), domain: [0, Math.max(1e-9, ...block)], tensor: { data: block, shape: [d.lq, d.lk] } });
    this._crossHint.textContent = t('mv.crossHint');
    this._crossTgtLabel.textContent = t('mv.targetTokens');
    this._crossSrcLabel.textContent = t('mv.sourceTokens');
    this._crossTgt.setAttribute('aria-label', t('mv.targetTokens'));
    this._crossSrc.setAttribute('aria-label', t('mv.sourceTokens'));
    this._crossTgt.replaceChildren(...rowLabels.map((tok, i) => {
      const row = block.subarray(i * d.lk, (i + 1) * d.lk);
      let top = 0;
      for (let j = 1; j < d.lk; j++) if (row[j] > row[top]) top = j;
      const li = h('li', { class: 'al-mv-tok al-mv-cross-tgt', tabindex: '0', dataset: { i, id: run.decoderIds[i] }, title: t('mv.tokenTitle', { id: run.decoderIds[i], raw: run.decoderTokens[i] }),
        'aria-label': t('mv.crossTarget', { i, token: tok, top: colLabels[top], w: fmt(row[top], 3) }) }, tok);
      li.addEventListener('mouseenter', () => this._highlightTarget(i));
      li.addEventListener('focus', () => this._highlightTarget(i));
      li.addEventListener('mouseleave', () => this._highlightTarget(-1));
      li.addEventListener('blur', () => this._highlightTarget(-1));
      return li;
    }));
    this._crossSrc.replaceChildren(...colLabels.map((tok, j) => h('li', { class: 'al-mv-tok al-mv-cross-src', dataset: { j, id: run.ids[j] }, title: t('mv.tokenTitle', { id: run.ids[j], raw: run.tokens[j] }) }, tok)));
    const keep = this._crossHi && this._crossHi.target < d.lq ? this._crossHi.target : -1;
    this._highlightTarget(keep);
  }

  /**
   * Shades each source token by the weight target token i gave it in the map
   * drawn (its row; -1 clears), and bands that row of the map.
   */
  _highlightTarget(i, band = true) {
    const m = this._crossShown;
    if (!m) return;
    const srcs = [...this._crossSrc.children];
    this._crossTgt.querySelectorAll('.al-mv-on').forEach((x) => x.classList.remove('al-mv-on'));
    if (i < 0 || i >= m.rows) {
      this._crossHi = null;
      for (const li of srcs) {
        li.style.removeProperty('--al-w');
        li.classList.remove('al-mv-strong-src');
        li.removeAttribute('aria-label');
        delete li.dataset.weight;
      }
      if (band) this._crossMap?.setBands(null);
      return;
    }
    const row = Array.from(m.data.subarray(i * m.cols, (i + 1) * m.cols));
    const top = Math.max(1e-9, ...row);
    this._crossTgt.children[i]?.classList.add('al-mv-on');
    srcs.forEach((li, j) => {
      li.style.setProperty('--al-w', (row[j] / top).toFixed(3));
      li.classList.toggle('al-mv-strong-src', row[j] / top > 0.6);
      li.dataset.weight = String(row[j]);
      li.setAttribute('aria-label', this.t('mv.crossWeight', { token: m.colLabels[j], w: fmt(row[j], 3) }));
    });
    this._crossHi = { target: i, token: m.rowLabels[i], weights: row };
    if (band) this._crossMap?.setBands({ rows: [i] });
  }

  _buildTable() {
    const d = this._data;
    const t = this.t;
    const view = this.getAttribute('view') === 'head' ? 'head' : 'model';
    const per = d.lq * d.lk;
    let table;
    if (view === 'model') {
      const head = h('tr', null, h('th', { scope: 'col', text: t('mv.layer') }), Array.from({ length: d.heads }, (_, hh) => h('th', { scope: 'col', text: t('mv.headN', { h: hh }) })));
      const body = Array.from({ length: d.layers }, (_, l) => h('tr', null, h('th', { scope: 'row', text: String(l) }), Array.from({ length: d.heads }, (_, hh) => {
        const s = strongest(d.data, (l * d.heads + hh) * per, d.lq, d.lk);
        return h('td', { text: `${this._qTokens[s.i]} → ${this._kTokens[s.j]} ${fmt(s.value, 3)}` });
      })));
      table = h('table', null, h('caption', { text: t('mv.tableModel') }), h('thead', null, head), h('tbody', null, body));
    } else {
      const layer = this._headLayer();
      const heads = this._selectedHeads();
      const head = h('tr', null, h('th', { scope: 'col', text: t('mv.query') }), heads.map((hh) => h('th', { scope: 'col', text: t('mv.headN', { h: hh }) })));
      const body = this._qTokens.map((tok, i) => h('tr', null, h('th', { scope: 'row', text: tok }), heads.map((hh) => {
        const s = strongest(d.data, (layer * d.heads + hh) * per + i * d.lk, 1, d.lk);
        return h('td', { text: `${this._kTokens[s.j]} ${fmt(s.value, 3)}` });
      })));
      table = h('table', null, h('caption', { text: t('mv.tableHead', { l: layer }) }), h('thead', null, head), h('tbody', null, body));
    }
    this._tableBody.replaceChildren(table);
  }

  /** Exports the model grid as PNG, the head view as SVG, or the arrays (+ tokens) as JSON. */
  async export(format) {
    const d = this._data;
    if (!d) return null;
    let blob;
    let name;
    if (format === 'json') {
      const r = this._run;
      const run = this._model && r ? { text: r.text, ids: r.ids, modelTokens: r.tokens, modelType: this._model.config.modelType } : {};
      // An encoder-decoder's: which attention (encoder | decoder | cross) and the decoder's input.
      if (this._model && r?.encdec) Object.assign(run, { view: this._shownView, decoderInputIds: r.decoderIds, decoderTokens: r.decoderTokens });
      blob = new Blob([tensorToJSON({ data: d.data, shape: [d.layers, d.heads, d.lq, d.lk] }, { tokens: this._qTokens, keyTokens: this._kTokens, ...run })], { type: 'application/json' });
      name = 'attention.json';
    } else if (format === 'svg') {
      if (this._headPane.hidden) this._renderHead();
      blob = new Blob([this._head.toSvgText()], { type: 'image/svg+xml' });
      name = 'attention-head-view.svg';
    } else if (format === 'png') {
      const cell = 48;
      const gap = 4;
      const c = document.createElement('canvas');
      c.width = d.heads * (cell + gap) + gap;
      c.height = d.layers * (cell + gap) + gap;
      const ctx = c.getContext('2d');
      ctx.imageSmoothingEnabled = false;
      await this.thumbsPainted;
      for (const b of this._thumbs ?? []) {
        ctx.drawImage(b.firstChild, gap + Number(b.dataset.head) * (cell + gap), gap + Number(b.dataset.layer) * (cell + gap), cell, cell);
      }
      blob = await canvasToBlob(c);
      name = 'attention-model-view.png';
    } else {
      throw new RangeError(`export: format must be 'png', 'svg' or 'json', got ${JSON.stringify(format)}`);
    }
    saveBlob(blob, name);
    return blob;
  }
}
