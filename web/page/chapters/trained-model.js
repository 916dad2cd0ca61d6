// "A trained model writes" (issue 22): the next-token component on the shipped model of the page's
// language, lab.pretrained('en' | 'zh'). The chapter only sets the element's attributes; the
// element loads the model itself when it comes near the viewport (never before the first paint)
// and computes with the model's own calls (nextTokens, generate, forwardSync).
import { h } from '../../components/lib/dom.js';
import { AttentionLabNextToken } from '../../components/elements/next-token-element.js';
import { modelLang } from '../lib/learned.js';

const TAG = 'attention-lab-next-token';

export default {
  deps: ['lang'],
  mount(ctx, body) {
    if (typeof customElements !== 'undefined' && !customElements.get(TAG)) customElements.define(TAG, AttentionLabNextToken);
    const el = h(TAG, { id: 'tm-next', class: 'tm-next' });
    body.append(
      ctx.text('p', 'tm.p1'),
      ctx.text('p', 'tm.p2'),
      h('div', { class: 'figs' }, el),
      ctx.tryThis(['tm.try1', 'tm.try2', 'tm.try3']),
    );
    return {
      async update(c, state) {
        const lang = modelLang(state);
        if (el.getAttribute('lang') !== state.lang) el.setAttribute('lang', state.lang);
        if (el.getAttribute('model') !== lang) el.setAttribute('model', lang);
        return { model: lang };
      },
    };
  },
};
