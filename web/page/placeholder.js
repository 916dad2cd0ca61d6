// placeholder.js — the placeholder tutorial page: loads attention-lab and shows
// the backend, a positional-encoding heatmap, the MHA shape trace and a live
// multi-head attention forward pass. Same-origin only, no inline code (CSP).
//
// Shape legend: B batch, L sequence, E embed, H heads, D head dim (E = H·D).

import { init } from '../index.js';

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------
// Colour scales (both colour-blind safe): diverging blue–white–red for signed
// values, viridis for weights in [0, 1].

const DIVERGING = [
  [33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247],
  [253, 219, 199], [239, 138, 98], [178, 24, 43],
];
const VIRIDIS = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
];

/** Piecewise-linear colour for t in [0, 1]. */
function rampColour(stops, t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  return [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f));
}

const rgb = ([r, g, b]) => `rgb(${r}, ${g}, ${b})`;

function drawLegend(canvas, stops) {
  const ctx = canvas.getContext('2d');
  for (let x = 0; x < canvas.width; x++) {
    ctx.fillStyle = rgb(rampColour(stops, x / (canvas.width - 1)));
    ctx.fillRect(x, 0, 1, canvas.height);
  }
}

function fmtShape(shape) {
  return `[${shape.join(', ')}]`;
}

// ---------------------------------------------------------------------------
// 1. Positional encoding [50, 64], one canvas pixel per value (scaled by CSS).

function showPositionalEncoding(lab) {
  const L = 50;
  const E = 64;
  const pe = lab.positionalEncoding(L, E);
  const canvas = $('pe-canvas');
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(E, L);
  for (let i = 0; i < L * E; i++) {
    const [r, g, b] = rampColour(DIVERGING, (pe.data[i] + 1) / 2);
    img.data.set([r, g, b, 255], 4 * i);
  }
  ctx.putImageData(img, 0, 0);
  drawLegend($('pe-legend'), DIVERGING);

  const readout = $('pe-readout');
  canvas.addEventListener('mousemove', (ev) => {
    const rect = canvas.getBoundingClientRect();
    const col = Math.min(E - 1, Math.floor(((ev.clientX - rect.left) / rect.width) * E));
    const row = Math.min(L - 1, Math.floor(((ev.clientY - rect.top) / rect.height) * L));
    if (col < 0 || row < 0) return;
    const fn = col % 2 === 0 ? 'sin' : 'cos';
    readout.textContent = `pos ${row}, dim ${col} (${fn}): ${pe.data[row * E + col].toFixed(4)}`;
  });
  canvas.addEventListener('mouseleave', () => {
    readout.textContent = 'Hover the heatmap to read a value.';
  });
  return pe;
}

// ---------------------------------------------------------------------------
// 2. The MHA dimension flow for B=2, L=5, E=512, H=8.

function showShapeFlow(lab) {
  const trace = lab.shapeTrace({ batch: 2, lq: 5, embedDim: 512, numHeads: 8 });
  const list = $('shape-flow');
  list.replaceChildren();
  for (const rec of trace) {
    const li = document.createElement('li');
    const step = document.createElement('span');
    step.className = 'step';
    step.textContent = rec.step;
    const shape = document.createElement('span');
    shape.className = 'shape';
    shape.textContent = fmtShape(rec.shape);
    li.append(step, ' ', shape);
    if (rec.formula) {
      const formula = document.createElement('span');
      formula.className = 'formula';
      formula.textContent = rec.formula;
      li.append(' ', formula);
    }
    list.append(li);
  }
}

// ---------------------------------------------------------------------------
// 3. Live MHA forward on a tokenised sentence.

const EMBED_DIM = 16;
const MAX_TOKENS = 16;

/** Deterministic pseudo-random embedding per word (FNV-1a seed + xorshift). */
function wordEmbedding(word, dim) {
  let h = 0x811c9dc5;
  for (const ch of word) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let s = h || 1;
  const out = new Float32Array(dim);
  for (let i = 0; i < dim; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = (s / 0xffffffff) * 2 - 1;
  }
  return out;
}

function tokenize(text) {
  return text.toLowerCase().match(/[\p{L}\p{N}']+|[^\s\p{L}\p{N}]/gu)?.slice(0, MAX_TOKENS) ?? [];
}

function drawAttention(canvas, tokens, weights, head) {
  const ctx = canvas.getContext('2d');
  const L = tokens.length;
  const margin = 90;
  const size = Math.min(canvas.width, canvas.height) - margin - 4;
  const cell = size / L;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);

  const base = head * L * L; // weights [H, L, L]
  ctx.font = `${Math.max(9, Math.min(14, cell * 0.35))}px system-ui, sans-serif`;
  for (let i = 0; i < L; i++) {
    for (let j = 0; j < L; j++) {
      const w = weights[base + i * L + j];
      const c = rampColour(VIRIDIS, w);
      ctx.fillStyle = rgb(c);
      ctx.fillRect(margin + j * cell, margin + i * cell, Math.ceil(cell), Math.ceil(cell));
      if (cell >= 34) {
        ctx.fillStyle = c[0] * 0.299 + c[1] * 0.587 + c[2] * 0.114 > 140 ? '#000' : '#fff';
        ctx.textAlign = 'center';
        ctx.textBaseline = 'middle';
        ctx.fillText(w.toFixed(2), margin + (j + 0.5) * cell, margin + (i + 0.5) * cell);
      }
    }
  }
  // Axis labels: queries down the left, keys along the top.
  ctx.fillStyle = '#1d2330';
  ctx.font = '13px system-ui, sans-serif';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  tokens.forEach((t, i) => ctx.fillText(t, margin - 6, margin + (i + 0.5) * cell, margin - 10));
  ctx.save();
  ctx.textAlign = 'left';
  tokens.forEach((t, j) => {
    ctx.save();
    ctx.translate(margin + (j + 0.5) * cell, margin - 6);
    ctx.rotate(-Math.PI / 3);
    ctx.fillText(t, 0, 0, margin);
    ctx.restore();
  });
  ctx.restore();
  ctx.fillStyle = '#5b6475';
  ctx.textAlign = 'left';
  ctx.fillText('query ↓  key →', 4, 12);
  return { margin, cell };
}

function setupLiveMha(lab) {
  const text = $('mha-text');
  const headsSel = $('mha-heads');
  const headSel = $('mha-head');
  const causal = $('mha-causal');
  const canvas = $('mha-canvas');
  const readout = $('mha-readout');
  const shapes = $('mha-shapes');
  drawLegend($('mha-legend'), VIRIDIS);

  let mha = null;
  let numHeads = 0;
  let state = null; // { tokens, weights, geom }
  let runId = 0;

  function fillHeadSelect(h) {
    const keep = Math.min(Number(headSel.value) || 0, h - 1);
    headSel.replaceChildren();
    for (let i = 0; i < h; i++) {
      const o = document.createElement('option');
      o.value = String(i);
      o.textContent = `head ${i + 1} of ${h}`;
      headSel.append(o);
    }
    headSel.value = String(keep);
  }

  async function run() {
    const id = ++runId;
    const tokens = tokenize(text.value);
    if (tokens.length === 0) {
      shapes.textContent = 'Type a few words.';
      canvas.getContext('2d').clearRect(0, 0, canvas.width, canvas.height);
      state = null;
      return;
    }
    const h = Number(headsSel.value);
    if (h !== numHeads) {
      mha?.dispose();
      mha = lab.multiHeadAttention({ embedDim: EMBED_DIM, numHeads: h, seed: 1 });
      numHeads = h;
      fillHeadSelect(h);
    }
    const L = tokens.length;
    const pe = lab.positionalEncoding(L, EMBED_DIM);
    const x = new Float32Array(L * EMBED_DIM);
    tokens.forEach((t, i) => {
      const e = wordEmbedding(t, EMBED_DIM);
      for (let k = 0; k < EMBED_DIM; k++) x[i * EMBED_DIM + k] = e[k] + pe.data[i * EMBED_DIM + k];
    });
    const input = { data: x, shape: [L, EMBED_DIM] };
    const opts = { needWeights: true };
    if (causal.checked) opts.mask = { kind: 'causal' };
    const res = await mha.forward(input, input, input, opts);
    if (id !== runId) return; // a newer run started meanwhile
    const head = Number(headSel.value) || 0;
    state = { tokens, weights: res.weights.data, head };
    state.geom = drawAttention(canvas, tokens, res.weights.data, head);
    shapes.textContent =
      `x ${fmtShape(input.shape)} → output ${fmtShape(res.output.shape)}, ` +
      `weights ${fmtShape(res.weights.shape)} (unbatched: [H, Lq, Lk]); ` +
      `E = ${EMBED_DIM}, H = ${h}, D = ${EMBED_DIM / h}`;
  }

  const rerun = () =>
    run().catch((e) => {
      shapes.textContent = `Error: ${e.message}`;
    });
  text.addEventListener('input', rerun);
  headsSel.addEventListener('change', rerun);
  causal.addEventListener('change', rerun);
  headSel.addEventListener('change', () => {
    if (!state) return;
    state.head = Number(headSel.value) || 0;
    state.geom = drawAttention(canvas, state.tokens, state.weights, state.head);
  });
  $('mha-form').addEventListener('submit', (ev) => ev.preventDefault());

  canvas.addEventListener('mousemove', (ev) => {
    if (!state) return;
    const rect = canvas.getBoundingClientRect();
    const px = ((ev.clientX - rect.left) / rect.width) * canvas.width;
    const py = ((ev.clientY - rect.top) / rect.height) * canvas.height;
    const { margin, cell } = state.geom;
    const j = Math.floor((px - margin) / cell);
    const i = Math.floor((py - margin) / cell);
    const L = state.tokens.length;
    if (i < 0 || j < 0 || i >= L || j >= L) {
      readout.textContent = 'Hover a cell to read a weight.';
      return;
    }
    const w = state.weights[state.head * L * L + i * L + j];
    readout.textContent = `"${state.tokens[i]}" attends to "${state.tokens[j]}": ${w.toFixed(4)}`;
  });
  canvas.addEventListener('mouseleave', () => {
    readout.textContent = 'Hover a cell to read a weight.';
  });

  return rerun();
}

// ---------------------------------------------------------------------------

async function main() {
  const status = $('status');
  let lab;
  try {
    lab = await init({ backend: 'auto' });
  } catch (e) {
    status.className = 'status error';
    status.setAttribute('role', 'alert');
    status.textContent =
      `Could not load the WebAssembly module: ${e && e.message ? e.message : e}\n` +
      'Build it with `npm run build` (or start the page with `npm start`).';
    return;
  }
  status.className = 'status ok';
  status.textContent = `Backend: ${lab.backend} · kernels: ${lab.kernelArch}`;
  document.documentElement.dataset.backend = lab.backend;

  const parts = [
    ['positional encoding', () => showPositionalEncoding(lab)],
    ['shape trace', () => showShapeFlow(lab)],
    ['live multi-head attention', () => setupLiveMha(lab)],
  ];
  for (const [name, fn] of parts) {
    try {
      await fn();
    } catch (e) {
      const p = document.createElement('p');
      p.className = 'status error';
      p.textContent = `${name} failed: ${e.message}`;
      status.after(p);
    }
  }
  document.documentElement.dataset.ready = 'true';
}

main();
