// Each language's own sentence (issue 35, item 1): a zh-CN browser opens the page on a line of
// Tang poetry that the Tang-poem model reads, so chapters 1-9 show no [UNK]; switching the
// language swaps a default sentence and keeps a typed one, and a permalink keeps it too; a
// sentence mostly outside the model's vocabulary gets one line that offers the model that reads it.
import assert from 'node:assert/strict';

const settle = (page) => page.evaluate(() => window.__attentionLab.settled());
const state = (page) => page.evaluate(() => window.__attentionLab.store.get());

/**
 * Every [UNK] that chapters 1-9 show of the sentence: their token chips, their "outside the
 * vocabulary" lines (components' hm.unknown) and their heatmaps' labels. (The prose that explains
 * [UNK] is not the sentence.)
 */
const unknowns = (page) => page.evaluate(() => {
  const found = [];
  for (let k = 1; k <= 9; k++) {
    const sec = document.getElementById(`ch${k}`);
    if (/Outside the model’s vocabulary|不在模型词表中/.test(sec.innerText)) found.push(`ch${k} unknown line`);
    for (const chip of sec.querySelectorAll('.chip, .token, .tok')) if (chip.textContent.includes('[UNK]')) found.push(`ch${k} chip`);
    for (const fig of sec.querySelectorAll('figure.al-hm')) {
      const m = fig.heatmap;
      if ([...(m?.rowLabels ?? []), ...(m?.colLabels ?? [])].some((l) => String(l).includes('[UNK]'))) found.push(`ch${k} map "${m.title}"`);
    }
  }
  return found;
});

const offers = (page) => page.evaluate(() => [...document.querySelectorAll('.vocab-offer')].filter((e) => !e.hidden).map((e) => `${e.closest('section').id}:${e.dataset.model}`));

export default function (t) {
  t.test('zh-CN opens on a Tang line with no [UNK] in chapters 1-9; the language switch swaps a default sentence and keeps a typed one; the vocabulary offer', async (h) => {
    const page = await h.newPage({ locale: 'zh-CN', reducedMotion: 'reduce' });
    try {
      await page.goto(h.url('/web/page/'));
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
      await settle(page);
      let s = await state(page);
      assert.equal(s.lang, 'zh');
      assert.equal(s.text, '床前明月光，疑是地上霜');
      assert.equal(await page.inputValue('#ctl-text'), '床前明月光，疑是地上霜');
      for (let k = 1; k <= 9; k++) assert.equal(await page.getAttribute(`#ch${k}`, 'data-state'), 'ok', `ch${k}`);
      assert.deepEqual(await unknowns(page), []);
      assert.deepEqual(await offers(page), []);
      // The default sentence is not in the permalink.
      assert.doesNotMatch(await page.evaluate(() => location.hash), /text=/);

      // Switching the language swaps the default sentences.
      await page.selectOption('#lang', 'en');
      await settle(page);
      s = await state(page);
      assert.deepEqual([s.lang, s.text, s.text2], ['en', 'attention is all you need', 'heads look at words']);
      assert.deepEqual(await unknowns(page), []);
      await page.selectOption('#lang', 'zh');
      await settle(page);
      s = await state(page);
      assert.deepEqual([s.lang, s.text, s.text2], ['zh', '床前明月光，疑是地上霜', '举头望明月']);

      // A typed sentence stays through the switch, and the permalink keeps it.
      await page.fill('#ctl-text', 'hello world');
      await page.press('#ctl-text', 'Tab');
      await settle(page);
      await page.selectOption('#lang', 'en');
      await settle(page);
      s = await state(page);
      assert.deepEqual([s.lang, s.text, s.text2], ['en', 'hello world', 'heads look at words']);
      await page.selectOption('#lang', 'zh');
      await settle(page);
      assert.equal((await state(page)).text, 'hello world');
      await page.waitForFunction(() => /text=hello/.test(location.hash));
      // On the 中文 page the English sentence is outside the Tang-poem model's vocabulary: each
      // learned chapter says so in one line and offers the English model.
      assert.ok((await unknowns(page)).length >= 9, 'the [UNK] check sees the unknown characters');
      const shown = await offers(page);
      assert.deepEqual(shown, ['ch1', 'ch2', 'ch3', 'ch4', 'ch5', 'ch6', 'ch7', 'ch8', 'ch9'].map((id) => `${id}:en`));
      assert.match(await page.textContent('#ch2 .vocab-offer'), /唐诗模型/);
      await page.click('#ch2 .vocab-offer button');
      await settle(page);
      assert.equal((await state(page)).lm, 'en');
      assert.deepEqual(await offers(page), []);
      assert.deepEqual(await unknowns(page), []);
      await page.waitForFunction(() => /lm=en/.test(location.hash));

      // The permalink, opened in the zh-CN browser, keeps the typed sentence.
      const hash = await page.evaluate(() => location.hash);
      const again = await h.newPage({ locale: 'zh-CN', reducedMotion: 'reduce' });
      try {
        await again.goto(h.url(`/web/page/${hash}`));
        await again.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
        const s2 = await state(again);
        assert.deepEqual([s2.lang, s2.text, s2.lm], ['zh', 'hello world', 'en']);
        assert.deepEqual(again.problems(), []);
      } finally {
        await again.closeAll();
      }
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 240000 });
}
