// The first layer of the shipped model on the reader's sentence (issue 22, item 4: chapters 2,
// 3, 5, 6, 7, 8 and 9), computed by the library from the model's own weights (the tensors of
// model.save(), lib/learned.js modelTensors); the page multiplies and adds nothing:
//   x = wte[ids] + wpe[0..L)   (GPT-2's input: lab.linear of [tok | pos] with [I; I])
//   ln_1(x)                    (the library's LayerNorm: a selfAttentionLayer whose output
//                               projection is zero, so its y = LayerNorm(x + 0)·γ + β, with
//                               γ, β of h.0.ln_1)
//   attention                  (a multiHeadAttention loaded from the file's h.0.attn, hf-gpt2,
//                               causal as the model was trained, trace 'values': Q, K, V, each
//                               head's scores and weights, the output c_proj)
//   h = x + attention          (the residual, lab.linear again)
// The weights equal the model's own attentions[0] (model.forwardSync): checkAgainstModel.
// The MLP half of the block (ln_2, c_fc, GELU, c_proj) has no library op for its GELU, so the
// page shows the block up to the attention's residual.
import { h } from '../../components/lib/dom.js';
import { stepValue } from './model.js';
import { learnedModel, modelLang, fitText, tokenLabels, modelTensors, modelTensor, embeddingRows, offerModel } from './learned.js';

export const WEIGHT_KINDS = ['random', 'learned'];

/**
 * The "Weights: random | learned" switch of a chapter, bound to its state key (w2 … w9).
 * → { el, learned(state), update(t, state) }
 */
export function weightsSwitch(ctx, key, id) {
  const btns = WEIGHT_KINDS.map((k) => {
    const b = h('button', { type: 'button', class: 'al-btn', dataset: { weights: k } });
    b.addEventListener('click', () => ctx.set({ [key]: k }));
    return b;
  });
  const el = h('div', { class: `inline-ctls ${id}-weights` }, h('span', { class: 'inline-ctl' },
    ctx.text('span', 'ch4.weights', { id: `${id}-weights-label` }),
    h('span', { class: 'seg', role: 'group', 'aria-labelledby': `${id}-weights-label` }, btns)));
  return {
    el,
    learned: (state) => state[key] === 'learned',
    update(t, state) {
      btns.forEach((b, i) => {
        b.textContent = t(`ch4.weights.${WEIGHT_KINDS[i]}`);
        b.setAttribute('aria-pressed', String(state[key] === WEIGHT_KINDS[i]));
      });
    },
  };
}

/**
 * The model of the page's language and the reader's sentence fitted to it, or null while it
 * loads (the chapter re-renders when it arrives: `keys`). → { model, lang, name, text, ids,
 * labels, L, notes } where notes says what was cut and which characters are unknown.
 */
export function learnedText(c, state, keys, textKey = 'text') {
  const lang = modelLang(state);
  const model = learnedModel(c, lang, keys);
  if (!model) return null;
  const fit = fitText(model, state[textKey] || '∅');
  const ids = model.encode(fit.text);
  const lb = tokenLabels(model, fit.text, ids);
  const notes = [];
  if (fit.cut) notes.push(c.t('ch4.learnedCut', { n: fit.cut, max: model.config.maxPositions }));
  if (lb.unknown.length) notes.push(c.t('hm.unknown', { chars: lb.unknown.join(' ') }));
  offerModel(c, lang, fit.text, lb);
  return { model, lang, name: c.t(`ch4.model.${lang}`), text: fit.text, ids, labels: lb.labels, L: ids.length, notes: notes.join(' ') };
}

/** The loading line of a learned view. */
export const loadingText = (c, state) => c.t('ch4.learnedLoading', { model: c.t(`ch4.model.${modelLang(state)}`) });

/** The model's sizes: E, H, D = E/H, P positions, V characters, N layers, F MLP width. */
export function modelSizes(lab, model) {
  const cfg = model.config;
  return { E: cfg.embedDim, H: cfg.numHeads, D: cfg.embedDim / cfg.numHeads, P: cfg.maxPositions, V: cfg.vocabSize, N: cfg.numLayers, F: cfg.ffnDim };
}

// Library objects per model and backend: the LayerNorms and layer 0's attention.
const objects = new WeakMap();
function objectsFor(lab, model) {
  let per = objects.get(model);
  if (!per) objects.set(model, (per = new Map()));
  let o = per.get(lab.backend);
  if (o) return o;
  const t = modelTensors(lab, model);
  const { E, H } = modelSizes(lab, model);
  const norm = (prefix) => {
    const layer = lab.selfAttentionLayer({ embedDim: E, numHeads: H, dropout: 0, eps: 1e-5 });
    layer.setWeights({ wo: { data: new Float32Array(E * E), shape: [E, E] }, bo: { data: new Float32Array(E), shape: [E] }, gamma: t[`${prefix}.weight`], beta: t[`${prefix}.bias`] });
    return layer;
  };
  const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H });
  mha.loadStateDict(t, { format: 'hf-gpt2', prefix: 'h.0.' });
  o = { ln1: norm('h.0.ln_1'), mha, eyes: new Map() };
  per.set(lab.backend, o);
  return o;
}

/** a + b for two [rows, E] arrays, by the library: [a | b] [rows, 2E] · [I; I] [2E, E]. */
export async function addRows(lab, a, b, rows, E, o) {
  let eye = o?.eyes.get(E);
  if (!eye) {
    eye = new Float32Array(2 * E * E);
    for (let k = 0; k < E; k++) {
      eye[k * E + k] = 1;
      eye[(E + k) * E + k] = 1;
    }
    o?.eyes.set(E, eye);
  }
  const cat = new Float32Array(rows * 2 * E);
  for (let i = 0; i < rows; i++) {
    cat.set(a.subarray(i * E, (i + 1) * E), i * 2 * E);
    cat.set(b.subarray(i * E, (i + 1) * E), i * 2 * E + E);
  }
  return (await lab.linear({ data: cat, shape: [rows, 2 * E] }, { data: eye, shape: [2 * E, E] }, null, { layout: 'keras' })).data;
}

const runs = new Map();

/**
 * Layer 0 of `model` on `ids`, by the library (memoised per model, ids and backend):
 * { L, E, H, D, tok, pos, x, ln1, trace (the attention's, with values), q, k, v [L, E],
 *   heads { q, k, v } [H, L, D], scores, weights [1, H, L, L], attn, res [L, E] }.
 */
export async function layerZero(lab, model, ids) {
  const key = `${lab.backend}|${ids.join(',')}`;
  const hit = runs.get(key);
  if (hit && hit.model === model) return hit.value;
  const o = objectsFor(lab, model);
  const { E, H, D } = modelSizes(lab, model);
  const L = ids.length;
  const tok = embeddingRows(lab, model, ids);
  const pos = modelTensor(lab, model, 'wpe.weight').data.slice(0, L * E);
  const x = await addRows(lab, tok, pos, L, E, o);
  const ln1 = (await o.ln1.forward({ data: x, shape: [L, E] }, { needWeights: false })).output.data;
  const r = await o.mha.forward({ data: ln1, shape: [1, L, E] }, undefined, undefined, { mask: { kind: 'causal' }, trace: 'values' });
  const tr = r.trace;
  const qkv = stepValue(tr, 'linear_qkv');
  const split = (w) => stepValue(tr, 'split_heads', w).data;
  const attn = r.output.data;
  const res = await addRows(lab, x, attn, L, E, o);
  const value = {
    L, E, H, D, tok, pos, x, ln1, trace: tr, attn, res,
    q: stepValue(tr, 'linear_qkv', 'q').data, k: stepValue(tr, 'linear_qkv', 'k').data, v: stepValue(tr, 'linear_qkv', 'v').data, qkvShape: qkv.shape,
    heads: { q: split('q'), k: split('k'), v: split('v') },
    scores: stepValue(tr, 'scores').data,
    masked: (stepValue(tr, 'mask') ?? stepValue(tr, 'scores')).data,
    weights: stepValue(tr, 'softmax'),
  };
  if (runs.size > 8) runs.clear();
  runs.set(key, { model, value });
  return value;
}

/** Head hh of layer 0: its Q, K, V [L, D] (views of the trace's split heads). */
export function headOf(z, hh) {
  const n = z.L * z.D;
  return { q: z.heads.q.subarray(hh * n, (hh + 1) * n), k: z.heads.k.subarray(hh * n, (hh + 1) * n), v: z.heads.v.subarray(hh * n, (hh + 1) * n) };
}

/**
 * The largest |difference| between layer 0's weights here and model.forwardSync's attentions[0]
 * (both the library's; the model runs its own fused block), and the largest weight any layer of
 * the model puts above the diagonal (0 under its causal mask).
 */
export function checkAgainstModel(model, ids, z) {
  if (z.check?.model === model) return z.check;
  const run = model.forwardSync(ids, { attentions: true });
  const ref = run.attentions[0].data;
  const w = z.weights.data;
  let diff = 0;
  for (let i = 0; i < ref.length; i++) diff = Math.max(diff, Math.abs(ref[i] - w[i]));
  let above = 0;
  const L = ids.length;
  for (const a of run.attentions) {
    for (let m = 0; m < a.data.length; m++) {
      const i = Math.floor(m / L) % L;
      const j = m % L;
      if (j > i) above = Math.max(above, a.data[m]);
    }
  }
  z.check = { model, diff, above, run };
  return z.check;
}
