// The chapters of the tutorial page, in reading order: the one place a
// chapter is registered. Each entry is { id, module, title: { en, zh } }:
//   id      the section's element id and URL anchor (#id), unique;
//   module  the chapter's default export { deps, compare?, mount(ctx, body, section) };
//   title   its heading in every page language.
// main.js builds the table of contents and the <section> of each entry; the
// chapter numbers follow the order below. index.html lists no chapter: its
// modulepreload block is generated from the import graph
// (node scripts/page-preloads.mjs). See docs/architecture-details.md, "Adding a chapter".
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
import heads from './heads.js';
import yourModel from './your-model.js';
import { MESSAGES as ch1Messages } from './ch1-self-attention-messages.js';
import { MESSAGES as ch2Messages } from './ch2-qkv-messages.js';
import { MESSAGES as ch3Messages } from './ch3-scaled-dot-product-messages.js';
import { MESSAGES as ch4Messages } from './ch4-multi-head-messages.js';
import { MESSAGES as ch5Messages } from './ch5-masks-messages.js';
import { MESSAGES as ch6Messages } from './ch6-positional-encoding-messages.js';
import { MESSAGES as ch7Messages } from './ch7-layer-messages.js';
import { MESSAGES as ch8Messages } from './ch8-shape-flow-messages.js';
import { MESSAGES as ch9Messages } from './ch9-faq-messages.js';
import { MESSAGES as ch10Messages } from './ch10-watch-attention-learn-messages.js';
import { MESSAGES as ch11Messages } from './ch11-modern-attention-messages.js';
import { MESSAGES as trainedModelMessages } from './trained-model-messages.js';
import { MESSAGES as headsMessages } from './heads-messages.js';
import { MESSAGES as yourModelMessages } from './your-model-messages.js';

export const CHAPTERS = [
  { id: 'ch1', module: ch1, title: { en: 'Self-attention without projections', zh: '无投影的自注意力' }, messages: ch1Messages },
  { id: 'ch2', module: ch2, title: { en: 'Q, K and V: three projections', zh: 'Q、K、V：三个投影' }, messages: ch2Messages },
  { id: 'ch3', module: ch3, title: { en: 'Scaled dot-product attention', zh: '缩放点积注意力' }, messages: ch3Messages },
  { id: 'ch4', module: ch4, title: { en: 'Multi-head attention', zh: '多头注意力' }, messages: ch4Messages },
  { id: 'ch5', module: ch5, title: { en: 'Masks', zh: '掩码' }, messages: ch5Messages },
  { id: 'ch6', module: ch6, title: { en: 'Positional encoding', zh: '位置编码' }, messages: ch6Messages },
  { id: 'ch7', module: ch7, title: { en: 'The full self-attention layer', zh: '完整的自注意力层' }, messages: ch7Messages },
  { id: 'ch8', module: ch8, title: { en: 'Dimensions in one take', zh: '维度变化一镜到底' }, messages: ch8Messages },
  { id: 'ch9', module: ch9, title: { en: 'FAQ', zh: '常见问题' }, messages: ch9Messages },
  { id: 'ch10', module: ch10, title: { en: 'Watch attention learn', zh: '看注意力如何学习' }, messages: ch10Messages },
  { id: 'ch11', module: ch11, title: { en: 'Attention in today’s models', zh: '当今模型中的注意力' }, messages: ch11Messages },
  { id: 'trained-model', module: trainedModel, title: { en: 'A trained model writes', zh: '训练好的模型来写' }, messages: trainedModelMessages },
  { id: 'heads', module: heads, title: { en: 'What the heads do', zh: '注意力头在做什么' }, messages: headsMessages },
  { id: 'your-model', module: yourModel, title: { en: 'Your model', zh: '你的模型' }, messages: yourModelMessages },
];

/** The catalogue key of a chapter's title. */
export const titleKey = (id) => `${id}.title`;

/** The chapters' strings and titles as one message catalogue ({ en: { 'ch1.title': …, 'ch1.p1': … }, zh: … }). */
export function chapterMessages(chapters = CHAPTERS) {
  const out = {};
  for (const c of chapters) {
    for (const [lang, table] of Object.entries(c.messages ?? {})) Object.assign((out[lang] ??= {}), table);
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
