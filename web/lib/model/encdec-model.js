// An encoder-decoder (translation) model: Marian, BART (families/seq2seq.js), T5 (families/t5.js)
// over two block graphs of the core, the encoder (no head) and the decoder
// whose blocks read the encoder's output through cross-attention
// (TransformerConfig crossAttention, src/train/train.h). The decoder's
// Transformer::SetMemory projects each layer's cross keys and values of the
// encoder output once; decoding then runs on the decoder's key/value cache
// (Transformer::Extend), one token a step, as model.js does for the
// decoder-only models. Results follow transformers' Seq2SeqLMOutput: logits
// [1, Ld, V]; encoderAttentions one [1, H, Le, Le] per encoder layer;
// decoderAttentions [1, H, Ld, Ld] and crossAttentions [1, H, Ld, Le] per
// decoder layer; encoderLastHiddenState [1, Le, E]. On a webgpu lab `forward`
// runs both stacks on the GPU copy (model/gpu.js, web/lib/webgpu-model.js);
// forwardSync, nextTokens and generate run on the wasm copy.
import { rangeError, typeError, describe, checkInt, checkNumber, checkOptions } from '../errors.js';
import { withArena, checkStatus } from '../graph/arena.js';
import { Model } from './model.js';
import { attentionsOption, meanOverHeads } from './head-mean.js';
import { softmax, topIds, pickToken } from './sampling.js';

const FORWARD_KEYS = ['decoderInputIds', 'attentions'];
const NEXT_KEYS = ['decoderInputIds', 'k', 'temperature'];
const GENERATE_KEYS = ['maxNewTokens', 'temperature', 'topK', 'topP', 'seed', 'signal'];

function checkKeys(where, options, allowed) {
  const o = checkOptions(where, 'options', options);
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) throw typeError(where, `unknown option ${JSON.stringify(key)}; allowed: ${allowed.join(', ')}`);
  }
  return o;
}

export class EncoderDecoderModel extends Model {
  /**
   * @param {object} Module the wasm module
   * @param {import('../graph/transformer.js').Transformer} encoder the encoder's block graph
   * @param {import('../graph/transformer.js').Transformer} decoder the decoder's (crossAttention)
   * @param {import('./tokenizer.js').ModelTokenizer|null} tokenizer
   * @param {object} info as Model's
   */
  constructor(Module, encoder, decoder, tokenizer, info) {
    super(Module, decoder, tokenizer, info);
    this._enc = encoder;
    const c = info.c;
    const bytes = (t) => t._params.reduce((n, p) => n + p.shape.reduce((a, d) => a * d, 1) * (p.packed && t.config.packedHalf ? 2 : 4), 0) +
      Module.transformerHeadCopyBytes(t._handle);
    this.config = Object.freeze({
      ...this.config,
      isEncoderDecoder: true,
      encoderLayers: c.encoder.numLayers,
      encoderHeads: c.encoder.numHeads,
      decoderStartTokenId: c.decoderStartTokenId,
      // num_parameters(): model.shared once (both graphs hold it), without
      // final_logits_bias (a buffer), with the position tables the graphs
      // compute or trim (fileOnlyParameters).
      parameters: encoder.parameterCount + decoder.parameterCount - c.vocabSize * c.embedDim - (c.core.headBias ? c.vocabSize : 0) +
        (c.fileOnlyParameters ?? 0),
      bytes: bytes(encoder) + bytes(decoder),
    });
    // Who set the decoder's memory last (a forward, nextTokens or a generation).
    this._memoryOwner = null;
  }

  /** Checked decoder ids: the decoderInputIds option, or [decoder_start_token_id]. */
  _decoderIds(where, value) {
    if (value === undefined) return Int32Array.of(this.config.decoderStartTokenId);
    if (!(Array.isArray(value) || value instanceof Int32Array || value instanceof Uint32Array)) {
      throw typeError(where, `decoderInputIds must be an array of token ids, got ${describe(value)}`);
    }
    const V = this.config.vocabSize;
    for (let i = 0; i < value.length; i++) {
      if (!Number.isInteger(value[i]) || value[i] < 0 || value[i] >= V) {
        throw rangeError(where, `decoderInputIds must be integers in [0, ${V - 1}] (vocab_size ${V}); decoderInputIds[${i}] is ${describe(value[i])}`);
      }
    }
    if (value.length === 0) throw rangeError(where, `decoderInputIds has no tokens (start it with decoder_start_token_id ${this.config.decoderStartTokenId})`);
    if (value.length > this._maxLength) {
      throw rangeError(where, `decoderInputIds has ${value.length} tokens, more than the decoder's ${this._maxLength} positions (max_position_embeddings)`);
    }
    return Int32Array.from(value);
  }

  /**
   * Runs the encoder on `ids` and sets the decoder's memory (owner: who set it).
   * Returns { hidden [Le·E], attentions (per layer [He·Le·Le]) or null }.
   */
  _encode(where, ids, owner, wantAtt = false) {
    const Module = this._Module;
    const L = ids.length, E = this.config.embedDim, H = this.config.encoderHeads, N = this.config.encoderLayers;
    this._live(where);
    return withArena(Module, where, (arena) => {
      const hp = arena.f32(L * E);
      const per = H * L * L;
      const ap = wantAtt ? arena.f32(N * per) : 0;
      checkStatus(Module, where, Module.transformerRun(this._enc._handle, {
        batch: 1, length: L, keep: 0, tokens: arena.fromI32(ids), logits: 0, attention: ap, hidden: hp, layerInputs: 0, cross: 0, cached: false, lastOnly: false,
      }));
      this._memoryOwner = null;
      this._cacheOwner = null;
      checkStatus(Module, where, Module.transformerSetMemory(this._t._handle, { batch: 1, length: L, memory: hp }));
      this._memoryOwner = owner;
      const attentions = wantAtt ? Array.from({ length: N }, (_, l) => arena.readF32(ap + l * per * 4, per)) : null;
      return { hidden: arena.readF32(hp, L * E), attentions };
    });
  }

  /**
   * One forward pass of encoder and decoder (synchronous):
   * { ids, tokens, decoderInputIds, decoderTokens, logits, encoderAttentions,
   *   decoderAttentions, crossAttentions, encoderLastHiddenState }.
   * @param {string|number[]} input the source text or ids
   * @param {{ decoderInputIds?: number[], attentions?: boolean | 'mean' }} [options]
   */
  forwardSync(input, options) {
    const where = 'model.forward';
    const { ids, dids, wantAtt, mean } = this._seq2seqArgs(where, input, options);
    const Module = this._Module;
    const { vocabSize: V, numHeads: H, numLayers: N } = this.config;
    const Le = ids.length, Ld = dids.length;
    const enc = this._encode(where, ids, Symbol('forward'), wantAtt);
    return withArena(Module, where, (arena) => {
      const lp = arena.f32(Ld * V);
      const per = H * Ld * Ld, xper = H * Ld * Le;
      const ap = wantAtt ? arena.f32(N * per) : 0;
      const xp = wantAtt ? arena.f32(N * xper) : 0;
      checkStatus(Module, where, Module.transformerRun(this._t._handle, {
        batch: 1, length: Ld, keep: 0, tokens: arena.fromI32(dids), logits: lp, attention: ap, hidden: 0, layerInputs: 0, cross: xp, cached: false, lastOnly: false,
      }));
      const layers = (p, n, size) => (wantAtt ? Array.from({ length: n }, (_, l) => arena.readF32(p + l * size * 4, size)) : null);
      return this._seq2seqResult(ids, dids, {
        logits: arena.readF32(lp, Ld * V),
        encoderAttentions: enc.attentions,
        decoderAttentions: layers(ap, N, per),
        crossAttentions: layers(xp, N, xper),
        encoderHidden: enc.hidden,
      }, mean);
    });
  }

  /** forward's and forwardSync's checked arguments: { ids, dids, wantAtt, mean ('mean': averaged over heads) }. */
  _seq2seqArgs(where, input, options) {
    this._live(where);
    const o = checkKeys(where, options, FORWARD_KEYS);
    const { want: wantAtt, mean } = attentionsOption(where, o.attentions);
    const ids = this._ids(where, input);
    const dids = this._decoderIds(where, o.decoderInputIds);
    return { ids, dids, wantAtt, mean };
  }

  /**
   * The Seq2Seq output of flat arrays r: { logits [Ld·V], encoderAttentions,
   * decoderAttentions, crossAttentions (per layer, or null), encoderHidden [Le·E] }; mean: the
   * three kinds averaged over heads (PyTorch's average_attn_weights=True: [1, Lq, Lk] each).
   */
  _seq2seqResult(ids, dids, r, mean = false) {
    const { vocabSize: V, numHeads: H, embedDim: E, encoderHeads: He } = this.config;
    const Le = ids.length, Ld = dids.length;
    const tok = (a) => (this._tokenizer ? this._tokenizer.tokens(a) : null);
    const shaped = (list, shape) => (list ? list.map((data) => (mean ? meanOverHeads({ data, shape }, 'model.forward') : { data, shape })) : null);
    return {
      ids: Array.from(ids),
      tokens: tok(ids),
      decoderInputIds: Array.from(dids),
      decoderTokens: tok(dids),
      logits: { data: r.logits, shape: [1, Ld, V] },
      encoderAttentions: shaped(r.encoderAttentions, [1, He, Le, Le]),
      decoderAttentions: shaped(r.decoderAttentions, [1, H, Ld, Ld]),
      crossAttentions: shaped(r.crossAttentions, [1, H, Ld, Le]),
      encoderLastHiddenState: { data: r.encoderHidden, shape: [1, Le, E] },
    };
  }

  /**
   * One forward pass: on a webgpu lab on the GPU (web/lib/webgpu-model.js: the
   * encoder's and the decoder's stacks in one job), else (and after a device
   * loss) as forwardSync on the wasm copy. The wasm copy's decoder memory and
   * cache are left as they were.
   */
  async forward(input, options) {
    if (!this._gpu) return this.forwardSync(input, options);
    const { ids, dids, wantAtt, mean } = this._seq2seqArgs('model.forward', input, options);
    const out = await this._gpu.forwardEncDec(ids, dids, { attentions: wantAtt });
    if (!out) return this.forwardSync(input, options); // the device is lost: the wasm copy answers
    return this._seq2seqResult(ids, dids, out, mean);
  }

  /**
   * The k most likely next target tokens after decoderInputIds (default: the
   * start token) for the source `input`: [{ id, token, prob }], sorted.
   */
  async nextTokens(input, options) {
    const where = 'model.nextTokens';
    this._live(where);
    const o = checkKeys(where, options, NEXT_KEYS);
    const k = checkInt(where, 'k', o.k ?? 10, 1);
    const temperature = checkNumber(where, 'temperature', o.temperature ?? 1, { min: 0 });
    const ids = this._ids(where, input);
    const dids = this._decoderIds(where, o.decoderInputIds);
    const owner = Symbol('nextTokens');
    this._encode(where, ids, owner);
    const p = softmax(this._extend(where, 0, dids, owner), temperature);
    return topIds(p, k).map((id) => ({ id, token: this._tokenizer ? this._tokenizer.tokens([id])[0] : null, prob: p[id] }));
  }

  /**
   * Translates: the encoder runs once on the source, then the decoder from
   * decoder_start_token_id, one token a step on its key/value cache (the
   * memory's cross keys and values projected once). An async iterator of
   * { id, token, text } (text: what the token adds to the decoded target,
   * special tokens skipped); stops after maxNewTokens, at the end-of-sequence
   * token (yielded), at the decoder's last position, or when `signal` aborts.
   * Seeded draws as model.js; topK 1 is greedy.
   */
  generate(input, options) {
    const where = 'model.generate';
    this._live(where);
    const o = checkKeys(where, options, GENERATE_KEYS);
    const maxNewTokens = checkInt(where, 'maxNewTokens', o.maxNewTokens ?? 32, 1);
    const temperature = checkNumber(where, 'temperature', o.temperature ?? 1, { min: 0 });
    const topK = checkInt(where, 'topK', o.topK ?? 0, 0);
    const topP = checkNumber(where, 'topP', o.topP ?? 1, { min: 0, minExclusive: true, max: 1 });
    const seed = checkInt(where, 'seed', o.seed ?? 0, 0, 2 ** 32 - 1);
    const signal = o.signal;
    if (signal !== undefined && (signal === null || typeof signal.aborted !== 'boolean')) {
      throw typeError(where, `signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const ids = this._ids(where, input);
    const model = this;
    const Module = this._Module;
    return (async function* run() {
      const owner = Symbol('generate');
      if (signal?.aborted) return;
      model._encode(where, ids, owner);
      const seq = [model.config.decoderStartTokenId];
      let logits = model._extend(where, 0, Int32Array.from(seq), owner);
      let text = '';
      for (let step = 0; step < maxNewTokens; step++) {
        if (signal?.aborted) return;
        const id = pickToken(logits, temperature, topK, topP, () => Module.dropoutUniform(seed >>> 0, step >>> 0));
        seq.push(id);
        let piece = '';
        if (model._tokenizer) {
          const full = model._tokenizer.decode(seq.slice(1), { skipSpecialTokens: true });
          piece = full.startsWith(text) ? full.slice(text.length) : full;
          text = full;
        }
        yield { id, token: model._tokenizer ? model._tokenizer.tokens([id])[0] : null, text: piece };
        if (model._eos.has(id) || step + 1 === maxNewTokens || seq.length > model._maxLength) return;
        if (signal?.aborted) return;
        // Another call may have used the memory or the cache between our
        // steps: encode again, or run the whole target again, then.
        if (model._memoryOwner !== owner) model._encode(where, ids, owner);
        logits = model._cacheOwner === owner && Module.transformerCached(model._t._handle) === seq.length - 1
          ? model._extend(where, seq.length - 1, [id], owner)
          : model._extend(where, 0, Int32Array.from(seq), owner);
        await Promise.resolve();
      }
    })();
  }

  /** @returns {never} */
  _notHere(where, what) {
    this._live(where);
    throw typeError(where, `${what} is not available for encoder-decoder models (${this.config.modelType}) yet; use forward (attentions, crossAttentions), nextTokens or generate`);
  }

  async fillMask() { return this._notHere('model.fillMask', 'fillMask'); }
  save() { return this._notHere('model.save', 'save'); }
  headRoles() { return this._notHere('model.headRoles', 'headRoles'); }
  get headScores() {
    const f = () => this._notHere('model.headScores', 'headScores');
    f.repeated = f;
    return f;
  }
  logitLens() { return this._notHere('model.logitLens', 'logitLens'); }
  attribute() { return this._notHere('model.attribute', 'attribute'); }
  patch() { return this._notHere('model.patch', 'patch'); }

  dispose() {
    this._enc.dispose();
    super.dispose();
  }
}
