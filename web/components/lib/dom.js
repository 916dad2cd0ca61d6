// Small DOM helpers. Text from readers and pages always goes in through
// textContent, never innerHTML.

/**
 * h('div', { class: 'x', 'aria-label': '…', onclick: fn }, child, 'text', …)
 * Attributes with value false/null/undefined are skipped; `dataset` takes an
 * object; functions whose name starts with "on" become listeners.
 */
export function h(tag, attrs, ...children) {
  const svg = tag.startsWith('svg:');
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * Fills el with a catalogue string: `backticks` become <code>, **stars**
 * become <strong>; everything else is text. Catalogue strings are ours, but
 * this keeps even them out of innerHTML.
 */
export function setRich(el, str) {
  el.replaceChildren();
  const re = /(`[^`]+`|\*\*[^*]+\*\*)/g;
  let last = 0;
  for (const m of String(str).matchAll(re)) {
    if (m.index > last) el.append(document.createTextNode(str.slice(last, m.index)));
    const tok = m[0];
    if (tok[0] === '`') el.append(h('code', null, tok.slice(1, -1)));
    else el.append(h('strong', null, tok.slice(2, -2)));
    last = m.index + tok.length;
  }
  if (last < str.length) el.append(document.createTextNode(str.slice(last)));
}

export function shapeText(shape) {
  return `[${shape.join(',')}]`;
}

/** Formats a number compactly for read-outs. */
export function fmt(v, digits = 4) {
  if (v === undefined || v === null) return '—';
  if (Number.isNaN(v)) return 'NaN';
  if (v <= -1e8) return '−1e9';
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '−∞';
  if (v === 0) return '0';
  const a = Math.abs(v);
  const s = a >= 1e4 || a < 1e-3 ? v.toExponential(2) : v.toFixed(digits);
  return s.replace('-', '−');
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// Computed custom properties, cached per root (document or shadow root) for
// the rest of the current task: a redraw of many maps reads styles once.
const varCache = new Map();
let clearScheduled = false;

/** Forgets the cached custom properties (after a theme switch). */
export function clearCssVarCache() {
  varCache.clear();
}

/** Current value of a CSS custom property on el (falls back to `fallback`). */
export function cssVar(el, name, fallback) {
  const root = el.getRootNode ? el.getRootNode() : document;
  let vars = varCache.get(root);
  if (!vars) {
    vars = { style: getComputedStyle(el), values: new Map() };
    varCache.set(root, vars);
    if (!clearScheduled) {
      clearScheduled = true;
      setTimeout(() => {
        varCache.clear();
        clearScheduled = false;
      }, 0);
    }
  }
  if (!vars.values.has(name)) vars.values.set(name, vars.style.getPropertyValue(name).trim());
  return vars.values.get(name) || fallback;
}
