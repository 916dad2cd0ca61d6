// Chapter 1 — self-attention without projections: softmax(X·Xᵀ/√d)·X on the
// tokens of sentence 1 (tutorial 1, step 1).
import { h, fmt } from '../../components/lib/dom.js';
import { tokenize, embedBatch } from '../../components/lib/tokens.js';
import { formula, f, codeBlock, tokenChips } from '../lib/ui.js';
import { checkValue } from '../lib/state.js';
import { Provenance } from '../lib/provenance.js';
import { stepValue } from '../lib/model.js';

export default {
  deps: ['text', 'd1', 'seed', 'pe', 'scale', 'T'],
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

    body.append(
      ctx.text('p', 'ch1.p1'),
      ctx.text('p', 'ch1.why', { class: 'why' }),
      formula(f.v('Y'), f.op('='), f.fn('softmax'), '(', f.frac([f.v('X'), ' ', f.v('X'), f.sup('T')], ['√', f.v('d')]), ')', ' ', f.v('X')),
      ctx.text('p', 'ch1.p2'),
      h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch1-d' }, ctx.text('span', 'ch1.d'), dInput), dMsg),
      h('div', { class: 'figs' },
        ctx.text('div', 'ch1.tokens', { class: 'panel-title' }),
        chips,
        peLine,
        h('div', { class: 'fig-row' }, xMap.el, wMap.el, oMap.el),
        prov.box,
        selfLine,
        code),
      ctx.tryThis(['ch1.try1', try2, 'ch1.try3']),
    );

    return {
      async update(c, state) {
        const t = c.t;
        const lab = c.lab();
        if (document.activeElement !== dInput) dInput.value = String(state.d1);
        const d = state.d1;
        let tokens = tokenize(state.text);
        if (!tokens.length) tokens = ['∅'];
        const L = tokens.length;
        const pe = state.pe ? (await lab.positionalEncoding(L, d)).data : null;
        const x = embedBatch([tokens], L, d, state.seed, pe);
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
        ctx.texts.bind(peLine, state.pe ? 'ch1.peOn' : 'ch1.peOff');
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
