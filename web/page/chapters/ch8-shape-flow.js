// Chapter 8 — "dimensions in one take": the whole layer as one animation,
// shapes and values from layer.forward(x, { trace: 'values' }); every block
// is clickable for its values, as the library computed them.
// The weights switch (state w8): 'random' is chapter 7's seeded layer;
// 'learned' the trace of the shipped model's layer-0 attention on the
// reader's sentence (its real shapes: E, H, D), lib/learned-layer.js.
import { h } from '../../components/lib/dom.js';
import { ShapeFlow } from '../../components/lib/shape-flow.js';
import { runLayer } from './ch7-layer.js';
import { stepValue } from '../lib/model.js';
import { codeBlock } from '../lib/ui.js';
import { weightsSwitch, learnedText, loadingText, layerZero, modelSizes } from '../lib/learned-layer.js';

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'drop', 'train', 'w8'],
  mount(ctx, body) {
    let trace = null;
    let labels = () => undefined;
    const flow = new ShapeFlow({
      t: ctx.t,
      values: async (step, which) => stepValue(trace, step, which) ?? null,
      rowLabels: (b) => labels(b),
    });
    flow.el.id = 'ch8-flow';
    let syncing = false;
    flow.el.addEventListener('al-step', (e) => {
      if (!syncing) ctx.set({ flow: e.detail.index });
    });
    const check = h('p', { class: 'check-line', id: 'ch8-check' });
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w8', 'ch8');
    const learnedLine = h('p', { class: 'small muted ch8-learned', hidden: true });
    const tryRandom = ctx.tryThis(['ch8.try1', 'ch8.try2']);
    const tryLearned = ctx.tryThis(['ch8.tryL1', 'ch8.tryL2']);
    const p1 = ctx.text('p', 'ch8.p1');
    body.append(
      p1,
      sw.el,
      h('div', { class: 'figs' }, learnedLine, flow.el, check, code),
      tryRandom,
      tryLearned,
    );
    const show = (t, tr, state) => {
      syncing = true;
      flow.setMessages(t);
      flow.setTrace(tr);
      if (first) {
        first = false;
        flow.goTo(Math.min(state.flow, tr.length - 1), { animate: false });
      }
      syncing = false;
    };
    let first = true;

    return {
      setMessages(t) {
        flow.setMessages(t);
      },
      async update(c, state) {
        const t = c.t;
        flow.t = t;
        const learned = sw.learned(state);
        sw.update(t, state);
        for (const el of [learnedLine, tryLearned]) el.hidden = !learned;
        tryRandom.hidden = learned;
        if (p1.dataset.i18nKey !== (learned ? 'ch8.p1L' : 'ch8.p1')) ctx.texts.bind(p1, learned ? 'ch8.p1L' : 'ch8.p1');
        if (learned) {
          const st = learnedText(c, state, ['w8']);
          if (!st) {
            learnedLine.textContent = loadingText(c, state);
            return { loading: true };
          }
          const lab = c.lab();
          const z = await layerZero(lab, st.model, st.ids);
          const sz = modelSizes(lab, st.model);
          labels = () => st.labels;
          trace = z.trace;
          show(t, z.trace, state);
          learnedLine.textContent = [t('ch8.learned', { model: st.name, ...sz, L: z.L }), st.notes].filter(Boolean).join(' ');
          ctx.texts.bind(check, 'ch8.checkL', { n: z.trace.length });
          code.firstChild.textContent = [
            `// the ${st.lang} model: ${sz.N} layers, E = ${sz.E}, H = ${sz.H}, D = ${sz.D}, ${sz.V} characters, ${sz.P} positions, MLP width ${sz.F}`,
            `const mha = lab.multiHeadAttention({ embedDim: ${sz.E}, numHeads: ${sz.H} }).loadStateDict(tensors, { format: 'hf-gpt2', prefix: 'h.0.' });`,
            `const { output, trace } = await mha.forward(ln1x /* [1, ${z.L}, ${sz.E}] */, undefined, undefined, { mask: { kind: 'causal' }, trace: 'values' });`,
            ...z.trace.map((s) => `//   ${s.step.padEnd(14)} [${s.shape.join(',')}]`),
          ].join('\n');
          return z;
        }
        const run = await runLayer(c, state);
        const { inp, r, mask } = run;
        const { B, L, tokens } = inp;
        const E = state.E;
        const H = state.H;
        labels = (b) => tokens[b];
        trace = r.trace;
        show(t, r.trace, state);
        ctx.texts.bind(check, 'ch8.check', { n: r.trace.length });
        code.firstChild.textContent = [
          `const layer = lab.selfAttentionLayer({ embedDim: ${E}, numHeads: ${H}, dropout: ${state.drop}, seed: ${state.seed} });`,
          `const { output, trace } = await layer.forward(x, { trace: 'values'${mask ? ', mask' : ''}${state.train ? ', training: true' : ''} });`,
          `// x [${B}, ${L}, ${E}]; each step: { step, shape, formula, value }`,
          ...r.trace.map((s) => `//   ${s.step.padEnd(14)} [${s.shape.join(',')}]`),
        ].join('\n');
      },
    };
  },
};
