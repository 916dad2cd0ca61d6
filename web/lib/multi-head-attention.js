// MultiHeadAttention: Q/K/V projections, attention per head, output
// projection (PyTorch nn.MultiheadAttention semantics), over any backend.
// Shape legend: B batch, Lq/Lk sequence, E embed, H heads, D head dim.
import { rangeError, checkInt, checkOptions, typeError } from './errors.js';
import { toTensor, makeTensor, shapeString } from './tensor.js';
import { normalizeMask, withMaskFill } from './mask.js';
import { buildTrace } from './trace.js';
import { attachValues } from './trace-values.js';
import { AttentionModule } from './attention-module.js';
import { mhaBackward } from './train/backward.js';
import { wasmModuleOf } from './graph/arena.js';
import { KVCache, checkCache } from './kv-cache.js';
import { readConfig, forwardOptions, checkElements, checkBytes, OPTION_KEYS } from './validate.js';
import { checkFiniteArgs, finiteOption } from './finite.js';

export class MultiHeadAttention extends AttentionModule {
  /**
   * @param {import('./backend.js').Backend} backend
   * @param {object} config { embedDim, numHeads, kdim?, vdim?, bias?, seed? }
   * @param {string} [where] the public name for messages
   * @param {{ checkFinite?: boolean }} [settings] the lab's settings
   */
  constructor(backend, config, where = 'multiHeadAttention', settings = {}) {
    const c = readConfig(where, config, { layer: false });
    super(backend, where, c, settings);
    /** Hkv: the heads of K and V (GQA/MQA when < numHeads). */
    this.numKvHeads = /** @type {any} */ (c).numKvHeads;
    /** { base, rotaryDim, interleaved } or null. */
    this.rope = /** @type {any} */ (c).rope;
    this._track(backend.createMha(c));
  }

  /** Validates a forward's arguments and builds the backend's argument bag. */
  _prepare(query, key, value, options) {
    const where = `${this._where}.forward`;
    const obj = this._live('forward');
    const tq = toTensor(where, 'query', query, { ranks: [2, 3] });
    const tk = key === undefined || key === query ? tq : toTensor(where, 'key', key, { ranks: [2, 3] });
    const tv = value === undefined ? tk : value === query ? tq : value === key ? tk : toTensor(where, 'value', value, { ranks: [2, 3] });
    const rank = tq.shape.length;
    if (tk.shape.length !== rank || tv.shape.length !== rank) {
      throw rangeError(where, `query, key and value must all be batched [B, L, ·] or all unbatched [L, ·]: got query ${shapeString(tq.shape)}, key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)}`);
    }
    const unbatched = rank === 2;
    const s = (t) => (unbatched ? [1, ...t.shape] : t.shape);
    const [B, Lq, Eq] = s(tq);
    const [Bk, Lk, Ek] = s(tk);
    const [Bv, Lv, Ev] = s(tv);
    if (Eq !== this.embedDim) throw rangeError(where, `query's last dim must be embedDim (${this.embedDim}), got query ${shapeString(tq.shape)}`);
    if (Ek !== this.kdim) throw rangeError(where, `key's last dim must be kdim (${this.kdim}), got key ${shapeString(tk.shape)}`);
    if (Ev !== this.vdim) throw rangeError(where, `value's last dim must be vdim (${this.vdim}), got value ${shapeString(tv.shape)}`);
    if (Bk !== B || Bv !== B) throw rangeError(where, `query, key and value must have the same batch size B: got query ${shapeString(tq.shape)}, key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)}`);
    if (Lv !== Lk) throw rangeError(where, `key and value must have the same length Lk: got key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)}`);
    const f = forwardOptions(where, options, OPTION_KEYS.mhaForward);
    const H = this.numHeads;
    const cache = f.opts.kvCache === undefined ? null : checkCache(where, f.opts.kvCache, this);
    // Keys attended over: with a cache, the cached ones plus the new ones.
    const LkAll = cache ? cache._length + Lk : Lk;
    const mask = withMaskFill(where, normalizeMask(where, f.opts.mask, { batch: B, heads: H, lq: Lq, lk: LkAll, leadB: [B], leadH: [H] }), f.opts.maskFill);
    if (finiteOption(where, f.opts, this._settings.checkFinite)) checkFiniteArgs(where, [['query', tq], ['key', tk], ['value', tv]], mask);
    const E = this.embedDim;
    const wShape = [B, f.averageWeights ? 1 : H, Lq, LkAll];
    const nW = f.needWeights ? checkElements(where, "the weights [B,H,Lq,Lk] (query's and key's lengths; needWeights: false skips them)", wShape) : 0;
    checkElements(where, "the projected query [B,Lq,3·embedDim] (query's B and Lq)", [B, Lq, 3 * E]);
    // trace: 'values' adds Q, K, V, the context and three [B,H,Lq,Lk] planes.
    const nTrace = f.traceValues ? 2 * B * Lq * E + 2 * B * LkAll * E + 3 * B * H * Lq * LkAll : 0;
    checkBytes(where, [tq.data.length, tk.data.length, tv.data.length, 3 * B * Lq * E, 3 * B * Lk * E, B * Lq * E, nW, LkAll * (2 * E / H + 64), nTrace],
      () => `query ${shapeString(tq.shape)}, key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)} (embedDim ${E})${f.needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
    /** @type {import('./backend.js').MhaForwardArgs} */
    const p = {
      where, batch: B, lq: Lq, lk: Lk, lkTotal: LkAll, embedDim: E, numHeads: H,
      query: tq.data, key: tk.data, value: tv.data, mask,
      needWeights: f.needWeights, averageWeights: f.averageWeights,
      cache: cache ? cache._obj : null, trace: f.traceValues,
    };
    return { obj, unbatched, f, cache, p };
  }

  /** The public result of a forward from the backend's answer. */
  _finish(prep, r) {
    const { unbatched, f, p } = prep;
    if (prep.cache) prep.cache._length = p.lkTotal;
    const bs = (...d) => (unbatched ? d : [p.batch, ...d]);
    const out = {
      output: makeTensor(r.output, bs(p.lq, p.embedDim)),
      weights: r.weights ? makeTensor(r.weights, f.averageWeights ? bs(p.lq, p.lkTotal) : bs(p.numHeads, p.lq, p.lkTotal)) : null,
    };
    if (f.trace) {
      out.trace = buildTrace({ batch: p.batch, lq: p.lq, lk: p.lkTotal, embedDim: p.embedDim, numHeads: p.numHeads, kdim: this.kdim, vdim: this.vdim, mask: p.mask.given, unbatched, layout: this._layout });
      if (f.traceValues) {
        attachValues(out.trace, r.trace, { batch: p.batch, lq: p.lq, lk: p.lkTotal, embedDim: p.embedDim, numHeads: p.numHeads, input: p.query, output: r.output });
      }
    }
    return out;
  }

  /** Synchronous forward (wasm backends only). */
  forwardSync(query, key, value, options) {
    const backend = this._backend;
    if (backend.async) throw typeError(`${this._where}.forwardSync`, `not available on the '${backend.name}' backend, whose results are Promises; use await forward(...)`);
    const prep = this._prepare(query, key, value, options);
    return this._finish(prep, /** @type {import('./backend.js').ForwardOut} */ (backend.mhaForward(prep.obj, prep.p)));
  }

  /** Forward pass; always returns a Promise. */
  async forward(query, key, value, options) {
    const prep = this._prepare(query, key, value, options);
    if (!prep.cache) return this._finish(prep, await this._backend.mhaForward(prep.obj, prep.p));
    prep.cache._busy = true;
    try {
      return this._finish(prep, await this._backend.mhaForward(prep.obj, prep.p));
    } finally {
      prep.cache._busy = false;
    }
  }

  /**
   * A key/value cache for incremental decoding with this layer: pass it as
   * `forward(x, x, x, { kvCache, mask: { kind: 'causal' } })` with only the new
   * token(s); their K and V are appended and attention covers every cached
   * position. Holds 2·batch·maxLength·numKvHeads·headDim floats: with
   * GQA/MQA (numKvHeads < numHeads) numHeads/numKvHeads times fewer bytes
   * than full multi-head attention (cache.heldBytes() reports them).
   */
  createKVCache(options) {
    const where = `${this._where}.createKVCache`;
    const obj = this._live('createKVCache');
    const opts = checkOptions(where, 'options', options, OPTION_KEYS.createKVCache);
    if (opts.maxLength === undefined) throw typeError(where, 'options.maxLength is missing: the most positions the cache will hold');
    const maxLength = checkInt(where, 'maxLength', opts.maxLength, 1);
    const batch = checkInt(where, 'batch', opts.batch ?? 1, 1);
    const kvDim = /** @type {any} */ (this).numKvHeads * (this.embedDim / this.numHeads);
    checkElements(where, 'the key cache [batch, maxLength, numKvHeads·headDim]', [batch, maxLength, kvDim]);
    checkBytes(where, [2 * batch * maxLength * kvDim],
      () => `the key and value caches [${batch}, ${maxLength}, ${kvDim}]`);
    return new KVCache(this._backend, this, this._backend.createKvCache(obj, batch, maxLength), batch, maxLength);
  }

  /**
   * Gradients of Σ dOutput ⊙ forward(…) with the forward's options
   * (docs/training.md; the wasm backends).
   */
  backward(query, key, value, dOutput, options) {
    return mhaBackward(wasmModuleOf(this._backend, 'mha.backward'), this, query, key, value, dOutput, options);
  }
}
