// Chapter 8 — "dimensions in one take": the whole layer as one animation,
// shapes and values from layer.forward(x, { trace: 'values' }); every block
// is clickable for its values, as the library computed them.
import { h } from '../../components/lib/dom.js';
import { ShapeFlow } from '../../components/lib/shape-flow.js';
import { runLayer } from './ch7-layer.js';
import { stepValue } from '../lib/model.js';
import { codeBlock } from '../lib/ui.js';

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'drop', 'train'],
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
    body.append(
      ctx.text('p', 'ch8.p1'),
      h('div', { class: 'figs' }, flow.el, check, code),
      ctx.tryThis(['ch8.try1', 'ch8.try2']),
    );
    let first = true;

    return {
      setMessages(t) {
        flow.setMessages(t);
      },
      async update(c, state) {
        const t = c.t;
        flow.t = t;
        const run = await runLayer(c, state);
        const { inp, r, mask } = run;
        const { B, L, tokens } = inp;
        const E = state.E;
        const H = state.H;
        labels = (b) => tokens[b];
        trace = r.trace;
        syncing = true;
        flow.setMessages(t);
        flow.setTrace(r.trace);
        if (first) {
          first = false;
          flow.goTo(Math.min(state.flow, r.trace.length - 1), { animate: false });
        }
        syncing = false;
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
