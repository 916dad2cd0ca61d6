// "Your model": a weight or attention file dropped on the page is read
// locally (File.slice; nothing is uploaded). A safetensors checkpoint is
// listed from its header alone (the attention layers, with format, sizes,
// norm placement); a listed layer is loaded (only its tensors are read) into
// the library's multi-head attention and run on the page's first sentence;
// the weights are drawn by <attention-lab-model-view>. Attention arrays
// computed in Python (.npy, .npz, .safetensors, .json) are drawn as they are;
// a .npz of weights (Keras's layer.weights recipe in the README) is listed and
// run like a checkpoint. A Llama-family layer's heads, key/value heads and
// RoPE base are not in its weights: they are read from a config.json dropped
// with the file, or else guessed, said to be guessed, and editable.
// A whole Hugging Face model folder (config.json + model.safetensors or pytorch_model.bin or their
// shards + tokenizer.json) is listed from its headers and, on Load, run in a
// Web Worker on the sentence (lib/whole-model.js).
import { h, fmt } from '../../components/lib/dom.js';
import { embedBatch } from '../../components/lib/tokens.js';
import { AttentionLabModelView } from '../../components/elements/model-view-element.js';
import { openSafetensors, openTorchFile, isTorchCheckpoint, listAttentionLayers, layerTensorNames, readNpz } from '../../lib/io/index.js';
import { ATTENTION_KEYS } from '../../lib/model/families/index.js';
import { deriveTokens } from '../lib/model.js';
import { mountWholeModel, isModelFolder, droppedFiles } from '../lib/whole-model.js';

const MAX_TOKENS = 64;
const MAX_ARRAY_FILE = 256 * 2 ** 20;

function defineViewer() {
  if (typeof customElements !== 'undefined' && !customElements.get('attention-lab-model-view')) {
    customElements.define('attention-lab-model-view', AttentionLabModelView);
  }
}

const mb = (n) => (n / 2 ** 20).toFixed(n < 2 ** 20 ? 3 : 1);

/**
 * The attention fields of a Hugging Face config.json (at its top level or in
 * text_config), or null when it has no head count: { heads, kvHeads, theta,
 * ropeScaling }. transformers' defaults: num_key_value_heads = the heads,
 * rope_theta 10000.
 */
export function readConfig(json) {
  // The key names are the family tables' (web/lib/model/families/).
  const K = ATTENTION_KEYS;
  const first = (o, keys) => keys.map((k) => o[k]).find((x) => x !== undefined && x !== null);
  const hasHeads = (o) => K.numHeads.some((k) => Number.isInteger(o[k]));
  const configOf = (o) => (o && typeof o === 'object' && hasHeads(o) ? o : null);
  const c = configOf(json) ?? configOf(json?.text_config);
  if (!c) return null;
  const int = (x) => (Number.isInteger(x) && x > 0 ? x : null);
  const heads = K.numHeads.map((k) => int(c[k])).find((x) => x !== null) ?? null;
  if (!heads) return null;
  const theta = first(c, K.ropeTheta) ?? first(c.rope_parameters ?? {}, K.ropeTheta);
  const scaling = c.rope_scaling && typeof c.rope_scaling === 'object' ? String(c.rope_scaling.rope_type ?? c.rope_scaling.type ?? 'yes') : null;
  return { heads, kvHeads: int(first(c, K.numKvHeads)) ?? heads, theta: typeof theta === 'number' && theta > 0 ? theta : 10000, ropeScaling: scaling };
}

/**
 * A guess of a Llama-family layer's head size from E and the k_proj rows
 * (H_kv·D), used only without config.json and shown as a guess: 128 from
 * E = 3072 up (Llama 2/3 7–8B, Mistral 7B, Qwen2 7B), else 64, else the
 * largest power of two dividing both.
 */
export function guessHeadDim(E, kvDim) {
  const order = E >= 3072 ? [128, 64] : [64, 128];
  for (const D of [...order, 32, 16, 8, 4, 2]) if (E % D === 0 && kvDim % D === 0) return D;
  return 1;
}

/** A guess of the head count of a layer whose weights do not say it (GPT-2, BERT). */
function guessHeads(E) {
  return E % 64 === 0 ? E / 64 : E % 8 === 0 ? 8 : 1;
}

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
    const input = h('input', { type: 'file', id: 'ym-file', accept: '.safetensors,.bin,.pth,.pt,.npy,.npz,.json', multiple: true, class: 'ym-input' });
    const drop = h('label', { class: 'ym-drop', for: 'ym-file' }, ctx.text('span', 'ym.drop'), input);
    const folderInput = h('input', { type: 'file', id: 'ym-folder', webkitdirectory: true, multiple: true, class: 'ym-input' });
    const folderLabel = h('label', { class: 'ym-folder', for: 'ym-folder' }, ctx.text('span', 'ym.folder'), folderInput);
    const wholeBox = h('div', { class: 'ym-whole' });
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
    let ran = null; // { layer, heads, kvHeads, theta, source }
    let hfConfig = null; // a Hugging Face config.json dropped with the file (readConfig)
    let lastRun = null; // the last run's input, output and settings (for tests)
    let listedInfo = ''; // the listing line, before configLine()
    const stats = { bytesRead: 0 };

    body.append(ctx.text('p', 'ym.p1'), ctx.text('p', 'ym.pWhole'), ctx.text('p', 'ym.pEncDec', { id: 'ym-encdec' }), ctx.text('p', 'ym.privacy', { class: 'ym-privacy' }), drop, folderLabel, info, error, wholeBox, tableBox, ranInfo, viewer, ctx.text('p', 'ym.python'));
    const whole = mountWholeModel(ctx, wholeBox, section);

    const showError = (e) => {
      error.hidden = !e;
      error.textContent = e ? `${e.name ? `${e.name}: ` : ''}${e.message ?? e}` : '';
    };

    // Several files at once: a tokens.json (a JSON list of strings) labels the
    // arrays of the other; a config.json (a JSON object, Hugging Face's model
    // config) gives a Llama layer its heads, key/value heads and rope_theta.
    async function handleFiles(files) {
      if (isModelFolder(files)) {
        file = null;
        opened = null;
        layers = [];
        ran = null;
        tableBox.replaceChildren();
        ranInfo.textContent = '';
        viewer.hidden = true;
        showError(null);
        section.dataset.layers = '';
        info.textContent = ctx.t('ym.folderRead', { n: files.length });
        await whole.show(files);
        return;
      }
      whole.hide();
      let tokens = null;
      let cfg = null;
      const rest = [];
      for (const f of files) {
        let used = false;
        // A config.json alone is read too when a checkpoint is already listed: it applies to that.
        if ((files.length > 1 || (opened && layers.length)) && /\.json$/i.test(f.name ?? '') && f.size <= 2 ** 20) {
          try {
            const v = JSON.parse(await f.text());
            if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
              tokens = v;
              used = true;
            } else if (v && typeof v === 'object' && !Array.isArray(v) && readConfig(v)) {
              cfg = readConfig(v);
              used = true;
            }
          } catch {
            // not a token list or a config: an ordinary file
          }
        }
        if (!used) rest.push(f);
      }
      if (!rest.length && cfg && opened && layers.length) {
        hfConfig = cfg;
        ran = null;
        info.textContent = listedInfo + configLine();
        renderTable();
        return;
      }
      await handle(rest[0] ?? files[0], tokens, cfg);
    }

    async function handle(f, tokens = null, cfg = null) {
      file = f;
      hfConfig = cfg;
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
        if (/\.npz$/i.test(name) && f.size <= MAX_ARRAY_FILE && (await openNpzWeights(f))) {
          return;
        }
        if (/\.(npy|npz|json)$/i.test(name)) {
          await showArrays(f, tokens);
          return;
        }
        const t0 = performance.now();
        // A PyTorch state dict (torch.save: .bin, .pth, .pt) is told apart by its first bytes.
        const torch = isTorchCheckpoint(new Uint8Array(await f.slice(0, 4).arrayBuffer()));
        opened = await (torch ? openTorchFile : openSafetensors)(counted(f, stats));
        layers = listAttentionLayers(opened.entries);
        const ms = performance.now() - t0;
        section.dataset.layers = String(layers.length);
        section.dataset.listMs = ms.toFixed(1);
        listedInfo = t('ym.listed', { name, size: mb(f.size), n: opened.entries.length, layers: layers.length, ms: ms.toFixed(0), read: mb(stats.bytesRead) });
        info.textContent = listedInfo + configLine();
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

    // A .npz of weights (Keras's layer.weights paths, or a torch state dict):
    // listed and run like a checkpoint. False when it holds no attention layer.
    async function openNpzWeights(f) {
      let tensors;
      let found;
      try {
        tensors = readNpz(new Uint8Array(await f.arrayBuffer())).tensors;
        found = listAttentionLayers(tensors);
      } catch {
        return false;
      }
      if (!found.length) return false;
      const entries = Object.entries(tensors).map(([n, v]) => ({ name: n, dtype: v.dtype, shape: v.shape.slice() }));
      opened = { entries, read: async (names) => Object.fromEntries(names.map((n) => [n, tensors[n]])) };
      stats.bytesRead = f.size;
      layers = found;
      section.dataset.layers = String(layers.length);
      listedInfo = ctx.t('ym.npzWeights', { name: f.name ?? 'file', size: mb(f.size), n: entries.length, layers: layers.length });
      info.textContent = listedInfo + configLine();
      renderTable();
      return true;
    }

    function configLine() {
      if (!hfConfig) return '';
      return ` ${ctx.t('ym.configRead', { fields: `num_attention_heads ${hfConfig.heads}, num_key_value_heads ${hfConfig.kvHeads}, rope_theta ${hfConfig.theta}` })}`;
    }

    // What a layer runs with before the reader changes it: the weights' own
    // head count, else config.json's, else a guess (source says which).
    function defaults(l) {
      const E = l.embedDim ?? 1;
      if (l.format === 'hf-llama') {
        if (hfConfig) return { heads: hfConfig.heads, kvHeads: hfConfig.kvHeads, theta: hfConfig.theta, source: 'config' };
        const D = guessHeadDim(E, l.kvDim ?? E);
        return { heads: E / D, kvHeads: (l.kvDim ?? E) / D, theta: 10000, source: 'guess', D };
      }
      if (l.numHeads !== null && l.numHeads !== undefined) return { heads: l.numHeads, source: 'weights' };
      if (hfConfig) return { heads: hfConfig.heads, source: 'config' };
      return { heads: guessHeads(E), source: 'guess', D: E / guessHeads(E) };
    }

    function renderTable() {
      const t = ctx.t;
      const llama = layers.some((l) => l.format === 'hf-llama');
      const cols = ['ym.col.prefix', 'ym.col.format', 'ym.col.E', 'ym.col.heads', ...(llama ? ['ym.col.kv', 'ym.col.theta'] : []), 'ym.col.notes', 'ym.col.run'];
      const head = h('tr', null, cols.map((k) => h('th', { scope: 'col', text: t(k) })));
      const rows = layers.map((l, k) => {
        const d = defaults(l);
        const num = (cls, value, label, attrs = {}) => h('input', { type: 'number', class: `al-input ${cls}${d.source === 'guess' ? ' ym-guess' : ''}`, value: String(value), 'aria-label': label, dataset: { source: d.source }, ...attrs });
        const headsInput = num('ym-heads', d.heads, t('ym.headsFor', { prefix: l.prefix }), { min: '1', max: '256', disabled: d.source === 'weights' });
        const isLlama = l.format === 'hf-llama';
        const kvInput = isLlama ? num('ym-kv', d.kvHeads, t('ym.kvFor', { prefix: l.prefix }), { min: '1', max: '256' }) : null;
        const thetaInput = isLlama ? num('ym-theta', d.theta, t('ym.thetaFor', { prefix: l.prefix }), { min: '1', step: 'any' }) : null;
        const notes = [];
        if (l.error) notes.push(l.error);
        if (l.causal) notes.push(t('ym.causal'));
        if (l.norm?.placement === 'pre') notes.push(t('ym.preNorm', { kind: l.norm.kind === 'rms' ? 'RMSNorm' : 'LayerNorm' }));
        if (l.rope) notes.push(t('ym.rope'));
        if (l.kdim !== l.embedDim || l.vdim !== l.embedDim) notes.push(`kdim ${l.kdim}, vdim ${l.vdim}`);
        if (d.source === 'guess') notes.push(isLlama ? t('ym.guessLlama', { H: d.heads, D: d.D, kv: d.kvHeads, theta: d.theta }) : t('ym.guessHeads', { H: d.heads, D: d.D }));
        if (d.source === 'config') notes.push(isLlama ? t('ym.fromConfig', { H: d.heads, kv: d.kvHeads, theta: d.theta }) : t('ym.fromConfigHeads', { H: d.heads }));
        if (isLlama && hfConfig?.ropeScaling) notes.push(t('ym.ropeScaling', { type: hfConfig.ropeScaling }));
        const btn = h('button', { type: 'button', class: 'al-btn ym-run', text: t('ym.run'), disabled: Boolean(l.error), dataset: { k } });
        btn.addEventListener('click', () => {
          const heads = Number(headsInput.value);
          const kvHeads = kvInput ? Number(kvInput.value) : undefined;
          const theta = thetaInput ? Number(thetaInput.value) : undefined;
          const same = heads === d.heads && kvHeads === d.kvHeads && theta === d.theta;
          ran = { layer: l, heads, kvHeads, theta, source: same ? d.source : 'set' };
          run().catch(showError);
        });
        const cells = [h('td', null, h('code', { text: l.prefix || '(root)' })), h('td', { text: l.format }), h('td', { text: String(l.embedDim ?? '') }), h('td', null, headsInput)];
        if (llama) cells.push(h('td', null, kvInput ?? '—'), h('td', null, thetaInput ?? '—'));
        cells.push(h('td', { class: 'ym-notes', text: notes.join('; ') }), h('td', null, btn));
        return h('tr', { dataset: { prefix: l.prefix, source: d.source } }, ...cells);
      });
      tableBox.replaceChildren(h('div', { class: 'ym-table-scroll' }, h('table', { class: 'ym-table' }, h('caption', { text: t('ym.caption', { n: layers.length }) }), h('thead', null, head), h('tbody', null, rows))));
    }

    async function run() {
      if (!ran || !opened) return;
      showError(null);
      const t = ctx.t;
      const lab = ctx.lab();
      const { layer, heads, kvHeads, theta } = ran;
      const before = stats.bytesRead;
      const t0 = performance.now();
      const tensors = await opened.read(layerTensorNames(opened.entries, layer));
      const readMs = performance.now() - t0;
      const E = layer.embedDim;
      const config = { embedDim: E, numHeads: heads, kdim: layer.kdim, vdim: layer.vdim, bias: layer.bias };
      const llama = layer.format === 'hf-llama';
      if (llama) {
        // GQA + RoPE as transformers' Llama (rotate_half): the head counts and
        // rope_theta from config.json, the table's inputs, or the shown guess.
        Object.assign(config, { numKvHeads: kvHeads, rope: { base: theta, interleaved: false } });
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
        lastRun = { prefix: layer.prefix, numHeads: heads, numKvHeads: llama ? kvHeads : heads, theta: llama ? theta : null, source: ran.source, causal: Boolean(layer.causal), x: Array.from(x.data), shape: [L, E], output: Array.from(r.output.data) };
        Object.assign(section.dataset, { ranHeads: String(heads), ranKv: String(lastRun.numKvHeads), ranTheta: llama ? String(theta) : '', ranSource: ran.source });
        section.dataset.ran = layer.prefix;
        const p = { prefix: layer.prefix || '(root)', format: layer.format, E, H: heads, L, read: mb(stats.bytesRead - before), readMs: readMs.toFixed(0), size: mb(file.size), ms: fmt(fwdMs, 3), out: `[${r.output.shape}]` };
        ranInfo.textContent = llama ? t('ym.ranLlama', { ...p, kv: kvHeads, theta, source: t(`ym.src.${ran.source}`) }) : t('ym.ran', p);
      } finally {
        mha.dispose();
      }
    }

    input.addEventListener('change', () => {
      if (input.files?.length) handleFiles([...input.files]);
    });
    folderInput.addEventListener('change', () => {
      if (folderInput.files?.length) handleFiles([...folderInput.files]);
    });
    drop.addEventListener('dragover', (e) => {
      e.preventDefault();
      drop.classList.add('ym-over');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('ym-over'));
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      drop.classList.remove('ym-over');
      droppedFiles(e.dataTransfer).then((files) => {
        if (files.length) handleFiles(files);
      }, showError);
    });

    return {
      async update(_ctx, state) {
        whole.setText((state ?? ctx.state()).text);
        if (ran) await run();
      },
      setMessages() {
        if (layers.length) renderTable();
        whole.setMessages();
      },
      /** The whole-model part (lib/whole-model.js), for tests and scripts. */
      whole,
      /** For tests and scripts: handle Files as if they had been dropped together. */
      handleFiles,
      /** For tests and scripts: handle a File as if it had been dropped. */
      handle,
      /** The last run: { numHeads, numKvHeads, theta, source, x, shape, output } (for tests). */
      get lastRun() {
        return lastRun;
      },
    };
  },
};
