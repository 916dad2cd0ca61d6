// The shipped models on the page (issue 22): lab.pretrained('en' | 'zh') through the components'
// shared cache (components/lib/pretrained-model.js), loaded only when a chapter's "learned"
// view asks, never before the first paint. A chapter's update must not wait for the download:
// learnedModel() answers null while it loads and re-renders the chapter (ctx.invalidate) once
// it is there.
import { pretrainedModel, tokenLabels, UNKNOWN } from '../../components/lib/pretrained-model.js';

const loaded = new Map();

/**
 * The model of the learned views: the one the reader picked (state.lm, from the offer of
 * vocabularyOffer), else the page language's: 'zh' on the 简体中文 page, else 'en'.
 */
export const modelLang = (state) => (state.lm === 'en' || state.lm === 'zh' ? state.lm : state.lang === 'zh' ? 'zh' : 'en');

/** Tells the page (ctx.offerModel) whether to offer the other model for this sentence. */
export function offerModel(ctx, lang, text, labels) {
  // One token per character: count the unknown ones that are not spaces.
  const chars = [...text];
  const aligned = chars.length === labels.tokens.length;
  const unknown = labels.tokens.filter((tok, i) => tok === UNKNOWN && !(aligned && /\s/u.test(chars[i]))).length;
  ctx.offerModel?.(vocabularyOffer(lang, text, unknown), lang);
}

const HAN = /\p{Script=Han}/u;
const LATIN = /[A-Za-z]/;

/**
 * When most characters of the sentence (spaces aside) are outside the model's vocabulary
 * (`unknownCount` of `text`'s characters are [UNK]), the shipped model that reads them: 'zh'
 * when most of the sentence is Han characters, 'en' when most is Latin letters; else null. Null
 * too when that is the model in use.
 */
export function vocabularyOffer(lang, text, unknownCount) {
  const chars = [...text].filter((ch) => !/\s/u.test(ch));
  if (!chars.length || unknownCount * 2 <= chars.length) return null;
  const han = chars.filter((ch) => HAN.test(ch)).length;
  const latin = chars.filter((ch) => LATIN.test(ch)).length;
  const other = han * 2 > chars.length ? 'zh' : latin * 2 > chars.length ? 'en' : null;
  return other && other !== lang ? { model: other, unknown: unknownCount, chars: chars.length } : null;
}

/**
 * The Model of `lang` if it has loaded; else starts the load, returns null, and calls
 * ctx.invalidate(keys) when it arrives (or rejects: the chapter then shows the error).
 */
export function learnedModel(ctx, lang, keys) {
  const got = loaded.get(lang);
  if (got?.model) return got.model;
  if (got?.error) {
    loaded.delete(lang);
    throw got.error;
  }
  if (got) {
    // Loading already: this chapter re-renders too when it arrives.
    for (const k of keys) got.keys.add(k);
    return null;
  }
  const entry = { keys: new Set(keys) };
  loaded.set(lang, entry);
  entry.done = pretrainedModel(lang).then((m) => { entry.model = m; }, (e) => { entry.error = e; }).then(() => ctx.invalidate([...entry.keys]));
  return null;
}

/**
 * A Promise that resolves once every model load a chapter started has arrived and its chapters
 * are marked for re-rendering (null when none is loading): the page's settled() waits for it.
 */
export function pendingModels() {
  const waiting = [...loaded.values()].filter((e) => !e.model && !e.error && e.done).map((e) => e.done);
  return waiting.length ? Promise.all(waiting) : null;
}

/** The reader's text cut to the model's positions (one token per character). */
export function fitText(model, text) {
  const chars = [...text];
  const max = model.config.maxPositions;
  return { text: chars.slice(0, max).join(''), cut: chars.length > max ? chars.length - max : 0 };
}

export const ROLES = ['previousToken', 'self', 'firstToken', 'induction', 'previousLine'];

/**
 * Each head's strongest measured role: the score (a mean attention weight) furthest above its
 * chance level, as a ratio; 'spread' when no score reaches twice its chance.
 */
export function headRoleLabels(roles) {
  return roles.heads.map((hd) => {
    let best = null;
    let ratio = 0;
    for (const r of ROLES) {
      if (hd[r] === undefined || !(roles.chance[r] > 0)) continue;
      const q = hd[r] / roles.chance[r];
      if (q > ratio) {
        ratio = q;
        best = r;
      }
    }
    return { layer: hd.layer, head: hd.head, role: ratio >= 2 ? best : 'spread', best, score: best ? hd[best] : NaN, chance: best ? roles.chance[best] : NaN };
  });
}

const rolesCache = new Map();

/** model.headRoles(text), memoised per model and text (the scores run five forward passes). */
export function cachedHeadRoles(lang, model, text) {
  const key = `${lang}\u0000${text}`;
  const hit = rolesCache.get(key);
  if (hit && hit.model === model) return hit.roles;
  const roles = model.headRoles(text);
  if (rolesCache.size > 16) rolesCache.clear();
  rolesCache.set(key, { model, roles });
  return roles;
}

const weightsCache = new WeakMap();

/**
 * A tensor of the model's own Hugging Face files (model.save(), read with lab.readSafetensors),
 * by its name without the 'transformer.' prefix: 'wte.weight' [V, E], 'wpe.weight' [P, E], …
 */
export function modelTensor(lab, model, name) {
  const t = modelTensors(lab, model);
  const hit = t[name] ?? t[`transformer.${name}`];
  if (!hit) throw new RangeError(`the model's files hold no tensor ${name}`);
  return hit;
}

/** All the tensors of the model's model.safetensors (model.save()), read once per model. */
export function modelTensors(lab, model) {
  let t = weightsCache.get(model);
  if (!t) {
    t = lab.readSafetensors(model.save()['model.safetensors']).tensors;
    weightsCache.set(model, t);
  }
  return t;
}

/** The learned character embeddings of `ids`: rows of wte, [L, E]. */
export function embeddingRows(lab, model, ids) {
  const wte = modelTensor(lab, model, 'wte.weight');
  const E = wte.shape[1];
  const x = new Float32Array(ids.length * E);
  ids.forEach((id, i) => x.set(wte.data.subarray(id * E, (id + 1) * E), i * E));
  return x;
}

export { tokenLabels };
