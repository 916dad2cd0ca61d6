// State dicts of other frameworks ⇄ this library's attention weights.
//   listAttentionLayers(tensors)            → the layers a file holds
//   fromStateDict(tensors, { format, prefix, numHeads }) → { config, weights, norm }
//   toStateDict(weights, { format, prefix, config, norm }) → { name: tensor }
//   loadStateDict / moduleStateDict: the bodies of mha.loadStateDict,
//   layer.loadStateDict and .stateDict().
// Formats and their layouts: state-dict-formats.js and docs/weights.md.
import { rangeError, typeError, checkOptions } from '../errors.js';
import { FORMATS, accessor } from './state-dict-formats.js';

/** The formats understood: 'torch', 'hf-bert', 'hf-gpt2', 'hf-llama', 'keras'. */
export const STATE_DICT_FORMATS = Object.freeze(Object.keys(FORMATS));

const BIAS_KV = 'it has bias_k/bias_v (nn.MultiheadAttention(add_bias_kv=True)), which append one learned key and value position to every sequence; this library has no such extra position, so the layer would compute something else. Create the torch module with add_bias_kv=False';

// name → tensor (or { shape } entries from openSafetensors).
function asMap(where, tensors) {
  if (Array.isArray(tensors)) {
    const map = {};
    for (const e of tensors) {
      if (!e || typeof e.name !== 'string' || !Array.isArray(e.shape)) throw typeError(where, 'tensors must be an object { name: tensor } or a list of { name, shape } entries');
      map[e.name] = e;
    }
    return map;
  }
  if (tensors === null || typeof tensors !== 'object') {
    throw typeError(where, 'tensors must be an object { name: { data, shape } } (e.g. readSafetensors(bytes).tensors)');
  }
  for (const [name, v] of Object.entries(tensors)) {
    if (!v || !Array.isArray(v.shape)) throw typeError(where, `tensors[${JSON.stringify(name)}] must be a tensor { data, shape }`);
  }
  return tensors;
}

// 'h.2.' < 'h.10.': compare digit runs as numbers.
function naturalCompare(a, b) {
  const ax = a.split(/(\d+)/);
  const bx = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(ax.length, bx.length); i++) {
    if (ax[i] === bx[i]) continue;
    const an = Number(ax[i]);
    const bn = Number(bx[i]);
    if (i % 2 === 1 && Number.isFinite(an) && Number.isFinite(bn)) return an - bn;
    return ax[i] < bx[i] ? -1 : 1;
  }
  return ax.length - bx.length;
}

function findLayers(map) {
  const found = [];
  for (const name of Object.keys(map)) {
    for (const format of STATE_DICT_FORMATS) {
      const m = FORMATS[format].anchor.exec(name);
      if (m) found.push({ format, prefix: name.slice(0, m.index) });
    }
  }
  return found.sort((a, b) => naturalCompare(a.prefix, b.prefix) || (a.format < b.format ? -1 : 1));
}

function layersHint(found) {
  if (!found.length) return ' (no attention layer of any known format was found in the file)';
  const shown = found.slice(0, 6).map((l) => `'${l.prefix}' (${l.format})`).join(', ');
  return ` (attention layers found: ${shown}${found.length > 6 ? `, … ${found.length} in all` : ''})`;
}

function shapesOf(where, map, format, prefix, found) {
  const acc = accessor(where, map, format, () => layersHint(found));
  const c = FORMATS[format].shapes(acc, prefix);
  if (c.refuse === 'bias_k') throw rangeError(where, `the layer at prefix '${prefix}' cannot be loaded: ${BIAS_KV}`);
  return { acc, c };
}

/**
 * Lists the attention layers of a state dict: [{ prefix, format, embedDim,
 * kdim, vdim, numHeads (null when the weights do not determine it), bias,
 * causal, rope, norm: { placement: 'pre'|'post', kind: 'layer'|'rms' } | null,
 * error? }] in natural order ('h.2.' before 'h.10.'). Works on tensors or on
 * openSafetensors(…).entries (shapes only).
 */
export function listAttentionLayers(tensors) {
  const where = 'listAttentionLayers';
  const map = asMap(where, tensors);
  const found = findLayers(map);
  return found.map(({ format, prefix }) => {
    const info = { prefix, format };
    try {
      const { c } = shapesOf(where, map, format, prefix, found);
      Object.assign(info, { embedDim: c.embedDim, kdim: c.kdim, vdim: c.vdim, numHeads: c.numHeads ?? null, bias: c.bias, causal: Boolean(c.causal), rope: Boolean(c.rope) });
      if (c.kvDim !== undefined) Object.assign(info, { qDim: c.qDim, kvDim: c.kvDim });
      info.norm = c.norm ? { ...c.norm } : null;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      info.error = e.message.replace(/^listAttentionLayers: /, '');
    }
    return info;
  });
}

/**
 * The names of the tensors one listed layer needs (its attention and its
 * norm), so that a big file's other tensors are never read:
 *   const f = await openSafetensors(file);
 *   const layer = listAttentionLayers(f.entries)[5];
 *   mha.loadStateDict(await f.read(layerTensorNames(f.entries, layer)), layer);
 */
export function layerTensorNames(tensors, layer) {
  const where = 'layerTensorNames';
  const map = asMap(where, tensors);
  if (!layer || typeof layer.prefix !== 'string' || !FORMATS[layer.format]) throw typeError(where, 'layer must be an entry of listAttentionLayers() ({ prefix, format })');
  const p = layer.prefix;
  const parent = p.endsWith('self_attn.') ? p.slice(0, -'self_attn.'.length) : null;
  const starts = FORMATS[layer.format].starts?.(p) ?? {
    torch: [p, ...(parent !== null ? [`${parent}norm1.`] : [])],
    keras: [p],
  }[layer.format];
  return Object.keys(map).filter((n) => starts.some((s) => n.startsWith(s)) && (layer.format !== 'torch' || !n.slice(p.length).includes('.') || /^out_proj\./.test(n.slice(p.length)) || !n.startsWith(p)));
}

function checkFormat(where, format) {
  if (typeof format !== 'string') throw typeError(where, `format must be one of ${STATE_DICT_FORMATS.map((f) => `'${f}'`).join(', ')}, got ${typeof format}`);
  if (!FORMATS[format]) throw rangeError(where, `unknown format ${JSON.stringify(format)}; known: ${STATE_DICT_FORMATS.map((f) => `'${f}'`).join(', ')}`);
}

function checkKeys(where, opts, allowed) {
  for (const k of Object.keys(opts)) {
    if (!allowed.includes(k)) throw typeError(where, `unknown option ${JSON.stringify(k)}; allowed: ${allowed.join(', ')}`);
  }
}

/**
 * Maps one layer of a state dict to this library's weights (torch layout).
 * `format` and `prefix` may be left out when the file holds one layer (of
 * that format). `numHeads` is needed by 'hf-llama' (to split GQA heads) and
 * checked against files that record it (keras).
 * @returns {{ format, prefix, config, weights, norm }}
 */
export function fromStateDict(tensors, options, where = 'fromStateDict') {
  const opts = checkOptions(where, 'options', options);
  checkKeys(where, opts, ['format', 'prefix', 'numHeads']);
  const map = asMap(where, tensors);
  const found = findLayers(map);
  let { format, prefix } = opts;
  if (format !== undefined) checkFormat(where, format);
  if (prefix !== undefined && typeof prefix !== 'string') throw typeError(where, `prefix must be a string such as 'h.0.', got ${typeof prefix}`);
  const candidates = found.filter((l) => (format === undefined || l.format === format) && (prefix === undefined || l.prefix === prefix));
  if (format === undefined || prefix === undefined) {
    if (candidates.length === 1) {
      ({ format, prefix } = candidates[0]);
    } else if (candidates.length === 0 && format !== undefined && prefix === undefined) {
      throw rangeError(where, `no '${format}' attention layer in the file (its names end in ${FORMATS[format].anchor.source.replace(/\\/g, '')})${layersHint(found)}`);
    } else if (candidates.length === 0) {
      throw rangeError(where, `no attention layer${prefix !== undefined ? ` at prefix '${prefix}'` : ''}${layersHint(found)}`);
    } else {
      throw rangeError(where, `the file holds ${candidates.length} attention layers; pass ${format === undefined && new Set(candidates.map((l) => l.format)).size > 1 ? 'format and ' : ''}prefix to pick one${layersHint(candidates)}`);
    }
  }
  const { acc, c } = shapesOf(where, map, format, prefix, found);
  const config = { embedDim: c.embedDim, numHeads: c.numHeads ?? null, kdim: c.kdim, vdim: c.vdim, bias: c.bias };
  if (opts.numHeads !== undefined) {
    const h = opts.numHeads;
    if (!Number.isInteger(h) || h < 1) throw rangeError(where, `numHeads must be a positive integer, got ${h}`);
    if (config.numHeads !== null && config.numHeads !== h) {
      throw rangeError(where, `the file's layer has ${config.numHeads} heads (its kernels say so), but numHeads ${h} was asked for`);
    }
    config.numHeads = h;
  }
  if (format === 'hf-llama') {
    config.qDim = c.qDim;
    config.kvDim = c.kvDim;
    if (config.numHeads !== null) {
      const D = c.qDim / config.numHeads;
      if (!Number.isInteger(D) || c.kvDim % D !== 0) {
        throw rangeError(where, `numHeads ${config.numHeads} does not split q_proj's ${c.qDim} rows and k_proj's ${c.kvDim} rows into heads of one size`);
      }
      config.headDim = D;
      config.numKvHeads = c.kvDim / D;
    }
    config.rope = { kind: 'rotate_half', base: 10000 };
  }
  if (c.causal) config.causal = true;
  const { weights, norm } = FORMATS[format].read(acc, prefix, { ...c, ...config });
  for (const k of Object.keys(weights)) weights[k] = { data: weights[k].data, shape: weights[k].shape.slice() };
  if (norm) config.eps = norm.eps;
  return { format, prefix, config, weights, norm };
}

/**
 * The state dict of `format` for weights in torch layout ({ wq, …, bo } as
 * getWeights() returns them) and config { embedDim, numHeads, kdim, vdim,
 * bias }; `norm` { gamma, beta } adds the format's LayerNorm.
 */
export function toStateDict(weights, options, where = 'toStateDict') {
  const opts = checkOptions(where, 'options', options);
  checkKeys(where, opts, ['format', 'prefix', 'config', 'norm']);
  if (opts.format === undefined) throw typeError(where, `options.format is missing: one of ${STATE_DICT_FORMATS.map((f) => `'${f}'`).join(', ')}`);
  checkFormat(where, opts.format);
  const prefix = opts.prefix ?? '';
  if (typeof prefix !== 'string') throw typeError(where, 'prefix must be a string');
  const c = checkOptions(where, 'config', opts.config);
  for (const k of ['embedDim', 'numHeads']) {
    if (!Number.isInteger(c[k])) throw typeError(where, `config.${k} is missing or not an integer`);
  }
  const config = { ...c, kdim: c.kdim ?? c.embedDim, vdim: c.vdim ?? c.embedDim, bias: c.bias ?? true };
  if (weights === null || typeof weights !== 'object') throw typeError(where, 'weights must be { wq, bq, wk, bk, wv, bv, wo, bo } in torch layout');
  for (const k of ['wq', 'wk', 'wv', 'wo', ...(config.bias ? ['bq', 'bk', 'bv', 'bo'] : [])]) {
    if (!weights[k] || !weights[k].data) throw typeError(where, `weights.${k} is missing`);
  }
  if (opts.format === 'keras' && config.embedDim % config.numHeads !== 0) throw rangeError(where, 'embedDim must be divisible by numHeads');
  return FORMATS[opts.format].write(weights, config, prefix, opts.norm ?? null);
}

const LISTING_KEYS = ['embedDim', 'kdim', 'vdim', 'numHeads', 'bias', 'causal', 'rope', 'qDim', 'kvDim', 'norm', 'error'];

/**
 * mha.loadStateDict / layer.loadStateDict: checks that the file's layer fits
 * the module (sizes, heads when known, biases, a post-LN LayerNorm for a
 * layer) and sets its weights. Returns the module.
 */
export function loadStateDict(module, tensors, options, { where, layer = false }) {
  const given = checkOptions(where, 'options', options);
  // An entry of listAttentionLayers() works as options: its format and prefix are used.
  checkKeys(where, given, ['format', 'prefix', ...LISTING_KEYS]);
  const opts = {};
  if (given.format !== undefined) opts.format = given.format;
  if (given.prefix !== undefined) opts.prefix = given.prefix;
  const r = fromStateDict(tensors, { ...opts, numHeads: module.numHeads }, where);
  const c = r.config;
  const at = `the '${r.format}' layer at prefix '${r.prefix}'`;
  const kdim = module.kdim ?? module.embedDim;
  const vdim = module.vdim ?? module.embedDim;
  if (c.embedDim !== module.embedDim || c.kdim !== kdim || c.vdim !== vdim) {
    throw rangeError(where, `${at} has embedDim ${c.embedDim}, kdim ${c.kdim}, vdim ${c.vdim}; this module has embedDim ${module.embedDim}, kdim ${kdim}, vdim ${vdim}`);
  }
  if (c.bias !== module.bias) {
    throw rangeError(where, `${at} ${c.bias ? 'has biases' : 'has no biases'}, but this module was created with bias: ${module.bias}; create it with bias: ${c.bias}`);
  }
  if (r.format === 'hf-llama') {
    const kv = module.numKvHeads ?? module.numHeads;
    if (c.qDim !== c.embedDim) {
      throw rangeError(where, `${at} projects queries to ${c.qDim} dims, not embedDim ${c.embedDim}; this library's heads split embedDim`);
    }
    if (module.numKvHeads === undefined && c.numKvHeads !== c.numHeads) {
      throw rangeError(where, `${at} needs rotary position embeddings (RoPE) and grouped KV heads (${c.numKvHeads} for ${c.numHeads} query heads), which this module does not have`);
    }
    if (kv !== c.numKvHeads) {
      throw rangeError(where, `${at} has ${c.numKvHeads} KV heads for ${c.numHeads} query heads (k_proj ${c.kvDim} rows); create the module with numKvHeads: ${c.numKvHeads}`);
    }
    if (!module.rope || module.rope.interleaved) {
      throw rangeError(where, `${at} needs rotary position embeddings as transformers applies them (rotate_half pairs): create the module with rope: { base: <config.json rope_theta; 10000 for Llama 2>, interleaved: false }`);
    }
  }
  const w = { ...r.weights };
  if (layer) {
    if (!r.norm) {
      throw rangeError(where, `${at} has no LayerNorm after the attention${r.format === 'torch' ? " (a bare nn.MultiheadAttention; inside nn.TransformerEncoderLayer the prefix ends in 'self_attn.' and norm1 sits beside it)" : ''}; load it into lab.multiHeadAttention instead`);
    }
    if (r.norm.placement !== 'post' || r.norm.kind !== 'layer') {
      throw rangeError(where, `${at} is pre-norm (x + attn(${r.norm.kind === 'rms' ? 'RMSNorm' : 'LayerNorm'}(x))), but selfAttentionLayer computes LayerNorm(x + attn(x)); load the attention into lab.multiHeadAttention and apply the norm before it (fromStateDict(…).norm holds its weights)`);
    }
    w.gamma = r.norm.gamma;
    w.beta = r.norm.beta;
  }
  module.setWeights(w, { layout: 'torch' });
  return module;
}

/** mha.stateDict / layer.stateDict: the module's weights in `format`. */
export function moduleStateDict(module, options, { where, layer = false }) {
  const opts = checkOptions(where, 'options', options);
  checkKeys(where, opts, ['format', 'prefix']);
  if (opts.format === undefined) throw typeError(where, `options.format is missing: one of ${STATE_DICT_FORMATS.map((f) => `'${f}'`).join(', ')}`);
  checkFormat(where, opts.format);
  const w = module.getWeights({ layout: 'torch' });
  let norm = null;
  if (layer) {
    if (opts.format !== 'torch' && opts.format !== 'hf-bert') {
      throw rangeError(where, `format '${opts.format}' has no post-attention LayerNorm; selfAttentionLayer's weights map to 'torch' (prefix ending in 'self_attn.') or 'hf-bert'`);
    }
    norm = { gamma: w.gamma, beta: w.beta };
  }
  const prefix = opts.prefix ?? (layer && opts.format === 'torch' ? 'self_attn.' : '');
  const config = { embedDim: module.embedDim, numHeads: module.numHeads, kdim: module.kdim ?? module.embedDim, vdim: module.vdim ?? module.embedDim, bias: module.bias };
  return toStateDict(w, { format: opts.format, prefix, config, norm }, where);
}
