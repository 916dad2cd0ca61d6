// Chapter 5 — masks: padding over a batch of unequal sentences, causal, both;
// −1e9 before softmax and zeros after; the PyTorch keep / TensorFlow block
// conventions; cross-attention with Lq ≠ Lk (tutorial 2's masking section).
// The weights switch (state w5): 'random' runs on chapter 2's seeded batch;
// 'learned' on one head (state hd) of the shipped model's layer 0 over the
// reader's sentence (B = 1), where causal is the mask the model was trained
// with: its own attention is exactly zero above the diagonal.
import { h, fmt } from '../../components/lib/dom.js';
import { tokenize, embedBatch } from '../../components/lib/tokens.js';
import { maxAbsDiff } from '../../components/lib/tensor-math.js';
import { deriveInputs, projections, maskSpec, libraryProjection, stepValue } from '../lib/model.js';
import { codeBlock, tokenChips } from '../lib/ui.js';
import { Provenance } from '../lib/provenance.js';
import { weightsSwitch, learnedText, loadingText, layerZero, headOf, checkAgainstModel } from '../lib/learned-layer.js';

function miniMatrix(bits, L, cls) {
  const rows = [];
  for (let i = 0; i < L; i++) {
    const tds = [];
    for (let j = 0; j < L; j++) {
      const v = bits[i * L + j];
      tds.push(h('td', { class: v ? 'one' : '' }, String(v)));
    }
    rows.push(h('tr', null, tds));
  }
  return h('table', { class: `mini-mat ${cls}` }, h('tbody', null, rows));
}

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'dk', 'dv', 'seed', 'pe', 'mask5', 'scale', 'T', 'b5', 'w5', 'hd'],
  mount(ctx, body) {
    const batchBox = h('div', { class: 'batch-box' });
    const batchTitle = h('div', { class: 'panel-title' });
    const noneNote = h('p', { class: 'check-line', hidden: true });
    const kinds = ['none', 'padding', 'causal', 'both'];
    const kindBtns = kinds.map((k) => {
      const b = h('button', { type: 'button', class: 'al-btn', dataset: { mask: k } });
      b.addEventListener('click', () => ctx.set({ mask5: k }));
      return b;
    });
    const bSelect = h('select', { class: 'al-select', id: 'ch5-b' });
    bSelect.addEventListener('change', () => ctx.set({ b5: Number(bSelect.value) }));
    const keepMap = ctx.heatmap({ maxSize: 240, cellMax: 30, name: 'ch5_keep_mask', domain: [0, 1] });
    const beforeMap = ctx.heatmap({ palette: 'diverging', maxSize: 260, cellMax: 36, name: 'ch5_scores_before_softmax' });
    const afterMap = ctx.heatmap({ maxSize: 260, cellMax: 36, name: 'ch5_weights_after_softmax' });
    const prov = new Provenance(ctx, { id: 'ch5-prov' });
    let provData = null;
    prov.scores({ map: beforeMap, source: () => provData && { q: provData.q, k: provData.k, D: provData.dk, scale: provData.s, rowLabels: provData.labels, colLabels: provData.labels } });
    prov.weights({ map: afterMap, source: () => provData && { scores: provData.before, weights: provData.w, Lk: provData.L, rowLabels: provData.labels, colLabels: provData.labels }, bandMaps: [beforeMap] });
    const keepBox = h('div', { class: 'mat-box' });
    const blockBox = h('div', { class: 'mat-box' });
    const sameLine = h('p', { class: 'check-line' });
    const crossP = h('p');
    const crossMap = ctx.heatmap({ maxSize: 320, cellMax: 40, name: 'ch5_cross_attention' });
    prov.weights({ map: crossMap, source: () => provData?.cross ?? null });
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w5', 'ch5');
    const learnedLine = h('p', { class: 'small muted ch5-learned', hidden: true });
    const modelLine = h('p', { class: 'check-line ch5-model', hidden: true });
    const opened = ctx.text('p', 'ch5.opened', { class: 'small muted' });
    const bLabel = h('label', { class: 'inline-ctl', for: 'ch5-b' }, ctx.text('span', 'ch4.batchItem'), bSelect);
    // The same computation in a trained encoder-decoder: "Your model" with a translation model.
    const realLink = ctx.text('a', 'ch5.realCross', { href: '#ym-encdec', class: 'ch5-real-cross' });
    realLink.addEventListener('click', (e) => {
      const target = document.getElementById('ym-encdec') ?? document.getElementById('your-model');
      if (!target) return;
      e.preventDefault();
      const reduced = matchMedia('(prefers-reduced-motion: reduce)').matches;
      target.scrollIntoView({ behavior: reduced ? 'auto' : 'smooth', block: 'start' });
      // The chapters in between mount as they come into view and grow: follow the paragraph until it stays in place.
      let tries = 0;
      const settle = () => {
        const top = target.getBoundingClientRect().top;
        if ((top < 0 || top > innerHeight / 2) && tries++ < 10) {
          target.scrollIntoView({ behavior: 'auto', block: 'start' });
          setTimeout(settle, 200);
        }
      };
      setTimeout(settle, reduced ? 200 : 700);
    });
    const crossBox = h('div', null, ctx.text('h3', 'ch5.cross'), crossP, crossMap.el);
    // Shown with random and learned weights alike.
    const realLine = h('p', { class: 'small ch5-real-line' }, realLink, ctx.text('span', 'ch5.realCrossTail'));
    const crossNote = ctx.text('p', 'ch5.crossL', { class: 'small muted', hidden: true });
    const tryRandom = ctx.tryThis(['ch5.try1', 'ch5.try2']);
    const tryLearned = ctx.tryThis(['ch5.tryL1', 'ch5.tryL2']);

    body.append(
      ctx.text('p', 'ch5.p1'),
      h('ul', null, ctx.text('li', 'ch5.padding'), ctx.text('li', 'ch5.causal')),
      sw.el,
      h('div', { class: 'figs' },
        learnedLine,
        batchTitle,
        batchBox,
        opened,
        noneNote,
        h('div', { class: 'inline-ctls' },
          h('span', { class: 'inline-ctl' }, ctx.text('span', 'ctl.mask'), h('span', { class: 'seg', role: 'group' }, kindBtns)),
          bLabel),
        h('div', { class: 'fig-row' }, keepMap.el, beforeMap.el, afterMap.el),
        modelLine,
        prov.box,
        ctx.text('h3', 'ch5.conv'),
        h('div', { class: 'conv' },
          h('div', { class: 'panel' }, ctx.text('p', 'ch5.torch', { class: 'small' }), keepBox),
          h('div', { class: 'panel' }, ctx.text('p', 'ch5.tf', { class: 'small' }), blockBox)),
        sameLine,
        code,
        crossBox,
        crossNote,
        realLine),
      tryRandom,
      tryLearned,
    );

    return {
      async update(c, state) {
        const t = c.t;
        const lab = c.lab();
        const learned = sw.learned(state);
        sw.update(t, state);
        for (const el of [learnedLine, modelLine, crossNote, tryLearned]) el.hidden = !learned;
        for (const el of [opened, bLabel, crossBox, tryRandom]) el.hidden = learned;
        let inp;
        let p;
        let learnedRun = null;
        if (learned) {
          // The reader's sentence (B = 1) through one head of the shipped model's layer 0.
          const st = learnedText(c, state, ['w5']);
          if (!st) {
            learnedLine.textContent = loadingText(c, state);
            return { loading: true };
          }
          const z = await layerZero(lab, st.model, st.ids);
          const hd = Math.min(state.hd, z.H - 1);
          inp = { B: 1, L: st.L, tokens: [st.labels], lengths: [st.L] };
          p = { ...headOf(z, hd), dk: z.D, dv: z.D };
          learnedRun = { st, z, hd };
          learnedLine.textContent = [t('ch5.learned', { model: st.name, h: hd, L: st.L }), st.notes].filter(Boolean).join(' ');
        } else {
          inp = await deriveInputs(lab, state, c.cache);
          p = await projections(c.lab(), c.objects, inp, state, c.cache);
        }
        const { B, L, tokens, lengths } = inp;
        const { dk, dv } = p;
        const b = Math.min(state.b5, B - 1);
        const s = (state.scale ? 1 / Math.sqrt(dk) : 1) / state.T;

        batchTitle.textContent = `${t('ch5.batch', { B, L })} · ${t('ch5.lengths', { lengths: lengths.join(', ') })}`;
        batchBox.replaceChildren(...tokens.map((row, k) => h('div', { class: 'batch-row' }, h('span', { class: 'bname' }, `b=${k}`), tokenChips(row, lengths[k]))));
        kindBtns.forEach((btn, i) => {
          btn.textContent = t(`ctl.mask.${kinds[i]}`);
          btn.setAttribute('aria-pressed', String(state.mask5 === kinds[i]));
        });
        noneNote.hidden = state.mask5 !== 'none';
        if (state.mask5 === 'none') noneNote.textContent = t('ch5.kindNone');
        bSelect.replaceChildren(...Array.from({ length: B }, (_, k) => h('option', { value: String(k), selected: k === b }, String(k))));

        const spec = maskSpec(state.mask5, lengths);
        const q = { data: p.q, shape: [B, L, dk] };
        const k = { data: p.k, shape: [B, L, dk] };
        const v = { data: p.v, shape: [B, L, dv] };
        const r = await lab.scaledDotProductAttention(q, k, v, { scale: s, mask: spec, trace: 'values' });

        // Before softmax: the library's masked scores (−1e9 where blocked, as
        // masked_fill does); the keep mask is read back from them.
        const LL = L * L;
        const maskedAll = (stepValue(r.trace, 'mask') ?? stepValue(r.trace, 'scores')).data;
        const keepAll = maskedAll.map((x) => (x <= -1e8 ? 0 : 1));
        const before = maskedAll.subarray(b * LL, (b + 1) * LL);
        const keep = keepAll.subarray(b * LL, (b + 1) * LL);
        const labels = tokens[b];
        keepMap.setData({ data: keep, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch5.keep', { b }), tensor: { data: keep, shape: [L, L] } });
        beforeMap.setData({ data: before, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch5.before'), tensor: { data: before, shape: [L, L] } });
        provData = { q: p.q.subarray(b * L * dk, (b + 1) * L * dk), k: p.k.subarray(b * L * dk, (b + 1) * L * dk), dk, s, labels, L, before, w: r.weights.data.subarray(b * LL, (b + 1) * LL) };
        afterMap.setData({ data: r.weights.data, offset: b * LL, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch5.after'), tensor: r.weights, dimNames: ['b', 'query', 'key'] });

        // The same mask as an explicit keep tensor (PyTorch) and block tensor (TensorFlow).
        const blockAll = keepAll.map((x) => 1 - x);
        const rk = await lab.scaledDotProductAttention(q, k, v, { scale: s, mask: { kind: 'keep', data: keepAll, shape: [B, L, L] } });
        const rb = await lab.scaledDotProductAttention(q, k, v, { scale: s, mask: { kind: 'block', data: blockAll, shape: [B, L, L] } });
        const diff = maxAbsDiff(rk.weights.data, rb.weights.data);
        const diffSpec = maxAbsDiff(rk.weights.data, r.weights.data);
        const show = Math.min(L, 12);
        const sub = (arr) => Array.from({ length: show * show }, (_, n) => arr[b * LL + Math.floor(n / show) * L + (n % show)]);
        keepBox.replaceChildren(h('div', { class: 'small muted' }, t('ch5.keepMat')), miniMatrix(sub(keepAll), show, 'keep-mat'));
        blockBox.replaceChildren(h('div', { class: 'small muted' }, t('ch5.blockMat')), miniMatrix(sub(blockAll), show, 'block-mat'));
        sameLine.replaceChildren();
        sameLine.dataset.diff = String(Math.max(diff, diffSpec));
        ctx.texts.bind(sameLine, 'ch5.same', { diff: fmt(Math.max(diff, diffSpec), 3) });
        code.firstChild.textContent = [
          '# PyTorch (mask 1 = keep)',
          'scores = scores.masked_fill(mask == 0, -1e9)',
          '# TensorFlow (mask 1 = blocked)',
          'scaled_attention_logits += (mask * -1e9)',
          '// attention-lab: the same three ways',
          `lab.scaledDotProductAttention(Q, K, V, { mask: ${JSON.stringify(spec ?? null)} })`,
          "lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'keep', data: keep, shape: [B, L, L] } })",
          "lab.scaledDotProductAttention(Q, K, V, { mask: { kind: 'block', data: block, shape: [B, L, L] } })",
        ].join('\n');

        if (learnedRun) {
          // The model's own attention (every layer and head): exactly zero above the diagonal.
          const chk = checkAgainstModel(learnedRun.st.model, learnedRun.st.ids, learnedRun.z);
          const cfg = learnedRun.st.model.config;
          modelLine.dataset.above = String(chk.above);
          modelLine.textContent = t('ch5.model', { N: cfg.numLayers, H: cfg.numHeads, above: String(chk.above) });
          return r;
        }
        // Cross-attention: sentence 2 queries sentence 1.
        let qt = tokenize(state.text2);
        let kt = tokenize(state.text);
        if (!qt.length) qt = ['∅'];
        if (!kt.length) kt = ['∅'];
        qt = qt.slice(0, 64);
        kt = kt.slice(0, 64);
        const Lq = qt.length;
        const Lk = kt.length;
        const E = state.E;
        const peQ = state.pe ? (await lab.positionalEncoding(Lq, E)).data : null;
        const peK = state.pe ? (await lab.positionalEncoding(Lk, E)).data : null;
        const xq = embedBatch([qt], Lq, E, state.seed, peQ);
        const xk = embedBatch([kt], Lk, E, state.seed, peK);
        const proj = (x, n, w, d, tag) => libraryProjection(lab, c.objects, { x, B: 1, n, E, w, d, tag, seed: state.seed });
        const cq = await proj(xq, Lq, p.wq, dk, 'cq');
        const ck = await proj(xk, Lk, p.wk, dk, 'ck');
        const cv = await proj(xk, Lk, p.wv, dv, 'cv');
        const causal = state.mask5 === 'causal' || state.mask5 === 'both';
        const rc = await lab.scaledDotProductAttention({ data: cq, shape: [Lq, dk] }, { data: ck, shape: [Lk, dk] }, { data: cv, shape: [Lk, dv] }, { scale: s, mask: causal ? { kind: 'causal' } : undefined });
        crossP.textContent = t('ch5.crossP', { lq: Lq, lk: Lk });
        provData.cross = { weights: rc.weights.data, Lk, rowLabels: qt, colLabels: kt };
        crossMap.setData({ data: rc.weights.data, rows: Lq, cols: Lk, rowLabels: qt, colLabels: kt, title: t('ch5.crossMap', { lq: Lq, lk: Lk }), tensor: rc.weights });
      },
    };
  },
};
