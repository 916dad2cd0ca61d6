// "Your model": a weight or attention file dropped on the page is read
// locally (File.slice; nothing is uploaded). A safetensors checkpoint is
// listed from its header alone (the attention layers, with format, sizes,
// norm placement); a listed layer is loaded (only its tensors are read) into
// the library's multi-head attention and run on the page's first sentence;
// the weights are drawn by <attention-lab-model-view>. Attention arrays
// computed in Python (.npy, .npz, .safetensors, .json) are drawn as they are.
import { h, fmt } from '../../components/lib/dom.js';
import { embedBatch } from '../../components/lib/tokens.js';
import { AttentionLabModelView } from '../../components/elements/model-view-element.js';
import { openSafetensors, listAttentionLayers, layerTensorNames } from '../../lib/io/index.js';
import { deriveTokens } from '../lib/model.js';

const MAX_TOKENS = 64;
const MAX_ARRAY_FILE = 256 * 2 ** 20;

function defineViewer() {
  if (typeof customElements !== 'undefined' && !customElements.get('attention-lab-model-view')) {
    customElements.define('attention-lab-model-view', AttentionLabModelView);
  }
}

const mb = (n) => (n / 2 ** 20).toFixed(n < 2 ** 20 ? 3 : 1);

/** A Blob that counts the bytes read through slice() (shown to the reader). */
function counted(file, stats) {
  return {
    get size() {
      return file.size;
    },
    slice(a, b) {
      stats.bytesRead += Math.max(0, Math.min(b ?? file.size, file.size) - (a ?? 0));
      return file.slice(a, b);
    },
  };
}

export default {
  deps: ['text', 'seed'],
  mount(ctx, body, section) {
    defineViewer();
    const input = h('input', { type: 'file', id: 'ym-file', accept: '.safetensors,.npy,.npz,.json', multiple: true, class: 'ym-input' });
    const drop = h('label', { class: 'ym-drop', for: 'ym-file' }, ctx.text('span', 'ym.drop'), input);
    const info = h('p', { class: 'ym-info', role: 'status', 'aria-live': 'polite' });
    const error = h('p', { class: 'ym-error', role: 'alert', hidden: true });
    const tableBox = h('div', { class: 'ym-layers' });
    const ranInfo = h('p', { class: 'ym-ran', 'aria-live': 'polite' });
    const viewer = document.createElement('attention-lab-model-view');
    viewer.id = 'ym-view';
    viewer.setAttribute('eager', '');
    viewer.setAttribute('view', 'head');
    viewer.hidden = true;
    let file = null;
    let opened = null;
    let layers = [];
    let ran = null; // { layer, heads }
    const stats = { bytesRead: 0 };

    body.append(ctx.text('p', 'ym.p1'), ctx.text('p', 'ym.privacy', { class: 'ym-privacy' }), drop, info, error, tableBox, ranInfo, viewer, ctx.text('p', 'ym.python'));

    const showError = (e) => {
      error.hidden = !e;
      error.textContent = e ? `${e.name ? `${e.name}: ` : ''}${e.message ?? e}` : '';
    };

    // Several files at once: a tokens.json (a JSON list of strings) labels the arrays of the other.
    async function handleFiles(files) {
      let tokens = null;
      let main = files[0];
      if (files.length > 1) {
        for (const f of files) {
          if (!/\.json$/i.test(f.name ?? '') || f.size > 2 ** 20) continue;
          try {
            const list = JSON.parse(await f.text());
            if (Array.isArray(list) && list.every((x) => typeof x === 'string')) {
              tokens = list;
              main = files.find((g) => g !== f);
              break;
            }
          } catch {
            // not a token list: an ordinary file
          }
        }
      }
      await handle(main, tokens);
    }

    async function handle(f, tokens = null) {
      file = f;
      opened = null;
      layers = [];
      ran = null;
      stats.bytesRead = 0;
      tableBox.replaceChildren();
      ranInfo.textContent = '';
      viewer.hidden = true;
      showError(null);
      section.dataset.layers = '';
      const t = ctx.t;
      const name = f.name ?? 'file';
      try {
        if (/\.(npy|npz|json)$/i.test(name)) {
          await showArrays(f, tokens);
          return;
        }
        const t0 = performance.now();
        opened = await openSafetensors(counted(f, stats));
        layers = listAttentionLayers(opened.entries);
        const ms = performance.now() - t0;
        section.dataset.layers = String(layers.length);
        section.dataset.listMs = ms.toFixed(1);
        info.textContent = t('ym.listed', { name, size: mb(f.size), n: opened.entries.length, layers: layers.length, ms: ms.toFixed(0), read: mb(stats.bytesRead) });
        if (layers.length) renderTable();
        else if (f.size <= MAX_ARRAY_FILE) await showArrays(f, tokens);
        else info.textContent += ` ${t('ym.noLayers')}`;
      } catch (e) {
        info.textContent = t('ym.failed', { name });
        showError(e);
      }
    }

    async function showArrays(f, tokens) {
      const t = ctx.t;
      viewer.setAttribute('view', 'model');
      viewer.hidden = false;
      viewer.tokens = tokens;
      const d = await viewer.load(f);
      section.dataset.arrays = `${d.layers}x${d.heads}x${d.lq}x${d.lk}`;
      info.textContent = t('ym.arrays', { name: f.name ?? 'file', layers: d.layers, heads: d.heads, L: d.lq });
    }

    function guessHeads(E) {
      return E % 64 === 0 ? E / 64 : E % 8 === 0 ? 8 : 1;
    }

    function renderTable() {
      const t = ctx.t;
      const head = h('tr', null, ['ym.col.prefix', 'ym.col.format', 'ym.col.E', 'ym.col.heads', 'ym.col.notes', 'ym.col.run'].map((k) => h('th', { scope: 'col', text: t(k) })));
      const rows = layers.map((l, k) => {
        const headsInput = h('input', { type: 'number', class: 'al-input ym-heads', min: '1', max: '256', value: String(l.numHeads ?? guessHeads(l.embedDim ?? 1)), 'aria-label': t('ym.headsFor', { prefix: l.prefix }), disabled: l.numHeads !== null && l.numHeads !== undefined });
        const notes = [];
        if (l.error) notes.push(l.error);
        if (l.causal) notes.push(t('ym.causal'));
        if (l.norm?.placement === 'pre') notes.push(t('ym.preNorm', { kind: l.norm.kind === 'rms' ? 'RMSNorm' : 'LayerNorm' }));
        if (l.rope) notes.push(t('ym.rope'));
        if (l.kdim !== l.embedDim || l.vdim !== l.embedDim) notes.push(`kdim ${l.kdim}, vdim ${l.vdim}`);
        const btn = h('button', { type: 'button', class: 'al-btn ym-run', text: t('ym.run'), disabled: Boolean(l.error), dataset: { k } });
        btn.addEventListener('click', () => {
          ran = { layer: l, heads: Number(headsInput.value) };
          run().catch(showError);
        });
        return h('tr', { dataset: { prefix: l.prefix } }, h('td', null, h('code', { text: l.prefix || '(root)' })), h('td', { text: l.format }), h('td', { text: String(l.embedDim ?? '') }), h('td', null, headsInput), h('td', { text: notes.join('; ') }), h('td', null, btn));
      });
      tableBox.replaceChildren(h('div', { class: 'ym-table-scroll' }, h('table', { class: 'ym-table' }, h('caption', { text: t('ym.caption', { n: layers.length }) }), h('thead', null, head), h('tbody', null, rows))));
    }

    async function run() {
      if (!ran || !opened) return;
      showError(null);
      const t = ctx.t;
      const lab = ctx.lab();
      const { layer, heads } = ran;
      const before = stats.bytesRead;
      const t0 = performance.now();
      const tensors = await opened.read(layerTensorNames(opened.entries, layer));
      const readMs = performance.now() - t0;
      const E = layer.embedDim;
      const config = { embedDim: E, numHeads: heads, kdim: layer.kdim, vdim: layer.vdim, bias: layer.bias };
      if (layer.format === 'hf-llama') {
        // GQA + RoPE as transformers' Llama: k/v_proj rows = numKvHeads·D; rope_theta is
        // not in the weights (10000 for Llama 2; config.json says for others).
        Object.assign(config, { numKvHeads: layer.kvDim / (E / heads), rope: { base: 10000, interleaved: false } });
      }
      const mha = lab.multiHeadAttention(config);
      try {
        mha.loadStateDict(tensors, { format: layer.format, prefix: layer.prefix });
        const tokens = deriveTokens(ctx.state()).raw[0].slice(0, MAX_TOKENS);
        const L = Math.max(1, tokens.length);
        const seed = ctx.state().seed;
        const embed = async (width) => ({ data: embedBatch([tokens], L, width, seed, (await lab.positionalEncoding(L, width)).data), shape: [L, width] });
        const x = await embed(E);
        const k = layer.kdim === E ? x : await embed(layer.kdim);
        const v = layer.vdim === E ? x : await embed(layer.vdim);
        const t1 = performance.now();
        const r = await mha.forward(x, k, v, { mask: layer.causal ? { kind: 'causal' } : undefined });
        const fwdMs = performance.now() - t1;
        viewer.hidden = false;
        viewer.setAttribute('view', 'head');
        viewer.tokens = tokens;
        viewer.attention = { data: r.weights.data, shape: [1, ...r.weights.shape] };
        section.dataset.ran = layer.prefix;
        ranInfo.textContent = t('ym.ran', { prefix: layer.prefix || '(root)', format: layer.format, E, H: heads, L, read: mb(stats.bytesRead - before), readMs: readMs.toFixed(0), size: mb(file.size), ms: fmt(fwdMs, 3), out: `[${r.output.shape}]` });
      } finally {
        mha.dispose();
      }
    }

    input.addEventListener('change', () => {
      if (input.files?.length) handleFiles([...input.files]);
    });
    drop.addEventListener('dragover', (e) => {
      e.preventDefault();
      drop.classList.add('ym-over');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('ym-over'));
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      drop.classList.remove('ym-over');
      const files = [...(e.dataTransfer?.files ?? [])];
      if (files.length) handleFiles(files);
    });

    return {
      async update() {
        if (ran) await run();
      },
      setMessages() {
        if (layers.length) renderTable();
      },
      /** For tests and scripts: handle a File as if it had been dropped. */
      handle,
    };
  },
};
