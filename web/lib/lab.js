// The public API object, written once over any backend (wasm, wasm-scalar,
// webgpu). It validates and normalises every argument, so each message names
// the argument, what was given and what is allowed; backends receive plain
// Float32Arrays and sizes. Wasm backends answer synchronously; the webgpu
// backend returns Promises (`await` works for both).
import { describe, typeError, rangeError, checkInt, checkNumber, checkBool, checkOptions } from './errors.js';
import { toTensor, makeTensor, shapeString, product, MAX_ELEMENTS } from './tensor.js';
import { normalizeMask } from './mask.js';
import { buildTrace } from './trace.js';
import { IO_API } from './io/index.js';

const WEIGHT_KEYS = ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo'];
const MAX_CALL_BYTES = 1.5 * 2 ** 30;
// The scale is used as a float32: larger magnitudes would become ±Infinity.
const FLOAT32_MAX = 3.4028234663852886e38;

const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((release) => release())
  : null;

function checkLayout(where, opts) {
  const layout = opts.layout ?? 'torch';
  if (layout !== 'torch' && layout !== 'keras') {
    throw rangeError(where, `layout must be 'torch' ([out, in], y = x·Wᵀ + b) or 'keras' ([in, out], y = x·W + b), got ${describe(layout)}`);
  }
  return layout;
}

// `what` names the arguments whose sizes add up, e.g. "q [2,4,8], k …".
// `what` is a function building the description, called only on failure
// (this check runs on every call).
function checkBytes(where, counts, what) {
  let floats = 0;
  for (const n of counts) floats += n;
  const bytes = floats * 4;
  if (bytes > MAX_CALL_BYTES) {
    throw rangeError(where, `${what()} need about ${(bytes / 2 ** 20).toFixed(0)} MiB of buffers in one call; at most ${MAX_CALL_BYTES / 2 ** 20} MiB are allowed per call (wasm memory is limited to 2 GiB). Use smaller sizes, or needWeights: false to skip the [B,H,Lq,Lk] weights`);
  }
}

function checkElements(where, name, shape) {
  const n = product(shape);
  if (n > MAX_ELEMENTS) {
    throw rangeError(where, `${name} would have shape ${shapeString(shape)} = ${n} elements; at most ${MAX_ELEMENTS} are allowed`);
  }
  return n;
}

// The weights, their packed copies and the fused [E, 3E] panel (with its
// temporary copy) live in wasm memory for the object's lifetime; refuse sizes
// that cannot fit before anything is allocated (the C++ core checks the exact
// packed sizes again).
function checkWeightBytes(where, c) {
  const E = c.embedDim;
  const perCopy = 2 * E * E + (c.kdim + c.vdim) * E;
  const fused = c.kdim === E && c.vdim === E ? 6 * E * E : 0;
  const bytes = (2 * perCopy + fused + 7 * E) * 4;
  if (bytes > MAX_CALL_BYTES) {
    throw rangeError(where, `embedDim ${E} (kdim ${c.kdim}, vdim ${c.vdim}) needs about ${(bytes / 2 ** 20).toFixed(0)} MiB of wasm memory for the weights and their packed copies; at most ${MAX_CALL_BYTES / 2 ** 20} MiB are allowed (wasm memory is limited to 2 GiB)`);
  }
}

// Mixes (seed, counter) into a fresh uint32 dropout seed.
function mixSeed(seed, counter) {
  let x = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(counter + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

function then(value, fn) {
  return value && typeof value.then === 'function' ? value.then(fn) : fn(value);
}

/**
 * Builds the public API over a backend.
 * @param {object} backend see wasm-backend.js for the interface
 */
export function createLab(backend) {
  const lab = {
    // Weight files (safetensors, .npy, .npz) and state-dict mapping: pure JS, see io/.
    ...IO_API,
    get backend() {
      return backend.name;
    },
    get kernelArch() {
      return backend.kernelArch;
    },

    // Backend events, passed through to backends that have them (webgpu:
    // 'devicelost', then 'backendchange' when calls move to wasm); no-ops on
    // the wasm backends, which have none.
    addEventListener(type, listener, options) {
      backend.addEventListener?.(type, listener, options);
    },
    removeEventListener(type, listener, options) {
      backend.removeEventListener?.(type, listener, options);
    },

    positionalEncoding(seqLen, dModel, options) {
      const where = 'positionalEncoding';
      checkInt(where, 'seqLen', seqLen, 1);
      checkInt(where, 'dModel', dModel, 1);
      const opts = checkOptions(where, 'options', options);
      const base = opts.base ?? 10000;
      checkNumber(where, 'base', base, { min: 1, minExclusive: true });
      checkElements(where, 'the encoding [seqLen, dModel]', [seqLen, dModel]);
      return then(backend.positionalEncoding(seqLen, dModel, base), (data) => makeTensor(data, [seqLen, dModel]));
    },

    selfAttention(x, options) {
      const where = 'selfAttention';
      const t = toTensor(where, 'x', x, { ranks: [2, 3] });
      const opts = checkOptions(where, 'options', options);
      const unbatched = t.shape.length === 2;
      const [B, L, E] = unbatched ? [1, ...t.shape] : t.shape;
      return sdpaCore(where, { lead: unbatched ? [] : [B], leadB: unbatched ? [] : [B], leadH: [], batch: B, heads: 1, lq: L, lk: L, d: E, dv: E, q: t.data, k: t.data, v: t.data }, opts);
    },

    scaledDotProductAttention(q, k, v, options) {
      const where = 'scaledDotProductAttention';
      const tq = toTensor(where, 'q', q);
      const tk = toTensor(where, 'k', k);
      const tv = toTensor(where, 'v', v);
      const opts = checkOptions(where, 'options', options);
      const r = tq.shape.length;
      if (r < 2) throw rangeError(where, `q must have rank >= 2 ([..., Lq, D]), got shape ${shapeString(tq.shape)}`);
      if (tk.shape.length !== r || tv.shape.length !== r) {
        throw rangeError(where, `q, k and v must have the same rank: got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
      }
      const lead = tq.shape.slice(0, r - 2);
      for (const [name, t] of [['k', tk], ['v', tv]]) {
        if (t.shape.slice(0, r - 2).some((d, i) => d !== lead[i])) {
          throw rangeError(where, `${name} must have the same leading dims as q ${shapeString(lead)}: got q ${shapeString(tq.shape)}, ${name} ${shapeString(t.shape)}`);
        }
      }
      const [Lq, D] = tq.shape.slice(r - 2);
      const [Lk, Dk] = tk.shape.slice(r - 2);
      const [Lv, Dv] = tv.shape.slice(r - 2);
      if (Dk !== D) throw rangeError(where, `k's last dim (${Dk}) must equal q's last dim D (${D}): got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}`);
      if (Lv !== Lk) throw rangeError(where, `v's length (${Lv}) must equal k's length Lk (${Lk}): got k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
      // Leading dims fold to [B, H]: rank 3 → [B], rank 4 → [B, H], rank >4 → [B..., H].
      let leadB;
      let leadH;
      if (lead.length <= 1) {
        leadB = lead;
        leadH = [];
      } else {
        leadB = lead.slice(0, -1);
        leadH = lead.slice(-1);
      }
      const B = product(leadB);
      const H = product(leadH);
      return sdpaCore(where, { lead, leadB, leadH, batch: B, heads: H, lq: Lq, lk: Lk, d: D, dv: Dv, q: tq.data, k: tk.data, v: tv.data }, opts);
    },

    multiHeadAttention(config) {
      return new MultiHeadAttention(config, 'multiHeadAttention');
    },

    selfAttentionLayer(config) {
      return new SelfAttentionLayer(config);
    },

    shapeTrace(params) {
      const where = 'shapeTrace';
      const p = checkOptions(where, 'params', params);
      const embedDim = checkInt(where, 'embedDim', p.embedDim, 1);
      const numHeads = checkInt(where, 'numHeads', p.numHeads, 1);
      if (embedDim % numHeads !== 0) {
        throw rangeError(where, `embedDim (${embedDim}) must be divisible by numHeads (${numHeads})`);
      }
      const lq = checkInt(where, 'lq', p.lq ?? p.seqLen, 1);
      return buildTrace({
        batch: checkInt(where, 'batch', p.batch ?? 1, 1),
        lq,
        lk: checkInt(where, 'lk', p.lk ?? lq, 1),
        embedDim,
        numHeads,
        kdim: checkInt(where, 'kdim', p.kdim ?? embedDim, 1),
        vdim: checkInt(where, 'vdim', p.vdim ?? embedDim, 1),
        mask: Boolean(p.mask),
        layer: Boolean(p.layer),
        unbatched: Boolean(p.unbatched),
        training: Boolean(p.training),
      });
    },

    /** Internal: the backend object (used by tests and the page). */
    get _backend() {
      return backend;
    },
  };

  function sdpaCore(where, p, opts) {
    const needWeights = opts.needWeights ?? true;
    checkBool(where, 'needWeights', needWeights);
    let scale;
    if (opts.scale !== undefined) scale = checkNumber(where, 'scale', opts.scale, { min: -FLOAT32_MAX, max: FLOAT32_MAX });
    const mask = normalizeMask(where, opts.mask, p);
    const outShape = [...p.lead, p.lq, p.dv];
    const wShape = [...p.lead, p.lq, p.lk];
    const nOut = checkElements(where, "the output [..., Lq, Dv] (q's length, v's width)", outShape);
    const nW = needWeights ? checkElements(where, "the weights [..., Lq, Lk] (q's and k's lengths; needWeights: false skips them)", wShape) : 0;
    checkBytes(where, [p.q.length, p.k.length, p.v.length, nOut, nW, p.lk * (p.d + p.dv + 64)],
      () => `q ${shapeString([...p.lead, p.lq, p.d])}, k ${shapeString([...p.lead, p.lk, p.d])}, v ${shapeString([...p.lead, p.lk, p.dv])}, the output ${shapeString(outShape)}${needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
    const result = backend.sdpa({ ...p, where, scale, mask, needWeights });
    return then(result, (r) => ({
      output: makeTensor(r.output, [...p.lead, p.lq, p.dv]),
      weights: r.weights ? makeTensor(r.weights, [...p.lead, p.lq, p.lk]) : null,
    }));
  }

  // ---- shared by MultiHeadAttention and SelfAttentionLayer -----------------
  class Module {
    constructor(where) {
      this._where = where;
      this._obj = null;
    }
    _track(obj) {
      this._obj = obj;
      const release = () => backend.destroy(obj);
      this._token = {};
      if (registry) registry.register(this, release, this._token);
    }
    _live(method) {
      if (!this._obj) {
        throw new Error(`${this._where}.${method}: this object has been disposed; create a new one`);
      }
      return this._obj;
    }
    /** Frees the weights and buffers. Safe to call more than once. */
    dispose() {
      if (!this._obj) return;
      if (registry) registry.unregister(this._token);
      backend.destroy(this._obj);
      this._obj = null;
    }
    get disposed() {
      return this._obj === null;
    }
    /** Bytes held by weights and reusable buffers. */
    heldBytes() {
      return backend.heldBytes(this._live('heldBytes'));
    }
    _weightShape(key, layout) {
      const E = this.embedDim;
      if (key[0] === 'b') return [E];
      const inDim = key === 'wk' ? this.kdim : key === 'wv' ? this.vdim : E;
      return layout === 'torch' ? [E, inDim] : [inDim, E];
    }
    setWeights(weights, options) {
      const where = `${this._where}.setWeights`;
      const obj = this._live('setWeights');
      if (weights === null || typeof weights !== 'object' || Array.isArray(weights)) {
        throw typeError(where, `weights must be an object such as { wq, bq, wk, bk, wv, bv, wo, bo }, got ${describe(weights)}`);
      }
      const opts = checkOptions(where, 'options', options);
      const layout = checkLayout(where, opts);
      const extra = this._extraWeightKeys();
      for (const key of Object.keys(weights)) {
        if (!WEIGHT_KEYS.includes(key) && !extra.includes(key)) {
          throw rangeError(where, `unknown weight ${JSON.stringify(key)}; allowed: ${[...WEIGHT_KEYS, ...extra].join(', ')}`);
        }
      }
      // Validate everything before changing anything.
      const staged = [];
      for (const key of [...WEIGHT_KEYS, ...extra]) {
        if (weights[key] === undefined) continue;
        if (key[0] === 'b' && key.length === 2 && !this.bias) {
          throw rangeError(where, `${key}: this layer was created with bias: false, so it has no biases`);
        }
        const shape = this._weightShape(key, layout);
        const value = weights[key];
        let t;
        if (Array.isArray(value) && !Array.isArray(value[0])) {
          t = toTensor(where, key, { data: value, shape: [value.length] });
        } else if (ArrayBuffer.isView(value)) {
          t = toTensor(where, key, { data: value, shape: [value.length] });
        } else {
          t = toTensor(where, key, value);
        }
        const flatOk = t.shape.length === 1 && t.shape[0] === product(shape);
        const shapeOk = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
        if (!flatOk && !shapeOk) {
          throw rangeError(where, `${key} must have shape ${shapeString(shape)} in '${layout}' layout, got ${shapeString(t.shape)}`);
        }
        staged.push([key, t.data]);
      }
      let gamma = null;
      let beta = null;
      for (const [key, data] of staged) {
        if (key === 'gamma') gamma = data;
        else if (key === 'beta') beta = data;
        else backend.setWeight(obj, key, data, layout);
      }
      if (gamma || beta) backend.setNorm(obj, gamma, beta);
      return this;
    }
    getWeights(options) {
      const where = `${this._where}.getWeights`;
      const obj = this._live('getWeights');
      const opts = checkOptions(where, 'options', options);
      const layout = checkLayout(where, opts);
      const out = {};
      for (const key of WEIGHT_KEYS) {
        if (key[0] === 'b' && !this.bias) continue;
        const shape = this._weightShape(key, layout);
        out[key] = makeTensor(backend.getWeight(obj, key, layout, product(shape)), shape);
      }
      return out;
    }
    _extraWeightKeys() {
      return [];
    }
  }

  function readConfig(where, config, { layer }) {
    const c = checkOptions(where, 'config', config);
    if (config === undefined || config === null) throw typeError(where, 'config is missing: expected { embedDim, numHeads, … }');
    if (c.embedDim === undefined) throw typeError(where, 'config.embedDim is missing (the model width E)');
    if (c.numHeads === undefined) throw typeError(where, 'config.numHeads is missing (the number of heads H)');
    const embedDim = checkInt(where, 'embedDim', c.embedDim, 1, 65536);
    const numHeads = checkInt(where, 'numHeads', c.numHeads, 1, 65536);
    if (embedDim % numHeads !== 0) {
      throw rangeError(where, `embedDim (${embedDim}) must be divisible by numHeads (${numHeads}): head_dim = embedDim / numHeads must be an integer`);
    }
    const out = {
      embedDim,
      numHeads,
      kdim: checkInt(where, 'kdim', c.kdim ?? embedDim, 1, 65536),
      vdim: checkInt(where, 'vdim', c.vdim ?? embedDim, 1, 65536),
      bias: checkBool(where, 'bias', c.bias ?? true),
      seed: checkInt(where, 'seed', c.seed ?? 0, 0, 2 ** 32 - 1),
    };
    checkElements(where, 'the projection weight [max(embedDim, kdim, vdim), 3·embedDim]', [Math.max(out.embedDim, out.kdim, out.vdim), 3 * out.embedDim]);
    checkWeightBytes(where, out);
    if (layer) {
      if (c.kdim !== undefined || c.vdim !== undefined) {
        if (out.kdim !== embedDim || out.vdim !== embedDim) {
          throw rangeError(where, 'kdim and vdim must equal embedDim in a self-attention layer');
        }
      }
      out.dropout = checkNumber(where, 'dropout', c.dropout ?? 0.1, { min: 0, max: 1, maxExclusive: true });
      out.eps = checkNumber(where, 'eps', c.eps ?? 1e-5, { min: 0, minExclusive: true });
    }
    return out;
  }

  function forwardOptions(where, options) {
    const opts = checkOptions(where, 'options', options);
    return {
      opts,
      needWeights: checkBool(where, 'needWeights', opts.needWeights ?? true),
      averageWeights: checkBool(where, 'averageWeights', opts.averageWeights ?? false),
      trace: checkBool(where, 'trace', opts.trace ?? false),
    };
  }

  class MultiHeadAttention extends Module {
    constructor(config, where) {
      super(where);
      const c = readConfig(where, config, { layer: false });
      Object.assign(this, c);
      this.headDim = c.embedDim / c.numHeads;
      this._track(backend.createMha(c));
    }

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
      const f = forwardOptions(where, options);
      const H = this.numHeads;
      const cache = f.opts.kvCache === undefined ? null : this._checkCache(where, f.opts.kvCache, B, Lk);
      // Keys attended over: with a cache, the cached ones plus the new ones.
      const LkAll = cache ? cache._length + Lk : Lk;
      const mask = normalizeMask(where, f.opts.mask, { batch: B, heads: H, lq: Lq, lk: LkAll, leadB: [B], leadH: [H] });
      const E = this.embedDim;
      const wShape = [B, f.averageWeights ? 1 : H, Lq, LkAll];
      const nW = f.needWeights ? checkElements(where, "the weights [B,H,Lq,Lk] (query's and key's lengths; needWeights: false skips them)", wShape) : 0;
      checkElements(where, "the projected query [B,Lq,3·embedDim] (query's B and Lq)", [B, Lq, 3 * E]);
      checkBytes(where, [tq.data.length, tk.data.length, tv.data.length, 3 * B * Lq * E, 3 * B * Lk * E, B * Lq * E, nW, LkAll * (2 * E / H + 64)],
        () => `query ${shapeString(tq.shape)}, key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)} (embedDim ${E})${f.needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
      return {
        obj, unbatched, f, cache,
        p: {
          where, batch: B, lq: Lq, lk: Lk, lkTotal: LkAll, embedDim: E, numHeads: H,
          query: tq.data, key: tk.data, value: tv.data, mask,
          needWeights: f.needWeights, averageWeights: f.averageWeights,
          cache: cache ? cache._obj : null,
        },
      };
    }

    _checkCache(where, cache, B, Lk) {
      if (!(cache instanceof KVCache)) {
        throw typeError(where, `kvCache must be a cache from this layer's createKVCache(), got ${describe(cache)}`);
      }
      if (cache._mha !== this) {
        throw rangeError(where, 'kvCache belongs to another multiHeadAttention; use one created by this layer\'s createKVCache()');
      }
      if (!cache._obj) throw new Error(`${where}: kvCache has been disposed; create a new one with createKVCache()`);
      if (cache._busy) {
        throw new Error(`${where}: kvCache is in use by a forward that has not finished; await it before the next step`);
      }
      if (cache.batch !== B) {
        throw rangeError(where, `kvCache holds batch ${cache.batch} but the inputs have batch B = ${B}`);
      }
      if (cache._length + Lk > cache.maxLength) {
        throw rangeError(where, `kvCache: ${Lk} new key(s) do not fit: it holds ${cache._length} of at most ${cache.maxLength} positions; reset() it or create a larger one`);
      }
      return cache;
    }

    _finish(prep, r) {
      const { unbatched, f, p } = prep;
      if (prep.cache) prep.cache._length = p.lkTotal;
      const bs = (...d) => (unbatched ? d : [p.batch, ...d]);
      const out = {
        output: makeTensor(r.output, bs(p.lq, p.embedDim)),
        weights: r.weights ? makeTensor(r.weights, f.averageWeights ? bs(p.lq, p.lkTotal) : bs(p.numHeads, p.lq, p.lkTotal)) : null,
      };
      if (f.trace) {
        out.trace = buildTrace({ batch: p.batch, lq: p.lq, lk: p.lkTotal, embedDim: p.embedDim, numHeads: p.numHeads, kdim: this.kdim, vdim: this.vdim, mask: p.mask.given, unbatched });
      }
      return out;
    }

    /** Synchronous forward (wasm backends only). */
    forwardSync(query, key, value, options) {
      if (backend.async) throw new Error(`${this._where}.forwardSync is not available on the '${backend.name}' backend; use await forward(...)`);
      const prep = this._prepare(query, key, value, options);
      return this._finish(prep, backend.mhaForward(prep.obj, prep.p));
    }

    /** Forward pass; always returns a Promise. */
    async forward(query, key, value, options) {
      const prep = this._prepare(query, key, value, options);
      if (!prep.cache) return this._finish(prep, await backend.mhaForward(prep.obj, prep.p));
      prep.cache._busy = true;
      try {
        return this._finish(prep, await backend.mhaForward(prep.obj, prep.p));
      } finally {
        prep.cache._busy = false;
      }
    }

    /**
     * A key/value cache for incremental decoding with this layer: pass it as
     * `forward(x, x, x, { kvCache, mask: { kind: 'causal' } })` with only the new
     * token(s); their K and V are appended and attention covers every cached
     * position. Holds 2·batch·maxLength·embedDim floats.
     */
    createKVCache(options) {
      const where = `${this._where}.createKVCache`;
      const obj = this._live('createKVCache');
      const opts = checkOptions(where, 'options', options);
      if (opts.maxLength === undefined) throw typeError(where, 'options.maxLength is missing: the most positions the cache will hold');
      const maxLength = checkInt(where, 'maxLength', opts.maxLength, 1);
      const batch = checkInt(where, 'batch', opts.batch ?? 1, 1);
      checkElements(where, 'the key cache [batch, maxLength, embedDim]', [batch, maxLength, this.embedDim]);
      checkBytes(where, [2 * batch * maxLength * this.embedDim],
        () => `the key and value caches [${batch}, ${maxLength}, ${this.embedDim}]`);
      return new KVCache(this, backend.createKvCache(obj, batch, maxLength), batch, maxLength);
    }
  }

  /** Keys and values of the positions a MultiHeadAttention has seen (see createKVCache). */
  class KVCache {
    constructor(mha, obj, batch, maxLength) {
      this._mha = mha;
      this._obj = obj;
      this._length = 0;
      this._busy = false;
      this.batch = batch;
      this.maxLength = maxLength;
      this._token = {};
      if (registry) registry.register(this, () => backend.kvCacheDestroy(obj), this._token);
    }
    /** Positions held (grows by the new keys of every forward that uses the cache). */
    get length() {
      return this._length;
    }
    get disposed() {
      return this._obj === null;
    }
    /** Forgets every position (length 0), keeping the memory for the next sequence. */
    reset() {
      if (!this._obj) throw new Error('kvCache.reset: this cache has been disposed; create a new one with createKVCache()');
      if (this._busy) throw new Error('kvCache.reset: a forward using this cache has not finished; await it first');
      backend.kvCacheReset(this._obj);
      this._length = 0;
    }
    /**
     * Keeps the first `length` positions: rolls back decode steps, or returns
     * to a shared prefix (a prompt) for the next continuation.
     */
    truncate(length) {
      const where = 'kvCache.truncate';
      if (!this._obj) throw new Error(`${where}: this cache has been disposed; create a new one with createKVCache()`);
      if (this._busy) throw new Error(`${where}: a forward using this cache has not finished; await it first`);
      const n = checkInt(where, 'length', length, 0, this._length);
      backend.kvCacheTruncate(this._obj, n);
      this._length = n;
    }
    /** Bytes held by the cached keys and values. */
    heldBytes() {
      if (!this._obj) return 0;
      return backend.kvCacheHeldBytes(this._obj);
    }
    /** Frees the cache. Safe to call more than once. */
    dispose() {
      if (!this._obj) return;
      if (registry) registry.unregister(this._token);
      backend.kvCacheDestroy(this._obj);
      this._obj = null;
    }
  }

  class SelfAttentionLayer extends Module {
    constructor(config) {
      super('selfAttentionLayer');
      const c = readConfig('selfAttentionLayer', config, { layer: true });
      Object.assign(this, c);
      this.headDim = c.embedDim / c.numHeads;
      this._seedCounter = 0;
      this._track(backend.createLayer(c));
    }

    _extraWeightKeys() {
      return ['gamma', 'beta'];
    }

    getWeights(options) {
      const out = super.getWeights(options);
      const norm = backend.getNorm(this._obj, this.embedDim);
      out.gamma = makeTensor(norm.gamma, [this.embedDim]);
      out.beta = makeTensor(norm.beta, [this.embedDim]);
      return out;
    }

    _weightShape(key, layout) {
      if (key === 'gamma' || key === 'beta') return [this.embedDim];
      return super._weightShape(key, layout);
    }

    _prepare(x, options) {
      const where = 'selfAttentionLayer.forward';
      const obj = this._live('forward');
      const t = toTensor(where, 'x', x, { ranks: [2, 3] });
      const unbatched = t.shape.length === 2;
      const [B, L, E] = unbatched ? [1, ...t.shape] : t.shape;
      if (E !== this.embedDim) throw rangeError(where, `x's last dim must be embedDim (${this.embedDim}), got x ${shapeString(t.shape)}`);
      const f = forwardOptions(where, options);
      if (f.opts.kvCache !== undefined) {
        throw rangeError(where, 'kvCache is an option of multiHeadAttention().forward; a selfAttentionLayer has no key/value cache');
      }
      const training = checkBool(where, 'training', f.opts.training ?? false);
      let dropoutSeed;
      if (f.opts.dropoutSeed !== undefined) {
        dropoutSeed = checkInt(where, 'dropoutSeed', f.opts.dropoutSeed, 0, 2 ** 32 - 1);
      } else if (training) {
        dropoutSeed = mixSeed(this.seed, this._seedCounter++);
      } else {
        dropoutSeed = 0;
      }
      const H = this.numHeads;
      const mask = normalizeMask(where, f.opts.mask, { batch: B, heads: H, lq: L, lk: L, leadB: [B], leadH: [H] });
      const wShape = [B, f.averageWeights ? 1 : H, L, L];
      const nW = f.needWeights ? checkElements(where, "the weights [B,H,L,L] (x's length; needWeights: false skips them)", wShape) : 0;
      checkElements(where, "the projected input [B,L,3·embedDim] (x's B and L)", [B, L, 3 * E]);
      checkBytes(where, [t.data.length, 3 * B * L * E, 3 * B * L * E, nW, L * (2 * E / H + 64)],
        () => `x ${shapeString(t.shape)} (embedDim ${E})${f.needWeights ? ` and the weights ${shapeString(wShape)}` : ''}`);
      return {
        obj, unbatched, f, training,
        p: { where, batch: B, seqLen: L, embedDim: E, numHeads: H, x: t.data, mask, training, dropoutSeed, needWeights: f.needWeights, averageWeights: f.averageWeights },
      };
    }

    _finish(prep, r) {
      const { unbatched, f, p } = prep;
      const bs = (...d) => (unbatched ? d : [p.batch, ...d]);
      const out = {
        output: makeTensor(r.output, bs(p.seqLen, p.embedDim)),
        weights: r.weights ? makeTensor(r.weights, f.averageWeights ? bs(p.seqLen, p.seqLen) : bs(p.numHeads, p.seqLen, p.seqLen)) : null,
        dropoutSeed: p.dropoutSeed,
      };
      if (f.trace) {
        out.trace = buildTrace({ batch: p.batch, lq: p.seqLen, lk: p.seqLen, embedDim: p.embedDim, numHeads: p.numHeads, mask: p.mask.given, layer: true, unbatched, training: prep.training });
      }
      return out;
    }

    forwardSync(x, options) {
      if (backend.async) throw new Error(`selfAttentionLayer.forwardSync is not available on the '${backend.name}' backend; use await forward(...)`);
      const prep = this._prepare(x, options);
      return this._finish(prep, backend.layerForward(prep.obj, prep.p));
    }

    async forward(x, options) {
      const prep = this._prepare(x, options);
      return this._finish(prep, await backend.layerForward(prep.obj, prep.p));
    }
  }

  return lab;
}
