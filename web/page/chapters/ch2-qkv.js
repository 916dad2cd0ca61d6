// Chapter 2 — Q, K, V: the three projection matrices as a table and as
// animated matrix blocks, and the projected Q, K, V (tutorial 1, step 2).
// The weights switch (state w2): 'random' projects seeded embeddings with
// seeded matrices (the d_k, d_v controls); 'learned' shows the shipped model's
// own layer-0 projections (h.0.attn.c_attn) of ln_1(wte + wpe) on the reader's
// sentence (lib/learned-layer.js).
import { h, fmt, shapeText } from '../../components/lib/dom.js';
import { tween, lerp } from '../../components/lib/motion.js';
import { deriveInputs, projections } from '../lib/model.js';
import { formula, f, codeBlock } from '../lib/ui.js';
import { checkValue } from '../lib/state.js';
import { weightsSwitch, learnedText, loadingText, layerZero } from '../lib/learned-layer.js';

const COLOURS = { x: '#7f8aa3', q: '#0072B2', k: '#E69F00', v: '#009E73' };
const sw = (n) => 10 + 15 * Math.log2(1 + n);
const sh = (n) => 6 + 9 * Math.log2(1 + n);

/** SVG of X · W = P for the three projections; sizes tween when shapes change. */
class MatrixBlocks {
  constructor() {
    this.svg = h('svg:svg', { class: 'blocks', viewBox: '0 0 760 400', role: 'img' });
    this.prev = null;
  }

  set(dims, label) {
    this.svg.setAttribute('aria-label', label);
    const from = this.prev ?? dims;
    this.prev = dims;
    this.anim?.cancel();
    this.anim = tween(700, (p) => this.draw(Object.fromEntries(Object.keys(dims).map((k) => [k, lerp(from[k], dims[k], p)])), dims));
  }

  draw(d, exact) {
    const rows = [['q', 'Q', 'dk'], ['k', 'K', 'dk'], ['v', 'V', 'dv']];
    const nodes = [];
    const rowH = 128;
    let maxX = 0;
    rows.forEach(([key, name, wdim], r) => {
      const y0 = 14 + r * rowH;
      const cy = y0 + 52;
      const block = (x, w, hh, colour, title, shape) => {
        nodes.push(h('svg:rect', { x: x.toFixed(1), y: (cy - hh / 2).toFixed(1), width: w.toFixed(1), height: hh.toFixed(1), rx: '3', fill: colour, 'fill-opacity': '0.28', stroke: colour }));
        nodes.push(h('svg:text', { class: 'blk-name', x: (x + w / 2).toFixed(1), y: (cy + 5).toFixed(1), 'text-anchor': 'middle' }, title));
        nodes.push(h('svg:text', { x: (x + w / 2).toFixed(1), y: (cy + hh / 2 + 15).toFixed(1), 'text-anchor': 'middle' }, shape));
      };
      let x = 20;
      const xw = sw(d.E);
      const xh = sh(d.L);
      block(x, xw, xh, COLOURS.x, 'X', shapeText([exact.L, exact.E]));
      x += xw + 14;
      nodes.push(h('svg:text', { class: 'blk-op', x: x.toFixed(1), y: (cy + 7).toFixed(1) }, '×'));
      x += 24;
      const ww = sw(d[wdim]);
      const wh = sh(d.E);
      block(x, ww, wh, COLOURS[key], `W_${name}`, shapeText([exact.E, exact[wdim]]));
      x += ww + 14;
      nodes.push(h('svg:text', { class: 'blk-op', x: x.toFixed(1), y: (cy + 7).toFixed(1) }, '='));
      x += 24;
      block(x, sw(d[wdim]), sh(d.L), COLOURS[key], name, shapeText([exact.L, exact[wdim]]));
      maxX = Math.max(maxX, x + sw(d[wdim]) + 30);
    });
    const w = Math.max(360, Math.ceil(maxX));
    this.svg.setAttribute('viewBox', `0 0 ${w} 400`);
    this.svg.setAttribute('width', String(w));
    this.svg.replaceChildren(...nodes);
  }
}

export default {
  deps: ['text', 'text2', 'B', 'L', 'E', 'dk', 'dv', 'seed', 'pe', 'w2'],
  mount(ctx, body) {
    const dvInput = h('input', { type: 'number', class: 'al-input', id: 'ch2-dv', min: '1', max: '512', step: '1' });
    const dvMsg = h('span', { class: 'ctl-msg', role: 'alert', hidden: true });
    dvInput.addEventListener('change', () => {
      const r = checkValue('dv', dvInput.value.trim());
      dvMsg.hidden = !r.error;
      if (r.error) dvMsg.textContent = ctx.t(`err.${r.error.key}`, r.error.params);
      else ctx.set({ dv: r.value });
    });
    const dkInput = h('input', { type: 'number', class: 'al-input', id: 'ch2-dk', min: '1', max: '512', step: '1' });
    dkInput.addEventListener('change', () => {
      const r = checkValue('dk', dkInput.value.trim());
      if (!r.error) ctx.set({ dk: r.value });
    });
    const tbody = h('tbody');
    const table = h('table', { class: 'data qkv-table' },
      h('thead', null, h('tr', null, ctx.text('th', 'ch2.th.matrix', { scope: 'col' }), ctx.text('th', 'ch2.th.shape', { scope: 'col' }), ctx.text('th', 'ch2.th.role', { scope: 'col' }))),
      tbody);
    const blocks = new MatrixBlocks();
    const maps = ['q', 'k', 'v'].map((k) => ctx.heatmap({ palette: 'diverging', rowKind: 'token', colKind: 'dimension', maxSize: 230, cellMax: 20, name: `ch2_${k.toUpperCase()}` }));
    const code = codeBlock('');
    const sw = weightsSwitch(ctx, 'w2', 'ch2');
    const learnedLine = h('p', { class: 'small muted ch2-learned', hidden: true });
    const dRow = h('div', { class: 'inline-ctls' },
      h('label', { class: 'inline-ctl', for: 'ch2-dk' }, h('span', null, 'd_k'), dkInput),
      h('label', { class: 'inline-ctl', for: 'ch2-dv' }, ctx.text('span', 'ch2.dv'), dvInput), dvMsg);
    const tryRandom = ctx.tryThis(['ch2.try1', 'ch2.try2']);
    const tryLearned = ctx.tryThis(['ch2.tryL1', 'ch2.tryL2']);
    const row = (t, name, shape, role) => h('tr', null, h('td', null, h('code', null, name)), h('td', { class: 'num' }, shape), h('td', null, t(role)));

    body.append(
      ctx.text('p', 'ch2.p1'),
      formula(f.v('Q'), f.op('='), f.v('X'), f.v('W'), f.sup('Q'), h('span', { class: 'op' }, ',  '), f.v('K'), f.op('='), f.v('X'), f.v('W'), f.sup('K'), h('span', { class: 'op' }, ',  '), f.v('V'), f.op('='), f.v('X'), f.v('W'), f.sup('V')),
      ctx.text('p', 'ch2.p2'),
      sw.el,
      dRow,
      h('div', { class: 'figs' },
        learnedLine,
        h('div', { class: 'table-scroll' }, table),
        ctx.text('div', 'ch2.blocks', { class: 'panel-title' }),
        blocks.svg,
        h('div', { class: 'fig-row' }, ...maps.map((m) => m.el)),
        code),
      tryRandom,
      tryLearned,
    );

    /** The shipped model's layer-0 Q, K, V of the reader's sentence. */
    async function updateLearned(c, state) {
      const t = c.t;
      const s = learnedText(c, state, ['w2']);
      if (!s) {
        learnedLine.textContent = loadingText(c, state);
        return { loading: true };
      }
      const lab = c.lab();
      const z = await layerZero(lab, s.model, s.ids);
      const { L, E, H, D } = z;
      learnedLine.textContent = [t('ch2.learned', { model: s.name, L, E, H, D }), s.notes].filter(Boolean).join(' ');
      tbody.replaceChildren(
        row(t, 'W_Q', `[d_model, H·d_k] = ${shapeText([E, E])}`, 'ch2.role.wq'),
        row(t, 'W_K', `[d_model, H·d_k] = ${shapeText([E, E])}`, 'ch2.role.wk'),
        row(t, 'W_V', `[d_model, H·d_v] = ${shapeText([E, E])}`, 'ch2.role.wv'),
        row(t, 'Q', `[seq_len, H·d_k] = ${shapeText([L, E])}`, 'ch2.role.q'),
        row(t, 'K', `[seq_len, H·d_k] = ${shapeText([L, E])}`, 'ch2.role.k'),
        row(t, 'V', `[seq_len, H·d_v] = ${shapeText([L, E])}`, 'ch2.role.v'),
      );
      blocks.set({ L, E, dk: E, dv: E }, `X ${shapeText([L, E])} · W_Q ${shapeText([E, E])} = Q ${shapeText([L, E])}; W_K → K; W_V → V ${shapeText([L, E])}`);
      [['q', z.q, 'ch2.qL'], ['k', z.k, 'ch2.kL'], ['v', z.v, 'ch2.vL']].forEach(([, data, key], i) => {
        maps[i].setData({ data, offset: 0, rows: L, cols: E, rowLabels: s.labels, title: t(key, { L, E }), tensor: { data, shape: [L, E] }, dimNames: ['token', 'dimension'] });
      });
      code.firstChild.textContent = [
        `// the ${s.lang} model's layer 0: h.0.attn.c_attn [${E}, ${3 * E}] holds W_Q | W_K | W_V (and their biases)`,
        `const mha = lab.multiHeadAttention({ embedDim: ${E}, numHeads: ${H} }).loadStateDict(tensors, { format: 'hf-gpt2', prefix: 'h.0.' });`,
        `const { trace } = await mha.forward(ln1x /* ln_1(wte + wpe) [1, ${L}, ${E}] */, undefined, undefined, { mask: { kind: 'causal' }, trace: 'values' });`,
        `// trace linear_qkv: Q, K, V [1, ${L}, ${E}] = H = ${H} heads × d_k = ${D} side by side`,
      ].join('\n');
      return z;
    }

    return {
      async update(c, state) {
        const t = c.t;
        const learned = sw.learned(state);
        sw.update(t, state);
        dRow.hidden = learned;
        learnedLine.hidden = !learned;
        tryRandom.hidden = learned;
        tryLearned.hidden = !learned;
        if (learned) return updateLearned(c, state);
        const inp = await deriveInputs(c.lab(), state, c.cache);
        const p = await projections(c.lab(), c.objects, inp, state, c.cache);
        const { L, E, tokens } = inp;
        const { dk, dv } = p;
        if (document.activeElement !== dvInput) dvInput.value = String(dv);
        if (document.activeElement !== dkInput) dkInput.value = String(dk);
        tbody.replaceChildren(
          row(t, 'W_Q', `[d_model, d_k] = ${shapeText([E, dk])}`, 'ch2.role.wq'),
          row(t, 'W_K', `[d_model, d_k] = ${shapeText([E, dk])}`, 'ch2.role.wk'),
          row(t, 'W_V', `[d_model, d_v] = ${shapeText([E, dv])}`, 'ch2.role.wv'),
          row(t, 'Q', `[seq_len, d_k] = ${shapeText([L, dk])}`, 'ch2.role.q'),
          row(t, 'K', `[seq_len, d_k] = ${shapeText([L, dk])}`, 'ch2.role.k'),
          row(t, 'V', `[seq_len, d_v] = ${shapeText([L, dv])}`, 'ch2.role.v'),
        );
        blocks.set({ L, E, dk, dv }, `X ${shapeText([L, E])} · W_Q ${shapeText([E, dk])} = Q ${shapeText([L, dk])}; W_K ${shapeText([E, dk])} → K; W_V ${shapeText([E, dv])} → V ${shapeText([L, dv])}`);
        const labels = tokens[0];
        const spec = [['q', p.q, dk, 'ch2.q'], ['k', p.k, dk, 'ch2.k'], ['v', p.v, dv, 'ch2.v']];
        spec.forEach(([, data, w, key], i) => {
          maps[i].setData({ data, offset: 0, rows: L, cols: w, rowLabels: labels, title: t(key, { L, dk, dv }), tensor: { data: data.slice(0, L * w), shape: [L, w] }, dimNames: ['token', 'dimension'] });
        });
        code.firstChild.textContent = [
          `// d_model = ${E}, d_k = ${dk}, d_v = ${dv}`,
          `Q = X · W_Q   // [${L}, ${E}] · [${E}, ${dk}] → [${L}, ${dk}]`,
          `K = X · W_K   // [${L}, ${E}] · [${E}, ${dk}] → [${L}, ${dk}]`,
          `V = X · W_V   // [${L}, ${E}] · [${E}, ${dv}] → [${L}, ${dv}]`,
          `// W: seeded Xavier-uniform, |w| ≤ ${fmt(Math.sqrt(6 / (E + dk)), 3)}`,
        ].join('\n');
      },
    };
  },
};
