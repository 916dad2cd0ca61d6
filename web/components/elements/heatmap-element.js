// <attention-lab-heatmap>: attention maps, either computed by the library
// for given tokens and settings (attributes), or drawn from attention arrays
// [H, Lq, Lk] / [Lq, Lk] a page passes in as the `attention` property (from
// any framework; no wasm is loaded then).
//
//   <attention-lab-heatmap tokens="the cat sat on the mat" heads="4" embed-dim="32"
//                          seed="1" mask="causal" head="all"></attention-lab-heatmap>
//   Attention variants (issue 11; lib/variant-attrs.js): softcap="30" window="3,0"
//   alibi num-kv-heads="2" rope mask-fill="-inf" causal-align="bottom-right".
//   scale="0.5": the factor of Q·Kᵀ (default 1/√D): larger sharpens the maps.
//   el.attention = { data: Float32Array, shape: [H, Lq, Lk] };  // or nested arrays
//   el.queryTokens = [...]; el.keyTokens = [...];                // optional labels
//
//   The package's shipped models (issue 22): the real heads of lab.pretrained('en' | 'zh'), loaded
//   lazily and once per page (lib/pretrained-model.js), computed by model.forwardSync:
//   <attention-lab-heatmap model="zh" text="白日依山尽，黄河入海流。" layer="0" head="all">
//   (layer default 0; head all | average | 0…H−1; text default a sample; characters outside the
//   vocabulary are the model's [UNK] token, listed under the maps).
import { AttentionLabElement } from './base.js';
import { Heatmap, linkHeatmaps } from '../lib/heatmap.js';
import { tokenize, embedBatch } from '../lib/tokens.js';
import { h, shapeText } from '../lib/dom.js';
import { VARIANT_ATTRIBUTES, readVariantAttributes } from '../lib/variant-attrs.js';
import { pretrainedModel, checkModelName, tokenLabels, SAMPLE_TEXT } from '../lib/pretrained-model.js';

function toAttention(value) {
  if (value === null || value === undefined) return null;
  let data;
  let shape;
  if (Array.isArray(value)) {
    shape = [];
    for (let lvl = value; Array.isArray(lvl); lvl = lvl[0]) shape.push(lvl.length);
    data = Float32Array.from(value.flat(Infinity));
  } else if (typeof value === 'object' && 'data' in value && 'shape' in value) {
    shape = Array.from(value.shape);
    data = value.data instanceof Float32Array ? value.data : Float32Array.from(value.data);
  } else {
    throw new TypeError('attention must be { data, shape: [H, Lq, Lk] } or a nested array [H][Lq][Lk] / [Lq][Lk]');
  }
  if (shape.length === 2) shape = [1, ...shape];
  if (shape.length === 4 && shape[0] === 1) shape = shape.slice(1);
  if (shape.length !== 3 || shape.some((d) => !Number.isInteger(d) || d < 1)) {
    throw new RangeError(`attention must have shape [H, Lq, Lk] or [Lq, Lk], got ${shapeText(shape)}`);
  }
  const n = shape[0] * shape[1] * shape[2];
  if (data.length !== n) throw new RangeError(`attention data has ${data.length} values but shape ${shapeText(shape)} needs ${n}`);
  return { data, shape };
}

export class AttentionLabHeatmap extends AttentionLabElement {
  static get observedAttributes() {
    return ['tokens', 'heads', 'embed-dim', 'seed', 'mask', 'head', 'scale', 'lang', 'backend', 'size', 'model', 'text', 'layer', ...VARIANT_ATTRIBUTES];
  }

  constructor() {
    super();
    this._attention = null;
    this._queryTokens = null;
    this._keyTokens = null;
    this._maps = [];
    this._modelRun = null;
  }

  /**
   * With the `model` attribute: what was drawn, { model, text, layer, ids, tokens, labels,
   * unknown, attention: { data, shape: [H, L, L] } } (null before the first render).
   */
  get modelRun() {
    return this._modelRun;
  }

  /** Attention weights to draw: { data, shape: [H, Lq, Lk] } or nested arrays. */
  get attention() {
    return this._attention;
  }

  set attention(value) {
    try {
      this._attention = toAttention(value);
    } catch (e) {
      this._attention = null;
      if (this._started) this._showError(e);
      throw e;
    }
    this.requestRender();
  }

  get tokens() {
    return this._queryTokens;
  }

  /**
   * Labels for both axes (self-attention). A string is the `tokens`
   * attribute: Vue and React 19 set a custom element's properties rather
   * than its attributes when the property exists (client-side renders).
   */
  set tokens(list) {
    if (typeof list === 'string') {
      this.setAttribute('tokens', list);
      return;
    }
    this._queryTokens = list ? Array.from(list, String) : null;
    this._keyTokens = this._queryTokens;
    this.requestRender();
  }

  get queryTokens() {
    return this._queryTokens;
  }

  set queryTokens(list) {
    this._queryTokens = list ? Array.from(list, String) : null;
    this.requestRender();
  }

  get keyTokens() {
    return this._keyTokens;
  }

  set keyTokens(list) {
    this._keyTokens = list ? Array.from(list, String) : null;
    this.requestRender();
  }

  /** The Heatmap widgets shown (for exports: map.export('png')). */
  get maps() {
    return this._maps.slice();
  }

  _build() {
    this._grid = h('div', { class: 'al-grid', part: 'grid' });
    this._note = h('p', { class: 'al-status al-hm-note', hidden: true });
    this._body.append(this._grid, this._note);
  }

  /** The maps of the shipped model named by the `model` attribute (one layer, [H, L, L]). */
  async _modelMaps(name) {
    const lang = checkModelName('attention-lab-heatmap', name);
    const text = this.getAttribute('text') ?? SAMPLE_TEXT[lang];
    this._status.textContent = this.t('hm.modelLoading', { model: lang });
    let model;
    try {
      model = await pretrainedModel(lang);
    } finally {
      this._status.textContent = '';
    }
    const N = model.config.numLayers;
    const layer = this.intAttr('layer', 0, 0, N - 1);
    const r = model.forwardSync(text, { attentions: true });
    const a = r.attentions[layer];
    const att = { data: a.data, shape: a.shape.slice(1) };
    const { tokens, labels, unknown } = tokenLabels(model, text, r.ids);
    this._modelRun = { model: lang, text, layer, ids: r.ids, tokens, labels, unknown, attention: att };
    return { att, labels, unknown, layer };
  }

  _relabel() {
    for (const m of this._maps) m.setMessages(this.t);
  }

  _repaint() {
    for (const m of this._maps) m.draw();
  }

  _ensure(n, size) {
    while (this._maps.length > n) this._maps.pop().destroy();
    while (this._maps.length < n) {
      const m = new Heatmap({ t: this.t, compact: n > 2, maxSize: size, cellMax: 40, name: `attention_${this._maps.length}` });
      m.el.setAttribute('part', 'heatmap');
      this._grid.append(m.el);
      this._maps.push(m);
    }
    for (const m of this._maps) m.opts.maxSize = size;
    this._unlink?.();
    this._unlink = linkHeatmaps(this._maps);
  }

  async _render() {
    const t = this.t;
    let att = this._attention;
    let qTok = this._queryTokens;
    let kTok = this._keyTokens;
    const modelName = this.getAttribute('model');
    let layer = null;
    let unknown = [];
    if (modelName !== null && modelName !== '') {
      const m = await this._modelMaps(modelName);
      ({ att, layer, unknown } = m);
      qTok = m.labels;
      kTok = m.labels;
    } else if (!att) {
      const text = this.getAttribute('tokens');
      if (text === null) {
        this._ensure(0, 0);
        this._status.textContent = t('comp.noData');
        return;
      }
      const toks = tokenize(text, { maxTokens: 256 });
      if (!toks.length) throw new RangeError('<attention-lab-heatmap> tokens is empty');
      const H = this.intAttr('heads', 2, 1, 64);
      const E = this.intAttr('embed-dim', 32, 1, 1024);
      const seed = this.intAttr('seed', 0, 0, 2 ** 32 - 1);
      const maskKind = this.getAttribute('mask') || 'none';
      if (!['none', 'causal'].includes(maskKind)) throw new RangeError(`<attention-lab-heatmap> mask="${maskKind}": use none or causal`);
      const v = readVariantAttributes(this, maskKind);
      // scale: the factor of Q·Kᵀ (default 1/√D); the library checks its range.
      const scale = this.numAttr('scale', undefined);
      const sdpaOptions = scale === undefined ? v.options : { ...v.options, scale };
      const lab = await this.lab();
      const L = toks.length;
      // rope and alibi replace the sinusoidal encoding (as in the models that use them).
      const pe = v.positional ? (await lab.positionalEncoding(L, E)).data : null;
      const x = embedBatch([toks], L, E, seed, pe);
      const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed, ...v.config });
      try {
        const mask = v.masks.length ? v.masks : undefined;
        if (sdpaOptions.softcap === undefined && sdpaOptions.scale === undefined) {
          const r = await mha.forward({ data: x, shape: [L, E] }, undefined, undefined, { mask, ...v.options });
          att = r.weights;
        } else {
          // The MHA forward takes no softcap or scale: the weights come from
          // the library's SDPA over this forward's own Q, K, V (its trace).
          const r = await mha.forward({ data: x, shape: [1, L, E] }, undefined, undefined, { mask, trace: 'values', needWeights: false });
          const qkv = r.trace.find((s) => s.step === 'split_heads').values;
          const w = (await lab.scaledDotProductAttention(qkv.q, qkv.k, qkv.v, { mask, ...sdpaOptions })).weights;
          att = { data: w.data, shape: w.shape.slice(1) };
        }
      } finally {
        mha.dispose();
      }
      qTok = toks;
      kTok = toks;
    }
    this._status.textContent = '';
    const [H, Lq, Lk] = att.shape;
    const which = this.getAttribute('head') ?? 'all';
    const list = [];
    const avg = new Float32Array(Lq * Lk);
    const headTitle = (hh) => (layer === null ? t('hm.head', { h: hh }) : t('hm.layerHead', { l: layer, h: hh }));
    for (let hh = 0; hh < H; hh++) for (let k = 0; k < Lq * Lk; k++) avg[k] += att.data[hh * Lq * Lk + k] / H;
    if (which === 'average') list.push({ title: t('hm.average', { n: H }), data: avg, offset: 0 });
    else if (which === 'all' || which === '') {
      for (let hh = 0; hh < H; hh++) list.push({ title: H > 1 || layer !== null ? headTitle(hh) : t('comp.attentionOf', { shape: shapeText([Lq, Lk]) }), data: att.data, offset: hh * Lq * Lk });
      if (H > 1) list.push({ title: t('hm.average', { n: H }), data: avg, offset: 0 });
    } else {
      const hh = Number(which);
      if (!Number.isInteger(hh) || hh < 0 || hh >= H) throw new RangeError(`<attention-lab-heatmap> head="${which}": use all, average or 0…${H - 1}`);
      list.push({ title: headTitle(hh), data: att.data, offset: hh * Lq * Lk });
    }
    this._note.hidden = !unknown.length;
    this._note.textContent = unknown.length ? t('hm.unknown', { chars: unknown.join(' ') }) : '';
    const size = this.intAttr('size', list.length > 4 ? 180 : list.length > 1 ? 240 : 360, 60, 2000);
    this._ensure(list.length, size);
    let hi = 0;
    let lo = 0;
    for (let k = 0; k < att.data.length; k++) {
      const v = att.data[k];
      if (v > hi) hi = v;
      if (v < lo && v > -1e8) lo = v;
    }
    const q = qTok && qTok.length === Lq ? qTok : null;
    const kk = kTok && kTok.length === Lk ? kTok : q && Lq === Lk ? q : null;
    list.forEach((it, k) => {
      this._maps[k].setMessages(t);
      this._maps[k].setData({ data: it.data, offset: it.offset, rows: Lq, cols: Lk, rowLabels: q ?? undefined, colLabels: kk ?? undefined, title: it.title, domain: it.data === avg ? undefined : [lo, hi > lo ? hi : lo + 1], tensor: it.data === avg ? { data: avg, shape: [Lq, Lk] } : att });
    });
    this.setAttribute('aria-busy', 'false');
  }
}
