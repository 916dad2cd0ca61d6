// A whole language model (GPT-2, Llama, BERT) over the core's block graph:
// the Transformer handle of web/lib/graph/transformer.js (the same C++ code
// that lab.transformer trains), its tokenizer and its config. Results follow
// transformers' names and shapes: logits [1, L, V], attentions one
// [1, H, L, L] per layer, hiddenStates [1, L, E] (or, with 'all', N + 1 of them).
//
// Generation runs on the core's key/value cache (Transformer::Extend): the
// prompt once, then one token per step; draws come from the core's
// counter-based uniform (DropoutUniform(seed, step)), so a seed gives the
// same tokens everywhere. A draw walks the top-k / top-p candidates in rank
// order, or, untruncated, all ids in id order; temperature 0 is the arg max
// (no softmax, no sort).
//
// On a webgpu lab the model also has a GPU copy of its weights (gpu.js):
// forward runs there (web/lib/webgpu-model.js); forwardSync, nextTokens,
// fillMask, generate and headRoles run on the wasm copy, and so does forward
// after a device loss.
import { rangeError, typeError, describe, checkInt, checkNumber, checkOptions, disposedError } from '../errors.js';
import { withArena, checkStatus } from '../graph/arena.js';
import { saveFiles } from './save-gguf.js';
import { publicConfig, keptBytes } from './plan.js';
import { softmax, topIds, pickToken } from './sampling.js';
import { headRoles } from './head-roles.js';
import { headScores, headScoresRepeated } from './head-scores.js';
import { attentionsOption, meanOverHeads } from './head-mean.js';
import { ablationTriples, hasMean, setAblations, lastLogitsUncached, logitLens, attribute, patch } from './interp.js';

const FORWARD_KEYS = ['attentions', 'hiddenStates', 'ablate'];
const NEXT_KEYS = ['k', 'temperature', 'ablate'];
const GENERATE_KEYS = ['maxNewTokens', 'temperature', 'topK', 'topP', 'seed', 'signal', 'ablate'];
const NO_ABLATIONS = new Int32Array(0);

function checkKeys(where, options, allowed) {
  const o = checkOptions(where, 'options', options);
  for (const key of Object.keys(o)) {
    if (key === 'decoderInputIds') throw typeError(where, 'decoderInputIds is for encoder-decoder models (marian, bart); this one has no decoder reading an encoder');
    if (!allowed.includes(key)) throw typeError(where, `unknown option ${JSON.stringify(key)}; allowed: ${allowed.join(', ')}`);
  }
  return o;
}

function checkBoolOption(where, name, v, fallback, more = '') {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw typeError(where, `${name} must be true or false${more ? ` ${more}` : ''}, got ${describe(v)}`);
  return v;
}

export class Model {
  /**
   * @param {object} Module the wasm module
   * @param {import('../graph/transformer.js').Transformer} transformer the block graph holding the weights
   * @param {import('./tokenizer.js').ModelTokenizer|null} tokenizer
   * @param {object} info { modelType, hfConfig, c (the normalised config), table (architecture), tokenizerJson }
   */
  constructor(Module, transformer, tokenizer, info) {
    this._Module = Module;
    this._t = transformer;
    this._tokenizer = tokenizer;
    this._info = info;
    const c = info.c;
    const kept = keptBytes(Module, transformer);
    this.config = Object.freeze({
      ...publicConfig(info.modelType, c),
      // As num_parameters(): with the file's rows that the block graph does
      // not keep (RoBERTa's position rows before padding_idx + 1).
      parameters: transformer.parameterCount + (c.fileOnlyParameters ?? 0),
      // The weights as held in wasm memory: float32, or 16 bits for the
      // packed projections of a 16-bit checkpoint (load.js), plus the 16-bit
      // copy of its tied LM head that decoding reads, when it has one.
      bytes: kept.bytes + Module.transformerHeadCopyBytes(transformer._handle),
      // The bytes kept as GGML blocks, by type ({ Q8_0: …, Q4_0: … }: a GGUF
      // file's quantized matrices, which the kernels read as they are), or
      // null when every weight is float32 or 16-bit.
      quantized: kept.quantized,
      weightsDtype: transformer.config.packedHalf === 1 ? 'float16' : transformer.config.packedHalf === 2 ? 'bfloat16' : 'float32',
    });
    this._causal = c.core.causal;
    this._hasHead = c.core.hasHead !== false;
    this._maxLength = transformer.config.maxLength;
    this._eos = new Set([].concat(info.hfConfig.eos_token_id ?? []).filter((v) => Number.isSafeInteger(v)));
    this._cacheOwner = null;
    // The ablations set in the core (interp.js setAblations): every run sets its own first.
    this._ablationKey = '';
    /** The GPU copy on a webgpu lab (gpu.js): { forward, dispose, bytes }, else null. */
    this._gpu = info.gpu ?? null;
  }

  _live(where) {
    if (this._t.disposed) throw disposedError(where, 'this model', 'load it again with lab.loadModel()');
    return this._t._handle;
  }

  _needTokenizer(where) {
    const spm = this._info.tokenizerMissing;
    if (!this._tokenizer && spm) {
      throw typeError(where, `this ${this._info.modelType} folder has ${spm.join(' and ')} (SentencePiece models) but no tokenizer.json, which the library reads; convert them into a tokenizer.json (for Marian: candle's candle-examples/examples/marian-mt/python/convert_slow_tokenizer.py; the Xenova/opus-mt-* repositories ship one), or pass token id arrays, which run without a tokenizer`);
    }
    if (!this._tokenizer) throw typeError(where, 'this model was loaded without a tokenizer (pass tokenizer.json to loadModel), so it takes id arrays only');
    return this._tokenizer;
  }

  /** Ids of `text`, with the special tokens the tokenizer's post-processor adds. */
  encode(text) {
    const where = 'model.encode';
    this._live(where);
    if (typeof text !== 'string') throw typeError(where, `text must be a string, got ${describe(text)}`);
    return this._needTokenizer(where).encode(text);
  }

  /** Text of `ids` (special tokens kept unless skipSpecialTokens). */
  decode(ids, options) {
    const where = 'model.decode';
    this._live(where);
    const o = checkKeys(where, options, ['skipSpecialTokens']);
    return this._needTokenizer(where).decode(this._ids(where, ids, { lengthCheck: false }), {
      skipSpecialTokens: checkBoolOption(where, 'skipSpecialTokens', o.skipSpecialTokens, false),
    });
  }

  /** The token strings of `ids`, as the tokenizer spells them. */
  tokens(ids) {
    const where = 'model.tokens';
    this._live(where);
    return this._needTokenizer(where).tokens(this._ids(where, ids, { lengthCheck: false }));
  }

  /** Validated Int32Array ids of a text or an id array. */
  _ids(where, input, { lengthCheck = true } = {}) {
    let ids;
    if (typeof input === 'string') ids = this._needTokenizer(where).encode(input);
    else if (Array.isArray(input) || input instanceof Int32Array || input instanceof Uint32Array) ids = Array.from(input);
    else throw typeError(where, `input must be a text (string) or an array of token ids, got ${describe(input)}`);
    const V = this.config.vocabSize;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= V) {
        throw rangeError(where, `token ids must be integers in [0, ${V - 1}] (vocab_size ${V}); ids[${i}] is ${describe(id)}`);
      }
    }
    if (lengthCheck) {
      if (ids.length === 0) throw rangeError(where, 'the input has no tokens');
      if (ids.length > this._maxLength) {
        throw rangeError(where, `the input has ${ids.length} tokens, more than the model's ${this._maxLength} positions (max_position_embeddings)`);
      }
    }
    return Int32Array.from(ids);
  }

  /** forward's checked arguments: { ids, attentions, hiddenStates } (the encoders and head-less models always give hiddenStates). */
  _forwardArgs(where, input, options) {
    this._live(where);
    const o = checkKeys(where, options, FORWARD_KEYS);
    // 'mean': PyTorch's average_attn_weights=True, [1, L, L] per layer (head-mean.js).
    const { want: attentions, mean } = attentionsOption(where, o.attentions);
    // 'all': transformers' output_hidden_states (every block's input, then the last hidden state).
    const all = o.hiddenStates === 'all';
    const hiddenStates = all || checkBoolOption(where, 'hiddenStates', o.hiddenStates, false, "or 'all'") || !this._hasHead || !this._causal;
    return { ids: this._ids(where, input), attentions, mean, hiddenStates, all, ablate: ablationTriples(this, where, o.ablate) };
  }

  /**
   * forward's result from flat arrays: logits [L·V], attentions [H·L·L] per layer, hidden [L·E]
   * (each or null); layers: every block's input [L·E] (hiddenStates 'all': N + 1 tensors);
   * mean: the attentions averaged over heads ([1, L, L] each).
   */
  _result(ids, logits, attentions, hidden, layers = null, mean = false) {
    const L = ids.length;
    const { vocabSize: V, numHeads: H, embedDim: E } = this.config;
    return {
      ids: Array.from(ids),
      tokens: this._tokenizer ? this._tokenizer.tokens(ids) : null,
      logits: logits ? { data: logits, shape: [1, L, V] } : null,
      attentions: attentions ? attentions.map((data) => (mean ? meanOverHeads({ data, shape: [1, H, L, L] }, 'model.forward') : { data, shape: [1, H, L, L] })) : null,
      hiddenStates: layers ? [...layers, hidden].map((data) => ({ data, shape: [1, L, E] })) : hidden ? { data: hidden, shape: [1, L, E] } : null,
    };
  }

  /**
   * One forward pass on the wasm copy (synchronous; on every backend).
   * @returns {{ ids, tokens, logits, attentions, hiddenStates }}
   */
  forwardSync(input, options) {
    const where = 'model.forward';
    const { ids, attentions: wantAtt, mean, hiddenStates: wantHidden, all, ablate } = this._forwardArgs(where, input, options);
    setAblations(this, where, ablate);
    const handle = this._t._handle;
    const L = ids.length;
    const { vocabSize: V, numHeads: H, numLayers: N, embedDim: E } = this.config;
    const Module = this._Module;
    return withArena(Module, where, (arena) => {
      const tp = arena.fromI32(ids);
      const lp = this._hasHead ? arena.f32(L * V) : 0;
      const per = H * L * L;
      const ap = wantAtt ? arena.f32(N * per) : 0;
      const hp = wantHidden ? arena.f32(L * E) : 0;
      const xp = all ? arena.f32(N * L * E) : 0;
      checkStatus(Module, where, Module.transformerRun(handle, {
        batch: 1, length: L, keep: 0, tokens: tp, logits: lp, attention: ap, hidden: hp, layerInputs: xp, cross: 0, cached: false, lastOnly: false,
      }));
      const attentions = [];
      for (let l = 0; wantAtt && l < N; l++) attentions.push(arena.readF32(ap + l * per * 4, per));
      const layers = all ? Array.from({ length: N }, (_, l) => arena.readF32(xp + l * L * E * 4, L * E)) : null;
      return this._result(ids, lp ? arena.readF32(lp, L * V) : null, wantAtt ? attentions : null, hp ? arena.readF32(hp, L * E) : null, layers, mean);
    });
  }

  /**
   * One forward pass: on a webgpu lab on the GPU (web/lib/webgpu-model.js), else (and after a
   * device loss) as forwardSync on the wasm copy.
   */
  async forward(input, options) {
    if (!this._gpu) return this.forwardSync(input, options);
    const a = this._forwardArgs('model.forward', input, options);
    if (a.all || a.ablate.length) return this.forwardSync(input, options); // every layer's states, ablations: the wasm copy
    const out = await this._gpu.forward(a.ids, { attentions: a.attentions, hiddenStates: a.hiddenStates });
    if (!out) return this.forwardSync(input, options); // the device is lost: the wasm copy answers
    return this._result(a.ids, out.logits, out.attentions, out.hidden, null, a.mean);
  }

  /**
   * Logits [V] of the last of `ids`, run at positions keep.. against the
   * first `keep` cached positions (0: afresh); `owner` holds the cache now.
   */
  _extend(where, keep, ids, owner, ablate = NO_ABLATIONS) {
    const handle = this._live(where);
    const Module = this._Module;
    const V = this.config.vocabSize;
    setAblations(this, where, ablate);
    if (hasMean(ablate)) {
      this._cacheOwner = null;
      return lastLogitsUncached(this, where, ids);
    }
    this._cacheOwner = owner;
    return withArena(Module, where, (arena) => {
      const lp = arena.f32(V);
      checkStatus(Module, where, Module.transformerRun(handle, {
        batch: 1, length: ids.length, keep, tokens: arena.fromI32(ids), logits: lp, attention: 0, hidden: 0, layerInputs: 0, cross: 0, cached: true, lastOnly: true,
      }));
      return arena.readF32(lp, V);
    });
  }

  _needCausal(where) {
    if (!this._causal || !this._hasHead) {
      throw typeError(where, `${this.config.modelType} is ${this._hasHead ? 'a masked language model' : 'an encoder without a language-model head'}: it predicts no next token${this._hasHead ? `; use model.fillMask(text) for its ${this.config.maskToken ?? '[MASK]'} predictions` : ''}`);
    }
  }

  /**
   * The k most likely next tokens after the input: [{ id, token, prob }], sorted.
   * @param {string|number[]} input
   * @param {{ k?: number, temperature?: number }} [options]
   */
  async nextTokens(input, options) {
    const where = 'model.nextTokens';
    this._live(where);
    const o = checkKeys(where, options, NEXT_KEYS);
    this._needCausal(where);
    const k = checkInt(where, 'k', o.k ?? 10, 1);
    const temperature = checkNumber(where, 'temperature', o.temperature ?? 1, { min: 0 });
    const ids = this._ids(where, input);
    const ablate = ablationTriples(this, where, o.ablate);
    const p = softmax(this._extend(where, 0, ids, Symbol('nextTokens'), ablate), temperature);
    return topIds(p, k).map((id) => ({ id, token: this._tokenizer ? this._tokenizer.tokens([id])[0] : null, prob: p[id] }));
  }

  /**
   * A masked LM's predictions (BERT, DistilBERT, RoBERTa, XLM-RoBERTa): for each mask token
   * of the text ([MASK], or <mask> for the RoBERTa family), the k most
   * likely tokens: [{ position, predictions: [{ id, token, prob }] }].
   */
  async fillMask(input, options) {
    const where = 'model.fillMask';
    this._live(where);
    const o = checkKeys(where, options, ['k']);
    const k = checkInt(where, 'k', o.k ?? 10, 1);
    if (this._causal || !this._hasHead) throw typeError(where, `fillMask needs a masked language model (an encoder with its MLM head); this is ${this.config.modelType}`);
    const tok = this._needTokenizer(where);
    // The family's mask token: BERT's [MASK], RoBERTa's <mask>.
    const maskToken = this.config.maskToken ?? '[MASK]';
    const mask = tok.tokenToId(maskToken);
    if (mask === undefined) throw rangeError(where, `the tokenizer has no ${maskToken} token`);
    const ids = this._ids(where, input);
    const { logits } = this.forwardSync(ids, { attentions: false });
    const V = this.config.vocabSize;
    const out = [];
    ids.forEach((id, i) => {
      if (id !== mask) return;
      const p = softmax(logits.data.subarray(i * V, (i + 1) * V), 1);
      out.push({ position: i, predictions: topIds(p, k).map((j) => ({ id: j, token: tok.tokens([j])[0], prob: p[j] })) });
    });
    return out;
  }

  /**
   * Generates tokens after the prompt: an async iterator of { id, token, text }
   * (text: what the new token adds to the decoded text). Stops after
   * maxNewTokens, at the model's end-of-sequence token (yielded), at its last
   * position, or when `signal` aborts.
   */
  generate(prompt, options) {
    const where = 'model.generate';
    this._live(where);
    const o = checkKeys(where, options, GENERATE_KEYS);
    this._needCausal(where);
    const maxNewTokens = checkInt(where, 'maxNewTokens', o.maxNewTokens ?? 32, 1);
    const temperature = checkNumber(where, 'temperature', o.temperature ?? 1, { min: 0 });
    const topK = checkInt(where, 'topK', o.topK ?? 0, 0);
    const topP = checkNumber(where, 'topP', o.topP ?? 1, { min: 0, minExclusive: true, max: 1 });
    const seed = checkInt(where, 'seed', o.seed ?? 0, 0, 2 ** 32 - 1);
    const signal = o.signal;
    if (signal !== undefined && (signal === null || typeof signal.aborted !== 'boolean')) {
      throw typeError(where, `signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const promptIds = this._ids(where, prompt);
    const ablate = ablationTriples(this, where, o.ablate);
    const model = this;
    const Module = this._Module;
    return (async function* run() {
      const owner = Symbol('generate');
      const ids = Array.from(promptIds);
      let logits = model._extend(where, 0, promptIds, owner, ablate);
      let text = model._tokenizer ? model._tokenizer.decode(ids) : '';
      for (let step = 0; step < maxNewTokens; step++) {
        if (signal?.aborted) return;
        const id = pickToken(logits, temperature, topK, topP, () => Module.dropoutUniform(seed >>> 0, step >>> 0));
        ids.push(id);
        let piece = '';
        if (model._tokenizer) {
          const full = model._tokenizer.decode(ids);
          piece = full.startsWith(text) ? full.slice(text.length) : full;
          text = full;
        }
        yield { id, token: model._tokenizer ? model._tokenizer.tokens([id])[0] : null, text: piece };
        if (model._eos.has(id) || step + 1 === maxNewTokens || ids.length > model._maxLength) return;
        if (signal?.aborted) return;
        // Another call may have used the cache between our steps: run the
        // whole sequence again then.
        logits = model._cacheOwner === owner && Module.transformerCached(model._t._handle) === ids.length - 1
          ? model._extend(where, ids.length - 1, [id], owner, ablate)
          : model._extend(where, 0, Int32Array.from(ids), owner, ablate);
        await Promise.resolve();
      }
    })();
  }

  /** The model's files: Hugging Face's ({ 'config.json', 'model.safetensors', 'tokenizer.json'? }, F32 or F16)
   *  or, with format 'gguf', { 'model.gguf' } (save-gguf.js: llama.cpp's names, GGML blocks as held). */
  save(options) {
    this._live('model.save');
    const o = checkKeys('model.save', options, ['dtype', 'format']);
    return saveFiles('model.save', this._t, this._info, o, this._Module);
  }

  /**
   * Scores every head on `text`: previous-token, self, first-token, induction and (verse)
   * previous-line, with their chance levels (web/lib/model/head-roles.js).
   */
  headRoles(text, options) {
    this._live('model.headRoles');
    return headRoles(this, text, options);
  }

  /**
   * TransformerLens's head scores ("mul" measure, one forward): headScores(textOrIds) and
   * headScores.repeated({ length, seed }) (web/lib/model/head-scores.js).
   */
  get headScores() {
    const f = (input, options) => headScores(this, input, options);
    f.repeated = (options) => headScoresRepeated(this, options);
    return f;
  }

  /** The logit lens: top-k tokens of x_0 … x_N through the final norm (web/lib/model/interp.js). */
  logitLens(input, options) { return logitLens(this, input, options); }

  /** Direct logit attribution of logit[target] − logit[baseline] (web/lib/model/interp.js). */
  attribute(input, options) { return attribute(this, input, options); }

  /** Activation patching from `clean` into `corrupted` over heads or the residual (web/lib/model/interp.js). */
  patch(options) { return patch(this, options); }

  /** Frees the weights and the cache; every later call throws. */
  dispose() {
    this._t.dispose();
    this._gpu?.dispose();
  }

  get disposed() {
    return this._t.disposed;
  }
}
