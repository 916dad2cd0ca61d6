// <attention-lab-shape-flow>: the dimension animation of multi-head attention
// (or the full layer), with shapes from lab.shapeTrace. Blocks are clickable:
// for sizes small enough, their values come from the trace of a seeded run of
// the layer, layer.forward(x, { trace: 'values' }).
//
//   <attention-lab-shape-flow batch="2" seq-len="5" embed-dim="512" num-heads="8"
//                             layer mask autoplay></attention-lab-shape-flow>
import { AttentionLabElement } from './base.js';
import { ShapeFlow } from '../lib/shape-flow.js';
import { embedBatch } from '../lib/tokens.js';

const MAX_VALUE_ELEMENTS = 1 << 22;

export class AttentionLabShapeFlow extends AttentionLabElement {
  static get observedAttributes() {
    return ['batch', 'seq-len', 'kv-len', 'embed-dim', 'num-heads', 'mask', 'layer', 'autoplay', 'lang', 'backend', 'values'];
  }

  /** The ShapeFlow widget (play(), pause(), goTo(i), next(), prev()). */
  get flow() {
    return this._flow;
  }

  /** The trace currently shown. */
  get trace() {
    return this._trace ?? null;
  }

  _build() {
    this._flow = new ShapeFlow({
      t: this.t,
      values: async (step, which) => {
        const s = this._values?.find((x) => x.step === step);
        return s ? (which && s.values ? s.values[which] : s.value) : null;
      },
    });
    this._flow.el.setAttribute('part', 'flow');
    this._body.append(this._flow.el);
  }

  _relabel() {
    this._flow?.setMessages(this.t);
  }

  _onDisconnect() {
    this._flow?.pause();
  }

  async _render() {
    const B = this.intAttr('batch', 2, 1, 64);
    const L = this.intAttr('seq-len', 5, 1, 4096);
    const Lk = this.intAttr('kv-len', L, 1, 4096);
    const E = this.intAttr('embed-dim', 512, 1, 65536);
    const H = this.intAttr('num-heads', 8, 1, 4096);
    const layer = this.boolAttr('layer');
    const mask = this.boolAttr('mask');
    const lab = await this.lab();
    // The library validates the combination (E divisible by H, …) and names the problem.
    const trace = lab.shapeTrace({ batch: B, lq: L, lk: Lk, embedDim: E, numHeads: H, mask, layer });
    this._trace = trace;
    this._flow.setMessages(this.t);
    this._flow.setTrace(trace);
    this._values = null;
    // Values for sizes whose trace stays small (the score tensors dominate).
    const small = Lk === L && this.getAttribute('values') !== 'false' && B * L * E <= MAX_VALUE_ELEMENTS && B * H * L * L <= MAX_VALUE_ELEMENTS;
    if (small) {
      const toks = Array.from({ length: L }, (_, i) => `t${i}`);
      const x = embedBatch(Array.from({ length: B }, () => toks), L, E, 7, (await lab.positionalEncoding(L, E)).data);
      const l = lab.selfAttentionLayer({ embedDim: E, numHeads: H, seed: 0 });
      try {
        const r = await l.forward({ data: x, shape: [B, L, E] }, { mask: mask ? { kind: 'causal' } : undefined, trace: 'values' });
        this._values = r.trace;
      } finally {
        l.dispose();
      }
    }
    if (this.boolAttr('autoplay') && !this._autoplayed) {
      this._autoplayed = true;
      this._flow.play();
    }
  }
}
