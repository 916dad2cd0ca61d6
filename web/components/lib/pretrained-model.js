// The package's shipped language models (lab.pretrained('en' | 'zh'), issue 22) for the
// components: loaded lazily, on the first element that asks, through the components' shared lab
// (lib/lab-instance.js; the models run on the wasm backends), and kept once per language for the
// whole page. Token labels as text: lib/token-text.js.
import { getLab } from './lab-instance.js';
import { readableToken } from './token-text.js';

export const PRETRAINED = ['en', 'zh'];

/** The token of a character outside the vocabulary (the models' tokenizer.json, id 0). */
export const UNKNOWN = '[UNK]';

/** A short sample text per model, used when an element names a model but gives no text. */
export const SAMPLE_TEXT = Object.freeze({ en: 'The cat sat on the mat.', zh: '白日依山尽，黄河入海流。' });

/** A sample prompt per model for generation (zh: the first character of a poem). */
export const SAMPLE_PROMPT = Object.freeze({ en: 'The ', zh: '白' });

const models = new Map();

/** Checks a `model` attribute's value: 'en' | 'zh'. */
export function checkModelName(tag, name) {
  if (!PRETRAINED.includes(name)) throw new RangeError(`<${tag}> model="${name}": use en or zh (the package's shipped models)`);
  return name;
}

/**
 * The shared Model of lab.pretrained(lang) (a failed load is forgotten, so a later call tries
 * again). The Model is the page's: elements never dispose it.
 * @returns {Promise<import('../../lib/model/model.js').Model>}
 */
export function pretrainedModel(lang) {
  if (!models.has(lang)) {
    const p = getLab('cpu').then((lab) => lab.pretrained(lang));
    models.set(lang, p);
    p.catch(() => models.delete(lang));
  }
  return models.get(lang);
}

/** True when the model of `lang` has been asked for (loaded or loading). */
export function pretrainedRequested(lang) {
  return models.has(lang);
}

/** The readable label of each token (always text) and the characters the vocabulary lacks. */
export function tokenLabels(model, text, ids) {
  const tokens = model.tokens(ids);
  const chars = [...text];
  const unknown = [];
  // One token per character: the character the unknown id stands for is the text's own.
  tokens.forEach((tok, i) => {
    if (tok === UNKNOWN) unknown.push(chars.length === tokens.length ? chars[i] : tok);
  });
  return { tokens, labels: tokens.map((tok) => readableToken(tok)), unknown: [...new Set(unknown)] };
}
