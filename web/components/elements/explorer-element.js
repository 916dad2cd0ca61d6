// <attention-lab-explorer>: the whole explorer in one element — a sentence
// the reader edits, H, E, seed and mask controls, one heatmap per head plus
// their average, and the dimension flow of the forward pass (from its trace).
//
//   <attention-lab-explorer text="the cat sat on the mat" embed-dim="64" heads="4"
//                           mask="causal"></attention-lab-explorer>
//   The attention-variant attributes of <attention-lab-heatmap> work here too
//   (softcap, window, alibi, num-kv-heads, rope, mask-fill, causal-align).
import { AttentionLabElement } from './base.js';
import { Heatmap, linkHeatmaps } from '../lib/heatmap.js';
import { ShapeFlow } from '../lib/shape-flow.js';
import { tokenize, embedBatch } from '../lib/tokens.js';
import { h } from '../lib/dom.js';
import { VARIANT_ATTRIBUTES, readVariantAttributes } from '../lib/variant-attrs.js';

const HEADS = [1, 2, 4, 8, 16];
const EMBEDS = [8, 16, 32, 64, 128, 256, 512];

export class AttentionLabExplorer extends AttentionLabElement {
  static get observedAttributes() {
    return ['text', 'heads', 'embed-dim', 'seed', 'mask', 'lang', 'backend', ...VARIANT_ATTRIBUTES];
  }

  /** The last forward result: { output, weights, trace, tokens }. */
  get result() {
    return this._result ?? null;
  }

  _build() {
    const t = this.t;
    const id = (s) => `al-ex-${s}`;
    this._text = h('input', { id: id('text'), class: 'al-input al-input-text', type: 'text', maxlength: '300', spellcheck: 'false', part: 'input' });
    this._heads = h('select', { id: id('heads'), class: 'al-select' }, HEADS.map((n) => h('option', { value: String(n) }, String(n))));
    this._embed = h('select', { id: id('embed'), class: 'al-select' }, EMBEDS.map((n) => h('option', { value: String(n) }, String(n))));
    this._seed = h('input', { id: id('seed'), class: 'al-input', type: 'number', min: '0', max: '4294967295', step: '1' });
    this._mask = h('select', { id: id('mask'), class: 'al-select' }, ['none', 'causal'].map((m) => h('option', { value: m })));
    this._labels = {};
    const lab = (key, forId, control) => {
      this._labels[key] = h('span');
      return h('label', { for: forId }, this._labels[key], control);
    };
    this._controls = h('div', { class: 'al-controls', part: 'controls' },
      lab('ex.text', id('text'), this._text), lab('ex.heads', id('heads'), this._heads), lab('ex.embed', id('embed'), this._embed), lab('ex.seed', id('seed'), this._seed), lab('ex.mask', id('mask'), this._mask));
    let timer = 0;
    this._text.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.setAttribute('text', this._text.value), 150);
    });
    this._heads.addEventListener('change', () => this.setAttribute('heads', this._heads.value));
    this._embed.addEventListener('change', () => this.setAttribute('embed-dim', this._embed.value));
    this._seed.addEventListener('change', () => {
      const n = Number(this._seed.value);
      if (Number.isInteger(n) && n >= 0) this.setAttribute('seed', String(n));
    });
    this._mask.addEventListener('change', () => this.setAttribute('mask', this._mask.value));
    this._tokens = h('ul', { class: 'al-tokens', part: 'tokens', role: 'list' });
    this._mapsTitle = h('h3');
    this._grid = h('div', { class: 'al-grid', part: 'grid' });
    this._flowTitle = h('h3');
    this._flow = new ShapeFlow({ t, showValues: false });
    this._maps = [];
    this._body.append(this._controls, this._tokens, this._mapsTitle, this._grid, this._flowTitle, this._flow.el);
    this._relabel();
  }

  _relabel() {
    if (!this._controls) return;
    const t = this.t;
    for (const [k, el] of Object.entries(this._labels)) el.textContent = t(k);
    for (const o of this._mask.options) o.textContent = t(`ex.mask.${o.value}`);
    this._mapsTitle.textContent = t('ex.headMaps');
    this._flowTitle.textContent = t('ex.shapes');
    this._flow.setMessages(t);
    for (const m of this._maps) m.setMessages(t);
  }

  _onDisconnect() {
    this._flow?.pause();
  }

  _repaint() {
    for (const m of this._maps ?? []) m.draw();
  }

  async _render() {
    const t = this.t;
    this._relabel();
    const text = this.getAttribute('text') ?? 'the cat sat on the mat';
    const H = this.intAttr('heads', 4, 1, 64);
    const E = this.intAttr('embed-dim', 64, 1, 1024);
    const seed = this.intAttr('seed', 0, 0, 2 ** 32 - 1);
    const maskKind = this.getAttribute('mask') || 'none';
    if (this.shadowRoot.activeElement !== this._text) this._text.value = text;
    const setSel = (sel, v) => {
      if (![...sel.options].some((o) => o.value === String(v))) sel.append(h('option', { value: String(v) }, String(v)));
      sel.value = String(v);
    };
    setSel(this._heads, H);
    setSel(this._embed, E);
    this._seed.value = String(seed);
    this._mask.value = maskKind === 'causal' ? 'causal' : 'none';
    let toks = tokenize(text, { maxTokens: 128 });
    if (!toks.length) toks = ['∅'];
    this._tokens.replaceChildren(...toks.map((tok) => h('li', { class: 'al-token' }, tok)));
    const v = readVariantAttributes(this, maskKind === 'causal' ? 'causal' : 'none');
    const lab = await this.lab();
    const L = toks.length;
    // rope and alibi replace the sinusoidal encoding (as in the models that use them).
    const x = embedBatch([toks], L, E, seed, v.positional ? (await lab.positionalEncoding(L, E)).data : null);
    // The library checks E % H (and H % numKvHeads) and says so; the message is shown inline.
    const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed, ...v.config });
    let r;
    let avg = null;
    try {
      const { softcap, ...rest } = v.options;
      const opts = { mask: v.masks.length ? v.masks : undefined, ...rest };
      if (softcap === undefined) {
        r = await mha.forward({ data: x, shape: [1, L, E] }, undefined, undefined, { ...opts, trace: true });
        // The head average, as the library computes it.
        if (H > 1) avg = (await mha.forward({ data: x, shape: [1, L, E] }, undefined, undefined, { ...opts, averageWeights: true })).weights.data;
      } else {
        // The MHA forward takes no softcap: the weights come from the
        // library's SDPA over this forward's own Q, K, V (its trace).
        r = await mha.forward({ data: x, shape: [1, L, E] }, undefined, undefined, { ...opts, trace: 'values' });
        const qkv = r.trace.find((s) => s.step === 'split_heads').values;
        r = { ...r, weights: (await lab.scaledDotProductAttention(qkv.q, qkv.k, qkv.v, { ...opts, softcap })).weights };
        if (H > 1) {
          avg = new Float32Array(L * L);
          for (let hh = 0; hh < H; hh++) for (let k = 0; k < L * L; k++) avg[k] += r.weights.data[hh * L * L + k] / H;
        }
      }
    } finally {
      mha.dispose();
    }
    this._result = { ...r, tokens: toks };
    const size = H > 4 ? 170 : H > 1 ? 230 : 320;
    const n = H > 1 ? H + 1 : 1;
    while (this._maps.length > n) this._maps.pop().destroy();
    while (this._maps.length < n) {
      const m = new Heatmap({ t, compact: true, maxSize: size, cellMax: 40, name: `head_${this._maps.length}` });
      m.el.setAttribute('part', 'heatmap');
      this._grid.append(m.el);
      this._maps.push(m);
    }
    this._unlink?.();
    this._unlink = linkHeatmaps(this._maps);
    const w = r.weights.data;
    const LL = L * L;
    let hi = 0;
    for (const v of w) if (v > hi) hi = v;
    for (let hh = 0; hh < H; hh++) {
      this._maps[hh].opts.maxSize = size;
      this._maps[hh].setData({ data: w, offset: hh * LL, rows: L, cols: L, rowLabels: toks, colLabels: toks, domain: [0, hi || 1], title: t('hm.head', { h: hh }), tensor: r.weights });
    }
    if (H > 1) {
      this._maps[H].opts.maxSize = size;
      this._maps[H].setData({ data: avg, rows: L, cols: L, rowLabels: toks, colLabels: toks, title: t('hm.average', { n: H }), tensor: { data: avg, shape: [L, L] } });
    }
    this._flow.setTrace(r.trace);
  }
}
