// page-registry.test.js — the tutorial page's chapters are registered in one
// place (web/page/chapters/registry.js); index.html's modulepreload block is
// generated from the import graph; every page string exists in both languages.
import fs from 'node:fs';
import { CHAPTERS, chapterMessages, checkRegistry } from '../../web/page/chapters/registry.js';
import { PAGE_MESSAGES } from '../../web/page/lib/messages.js';
import { COMPONENT_MESSAGES } from '../../web/components/lib/i18n.js';
import { updatedHtml, moduleGraph } from '../../scripts/page-preloads.mjs';

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
  test('every key exists in English and in Chinese', () => {
    for (const cat of [PAGE_MESSAGES, COMPONENT_MESSAGES]) {
      const en = Object.keys(cat.en).sort();
      const zh = Object.keys(cat.zh).sort();
      expect(zh).toEqual(en);
    }
  });
});
