// Chapter 10 — Watch attention learn: <attention-lab-trainer> trains a tiny
// transformer in a Web Worker (the library's backward passes and AdamW) and
// shows every head's map forming; pre-trained snapshots
// (the safetensors files in web/page/pretrained, made by scripts/make-pretrained.mjs)
// load at once for readers who do not want to wait. The numbers the text
// cites (held-out accuracy with heads switched off, the copy heads' weight on
// the diagonal) are measured by the library when the chapter renders: each
// snapshot is loaded into a TrainingSession on the page's wasm lab and
// evaluated on its held-out sequences with heads switched off.
// Below the synthetic tasks, <attention-lab-lm-trainer> trains a character language model from
// scratch in its own Web Worker ("train a poet" on the Tang poems, "train an English model" on
// the English prose: the corpora of data/corpora/, which the page's server serves from the
// repository root), and loads the shipped model (lab.pretrained) as the end point.
import { h, fmt } from '../../components/lib/dom.js';
import { AttentionLabTrainer } from '../../components/elements/trainer-element.js';
import { AttentionLabLmTrainer } from '../../components/elements/lm-trainer-element.js';
import { readSafetensors } from '../../lib/io/safetensors.js';
import { TrainingSession, patternScore } from '../../lib/train/session.js';

const SNAPSHOTS = ['copy', 'reverse', 'sort', 'shift'];
// The map each task needs (patternScore's names); sort and induction have none.
const PATTERN = { copy: 'diagonal', reverse: 'anti-diagonal', shift: 'previous' };
const snapshotUrl = (task) => new URL(`../pretrained/${task}.safetensors`, import.meta.url).href;
// The corpus of each live model (the induction model trains on the English prose).
const corpusUrl = (model) => new URL(`../../../data/corpora/${model === 'induction' ? 'en' : model}/`, import.meta.url).href;
const pct = (x) => `${(100 * x).toFixed(1)}%`;

function meanRowMax(map, L) {
  let s = 0;
  for (let i = 0; i < L; i++) {
    let m = 0;
    for (let j = 0; j < L; j++) m = Math.max(m, map[i * L + j]);
    s += m;
  }
  return s / L;
}

/**
 * Loads weights saved as safetensors (a snapshot, or the trainer's
 * saveSafetensors()) into a TrainingSession and measures, with the library,
 * the held-out sequence accuracy with every head on, with each head off alone
 * and with all heads off, and each head's map of the session's example
 * sequence: its mean weight on the task's pattern and its mean row maximum.
 */
export function measureHeads(lab, bytes) {
  const file = readSafetensors(bytes);
  const options = JSON.parse(file.metadata?.['attention-lab'] ?? '{}');
  const s = new TrainingSession(lab, options);
  try {
    s.model.setWeights(file.tensors);
    const acc = () => s.evaluate().sequenceAccuracy;
    const base = acc();
    const maps = s.report().maps;
    const task = s.options.task;
    const heads = [];
    maps.forEach((m, l) => {
      const [H, L] = m.shape;
      for (let hh = 0; hh < H; hh++) {
        s.model.setHeadEnabled(l, hh, false);
        const off = acc();
        s.model.setHeadEnabled(l, hh, true);
        const map = m.data.subarray(hh * L * L, (hh + 1) * L * L);
        heads.push({ layer: l, head: hh, off, pattern: PATTERN[task] ? patternScore(map, L, PATTERN[task]) : null, rowMax: meanRowMax(map, L) });
      }
    });
    maps.forEach((m, l) => {
      for (let hh = 0; hh < m.shape[0]; hh++) s.model.setHeadEnabled(l, hh, false);
    });
    const allOff = acc();
    return { task, base, allOff, heads, L: maps[0].shape[1], n: s.heldOut.tokens.shape[0] };
  } finally {
    s.dispose();
  }
}

async function fetchBytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status})`);
  return new Uint8Array(await res.arrayBuffer());
}

export default {
  deps: [],
  mount(ctx, body, section) {
    if (typeof customElements !== 'undefined' && !customElements.get('attention-lab-trainer')) {
      customElements.define('attention-lab-trainer', AttentionLabTrainer);
    }
    if (typeof customElements !== 'undefined' && !customElements.get('attention-lab-lm-trainer')) {
      customElements.define('attention-lab-lm-trainer', AttentionLabLmTrainer);
    }
    const trainer = h('attention-lab-trainer', { id: 'ch10-trainer', task: 'reverse', size: '64', lr: '0.003', lang: ctx.state().lang });
    const local = { measured: null, table: null, busy: null };
    const headsBox = h('div', { class: 'figs ch10-heads', 'aria-live': 'polite' });
    const measureBtn = h('button', { class: 'al-btn ch10-measure', type: 'button' });

    // The per-head table of a measurement (re-drawn on a language change).
    const drawTable = () => {
      const t = ctx.t;
      const m = local.table;
      if (!m) {
        headsBox.replaceChildren(h('p', { class: 'small muted' }, t('ch10.heads.none')));
        return;
      }
      const pat = PATTERN[m.task];
      const source = m.step === null ? t('ch10.src.snapshot') : t('ch10.src.trainer', { step: m.step });
      const cols = ['ch10.col.head', 'ch10.col.off', ...(pat ? ['ch10.col.pattern'] : []), 'ch10.col.rowMax'];
      const head = h('tr', null, cols.map((k) => h('th', { scope: 'col' }, t(k, { pattern: pat ? t(`ch10.pat.${pat}`) : '' }))));
      const row = (label, acc, x, cls) => h('tr', { class: cls ?? null, dataset: x?.dataset ?? {} },
        h('th', { scope: 'row' }, label), h('td', { class: 'num' }, pct(acc)),
        ...(pat ? [h('td', { class: 'num' }, x ? fmt(x.pattern, 3) : '')] : []),
        h('td', { class: 'num' }, x ? fmt(x.rowMax, 3) : ''));
      const worst = m.heads.reduce((a, b) => (b.off < a.off ? b : a));
      const why = m.task === 'copy' && m.allOff >= m.base
        ? t('ch10.why.copy')
        : t('ch10.why.other', { head: t('ch10.row.head', { l: worst.layer, h: worst.head }), acc: pct(worst.off) });
      const line = h('p', { class: 'check-line ch10-heads-line', dataset: { task: m.task, allOff: String(m.allOff), base: String(m.base) } });
      ctx.texts.bind(line, 'ch10.heads.line', { all: pct(m.allOff), base: pct(m.base), why });
      headsBox.replaceChildren(
        h('table', { class: 'data ch10-heads-table' },
          h('caption', null, t('ch10.heads.caption', { task: t(`ch10.snap.${m.task}`), source, n: m.n })),
          h('thead', null, head),
          h('tbody', null,
            row(t('ch10.row.none'), m.base, null),
            ...m.heads.map((x) => row(t('ch10.row.head', { l: x.layer, h: x.head }), x.off, { ...x, dataset: { layer: String(x.layer), head: String(x.head), off: String(x.off) } })),
            row(t('ch10.row.all'), m.allOff, null, 'current'))),
        line);
    };

    const measure = async (bytes, step) => {
      const lab = await ctx.labFor('cpu');
      local.table = { ...measureHeads(lab, bytes), step };
      section.dataset.measured = local.table.task;
      drawTable();
    };
    const guard = (p) => {
      local.busy = p.catch((e) => {
        headsBox.replaceChildren(h('p', { class: 'ym-error', role: 'alert' }, `${e.name}: ${e.message}`));
      });
      return local.busy;
    };

    const buttons = SNAPSHOTS.map((task) => {
      const b = ctx.text('button', `ch10.snap.${task}`, { class: 'al-btn', type: 'button', 'data-task': task });
      b.addEventListener('click', () => {
        const url = snapshotUrl(task);
        guard(trainer.loadPretrained(url).then(() => fetchBytes(url)).then((bytes) => measure(bytes, null)));
      });
      return b;
    });
    measureBtn.addEventListener('click', () => {
      guard(trainer.saveSafetensors().then((bytes) => measure(bytes, trainer.report?.step ?? 0)));
    });
    // The live language models: one element, its model switched by the three buttons.
    const lm = h('attention-lab-lm-trainer', { id: 'ch10-lm', model: 'zh', corpus: corpusUrl('zh'), lang: ctx.state().lang });
    const lmButtons = ['zh', 'en', 'induction'].map((model) => {
      const b = ctx.text('button', `ch10.lm.${model}`, { class: 'al-btn', type: 'button', 'data-lm': model, 'aria-pressed': 'false' });
      b.addEventListener('click', async () => {
        for (const x of lmButtons) x.setAttribute('aria-pressed', String(x === b));
        if (lm.getAttribute('model') !== model) {
          lm.setAttribute('corpus', corpusUrl(model));
          lm.setAttribute('model', model);
        }
        try {
          await lm.play();
        } catch {
          // the element shows the error in its own error box
        }
      });
      return b;
    });
    const p2 = ctx.text('p', 'ch10.p2', null, { copyDiag: '…', L: '…', u: '…', copyOff: '…', revOff: '…', shiftOff: '…' });
    const try1 = ctx.text('li', 'ch10.try1', null, { perHead: '…', worst: '…', m: '…' });
    body.append(
      ctx.text('p', 'ch10.p1'),
      p2,
      h('p', { class: 'inline-ctls' }, ctx.text('span', 'ch10.pretrained'), ...buttons),
      trainer,
      h('p', { class: 'inline-ctls' }, measureBtn),
      headsBox,
      ctx.text('h3', 'ch10.lm.title'),
      ctx.text('p', 'ch10.lm.p1'),
      h('p', { class: 'inline-ctls' }, ...lmButtons),
      lm,
      ctx.text('p', 'ch10.lm.p2'),
      ctx.text('p', 'ch10.lm.p3'),
      ctx.tryThis([try1, 'ch10.try2', 'ch10.lm.try', 'ch10.lm.tryInduction']),
    );
    drawTable();
    return {
      setMessages(t) {
        trainer.setAttribute('lang', ctx.state().lang);
        lm.setAttribute('lang', ctx.state().lang);
        measureBtn.textContent = t('ch10.measure');
        drawTable();
      },
      async update(c) {
        measureBtn.textContent = c.t('ch10.measure');
        if (!local.measured) {
          // The snapshots the text cites, measured by the library now.
          const lab = await c.labFor('cpu');
          const out = {};
          for (const task of ['copy', 'reverse', 'shift']) out[task] = measureHeads(lab, await fetchBytes(snapshotUrl(task)));
          local.measured = out;
        }
        const { copy, reverse, shift } = local.measured;
        Object.assign(p2.dataset, { copyOff: String(copy.allOff), reverseOff: String(reverse.allOff), shiftOff: String(shift.allOff) });
        c.texts.bind(p2, 'ch10.p2', {
          copyDiag: copy.heads.map((x) => fmt(x.pattern, 2)).join(' / '), L: copy.L, u: fmt(1 / copy.L, 3),
          copyOff: pct(copy.allOff), revOff: pct(reverse.allOff), shiftOff: pct(shift.allOff),
        });
        const worst = reverse.heads.reduce((a, b) => (b.off < a.off ? b : a));
        const sharp = reverse.heads.reduce((a, b) => (b.rowMax > a.rowMax ? b : a));
        Object.assign(try1.dataset, { worst: String(worst.head), sharpest: String(sharp.head) });
        c.texts.bind(try1, worst === sharp ? 'ch10.try1' : 'ch10.try1b', {
          perHead: reverse.heads.map((x) => pct(x.off)).join(' / '), worst: worst.head, m: fmt(worst.rowMax, 3), s: sharp.head,
        });
      },
    };
  },
};
