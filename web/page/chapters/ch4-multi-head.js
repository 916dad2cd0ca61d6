// Chapter 4 — multi-head attention: the head split/merge with the batch
// dimension (shapes from the forward trace), one heatmap per head plus the
// head average, timing of the forward pass and the cross-backend check.
// The weights switch (state w4): 'random' is that view, on seeded weights;
// 'learned' draws every head of the shipped model of the page's language
// (lab.pretrained, lib/learned.js) on the reader's sentence, each titled by
// its measured role (model.headRoles), with the scores in a table.
import { h, shapeText } from '../../components/lib/dom.js';
import { ShapeFlow, stepName, stepFormula } from '../../components/lib/shape-flow.js';
import { linkHeatmaps } from '../../components/lib/heatmap.js';
import { deriveInputs, maskSpec, ObjectCache, scoreFactor, compareBackends, stepValue } from '../lib/model.js';
import { formula, f, codeBlock } from '../lib/ui.js';
import { Provenance } from '../lib/provenance.js';
import { learnedModel, modelLang, fitText, cachedHeadRoles, headRoleLabels, tokenLabels, offerModel, ROLES } from '../lib/learned.js';

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'b', 'w4'],
  compare: true,
  mount(ctx, body) {
    const flow = new ShapeFlow({ t: ctx.t, showValues: false, stepMs: 1500, morphMs: 900 });
    flow.el.classList.add('ch4-flow');
    const chain = h('div', { class: 'shape-chain', 'aria-live': 'polite' });
    const bSelect = h('select', { class: 'al-select', id: 'ch4-b' });
    bSelect.addEventListener('change', () => ctx.set({ b: Number(bSelect.value) }));
    const gridTitle = h('h3', { class: 'grid-title' });
    const grid = h('div', { class: 'al-grid head-grid', id: 'ch4-grid' });
    const avgBox = h('div', { class: 'avg-box' });
    const avgNote = ctx.text('p', 'ch4.avgNote', { class: 'small muted ch4-avg-note' });
    const code = codeBlock('');
    const maps = [];
    let avgMap = null;
    let unlink = () => {};
    const prov = new Provenance(ctx, { id: 'ch4-prov' });
    let provData = null;
    const headSource = (hh) => () => {
      if (!provData || hh >= provData.H) return null;
      const { L, b, H, w, scores, labels } = provData;
      const off = (b * H + hh) * L * L;
      return { weights: w.subarray(off, off + L * L), scores: scores?.subarray(off, off + L * L), Lk: L, rowLabels: labels, colLabels: labels };
    };
    let compareGen = 0;

    // The weights switch: random (seeded, the controls' E, H, seed) or learned (the shipped model).
    const kinds = ['random', 'learned'];
    const wBtns = kinds.map((k) => {
      const b = h('button', { type: 'button', class: 'al-btn', dataset: { weights: k } });
      b.addEventListener('click', () => ctx.set({ w4: k }));
      return b;
    });
    const wLabel = ctx.text('span', 'ch4.weights', { id: 'ch4-weights-label' });
    const switchRow = h('div', { class: 'inline-ctls ch4-weights' }, h('span', { class: 'inline-ctl' }, wLabel, h('span', { class: 'seg', role: 'group', 'aria-labelledby': 'ch4-weights-label' }, wBtns)));
    const randomNote = ctx.text('p', 'ch4.randomNote', { class: 'small muted ch4-random-note' });
    const learnedIntro = h('p', { class: 'ch4-learned-intro' });
    const learnedStatus = h('p', { class: 'small muted ch4-learned-status', role: 'status' });
    const learnedGrid = h('div', { class: 'al-grid head-grid', id: 'ch4-learned-grid' });
    const rolesTable = h('table', { class: 'data ch4-roles' });
    const learnedBox = h('div', { class: 'figs ch4-learned', hidden: true },
      learnedIntro, learnedStatus, learnedGrid, ctx.text('h3', 'ch4.rolesTitle'), h('div', { class: 'table-scroll' }, rolesTable), ctx.text('p', 'ch4.rolesNote', { class: 'small muted' }));
    const learnedMaps = [];
    let learnedUnlink = () => {};
    const tryRandom = ctx.tryThis(['ch4.try1', 'ch4.try2', 'ch4.try3']);
    const tryLearned = ctx.tryThis(['ch4.tryL1', 'ch4.tryL2', 'ch4.try3']);
    tryLearned.hidden = true;

    body.append(
      ctx.text('p', 'ch4.p1'),
      formula(f.fn('MultiHead'), '(', f.v('Q'), ',', f.v('K'), ',', f.v('V'), ')', f.op('='), f.fn('Concat'), '(', f.v('head'), f.sub('1'), ', …, ', f.v('head'), f.sub(f.v('H')), ')', f.v('W'), f.sup('O'), h('span', { class: 'br' }), f.v('head'), f.sub(f.v('i')), f.op('='), f.fn('Attention'), '(', f.v('Q'), f.v('W'), f.subsup(f.v('i'), 'Q'), ', ', f.v('K'), f.v('W'), f.subsup(f.v('i'), 'K'), ', ', f.v('V'), f.v('W'), f.subsup(f.v('i'), 'V'), ')'),
      ctx.text('p', 'ch4.p2'),
      switchRow,
      learnedBox,
      h('div', { class: 'figs ch4-random' },
        randomNote,
        ctx.text('h3', 'ch4.splitTitle'),
        flow.el,
        ctx.text('div', 'ch4.chain', { class: 'panel-title' }),
        chain,
        h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch4-b' }, ctx.text('span', 'ch4.batchItem'), bSelect)),
        gridTitle,
        prov.box,
        grid,
        avgBox,
        avgNote,
        code),
      tryRandom,
      tryLearned,
    );
    const randomBox = body.querySelector('.ch4-random');

    function ensureLearnedMaps(n, size) {
      while (learnedMaps.length > n) {
        const m = learnedMaps.pop();
        ctx.forgetHeatmap(m);
        m.destroy();
      }
      while (learnedMaps.length < n) {
        const m = ctx.heatmap({ compact: true, maxSize: size, cellMax: 30, name: `learned_head_${learnedMaps.length}` });
        m.el.classList.add('learned-map');
        learnedGrid.append(m.el);
        learnedMaps.push(m);
      }
      for (const m of learnedMaps) m.opts.maxSize = size;
      learnedUnlink();
      learnedUnlink = linkHeatmaps(learnedMaps);
    }

    /** The learned view: every head of the shipped model on the reader's sentence. */
    function updateLearned(c, state) {
      const t = c.t;
      const lang = modelLang(state);
      const model = learnedModel(c, lang, ['w4']);
      learnedIntro.textContent = '';
      if (!model) {
        learnedStatus.textContent = t('ch4.learnedLoading', { model: t(`ch4.model.${lang}`) });
        return { loading: true };
      }
      const { text, cut } = fitText(model, state.text);
      const cfg = model.config;
      const t0 = performance.now();
      const run = model.forwardSync(text, { attentions: true });
      c.reportForward(performance.now() - t0, lab0(c));
      const roles = cachedHeadRoles(lang, model, text);
      const labels = headRoleLabels(roles);
      const lb = tokenLabels(model, text, run.ids);
      const { labels: tokLabels, unknown } = lb;
      offerModel(c, lang, text, lb);
      const L = run.ids.length;
      const rt = (r) => t(`ch4.role.${r}`);
      setIntro(t('ch4.learnedIntro', { model: t(`ch4.model.${lang}`), N: cfg.numLayers, H: cfg.numHeads, E: cfg.embedDim, D: cfg.embedDim / cfg.numHeads, L }));
      const notes = [];
      if (cut) notes.push(t('ch4.learnedCut', { n: cut, max: cfg.maxPositions }));
      if (unknown.length) notes.push(t('hm.unknown', { chars: unknown.join(' ') }));
      learnedStatus.textContent = notes.join(' ');
      const n = cfg.numLayers * cfg.numHeads;
      const gridW = learnedGrid.clientWidth || 800;
      const size = Math.max(110, Math.min(200, Math.floor((gridW - 14 * 3) / Math.min(4, cfg.numHeads))));
      ensureLearnedMaps(n, size);
      run.attentions.forEach((a, l) => {
        for (let hh = 0; hh < cfg.numHeads; hh++) {
          const k = l * cfg.numHeads + hh;
          const lab = labels[k];
          const m = learnedMaps[k];
          m.el.dataset.layer = String(l);
          m.el.dataset.head = String(hh);
          m.el.dataset.role = lab.role;
          m.setData({
            data: a.data, offset: hh * L * L, rows: L, cols: L, rowLabels: tokLabels, colLabels: tokLabels, domain: [0, 1],
            title: lab.role === 'spread' ? t('ch4.learnedSpread', { l, h: hh }) : t('ch4.learnedHead', { l, h: hh, role: rt(lab.role), score: lab.score.toFixed(2), chance: lab.chance.toFixed(2) }),
            tensor: a, dimNames: ['b', 'h', 'query', 'key'],
          });
        }
      });
      // Every score, against its chance level.
      const cols = ROLES.filter((r) => roles.chance[r] !== undefined);
      rolesTable.replaceChildren(
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('ch4.rolesHead')), cols.map((r) => h('th', { scope: 'col' }, rt(r))))),
        h('tbody', null,
          roles.heads.map((hd, k) => h('tr', { dataset: { role: labels[k].role } }, h('th', { scope: 'row' }, t('ch4.rolesRow', { l: hd.layer, h: hd.head })), cols.map((r) => h('td', { class: labels[k].best === r && labels[k].role !== 'spread' ? 'num best' : 'num' }, hd[r].toFixed(3))))),
          h('tr', { class: 'chance' }, h('th', { scope: 'row' }, t('ch4.rolesChance')), cols.map((r) => h('td', { class: 'num' }, roles.chance[r].toFixed(3))))),
      );
      return { learned: { lang, text, ids: run.ids, roles, labels } };
    }
    const lab0 = (c) => c.lab().backend;
    function setIntro(s) {
      learnedIntro.textContent = s;
    }

    function ensureMaps(H, size) {
      while (maps.length > H) {
        const m = maps.pop();
        ctx.forgetHeatmap(m);
        m.destroy();
      }
      while (maps.length < H) {
        const m = ctx.heatmap({ compact: true, maxSize: size, cellMax: 34, name: `head_${maps.length}` });
        m.el.classList.add('head-map');
        m.el.dataset.head = String(maps.length);
        prov.weights({ map: m, source: headSource(maps.length) });
        grid.append(m.el);
        maps.push(m);
      }
      for (const m of maps) m.opts.maxSize = size;
      if (!avgMap) {
        avgMap = ctx.heatmap({ maxSize: 300, cellMax: 40, name: 'head_average' });
        avgMap.el.classList.add('avg-map');
        prov.weights({ map: avgMap, source: () => provData?.avg && { weights: provData.avg, Lk: provData.L, rowLabels: provData.labels, colLabels: provData.labels } });
        avgBox.append(avgMap.el);
      }
      unlink();
      unlink = linkHeatmaps([...maps, avgMap]);
    }

    let lastTrace = '';
    function renderChain(t, tr) {
      const chips = [];
      tr.forEach((s, k) => {
        if (k) chips.push(h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→'));
        if (s.step === 'split_heads') {
          const [bb, hh, ll, dd] = s.shape;
          chips.push(h('span', { class: 'shape', dataset: { step: 'view' }, title: 'view' }, `${t('ch4.view')} ${shapeText([bb, ll, hh, dd])}`));
          chips.push(h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→'));
          chips.push(h('span', { class: 'shape', dataset: { step: s.step }, title: stepFormula(s, t.lang) }, `${t('ch4.permute')} ${shapeText(s.shape)}`));
        } else {
          chips.push(h('span', { class: 'shape', dataset: { step: s.step }, title: stepFormula(s, t.lang) }, `${stepName(s.step, t.lang)} ${shapeText(s.shape)}`));
        }
      });
      chain.replaceChildren(...chips);
    }

    async function update(c, state) {
      const t = c.t;
      const learned = state.w4 === 'learned';
      wBtns.forEach((b, i) => {
        b.textContent = t(`ch4.weights.${kinds[i]}`);
        b.setAttribute('aria-pressed', String(state.w4 === kinds[i]));
      });
      randomBox.hidden = learned;
      learnedBox.hidden = !learned;
      tryRandom.hidden = learned;
      tryLearned.hidden = !learned;
      if (learned) return updateLearned(c, state);
      const lab = c.lab();
      const inp = await deriveInputs(lab, state, c.cache);
      const { B, L, tokens, lengths, x } = inp;
      const E = state.E;
      const H = state.H;
      const b = Math.min(state.b, B - 1);
      const item = c.objects.mha(lab, { E, H, seed: state.seed });
      const D = item.obj.headDim;
      const factor = scoreFactor(state, D);
      ObjectCache.setFactor(item, factor);
      const mask = maskSpec(state.mask, lengths);
      const t0 = performance.now();
      // One call: per-head weights and scores in the trace, the head average as r.weights.
      const r = await item.obj.forward({ data: x, shape: [B, L, E] }, undefined, undefined, { mask, trace: 'values', averageWeights: true });
      const ms = performance.now() - t0;
      c.reportForward(ms, lab.backend);

      // Shapes: straight from the trace (redrawn only when they change).
      const tr = r.trace;
      const traceKey = JSON.stringify([t.lang, tr.map((s) => [s.step, s.shape, s.formula])]);
      if (traceKey !== lastTrace) {
        lastTrace = traceKey;
        flow.setMessages(t);
        flow.setTrace(tr.filter((s) => ['input', 'split_heads', 'weighted_sum', 'merge_heads'].includes(s.step)));
        renderChain(t, tr);
      }
      if (bSelect.options.length !== B) bSelect.replaceChildren(...Array.from({ length: B }, (_, k) => h('option', { value: String(k) }, String(k))));
      bSelect.value = String(b);
      const gt = t('ch4.grid', { b });
      if (gridTitle.textContent !== gt) gridTitle.textContent = gt;

      let size = H <= 2 ? 260 : H <= 4 ? 210 : H <= 8 ? 165 : 120;
      const gridW = grid.clientWidth || 800;
      if (H > 1 && gridW < 2 * size + 14) size = Math.max(110, Math.floor((gridW - 14) / 2));
      ensureMaps(H, size);
      const w = stepValue(tr, 'softmax').data;
      const scores = (stepValue(tr, 'mask') ?? stepValue(tr, 'scores')).data;
      const LL = L * L;
      let hi = 0;
      for (let k = b * H * LL; k < (b + 1) * H * LL; k++) if (w[k] > hi) hi = w[k];
      const domain = [0, hi > 0 ? hi : 1];
      const labels = tokens[b];
      for (let hh = 0; hh < H; hh++) {
        const off = (b * H + hh) * LL;
        maps[hh].setData({
          data: w, offset: off, rows: L, cols: L, rowLabels: labels, colLabels: labels, domain,
          title: t('ch4.head', { h: hh }), tensor: stepValue(tr, 'softmax'), dimNames: ['b', 'h', 'query', 'key'],
        });
      }
      provData = { L, b, H, w, scores, labels };
      // The head average, as the library computes it (averageWeights).
      const avg = r.weights.data.slice(b * LL, (b + 1) * LL);
      provData.avg = avg;
      avgMap.setData({ data: avg, rows: L, cols: L, rowLabels: labels, colLabels: labels, title: t('ch4.avg', { n: H }), tensor: { data: avg, shape: [L, L] } });

      code.firstChild.textContent = [
        `const mha = lab.multiHeadAttention({ embedDim: ${E}, numHeads: ${H}, seed: ${state.seed} }); // headDim ${D}`,
        `const { output, weights, trace } = await mha.forward(x, x, x, { ${mask ? `mask: ${JSON.stringify(mask)}, ` : ''}trace: 'values', averageWeights: true });`,
        `// x ${shapeText([B, L, E])} → output ${shapeText(r.output.shape)}, weights (head average) ${shapeText(r.weights.shape)}, per head: trace softmax ${shapeText(stepValue(tr, 'softmax').shape)}`,
      ].join('\n');

      // Cross-backend check, after the paint.
      const labs = c.availableLabs();
      const gen = ++compareGen;
      if (labs.length > 1) {
        if (B * L * E > 2e5) c.reportDiff(null, '', 'skipped');
        else {
          c.reportDiff(null, '', 'pending');
          setTimeout(async () => {
            if (gen !== compareGen) return;
            try {
              const d = await compareBackends(c.objects, labs, lab, { E, H, seed: state.seed, c: factor, x, B, L, mask, weights: item.original }, r.output.data);
              if (gen === compareGen) c.reportDiff(d.diff, d.pair);
            } catch {
              if (gen === compareGen) c.reportDiff(null, '', 'none');
            }
          }, 30);
        }
      }
      return r;
    }

    return {
      update,
      setMessages(t) {
        flow.setMessages(t);
      },
    };
  },
};
