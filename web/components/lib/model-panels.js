// The panels <attention-lab-model-view> shows beside the attention when it
// holds a whole model (its `model` property or a folder `src`): the tokens
// as the tokenizer cut them, the next-token probabilities with a temperature
// slider, Generate (streamed, with Stop), a BERT's [MASK] predictions and the
// head-role table. Every number comes from the model's own calls
// (nextTokens, generate, fillMask, headRoles); token strings go into
// textContent and attributes only. An encoder-decoder (config.isEncoderDecoder)
// gets the source tokens, its first target token (nextTokens) and Translate
// (generate on the source: the target alone, from the decoder's start token);
// no [MASK] or head roles.
import { h, fmt } from './dom.js';
import { readableToken } from './token-text.js';

const ROLES = ['previousToken', 'self', 'firstToken', 'induction'];
/**
 * A causal model's head roles come from one forward with attentions (headRoles' oneForward), so
 * they are scored with every run. A bidirectional one's cost 1 + 4 forwards: up to this many
 * parameters with every run, above on a click.
 */
const AUTO_ROLES_PARAMETERS = 20e6;
const nextFrame = () => new Promise((r) => (typeof requestAnimationFrame === 'function' ? requestAnimationFrame(() => r()) : setTimeout(r, 16)));

export class ModelPanels {
  /**
   * @param {{ t: Function, onError: (e: Error) => void, onGenerate?: () => Promise<unknown> }} o
   *   onGenerate: what the Generate button runs (default: generate())
   */
  constructor({ t, onError, onGenerate }) {
    this.t = t;
    this.onError = onError;
    this.onGenerate = onGenerate ?? null;
    this.encdec = false;
    this.model = null;
    this.text = '';
    this.byteLevel = false;
    this._seq = 0;
    this._gen = null;
    /** What the panels last showed (for tests and scripts). */
    this.shown = { tokens: null, next: null, generated: null, mask: null, roles: null };

    this._tokHead = h('h4', { class: 'al-mv-h' });
    this._tokList = h('ol', { class: 'al-mv-tokens' });
    this._tokBox = h('section', { class: 'al-mv-panel al-mv-tok-panel' }, this._tokHead, this._tokList);

    this._nextHead = h('h4', { class: 'al-mv-h' });
    this._tempOut = h('output', { class: 'al-mv-temp-out' });
    this._temp = h('input', { type: 'range', min: '0', max: '2', step: '0.05', value: '1', class: 'al-mv-temp' });
    this._temp.addEventListener('input', () => {
      this.tempTouched = true;
      this._tempOut.textContent = Number(this._temp.value).toFixed(2);
      this._debounceNext();
    });
    this._tempLabel = h('label', { class: 'al-mv-group' }, h('span'), this._temp, this._tempOut);
    this._nextList = h('ol', { class: 'al-mv-next' });
    this._nextBox = h('section', { class: 'al-mv-panel al-mv-next-panel' }, this._nextHead, this._tempLabel, this._nextList);

    this._genHead = h('h4', { class: 'al-mv-h' });
    this._maxNew = h('input', { type: 'number', min: '1', max: '512', value: '20', class: 'al-input al-mv-max-new' });
    this._seed = h('input', { type: 'number', min: '0', max: '4294967295', value: '0', class: 'al-input al-mv-seed' });
    this._genBtn = h('button', { type: 'button', class: 'al-btn al-mv-generate', onclick: () => Promise.resolve(this.onGenerate ? this.onGenerate() : this.generate()).catch((e) => this.onError(e)) });
    this._stopBtn = h('button', { type: 'button', class: 'al-btn al-mv-stop', disabled: true, onclick: () => this.stop() });
    this._maxLabel = h('label', { class: 'al-mv-group' }, h('span'), this._maxNew);
    this._seedLabel = h('label', { class: 'al-mv-group' }, h('span'), this._seed);
    this._genOut = h('p', { class: 'al-mv-gen-out' });
    this._genStatus = h('p', { class: 'al-mv-gen-status', role: 'status', 'aria-live': 'polite' });
    this._genBox = h('section', { class: 'al-mv-panel al-mv-gen-panel' }, this._genHead,
      h('div', { class: 'al-mv-bar' }, this._maxLabel, this._seedLabel, this._genBtn, this._stopBtn), this._genOut, this._genStatus);

    this._maskHead = h('h4', { class: 'al-mv-h' });
    this._maskBody = h('div', { class: 'al-mv-mask' });
    this._maskBox = h('section', { class: 'al-mv-panel al-mv-mask-panel' }, this._maskHead, this._maskBody);

    this._rolesHead = h('h4', { class: 'al-mv-h' });
    this._rolesBody = h('div', { class: 'al-mv-table-scroll al-mv-roles' });
    this._rolesBox = h('section', { class: 'al-mv-panel al-mv-roles-panel' }, this._rolesHead, this._rolesBody);

    this.top = h('div', { class: 'al-mv-model-top' }, this._tokBox);
    this.el = h('div', { class: 'al-mv-model-panels' }, this._nextBox, this._genBox, this._maskBox, this._rolesBox);
    this._debounceNext = debounced(() => this._next(this._seq).catch((e) => this.onError(e)), 120);
    this.relabel();
  }

  relabel() {
    const t = this.t;
    this._nextHead.textContent = t(this.encdec ? 'mv.nextTarget' : 'mv.next');
    this._tempLabel.firstChild.textContent = t('mv.temperature');
    this._temp.setAttribute('aria-label', t('mv.temperatureLabel'));
    this._tempOut.textContent = Number(this._temp.value).toFixed(2);
    this._genHead.textContent = t(this.encdec ? 'mv.translateHead' : 'mv.generateHead');
    this._genBtn.textContent = t(this.encdec ? 'mv.translate' : 'mv.generate');
    this._stopBtn.textContent = t('mv.stop');
    this._maxLabel.firstChild.textContent = t('mv.maxNew');
    this._seedLabel.firstChild.textContent = t('mv.seed');
    this._maskHead.textContent = t('mv.mask');
    this._rolesHead.textContent = t('mv.roles');
  }

  get temperature() {
    return Number(this._temp.value);
  }

  /**
   * Takes `model`: an encoder-decoder's panels read "first target token" and
   * "Translate", its temperature starts at 0 (greedy, as translations decode)
   * unless the reader moved it, and its new tokens are capped by the
   * decoder's positions (less the start token).
   */
  setModel(model) {
    if (this.model !== model) this.stop();
    this.model = model;
    const encdec = Boolean(model?.config?.isEncoderDecoder);
    if (encdec && !this.encdec && !this.tempTouched) this._temp.value = '0';
    this.encdec = encdec;
    // A translation comes first (the views are drawn from it): Translate goes under the tokens.
    if (encdec && this._genBox.parentNode !== this.top) this.top.append(this._genBox);
    else if (!encdec && this._genBox.parentNode !== this.el) this.el.insertBefore(this._genBox, this._maskBox);
    this.relabel();
  }

  /** Shows the panels of `model` for the forward result `run` ({ ids, tokens }) of `text`. */
  async update(model, text, run, { byteLevel }) {
    const seq = ++this._seq;
    this.setModel(model);
    this.text = text;
    this.byteLevel = byteLevel;
    const causal = model.config.causal !== false;
    const encdec = this.encdec;
    this._nextBox.hidden = !causal;
    this._genBox.hidden = !causal;
    this._maskBox.hidden = causal || encdec;
    this._rolesBox.hidden = encdec;
    const L = model.config.maxPositions;
    this._maxNew.max = String(Math.max(1, encdec ? L - 1 : L - run.ids.length));
    if (Number(this._maxNew.value) > Number(this._maxNew.max)) this._maxNew.value = this._maxNew.max;
    this._showTokens(run);
    if (causal) await this._next(seq);
    else await this._mask(seq);
    if (!encdec) await this._roles(seq);
    else this.shown.roles = null;
  }

  _label(tok) {
    return readableToken(tok, this.byteLevel);
  }

  _showTokens(run) {
    const t = this.t;
    this._tokHead.textContent = t('mv.tokensN', { n: run.ids.length });
    this._tokList.setAttribute('aria-label', t('mv.tokensN', { n: run.ids.length }));
    const tokens = run.tokens ?? run.ids.map(String);
    this._tokList.replaceChildren(...run.ids.map((id, i) => {
      const shown = this._label(tokens[i]);
      return h('li', { class: 'al-mv-tok', title: t('mv.tokenTitle', { id, raw: tokens[i] }), 'aria-label': t('mv.tokenAria', { token: shown, id }), dataset: { id } }, shown);
    }));
    this.shown.tokens = run.ids.map((id, i) => ({ id, token: tokens[i], shown: this._label(tokens[i]) }));
  }

  async _next(seq) {
    const model = this.model;
    if (!model || model.config.causal === false) return;
    const temperature = this.temperature;
    const list = await model.nextTokens(this.text, { k: 10, temperature });
    if (seq !== this._seq || this.model !== model) return;
    const t = this.t;
    const top = list[0]?.prob || 1;
    this._nextList.setAttribute('aria-label', t('mv.next'));
    this._nextList.replaceChildren(...list.map((p) => {
      const shown = this._label(p.token);
      const bar = h('span', { class: 'al-mv-bar-fill' });
      bar.style.setProperty('width', `${Math.max(0.5, (100 * p.prob) / top).toFixed(1)}%`);
      return h('li', { class: 'al-mv-next-row', title: t('mv.tokenTitle', { id: p.id, raw: p.token }), dataset: { id: p.id } },
        h('span', { class: 'al-mv-next-tok', text: shown }),
        h('span', { class: 'al-mv-bar-track', 'aria-hidden': 'true' }, bar),
        h('span', { class: 'al-mv-next-p', text: fmtProb(p.prob) }));
    }));
    this.shown.next = { temperature, list: list.map((p) => ({ id: p.id, token: p.token, prob: p.prob })) };
  }

  /**
   * Streams model.generate after the sentence (an encoder-decoder: its
   * translation of the sentence), one token per animation frame, until done or
   * Stop; resolves with what it showed (shown.generated), or null when a
   * generation was already running.
   */
  async generate(model = this.model, text = this.text) {
    if (!model || this._gen) return null;
    if (model !== this.model) this.setModel(model);
    this.text = text;
    const t = this.t;
    const encdec = this.encdec;
    if (encdec) this._maxNew.max = String(Math.max(1, model.config.maxPositions - 1));
    const maxNewTokens = Math.max(1, Math.min(Number(this._maxNew.max) || 1, Math.floor(Number(this._maxNew.value) || 1)));
    const seed = Math.max(0, Math.floor(Number(this._seed.value) || 0));
    const temperature = this.temperature;
    const abort = new AbortController();
    const it = model.generate(this.text, { maxNewTokens, temperature, seed, signal: abort.signal });
    const gen = { it, abort, stopped: false, ids: [] };
    this._gen = gen;
    this.shown.generated = { ids: gen.ids, tokens: [], text: '', seed, temperature, maxNewTokens, state: 'running' };
    if (encdec) this._genOut.replaceChildren();
    else this._genOut.replaceChildren(h('span', { class: 'al-mv-gen-prompt', text: this.text }));
    this._genBtn.disabled = true;
    this._stopBtn.disabled = false;
    const t0 = performance.now();
    try {
      for (;;) {
        if (gen.stopped) break;
        const r = await it.next();
        if (r.done || gen.stopped) break;
        const { id, token, text } = r.value;
        gen.ids.push(id);
        this.shown.generated.tokens.push(token);
        this.shown.generated.text += text;
        this._genOut.append(h('span', { class: 'al-mv-gen-tok', title: t('mv.tokenTitle', { id, raw: token }), dataset: { id }, text }));
        this._genStatus.textContent = t('mv.genRunning', { n: gen.ids.length });
        await nextFrame();
      }
    } finally {
      const ms = performance.now() - t0;
      if (gen.stopped) await it.return?.();
      this._gen = null;
      this._genBtn.disabled = false;
      this._stopBtn.disabled = true;
      this.shown.generated.state = gen.stopped ? 'stopped' : 'done';
      this.shown.generated.ms = ms;
      this._genStatus.textContent = gen.stopped
        ? t('mv.genStopped', { n: gen.ids.length })
        : t('mv.genDone', { n: gen.ids.length, ms: ms.toFixed(0), rate: (gen.ids.length / Math.max(1e-3, ms / 1000)).toFixed(1) });
    }
    return this.shown.generated;
  }

  /** Stops a generation in flight (the tokens so far stay). */
  stop() {
    if (!this._gen) return;
    this._gen.stopped = true;
    this._gen.abort.abort();
  }

  async _mask(seq) {
    const model = this.model;
    const t = this.t;
    if (!this.text.includes(model.config.maskToken ?? '[MASK]')) {
      this._maskBody.replaceChildren(h('p', { class: 'al-mv-hint', text: t('mv.maskHint') }));
      this.shown.mask = [];
      return;
    }
    const out = await model.fillMask(this.text, { k: 10 });
    if (seq !== this._seq || this.model !== model) return;
    this._maskBody.replaceChildren(...out.map((m) => h('div', { class: 'al-mv-mask-at', dataset: { position: m.position } },
      h('p', { class: 'al-mv-mask-label', text: t('mv.maskAt', { i: m.position, token: model.config.maskToken ?? '[MASK]' }) }),
      h('ol', { class: 'al-mv-next', 'aria-label': t('mv.maskAt', { i: m.position, token: model.config.maskToken ?? '[MASK]' }) }, m.predictions.map((p) => h('li', { class: 'al-mv-next-row', title: t('mv.tokenTitle', { id: p.id, raw: p.token }), dataset: { id: p.id } },
        h('span', { class: 'al-mv-next-tok', text: this._label(p.token) }),
        h('span', { class: 'al-mv-next-p', text: fmtProb(p.prob) })))))));
    this.shown.mask = out;
  }

  async _roles(seq, force = false) {
    const model = this.model;
    const t = this.t;
    if (typeof model.headRoles !== 'function' || model.hasHeadRoles === false) {
      this._rolesBody.replaceChildren(h('p', { class: 'al-mv-hint', text: t('mv.rolesMissing') }));
      this.shown.roles = null;
      return;
    }
    // A large bidirectional model's scores cost several long forwards (the
    // induction sequences): they wait for the reader's click, so that the
    // predictions do not queue behind them. A causal model's take one.
    const causal = model.config.causal !== false;
    if (!force && !causal && model.config.parameters > AUTO_ROLES_PARAMETERS) {
      const btn = h('button', { type: 'button', class: 'al-btn al-mv-roles-run', text: t('mv.rolesRun'), onclick: () => this._roles(this._seq, true).catch((e) => this.onError(e)) });
      this._rolesBody.replaceChildren(h('p', { class: 'al-mv-hint', text: t('mv.rolesLarge', { params: (model.config.parameters / 1e6).toFixed(0) }) }), btn);
      this.shown.roles = null;
      return;
    }
    if (force) this._rolesBody.replaceChildren(h('p', { class: 'al-mv-hint', text: t('mv.rolesRunning') }));
    let r;
    const t0 = performance.now();
    try {
      r = await model.headRoles(this.text, causal ? { oneForward: true } : undefined);
    } catch (e) {
      if (seq !== this._seq) return;
      this._rolesBody.replaceChildren(h('p', { class: 'al-mv-hint', text: `${e.name}: ${e.message}` }));
      this.shown.roles = null;
      return;
    }
    if (seq !== this._seq || this.model !== model) return;
    const rows = r.heads.map((x) => {
      let role = ROLES[0];
      for (const k of ROLES) if (x[k] - r.chance[k] > x[role] - r.chance[role]) role = k;
      return { ...x, role };
    });
    rows.sort((a, b) => ROLES.indexOf(a.role) - ROLES.indexOf(b.role) || b[b.role] - a[a.role] || a.layer - b.layer || a.head - b.head);
    const cols = ['mv.col.layer', 'mv.col.head', 'mv.col.role', ...ROLES.map((k) => `mv.role.${k}`)];
    const chance = Object.fromEntries(ROLES.map((k) => [k, fmt(r.chance[k], 3)]));
    const table = h('table', { class: 'al-mv-roles-table' },
      h('caption', { text: t('mv.rolesCaption', chance) }),
      h('thead', null, h('tr', null, cols.map((k) => h('th', { scope: 'col', text: t(k) })))),
      h('tbody', null, rows.map((x) => h('tr', { dataset: { layer: x.layer, head: x.head, role: x.role } },
        h('td', { text: String(x.layer) }), h('td', { text: String(x.head) }), h('th', { scope: 'row', text: t(`mv.role.${x.role}`) }),
        ROLES.map((k) => h('td', { class: k === x.role ? 'al-mv-strong' : null, text: fmt(x[k], 3) }))))));
    this._rolesBody.replaceChildren(table);
    // ms: the call as the page waited for it (in the worker for a folder's model); forwards: its passes.
    this.shown.roles = { rows, chance: r.chance, ms: performance.now() - t0, forwards: r.forwards };
  }
}

function fmtProb(p) {
  return p >= 0.001 ? `${(100 * p).toFixed(1)}%` : p.toExponential(1);
}

function debounced(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}
