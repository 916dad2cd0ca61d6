// Page state: one flat object, a schema that validates every key, and the
// permalink (URL hash) codec. The hash holds only values that differ from the
// defaults: #E=256&H=4&mask=causal&text=… . The parser is strict: it rejects
// oversized hashes, unknown or repeated keys, malformed escapes and values
// outside their range, naming the first problem, and the page then keeps its
// current (or default) state.

export const MAX_HASH_LENGTH = 2048;

const int = (min, max) => ({ type: 'int', min, max });
const num = (min, max) => ({ type: 'num', min, max });
const oneOf = (...values) => ({ type: 'enum', values });
const bool = () => ({ type: 'bool' });
const str = (max) => ({ type: 'str', max });

export const SCHEMA = {
  lang: oneOf('en', 'zh'),
  theme: oneOf('auto', 'light', 'dark'),
  text: str(300),
  text2: str(300),
  B: int(1, 4),
  L: int(0, 512),
  E: int(1, 1024),
  H: int(1, 64),
  dk: int(1, 512),
  dv: int(1, 512),
  seed: int(0, 4294967295),
  mask: oneOf('none', 'padding', 'causal', 'both'),
  scale: bool(),
  T: num(0.05, 5),
  pe: bool(),
  backend: oneOf('wasm', 'wasm-scalar', 'webgpu'),
  d1: int(1, 1024),
  b: int(0, 3),
  mask5: oneOf('none', 'padding', 'causal', 'both'),
  b5: int(0, 3),
  step3: int(1, 4),
  peBase: num(1.5, 1e6),
  peN: int(1, 512),
  peDims: str(40),
  drop: num(0, 0.9),
  train: bool(),
  flow: int(0, 20),
  kv11: oneOf('8', '4', '2', '1'),
  win11: int(1, 64),
  cap11: int(1, 100),
  w1: oneOf('random', 'learned'),
  w2: oneOf('random', 'learned'),
  w3: oneOf('random', 'learned'),
  w4: oneOf('random', 'learned'),
  w5: oneOf('random', 'learned'),
  w6: oneOf('random', 'learned'),
  w7: oneOf('random', 'learned'),
  w8: oneOf('random', 'learned'),
  w9: oneOf('random', 'learned'),
  hd: int(0, 63),
  ch: str(40),
  lm: oneOf('auto', 'en', 'zh'),
  hm: oneOf('lang', 'induction'),
};

export const DEFAULTS = Object.freeze({
  lang: 'en',
  theme: 'auto',
  text: 'attention is all you need',
  text2: 'heads look at words',
  B: 2,
  L: 0,
  E: 512,
  H: 8,
  dk: 64,
  dv: 64,
  seed: 0,
  mask: 'none',
  scale: true,
  T: 1,
  pe: true,
  backend: 'wasm',
  d1: 8,
  b: 0,
  mask5: 'both',
  b5: 1,
  step3: 4,
  peBase: 10000,
  peN: 64,
  peDims: '0,1,8,9',
  drop: 0.1,
  train: false,
  flow: 0,
  kv11: '2',
  win11: 16,
  cap11: 5,
  w1: 'learned',
  w2: 'learned',
  w3: 'learned',
  w4: 'learned',
  w5: 'learned',
  w6: 'learned',
  w7: 'learned',
  w8: 'learned',
  w9: 'learned',
  hd: 0,
  ch: '',
  lm: 'auto',
  hm: 'lang',
});

/**
 * Each language's own sentences (issue 35): English ones for English, a line of Tang poetry for
 * 中文, which the shipped Tang-poem model reads. DEFAULTS holds the English ones; a state of
 * another language has that language's as its defaults (defaultsFor), in the permalink too.
 */
export const DEFAULT_TEXTS = Object.freeze({
  en: Object.freeze({ text: DEFAULTS.text, text2: DEFAULTS.text2 }),
  zh: Object.freeze({ text: '床前明月光，疑是地上霜', text2: '举头望明月' }),
});

/** The defaults of a page in `lang`: DEFAULTS with that language and its sentences. */
export function defaultsFor(lang) {
  return { ...DEFAULTS, lang, ...(DEFAULT_TEXTS[lang] ?? DEFAULT_TEXTS.en) };
}

/**
 * The patch that switches `state` to `lang`: each sentence the reader left at its language's
 * default becomes the new language's; a sentence the reader typed stays.
 */
export function languagePatch(state, lang) {
  const patch = { lang };
  const from = DEFAULT_TEXTS[state.lang] ?? DEFAULT_TEXTS.en;
  const to = DEFAULT_TEXTS[lang] ?? DEFAULT_TEXTS.en;
  for (const key of ['text', 'text2']) if (state[key] === from[key]) patch[key] = to[key];
  return patch;
}

/**
 * The weights switch of each chapter (w1 … w9): 'learned' (the shipped model of the page's
 * language, the default) or 'random' (the seeded weights the controls set). RANDOM_WEIGHTS is
 * the patch that puts every chapter on its random view.
 */
export const WEIGHT_KEYS = Object.freeze(['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9']);
export const RANDOM_WEIGHTS = Object.freeze(Object.fromEntries(WEIGHT_KEYS.map((k) => [k, 'random'])));

/** Validates one value; returns { value } or { error }. Strings from the hash are parsed first. */
export function checkValue(key, raw) {
  const s = SCHEMA[key];
  if (!s) return { error: err('unknown', { key }) };
  switch (s.type) {
    case 'int': {
      const n = typeof raw === 'number' ? raw : /^-?\d+$/.test(String(raw).trim()) ? Number(raw) : NaN;
      if (!Number.isInteger(n)) return { error: err('int', { key, got: clip(raw) }) };
      if (n < s.min || n > s.max) return { error: err('range', { key, min: s.min, max: s.max, got: n }) };
      return { value: n };
    }
    case 'num': {
      const n = typeof raw === 'number' ? raw : /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(String(raw).trim()) ? Number(raw) : NaN;
      if (!Number.isFinite(n)) return { error: err('num', { key, got: clip(raw) }) };
      if (n < s.min || n > s.max) return { error: err('range', { key, min: s.min, max: s.max, got: n }) };
      return { value: n };
    }
    case 'enum':
      if (!s.values.includes(raw)) return { error: err('enum', { key, values: s.values.join(', '), got: clip(raw) }) };
      return { value: raw };
    case 'bool':
      if (raw === true || raw === '1' || raw === 'true') return { value: true };
      if (raw === false || raw === '0' || raw === 'false') return { value: false };
      return { error: err('bool', { key, got: clip(raw) }) };
    case 'str': {
      const v = String(raw);
      if ([...v].length > s.max) return { error: err('long', { key, max: s.max }) };
      // eslint-disable-next-line no-control-regex
      if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v)) return { error: err('control', { key }) };
      return { value: v };
    }
    default:
      return { error: err('unknown', { key }) };
  }
}

// English fallbacks; the page shows the catalogue's 'err.<key>' text instead.
const ENGLISH = {
  unknown: 'unknown setting "{key}"',
  int: '{key} must be an integer, got "{got}"',
  num: '{key} must be a number, got "{got}"',
  range: '{key} must be between {min} and {max}, got {got}',
  enum: '{key} must be one of {values}, got "{got}"',
  bool: '{key} must be 1 or 0, got "{got}"',
  long: '{key} is longer than {max} characters',
  control: '{key} contains control characters',
  tooLong: "the link's settings are too long ({length} characters; at most {max})",
  empty: 'empty setting (two "&" in a row)',
  form: '"{part}" is not of the form key=value',
  escape: 'the value of "{key}" is not correctly %-encoded',
  twice: '"{key}" is given twice',
};

/** A structured error: { key, params, message } (message in English). */
function err(key, params) {
  const message = ENGLISH[key].replace(/\{(\w+)\}/g, (m, k) => String(params[k]));
  return { key, params, message };
}

function clip(v) {
  const s = String(v);
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}

/**
 * State → hash (without '#'): only non-default keys, in schema order. The sentences are compared
 * with the defaults of the state's language, so a sentence the reader typed is always kept.
 */
export function encodeHash(state) {
  const parts = [];
  const defaults = { ...defaultsFor(state.lang ?? DEFAULTS.lang), lang: DEFAULTS.lang };
  for (const key of Object.keys(SCHEMA)) {
    const v = state[key];
    if (v === undefined || v === defaults[key]) continue;
    const s = SCHEMA[key].type === 'bool' ? (v ? '1' : '0') : String(v);
    parts.push(`${key}=${encodeURIComponent(s)}`);
  }
  return parts.join('&');
}

/**
 * Hash → { state } (a complete state: defaults overridden by the hash) or
 * { error } naming the first problem. An empty hash gives the defaults. A sentence the hash
 * does not hold is the default of the hash's language, or of `lang` (the reader's, when the
 * hash names none).
 */
export function decodeHash(hash, lang = DEFAULTS.lang) {
  let s = String(hash ?? '');
  if (s.startsWith('#')) s = s.slice(1);
  if (s.length > MAX_HASH_LENGTH) return { error: err('tooLong', { length: s.length, max: MAX_HASH_LENGTH }) };
  const seen = new Set();
  const state = { ...DEFAULTS };
  const finish = () => {
    const l = seen.has('lang') ? state.lang : lang;
    const d = defaultsFor(l);
    state.lang = l;
    for (const key of ['text', 'text2']) if (!seen.has(key)) state[key] = d[key];
    return { state };
  };
  if (s === '') return finish();
  for (const part of s.split('&')) {
    if (part === '') return { error: err('empty', {}) };
    const eq = part.indexOf('=');
    if (eq <= 0) return { error: err('form', { part: clip(part) }) };
    const key = part.slice(0, eq);
    let raw;
    try {
      raw = decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      return { error: err('escape', { key: clip(key) }) };
    }
    if (!Object.prototype.hasOwnProperty.call(SCHEMA, key)) return { error: err('unknown', { key: clip(key) }) };
    if (seen.has(key)) return { error: err('twice', { key }) };
    seen.add(key);
    const r = checkValue(key, raw);
    if (r.error) return { error: r.error };
    state[key] = r.value;
  }
  return finish();
}

/** A tiny observable store. subscribe(fn(state, changedKeys)) → unsubscribe. */
export function createStore(initial) {
  let state = { ...initial };
  const subs = new Set();
  return {
    get: () => state,
    set(patch) {
      const changed = [];
      for (const [k, v] of Object.entries(patch)) {
        if (state[k] !== v) changed.push(k);
      }
      if (!changed.length) return changed;
      state = { ...state, ...patch };
      for (const fn of subs) fn(state, changed);
      return changed;
    },
    subscribe(fn) {
      subs.add(fn);
      return () => subs.delete(fn);
    },
  };
}
