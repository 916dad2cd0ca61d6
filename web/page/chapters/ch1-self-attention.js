// Chapter 1 — self-attention without projections: softmax(X·Xᵀ/√d)·X on the
// tokens of sentence 1 (tutorial 1, step 1). The weights switch (state w1):
// X from seeded embeddings (random) or the learned character embeddings of
// the shipped model of the page's language (learned: rows of its wte, d = E).
import { h, fmt } from '../../components/lib/dom.js';
import { tokenize, embedBatch } from '../../components/lib/tokens.js';
import { formula, f, codeBlock, tokenChips } from '../lib/ui.js';
import { checkValue } from '../lib/state.js';
import { Provenance } from '../lib/provenance.js';
import { stepValue } from '../lib/model.js';
import { learnedModel, modelLang, fitText, tokenLabels, embeddingRows, offerModel } from '../lib/learned.js';

export default {
  deps: ['text', 'd1', 'seed', 'pe', 'scale', 'T', 'w1'],
  mount(ctx, body) {
    const dInput = h('input', { type: 'number', class: 'al-input', id: 'ch1-d', min: '1', max: '1024', step: '1' });
    const dMsg = h('span', { class: 'ctl-msg', role: 'alert', hidden: true });
    dInput.addEventListener('change', () => {
      const r = checkValue('d1', dInput.value.trim());
      dMsg.hidden = !r.error;
      if (r.error) dMsg.textContent = ctx.t(`err.${r.error.key}`, r.error.params);
      else ctx.set({ d1: r.value });
    });
    const chips = h('div', { class: 'chips-box' });
    const xMap = ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 300, cellMax: 26, name: 'ch1_X' });
    const wMap = ctx.heatmap({ maxSize: 300, cellMax: 44, name: 'ch1_weights' });
    const oMap = ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 300, cellMax: 26, name: 'ch1_output' });
    const prov = new Provenance(ctx, { id: 'ch1-prov' });
    let provData = null;
    prov.weights({ map: wMap, source: () => provData });
    // Weight (i, j) compares x_i with x_j: both are rows of X.
    wMap.el.addEventListener('al-cell', (e) => xMap.setBands(e.detail ? { rows: [...new Set([e.detail.i, e.detail.j])] } : null));
    const selfLine = h('p', { class: 'check-line' });
    const peLine = h('p', { class: 'small muted ch1-pe' });
    const try2 = ctx.text('li', 'ch1.try2', { id: 'ch1-try2' }, { d: '…', n: '…', L: '…', diag: '…', off: '…' });
    const code = codeBlock('');
    const kinds = ['random', 'learned'];
    const wBtns = kinds.map((k) => {
      const b = h('button', { type: 'button', class: 'al-btn', dataset: { weights: k } });
      b.addEventListener('click', () => ctx.set({ w1: k }));
      return b;
    });
    const dRow = h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch1-d' }, ctx.text('span', 'ch1.d'), dInput), dMsg);
    const learnedLine = h('p', { class: 'small muted ch1-learned', hidden: true });
    const tryRandom = ctx.tryThis(['ch1.try1', try2, 'ch1.try3']);
    const p2 = ctx.text('p', 'ch1.p2', { class: 'ch1-p2' });
    const tryLearned = ctx.tryThis(['ch1.tryL1', 'ch1.tryL2']);
    tryLearned.hidden = true;

    body.append(
      ctx.text('p', 'ch1.p1'),
      ctx.text('p', 'ch1.why', { class: 'why' }),
      formula(f.v('Y'), f.op('='), f.fn('softmax'), '(', f.frac([f.v('X'), ' ', f.v('X'), f.sup('T')], ['√', f.v('d')]), ')', ' ', f.v('X')),
      p2,
      h('div', { class: 'inline-ctls ch1-weights' }, h('span', { class: 'inline-ctl' }, ctx.text('span', 'ch4.weights', { id: 'ch1-weights-label' }), h('span', { class: 'seg', role: 'group', 'aria-labelledby': 'ch1-weights-label' }, wBtns))),
      dRow,
      h('div', { class: 'figs' },
        ctx.text('div', 'ch1.tokens', { class: 'panel-title' }),
        chips,
        peLine,
        learnedLine,
        h('div', { class: 'fig-row' }, xMap.el, wMap.el, oMap.el),
        prov.box,
        selfLine,
        code),
      tryRandom,
      tryLearned,
    );

    return {
      async update(c, state) {
        const t = c.t;
        const lab = c.lab();
        const learned = state.w1 === 'learned';
        wBtns.forEach((b, i) => {
          b.textContent = t(`ch4.weights.${kinds[i]}`);
          b.setAttribute('aria-pressed', String(state.w1 === kinds[i]));
        });
        dRow.hidden = learned;
        if (p2.dataset.i18nKey !== (learned ? 'ch1.p2L' : 'ch1.p2')) ctx.texts.bind(p2, learned ? 'ch1.p2L' : 'ch1.p2');
        peLine.hidden = learned;
        learnedLine.hidden = !learned;
        tryRandom.hidden = learned;
        tryLearned.hidden = !learned;
        if (document.activeElement !== dInput) dInput.value = String(state.d1);
        let d = state.d1;
        let tokens;
        let x;
        if (learned) {
          // The shipped model's own character embeddings (rows of wte), without its positions.
          const lang = modelLang(state);
          const model = learnedModel(c, lang, ['w1']);
          if (!model) {
            learnedLine.textContent = t('ch4.learnedLoading', { model: t(`ch4.model.${lang}`) });
            return { loading: true };
          }
          const fit = fitText(model, state.text || '∅');
          const ids = model.encode(fit.text);
          const lb = tokenLabels(model, fit.text, ids);
          tokens = lb.labels;
          d = model.config.embedDim;
          x = embeddingRows(lab, model, ids);
          const notes = [t('ch1.learned', { model: t(`ch4.model.${lang}`), d, L: ids.length })];
          if (fit.cut) notes.push(t('ch4.learnedCut', { n: fit.cut, max: model.config.maxPositions }));
          if (lb.unknown.length) notes.push(t('hm.unknown', { chars: lb.unknown.join(' ') }));
          offerModel(c, lang, fit.text, lb);
          learnedLine.textContent = notes.join(' ');
        } else {
          tokens = tokenize(state.text);
          if (!tokens.length) tokens = ['∅'];
          const pe = state.pe ? (await lab.positionalEncoding(tokens.length, d)).data : null;
          x = embedBatch([tokens], tokens.length, d, state.seed, pe);
        }
        const L = tokens.length;
        const scale = (state.scale ? 1 / Math.sqrt(d) : 1) / state.T;
        const r = await lab.selfAttention({ data: x, shape: [L, d] }, { scale, trace: 'values' });
        // The scaled scores s·X·Xᵀ, as the library computed them.
        const scores = stepValue(r.trace, 'scores').data;
        chips.replaceChildren(tokenChips(tokens));
        xMap.setData({ data: x, rows: L, cols: d, rowLabels: tokens, title: t('ch1.x', { L, d }), tensor: { data: x, shape: [L, d] }, dimNames: ['token', 'dimension'] });
        // The title's formula follows the switches: /√d only when scaling is on, /T when T ≠ 1.
        const den = [state.scale ? '√d' : '', state.T !== 1 ? `${fmt(state.T, 2)}` : ''].filter(Boolean).join('·');
        const fx = `softmax(X·Xᵀ${den ? `/${den.includes('·') ? `(${den})` : den}` : ''})`;
        wMap.setData({ data: r.weights.data, rows: L, cols: L, rowLabels: tokens, colLabels: tokens, title: t('ch1.w', { L, f: fx }), tensor: r.weights });
        provData = { weights: r.weights.data, scores, Lk: L, rowLabels: tokens, colLabels: tokens };
        if (!learned) ctx.texts.bind(peLine, state.pe ? 'ch1.peOn' : 'ch1.peOff');
        oMap.setData({ data: r.output.data, rows: L, cols: d, rowLabels: tokens, title: t('ch1.out', { L, d }), tensor: r.output, dimNames: ['token', 'dimension'] });
        let diag = 0;
        for (let i = 0; i < L; i++) diag += r.weights.data[i * L + i];
        selfLine.textContent = t('ch1.self', { v: fmt(diag / L, 3), u: fmt(1 / L, 3) });
        // "Try this" counts, from the weights drawn above, the rows whose largest weight is their own token.
        let own = 0;
        for (let i = 0; i < L; i++) {
          let a = 0;
          for (let j = 1; j < L; j++) if (r.weights.data[i * L + j] > r.weights.data[i * L + a]) a = j;
          if (a === i) own++;
        }
        // Magnitudes of X·Xᵀ (the library's scores divided by the scale).
        let dg = 0;
        let off = 0;
        for (let i = 0; i < L; i++) {
          for (let j = 0; j < L; j++) {
            if (i === j) dg += scores[i * L + j] / scale / L;
            else off += Math.abs(scores[i * L + j] / scale) / Math.max(1, L * L - L);
          }
        }
        Object.assign(try2.dataset, { own: String(own), diag: String(dg), off: String(off) });
        ctx.texts.bind(try2, 'ch1.try2', { d, n: own, L, diag: fmt(dg, 3), off: fmt(off, 3) });
        code.firstChild.textContent = `const { output, weights } = lab.selfAttention(X /* [${L}, ${d}] */${state.scale && state.T === 1 ? '' : `, { scale: ${fmt(scale, 5)} }`});\n// output [${L}, ${d}], weights [${L}, ${L}]`;
      },
    };
  },
};
