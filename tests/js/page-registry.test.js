// page-registry.test.js — the tutorial page's chapters are registered in one
// place (web/page/chapters/registry.js); index.html's modulepreload block is
// generated from the import graph; every page string exists in both languages.
import fs from 'node:fs';
import { CHAPTERS, chapterMessages, checkRegistry } from '../../web/page/chapters/registry.js';
import { PAGE_MESSAGES } from '../../web/page/lib/messages.js';
import { COMPONENT_MESSAGES } from '../../web/components/lib/i18n.js';
import { HEADS_PANEL_MESSAGES } from '../../web/components/lib/heads-panel-messages.js';
import { updatedHtml, moduleGraph } from '../../scripts/page-preloads.mjs';
import { STEP_NAMES, STEP_FORMULAS } from '../../web/components/lib/shape-flow.js';
import { DEFAULT_TEXTS, decodeHash, encodeHash, defaultsFor, languagePatch } from '../../web/page/lib/state.js';

const html = fs.readFileSync(new URL('../../web/page/index.html', import.meta.url), 'utf8');

describe('chapter registry', () => {
  test('ids are unique and anchor-safe, each has a module and an en + zh title', () => {
    expect(checkRegistry()).toBe(true);
    expect(CHAPTERS.length).toBeGreaterThanOrEqual(9);
    const m = chapterMessages();
    for (const c of CHAPTERS) {
      expect(m.en[`${c.id}.title`]).toBe(c.title.en);
      expect(m.zh[`${c.id}.title`]).toMatch(/[\u4e00-\u9fff]/);
    }
  });

  test('a bad registration is refused with a message naming the chapter', () => {
    const ok = CHAPTERS[0];
    expect(() => checkRegistry([ok, { ...ok }])).toThrow(/"ch1" is registered twice/);
    expect(() => checkRegistry([{ ...ok, id: '1x' }])).toThrow(/must start with a letter/);
    expect(() => checkRegistry([{ ...ok, title: { en: 'x' } }])).toThrow(/has no zh title/);
    expect(() => checkRegistry([{ ...ok, module: {} }])).toThrow(/no mount/);
  });

  test('index.html names no chapter: no section, no TOC entry, and a generated preload block in date', () => {
    expect(html).not.toMatch(/<section class="chapter"/);
    expect(html).not.toMatch(/data-i18n="ch\d\.title"/);
    expect(updatedHtml(html)).toBe(html);
    const graph = moduleGraph();
    for (const c of ['./chapters/registry.js', './chapters/ch1-self-attention.js']) expect(graph).toContain(c);
  });
});

describe('page messages', () => {
  test('every key exists in English and in Chinese: the shared catalogue, each chapter\'s, the components\'', () => {
    const chapters = CHAPTERS.map((c) => c.messages);
    expect(chapters.every((m) => m && m.en && m.zh)).toBe(true);
    for (const cat of [PAGE_MESSAGES, COMPONENT_MESSAGES, HEADS_PANEL_MESSAGES, ...chapters, chapterMessages()]) {
      const en = Object.keys(cat.en).sort();
      const zh = Object.keys(cat.zh).sort();
      expect(zh).toEqual(en);
    }
  });

  test('a chapter\'s strings live beside it; the shared catalogue holds only page.*, ctl.*, err.* and prov.*', () => {
    const prefix = { 'trained-model': 'tm', 'your-model': 'ym' };
    for (const c of CHAPTERS) {
      const own = prefix[c.id] ?? c.id;
      const stray = Object.keys(c.messages.en).filter((k) => !k.startsWith(`${own}.`));
      expect([c.id, stray]).toEqual([c.id, []]);
    }
    const shared = new Set(Object.keys(PAGE_MESSAGES.en).map((k) => k.split('.')[0]));
    expect([...shared].sort()).toEqual(['ctl', 'err', 'page', 'prov']);
    // No key is in two catalogues (the later one would silently win).
    const seen = new Map();
    for (const [name, cat] of [['shared', PAGE_MESSAGES], ...CHAPTERS.map((c) => [c.id, c.messages])]) {
      for (const k of Object.keys(cat.en)) {
        expect([k, seen.get(k)]).toEqual([k, undefined]);
        seen.set(k, name);
      }
    }
  });

  test('the 中文 prose names no trace step by its English id (split_heads, …): the zh shape flow names them in Chinese', () => {
    // Every trace step id the page translates; prose is a message without its `code` spans.
    const ids = [...new Set([...Object.keys(STEP_NAMES.en), ...Object.keys(STEP_FORMULAS.zh)])].filter((id) => id.includes('_'));
    expect(ids).toEqual(expect.arrayContaining(['split_heads', 'linear_qkv', 'weighted_sum', 'merge_heads', 'output_linear', 'layer_norm']));
    const found = [];
    for (const cat of [PAGE_MESSAGES, COMPONENT_MESSAGES, chapterMessages()]) {
      for (const [key, text] of Object.entries(cat.zh)) {
        const prose = String(text).replace(/`[^`]*`/g, '');
        for (const id of ids) if (new RegExp(`\\b${id}\\b`).test(prose)) found.push(`${key}: ${id}`);
      }
    }
    expect(found).toEqual([]);
    // The check does see an id in prose.
    expect(/\bsplit_heads\b/.test('走到 split_heads：'.replace(/`[^`]*`/g, ''))).toBe(true);
  });
});

describe('each language has its own sentence', () => {
  test('the 中文 defaults are a line of Tang poetry; the English ones English', () => {
    expect(DEFAULT_TEXTS.zh.text).toBe('床前明月光，疑是地上霜');
    expect(DEFAULT_TEXTS.en.text).toBe('attention is all you need');
    expect(defaultsFor('zh').text2).toBe(DEFAULT_TEXTS.zh.text2);
  });

  test('a language switch swaps a default sentence and keeps a typed one', () => {
    const en = defaultsFor('en');
    expect(languagePatch(en, 'zh')).toEqual({ lang: 'zh', ...DEFAULT_TEXTS.zh });
    expect(languagePatch({ ...en, text: 'my own words' }, 'zh')).toEqual({ lang: 'zh', text2: DEFAULT_TEXTS.zh.text2 });
    expect(languagePatch(defaultsFor('zh'), 'en')).toEqual({ lang: 'en', ...DEFAULT_TEXTS.en });
  });

  test('the permalink keeps a typed sentence and leaves out its language\'s default', () => {
    expect(encodeHash(defaultsFor('zh'))).toBe('lang=zh');
    expect(encodeHash(defaultsFor('en'))).toBe('');
    // The English default typed on the 中文 page is the reader's own: it is kept.
    const typed = { ...defaultsFor('zh'), text: DEFAULT_TEXTS.en.text };
    const hash = encodeHash(typed);
    expect(hash).toMatch(/text=attention/);
    expect(decodeHash(hash, 'en').state).toEqual(typed);
    // Without lang or text in the link, the reader's language and its sentences.
    expect(decodeHash('H=4', 'zh').state).toEqual({ ...defaultsFor('zh'), H: 4 });
    expect(decodeHash('', 'zh').state).toEqual(defaultsFor('zh'));
    expect(decodeHash('lang=en', 'zh').state).toEqual(defaultsFor('en'));
    expect(decodeHash('lm=en', 'zh').state.lm).toBe('en');
  });
});
