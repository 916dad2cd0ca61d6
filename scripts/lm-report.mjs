#!/usr/bin/env node
// Prints the measured sections of docs/models.md for the shipped models (issue 22) as Markdown,
// from the committed training logs (scripts/lib/train-lm-logs/<lang>.json: the full held-out
// evaluation and the held-out curve), data/corpora/baselines.json, and the shipped files loaded
// with lab.pretrained (samples and head roles, computed now):
//
//   node scripts/lm-report.mjs [--lang en|zh] [--section eval|curve|samples|roles]
//
// Everything it prints is computed by the library or read from a file that the library's own runs
// wrote; docs/models.md pastes it.
import fs from 'node:fs';
import path from 'node:path';
import { init } from '../web/node.js';
import { ROOT } from './lib/train-lm.mjs';

const readCorpus = (lang, split) => fs.readFileSync(path.join(ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8');

const args = process.argv.slice(2);
const opt = (k, d) => (args.includes(k) ? args[args.indexOf(k) + 1] : d);
const langs = opt('--lang', null) ? [opt('--lang')] : ['en', 'zh'];
const sections = opt('--section', null) ? [opt('--section')] : ['eval', 'curve', 'samples', 'roles'];
const log = (lang) => JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts', 'lib', 'train-lm-logs', `${lang}.json`), 'utf8'));
const baselines = JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'corpora', 'baselines.json'), 'utf8'));
const NAME = { en: 'English', zh: '中文' };
const TARGET = { en: { heldout: 0.8, unseen: 0.85 }, zh: { heldout: 0.9, unseen: 0.93 } };
const pct = (x) => `${(100 * x).toFixed(2)}%`;
const n = (x) => x.toLocaleString('en-US');

if (sections.includes('eval')) {
  console.log('| | windows | chars | model nats/char | × bigram | target | model top-1 | bigram top-1 |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const uni = [];
  for (const lang of langs) {
    const ev = log(lang).evaluation;
    for (const split of ['heldout', 'unseen']) {
      const b = baselines[lang][split];
      const r = ev[split].loss / b.bigram.loss;
      const ok = r <= TARGET[lang][split] ? '✓' : '✗';
      const label = `${NAME[lang]} ${split}${lang === 'zh' && split === 'unseen' ? ' (Song)' : ''}`;
      console.log(`| ${label} | ${n(ev[split].windows)} | ${n(ev[split].tokens)} | **${ev[split].loss.toFixed(4)}** | **${r.toFixed(3)}×** | ≤ ${TARGET[lang][split]}× ${ok} | **${pct(ev[split].accuracy)}** | ${pct(b.bigram.accuracy)} |`);
    }
    uni.push(`${NAME[lang]} ${(ev.heldout.loss / baselines[lang].heldout.unigram.loss).toFixed(3)}× / ${(ev.unseen.loss / baselines[lang].unseen.unigram.loss).toFixed(3)}×`);
  }
  console.log(`\nAgainst the unigram: ${uni.join(', ')}.\n`);
}

if (sections.includes('curve')) {
  for (const lang of langs) {
    const h = log(lang).heldoutSubset;
    console.log(`${NAME[lang]}: ${h.map(([t, l]) => `${n(t)} ${l.toFixed(3)}`).join(', ')}`);
  }
  console.log('');
}

const lab = sections.some((s) => s === 'samples' || s === 'roles') ? await init({ backend: 'wasm' }) : null;

if (sections.includes('samples')) {
  const PROMPTS = { zh: ['春', '白', '月', '山', '秋风'], en: ['The ', 'A programmer ', 'LOVE, n. ', 'hacker: '] };
  const SET = { zh: { maxNewTokens: 80, topK: 40 }, en: { maxNewTokens: 120 } };
  for (const lang of langs) {
    const model = await lab.pretrained(lang);
    // The prompt after a newline: where a poem or paragraph starts in training.
    const one = async (prompt, o) => {
      let text = '';
      for await (const t of model.generate(`\n${prompt}`, o)) text += t.text;
      return (prompt + text).replace(/\n/g, ' ').trim();
    };
    console.log(`${NAME[lang]}:`);
    let seed = 1;
    for (const p of PROMPTS[lang]) console.log(`- sampled, prompt \`${p}\`: ${await one(p, { ...SET[lang], temperature: 0.8, seed: seed++ })}`);
    console.log(`- greedy, prompt \`${PROMPTS[lang][0]}\`: ${await one(PROMPTS[lang][0], { ...SET[lang], temperature: 0, topK: undefined })}`);
    console.log('');
    model.dispose();
  }
}

if (sections.includes('roles')) {
  for (const lang of langs) {
    const model = await lab.pretrained(lang);
    // The first held-out poem / long paragraph, after the newline that starts it (as the model
    // sees a text in training), cut to the context.
    const lines = readCorpus(lang, 'heldout').split('\n').filter((l) => [...l].length >= (lang === 'en' ? 127 : 20));
    const text = `\n${[...lines[0]].slice(0, model.config.maxPositions - 1).join('')}`;
    const roles = model.headRoles(text, { inductionSamples: 8 });
    const keys = ['previousToken', 'self', 'firstToken', 'induction', ...(lang === 'zh' ? ['previousLine'] : [])];
    const heads = { previousToken: 'previous-token', self: 'self', firstToken: 'first-token', induction: 'induction', previousLine: 'previous line' };
    console.log(`${NAME[lang]} on \`${[...text.slice(1)].slice(0, 60).join('')}…\` (${[...text].length - 1} characters after the newline). Chance: ${keys.map((k) => `${heads[k]} ${roles.chance[k].toFixed(3)}`).join(', ')}.\n`);
    console.log(`| layer.head | ${keys.map((k) => heads[k]).join(' | ')} |`);
    console.log(`| --- | ${keys.map(() => '---:').join(' | ')} |`);
    for (const hd of roles.heads) console.log(`| ${hd.layer}.${hd.head} | ${keys.map((k) => hd[k].toFixed(3)).join(' | ')} |`);
    for (const k of keys) {
      const best = roles.heads.reduce((a, b) => (b[k] > a[k] ? b : a));
      console.log(`\nbest ${heads[k]}: head ${best.layer}.${best.head} ${best[k].toFixed(3)} (${(best[k] / roles.chance[k]).toFixed(1)}× chance)`);
    }
    console.log('');
    model.dispose();
  }
}
lab?.dispose();
