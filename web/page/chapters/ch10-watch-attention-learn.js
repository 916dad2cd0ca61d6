// Chapter 10 — Watch attention learn: <attention-lab-trainer> trains a tiny
// transformer in a Web Worker (the library's backward passes and AdamW) and
// shows every head's map forming; pre-trained snapshots
// (web/page/pretrained/*.safetensors, made by scripts/make-pretrained.mjs)
// load at once for readers who do not want to wait.
import { h } from '../../components/lib/dom.js';
import { AttentionLabTrainer } from '../../components/elements/trainer-element.js';

const SNAPSHOTS = ['copy', 'reverse', 'sort', 'shift'];

export default {
  deps: [],
  mount(ctx, body) {
    if (typeof customElements !== 'undefined' && !customElements.get('attention-lab-trainer')) {
      customElements.define('attention-lab-trainer', AttentionLabTrainer);
    }
    const trainer = h('attention-lab-trainer', { id: 'ch10-trainer', task: 'reverse', size: '64', lr: '0.003', lang: ctx.state().lang });
    const buttons = SNAPSHOTS.map((task) => {
      const b = h('button', { class: 'al-btn', type: 'button', 'data-task': task }, task);
      b.addEventListener('click', () => {
        trainer.loadPretrained(new URL(`../pretrained/${task}.safetensors`, import.meta.url).href).catch(() => {});
      });
      return b;
    });
    body.append(
      ctx.text('p', 'ch10.p1'),
      ctx.text('p', 'ch10.p2'),
      h('p', { class: 'inline-ctls' }, ctx.text('span', 'ch10.pretrained'), ...buttons),
      trainer,
      ctx.tryThis(['ch10.try1', 'ch10.try2']),
    );
    return {
      setMessages() {
        trainer.setAttribute('lang', ctx.state().lang);
      },
      update() {},
    };
  },
};
