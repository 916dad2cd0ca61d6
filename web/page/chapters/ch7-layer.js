// Chapter 7 — the full self-attention layer, y = LayerNorm(x + Dropout(MHA(x))),
// in train or eval mode. Every map is a step of one library call,
// layer.forward(x, { trace: 'values' }) (tutorial 1, step 5).
// The weights switch (state w7): 'random' is that layer on seeded weights;
// 'learned' the first layer of the shipped model, GPT-2's pre-LN block, on the
// reader's sentence: x = wte + wpe, ln_1(x), its causal attention and the
// residual, each computed by the library from the model's weights
// (lib/learned-layer.js), the weights checked against model.forward.
import { h, fmt } from '../../components/lib/dom.js';
import { mixSeed } from '../../components/lib/tokens.js';
import { deriveInputs, maskSpec, ObjectCache, scoreFactor, stepValue } from '../lib/model.js';
import { formula, f, codeBlock } from '../lib/ui.js';
import { checkValue } from '../lib/state.js';
import { weightsSwitch, learnedText, loadingText, layerZero, checkAgainstModel, modelSizes } from '../lib/learned-layer.js';

/** The dropout seed of the current sample: shared with chapter 8. */
export function dropoutSeedFor(cache, state) {
  return mixSeed(state.seed ^ 0x5eed, cache.dropoutSample ?? 0);
}

/** Runs the layer for the state with its value trace; shared with chapter 8. */
export async function runLayer(c, state, { trace = 'values' } = {}) {
  const lab = c.lab();
  const inp = await deriveInputs(lab, state, c.cache);
  const { B, L, x, lengths } = inp;
  const E = state.E;
  const H = state.H;
  const cfg = { E, H, seed: state.seed, p: state.drop };
  const item = c.objects.layer(lab, cfg);
  const D = item.obj.headDim;
  const factor = scoreFactor(state, D);
  ObjectCache.setFactor(item, factor);
  const mask = maskSpec(state.mask, lengths);
  const dropoutSeed = dropoutSeedFor(c.cache, state);
  const r = await item.obj.forward({ data: x, shape: [B, L, E] }, { mask, training: state.train, dropoutSeed, trace });
  return { inp, item, r, mask, factor, dropoutSeed, D, cfg };
}

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'b', 'drop', 'train', 'w7'],
  mount(ctx, body) {
    const evalBtn = h('button', { type: 'button', class: 'al-btn', id: 'ch7-eval' });
    const trainBtn = h('button', { type: 'button', class: 'al-btn', id: 'ch7-train' });
    evalBtn.addEventListener('click', () => ctx.set({ train: false }));
    trainBtn.addEventListener('click', () => ctx.set({ train: true }));
    const pRange = h('input', { type: 'range', id: 'ch7-p', min: '0', max: '0.9', step: '0.05' });
    const pOut = h('output', { class: 'ctl-value', for: 'ch7-p' });
    pRange.addEventListener('input', () => {
      const r = checkValue('drop', Number(pRange.value));
      if (!r.error) ctx.set({ drop: r.value });
    });
    const resample = h('button', { type: 'button', class: 'al-btn', id: 'ch7-resample' });
    let bumpSample = () => {};
    resample.addEventListener('click', () => bumpSample());
    const maps = ['x', 'mha', 'drop', 'res', 'norm'].map((k) => ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 720, cellMax: 24, maxHeight: 200, name: `ch7_${k}` }));
    const note = h('p', { class: 'small muted' });
    const sharedLine = h('p', { class: 'small muted ch7-shared' });
    const stats = h('p', { class: 'check-line' });
    const check = h('p', { class: 'check-line', id: 'ch7-check' });
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w7', 'ch7');
    const learnedLine = h('p', { class: 'small muted ch7-learned', hidden: true });
    const modeRow = h('div', { class: 'inline-ctls' },
      ctx.text('span', 'ch7.mode', { class: 'muted' }), h('span', { class: 'seg', role: 'group' }, evalBtn, trainBtn),
      h('label', { class: 'inline-ctl', for: 'ch7-p' }, ctx.text('span', 'ch7.p'), pRange, pOut),
      resample);
    const tryRandom = ctx.tryThis(['ch7.try1', 'ch7.try2']);
    const tryLearned = ctx.tryThis(['ch7.tryL1', 'ch7.tryL2']);

    body.append(
      ctx.text('p', 'ch7.p1'),
      formula(f.v('y'), f.op('='), f.fn('LayerNorm'), '(', f.v('x'), f.op('+'), f.fn('Dropout'), '(', f.fn('MHA'), '(', f.v('x'), ',', f.v('x'), ',', f.v('x'), '))', ')'),
      sw.el,
      modeRow,
      h('div', { class: 'figs' }, learnedLine, note, sharedLine, ...maps.map((m) => m.el), stats, check, code),
      tryRandom,
      tryLearned,
    );

    /**
     * Layer 0 of the shipped model: x, ln_1(x), its attention, the residual h, and the block's
     * output h + MLP(ln_2(h)) (model.forwardSync's hiddenStates 'all': the input of layer 1).
     */
    async function updateLearned(c, state) {
      const t = c.t;
      const st = learnedText(c, state, ['w7']);
      if (!st) {
        learnedLine.textContent = loadingText(c, state);
        return { loading: true };
      }
      const lab = c.lab();
      const z = await layerZero(lab, st.model, st.ids);
      const { L, E, H } = z;
      const sz = modelSizes(lab, st.model);
      const chk = checkAgainstModel(st.model, st.ids, z);
      const out = st.model.forwardSync(st.ids, { attentions: false, hiddenStates: 'all' }).hiddenStates[1].data;
      learnedLine.textContent = [t('ch7.learned', { model: st.name, N: sz.N, E, H, F: sz.F, L }), st.notes].filter(Boolean).join(' ');
      const list = [
        [z.x, t('ch7.xL', { L, E })],
        [z.ln1, t('ch7.ln1')],
        [z.attn, t('ch7.attnL', { H })],
        [z.res, t('ch7.resL')],
        [out, t('ch7.outL')],
      ];
      let m = 0;
      for (const [data] of list) for (const v of data) if (Math.abs(v) > m) m = Math.abs(v);
      const domain = [-(m || 1), m || 1];
      list.forEach(([data, title], k) => {
        maps[k].setData({ data, offset: 0, rows: L, cols: E, rowLabels: st.labels, title, tensor: { data, shape: [L, E] }, dimNames: ['token', 'dimension'], domain });
      });
      ctx.texts.bind(sharedLine, 'ch7.sharedL', { m: fmt(m, 3) });
      let mean = 0;
      let sd = 0;
      for (let i = 0; i < L; i++) {
        let mu = 0;
        for (let j = 0; j < E; j++) mu += z.ln1[i * E + j];
        mu /= E;
        let v = 0;
        for (let j = 0; j < E; j++) v += (z.ln1[i * E + j] - mu) ** 2;
        mean += mu / L;
        sd += Math.sqrt(v / E) / L;
      }
      stats.textContent = t('ch7.statsL', { mean: fmt(mean, 3), std: fmt(sd, 3) });
      check.dataset.diff = String(chk.diff);
      ctx.texts.bind(check, 'ch7.checkL', { diff: fmt(chk.diff, 3) });
      code.firstChild.textContent = [
        `// the ${st.lang} model's layer 0 (GPT-2, pre-LN): h = x + attn(ln_1(x)); out = h + mlp(ln_2(h))`,
        `const x = wte[ids] + wpe[0..${L});                         // [${L}, ${E}]`,
        "const a = mha /* loadStateDict(tensors, { format: 'hf-gpt2', prefix: 'h.0.' }) */",
        "  .forward(ln_1(x), undefined, undefined, { mask: { kind: 'causal' }, trace: 'values' });",
        `const h = x + a.output;                                       // [${L}, ${E}]`,
        "const out = model.forwardSync(ids, { hiddenStates: 'all' }).hiddenStates[1]; // h + mlp(ln_2(h))",
      ].join('\n');
      return z;
    }

    return {
      async update(c, state) {
        const t = c.t;
        const learned = sw.learned(state);
        sw.update(t, state);
        for (const el of [learnedLine, tryLearned]) el.hidden = !learned;
        for (const el of [modeRow, note, tryRandom]) el.hidden = learned;
        if (learned) return updateLearned(c, state);
        bumpSample = () => {
          c.cache.dropoutSample = (c.cache.dropoutSample ?? 0) + 1;
          if (!c.state().train) c.set({ train: true });
          else c.invalidate(['train']);
        };
        evalBtn.textContent = t('ch7.eval');
        trainBtn.textContent = t('ch7.train');
        evalBtn.setAttribute('aria-pressed', String(!state.train));
        trainBtn.setAttribute('aria-pressed', String(state.train));
        resample.textContent = t('ch7.resample');
        pRange.value = String(state.drop);
        pOut.textContent = state.drop.toFixed(2);

        const run = await runLayer(c, state);
        const { inp, r, mask, dropoutSeed } = run;
        const { B, L, x, tokens } = inp;
        const E = state.E;
        const b = Math.min(state.b, B - 1);
        const p = state.drop;
        // The steps of the library's trace: MHA output, dropout, residual, LayerNorm.
        const a = stepValue(r.trace, 'output_linear').data;
        const dropped = stepValue(r.trace, 'dropout').data;
        const res = stepValue(r.trace, 'residual').data;
        // Dropped: zero after dropout where the MHA output was not.
        const droppedFlag = new Uint8Array(a.length);
        let zeroed = 0;
        if (state.train && p > 0) {
          for (let i = 0; i < a.length; i++) {
            if (dropped[i] === 0 && a[i] !== 0) {
              droppedFlag[i] = 1;
              if (Math.floor(i / (L * E)) === b) zeroed++;
            }
          }
        }
        const off = b * L * E;
        const labels = tokens[b];
        const list = [
          [x, t('ch7.x', { L, E })],
          [a, t('ch7.mha')],
          [dropped, t('ch7.drop', { n: zeroed, total: L * E })],
          [res, t('ch7.res')],
          [r.output.data, t('ch7.norm')],
        ];
        // One colour scale for the five maps, so that sizes compare across steps.
        let m = 0;
        for (const [data] of list) for (let k = off; k < off + L * E; k++) if (Math.abs(data[k]) > m) m = Math.abs(data[k]);
        const domain = [-(m || 1), m || 1];
        // Dropped elements are marked (dark grey), so that they differ from zeros.
        const marks = new Uint8Array(L * E);
        if (state.train && p > 0) for (let k = 0; k < L * E; k++) marks[k] = droppedFlag[off + k];
        list.forEach(([data, title], k) => {
          maps[k].setData({ data, offset: off, rows: L, cols: E, rowLabels: labels, title, tensor: { data, shape: [B, L, E] }, dimNames: ['b', 'token', 'dimension'], domain, marks: k === 2 ? marks : undefined, marksLabel: k === 2 ? t('ch7.dropped') : undefined });
        });
        ctx.texts.bind(sharedLine, 'ch7.shared', { m: fmt(m, 3) });
        note.textContent = t('ch7.batchNote', { b });
        let mean = 0;
        let sd = 0;
        for (let i = 0; i < L; i++) {
          let m = 0;
          for (let j = 0; j < E; j++) m += r.output.data[off + i * E + j];
          m /= E;
          let v = 0;
          for (let j = 0; j < E; j++) v += (r.output.data[off + i * E + j] - m) ** 2;
          mean += m / L;
          sd += Math.sqrt(v / E) / L;
        }
        stats.textContent = t('ch7.stats', { mean: fmt(mean, 3), std: fmt(sd, 3) });
        ctx.texts.bind(check, 'ch7.check');
        code.firstChild.textContent = [
          `const layer = lab.selfAttentionLayer({ embedDim: ${E}, numHeads: ${state.H}, dropout: ${p}, seed: ${state.seed} });`,
          `const { output, trace } = await layer.forward(x, { training: ${state.train}${mask ? `, mask: ${JSON.stringify(mask)}` : ''}${state.train ? `, dropoutSeed: ${dropoutSeed}` : ''}, trace: 'values' });`,
          '// trace steps output_linear, dropout, residual, layer_norm: the maps above',
          `// x [${B}, ${L}, ${E}] → output [${B}, ${L}, ${E}]`,
        ].join('\n');
      },
    };
  },
};
