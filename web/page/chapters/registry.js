// The chapters of the tutorial page, in reading order: the one place a
// chapter is registered. Each entry is { id, module, title: { en, zh } }:
//   id      the section's element id and URL anchor (#id), unique;
//   module  the chapter's default export { deps, compare?, mount(ctx, body, section) };
//   title   its heading in every page language.
// main.js builds the table of contents and the <section> of each entry; the
// chapter numbers follow the order below. index.html lists no chapter: its
// modulepreload block is generated from the import graph
// (node scripts/page-preloads.mjs). See docs/ARCHITECTURE.md, "Adding a chapter".
import ch1 from './ch1-self-attention.js';
import ch2 from './ch2-qkv.js';
import ch3 from './ch3-scaled-dot-product.js';
import ch4 from './ch4-multi-head.js';
import ch5 from './ch5-masks.js';
import ch6 from './ch6-positional-encoding.js';
import ch7 from './ch7-layer.js';
import ch8 from './ch8-shape-flow.js';
import ch9 from './ch9-faq.js';
import ch10 from './ch10-watch-attention-learn.js';
import ch11 from './ch11-modern-attention.js';
import trainedModel from './trained-model.js';
import yourModel from './your-model.js';

export const CHAPTERS = [
  { id: 'ch1', module: ch1, title: { en: 'Self-attention without projections', zh: '无投影的自注意力' } },
  { id: 'ch2', module: ch2, title: { en: 'Q, K and V: three projections', zh: 'Q、K、V：三个投影' } },
  { id: 'ch3', module: ch3, title: { en: 'Scaled dot-product attention', zh: '缩放点积注意力' } },
  { id: 'ch4', module: ch4, title: { en: 'Multi-head attention', zh: '多头注意力' } },
  { id: 'ch5', module: ch5, title: { en: 'Masks', zh: '掩码' } },
  { id: 'ch6', module: ch6, title: { en: 'Positional encoding', zh: '位置编码' } },
  { id: 'ch7', module: ch7, title: { en: 'The full self-attention layer', zh: '完整的自注意力层' } },
  { id: 'ch8', module: ch8, title: { en: 'Dimensions in one take', zh: '维度变化一镜到底' } },
  { id: 'ch9', module: ch9, title: { en: 'FAQ', zh: '常见问题' } },
  { id: 'ch10', module: ch10, title: { en: 'Watch attention learn', zh: '看注意力如何学习' } },
  { id: 'ch11', module: ch11, title: { en: 'Attention in today’s models', zh: '当今模型中的注意力' } },
  { id: 'trained-model', module: trainedModel, title: { en: 'A trained model writes', zh: '训练好的模型来写' } },
  { id: 'your-model', module: yourModel, title: { en: 'Your model', zh: '你的模型' } },
];

/** The catalogue key of a chapter's title. */
export const titleKey = (id) => `${id}.title`;

/** The chapter titles as a message catalogue ({ en: { 'ch1.title': … }, zh: … }). */
export function chapterMessages(chapters = CHAPTERS) {
  const out = {};
  for (const c of chapters) {
    for (const [lang, text] of Object.entries(c.title)) (out[lang] ??= {})[titleKey(c.id)] = text;
  }
  return out;
}

/** Checks the registry: unique, anchor-safe ids; a module with mount(); a title in each language. */
export function checkRegistry(chapters = CHAPTERS, langs = ['en', 'zh']) {
  const seen = new Set();
  for (const c of chapters) {
    if (!/^[a-z][\w-]*$/.test(c.id)) throw new Error(`chapter id "${c.id}" must start with a letter and hold only letters, digits, "_" or "-"`);
    if (seen.has(c.id)) throw new Error(`chapter id "${c.id}" is registered twice`);
    seen.add(c.id);
    if (typeof c.module?.mount !== 'function') throw new Error(`chapter "${c.id}": module has no mount(ctx, body, section)`);
    if (!(c.module.deps === '*' || Array.isArray(c.module.deps))) throw new Error(`chapter "${c.id}": module.deps must be an array of state keys or '*'`);
    for (const l of langs) if (!c.title?.[l]) throw new Error(`chapter "${c.id}" has no ${l} title`);
  }
  return true;
}
