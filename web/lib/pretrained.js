// lab.pretrained('en' | 'zh' | 'induction'): the character-level GPT-2 models that ship in the
// package (data/models/<name>/, trained by `npm run train:lm`, docs/models.md; 'induction' is the
// small English model of chapter 10 whose batches hold repeated random spans, so that it has an
// induction head, docs/training.md), as the same Model that
// lab.loadModel returns. The files are read lazily, on the first call, from the package itself and
// from nowhere else: in Node with fs, from the package folder; in browsers with fetch, from
// `new URL('…', import.meta.url)`, the package's own origin (bundlers see these URLs and emit the
// files as assets). Each call loads a new Model (dispose() it when done); the file bytes are kept.
import { rangeError } from './errors.js';
import { Tokenizer } from './vendor/tokenizers.js';

// One static URL per file, so that bundlers (Vite, webpack, Rollup) find them. `?no-inline`: Vite
// would inline the small JSON files as data: URLs, which a strict CSP's connect-src blocks.
const FILES = {
  en: () => ({
    config: new URL('../../data/models/en/config.json?no-inline', import.meta.url),
    weights: new URL('../../data/models/en/model.safetensors', import.meta.url),
    tokenizer: new URL('../../data/models/en/tokenizer.json?no-inline', import.meta.url),
    tokenizerConfig: new URL('../../data/models/en/tokenizer_config.json?no-inline', import.meta.url),
  }),
  zh: () => ({
    config: new URL('../../data/models/zh/config.json?no-inline', import.meta.url),
    weights: new URL('../../data/models/zh/model.safetensors', import.meta.url),
    tokenizer: new URL('../../data/models/zh/tokenizer.json?no-inline', import.meta.url),
    tokenizerConfig: new URL('../../data/models/zh/tokenizer_config.json?no-inline', import.meta.url),
  }),
  induction: () => ({
    config: new URL('../../data/models/induction/config.json?no-inline', import.meta.url),
    weights: new URL('../../data/models/induction/model.safetensors', import.meta.url),
    tokenizer: new URL('../../data/models/induction/tokenizer.json?no-inline', import.meta.url),
    tokenizerConfig: new URL('../../data/models/induction/tokenizer_config.json?no-inline', import.meta.url),
  }),
};

const isNodeFile = (url) => url.protocol === 'file:' && !!(/** @type {any} */ (globalThis).process?.versions?.node);

async function readBytes(url) {
  if (isNodeFile(url)) {
    // A specifier that bundlers do not follow: this branch only runs in Node.
    const fsName = 'node:fs/promises';
    const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
    const file = new URL(url.href);
    file.search = '';
    return new Uint8Array(await readFile(file));
  }
  const res = await fetch(url.href);
  if (!res.ok) throw new Error(`pretrained: ${url.href} answered ${res.status} ${res.statusText}`);
  return new Uint8Array(await res.arrayBuffer());
}

const cache = new Map();

/** The package's files of one model: { config, weights, tokenizer, tokenizerConfig } (read once). */
export function pretrainedFiles(name) {
  if (!cache.has(name)) {
    const urls = FILES[name]();
    const p = Promise.all(Object.entries(urls).map(async ([k, url]) => [k, await readBytes(url)])).then(Object.fromEntries);
    p.catch(() => cache.delete(name));
    cache.set(name, p);
  }
  return cache.get(name);
}

/**
 * lab.pretrained(name): name 'en' (English prose), 'zh' (Tang poems) or 'induction' (English
 * prose with repeated random spans: a small model with an induction head).
 * @param {(source: object) => Promise<import('./model/model.js').Model>} loadModel lab.loadModel
 */
export async function pretrained(loadModel, name) {
  if (typeof name !== 'string' || !Object.hasOwn(FILES, name)) {
    throw rangeError('pretrained', `name must be 'en', 'zh' or 'induction', got ${typeof name === 'string' ? JSON.stringify(name) : String(name)}`);
  }
  const f = await pretrainedFiles(name);
  const text = (b) => new TextDecoder().decode(b);
  const model = await loadModel({ config: text(f.config), weights: f.weights, tokenizer: text(f.tokenizer) });
  // loadModel reads tokenizer.json alone; its tokenizer_config.json says
  // clean_up_tokenization_spaces: false (else decoding turns " ." into "."), so the tokenizer is
  // rebuilt with it.
  if (model._tokenizer) model._tokenizer._tok = new Tokenizer(JSON.parse(text(f.tokenizer)), JSON.parse(text(f.tokenizerConfig)));
  return model;
}
