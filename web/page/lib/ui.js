// Building blocks the chapters share: translated text that follows language
// switches, "try this" boxes, formulas, error boxes and figure rows.
import { h, setRich } from '../../components/lib/dom.js';

/** Keeps (element, key, params) triples so a language switch can re-fill them. */
export class TextRegistry {
  constructor(getT) {
    this.getT = getT;
    this.items = new Map();
  }

  /** Sets el's rich text from the catalogue and remembers it. */
  bind(el, key, params) {
    el.dataset.i18nKey = key;
    this.items.set(el, { key, params });
    setRich(el, this.getT()(key, params));
    return el;
  }

  applyAll() {
    const t = this.getT();
    for (const [el, it] of this.items) {
      if (!el.isConnected) {
        this.items.delete(el);
        continue;
      }
      setRich(el, t(it.key, it.params));
    }
    for (const el of document.querySelectorAll('[data-i18n]')) setRich(el, t(el.dataset.i18n));
    for (const el of document.querySelectorAll('[data-i18n-aria]')) el.setAttribute('aria-label', t(el.dataset.i18nAria));
  }
}

/** Formula helpers: f.frac(num, den), f.sup(x), f.sub(x), f.v('Q') (a variable). */
export const f = {
  frac: (num, den) => h('span', { class: 'frac' }, h('span', { class: 'frac-num' }, num), h('span', { class: 'frac-den' }, den)),
  sup: (x) => h('sup', null, x),
  sub: (x) => h('sub', null, x),
  subsup: (sub, sup) => h('span', { class: 'subsup' }, h('sup', null, sup), h('sub', null, sub)),
  v: (x) => h('var', null, x),
  op: (x) => h('span', { class: 'op' }, x),
  fn: (x) => h('span', { class: 'fn' }, x),
};

/**
 * A displayed formula. Parts flow as inline text, so <sup>/<sub> sit above
 * and below their base ("X W^Q", not three matrices on one baseline); a
 * h('span', { class: 'br' }) part starts a new line.
 */
export function formula(...parts) {
  const lines = [[]];
  for (const p of parts.flat()) {
    if (p instanceof Element && p.classList.contains('br')) lines.push([]);
    else lines[lines.length - 1].push(p);
  }
  return h('div', { class: 'formula', role: 'math' }, lines.map((l) => h('span', { class: 'formula-line' }, l)));
}

export function errorBox() {
  const el = h('div', { class: 'al-error chapter-error', role: 'alert', hidden: true });
  return {
    el,
    show(lead, err) {
      el.hidden = false;
      el.replaceChildren(h('strong', null, lead), ' ', h('span', { class: 'error-message' }, `${err && err.name ? err.name + ': ' : ''}${err && err.message ? err.message : String(err)}`));
    },
    hide() {
      el.hidden = true;
      el.replaceChildren();
    },
  };
}

export function codeBlock(text) {
  return h('pre', { class: 'code' }, h('code', null, text));
}

/** A row of figures that wraps. */
export function figRow(...children) {
  return h('div', { class: 'fig-row' }, ...children);
}

/** Token chips (text only, never HTML). */
export function tokenChips(tokens, lengths) {
  return h('ul', { class: 'tokens', role: 'list' }, tokens.map((tok, i) => h('li', { class: `token${lengths !== undefined && i >= lengths ? ' token-pad' : ''}` }, h('span', { class: 'token-i' }, String(i)), h('span', { class: 'token-t' }, tok))));
}

/**
 * The one line a chapter shows when most of the sentence is outside its model's vocabulary
 * (lib/learned.js vocabularyOffer), with a button that picks the model that reads it.
 * → { el, show(t, offer | null, modelName) }; pick(model) runs on the button.
 */
export function vocabularyLine(pick) {
  const text = h('span');
  const btn = h('button', { type: 'button', class: 'al-btn al-btn-small' });
  const el = h('p', { class: 'vocab-offer', hidden: true }, text, ' ', btn);
  let model = null;
  btn.addEventListener('click', () => model && pick(model));
  return {
    el,
    show(t, offer, modelName) {
      el.hidden = !offer;
      if (!offer) return;
      model = offer.model;
      el.dataset.model = offer.model;
      text.textContent = t('page.vocab.offer', { unknown: offer.unknown, chars: offer.chars, model: modelName });
      btn.textContent = t('page.vocab.use', { model: t(`ch4.model.${offer.model}`) });
    },
  };
}
