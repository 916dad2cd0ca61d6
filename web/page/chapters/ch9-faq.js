// Chapter 9 — FAQ (tutorial 2's three questions), each with a live demo:
// self-focus and entropy per head; parameter counts against H; and what
// permute / contiguous() do to the memory order of a small tensor.
// The weights switch (state w9): 'learned' answers Q1 with the shipped model's
// own heads (their measured roles, model.headRoles, and their self-focus and
// entropy on the reader's sentence, from model.forward) and Q2 at its E and H;
// Q3 and Q4 (memory order, argument order) run on seeded weights either way.
import { h, fmt } from '../../components/lib/dom.js';
import { rowEntropy, maxAbsDiff } from '../../components/lib/tensor-math.js';
import { tokenize, embedBatch } from '../../components/lib/tokens.js';
import { HEAD_COLOURS } from '../../components/lib/shape-flow.js';
import { deriveInputs, maskSpec, ObjectCache, scoreFactor } from '../lib/model.js';
import { weightsSwitch, learnedText, loadingText, modelSizes } from '../lib/learned-layer.js';
import { cachedHeadRoles, headRoleLabels, ROLES } from '../lib/learned.js';

function barCell(v, max) {
  const bar = h('span');
  bar.style.setProperty('--w', String(max > 0 ? Math.min(1, v / max) : 0));
  return h('td', null, h('div', { class: 'cellbar' }, h('span', { class: 'bar', 'aria-hidden': 'true' }, bar), h('span', null, fmt(v, 3))));
}

/** Memory-order demo: [L, E] with H heads of D = E/H. */
function memoryDemo(t, L, E, H) {
  const D = E / H;
  const cell = (memIndex, jump) => {
    const headOf = Math.floor((memIndex % E) / D);
    const el = h('span', { class: `mem-cell${jump ? ' jump' : ''}`, title: `memory ${memIndex}` }, String(memIndex));
    el.style.setProperty('--cell-bg', HEAD_COLOURS[headOf % HEAD_COLOURS.length]);
    return el;
  };
  const row = (label, order) => h('div', { class: 'mem-row' }, h('span', { class: 'mem-label' }, label),
    h('span', { class: 'mem-cells' }, order.map((m, k) => cell(m, k > 0 && m !== order[k - 1] + 1))));
  const mem = Array.from({ length: L * E }, (_, i) => i);
  // view [L, H, D]: strides (E, D, 1), reads in memory order.
  const view = [];
  for (let l = 0; l < L; l++) for (let hh = 0; hh < H; hh++) for (let d = 0; d < D; d++) view.push(l * E + hh * D + d);
  // permute → [H, L, D]: strides (D, E, 1), same memory, read out of order.
  const perm = [];
  for (let hh = 0; hh < H; hh++) for (let l = 0; l < L; l++) for (let d = 0; d < D; d++) perm.push(l * E + hh * D + d);
  const contiguous = perm.map((_, i) => i);
  return h('div', { class: 'mem' },
    row(t('ch9.d3.mem'), mem),
    row(t('ch9.d3.view', { s: `${E}, ${D}, 1` }), view),
    row(t('ch9.d3.perm', { s: `${D}, ${E}, 1` }), perm),
    h('div', { class: 'mem-row' }, h('span', { class: 'mem-label' }, t('ch9.d3.cont', { s: `${L * D}, ${D}, 1` })),
      h('span', { class: 'mem-cells' }, contiguous.map((_, k) => {
        const src = perm[k];
        const el = h('span', { class: 'mem-cell', title: `copy of memory ${src}` }, String(src));
        el.style.setProperty('--cell-bg', HEAD_COLOURS[Math.floor((src % E) / D) % HEAD_COLOURS.length]);
        return el;
      }))),
    // PyTorch ignores the stride of a size-1 axis: with H = 1 the permuted tensor is still contiguous.
    H > 1
      ? h('p', { class: 'al-error small ch9-view-err' }, t('ch9.d3.err', { msg: t('ch9.d3.errMsg') }))
      : h('p', { class: 'check-line small ch9-view-ok' }, t('ch9.d3.ok')));
}

/** Q4: tutorial 3's forward(v, k, q) order, run with the library on sentences 1 and 2. */
async function orderDemo(c, state, item, box) {
  const t = c.t;
  const lab = c.lab();
  const E = state.E;
  const sent = async (text, n) => {
    let tk = tokenize(text);
    if (!tk.length) tk = ['∅'];
    tk = tk.slice(0, n ?? 64);
    const pe = state.pe ? (await lab.positionalEncoding(tk.length, E)).data : null;
    return { data: embedBatch([tk], tk.length, E, state.seed, pe), shape: [1, tk.length, E] };
  };
  const s1 = await sent(state.text);
  const s2 = await sent(state.text2);
  const fwd = (q, k, v) => item.obj.forward(q, k, v, { needWeights: false });
  const lines = [];
  const right = await fwd(s2, s1, s1);
  lines.push(h('p', { class: 'small', dataset: { out: JSON.stringify(right.output.shape) } }, t('ch9.d4.right', { q: JSON.stringify(s2.shape), k: JSON.stringify(s1.shape), out: JSON.stringify(right.output.shape) })));
  try {
    const r = await fwd(s1, s1, s2);
    lines.push(h('p', { class: 'small' }, t('ch9.d4.equal', { L: s1.shape[1], out: JSON.stringify(r.output.shape), diff: '—' })));
  } catch (e) {
    lines.push(h('p', { class: 'al-error small ch9-order-err' }, t('ch9.d4.error', { msg: e.message })));
  }
  // Equal lengths: the swap goes through, and is wrong.
  const n = Math.min(s1.shape[1], s2.shape[1]);
  const a = await sent(state.text, n);
  const b = await sent(state.text2, n);
  const good = await fwd(b, a, a);
  const bad = await fwd(a, a, b);
  const diff = maxAbsDiff(good.output.data, bad.output.data);
  lines.push(h('p', { class: 'small ch9-order-equal', dataset: { diff: String(diff) } }, t('ch9.d4.equal', { L: n, out: JSON.stringify(bad.output.shape), diff: fmt(diff, 3) })));
  box.replaceChildren(...lines);
}

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'H', 'seed', 'mask', 'T', 'scale', 'pe', 'b', 'w9'],
  mount(ctx, body) {
    const d1 = h('div', { class: 'table-scroll' });
    const d1p = h('p', { class: 'small' });
    const d1note = h('p', { class: 'check-line', id: 'ch9-note' });
    const d2 = h('div', { class: 'table-scroll' });
    const d2p = h('p', { class: 'small' });
    const hSel = h('select', { class: 'al-select', id: 'ch9-h', 'aria-label': 'H' }, [1, 2, 4].map((n) => h('option', { value: String(n), selected: n === 2 }, `H = ${n}`)));
    const d3p = h('p', { class: 'small' });
    const d3 = h('div');
    const drawMem = () => {
      const Hm = Number(hSel.value);
      d3p.textContent = ctx.t('ch9.d3', { L: 3, E: 4, H: Hm });
      d3.replaceChildren(memoryDemo(ctx.t, 3, 4, Hm));
    };
    hSel.addEventListener('change', drawMem);
    const d4 = h('div', { class: 'ch9-order', id: 'ch9-order' });
    const sw = weightsSwitch(ctx, 'w9', 'ch9');
    const learnedLine = h('p', { class: 'small muted ch9-learned', hidden: true });
    body.append(
      sw.el,
      learnedLine,
      h('div', { class: 'faq' }, ctx.text('h3', 'ch9.q1'), ctx.text('p', 'ch9.a1'), d1p, d1, d1note),
      h('div', { class: 'faq' }, ctx.text('h3', 'ch9.q2'), ctx.text('p', 'ch9.a2'), d2p, d2),
      h('div', { class: 'faq' }, ctx.text('h3', 'ch9.q3'), ctx.text('p', 'ch9.a3'), h('div', { class: 'inline-ctls' }, hSel), d3p, d3),
      h('div', { class: 'faq' }, ctx.text('h3', 'ch9.q4'), ctx.text('p', 'ch9.a4'), d4),
    );

    /** Q1 on the shipped model: every head's measured role, self-focus and entropy here. */
    function learnedQ1(t, st, sz) {
      const run = st.model.forwardSync(st.ids, { attentions: true });
      const roles = cachedHeadRoles(st.lang, st.model, st.text);
      const labels = headRoleLabels(roles);
      const L = st.L;
      const rows = [];
      let selfAll = 0;
      let maxSelf = { v: -1, k: 0 };
      run.attentions.forEach((a, l) => {
        for (let hh = 0; hh < sz.H; hh++) {
          const off = hh * L * L;
          let diag = 0;
          for (let i = 0; i < L; i++) diag += a.data[off + i * L + i];
          const ent = rowEntropy(a.data, L, L, off).reduce((x, v) => x + v, 0) / L;
          const k = l * sz.H + hh;
          const self = diag / L;
          selfAll += self / (sz.N * sz.H);
          if (self > maxSelf.v) maxSelf = { v: self, k };
          rows.push({ k, l, hh, self, ent, role: labels[k].role });
        }
      });
      // What the heads do: how many have each strongest role.
      const counts = new Map();
      for (const lb of labels) counts.set(lb.role, (counts.get(lb.role) ?? 0) + 1);
      const order = [...ROLES, 'spread'].filter((r) => counts.has(r));
      const roleList = order.map((r) => t('ch9.d1.roleCount', { role: t(`ch4.role.${r}`), n: counts.get(r) })).join(t('ch9.d1.sep'));
      const distinct = order.filter((r) => r !== 'spread').length;
      const maxEnt = Math.log(L) || 1;
      // An even spread over the keys a causal row may see: 1/(i + 1) on the own position.
      let u = 0;
      for (let i = 0; i < L; i++) u += 1 / (i + 1) / L;
      learnedLine.textContent = [t('ch9.learned', { model: st.name, N: sz.N, H: sz.H, E: sz.E }), st.notes].filter(Boolean).join(' ');
      ctx.texts.bind(d1p, 'ch9.d1L', { model: st.name, n: sz.N * sz.H, L });
      const mk = rows[maxSelf.k];
      ctx.texts.bind(d1note, 'ch9.d1.noteL', { roles: roleList, distinct, self: fmt(selfAll, 3), u: fmt(u, 3), max: fmt(maxSelf.v, 3), l: mk.l, h: mk.hh });
      Object.assign(d1note.dataset, { self: String(selfAll), distinct: String(distinct) });
      d1.replaceChildren(h('table', { class: 'data faq-heads' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('ch9.d1.th.who')), h('th', { scope: 'col' }, t('ch9.d1.th.role')), h('th', { scope: 'col' }, t('ch9.d1.th.self')), h('th', { scope: 'col' }, `${t('ch9.d1.th.ent')} (≤ ${fmt(maxEnt, 3)})`))),
        h('tbody', null, rows.map((r) => h('tr', { dataset: { row: `L${r.l}H${r.hh}`, self: String(r.self), role: r.role } },
          h('th', { scope: 'row' }, t('ch4.rolesRow', { l: r.l, h: r.hh })), h('td', null, t(`ch4.role.${r.role}`)), barCell(r.self, 1), barCell(r.ent, maxEnt))))));
    }

    return {
      setMessages() {
        drawMem();
      },
      async update(c, state) {
        const t = c.t;
        const lab = c.lab();
        drawMem();
        const learned = sw.learned(state);
        sw.update(t, state);
        learnedLine.hidden = !learned;
        let st = null;
        if (learned) {
          st = learnedText(c, state, ['w9']);
          if (!st) learnedLine.textContent = loadingText(c, state);
        }
        const sz = st && modelSizes(lab, st.model);
        // Q2 first: it needs no computation and stays valid when E % H ≠ 0.
        const E = sz ? sz.E : state.E;
        const curH = sz ? sz.H : state.H;
        const rows = [];
        for (const Hh of [1, 2, 4, 8, 16, 32, 64]) {
          if (E % Hh) continue;
          const split = 4 * E * E + 4 * E;
          const full = 3 * (Hh * E * E + Hh * E) + (Hh * E * E + E);
          rows.push(h('tr', { class: Hh === curH ? 'current' : '' }, h('td', { class: 'num' }, String(Hh)), h('td', { class: 'num' }, String(E / Hh)), h('td', { class: 'num' }, split.toLocaleString('en')), h('td', { class: 'num' }, full.toLocaleString('en'))));
        }
        d2p.textContent = t('ch9.d2', { E });
        d2.replaceChildren(h('table', { class: 'data' },
          h('thead', null, h('tr', null, ['ch9.d2.th.H', 'ch9.d2.th.D', 'ch9.d2.th.split', 'ch9.d2.th.full'].map((k) => h('th', { class: 'num', scope: 'col' }, t(k))))),
          h('tbody', null, rows)));

        if (learned && !st) return { loading: true };
        if (st) {
          learnedQ1(t, st, sz);
          await orderDemo(c, state, c.objects.mha(lab, { E: state.E, H: state.H, seed: state.seed }), d4);
          return { learned: true };
        }
        // Q1: self-focus and entropy of bare attention, of tied projections
        // (W_K = W_Q), and of the same W_Q ≠ W_K used with H = 1 and with H.
        const inp = await deriveInputs(lab, state, c.cache);
        const { B, L, x, lengths } = inp;
        const b = Math.min(state.b, B - 1);
        const H = state.H;
        const x0 = x.subarray(b * L * E, (b + 1) * L * E);
        const mask = maskSpec(state.mask, lengths);
        const bare = await lab.selfAttention({ data: x0, shape: [L, E] });
        const item = c.objects.mha(lab, { E, H, seed: state.seed });
        const weights = item.original;
        // H = 1 and tied copies of the same matrices (kept apart from the cache's H-keyed MHA).
        const one = c.objects._get('mhaH1', lab, { E, seed: state.seed }, () => {
          const m = lab.multiHeadAttention({ embedDim: E, numHeads: 1, seed: state.seed });
          m.setWeights(weights);
          return m;
        });
        const tied = c.objects._get('mhaTied', lab, { E, H, seed: state.seed }, () => {
          const m = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: state.seed });
          m.setWeights({ ...weights, wk: weights.wq, bk: weights.bq });
          return m;
        });
        const run = async (it) => {
          ObjectCache.setFactor(it, scoreFactor(state, it.obj.headDim));
          return (await it.obj.forward({ data: x, shape: [B, L, E] }, undefined, undefined, { mask })).weights.data;
        };
        const wH = await run(item);
        const w1 = await run(one);
        const wT = await run(tied);
        const stats = (w, off) => {
          let diag = 0;
          for (let i = 0; i < L; i++) diag += w[off + i * L + i];
          const ent = rowEntropy(w, L, L, off);
          return { self: diag / L, ent: ent.reduce((a, v) => a + v, 0) / L };
        };
        const meanHeads = (w, n) => {
          const m = { self: 0, ent: 0 };
          for (let hh = 0; hh < n; hh++) {
            const s = stats(w, (b * n + hh) * L * L);
            m.self += s.self / n;
            m.ent += s.ent / n;
          }
          return m;
        };
        const sBare = stats(bare.weights.data, 0);
        const sTied = meanHeads(wT, H);
        const s1 = stats(w1, b * L * L);
        const sH = meanHeads(wH, H);
        const list = [
          ['bare', t('ch9.d1.bare'), sBare],
          ['tied', t('ch9.d1.tied', { H }), sTied],
          ['h1', t('ch9.d1.h1'), s1],
          ['hH', t('ch9.d1.hH', { H }), sH],
        ];
        for (let hh = 0; hh < Math.min(H, 16); hh++) list.push([`head${hh}`, t('ch9.d1.head', { H, h: hh }), stats(wH, (b * H + hh) * L * L)]);
        ctx.texts.bind(d1p, 'ch9.d1', { H });
        ctx.texts.bind(d1note, 'ch9.d1.note', { H, s1: fmt(s1.self, 3), sH: fmt(sH.self, 3), st: fmt(sTied.self, 3), u: fmt(1 / L, 3) });
        Object.assign(d1note.dataset, { s1: String(s1.self), sH: String(sH.self), st: String(sTied.self), bare: String(sBare.self) });
        await orderDemo(c, state, item, d4);
        const maxEnt = Math.log(L) || 1;
        d1.replaceChildren(h('table', { class: 'data faq-heads' },
          h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('ch9.d1.th.who')), h('th', { scope: 'col' }, t('ch9.d1.th.self')), h('th', { scope: 'col' }, `${t('ch9.d1.th.ent')} (≤ ${fmt(maxEnt, 3)})`))),
          h('tbody', null, list.map(([id, name, s]) => h('tr', { dataset: { row: id, self: String(s.self) } }, h('th', { scope: 'row' }, name), barCell(s.self, 1), barCell(s.ent, maxEnt))))));
      },
    };
  },
};
