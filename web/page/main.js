// The tutorial page: state and permalink, shared controls, language and
// theme, and a scheduler that re-renders the chapters a change affects —
// the visible ones first, the others right after, one at a time.
import { translator, normalizeLang } from '../components/lib/i18n.js';
import { adoptWidgetStyles } from '../components/lib/styles.js';
import { getLab, webgpuAvailable } from '../components/lib/lab-instance.js';
import { Heatmap } from '../components/lib/heatmap.js';
import { h, fmt, setRich } from '../components/lib/dom.js';
import { motionStats, reducedMotion } from '../components/lib/motion.js';
import { PAGE_MESSAGES } from './lib/messages.js';
import { createStore, decodeHash, defaultsFor, encodeHash, languagePatch } from './lib/state.js';
import { buildControls } from './lib/controls.js';
import { TextRegistry, errorBox, vocabularyLine } from './lib/ui.js';
import { ObjectCache, deriveTokens } from './lib/model.js';
import { CHAPTERS, chapterMessages, checkRegistry, titleKey } from './chapters/registry.js';
import { pendingModels } from './lib/learned.js';

checkRegistry(CHAPTERS);
const CATALOGUES = [chapterMessages(CHAPTERS), PAGE_MESSAGES];
const $ = (id) => document.getElementById(id);
const root = document.documentElement;

// ---- state ---------------------------------------------------------------
function initialState() {
  const hash = location.hash;
  const isAnchor = /^#[\w-]+$/.test(hash) && !hash.includes('=') && (CHAPTERS.some((c) => c.id === hash.slice(1)) || document.getElementById(hash.slice(1)));
  // Without lang in the link the reader's language is the browser's, with its sentences.
  const lang = normalizeLang(navigator.language);
  const r = !hash || hash === '#' || isAnchor ? { state: defaultsFor(lang) } : decodeHash(hash, lang);
  const state = r.state ?? defaultsFor(lang);
  return { state, error: r.error ?? null };
}
const initial = initialState();
let hashError = initial.error;
const startState = initial.state;
const store = createStore(startState);

let t = translator(store.get().lang, ...CATALOGUES);
const getT = () => t;
const texts = new TextRegistry(getT);
const heatmaps = new Set();
const objects = new ObjectCache();
const cache = {};

// ---- shared context given to chapters -------------------------------------
const status = { forwardMs: null, forwardBackend: null, diff: null, diffState: 'none' };
const ctx = {
  get t() {
    return t;
  },
  state: () => store.get(),
  set: (patch) => store.set(patch),
  texts,
  objects,
  cache,
  /** The lab of the selected backend (falls back to wasm when it fails). */
  lab: () => currentLab,
  labFor: (name) => getLab(name),
  heatmap(opts) {
    const m = new Heatmap({ ...opts, t });
    heatmaps.add(m);
    return m;
  },
  forgetHeatmap(m) {
    heatmaps.delete(m);
  },
  text(tag, key, attrs, params) {
    return texts.bind(h(tag, attrs ?? null), key, params);
  },
  /** A "Try this" box: items are catalogue keys, or elements (e.g. ctx.text('li', key, null, params) for live numbers). */
  tryThis(items) {
    return h('aside', { class: 'try' }, texts.bind(h('h3', null), 'page.tryThis'), h('ul', null, items.map((k) => (typeof k === 'string' ? texts.bind(h('li'), k) : k))));
  },
  reportForward(ms, backend) {
    status.forwardMs = ms;
    status.forwardBackend = backend;
    renderStatus();
  },
  reportDiff(diff, pair, state = 'done') {
    status.diff = diff;
    status.pair = pair;
    status.diffState = state;
    renderStatus();
  },
  availableLabs: () => availableLabs,
  /**
   * Called by a learned view while its chapter updates: { model, unknown, chars } when most of
   * the sentence is outside `lang`'s model's vocabulary (lib/learned.js vocabularyOffer), or
   * null. The chapter then shows one line that offers the model that reads it.
   */
  offerModel(offer, lang) {
    if (updating) updating.offer = offer ? { offer, lang } : null;
  },
  /** Re-renders the chapters that depend on these keys (state unchanged). */
  invalidate(keys) {
    markDirty(keys);
    schedule();
  },
};

// ---- DOM -------------------------------------------------------------------
adoptWidgetStyles(document);
const form = $('controls-form');
const controls = buildControls(form, store, getT);
// Each registered chapter gets a table-of-contents entry and a <section>
// (numbered in registry order), built here rather than written in index.html.
const tocList = $('toc-list');
const mainEl = $('main');
const runners = CHAPTERS.map((c, k) => {
  const key = titleKey(c.id);
  tocList.append(h('li', null, h('a', { href: `#${c.id}`, 'data-i18n': key })));
  const body = h('div', { class: 'chapter-body' });
  const section = h('section', { class: 'chapter', id: c.id, 'aria-labelledby': `${c.id}-title` },
    h('h2', { id: `${c.id}-title`, tabindex: '-1' }, h('span', { class: 'ch-num' }, String(k + 1)), h('span', { 'data-i18n': key })),
    body);
  mainEl.append(section);
  const err = errorBox();
  body.before(err.el);
  const vocab = vocabularyLine((model) => store.set({ lm: model }));
  body.before(vocab.el);
  const ch = c.module;
  const inst = ch.mount(ctx, body, section);
  return { id: c.id, ch, inst, section, err, vocab, offer: null, dirty: true, running: null, visible: false };
});

if (typeof IntersectionObserver === 'function') {
  const io = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const r = runners.find((x) => x.section === e.target);
      if (r) r.visible = e.isIntersecting;
      if (e.isIntersecting && r?.dirty) schedule();
    }
  }, { rootMargin: '200px 0px' });
  for (const r of runners) io.observe(r.section);
}

function applyLanguage() {
  const lang = store.get().lang;
  t = translator(lang, ...CATALOGUES);
  root.lang = lang === 'zh' ? 'zh-CN' : 'en';
  document.title = t('page.title');
  texts.applyAll();
  controls.relabel(t);
  renderInfo();
  for (const m of heatmaps) {
    if (!m.el.isConnected) heatmaps.delete(m);
    else m.setMessages(t);
  }
  for (const r of runners) {
    r.inst.setMessages?.(t);
    showOffer(r);
  }
  $('lang').value = lang;
  for (const o of $('theme').options) o.textContent = t(`page.theme.${o.value}`);
  renderStatus();
}

function applyTheme() {
  const theme = store.get().theme;
  root.dataset.theme = theme;
  $('theme').value = theme;
}

// ---- status line -----------------------------------------------------------
let loadState = 'loading';
let loadError = null;
function renderInfo() {
  const tk = deriveTokens(store.get());
  controls.info(t, tk.raw.map((r) => r.length), tk.L);
}

function renderStatus() {
  const el = $('status');
  if (loadState === 'loading') {
    el.className = 'status';
    el.textContent = t('page.loading');
  } else if (loadState === 'error') {
    el.className = 'status error';
    setRich(el, t('page.loadError', { message: loadError }));
  } else {
    el.className = 'status ok';
    el.textContent = t('page.ready', { backend: t(`ctl.backend.${currentLab.backend}`), arch: currentLab.kernelArch ?? '—' });
  }
  const perf = $('perf');
  const lines = [];
  lines.push(status.forwardMs === null ? t('ctl.noForward') : t('ctl.lastForward', { ms: status.forwardMs.toFixed(2), backend: t(`ctl.backend.${status.forwardBackend}`) }));
  if (status.diffState === 'pending') lines.push(t('ctl.diffPending'));
  else if (status.diffState === 'skipped') lines.push(t('ctl.diffSkipped'));
  else if (status.diffState === 'done') lines.push(t('ctl.diff', { diff: status.diff === 0 ? '0' : status.diff.toExponential(2), pair: status.pair }));
  while (perf.children.length < lines.length) perf.append(h('span'));
  while (perf.children.length > lines.length) perf.lastChild.remove();
  lines.forEach((l, k) => {
    if (perf.children[k].textContent !== l) perf.children[k].textContent = l;
  });
  perf.dataset.forwardMs = status.forwardMs ?? '';
  perf.dataset.diff = status.diff ?? '';
}

// ---- scheduler -------------------------------------------------------------
let generation = 0;
let updating = null; // the runner whose update is running (chapters update one at a time)
let firstMarked = false;
let scheduled = false;
let settleWaiters = [];

function markDirty(changed) {
  const all = changed.some((k) => k === 'lang' || k === 'backend' || k === 'lm');
  for (const r of runners) {
    if (all || r.ch.deps === '*' || changed.some((k) => r.ch.deps.includes(k))) r.dirty = true;
  }
}

function schedule() {
  if (scheduled || !currentLab) return;
  scheduled = true;
  queueMicrotask(() => {
    scheduled = false;
    renderPass();
  });
}

async function runChapter(r) {
  while (r.running) await r.running;
  r.dirty = false;
  const state = store.get();
  r.running = (async () => {
    const t0 = performance.now();
    r.offer = null;
    updating = r;
    try {
      await r.inst.update(ctx, state);
      r.section.dataset.ms = (performance.now() - t0).toFixed(1);
      r.err.hide();
      r.section.dataset.state = 'ok';
    } catch (e) {
      r.err.show(t('err.chapter'), e);
      r.section.dataset.state = 'error';
    }
    if (updating === r) updating = null;
    showOffer(r);
    r.section.dataset.rendered = 'true';
    if (!firstMarked && r.visible) {
      firstMarked = true;
      performance.mark('attention-lab:first-chapter');
      root.dataset.interactive = 'true';
    }
  })();
  await r.running;
  r.running = null;
}

async function renderPass() {
  const gen = ++generation;
  root.dataset.busy = 'true';
  const order = [...runners.filter((r) => r.visible), ...runners.filter((r) => !r.visible)];
  for (const r of order) {
    if (gen !== generation) return;
    if (!r.dirty) continue;
    await runChapter(r);
    if (!r.visible) await new Promise((res) => setTimeout(res, 0));
  }
  if (gen !== generation) return;
  if (runners.some((r) => r.dirty)) return schedule();
  delete root.dataset.busy;
  if (root.dataset.ready !== 'true') performance.mark('attention-lab:all-chapters');
  root.dataset.ready = 'true';
  const w = settleWaiters;
  settleWaiters = [];
  w.forEach((fn) => fn());
}

function showOffer(r) {
  r.vocab.show(t, r.offer?.offer ?? null, r.offer ? t(`ch4.model.${r.offer.lang}`) : '');
}

/** Resolves when every chapter has rendered the current state. */
function rendered() {
  if (!root.dataset.busy && root.dataset.ready === 'true' && !runners.some((r) => r.dirty || r.running)) return Promise.resolve();
  return new Promise((res) => settleWaiters.push(res));
}

/**
 * rendered(), and then, while a chapter's learned view is waiting for its model (lib/learned.js),
 * the arrival and the re-render it causes. The page itself never waits for a model: ready is set
 * when the chapters have drawn their loading state.
 */
async function settled() {
  for (;;) {
    await rendered();
    const pending = pendingModels();
    if (!pending) return;
    await pending;
  }
}

// ---- permalink -------------------------------------------------------------
let hashTimer = 0;
function writeHash() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => {
    const s = encodeHash(store.get());
    const url = `${location.pathname}${location.search}${s ? '#' + s : ''}`;
    if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, '', url);
  }, 120);
}

function showBanner(message) {
  const b = $('banner');
  if (!message) {
    b.hidden = true;
    b.replaceChildren();
    return;
  }
  b.hidden = false;
  b.replaceChildren(h('span', null, message), h('button', { type: 'button', class: 'al-btn al-btn-small banner-close', 'aria-label': '×', onclick: () => showBanner(null) }, '×'));
}

function showHashError() {
  if (!hashError) return;
  showBanner(t('page.hashError', { message: t(`err.${hashError.key}`, hashError.params) }));
}

window.addEventListener('hashchange', () => {
  const hash = location.hash;
  if (hash.length > 1 && !hash.includes('=') && document.getElementById(decodeURIComponent(hash.slice(1)))) return;
  const r = decodeHash(hash, store.get().lang);
  if (r.error) {
    hashError = r.error;
    showHashError();
    return;
  }
  hashError = null;
  showBanner(null);
  store.set(r.state);
});

$('permalink').addEventListener('click', async () => {
  clearTimeout(hashTimer);
  const s = encodeHash(store.get());
  const url = `${location.origin}${location.pathname}${s ? '#' + s : ''}`;
  history.replaceState(null, '', url);
  const out = $('permalink-out');
  out.value = url;
  out.hidden = false;
  let copied = false;
  try {
    await navigator.clipboard.writeText(url);
    copied = true;
  } catch {
    copied = false;
  }
  $('permalink-msg').textContent = copied ? t('page.permalinkCopied') : t('page.permalinkShown', { url: '' });
  out.select?.();
});

$('reset').addEventListener('click', () => {
  store.set({ ...defaultsFor(store.get().lang), theme: store.get().theme });
});

// A sentence left at its language's default becomes the new language's; a typed one stays.
$('lang').addEventListener('change', (e) => store.set(languagePatch(store.get(), e.target.value)));
$('theme').addEventListener('change', (e) => store.set({ theme: e.target.value }));

// TOC: scroll without replacing the settings hash.
for (const a of tocList.querySelectorAll('a')) {
  a.addEventListener('click', (e) => {
    e.preventDefault();
    const id = a.getAttribute('href').slice(1);
    const sec = document.getElementById(id);
    sec.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
    sec.querySelector('h2')?.focus({ preventScroll: true });
    store.set({ ch: id });
  });
}

/** The section a permalink's `ch` names: a chapter id, or (older links) its number. */
function chapterSection(ch) {
  const id = /^\d+$/.test(ch) ? CHAPTERS[Number(ch) - 1]?.id : ch;
  return id && CHAPTERS.some((c) => c.id === id) ? document.getElementById(id) : null;
}

// ---- store → page ----------------------------------------------------------
store.subscribe((state, changed) => {
  if (changed.includes('lang')) applyLanguage();
  if (changed.includes('theme')) applyTheme();
  if (changed.includes('backend')) {
    switchBackend(state.backend);
    return;
  }
  controls.sync(state);
  renderInfo();
  markDirty(changed);
  writeHash();
  schedule();
});

// ---- backends --------------------------------------------------------------
let currentLab = null;
let availableLabs = [];

async function switchBackend(name) {
  controls.sync(store.get());
  try {
    currentLab = await getLab(name);
  } catch (e) {
    showBanner(t('ctl.backendFail', { backend: name, message: e.message }));
    controls.setBackendAvailable(name, false, t);
    store.set({ backend: 'wasm' });
    return;
  }
  root.dataset.backend = currentLab.backend;
  if (!availableLabs.includes(currentLab)) availableLabs.push(currentLab);
  markDirty(['backend']);
  writeHash();
  renderStatus();
  schedule();
}

async function start() {
  // On a phone the controls start folded, so the text comes first.
  if (window.matchMedia?.('(max-width: 900px)').matches) $('controls').open = false;
  applyTheme();
  applyLanguage();
  controls.sync(store.get());
  showHashError();
  renderStatus();
  const want = store.get().backend;
  try {
    currentLab = await getLab(want === 'webgpu' ? 'wasm' : want);
  } catch (e) {
    loadState = 'error';
    loadError = e && e.message ? e.message : String(e);
    renderStatus();
    root.dataset.ready = 'error';
    return;
  }
  loadState = 'ready';
  root.dataset.backend = currentLab.backend;
  renderStatus();
  schedule();
  const anchor = /^#[\w-]+$/.test(location.hash) ? chapterSection(location.hash.slice(1)) : null;
  if (store.get().ch || anchor) (anchor ?? chapterSection(store.get().ch))?.scrollIntoView({ block: 'start' });
  // Other backends, for the comparison and the switch: loaded after the first
  // paint. WebGPU joins the comparison once the reader has selected it (its
  // first forward compiles pipelines, which is slow on software adapters).
  rendered().then(async () => {
    const names = ['wasm', 'wasm-scalar'];
    const wasmLabs = (await Promise.all(names.map((n) => getLab(n).catch(() => null)))).filter(Boolean);
    availableLabs = [...new Set([...wasmLabs, ...availableLabs])];
    const gpu = await webgpuAvailable();
    controls.setBackendAvailable('webgpu', gpu, t);
    if (!gpu && want === 'webgpu') {
      showBanner(t('ctl.backendFail', { backend: 'WebGPU', message: 'navigator.gpu' }));
      store.set({ backend: 'wasm' });
    }
    if (gpu && want === 'webgpu') switchBackend('webgpu');
    for (const r of runners) if (r.ch.compare) r.dirty = true;
    schedule();
  });
}

// ---- benchmark hook ----------------------------------------------------------
/**
 * Recompute + redraw of chapter 4 (embeddings, MHA forward on the selected
 * backend, H per-head heatmaps and their average) at [B, L, E, H], once per
 * animation frame. Resolves to per-frame timings in ms.
 */
async function bench({ B = 1, L = 32, E = 128, H = 4, frames = 60, backend = 'wasm' } = {}) {
  await settled();
  const lab = await getLab(backend);
  const saved = currentLab;
  currentLab = lab;
  const words = 'the quick brown fox jumps over the lazy dog while attention heads look at every word in the sentence and mix their values into new vectors for each token here'.split(' ');
  const base = { ...store.get(), B, L, E, H, text: words.slice(0, L).join(' '), backend };
  const r4 = runners.find((r) => r.id === 'ch4');
  const times = [];
  try {
    await r4.inst.update(ctx, base);
    for (let k = 0; k < frames; k++) {
      await new Promise((res) => requestAnimationFrame(res));
      const t0 = performance.now();
      await r4.inst.update(ctx, { ...base, seed: base.seed + k + 1 });
      void document.body.offsetHeight; // include the style and layout work the update caused
      times.push(performance.now() - t0);
    }
  } finally {
    currentLab = saved;
    r4.dirty = true;
    schedule();
  }
  const sorted = times.slice().sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return {
    config: `[B=${B}, L=${L}, E=${E}, H=${H}] on ${lab.backend}`,
    frames,
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    medianMs: q(0.5),
    p95Ms: q(0.95),
    maxMs: sorted[sorted.length - 1],
  };
}

window.__attentionLabBench = bench;
window.__attentionLab = { store, settled, motionStats, reducedMotion, fmt, runners, chapters: CHAPTERS.map((c) => c.id) };

start();
