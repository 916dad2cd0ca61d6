// <attention-lab-positional-encoding>: the sinusoidal encoding as a
// position × dimension heatmap, sin/cos curves of chosen dimensions and the
// PE·PEᵀ similarity of positions.
//
//   <attention-lab-positional-encoding positions="64" d-model="128" base="10000"
//                                      dims="0,1,8,9"></attention-lab-positional-encoding>
import { AttentionLabElement } from './base.js';
import { PEView, parseDims, peGram } from '../lib/pe-view.js';

export class AttentionLabPositionalEncoding extends AttentionLabElement {
  static get observedAttributes() {
    return ['positions', 'd-model', 'base', 'dims', 'similarity', 'lang', 'backend'];
  }

  /** The last encoding drawn: { data, shape: [positions, dModel] }. */
  get encoding() {
    return this._pe ?? null;
  }

  _build() {
    this._view = new PEView({ t: this.t });
    this._view.el.setAttribute('part', 'figures');
    this._body.append(this._view.el);
  }

  _relabel() {
    this._view?.setMessages(this.t);
  }

  _repaint() {
    this._view?.draw();
  }

  async _render() {
    const P = this.intAttr('positions', 64, 1, 2048);
    const d = this.intAttr('d-model', 128, 1, 4096);
    const base = this.numAttr('base', 10000);
    if (!(base > 1)) throw new RangeError(`<attention-lab-positional-encoding> base="${this.getAttribute('base')}": must be > 1`);
    const lab = await this.lab();
    const pe = await lab.positionalEncoding(P, d, { base });
    this._pe = pe;
    let dims = parseDims(this.getAttribute('dims') ?? '0,1,4,5', d);
    if (!dims.length) dims = [0];
    this._view.setMessages(this.t);
    const showSimilarity = this.getAttribute('similarity') !== 'false' && P <= 1024;
    const gram = showSimilarity ? await peGram(lab, pe.data, P, d) : null;
    this._view.setData({ pe, dims, showSimilarity, gram });
  }
}
