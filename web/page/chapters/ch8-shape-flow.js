// Chapter 8 — "dimensions in one take": the whole layer as one animation,
// shapes and values from layer.forward(x, { trace: 'values' }); every block
// is clickable for its values, as the library computed them.
// The weights switch (state w8): 'random' is chapter 7's seeded layer;
// 'learned' the trace of the shipped model's layer-0 attention on the
// reader's sentence (its real shapes: E, H, D), lib/learned-layer.js.
// Above it, always, the tutorial's own example (issue 35, item 2): batch 2, 5 tokens, E = 512,
// 8 heads, the same library layer at those sizes, [2,5,512] → [2,8,5,64] → [2,8,5,5] → [2,5,512].
import { h } from '../../components/lib/dom.js';
import { ShapeFlow } from '../../components/lib/shape-flow.js';
import { runLayer } from './ch7-layer.js';
import { stepValue } from '../lib/model.js';
import { DEFAULTS } from '../lib/state.js';
import { codeBlock } from '../lib/ui.js';
import { weightsSwitch, learnedText, loadingText, layerZero, modelSizes } from '../lib/learned-layer.js';

/** The tutorial's example: its test case's sizes, on the reader's first five tokens. */
export const TUTORIAL = Object.freeze({ B: 2, L: 5, E: 512, H: 8 });

/** The state of the tutorial's flow: the reader's sentences and seed at the tutorial's sizes. */
const tutorialState = (state) => ({ ...state, ...TUTORIAL, mask: 'none', train: false, drop: DEFAULTS.drop, T: 1, scale: true, pe: true });

/** The shapes a trace goes through, up to the attention's output: "[2, 5, 512] → …". */
export function flowLine(trace) {
  const steps = ['input', 'split_heads', 'scores', 'merge_heads'];
  return steps.map((id) => trace.find((r) => r.step === id)).filter(Boolean).map((r) => `[${r.shape.join(', ')}]`).join(' → ');
}

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
    // The tutorial's flow, on the page at load whatever the weights switch says.
    let tTrace = null;
    let tLabels = () => undefined;
    const tFlow = new ShapeFlow({
      t: ctx.t,
      values: async (step, which) => stepValue(tTrace, step, which) ?? null,
      rowLabels: (b) => tLabels(b),
    });
    tFlow.el.id = 'ch8-tutorial-flow';
    const tLine = h('p', { class: 'check-line ch8-tutorial-line' });
    const tutorial = h('div', { class: 'figs ch8-tutorial' }, ctx.text('h3', 'ch8.tutorialTitle'), tLine, tFlow.el);
    const mainTitle = h('h3', { class: 'ch8-main-title' });
    const differs = h('p', { class: 'ch8-differs' });
    const check = h('p', { class: 'check-line', id: 'ch8-check' });
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w8', 'ch8');
    const learnedLine = h('p', { class: 'small muted ch8-learned', hidden: true });
    const tryRandom = ctx.tryThis(['ch8.try1', 'ch8.try2']);
    const tryLearned = ctx.tryThis(['ch8.tryL1', 'ch8.tryL2']);
    const p1 = ctx.text('p', 'ch8.p1');
    body.append(
      p1,
      tutorial,
      sw.el,
      h('div', { class: 'figs' }, mainTitle, learnedLine, differs, flow.el, check, code),
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
        tFlow.setMessages(t);
      },
      async update(c, state) {
        const t = c.t;
        flow.t = t;
        tFlow.t = t;
        // The tutorial's example, by the same library layer as the random view (chapter 7).
        const tRun = await runLayer(c, tutorialState(state));
        const firstTutorial = tTrace === null;
        tTrace = tRun.r.trace;
        tLabels = (b) => tRun.inp.tokens[b];
        tFlow.setMessages(t);
        tFlow.setTrace(tTrace);
        if (firstTutorial) tFlow.goTo(0, { animate: false });
        tLine.textContent = flowLine(tTrace);
        tLine.dataset.flow = tLine.textContent;
        const learned = sw.learned(state);
        sw.update(t, state);
        differs.hidden = !learned;
        ctx.texts.bind(mainTitle, learned ? 'ch8.modelTitle' : 'ch8.yourTitle');
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
          ctx.texts.bind(differs, 'ch8.differs', { model: st.name, ...sz, L: z.L, tflow: flowLine(tTrace), flow: flowLine(z.trace) });
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
