// Attention arrays of a whole model for <attention-lab-model-view>: the
// accepted inputs normalised to one [layers, H, Lq, Lk] Float32Array, and the
// files they come in (.npy, .npz, .safetensors, JSON), read with the
// library's own readers. Nothing here touches the DOM.
import { readNpy, readNpz, readSafetensors } from '../../lib/io/index.js';

const MAX_VALUES = 2 ** 26; // 256 MiB of float32: a page cannot draw more anyway

function toTensor(value, what) {
  if (Array.isArray(value)) {
    const shape = [];
    for (let lvl = value; Array.isArray(lvl); lvl = lvl[0]) shape.push(lvl.length);
    const data = Float32Array.from(value.flat(Infinity));
    let n = 1;
    for (const d of shape) n *= d;
    if (data.length !== n) throw new RangeError(`${what} is ragged: shape [${shape}] needs ${n} values, got ${data.length}`);
    return { data, shape };
  }
  if (value && typeof value === 'object' && 'data' in value && 'shape' in value) {
    const shape = Array.from(value.shape);
    const data = value.data instanceof Float32Array ? value.data : Float32Array.from(value.data);
    let n = 1;
    for (const d of shape) n *= d;
    if (data.length !== n) throw new RangeError(`${what}: data has ${data.length} values but shape [${shape}] needs ${n}`);
    return { data, shape };
  }
  throw new TypeError(`${what} must be { data, shape } or nested arrays`);
}

function pickBatch(t, batch, what) {
  const [B, ...rest] = t.shape;
  if (batch >= B) throw new RangeError(`${what} has batch ${B}; batch ${batch} is out of range`);
  const n = rest.reduce((a, b) => a * b, 1);
  return { data: t.data.subarray(batch * n, (batch + 1) * n), shape: rest };
}

/**
 * Normalises attention input to { layers, heads, lq, lk, data } with data
 * [layers, H, Lq, Lk]. Accepted:
 *  - a list of per-layer tensors [B, H, L, L] or [H, L, L]
 *    (what transformers returns with output_attentions=True);
 *  - one tensor [layers, H, L, L], [layers, B, H, L, L], [H, L, L] or [L, L].
 * `batch` picks the sequence of a batched input.
 */
export function normalizeAttention(value, { batch = 0 } = {}) {
  if (value === null || value === undefined) return null;
  let layers;
  const isList = Array.isArray(value) && value.length && !Array.isArray(value[0]) && typeof value[0] === 'object';
  if (isList || (Array.isArray(value) && value.length && value[0] && !Array.isArray(value[0]) && 'shape' in value[0])) {
    layers = value.map((v, i) => {
      let t = toTensor(v, `attention[${i}]`);
      if (t.shape.length === 4) t = pickBatch(t, batch, `attention[${i}]`);
      if (t.shape.length !== 3) throw new RangeError(`attention[${i}] must be [B, H, Lq, Lk] or [H, Lq, Lk], got [${t.shape}]`);
      return t;
    });
  } else {
    let t = toTensor(value, 'attention');
    if (t.shape.length === 5) {
      const [Ln, B, ...rest] = t.shape;
      if (batch >= B) throw new RangeError(`attention has batch ${B}; batch ${batch} is out of range`);
      const n = rest.reduce((a, b) => a * b, 1);
      const out = new Float32Array(Ln * n);
      for (let l = 0; l < Ln; l++) out.set(t.data.subarray((l * B + batch) * n, (l * B + batch + 1) * n), l * n);
      t = { data: out, shape: [Ln, ...rest] };
    }
    if (t.shape.length === 2) t = { data: t.data, shape: [1, 1, ...t.shape] };
    else if (t.shape.length === 3) t = { data: t.data, shape: [1, ...t.shape] };
    if (t.shape.length !== 4) throw new RangeError(`attention must be [layers, H, Lq, Lk] (or a list of [B, H, Lq, Lk] per layer), got [${t.shape}]`);
    const [Ln, ...rest] = t.shape;
    const n = rest.reduce((a, b) => a * b, 1);
    layers = Array.from({ length: Ln }, (_, l) => ({ data: t.data.subarray(l * n, (l + 1) * n), shape: rest }));
  }
  if (!layers.length) throw new RangeError('attention has no layers');
  const [H, Lq, Lk] = layers[0].shape;
  if (![H, Lq, Lk].every((d) => Number.isInteger(d) && d >= 1)) throw new RangeError(`attention has an empty dimension: [${layers[0].shape}]`);
  layers.forEach((t, i) => {
    if (t.shape.some((d, k) => d !== layers[0].shape[k])) throw new RangeError(`attention[${i}] has shape [${t.shape}], but layer 0 has [${layers[0].shape}]; every layer must have the same [H, Lq, Lk]`);
  });
  const per = H * Lq * Lk;
  if (per * layers.length > MAX_VALUES) throw new RangeError(`attention has ${per * layers.length} values; at most ${MAX_VALUES} can be shown`);
  const data = new Float32Array(per * layers.length);
  layers.forEach((t, l) => data.set(t.data, l * per));
  return { layers: layers.length, heads: H, lq: Lq, lk: Lk, data };
}

// 'layer.2' before 'layer.10'.
function natural(a, b) {
  return a.localeCompare(b, 'en', { numeric: true });
}

function tokensFrom(value) {
  if (value === undefined || value === null) return null;
  const list = typeof value === 'string' ? JSON.parse(value) : value;
  if (!Array.isArray(list)) throw new TypeError('tokens must be a list of strings');
  return list.map(String);
}

/**
 * Reads attention arrays from a file's bytes: .npy (one array), .npz or
 * .safetensors (one array, or one per layer in natural name order; tokens
 * from safetensors metadata "tokens", a JSON list), or JSON
 * ({ attention | attentions, tokens } or a bare nested array).
 * @returns {{ attention, tokens: string[]|null }}
 */
export function parseAttentionFile(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes instanceof ArrayBuffer ? bytes : bytes.buffer);
  if (u8[0] === 0x93 && u8[1] === 0x4e) return { attention: readNpy(u8), tokens: null };
  if (u8[0] === 0x50 && u8[1] === 0x4b) {
    const { tensors } = readNpz(u8);
    const names = Object.keys(tensors).filter((n) => n !== 'tokens').sort(natural);
    return { attention: names.length === 1 ? tensors[names[0]] : names.map((n) => tensors[n]), tokens: null };
  }
  let i = 0;
  while (i < u8.length && (u8[i] === 0x20 || u8[i] === 0x0a || u8[i] === 0x0d || u8[i] === 0x09 || u8[i] === 0xef || u8[i] === 0xbb || u8[i] === 0xbf)) i++;
  if (u8[i] === 0x7b || u8[i] === 0x5b) {
    let j;
    try {
      j = JSON.parse(new TextDecoder().decode(u8));
    } catch (e) {
      throw new RangeError(`the file is not valid JSON (${e.message})`);
    }
    if (Array.isArray(j)) return { attention: j, tokens: null };
    const att = j.attention ?? j.attentions;
    if (att === undefined) throw new RangeError('the JSON has no "attention" (or "attentions") field');
    return { attention: att, tokens: tokensFrom(j.tokens) };
  }
  const { tensors, metadata } = readSafetensors(u8);
  const names = Object.keys(tensors).sort(natural);
  if (!names.length) throw new RangeError('the safetensors file holds no tensor');
  let tokens = null;
  try {
    tokens = tokensFrom(metadata?.tokens);
  } catch {
    throw new RangeError('the safetensors metadata "tokens" must be a JSON list of strings');
  }
  return { attention: names.length === 1 ? tensors[names[0]] : names.map((n) => tensors[n]), tokens };
}

/** The index (i, j) and value of the largest weight of one [Lq, Lk] map. */
export function strongest(data, offset, lq, lk) {
  let best = -Infinity;
  let at = 0;
  for (let k = 0; k < lq * lk; k++) {
    if (data[offset + k] > best) {
      best = data[offset + k];
      at = k;
    }
  }
  return { i: Math.floor(at / lk), j: at % lk, value: best };
}
