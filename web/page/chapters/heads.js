// "What the heads do" (issue 33 item 7): the interpretability calls of the library
// (docs/interpretability.md) on the shipped model of the page's language, lab.pretrained('en' |
// 'zh'), for the reader's text: head scores on the text and on repeated random tokens (a click
// opens the head's map), the logit lens, direct logit attribution for a target picked from the
// next-token list, heads switched off with the next-token list redrawn, and activation patching
// between two texts. A switch puts the induction model (lab.pretrained('induction'), chapter 10's
// English model trained with repeated random spans) in its place: its induction head is the row
// that the other two tables lack. The model is loaded and run in the model worker (WorkerModel.pretrained,
// web/model-worker.js), so no call runs on the page's thread, and only once the chapter comes near
// the viewport. The views are the shared panel (components/lib/heads-panel.js), also shown by
// <attention-lab-model-view> for any model ("Your model").
import { h, fmt } from '../../components/lib/dom.js';
import { translator } from '../../components/lib/i18n.js';
import { HeadsPanel } from '../../components/lib/heads-panel.js';
import { HEADS_PANEL_MESSAGES } from '../../components/lib/heads-panel-messages.js';
import { WorkerModel } from '../../components/lib/model-client.js';
import { modelLang } from '../lib/learned.js';

/** The default text per model: a sentence whose next token is not a foregone conclusion. */
export const HEADS_TEXT = Object.freeze({
  en: 'The cat sat on the mat. The cat sat on the m',
  zh: '白日依山尽，黄河入海流。欲穷千里目，更上一层',
  // a repeat, so that the induction head shows on the text too
  induction: 'The cat sat on the mat. The cat sat on the m',
});

/**
 * Patching pairs of equal token length (one token per character) per model. Measured on the
 * shipped models (Node, model.patch over heads): in each pair the logit difference flips sign
 * between clean and corrupted, and one or two heads of layer 0 bring back most of it.
 */
export const HEADS_PAIRS = Object.freeze({
  en: [
    { clean: 'He said "yes', corrupted: 'He said (yes' },
    { clean: 'one, two, three, fou', corrupted: 'one, two, three, you' },
  ],
  zh: [
    { clean: '白日依山尽，黄河入海流。欲穷千里目', corrupted: '白日依山尽，黄河入海流欲穷。千里目' },
    { clean: '春眠不觉晓，处处闻啼鸟。夜来风雨声', corrupted: '春眠不觉晓，处处闻啼鸟夜来。风雨声' },
  ],
  // The induction model: a random word written again, its last letter left out, against the same
  // second word after another first one. Measured in Node: the clean text's top next token is the
  // copy (k 0.57, l 0.59), the logit difference flips sign, and the best head restores 0.66 (L1 H1,
  // the induction head) and 0.87 (L0 H2, the previous-token head that feeds it).
  induction: [
    { clean: 'fwzrksxcuk, fwzrksxcu', corrupted: 'musoenmjao, fwzrksxcu' },
    { clean: 'nzfsjul. nzfsju', corrupted: 'yqovztb. nzfsju' },
  ],
});

const models = new Map(); // lang → Promise<WorkerModel>

function workerModel(lang) {
  if (!models.has(lang)) {
    const p = WorkerModel.pretrained(lang);
    models.set(lang, p);
    p.catch(() => models.delete(lang));
  }
  return models.get(lang);
}

export default {
  deps: ['lang', 'hm'],
  mount(ctx, body, section) {
    const input = h('input', { type: 'text', id: 'heads-text', class: 'al-input heads-text', spellcheck: 'false', maxlength: '200' });
    const label = h('label', { class: 'heads-text-row', for: 'heads-text' }, ctx.text('span', 'heads.text'));
    const status = h('p', { class: 'small muted heads-status', role: 'status', 'aria-live': 'polite' });
    const patchNote = h('p', { class: 'check-line heads-patch-note', 'aria-live': 'polite' });
    const box = h('div', { class: 'heads-panel' });
    // The induction model in place of the page language's (aria-pressed says which).
    const indBtn = ctx.text('button', 'heads.useInduction', { class: 'al-btn heads-induction', type: 'button', 'aria-pressed': 'false' });
    body.append(ctx.text('p', 'heads.p1'), ctx.text('p', 'heads.p2'), ctx.text('p', 'heads.p3'), ctx.text('p', 'heads.p4'), h('p', { class: 'inline-ctls' }, indBtn), label, input, status, box, patchNote,
      ctx.tryThis(['heads.try1', 'heads.try2', 'heads.try3', 'heads.try4', 'heads.try5']));

    const local = { lang: null, pageLang: null, induction: false, panels: new Map(), near: false, edited: new Map(), want: null, seq: 0 };
    const panelT = () => translator(ctx.state().lang, HEADS_PANEL_MESSAGES);
    // One panel per model language (its examples are that language's pairs).
    const panelFor = (lang) => {
      if (!local.panels.has(lang)) {
        const p = new HeadsPanel({ t: panelT(), examples: HEADS_PAIRS[lang], onError: (e) => { status.textContent = `${e.name}: ${e.message}`; } });
        p.el.dataset.lang = lang;
        local.panels.set(lang, p);
      }
      return local.panels.get(lang);
    };

    const drawNote = () => {
      const p = local.panels.get(local.lang);
      const s = p?.shown.patch;
      if (!s) {
        patchNote.textContent = '';
        return;
      }
      const H = p.model.config.numHeads;
      let k = 0;
      s.data.forEach((v, i) => { if (v > s.data[k]) k = i; });
      ctx.texts.bind(patchNote, 'heads.patchNote', { head: `L${Math.floor(k / H)} H${k % H}`, value: fmt(s.data[k], 2) });
    };

    async function run() {
      const want = local.want;
      if (!want || !local.near) return;
      const seq = ++local.seq;
      const { lang, text } = want;
      const panel = panelFor(lang);
      if (box.firstChild !== panel.el) box.replaceChildren(panel.el);
      section.dataset.heads = 'loading';
      status.textContent = ctx.t('heads.loading', { model: ctx.t(`heads.model.${lang}`) });
      try {
        const model = await workerModel(lang);
        if (seq !== local.seq) return;
        status.textContent = ctx.t('heads.running');
        const t0 = performance.now();
        // One token per character: the text cut to the model's positions.
        const c = model.config;
        const chars = [...text];
        const fitted = chars.slice(0, c.maxPositions).join('');
        await panel.update(model, fitted, { byteLevel: false });
        if (seq !== local.seq) return;
        const cut = chars.length - [...fitted].length;
        status.textContent = ctx.t('heads.ready', { model: ctx.t(`heads.model.${lang}`), N: c.numLayers, H: c.numHeads, ms: (performance.now() - t0).toFixed(0) })
          + (cut > 0 ? ` ${ctx.t('heads.cut', { n: cut, P: c.maxPositions })}` : '');
        section.dataset.heads = 'ready';
        section.dataset.headsLang = lang;
        section.dataset.headsText = text;
        drawNote();
      } catch (e) {
        if (seq !== local.seq) return;
        section.dataset.heads = 'error';
        status.textContent = `${e.name ?? 'Error'}: ${e.message ?? e}`;
      }
    }

    // local.lang is the model's name: the page's language, or 'induction'.
    const choose = () => {
      local.lang = local.induction ? 'induction' : local.pageLang;
      const text = local.edited.get(local.lang) ?? HEADS_TEXT[local.lang];
      if (input.value !== text) input.value = text;
      local.want = { lang: local.lang, text };
    };
    // The choice is page state (hm, in the permalink): update() below applies it.
    indBtn.addEventListener('click', () => {
      if (!local.pageLang) return;
      ctx.set({ hm: local.induction ? 'lang' : 'induction' });
    });

    let timer = 0;
    input.addEventListener('input', () => {
      if (!local.lang) return;
      local.edited.set(local.lang, input.value);
      local.want = { lang: local.lang, text: input.value };
      clearTimeout(timer);
      timer = setTimeout(() => run(), 200);
    });
    // A patch the reader types or picks redraws the note under the panel.
    box.addEventListener('al-hp-patch', () => drawNote());

    // The model loads when the chapter comes near the viewport, never before the first paint.
    if (typeof IntersectionObserver === 'function') {
      const io = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting) && !local.near) {
          local.near = true;
          io.disconnect();
          run();
        }
      }, { rootMargin: '300px 0px' });
      io.observe(section);
    } else {
      local.near = true;
    }

    return {
      async update(c, state) {
        local.pageLang = modelLang(state);
        local.induction = state.hm === 'induction';
        indBtn.setAttribute('aria-pressed', String(local.induction));
        choose();
        input.setAttribute('aria-label', ctx.t('heads.textLabel'));
        for (const p of local.panels.values()) p.setMessages(panelT());
        // Not awaited: the views fill in as the worker answers (data-heads says when).
        run();
        return { model: local.lang };
      },
      setMessages() {
        input.setAttribute('aria-label', ctx.t('heads.textLabel'));
        for (const p of local.panels.values()) p.setMessages(panelT());
        drawNote();
      },
      /** The panel of the model in use (for tests and scripts). */
      get panel() {
        return local.panels.get(local.lang) ?? null;
      },
      /** Runs the views again (as a change of the text does); resolves when they are drawn. */
      run,
    };
  },
};
