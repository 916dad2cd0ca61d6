// The model Web Worker of <attention-lab-model-view> and the page's "Your
// model": a whole checkpoint loaded with lab.loadModel and run here, off the
// page's thread, so that the page keeps drawing while a forward runs.
// Module worker; it imports the library's public entry only.
//
// Messages in (each with an id; the answer is { id, ok, value | error, ms }):
//   { type: 'load', files: { config, weights, tokenizer } }  (Files; progress:
//       { type: 'progress', loaded, total } while the tensors stream in)
//   { type: 'pretrained', name }            lab.pretrained(name) ('en' | 'zh'),
//       the package's shipped models (answers as 'load')
//   { type: 'abort' }                      aborts the load in flight (no answer)
//   { type: 'call', method, args }         forward | nextTokens | fillMask |
//       (forward's second argument passes decoderInputIds to an
//       encoder-decoder, whose answer is { ids, tokens, decoderInputIds,
//       decoderTokens, encoderAttentions, decoderAttentions, crossAttentions,
//       crossMean (per layer, the mean over heads [1, Ld, Le]: the library's
//       headMean, PyTorch's average_attn_weights=True) })
//       headRoles | headScores | headScoresRepeated | logitLens | attribute |
//       patch | encode | decode | tokens on the loaded model (nextTokens'
//       `ablate` option passes through; docs/interpretability.md)
//   { type: 'gen-start', args } → gid; { type: 'gen-next', gid } → { done,
//       value }; { type: 'gen-return', gid }: model.generate pulled one token
//       at a time by the page (the page asks for the next token once it has
//       drawn the last one, and Stop is simply not asking again)
//   { type: 'dispose' }
// Results that hold arrays (attentions) are transferred, not copied; logits
// stay here (a [1, L, V] array is megabytes, and the views need none).
import { init, headMean } from './index.js';

let labPromise = null;
let model = null;
let loadAbort = null;
const gens = new Map();
let nextGid = 1;

function lab(backend) {
  labPromise ??= init({ backend: backend ?? 'wasm', threads: 1 });
  return labPromise;
}

/** A result whose buffers are moved to the page rather than copied. */
class WithTransfer {
  constructor(value, transfer) {
    this.value = value;
    this.transfer = transfer;
  }
}

function errorOf(e) {
  return { name: e?.name ?? 'Error', message: e?.message ?? String(e) };
}

function needModel() {
  if (!model) throw new Error('no model is loaded in the worker');
  return model;
}

/**
 * Whether tokenizer.json's pieces are GPT-2's byte-level symbols (a ByteLevel
 * decoder or pre-tokenizer): a search of its text for a component of type
 * ByteLevel, not a second JSON.parse of a file that can be 33 MB (Gemma's;
 * loadModel has parsed it once already). In a tokenizer.json a string value
 * "ByteLevel" after a "type" key is only ever a component's type (vocab
 * entries map pieces to numbers; merges are strings in arrays).
 */
async function byteLevelOf(file) {
  if (!file || typeof file.text !== 'function') return false;
  try {
    return /"type"\s*:\s*"ByteLevel"/.test(await file.text());
  } catch {
    return false;
  }
}

/** Whether the model has a tokenizer (model.encode refuses without one). */
function encodes(model) {
  try {
    model.encode('a');
    return true;
  } catch {
    return false;
  }
}

async function handle(m) {
  switch (m.type) {
    case 'load': {
      const l = await lab(m.backend);
      model?.dispose();
      model = null;
      loadAbort = new AbortController();
      const t0 = performance.now();
      const loaded = await l.loadModel({
        ...m.files,
        signal: loadAbort.signal,
        onProgress: (p) => self.postMessage({ type: 'progress', loaded: p.loaded, total: p.total }),
      });
      loadAbort = null;
      model = loaded;
      const loadMs = performance.now() - t0;
      return {
        config: { ...model.config },
        byteLevel: await byteLevelOf(m.files.tokenizer),
        hasHeadRoles: typeof model.headRoles === 'function',
        // (a GGUF file's tokenizer comes from its metadata)
        hasTokenizer: Boolean(m.files.tokenizer) || encodes(model),
        loadMs,
      };
    }
    case 'pretrained': {
      const l = await lab(m.backend);
      model?.dispose();
      model = null;
      const t0 = performance.now();
      model = await l.pretrained(m.name);
      // The shipped models' tokenizer is character-level (no byte-level symbols).
      return { config: { ...model.config }, byteLevel: false, hasHeadRoles: true, hasTokenizer: true, loadMs: performance.now() - t0 };
    }
    case 'call': {
      const md = needModel();
      const args = m.args ?? [];
      if (m.method === 'forward') {
        if (md.config.isEncoderDecoder) {
          const o = args[1] ?? {};
          const r = md.forwardSync(args[0], { attentions: true, ...(o.decoderInputIds !== undefined ? { decoderInputIds: o.decoderInputIds } : {}) });
          const pick = (list) => list.map((a) => ({ data: a.data, shape: a.shape }));
          const value = {
            ids: r.ids, tokens: r.tokens, decoderInputIds: r.decoderInputIds, decoderTokens: r.decoderTokens,
            encoderAttentions: pick(r.encoderAttentions), decoderAttentions: pick(r.decoderAttentions), crossAttentions: pick(r.crossAttentions),
            crossMean: r.crossAttentions.map((a) => headMean(a)),
          };
          const buffers = new Set([...value.encoderAttentions, ...value.decoderAttentions, ...value.crossAttentions, ...value.crossMean].map((a) => a.data.buffer));
          return new WithTransfer(value, [...buffers]);
        }
        const r = md.forwardSync(args[0], { attentions: true });
        const attentions = r.attentions.map((a) => ({ data: a.data, shape: a.shape }));
        return new WithTransfer({ ids: r.ids, tokens: r.tokens, attentions }, attentions.map((a) => a.data.buffer));
      }
      if (m.method === 'headRoles') {
        if (typeof md.headRoles !== 'function') throw new TypeError('model.headRoles is not available in this version of the library');
        return md.headRoles(...args);
      }
      if (m.method === 'headScoresRepeated') return md.headScores.repeated(...args);
      if (!['nextTokens', 'fillMask', 'headScores', 'logitLens', 'attribute', 'patch', 'encode', 'decode', 'tokens'].includes(m.method)) throw new TypeError(`unknown method ${JSON.stringify(m.method)}`);
      return await md[m.method](...args);
    }
    case 'gen-start': {
      const md = needModel();
      const it = md.generate(...(m.args ?? []));
      const gid = nextGid++;
      gens.set(gid, it);
      return gid;
    }
    case 'gen-next': {
      const it = gens.get(m.gid);
      if (!it) return { done: true, value: undefined };
      const r = await it.next();
      if (r.done) gens.delete(m.gid);
      return { done: r.done, value: r.value };
    }
    case 'gen-return': {
      const it = gens.get(m.gid);
      gens.delete(m.gid);
      if (it) await it.return();
      return { done: true };
    }
    case 'dispose':
      for (const it of gens.values()) await it.return();
      gens.clear();
      model?.dispose();
      model = null;
      return true;
    default:
      throw new TypeError(`unknown message type ${JSON.stringify(m.type)}`);
  }
}

// One message at a time, in order (a forward and a generation step never
// interleave on the model's cache); 'abort' jumps the queue.
let queue = Promise.resolve();
self.onmessage = (ev) => {
  const m = ev.data;
  if (m?.type === 'abort') {
    loadAbort?.abort();
    return;
  }
  queue = queue.then(async () => {
    const t0 = performance.now();
    try {
      let value = await handle(m);
      let transfer = [];
      if (value instanceof WithTransfer) {
        transfer = value.transfer;
        value = value.value;
      }
      self.postMessage({ id: m.id, ok: true, value, ms: performance.now() - t0 }, transfer);
    } catch (e) {
      self.postMessage({ id: m.id, ok: false, error: errorOf(e), ms: performance.now() - t0 });
    }
  });
};
