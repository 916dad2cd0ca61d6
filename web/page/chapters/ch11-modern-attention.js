// Chapter 11 — attention as today's models use it: rotary embeddings beside
// the sinusoidal encoding (q·k after RoPE is a Toeplitz map), GQA/MQA and the
// KV-cache bytes it saves, a sliding window over a long sequence, softcap
// saturation and ALiBi's linear bias (issue 11). Every value drawn comes from
// the library (rotaryEmbedding, scaledDotProductAttention with trace:
// 'values', multiHeadAttention with numKvHeads and its KV cache, alibiSlopes);
// the page only lays results out, compares them and times calls.
import { h, fmt } from '../../components/lib/dom.js';
import { tokenize, embedBatch, normals, mulberry32, mixSeed } from '../../components/lib/tokens.js';
import { stepValue } from '../lib/model.js';
import { codeBlock, formula, f } from '../lib/ui.js';
import { Provenance } from '../lib/provenance.js';
import { XYChart } from '../lib/xy-chart.js';
import { DEFAULTS } from '../lib/state.js';

const ROPE_P = 32; // positions of the RoPE / sinusoidal maps
const ROPE_D = 16; // head dim there
const GQA_E = 256;
const GQA_H = 8;
const GQA_KV = [8, 4, 2, 1];
const GQA_CACHE = 512; // cache length used to read heldBytes()
const WIN_L = 128; // the banded map
const WIN_D = 16;
const TIME_L = 2048; // the timed calls
const TIME_D = 64;
const TIME_WINDOWS = [64, 256, 1024];
const CAP_POINTS = 100; // softcap chart: 2·CAP_POINTS + 1 scores from −4c to 4c (at least ±20)
const ALIBI_H = 8;
const ALIBI_L = 16;
const ALIBI_SHOW = [0, 3, 7];
const GEMMA_CAP = 50; // Gemma 2's attention softcap (try2 compares it)

/** Largest |M[i,j] − M[first cell of its diagonal]| over a [n, n] map. */
export function toeplitzDeviation(m, n) {
  let dev = 0;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const ref = i >= j ? m[(i - j) * n] : m[j - i];
      dev = Math.max(dev, Math.abs(m[i * n + j] - ref));
    }
  }
  return dev;
}

const seeded = (seed, tag, n) => normals(mulberry32(mixSeed(seed, tag)), n);
const repeatRows = (v, n) => {
  const out = new Float32Array(n * v.length);
  for (let i = 0; i < n; i++) out.set(v, i * v.length);
  return out;
};

export default {
  deps: ['text', 'seed', 'kv11', 'win11', 'cap11', 'ch11.time'],
  mount(ctx, body) {
    // The KV-cache table is kept per backend; the timings until the backend or
    // seed changes, or the reader asks again.
    const local = { timings: null, timingKey: '', kvRows: null, kvKey: '' };
    // One provenance panel per figure group, next to its maps.
    const provRope = new Provenance(ctx, { id: 'ch11-prov-rope' });
    const provGqa = new Provenance(ctx, { id: 'ch11-prov-gqa' });
    const provWin = new Provenance(ctx, { id: 'ch11-prov-window' });
    const provCap = new Provenance(ctx, { id: 'ch11-prov-softcap' });
    const provAlibi = new Provenance(ctx, { id: 'ch11-prov-alibi' });
    // The hover hint is said once, under the first maps.
    for (const p of [provGqa, provWin, provCap, provAlibi]) p.hint.hidden = true;

    // ---- RoPE beside the sinusoidal encoding --------------------------------
    const ropeMap = ctx.heatmap({ palette: 'diverging', rowKind: 'position', colKind: 'position', maxSize: 300, cellMax: 12, name: 'ch11_rope_qk' });
    const sinMap = ctx.heatmap({ palette: 'diverging', rowKind: 'position', colKind: 'position', maxSize: 300, cellMax: 12, name: 'ch11_sinusoidal_qk' });
    ropeMap.el.classList.add('ch11-rope-map');
    sinMap.el.classList.add('ch11-sin-map');
    let ropeSrc = null;
    provRope.scores({ map: ropeMap, source: () => ropeSrc && { q: ropeSrc.rq, k: ropeSrc.rk, D: ROPE_D, scale: 1 } });
    provRope.scores({ map: sinMap, source: () => ropeSrc && { q: ropeSrc.sq, k: ropeSrc.sk, D: ROPE_D, scale: 1 } });
    const ropeLine = h('p', { class: 'check-line ch11-toeplitz' });
    const offsetChart = new XYChart({ name: 'rope-offset' });

    // ---- GQA / MQA ----------------------------------------------------------
    const kvTable = h('table', { class: 'data ch11-kv-table' });
    const kvLine = h('p', { class: 'check-line ch11-kv-line' });
    const kvBtns = GQA_KV.map((n) => {
      const b = h('button', { type: 'button', class: 'al-btn', dataset: { kv: String(n) } }, String(n));
      b.addEventListener('click', () => ctx.set({ kv11: String(n) }));
      return b;
    });
    const groupBox = h('div', { class: 'fig-row ch11-groups' });
    const gqaNote = h('p', { class: 'small muted' });
    let groupMaps = [];
    let gqaSrc = null;

    // ---- sliding window -----------------------------------------------------
    const winRange = h('input', { type: 'range', id: 'ch11-window', min: '1', max: '64', step: '1' });
    const winOut = h('output', { class: 'ctl-value', for: 'ch11-window' });
    winRange.addEventListener('input', () => ctx.set({ win11: Number(winRange.value) }));
    const winMap = ctx.heatmap({ maxSize: 384, cellMax: 6, name: 'ch11_sliding_window', axisTitles: true });
    winMap.el.classList.add('ch11-window-map');
    let winSrc = null;
    provWin.weights({ map: winMap, source: () => winSrc });
    const winLine = h('p', { class: 'check-line ch11-window-line' });
    const timeBox = h('div', { class: 'entropy ch11-times', role: 'list' });
    const timeHead = h('p', { class: 'small muted' });
    const timeBtn = h('button', { type: 'button', class: 'al-btn al-btn-small' });
    timeBtn.addEventListener('click', () => {
      local.timings = null;
      local.timingKey = '';
      ctx.invalidate(['ch11.time']);
    });

    // ---- softcap ------------------------------------------------------------
    const capRange = h('input', { type: 'range', id: 'ch11-cap', min: '1', max: '100', step: '1' });
    const capOut = h('output', { class: 'ctl-value', for: 'ch11-cap' });
    capRange.addEventListener('input', () => ctx.set({ cap11: Number(capRange.value) }));
    const capChart = new XYChart({ name: 'softcap' });
    const plainMap = ctx.heatmap({ maxSize: 240, cellMax: 30, name: 'ch11_weights_no_softcap', domain: [0, 1] });
    const cappedMap = ctx.heatmap({ maxSize: 240, cellMax: 30, name: 'ch11_weights_softcap', domain: [0, 1] });
    cappedMap.el.classList.add('ch11-cap-map');
    let capSrc = null;
    provCap.weights({ map: plainMap, source: () => capSrc?.plain ?? null });
    provCap.weights({ map: cappedMap, source: () => capSrc?.capped ?? null });
    const capLine = h('p', { class: 'check-line ch11-cap-line' });

    // ---- ALiBi --------------------------------------------------------------
    const slopeBox = h('div', { class: 'entropy ch11-slopes', role: 'list' });
    const biasMaps = ALIBI_SHOW.map((hh) => ctx.heatmap({ maxSize: 260, cellMax: 15, compact: true, name: `ch11_alibi_bias_head${hh}` }));
    const alibiWeightMaps = ALIBI_SHOW.map((hh) => ctx.heatmap({ maxSize: 260, cellMax: 15, compact: true, name: `ch11_alibi_weights_head${hh}`, domain: [0, 1] }));
    let alibiSrc = null;
    ALIBI_SHOW.forEach((_, n) => provAlibi.weights({ map: alibiWeightMaps[n], source: () => alibiSrc?.[n] ?? null, bandMaps: [biasMaps[n]] }));
    const code = codeBlock('');
    // Try-this items with numbers the library measures (bound in update).
    const try2 = ctx.text('li', 'ch11.try2', null, { pd: '…', cd: DEFAULTS.cap11, p1: '…', p0: '…', p50: '…', d50: '…' });
    const try3 = ctx.text('li', 'ch11.try3', null, { ratio: '…' });

    body.append(
      ctx.text('p', 'ch11.p1'),
      ctx.text('h3', 'ch11.rope.h'),
      ctx.text('p', 'ch11.rope.p1'),
      formula(f.v('q'), f.sub('m'), f.op('='), f.v('R'), '(', f.v('m'), f.v('θ'), ')', f.v('q'), ',  ', f.v('k'), f.sub('n'), f.op('='), f.v('R'), '(', f.v('n'), f.v('θ'), ')', f.v('k'), h('span', { class: 'br' }),
        f.v('q'), f.sub('m'), '·', f.v('k'), f.sub('n'), f.op('='), f.v('q'), f.sup('T'), f.v('R'), '((', f.v('n'), '−', f.v('m'), ')', f.v('θ'), ')', f.v('k')),
      ctx.text('p', 'ch11.rope.p2'),
      h('div', { class: 'figs' },
        h('div', { class: 'fig-row' }, ropeMap.el, sinMap.el),
        provRope.box,
        ropeLine,
        offsetChart.el),
      ctx.text('h3', 'ch11.gqa.h'),
      ctx.text('p', 'ch11.gqa.p1'),
      h('div', { class: 'figs' },
        kvTable,
        kvLine,
        h('div', { class: 'inline-ctls' }, h('span', { class: 'inline-ctl' }, ctx.text('span', 'ch11.gqa.kvLabel'), h('span', { class: 'seg', role: 'group' }, kvBtns))),
        gqaNote,
        groupBox,
        provGqa.box),
      ctx.text('h3', 'ch11.win.h'),
      ctx.text('p', 'ch11.win.p1'),
      h('div', { class: 'figs' },
        h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch11-window' }, ctx.text('span', 'ch11.win.label'), winRange, winOut)),
        winMap.el,
        provWin.box,
        winLine,
        h('div', { class: 'panel-title' }, timeHead, ' ', timeBtn),
        timeBox),
      ctx.text('h3', 'ch11.cap.h'),
      ctx.text('p', 'ch11.cap.p1'),
      formula(f.v('s'), '′', f.op('='), f.v('c'), '·', f.fn('tanh'), '(', f.frac(f.v('s'), f.v('c')), ')'),
      h('div', { class: 'figs' },
        h('div', { class: 'inline-ctls' }, h('label', { class: 'inline-ctl', for: 'ch11-cap' }, ctx.text('span', 'ch11.cap.label'), capRange, capOut)),
        capChart.el,
        ctx.text('p', 'ch11.cap.p2'),
        h('div', { class: 'fig-row' }, plainMap.el, cappedMap.el),
        provCap.box,
        capLine),
      ctx.text('h3', 'ch11.alibi.h'),
      ctx.text('p', 'ch11.alibi.p1'),
      h('div', { class: 'figs' },
        ctx.text('p', 'ch11.alibi.slopes', { class: 'small muted' }),
        slopeBox,
        h('div', { class: 'fig-row' }, ...biasMaps.map((m) => m.el)),
        h('div', { class: 'fig-row' }, ...alibiWeightMaps.map((m) => m.el)),
        provAlibi.box,
        code),
      ctx.tryThis(['ch11.try1', try2, try3]),
    );

    return {
      setMessages(t) {
        timeBtn.textContent = t('ch11.win.again');
      },
      async update(c, state) {
        const t = c.t;
        const lab = c.lab();
        timeBtn.textContent = t('ch11.win.again');
        const seed = state.seed;
        const nkvSel = Number(state.kv11);

        // ---- RoPE: one q and one k vector placed at every position ----------
        const qv = seeded(seed, 11, ROPE_D);
        const kv = seeded(seed, 12, ROPE_D);
        const P = ROPE_P;
        const rot = async (v) => (await lab.rotaryEmbedding({ data: repeatRows(v, P), shape: [1, 1, P, ROPE_D] })).data;
        const rq = await rot(qv);
        const rk = await rot(kv);
        const dots = async (q, k) => stepValue((await lab.scaledDotProductAttention({ data: q, shape: [P, ROPE_D] }, { data: k, shape: [P, ROPE_D] }, { data: k, shape: [P, ROPE_D] }, { scale: 1, trace: 'values', needWeights: false })).trace, 'scores').data;
        const ropeQK = await dots(rq, rk);
        const pe = (await lab.positionalEncoding(P, ROPE_D)).data;
        const sq = repeatRows(qv, P).map((x, n) => x + pe[n]);
        const sk = repeatRows(kv, P).map((x, n) => x + pe[n]);
        const sinQK = await dots(sq, sk);
        ropeSrc = { rq, rk, sq, sk };
        // Each map on its own symmetric scale: the point is the pattern along the diagonals.
        ropeMap.setData({ data: ropeQK, rows: P, cols: P, title: t('ch11.rope.mapRope', { P, D: ROPE_D }), tensor: { data: ropeQK, shape: [P, P] }, dimNames: ['query_position', 'key_position'] });
        sinMap.setData({ data: sinQK, rows: P, cols: P, title: t('ch11.rope.mapSin', { P, D: ROPE_D }), tensor: { data: sinQK, shape: [P, P] }, dimNames: ['query_position', 'key_position'] });
        const devRope = toeplitzDeviation(ropeQK, P);
        const devSin = toeplitzDeviation(sinQK, P);
        let mr = 0;
        for (const v of ropeQK) mr = Math.max(mr, Math.abs(v));
        Object.assign(ropeLine.dataset, { devRope: String(devRope), devSin: String(devSin), maxRope: String(mr) });
        c.texts.bind(ropeLine, 'ch11.rope.dev', { rope: devRope === 0 ? '0' : devRope.toExponential(2), max: fmt(mr, 3), sin: fmt(devSin, 3), P });
        const off = new Float32Array(P * P);
        for (let i = 0; i < P; i++) for (let j = 0; j < P; j++) off[i * P + j] = j - i;
        offsetChart.setData({
          title: t('ch11.rope.chart'),
          xLabel: t('ch11.rope.xOffset'),
          yLabel: t('ch11.rope.yDot'),
          series: [{ name: t('ch11.rope.sinSeries'), x: off, y: sinQK, kind: 'dots' }, { name: t('ch11.rope.ropeSeries'), x: off, y: ropeQK, kind: 'dots' }],
          describe: (p) => t('ch11.rope.hover', { series: p.series, i: Math.floor(p.index / P), j: p.index % P, off: p.x, v: fmt(p.y, 4) }),
        });

        // ---- GQA / MQA: the KV cache each grouping holds -------------------
        // The KV-cache table and the timed calls use wasm also when WebGPU is
        // selected (a software adapter would take minutes at L = 2048); the
        // timings' heading names the backend.
        const mlab = lab.backend === 'webgpu' ? await c.labFor('wasm') : lab;
        const D = GQA_E / GQA_H;
        // Read from a wasm cache: a fresh webgpu cache reports heldBytes() 0 (its
        // memory is held by the wasm backend that answers cached steps).
        if (local.kvKey !== mlab.backend) {
          local.kvRows = [];
          for (const nkv of GQA_KV) {
            const mha = mlab.multiHeadAttention({ embedDim: GQA_E, numHeads: GQA_H, numKvHeads: nkv, seed });
            try {
              const cache = mha.createKVCache({ maxLength: GQA_CACHE });
              local.kvRows.push({ nkv, bytes: cache.heldBytes() / GQA_CACHE });
              cache.dispose();
            } finally {
              mha.dispose();
            }
          }
          local.kvKey = mlab.backend;
        }
        const rows = local.kvRows;
        const full = rows[0].bytes;
        const kindOf = (n) => t(n === GQA_H ? 'ch11.gqa.mha' : n === 1 ? 'ch11.gqa.mqa' : 'ch11.gqa.gqa');
        kvTable.replaceChildren(
          h('caption', null, t('ch11.gqa.caption', { E: GQA_E, H: GQA_H, D, n: GQA_CACHE })),
          h('thead', null, h('tr', null, ['ch11.gqa.colKv', 'ch11.gqa.colKind', 'ch11.gqa.colBytes', 'ch11.gqa.colRatio'].map((k) => h('th', { scope: 'col' }, t(k))))),
          h('tbody', null, rows.map((r) => h('tr', { class: r.nkv === nkvSel ? 'current' : null, 'aria-current': r.nkv === nkvSel ? 'true' : null, dataset: { kv: String(r.nkv), bytes: String(r.bytes) } },
            h('td', { class: 'num' }, String(r.nkv)), h('td', null, kindOf(r.nkv)), h('td', { class: 'num' }, String(r.bytes)), h('td', { class: 'num' }, `${fmt(full / r.bytes, 0)}×`)))));
        kvBtns.forEach((b) => b.setAttribute('aria-pressed', String(Number(b.dataset.kv) === nkvSel)));
        // The selected H_kv's bytes against MHA's, read from the same caches.
        const selRow = rows.find((r) => r.nkv === nkvSel);
        Object.assign(kvLine.dataset, { kv: String(nkvSel), bytes: String(selRow.bytes), ratio: String(full / selRow.bytes) });
        c.texts.bind(kvLine, 'ch11.gqa.sel', { kv: nkvSel, kind: kindOf(nkvSel), bytes: selRow.bytes, ratio: fmt(full / selRow.bytes, 0), full, H: GQA_H });
        c.texts.bind(try3, 'ch11.try3', { ratio: fmt(full / rows[rows.length - 1].bytes, 0) });

        let toks = tokenize(state.text).slice(0, 12);
        if (!toks.length) toks = ['∅'];
        const L = toks.length;
        const x = embedBatch([toks], L, GQA_E, seed, (await lab.positionalEncoding(L, GQA_E)).data);
        const mha = lab.multiHeadAttention({ embedDim: GQA_E, numHeads: GQA_H, numKvHeads: nkvSel, seed });
        let r;
        try {
          r = await mha.forward({ data: x, shape: [1, L, GQA_E] }, undefined, undefined, { mask: { kind: 'causal' } });
        } finally {
          mha.dispose();
        }
        const group = GQA_H / nkvSel;
        gqaNote.textContent = t('ch11.gqa.note', { kv: nkvSel, g: group, L });
        for (const mm of groupMaps) {
          c.forgetHeatmap(mm);
          mm.destroy();
        }
        groupMaps = [];
        gqaSrc = r.weights.data;
        const LL = L * L;
        const boxes = [];
        for (let g = 0; g < nkvSel; g++) {
          const heads = [];
          for (let hh = g * group; hh < (g + 1) * group; hh++) {
            const mm = c.heatmap({ maxSize: group > 4 ? 150 : 180, cellMax: 24, compact: true, name: `ch11_gqa_head${hh}`, domain: [0, 1] });
            mm.el.dataset.head = String(hh);
            mm.setData({ data: r.weights.data, offset: hh * LL, rows: L, cols: L, rowLabels: toks, colLabels: toks, title: t('hm.head', { h: hh }), tensor: r.weights, dimNames: ['b', 'head', 'query', 'key'] });
            const off0 = hh * LL;
            provGqa.weights({ map: mm, source: () => gqaSrc && { weights: gqaSrc.subarray(off0, off0 + LL), Lk: L, rowLabels: toks, colLabels: toks } });
            groupMaps.push(mm);
            heads.push(mm.el);
          }
          boxes.push(h('div', { class: 'panel ch11-group', dataset: { kvHead: String(g) } }, h('div', { class: 'panel-title' }, t(group > 1 ? 'ch11.gqa.group' : 'ch11.gqa.group1', { g, a: g * group, b: (g + 1) * group - 1 })), h('div', { class: 'fig-row' }, heads)));
        }
        groupBox.replaceChildren(...boxes);

        // ---- sliding window ------------------------------------------------
        const Wn = state.win11;
        winRange.value = String(Wn);
        winOut.textContent = String(Wn);
        const wq = seeded(seed, 21, WIN_L * WIN_D);
        const wk = seeded(seed, 22, WIN_L * WIN_D);
        const wv = seeded(seed, 23, WIN_L * WIN_D);
        const T = (d) => ({ data: d, shape: [WIN_L, WIN_D] });
        const winSpec = { kind: 'window', left: Wn - 1, right: 0 };
        const rw = await lab.scaledDotProductAttention(T(wq), T(wk), T(wv), { mask: winSpec, trace: 'values' });
        const wScores = stepValue(rw.trace, 'mask').data;
        winSrc = { scores: wScores, weights: rw.weights.data, Lk: WIN_L };
        winMap.setData({ data: rw.weights.data, rows: WIN_L, cols: WIN_L, title: t('ch11.win.map', { L: WIN_L, W: Wn }), tensor: rw.weights });
        let maxSeen = 0;
        let pairs = 0;
        for (let i = 0; i < WIN_L; i++) {
          let n = 0;
          for (let j = 0; j < WIN_L; j++) if (rw.weights.data[i * WIN_L + j] > 0) n++;
          maxSeen = Math.max(maxSeen, n);
          pairs += n;
        }
        Object.assign(winLine.dataset, { maxSeen: String(maxSeen), pairs: String(pairs) });
        c.texts.bind(winLine, 'ch11.win.count', { max: maxSeen, W: Wn, pairs, all: WIN_L * WIN_L, L: WIN_L });

        const timingKey = `${mlab.backend}|${seed}`;
        if (local.timingKey !== timingKey || !local.timings) {
          const tq = seeded(seed, 31, TIME_L * TIME_D);
          const tk = seeded(seed, 32, TIME_L * TIME_D);
          const tv = seeded(seed, 33, TIME_L * TIME_D);
          const TT = (d) => ({ data: d, shape: [TIME_L, TIME_D] });
          const runs = [...TIME_WINDOWS.map((w) => ({ w, mask: { kind: 'window', left: w - 1, right: 0 } })), { w: 0, mask: { kind: 'causal' } }];
          // One untimed call first (memory growth, compilation), then the fastest of five.
          await mlab.scaledDotProductAttention(TT(tq), TT(tk), TT(tv), { mask: runs[3].mask, needWeights: false });
          for (const run of runs) {
            let best = Infinity;
            for (let rep = 0; rep < 5; rep++) {
              const t0 = performance.now();
              await mlab.scaledDotProductAttention(TT(tq), TT(tk), TT(tv), { mask: run.mask, needWeights: false });
              best = Math.min(best, performance.now() - t0);
            }
            run.ms = best;
          }
          local.timings = runs;
          local.timingKey = timingKey;
        }
        const tmax = Math.max(...local.timings.map((x) => x.ms));
        timeHead.textContent = t('ch11.win.timeHead', { L: TIME_L, D: TIME_D, backend: t(`ctl.backend.${mlab.backend}`) });
        timeBox.replaceChildren(...local.timings.flatMap((run) => {
          const bar = h('span');
          bar.style.setProperty('--w', String(tmax > 0 ? run.ms / tmax : 0));
          const label = run.w ? t('ch11.win.timeRow', { W: run.w }) : t('ch11.win.timeFull');
          return [h('span', { class: 'lbl', role: 'listitem', dataset: { w: String(run.w), ms: String(run.ms) } }, label), h('span', { class: 'bar', 'aria-hidden': 'true' }, bar), h('span', null, `${fmt(run.ms, 1)} ms`)];
        }));

        // ---- softcap --------------------------------------------------------
        const cap = state.cap11;
        capRange.value = String(cap);
        capOut.textContent = String(cap);
        const N = 2 * CAP_POINTS + 1;
        const range = Math.max(20, 4 * cap);
        const sIn = Float32Array.from({ length: N }, (_, n) => ((n - CAP_POINTS) / CAP_POINTS) * range);
        const rc = await lab.scaledDotProductAttention({ data: sIn, shape: [N, 1] }, { data: new Float32Array([1]), shape: [1, 1] }, { data: new Float32Array([1]), shape: [1, 1] }, { scale: 1, softcap: cap, trace: 'values', needWeights: false });
        const sc = stepValue(rc.trace, 'scores').data;
        const capped = stepValue(rc.trace, 'softcap').data;
        capChart.setData({
          title: t('ch11.cap.chart', { c: cap }),
          xLabel: t('ch11.cap.x'),
          yLabel: t('ch11.cap.y'),
          series: [{ name: t('ch11.cap.before'), x: sc, y: sc, dash: true }, { name: t('ch11.cap.after', { c: cap }), x: sc, y: capped }],
          hlines: [{ y: cap, label: `+c = ${cap}` }, { y: -cap, label: `−c = −${cap}` }],
          describe: (p) => t('ch11.cap.hover', { s: fmt(p.x, 3), v: fmt(capped[p.index], 4) }),
        });
        capChart.el.dataset.maxCapped = String(Math.max(...capped.map(Math.abs)));
        // Unscaled self-attention of the sentence's embeddings: large scores, peaked rows.
        const xe = embedBatch([toks], L, 64, seed, null);
        const X = { data: xe, shape: [L, 64] };
        const r0 = await lab.scaledDotProductAttention(X, X, X, { scale: 1, trace: 'values' });
        const r1 = await lab.scaledDotProductAttention(X, X, X, { scale: 1, softcap: cap, trace: 'values' });
        const s0 = stepValue(r0.trace, 'scores').data;
        const s1 = stepValue(r1.trace, 'softcap').data;
        capSrc = { plain: { scores: s0, weights: r0.weights.data, Lk: L, rowLabels: toks, colLabels: toks }, capped: { scores: s1, weights: r1.weights.data, Lk: L, rowLabels: toks, colLabels: toks } };
        plainMap.setData({ data: r0.weights.data, rows: L, cols: L, rowLabels: toks, colLabels: toks, title: t('ch11.cap.plainMap'), tensor: r0.weights });
        cappedMap.setData({ data: r1.weights.data, rows: L, cols: L, rowLabels: toks, colLabels: toks, title: t('ch11.cap.cappedMap', { c: cap }), tensor: r1.weights });
        const meanMax = (w) => {
          let sum = 0;
          for (let i = 0; i < L; i++) {
            let mx = 0;
            for (let j = 0; j < L; j++) mx = Math.max(mx, w[i * L + j]);
            sum += mx;
          }
          return sum / L;
        };
        let smax = 0;
        for (const v of s0) smax = Math.max(smax, Math.abs(v));
        c.texts.bind(capLine, 'ch11.cap.line', { smax: fmt(smax, 2), p0: fmt(meanMax(r0.weights.data), 3), p1: fmt(meanMax(r1.weights.data), 3), c: cap });
        // Try this: the mean row maximum at c = 1, the default cap and Gemma 2's 50, measured on these inputs.
        const capped1 = async (cc) => (cc === cap ? r1 : lab.scaledDotProductAttention(X, X, X, { scale: 1, softcap: cc }));
        const wDef = (await capped1(DEFAULTS.cap11)).weights.data;
        const wOne = (await capped1(1)).weights.data;
        const wGemma = (await capped1(GEMMA_CAP)).weights.data;
        let d50 = 0;
        for (let n = 0; n < wGemma.length; n++) d50 = Math.max(d50, Math.abs(wGemma[n] - r0.weights.data[n]));
        Object.assign(try2.dataset, { p0: String(meanMax(r0.weights.data)), pDefault: String(meanMax(wDef)), p1: String(meanMax(wOne)), p50: String(meanMax(wGemma)), d50: String(d50) });
        c.texts.bind(try2, 'ch11.try2', {
          p0: fmt(meanMax(r0.weights.data), 3), pd: fmt(meanMax(wDef), 3), cd: DEFAULTS.cap11, p1: fmt(meanMax(wOne), 3),
          p50: fmt(meanMax(wGemma), 3), d50: d50 === 0 ? '0' : d50.toExponential(1),
        });

        // ---- ALiBi ----------------------------------------------------------
        const slopes = await lab.alibiSlopes(ALIBI_H);
        slopeBox.replaceChildren(...Array.from(slopes).flatMap((s, hh) => {
          const bar = h('span');
          bar.style.setProperty('--w', String(s / slopes[0]));
          return [h('span', { class: 'lbl', role: 'listitem', dataset: { slope: String(s) } }, t('hm.head', { h: hh })), h('span', { class: 'bar', 'aria-hidden': 'true' }, bar), h('span', null, `${fmt(s, 5)} = 2^−${hh + 1}`)];
        }));
        const zeros = { data: new Float32Array(ALIBI_H * ALIBI_L * 4), shape: [1, ALIBI_H, ALIBI_L, 4] };
        const ra = await lab.scaledDotProductAttention(zeros, zeros, zeros, { mask: [{ kind: 'alibi' }, { kind: 'causal' }], trace: 'values' });
        const bias = stepValue(ra.trace, 'mask').data;
        const AL = ALIBI_L * ALIBI_L;
        let bmin = 0;
        for (const v of bias) if (v > -1e8) bmin = Math.min(bmin, v);
        alibiSrc = ALIBI_SHOW.map((hh) => ({ scores: bias.subarray(hh * AL, (hh + 1) * AL), weights: ra.weights.data.subarray(hh * AL, (hh + 1) * AL), Lk: ALIBI_L }));
        ALIBI_SHOW.forEach((hh, n) => {
          biasMaps[n].setData({ data: bias, offset: hh * AL, rows: ALIBI_L, cols: ALIBI_L, title: t('ch11.alibi.bias', { h: hh, m: fmt(slopes[hh], 4) }), domain: [bmin, 0], tensor: { data: bias.slice(hh * AL, (hh + 1) * AL), shape: [ALIBI_L, ALIBI_L] } });
          alibiWeightMaps[n].setData({ data: ra.weights.data, offset: hh * AL, rows: ALIBI_L, cols: ALIBI_L, title: t('ch11.alibi.weights', { h: hh }), tensor: { data: ra.weights.data.slice(hh * AL, (hh + 1) * AL), shape: [ALIBI_L, ALIBI_L] } });
        });
        code.firstChild.textContent = [
          `lab.rotaryEmbedding(x /* [1, 1, ${P}, ${ROPE_D}] */)                 // RoPE, positions 0…${P - 1}`,
          `lab.multiHeadAttention({ embedDim: ${GQA_E}, numHeads: ${GQA_H}, numKvHeads: ${nkvSel} }) // GQA (1: MQA)`,
          `lab.scaledDotProductAttention(q, k, v, { mask: ${JSON.stringify(winSpec)} })`,
          `lab.scaledDotProductAttention(q, k, v, { softcap: ${cap} })`,
          "lab.scaledDotProductAttention(q, k, v, { mask: [{ kind: 'alibi' }, { kind: 'causal' }] })",
          `lab.alibiSlopes(${ALIBI_H})`,
        ].join('\n');
      },
    };
  },
};
