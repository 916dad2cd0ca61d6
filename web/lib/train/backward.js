// Backward passes through the wasm core (src/train/backward_api.cpp):
//   scaledDotProductAttentionBackward(q, k, v, dOutput, options) → { dq, dk, dv, output }
//   mhaBackward(mha, query, key, value, dOutput, options)         → mha.backward
//   layerBackward(layer, x, dOutput, options)                     → layer.backward
// Options are the forward's (scale, softcap, mask of every kind, maskFill;
// the layer's training/dropoutSeed).
import { rangeError, typeError, describe, checkNumber, checkBool, checkInt, checkOptions } from '../errors.js';
import { toTensor, makeTensor, shapeString, product } from '../tensor.js';
import { normalizeMask, withMaskFill } from '../mask.js';
import { withArena, checkStatus, maskArgs } from '../graph/arena.js';

const WEIGHT_KEYS = ['wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo'];
const FLOAT32_MAX = 3.4028234663852886e38;

function checkKnown(where, opts, known) {
  for (const key of Object.keys(opts)) {
    if (!known.includes(key)) throw typeError(where, `unknown option ${describe(key)}; allowed: ${known.join(', ')}`);
  }
}

/**
 * q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv], dOutput [..., Lq, Dv];
 * with a head dim (rank >= 4) k and v may have Hkv heads (GQA/MQA, H % Hkv == 0).
 * Options are the forward's: scale, softcap, mask (every kind), maskFill.
 */
export function sdpaBackward(Module, q, k, v, dOutput, options) {
  const where = 'scaledDotProductAttentionBackward';
  const tq = toTensor(where, 'q', q);
  const tk = toTensor(where, 'k', k);
  const tv = toTensor(where, 'v', v);
  const tg = toTensor(where, 'dOutput', dOutput);
  const opts = checkOptions(where, 'options', options);
  checkKnown(where, opts, ['scale', 'mask', 'needWeights', 'softcap', 'maskFill']);
  const r = tq.shape.length;
  if (r < 2) throw rangeError(where, `q must have rank >= 2 ([..., Lq, D]), got shape ${shapeString(tq.shape)}`);
  const headAxis = r >= 4 ? r - 3 : -1;
  for (const { name, t } of [{ name: 'k', t: tk }, { name: 'v', t: tv }, { name: 'dOutput', t: tg }]) {
    const headOk = (d, i) => d === tq.shape[i] || (i === headAxis && name !== 'dOutput');
    if (t.shape.length !== r || !t.shape.slice(0, r - 2).every(headOk)) {
      throw rangeError(where, `${name} must have q's rank and leading dims${headAxis >= 0 && name !== 'dOutput' ? ' (but for the head dim: GQA)' : ''}: got q ${shapeString(tq.shape)}, ${name} ${shapeString(t.shape)}`);
    }
  }
  const H = headAxis >= 0 ? tq.shape[headAxis] : 1;
  const kvHeads = headAxis >= 0 ? tk.shape[headAxis] : 1;
  if (headAxis >= 0 && tv.shape[headAxis] !== kvHeads) {
    throw rangeError(where, `k and v must have the same number of heads: got k ${shapeString(tk.shape)}, v ${shapeString(tv.shape)}`);
  }
  if (H % kvHeads !== 0) {
    throw rangeError(where, `q has H = ${H} heads and k/v have Hkv = ${kvHeads}: H must be a multiple of Hkv (GQA/MQA); got q ${shapeString(tq.shape)}, k ${shapeString(tk.shape)}`);
  }
  const lead = tq.shape.slice(0, r - 2);
  const [Lq, D] = tq.shape.slice(r - 2);
  const [Lk, Dk] = tk.shape.slice(r - 2);
  const [Lv, Dv] = tv.shape.slice(r - 2);
  if (Dk !== D) throw rangeError(where, `k's last dim (${Dk}) must equal q's last dim D (${D})`);
  if (Lv !== Lk) throw rangeError(where, `v's length (${Lv}) must equal k's length Lk (${Lk})`);
  if (tg.shape[r - 2] !== Lq || tg.shape[r - 1] !== Dv) {
    throw rangeError(where, `dOutput must have the output's shape ${shapeString([...lead, Lq, Dv])}, got ${shapeString(tg.shape)}`);
  }
  // Leading dims fold to [B, H] as in the forward: rank 3 → [B], rank >= 4 → [B..., H].
  const leadB = lead.length <= 1 ? lead : lead.slice(0, -1);
  const leadH = lead.length <= 1 ? [] : lead.slice(-1);
  const B = product(leadB);
  let scale;
  if (opts.scale !== undefined) scale = checkNumber(where, 'scale', opts.scale, { min: -FLOAT32_MAX, max: FLOAT32_MAX });
  let softcap;
  if (opts.softcap !== undefined) {
    if (typeof opts.softcap !== 'number') throw typeError(where, `softcap must be a number > 0, got ${describe(opts.softcap)}`);
    softcap = opts.softcap;
  }
  const mask = withMaskFill(where, normalizeMask(where, opts.mask, { batch: B, heads: H, lq: Lq, lk: Lk, leadB, leadH }), opts.maskFill);
  return withArena(Module, where, (arena) => {
    const nq = tq.data.length;
    const nk = tk.data.length;
    const nv = tv.data.length;
    const no = tg.data.length;
    const args = {
      batch: B, heads: H, kvHeads, lq: Lq, lk: Lk, d: D, dv: Dv,
      q: arena.fromF32(tq.data), k: arena.fromF32(tk.data), v: arena.fromF32(tv.data), dOutput: arena.fromF32(tg.data),
      dq: arena.f32(nq), dk: arena.f32(nk), dvOut: arena.f32(nv), output: arena.f32(no),
      hasScale: scale !== undefined, scale: scale ?? 1,
      hasSoftcap: softcap !== undefined, softcap: softcap ?? 0,
      mask: maskArgs(arena, mask),
    };
    checkStatus(Module, where, Module.sdpaBackward(args));
    return {
      dq: makeTensor(arena.readF32(args.dq, nq), tq.shape),
      dk: makeTensor(arena.readF32(args.dk, nk), tk.shape),
      dv: makeTensor(arena.readF32(args.dvOut, nv), tv.shape),
      output: makeTensor(arena.readF32(args.output, no), tg.shape),
    };
  });
}

function weightPointers(arena, weights, keys) {
  const ptrs = new Uint32Array(8);
  const grads = new Uint32Array(8);
  const sizes = {};
  keys.forEach((key, i) => {
    const w = weights[key];
    if (!w) return;
    ptrs[i] = arena.fromF32(w.data);
    grads[i] = arena.f32(w.data.length);
    sizes[key] = { ptr: grads[i], shape: w.shape };
  });
  return { params: arena.fromU32(ptrs), grads: arena.fromU32(grads), sizes };
}

function readGrads(arena, sizes) {
  const out = {};
  for (const [key, s] of Object.entries(sizes)) out[key] = makeTensor(arena.readF32(s.ptr, product(s.shape)), s.shape);
  return out;
}

/**
 * mha.backward(query, key, value, dOutput, { mask, maskFill }) in torch layout,
 * also with GQA/MQA (numKvHeads: wk, wv [Hkv·D, ·]) and rope.
 */
export function mhaBackward(Module, mha, query, key, value, dOutput, options) {
  const where = 'mha.backward';
  const opts = checkOptions(where, 'options', options);
  checkKnown(where, opts, ['mask', 'maskFill']);
  const tq = toTensor(where, 'query', query, { ranks: [2, 3] });
  const tk = key === undefined || key === query ? tq : toTensor(where, 'key', key, { ranks: [2, 3] });
  const tv = value === undefined ? tk : value === query ? tq : value === key ? tk : toTensor(where, 'value', value, { ranks: [2, 3] });
  const tg = toTensor(where, 'dOutput', dOutput, { ranks: [2, 3] });
  const unbatched = tq.shape.length === 2;
  const s = (t) => (unbatched ? [1, ...t.shape] : t.shape);
  const [B, Lq, Eq] = s(tq);
  const [Bk, Lk, Ek] = s(tk);
  const [Bv, Lv, Ev] = s(tv);
  const E = mha.embedDim;
  if ([tk, tv, tg].some((t) => t.shape.length !== tq.shape.length)) {
    throw rangeError(where, `query, key, value and dOutput must all be batched [B, L, ·] or all unbatched [L, ·]`);
  }
  if (Eq !== E || Ek !== mha.kdim || Ev !== mha.vdim) {
    throw rangeError(where, `widths must be query ${E}, key ${mha.kdim}, value ${mha.vdim}: got query ${shapeString(tq.shape)}, key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)}`);
  }
  if (Bk !== B || Bv !== B || Lv !== Lk) throw rangeError(where, `key and value must be [${B}, Lk, ·] with the same Lk: got key ${shapeString(tk.shape)}, value ${shapeString(tv.shape)}`);
  const [Bg, Lg, Eg] = s(tg);
  if (Bg !== B || Lg !== Lq || Eg !== E) throw rangeError(where, `dOutput must have the output's shape ${shapeString(unbatched ? [Lq, E] : [B, Lq, E])}, got ${shapeString(tg.shape)}`);
  const mask = withMaskFill(where, normalizeMask(where, opts.mask, { batch: B, heads: mha.numHeads, lq: Lq, lk: Lk }), opts.maskFill);
  const weights = mha.getWeights({ layout: 'torch' });
  return withArena(Module, where, (arena) => {
    const w = weightPointers(arena, weights, WEIGHT_KEYS);
    const nq = tq.data.length;
    const args = {
      embedDim: E, numHeads: mha.numHeads, kdim: mha.kdim, vdim: mha.vdim, bias: mha.bias,
      numKvHeads: mha.numKvHeads ?? mha.numHeads, rope: !!mha.rope, ropeBase: mha.rope?.base ?? 10000,
      ropeDim: mha.rope?.rotaryDim ?? 0, ropeInterleaved: mha.rope?.interleaved ?? false,
      batch: B, lq: Lq, lk: Lk,
      query: arena.fromF32(tq.data), key: arena.fromF32(tk.data), value: arena.fromF32(tv.data),
      dOutput: arena.fromF32(tg.data), output: arena.f32(nq),
      dQuery: arena.f32(nq), dKey: arena.f32(tk.data.length), dValue: arena.f32(tv.data.length),
      params: w.params, grads: w.grads, mask: maskArgs(arena, mask),
    };
    checkStatus(Module, where, Module.mhaBackward(args));
    return {
      output: makeTensor(arena.readF32(args.output, nq), tq.shape),
      dQuery: makeTensor(arena.readF32(args.dQuery, nq), tq.shape),
      dKey: makeTensor(arena.readF32(args.dKey, tk.data.length), tk.shape),
      dValue: makeTensor(arena.readF32(args.dValue, tv.data.length), tv.shape),
      dWeights: readGrads(arena, w.sizes),
    };
  });
}

/** layer.backward(x, dOutput, { mask, maskFill, training, dropoutSeed }). */
export function layerBackward(Module, layer, x, dOutput, options) {
  const where = 'layer.backward';
  const opts = checkOptions(where, 'options', options);
  checkKnown(where, opts, ['mask', 'maskFill', 'training', 'dropoutSeed']);
  const tx = toTensor(where, 'x', x, { ranks: [2, 3] });
  const tg = toTensor(where, 'dOutput', dOutput, { ranks: [2, 3] });
  const [B, L, E] = tx.shape.length === 2 ? [1, ...tx.shape] : tx.shape;
  if (E !== layer.embedDim) throw rangeError(where, `x must be [B, L, ${layer.embedDim}], got ${shapeString(tx.shape)}`);
  if (tg.shape.length !== tx.shape.length || tg.shape.some((d, i) => d !== tx.shape[i])) {
    throw rangeError(where, `dOutput must have x's shape ${shapeString(tx.shape)}, got ${shapeString(tg.shape)}`);
  }
  const training = checkBool(where, 'training', opts.training ?? false);
  const dropoutSeed = checkInt(where, 'dropoutSeed', opts.dropoutSeed ?? 0, 0, 2 ** 32 - 1);
  const mask = withMaskFill(where, normalizeMask(where, opts.mask, { batch: B, heads: layer.numHeads, lq: L, lk: L }), opts.maskFill);
  const weights = layer.getWeights({ layout: 'torch' });
  return withArena(Module, where, (arena) => {
    const w = weightPointers(arena, weights, WEIGHT_KEYS);
    const n = tx.data.length;
    const args = {
      embedDim: E, numHeads: layer.numHeads, bias: layer.bias,
      params: w.params, grads: w.grads,
      gamma: arena.fromF32(weights.gamma?.data), beta: arena.fromF32(weights.beta?.data),
      dGamma: arena.f32(E), dBeta: arena.f32(E),
      eps: layer.eps, dropout: layer.dropout, training, dropoutSeed,
      batch: B, seqLen: L, x: arena.fromF32(tx.data), dOutput: arena.fromF32(tg.data),
      output: arena.f32(n), dx: arena.f32(n), mask: maskArgs(arena, mask),
    };
    checkStatus(Module, where, Module.layerBackward(args));
    const dWeights = readGrads(arena, w.sizes);
    dWeights.gamma = makeTensor(arena.readF32(args.dGamma, E), [E]);
    dWeights.beta = makeTensor(arena.readF32(args.dBeta, E), [E]);
    return {
      output: makeTensor(arena.readF32(args.output, n), tx.shape),
      dx: makeTensor(arena.readF32(args.dx, n), tx.shape),
      dWeights,
    };
  });
}
