// Chapter 8 — "dimensions in one take": the whole layer as one animation,
// shapes from layer.forward(x, { trace: true }), every block clickable for
// its values (recomputed on the page, checked against the library).
import { h } from '../../components/lib/dom.js';
import { ShapeFlow } from '../../components/lib/shape-flow.js';
import { createStages, maskPredicate, MAX_JS_MACS } from '../../components/lib/pipeline.js';
import { runLayer } from './ch7-layer.js';
import { codeBlock } from '../lib/ui.js';

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'drop', 'train'],
  mount(ctx, body) {
    let stages = null;
    let labels = () => undefined;
    const flow = new ShapeFlow({
      t: ctx.t,
      values: async (step, which) => (stages ? stages.get(step, which) : null),
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
        const run = await runLayer(c, state, { trace: true });
        const { inp, item, r, mask, factor, dropoutSeed, D } = run;
        const { B, L, E, x, tokens } = { ...inp, E: state.E };
        const H = state.H;
        labels = (b) => tokens[b];
        const { gamma, beta, ...weights } = item.original;
        stages = createStages({
          x, B, L, E, H, weights,
          norm: { gamma: gamma.data, beta: beta.data, eps: item.obj.eps },
          isMasked: maskPredicate(mask),
          scoreScale: factor / Math.sqrt(D),
          training: state.train,
          dropout: state.drop,
          dropoutSeed,
          weightsOut: r.weights.data,
        });
        syncing = true;
        flow.setMessages(t);
        flow.setTrace(r.trace);
        if (first) {
          first = false;
          flow.goTo(Math.min(state.flow, r.trace.length - 1), { animate: false });
        }
        syncing = false;
        const macs = 2 * B * L * E * E + 2 * B * H * L * L * D;
        if (macs <= MAX_JS_MACS) {
          await new Promise((res) => setTimeout(res, 0));
          const diff = stages.compare('layer_norm', r.output.data);
          check.textContent = t('ch8.check', { diff: diff === 0 ? '0' : diff.toExponential(2) });
          check.dataset.diff = String(diff);
        } else {
          check.textContent = t('flow.tooBig', { n: macs.toExponential(1) });
        }
        code.firstChild.textContent = [
          `const layer = lab.selfAttentionLayer({ embedDim: ${E}, numHeads: ${H}, dropout: ${state.drop}, seed: ${state.seed} });`,
          `const { output, trace } = await layer.forward(x, { trace: true${mask ? ', mask' : ''}${state.train ? ', training: true' : ''} });`,
          ...r.trace.map((s) => `//   ${s.step.padEnd(14)} [${s.shape.join(',')}]`),
        ].join('\n');
      },
    };
  },
};
