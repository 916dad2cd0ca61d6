// The base of every attention-lab element: an open shadow root styled with
// constructable stylesheets, lazy start (IntersectionObserver: nothing is
// loaded or computed until the element comes near the viewport; the `eager`
// attribute starts at once), batched re-renders on attribute changes, and the
// shared library instance. Safe to import where HTMLElement does not exist
// (Node, SSR): the class then extends a stub and is never defined.
import { widgetSheets, WIDGET_CSS, HOST_CSS } from '../lib/styles.js';
import { translator, normalizeLang } from '../lib/i18n.js';
import { getLab } from '../lib/lab-instance.js';
import { h } from '../lib/dom.js';
import { onThemeChange } from '../lib/theme-watch.js';

export const HTMLElementBase = typeof HTMLElement === 'function' ? HTMLElement : class {};

export class AttentionLabElement extends HTMLElementBase {
  constructor() {
    super();
    this._started = false;
    this._renderQueued = false;
    this._root = this.attachShadow({ mode: 'open' });
    const sheets = widgetSheets();
    if (sheets) this._root.adoptedStyleSheets = [sheets.host, sheets.widget, ...this.constructor.extraSheets()];
    else this._root.append(h('style', null, HOST_CSS + WIDGET_CSS)); // only without constructable sheets
    this._status = h('div', { class: 'al-status', role: 'status', 'aria-live': 'polite' });
    this._error = h('div', { class: 'al-error', role: 'alert', hidden: true });
    this._body = h('div', { class: 'al-body' });
    this._rootEl = h('div', { class: 'al-root', part: 'root' }, this._status, this._error, this._body);
    this._root.append(this._rootEl);
  }

  /** Extra CSSStyleSheets for a subclass. */
  static extraSheets() {
    return [];
  }

  connectedCallback() {
    // Canvases are painted with the --al-* values of draw time: repaint them
    // when the site switches theme (lib/theme-watch.js).
    this._unwatchTheme ??= onThemeChange(() => {
      if (this._started) this._repaint?.();
    });
    if (this._started) return;
    if (this.hasAttribute('eager') || typeof IntersectionObserver !== 'function') {
      this._start();
      return;
    }
    this._io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        this._io.disconnect();
        this._io = null;
        this._start();
      }
    }, { rootMargin: '200px 0px' });
    this._io.observe(this);
  }

  disconnectedCallback() {
    this._unwatchTheme?.();
    this._unwatchTheme = null;
    this._io?.disconnect();
    this._io = null;
    this._onDisconnect?.();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (oldValue === newValue) return;
    if (name === 'lang') this._relabel?.();
    this.requestRender();
  }

  /** True once the element has started (came into view, or `eager`). */
  get started() {
    return this._started;
  }

  /** Resolves after the next render. */
  get updateComplete() {
    return this._pending ?? Promise.resolve();
  }

  async _start() {
    if (this._started) return;
    this._started = true;
    this.dataset.state = 'starting';
    this._build();
    this.requestRender();
  }

  /** Batches attribute/property changes into one render. */
  requestRender() {
    if (!this._started || this._renderQueued) return this._pending;
    this._renderQueued = true;
    this._pending = Promise.resolve().then(async () => {
      this._renderQueued = false;
      try {
        this._error.hidden = true;
        await this._render();
        this.dataset.state = 'ready';
        this.dispatchEvent(new CustomEvent('al-render', { bubbles: true, composed: true }));
      } catch (e) {
        this._showError(e);
        this.dataset.state = 'error';
      }
    });
    return this._pending;
  }

  _showError(e) {
    this._error.hidden = false;
    this._error.textContent = this.t('ex.error', { message: `${e && e.name ? e.name + ': ' : ''}${e && e.message ? e.message : String(e)}` });
  }

  /** The shared library instance ('backend' attribute: cpu (default) | auto | wasm | wasm-scalar | webgpu). */
  async lab() {
    this._status.textContent = this.t('ex.loading');
    try {
      return await getLab(this.getAttribute('backend') || 'cpu');
    } finally {
      this._status.textContent = '';
    }
  }

  /** Translator for the element's language (lang attribute, else the page's). */
  get t() {
    const own = this.getAttribute('lang') || this.closest?.('[lang]')?.getAttribute('lang') || 'en';
    const lang = normalizeLang(own);
    if (this._t?.lang !== lang) {
      // An element's own catalogue: the static `messages` of its class.
      const extra = /** @type {any} */ (this.constructor).messages;
      this._t = extra ? translator(lang, extra) : translator(lang);
    }
    return this._t;
  }

  intAttr(name, fallback, min = 1, max = 1 << 30) {
    const v = this.getAttribute(name);
    if (v === null || v.trim() === '') return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new RangeError(`<${this.localName}> ${name}="${v}": expected an integer in [${min}, ${max}]`);
    return n;
  }

  numAttr(name, fallback) {
    const v = this.getAttribute(name);
    if (v === null || v.trim() === '') return fallback;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new RangeError(`<${this.localName}> ${name}="${v}": expected a number`);
    return n;
  }

  boolAttr(name) {
    const v = this.getAttribute(name);
    return v !== null && v !== 'false' && v !== '0';
  }

  _build() {}

  async _render() {}
}
