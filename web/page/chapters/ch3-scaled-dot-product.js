// Chapter 3 — scaled dot-product attention in four operations (dot
// products, scaling, softmax, weighted sum), with the √d_k switch, the
// temperature and the entropy of each row (tutorial 1, step 3).
// The weights switch (state w3): 'random' runs on chapter 2's seeded Q, K, V;
// 'learned' on one head (state hd) of the shipped model's layer 0, whose
// Q, K, V are its own projections, under its causal mask: with √d_k on and
// T = 1 the weights are the model's own attention (lib/learned-layer.js).
import { h, fmt } from '../../components/lib/dom.js';
import { reducedMotion } from '../../components/lib/motion.js';
import { rowEntropy } from '../../components/lib/tensor-math.js';
import { deriveInputs, projections, stepValue } from '../lib/model.js';
import { formula, f, codeBlock } from '../lib/ui.js';
import { Provenance } from '../lib/provenance.js';
import { weightsSwitch, learnedText, loadingText, layerZero, headOf, checkAgainstModel } from '../lib/learned-layer.js';

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'dk', 'dv', 'seed', 'pe', 'scale', 'T', 'mask', 'step3', 'w3', 'hd'],
  mount(ctx, body) {
    const ops = ['ch3.op1', 'ch3.op2', 'ch3.op3', 'ch3.op4'];
    const maps = [
      ctx.heatmap({ palette: 'diverging', maxSize: 240, cellMax: 36, name: 'ch3_dot_products' }),
      ctx.heatmap({ palette: 'diverging', maxSize: 240, cellMax: 36, name: 'ch3_scaled_scores' }),
      ctx.heatmap({ maxSize: 240, cellMax: 36, name: 'ch3_weights' }),
      ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 240, cellMax: 20, name: 'ch3_output' }),
    ];
    const qMap = ctx.heatmap({ palette: 'diverging', rowKind: 'query', colKind: 'dimension', maxSize: 300, cellMax: 20, maxHeight: 160, name: 'ch3_Q' });
    const kMap = ctx.heatmap({ palette: 'diverging', rowKind: 'dimension', colKind: 'key', maxSize: 200, cellMax: 20, maxHeight: 200, name: 'ch3_K_transposed' });
    qMap.el.classList.add('ch3-q');
    kMap.el.classList.add('ch3-kt');
    const prov = new Provenance(ctx, { id: 'ch3-prov' });
    let provData = null;
    for (const [k, scale] of [[0, 'dots'], [1, 'scaled']]) {
      prov.scores({
        map: maps[k],
        source: () => provData && { q: provData.q, k: provData.k, D: provData.dk, scale: scale === 'dots' ? 1 : provData.s, rowLabels: provData.labels, colLabels: provData.labels },
        bands: [{ map: qMap, axis: 'rows', of: 'q' }, { map: kMap, axis: 'cols', of: 'k' }],
      });
    }
    prov.weights({ map: maps[2], source: () => provData && { scores: provData.scaled, weights: provData.weights, Lk: provData.L, rowLabels: provData.labels, colLabels: provData.labels }, bandMaps: [maps[1]] });
    const panels = maps.map((m, k) => h('div', { class: 'panel op-panel', dataset: { op: String(k + 1) } }, m.el));
    const stepButtons = ops.map((_, k) => {
      const b = h('button', { type: 'button', class: 'al-btn', dataset: { step: String(k + 1) } }, String(k + 1));
      b.addEventListener('click', () => {
        stopPlay();
        ctx.set({ step3: k + 1 });
      });
      return b;
    });
    const playBtn = h('button', { type: 'button', class: 'al-btn ch3-play' });
    let playing = null;
    const stopPlay = () => {
      if (playing) clearTimeout(playing);
      playing = null;
      playBtn.setAttribute('aria-pressed', 'false');
    };
    playBtn.addEventListener('click', () => {
      if (playing) return stopPlay();
      playBtn.setAttribute('aria-pressed', 'true');
      let k = 1;
      const tick = () => {
        ctx.set({ step3: k });
        k++;
        if (k <= 4) playing = setTimeout(tick, reducedMotion() ? 400 : 1100);
        else stopPlay();
      };
      tick();
    });
    // Local mirrors of the shared √d_k switch and temperature (same state keys).
    const scaleBox = h('input', { type: 'checkbox', id: 'ch3-scale' });
    scaleBox.addEventListener('change', () => ctx.set({ scale: scaleBox.checked }));
    const tRange = h('input', { type: 'range', id: 'ch3-T', min: '0.05', max: '5', step: '0.05' });
    const tOut = h('output', { class: 'ctl-value', for: 'ch3-T' });
    tRange.addEventListener('input', () => ctx.set({ T: Math.round(Number(tRange.value) * 100) / 100 }));
    const scaleLine = h('p', { class: 'check-line' });
    const sharedLine = h('p', { class: 'small muted ch3-shared' });
    const entropyHead = h('p', { class: 'small muted' });
    const entropy = h('div', { class: 'entropy', role: 'list' });
    const meanLine = h('p', { class: 'check-line' });
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w3', 'ch3');
    const hdSelect = h('select', { class: 'al-select', id: 'ch3-hd' });
    hdSelect.addEventListener('change', () => ctx.set({ hd: Number(hdSelect.value) }));
    const hdRow = h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch3-hd' }, ctx.text('span', 'ch3.head'), hdSelect));
    const learnedLine = h('p', { class: 'small muted ch3-learned', hidden: true });
    const modelLine = h('p', { class: 'check-line ch3-model', hidden: true });
    const tryRandom = ctx.tryThis(['ch3.try1', 'ch3.try2']);
    const tryLearned = ctx.tryThis(['ch3.tryL1', 'ch3.try2']);

    body.append(
      ctx.text('p', 'ch3.p1'),
      formula(f.fn('Attention'), '(', f.v('Q'), ',', f.v('K'), ',', f.v('V'), ')', f.op('='), f.fn('softmax'), '(', f.frac([f.v('Q'), f.v('K'), f.sup('T')], ['√', f.v('d'), f.sub('k')]), ')', f.v('V')),
      ctx.text('p', 'ch3.p2'),
      sw.el,
      hdRow,
      learnedLine,
      h('div', { class: 'inline-ctls' },
        h('label', { class: 'inline-ctl', for: 'ch3-scale' }, scaleBox, ctx.text('span', 'ctl.scale')),
        h('label', { class: 'inline-ctl', for: 'ch3-T' }, ctx.text('span', 'ctl.T'), tRange, tOut)),
      h('div', { class: 'stepper' }, ctx.text('span', 'ch3.stepLabel', { class: 'muted small' }), ...stepButtons, playBtn),
      h('div', { class: 'figs' },
        h('div', { class: 'ops' }, ...panels),
        prov.box,
        h('div', { class: 'fig-row ch3-qk' }, qMap.el, kMap.el),
        scaleLine,
        modelLine,
        sharedLine,
        entropyHead,
        entropy,
        meanLine,
        code),
      tryRandom,
      tryLearned,
    );

    let lastStep = 0;
    return {
      setMessages(t) {
        playBtn.textContent = t('ch3.play');
      },
      async update(c, state) {
        const t = c.t;
        playBtn.textContent = t('ch3.play');
        scaleBox.checked = state.scale;
        tRange.value = String(state.T);
        tOut.textContent = state.T.toFixed(2);
        const lab = c.lab();
        const learned = sw.learned(state);
        sw.update(t, state);
        hdRow.hidden = !learned;
        learnedLine.hidden = !learned;
        modelLine.hidden = !learned;
        tryRandom.hidden = learned;
        tryLearned.hidden = !learned;
        let L, labels, dk, dv, q, k, v, lengths;
        const mask = [];
        let learnedRun = null;
        if (learned) {
          // One head of the shipped model's layer 0: its own Q, K, V [L, D], its causal mask.
          const st = learnedText(c, state, ['w3']);
          if (!st) {
            learnedLine.textContent = loadingText(c, state);
            return { loading: true };
          }
          const z = await layerZero(lab, st.model, st.ids);
          const hd = Math.min(state.hd, z.H - 1);
          if (hdSelect.options.length !== z.H) hdSelect.replaceChildren(...Array.from({ length: z.H }, (_, n) => h('option', { value: String(n) }, String(n))));
          hdSelect.value = String(hd);
          ({ L, labels } = st);
          dk = dv = z.D;
          ({ q, k, v } = headOf(z, hd));
          lengths = [L];
          mask.push({ kind: 'causal' });
          learnedRun = { st, z, hd };
          learnedLine.textContent = [t('ch3.learned', { model: st.name, h: hd, H: z.H, D: z.D, L }), st.notes].filter(Boolean).join(' ');
        } else {
          const inp = await deriveInputs(lab, state, c.cache);
          const p = await projections(c.lab(), c.objects, inp, state, c.cache);
          ({ L, lengths } = inp);
          labels = inp.tokens[0];
          ({ dk, dv } = p);
          q = p.q.subarray(0, L * dk);
          k = p.k.subarray(0, L * dk);
          v = p.v.subarray(0, L * dv);
          if (state.mask === 'causal' || state.mask === 'both') mask.push({ kind: 'causal' });
          if (state.mask === 'padding' || state.mask === 'both') mask.push({ kind: 'padding', lengths: [lengths[0]] });
        }
        const s = (state.scale ? 1 / Math.sqrt(dk) : 1) / state.T;
        const Q = { data: q, shape: [L, dk] };
        const K = { data: k, shape: [L, dk] };
        const V = { data: v, shape: [L, dv] };
        const r = await lab.scaledDotProductAttention(Q, K, V, { scale: s, mask: mask.length ? mask : undefined, trace: 'values' });
        // Step 2 is the library's scaled (and masked, −1e9) scores; step 1 the
        // same call with scale 1, whose scores are the plain dot products.
        const scaled = (stepValue(r.trace, 'mask') ?? stepValue(r.trace, 'scores')).data;
        const dots = stepValue((await lab.scaledDotProductAttention(Q, K, V, { scale: 1, trace: 'values', needWeights: false })).trace, 'scores').data;
        if (learnedRun) {
          // The same head in the model's own forward pass (model.forwardSync): equal when s = 1/√D.
          const { st, z, hd } = learnedRun;
          const ref = checkAgainstModel(st.model, st.ids, z).run.attentions[0].data.subarray(hd * L * L, (hd + 1) * L * L);
          let diff = 0;
          for (let n = 0; n < L * L; n++) diff = Math.max(diff, Math.abs(ref[n] - r.weights.data[n]));
          modelLine.dataset.diff = String(diff);
          modelLine.textContent = t(state.scale && state.T === 1 ? 'ch3.modelSame' : 'ch3.modelDiff', { h: hd, diff: fmt(diff, 3) });
        }
        // One colour scale for the scores before and after scaling: with a
        // scale per map the two would look identical whatever the factor.
        let m = 0;
        for (const a of [dots, scaled]) for (const v of a) if (v > -1e8 && Math.abs(v) > m) m = Math.abs(v);
        const shared = [-(m || 1), m || 1];
        maps[0].setData({ data: dots, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch3.op1'), tensor: { data: dots, shape: [L, L] }, domain: shared });
        maps[1].setData({ data: scaled, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch3.op2', { s: fmt(s, 4) }), tensor: { data: scaled, shape: [L, L] }, domain: shared });
        ctx.texts.bind(sharedLine, 'ch3.shared', { m: fmt(m, 3) });
        // Q and Kᵀ, whose rows and columns the provenance panel highlights.
        const kt = new Float32Array(dk * L);
        for (let j = 0; j < L; j++) for (let d = 0; d < dk; d++) kt[d * L + j] = k[j * dk + d];
        qMap.setData({ data: q, rows: L, cols: dk, rowLabels: labels, title: t('ch3.qMap', { L, dk }), tensor: { data: q.slice(), shape: [L, dk] } });
        kMap.setData({ data: kt, rows: dk, cols: L, colLabels: labels, title: t('ch3.kMap', { L, dk }), tensor: { data: kt, shape: [dk, L] } });
        provData = { q, k, dk, s, labels, L, scaled, weights: r.weights.data };
        maps[2].setData({ data: r.weights.data, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch3.op3'), tensor: r.weights, domain: [0, 1] });
        maps[3].setData({ data: r.output.data, rows: L, cols: dv, rowLabels: labels, title: `${t('ch3.op4')} [${L}, ${dv}]`, tensor: r.output, dimNames: ['token', 'dimension'] });

        const step = state.step3;
        panels.forEach((pnl, i) => {
          pnl.classList.toggle('active', i + 1 === step);
          pnl.classList.toggle('dim', i + 1 > step);
        });
        stepButtons.forEach((b, i) => b.setAttribute('aria-pressed', String(i + 1 === step)));
        if (step !== lastStep && lastStep) panels[step - 1].scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
        lastStep = step;

        scaleLine.textContent = t('ch3.scaleUsed', { s: fmt(s, 5), what: t(state.scale ? 'ch3.what.scaled' : 'ch3.what.unscaled') });
        const ent = rowEntropy(r.weights.data, L, L);
        // Row i may see n_i keys (all L, i + 1 under the causal mask, fewer
        // with padding); its entropy is at most ln n_i.
        const causal = mask.some((mm) => mm.kind === 'causal');
        const padLen = mask.some((mm) => mm.kind === 'padding') ? lengths[0] : L;
        const maxOf = (i) => Math.log(Math.max(1, Math.min(causal ? i + 1 : L, padLen)));
        entropyHead.textContent = t('ch3.entropy', { L });
        const rows = [];
        let sumH = 0;
        let sumP = 0;
        let sumMax = 0;
        for (let i = 0; i < L; i++) {
          const maxH = maxOf(i);
          const bar = h('span');
          bar.style.setProperty('--w', String(maxH > 0 ? Math.min(1, ent[i] / maxH) : 0));
          rows.push(h('span', { class: 'lbl', role: 'listitem', 'aria-label': t('ch3.entropyRow', { i, tok: labels[i], h: fmt(ent[i], 3), max: fmt(maxH, 3) }) }, `${i} ${labels[i]}`), h('span', { class: 'bar', 'aria-hidden': 'true' }, bar), h('span', { 'aria-hidden': 'true', dataset: { max: String(maxH) } }, `${fmt(ent[i], 3)} / ${fmt(maxH, 3)}`));
          sumH += ent[i];
          sumMax += maxH;
          let mx = 0;
          for (let j = 0; j < L; j++) mx = Math.max(mx, r.weights.data[i * L + j]);
          sumP += mx;
        }
        entropy.replaceChildren(...rows);
        meanLine.textContent = t('ch3.meanEntropy', { h: fmt(sumH / L, 3), max: fmt(sumMax / L, 3), p: fmt(sumP / L, 3) });
        code.firstChild.textContent = `const { output, weights } = lab.scaledDotProductAttention(Q /* [${L}, ${dk}] */, K /* [${L}, ${dk}] */, V /* [${L}, ${dv}] */, { scale: ${fmt(s, 5)}${mask.length ? `, mask: ${JSON.stringify(mask)}` : ''} });`;
      },
    };
  },
};
