// SelfAttentionLayer: multi-head self-attention, dropout, residual and
// LayerNorm (post-norm: y = LayerNorm(x + Dropout(MHA(x, x, x)))).
// Shape legend: B batch, L sequence, E embed, H heads.
import { rangeError, typeError, checkBool } from './errors.js';
import { toTensor, makeTensor, shapeString } from './tensor.js';
import { normalizeMask, withMaskFill } from './mask.js';
import { buildTrace } from './trace.js';
import { attachValues } from './trace-values.js';
import { AttentionModule } from './attention-module.js';
import { layerBackward } from './train/backward.js';
import { wasmModuleOf } from './graph/arena.js';
import { readConfig, forwardOptions, checkElements, checkBytes, checkSeed, OPTION_KEYS } from './validate.js';
import { checkFiniteArgs, finiteOption } from './finite.js';

// Mixes (seed, counter) into a fresh uint32 dropout seed.
function mixSeed(seed, counter) {
  let x = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(counter + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

export class SelfAttentionLayer extends AttentionModule {
  /**
   * @param {import('./backend.js').Backend} backend
   * @param {object} config { embedDim, numHeads, bias?, seed?, dropout?, eps? }
   * @param {{ checkFinite?: boolean }} [settings] the lab's settings
   */
  constructor(backend, config, settings = {}) {
    const c = readConfig('selfAttentionLayer', config, { layer: true });
    super(backend, 'selfAttentionLayer', c, settings);
    /** Dropout probability. */
    this.dropout = c.dropout;
    /** LayerNorm epsilon. */
    this.eps = c.eps;
    this._seedCounter = 0;
    this._track(backend.createLayer(c));
  }

  _extraWeightKeys() {
    return ['gamma', 'beta'];
  }

  getWeights(options) {
    const out = super.getWeights(options);
    const norm = this._backend.getNorm(this._obj, this.embedDim);
    out.gamma = makeTensor(norm.gamma, [this.embedDim]);
    out.beta = makeTensor(norm.beta, [this.embedDim]);
    return out;
  }

  _weightShape(key, layout) {
    if (key === 'gamma' || key === 'beta') return [this.embedDim];
    return super._weightShape(key, layout);
  }

  /** Validates a forward's arguments and builds the backend's argument bag. */
  _prepare(x, options) {
    const where = 'selfAttentionLayer.forward';
    const obj = this._live('forward');
    const t = toTensor(where, 'x', x, { ranks: [2, 3] });
    const unbatched = t.shape.length === 2;
    const [B, L, E] = unbatched ? [1, ...t.shape] : t.shape;
    if (E !== this.embedDim) throw rangeError(where, `x's last dim must be embedDim (${this.embedDim}), got x ${shapeString(t.shape)}`);
    if (options && typeof options === 'object' && options.kvCache !== undefined) {
      throw typeError(where, `options has an unknown key "kvCache": a selfAttentionLayer has no key/value cache (kvCache is an option of multiHeadAttention().forward); allowed: ${OPTION_KEYS.layerForward.join(', ')}`);
    }
    const f = forwardOptions(where, options, OPTION_KEYS.layerForward);
    const training = checkBool(where, 'training', f.opts.training ?? false);
    let dropoutSeed;
    if (f.opts.dropoutSeed !== undefined) {
      dropoutSeed = checkSeed(where, 'dropoutSeed', f.opts.dropoutSeed);
    } else if (training) {
      dropoutSeed = mixSeed(this.seed, this._seedCounter++);
    } else {
      dropoutSeed = 0;
    }
    const H = this.numHeads;
    const mask = withMaskFill(where, normalizeMask(where, f.opts.mask, { batch: B, heads: H, lq: L, lk: L, leadB: [B], leadH: [H] }), f.opts.maskFill);
    if (finiteOption(where, f.opts, this._settings.checkFinite)) checkFiniteArgs(where, [['x', t]], mask);
    const wShape = [B, f.averageWeights ? 1 : H, L, L];
    const nW = f.needWeights ? checkElements(where, "the weights [B,H,L,L] (x's length; needWeights: false skips them)", wShape) : 0;
    checkElements(where, "the projected input [B,L,3·embedDim] (x's B and L)", [B, L, 3 * E]);
    // trace: 'values' adds Q, K, V, the context, three [B,H,L,L] planes and three [B,L,E].
    const nTrace = f.traceValues ? 7 * B * L * E + 3 * B * H * L * L : 0;
    checkBytes(where, [t.data.length, 3 * B * L * E, 3 * B * L * E, nW, L * (2 * E / H + 64), nTrace],
      () => `x ${shapeString(t.shape)} (embedDim ${E})${f.needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
    /** @type {import('./backend.js').LayerForwardArgs} */
    const p = {
      where, batch: B, seqLen: L, embedDim: E, numHeads: H, x: t.data, mask, training, dropoutSeed,
      needWeights: f.needWeights, averageWeights: f.averageWeights, trace: f.traceValues,
    };
    return { obj, unbatched, f, training, p };
  }

  /** The public result of a forward from the backend's answer. */
  _finish(prep, r) {
    const { unbatched, f, p } = prep;
    const bs = (...d) => (unbatched ? d : [p.batch, ...d]);
    const out = {
      output: makeTensor(r.output, bs(p.seqLen, p.embedDim)),
      weights: r.weights ? makeTensor(r.weights, f.averageWeights ? bs(p.seqLen, p.seqLen) : bs(p.numHeads, p.seqLen, p.seqLen)) : null,
      dropoutSeed: p.dropoutSeed,
    };
    if (f.trace) {
      out.trace = buildTrace({ batch: p.batch, lq: p.seqLen, lk: p.seqLen, embedDim: p.embedDim, numHeads: p.numHeads, mask: p.mask.given, layer: true, unbatched, training: prep.training, layout: this._layout });
      if (f.traceValues) {
        attachValues(out.trace, r.trace, { batch: p.batch, lq: p.seqLen, lk: p.seqLen, embedDim: p.embedDim, numHeads: p.numHeads, input: p.x, output: r.output });
      }
    }
    return out;
  }

  /** Synchronous forward (wasm backends only). */
  forwardSync(x, options) {
    const backend = this._backend;
    if (backend.async) throw typeError('selfAttentionLayer.forwardSync', `not available on the '${backend.name}' backend, whose results are Promises; use await forward(...)`);
    const prep = this._prepare(x, options);
    return this._finish(prep, /** @type {import('./backend.js').ForwardOut} */ (backend.layerForward(prep.obj, prep.p)));
  }

  /** Forward pass; always returns a Promise. */
  async forward(x, options) {
    const prep = this._prepare(x, options);
    return this._finish(prep, await this._backend.layerForward(prep.obj, prep.p));
  }

  /**
   * Gradients of Σ dOutput ⊙ forward(…) with the forward's options
   * (docs/training.md; the wasm backends).
   */
  backward(x, dOutput, options) {
    return layerBackward(wasmModuleOf(this._backend, 'layer.backward'), this, x, dOutput, options);
  }
}
