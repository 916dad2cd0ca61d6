// Chapter 6 — sinusoidal positional encoding: the position × dimension map,
// sin/cos curves of chosen dimensions, the base, PE·PEᵀ, and the moment PE
// is added to the embeddings (tutorial 1, step 5).
// The weights switch (state w6): 'random' adds the sinusoids to seeded
// embeddings; 'learned' shows the shipped model's learned positions (wpe,
// GPT-2 learns one vector per position) beside the sinusoidal ones at the
// same [P, E], and its input x = wte + wpe (lib/learned-layer.js).
import { h, fmt } from '../../components/lib/dom.js';
import { CurveChart, parseDims, peGram, cosineFromGram, cosineDomain } from '../../components/lib/pe-view.js';
import { embedBatch } from '../../components/lib/tokens.js';
import { reducedMotion } from '../../components/lib/motion.js';
import { deriveTokens } from '../lib/model.js';
import { formula, f, codeBlock } from '../lib/ui.js';
import { checkValue } from '../lib/state.js';
import { weightsSwitch, learnedText, loadingText, modelSizes, addRows } from '../lib/learned-layer.js';
import { modelTensor, embeddingRows } from '../lib/learned.js';

export default {
  deps: ['E', 'peBase', 'peN', 'peDims', 'text', 'text2', 'B', 'L', 'seed', 'w6'],
  mount(ctx, body) {
    const baseRange = h('input', { type: 'range', id: 'ch6-base-range', min: '0.3', max: '6', step: '0.01' });
    const baseInput = h('input', { type: 'number', class: 'al-input', id: 'ch6-base', min: '1.5', max: '1000000', step: 'any' });
    const nInput = h('input', { type: 'number', class: 'al-input', id: 'ch6-n', min: '1', max: '512', step: '1' });
    const dimsInput = h('input', { type: 'text', class: 'al-input wide', id: 'ch6-dims', maxlength: '40', spellcheck: 'false' });
    const msg = h('span', { class: 'ctl-msg', role: 'alert', hidden: true });
    const commit = (key, raw) => {
      const r = checkValue(key, raw);
      msg.hidden = !r.error;
      if (r.error) msg.textContent = ctx.t(`err.${r.error.key}`, r.error.params);
      else ctx.set({ [key]: r.value });
    };
    baseRange.addEventListener('input', () => commit('peBase', Math.round(10 ** Number(baseRange.value) * 100) / 100));
    baseInput.addEventListener('change', () => commit('peBase', baseInput.value.trim()));
    nInput.addEventListener('change', () => commit('peN', nInput.value.trim()));
    dimsInput.addEventListener('change', () => commit('peDims', dimsInput.value));

    const peMap = ctx.heatmap({ palette: 'diverging', rowKind: 'position', colKind: 'dimension', maxSize: 640, cellMax: 12, maxHeight: 320, domain: [-1, 1], name: 'positional_encoding' });
    const curves = new CurveChart({ t: ctx.t, height: 210 });
    const simMap = ctx.heatmap({ palette: 'viridis', rowKind: 'position', colKind: 'position', maxSize: 320, cellMax: 12, name: 'pe_similarity' });
    const try1 = ctx.text('li', 'ch6.try1', { id: 'ch6-try1' }, { far: '…', v100: '…', v10000: '…', now: '…', base: '…' });
    const embMap = ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 230, cellMax: 18, compact: true, name: 'embeddings' });
    const addMap = ctx.heatmap({ palette: 'diverging', rowKind: 'position', colKind: 'dimension', maxSize: 230, cellMax: 18, compact: true, name: 'pe_added' });
    const sumMap = ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 230, cellMax: 18, compact: true, name: 'embeddings_plus_pe' });
    embMap.el.classList.add('slide', 'emb');
    addMap.el.classList.add('slide', 'pe');
    sumMap.el.classList.add('slide', 'sum');
    const addRow = h('div', { class: 'add-anim' }, embMap.el, h('span', { class: 'op-sign', 'aria-hidden': 'true' }, '+'), addMap.el, h('span', { class: 'op-sign', 'aria-hidden': 'true' }, '='), sumMap.el);
    const replay = h('button', { type: 'button', class: 'al-btn' });
    const play = () => {
      if (reducedMotion()) return;
      addRow.classList.add('start');
      void addRow.offsetWidth;
      requestAnimationFrame(() => requestAnimationFrame(() => addRow.classList.remove('start')));
    };
    replay.addEventListener('click', play);
    const code = codeBlock('');
    let played = false;
    const sw = weightsSwitch(ctx, 'w6', 'ch6');
    const learnedLine = h('p', { class: 'small muted ch6-learned', hidden: true });
    const sinMap = ctx.heatmap({ palette: 'diverging', rowKind: 'position', colKind: 'dimension', maxSize: 640, cellMax: 12, maxHeight: 320, domain: [-1, 1], name: 'sinusoidal_encoding' });
    const sinSimMap = ctx.heatmap({ palette: 'viridis', rowKind: 'position', colKind: 'position', maxSize: 320, cellMax: 12, name: 'sinusoidal_similarity' });
    const nLabel = h('label', { class: 'inline-ctl', for: 'ch6-n' }, ctx.text('span', 'ch6.positions'), nInput);
    const tryRandom = ctx.tryThis([try1, 'ch6.try2']);
    const tryLearned = ctx.tryThis(['ch6.tryL1', 'ch6.tryL2']);

    body.append(
      ctx.text('p', 'ch6.p1'),
      formula(f.v('PE'), '(', f.v('pos'), ', 2', f.v('i'), ')', f.op('='), f.fn('sin'), '(', f.frac(f.v('pos'), [f.v('base'), f.sup(['2', f.v('i'), '/', f.v('d'), f.sub('model')])]), ')', h('span', { class: 'br' }),
        f.v('PE'), '(', f.v('pos'), ', 2', f.v('i'), '+1)', f.op('='), f.fn('cos'), '(', f.frac(f.v('pos'), [f.v('base'), f.sup(['2', f.v('i'), '/', f.v('d'), f.sub('model')])]), ')'),
      ctx.text('p', 'ch6.p2'),
      sw.el,
      h('div', { class: 'inline-ctls' },
        h('label', { class: 'inline-ctl', for: 'ch6-base-range' }, ctx.text('span', 'ch6.base'), baseRange, baseInput),
        nLabel,
        h('label', { class: 'inline-ctl', for: 'ch6-dims' }, ctx.text('span', 'ch6.dims'), dimsInput), msg),
      h('div', { class: 'figs' },
        learnedLine,
        peMap.el,
        sinMap.el,
        h('div', { class: 'fig-row' }, curves.el, simMap.el, sinSimMap.el),
        h('div', { class: 'panel-title' }, ctx.text('span', 'ch6.add'), ' ', replay),
        addRow,
        code),
      tryRandom,
      tryLearned,
    );

    return {
      setMessages(t) {
        curves.setMessages(t);
      },
      async update(c, state) {
        const t = c.t;
        curves.t = t;
        replay.textContent = t('ch6.addPlay');
        const lab = c.lab();
        const learned = sw.learned(state);
        sw.update(t, state);
        for (const el of [learnedLine, sinMap.el, sinSimMap.el, tryLearned]) el.hidden = !learned;
        for (const el of [nLabel, tryRandom]) el.hidden = learned;
        let st = null;
        if (learned) {
          st = learnedText(c, state, ['w6']);
          if (!st) {
            learnedLine.textContent = loadingText(c, state);
            return { loading: true };
          }
        }
        const sz = st && modelSizes(lab, st.model);
        // Learned: the model's own [P, E]; random: the controls'.
        const E = st ? sz.E : state.E;
        const P = st ? sz.P : state.peN;
        const base = state.peBase;
        if (document.activeElement !== baseInput) baseInput.value = String(base);
        baseRange.value = String(Math.log10(base));
        if (document.activeElement !== nInput) nInput.value = String(P);
        if (document.activeElement !== dimsInput) dimsInput.value = state.peDims;
        const pe = await lab.positionalEncoding(P, E, { base });
        const wpe = st ? modelTensor(lab, st.model, 'wpe.weight') : null;
        const shown = wpe ?? pe;
        let lim = 1;
        if (wpe) for (const v of wpe.data) lim = Math.max(lim, Math.abs(v));
        peMap.setData({ data: shown.data, rows: P, cols: E, title: wpe ? t('ch6.wpe', { P, E }) : `${t('pe.heatmap')} [${P}, ${E}]`, tensor: shown, dimNames: ['position', 'dimension'], domain: wpe ? [-lim, lim] : [-1, 1] });
        let dims = parseDims(state.peDims, E);
        if (!dims.length) dims = [0];
        // The curves are the sinusoids' (their legend says sin / cos) in both views.
        curves.setData(pe.data, P, E, dims);
        const S = Math.min(P, 256);
        // Cosine similarity of positions (1 on the diagonal) on a sequential scale.
        const cosine = async (data) => cosineFromGram(await peGram(lab, data, S, E), S);
        const sim = await cosine(pe.data);
        const shownSim = wpe ? await cosine(wpe.data) : sim;
        simMap.setData({ data: shownSim, rows: S, cols: S, title: wpe ? t('ch6.wpeSim', { S }) : `${t('pe.similarity')} [${S}, ${S}]`, tensor: { data: shownSim, shape: [S, S] }, domain: cosineDomain(shownSim) });
        if (wpe) {
          sinMap.setData({ data: pe.data, rows: P, cols: E, title: t('ch6.sinL', { P, E }), tensor: pe, dimNames: ['position', 'dimension'] });
          sinSimMap.setData({ data: sim, rows: S, cols: S, title: t('ch6.sinSim', { S }), tensor: { data: sim, shape: [S, S] }, domain: cosineDomain(sim) });
          // Neighbours: the mean cosine of positions i and i + 1, learned and sinusoidal.
          const near = (m) => {
            let a = 0;
            for (let i = 0; i + 1 < S; i++) a += m[i * S + i + 1] / (S - 1);
            return a;
          };
          const nl = near(shownSim);
          const ns = near(sim);
          Object.assign(learnedLine.dataset, { near: String(nl), nearSin: String(ns) });
          learnedLine.textContent = [t('ch6.learned', { model: st.name, P, E, nl: fmt(nl, 3), ns: fmt(ns, 3), base: String(base) }), st.notes].filter(Boolean).join(' ');
        }
        // "Try this" quotes the map's own numbers, and the same computation at bases 100 and 10000.
        const far = S - 1;
        const at = async (b) => (b === base ? sim : await cosine((await lab.positionalEncoding(P, E, { base: b })).data))[far];
        const v100 = await at(100);
        const v10000 = await at(10000);
        Object.assign(try1.dataset, { far: String(far), now: String(sim[far]), v100: String(v100), v10000: String(v10000) });
        ctx.texts.bind(try1, 'ch6.try1', { far, v100: fmt(v100, 3), v10000: fmt(v10000, 3), now: fmt(sim[far], 3), base: String(base) });

        let L;
        let row;
        let x0;
        let peL;
        let sum;
        if (st) {
          // The model's input to layer 0: x = wte[ids] + wpe[0..L), added by the library.
          L = st.L;
          row = st.labels;
          x0 = embeddingRows(lab, st.model, st.ids);
          peL = { data: wpe.data.slice(0, L * E), shape: [L, E] };
          sum = await addRows(lab, x0, peL.data, L, E);
        } else {
          const tk = deriveTokens(state);
          L = tk.L;
          row = tk.tokens[0];
          x0 = embedBatch([row], L, E, state.seed, null);
          peL = await lab.positionalEncoding(L, E, { base });
          sum = x0.map((v, i) => v + peL.data[i]);
        }
        const m = Math.max(...[x0, sum].map((a) => a.reduce((mx, v) => Math.max(mx, Math.abs(v)), 0)));
        const dom = [-m, m];
        embMap.setData({ data: x0, rows: L, cols: E, rowLabels: row, title: t(st ? 'ch6.embL' : 'ch6.emb', { L, E }), domain: dom, tensor: { data: x0, shape: [L, E] } });
        addMap.setData({ data: peL.data, rows: L, cols: E, title: t(st ? 'ch6.peL' : 'ch6.pe', { L, E }), domain: dom, tensor: peL });
        sumMap.setData({ data: sum, rows: L, cols: E, rowLabels: row, title: t(st ? 'ch6.sumL' : 'ch6.sum', { L, E }), domain: dom, tensor: { data: sum, shape: [L, E] } });
        code.firstChild.textContent = st
          ? `// GPT-2 learns its positions: wpe [${P}, ${E}], one trained vector per position (no formula)\nconst x = wte[ids] + wpe[0..${L});   // [${L}, ${E}], the input of layer 0 (chapter 7)\nconst pe = lab.positionalEncoding(${P}, ${E}${base !== 10000 ? `, { base: ${fmt(base, 2)} }` : ''}); // the sinusoidal alternative, [${P}, ${E}]`
          : `const pe = lab.positionalEncoding(${P}, ${E}${base !== 10000 ? `, { base: ${fmt(base, 2)} }` : ''}); // [${P}, ${E}]\nconst x = embeddings.map((v, i) => v + pe.data[i]);   // the tutorial: x + self.pe[:, :x.size(1)]`;
        if (!played && typeof IntersectionObserver === 'function') {
          played = true;
          const io = new IntersectionObserver((entries) => {
            if (entries.some((e) => e.isIntersecting)) {
              io.disconnect();
              play();
            }
          }, { threshold: 0.4 });
          io.observe(addRow);
        }
      },
    };
  },
};
