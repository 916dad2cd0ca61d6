// "Your model", whole: a Hugging Face model folder (config.json,
// model.safetensors or shards + index, tokenizer.json) dropped or chosen on
// the page. It is listed from config.json and the safetensors headers alone
// (components/lib/model-client.js listModel: nothing else is read); Load
// streams the weights into a Web Worker (WorkerModel: lab.loadModel there,
// with a progress bar and Cancel), and <attention-lab-model-view> runs the
// model on the page's sentence: tokens, all layers × heads, the head view,
// next tokens, Generate and the head roles. Files never leave the computer.
import { h } from '../../components/lib/dom.js';
import { listModel, isModelFolder, WorkerModel } from '../../components/lib/model-client.js';

export { isModelFolder };

const mib = (n) => (n / 2 ** 20).toFixed(n < 2 ** 20 ? 3 : 1);

/**
 * The files of a drop: DataTransfer items read as entries (a dropped folder
 * is walked, its files named by their path), else the plain file list.
 * Must be called inside the drop event (items are only readable there).
 */
export function droppedFiles(dataTransfer) {
  const items = [...(dataTransfer?.items ?? [])];
  const entries = items.map((it) => (it.kind === 'file' && typeof it.webkitGetAsEntry === 'function' ? it.webkitGetAsEntry() : null));
  const plain = [...(dataTransfer?.files ?? [])];
  if (!entries.length || entries.some((e) => !e) || !entries.some((e) => e.isDirectory)) return Promise.resolve(plain);
  const out = [];
  const fileOf = (entry) => new Promise((resolve, reject) => entry.file(resolve, reject));
  const readAll = (dir) => new Promise((resolve, reject) => {
    const reader = dir.createReader();
    const all = [];
    const next = () => reader.readEntries((batch) => {
      if (!batch.length) resolve(all);
      else {
        all.push(...batch);
        next();
      }
    }, reject);
    next();
  });
  const walk = async (entry, depth) => {
    if (entry.isFile) out.push(await fileOf(entry));
    else if (entry.isDirectory && depth < 2) for (const e of await readAll(entry)) await walk(e, depth + 1);
  };
  return (async () => {
    for (const e of entries) await walk(e, 0);
    return out;
  })();
}

/**
 * Mounts the whole-model part of "Your model" into `box`. Returns
 * { show(files), setText(text), setMessages(), hide(), listing, model,
 * progressEvents, load(), cancel() }.
 */
export function mountWholeModel(ctx, box, section) {
  const listBox = h('div', { class: 'ym-model-list' });
  const loadBtn = h('button', { type: 'button', class: 'al-btn ym-load' });
  const cancelBtn = h('button', { type: 'button', class: 'al-btn ym-cancel', hidden: true });
  // A bar drawn by a compositor transform, with the ARIA progressbar values.
  const progressFill = h('span', { class: 'ym-progress-fill' });
  const progress = h('div', { class: 'ym-progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': '0', hidden: true }, progressFill);
  const progressText = h('span', { class: 'ym-progress-text', 'aria-live': 'polite' });
  const loadInfo = h('p', { class: 'ym-load-info', role: 'status', 'aria-live': 'polite' });
  const error = h('p', { class: 'ym-error ym-model-error', role: 'alert', hidden: true });
  const viewer = document.createElement('attention-lab-model-view');
  viewer.id = 'ym-model-view';
  viewer.setAttribute('eager', '');
  viewer.setAttribute('view', 'model');
  viewer.hidden = true;
  box.append(listBox, h('div', { class: 'ym-load-row' }, loadBtn, cancelBtn, progress, progressText), loadInfo, error, viewer);
  box.hidden = true;

  let listing = null;
  let model = null;
  let abort = null;
  let listError = null;
  const state = { progressEvents: [], loadMs: null };

  const showError = (e) => {
    error.hidden = !e;
    error.textContent = e ? `${e.name ? `${e.name}: ` : ''}${e.message ?? e}` : '';
  };

  function renderListing() {
    const t = ctx.t;
    if (!listing) {
      listBox.replaceChildren();
      return;
    }
    const L = listing;
    const rows = [
      ['ym.m.type', L.modelType],
      ['ym.m.layers', String(L.numLayers)],
      ['ym.m.heads', String(L.numHeads)],
      ['ym.m.kvHeads', String(L.numKvHeads)],
      ['ym.m.embed', String(L.embedDim)],
      ['ym.m.vocab', String(L.vocabSize)],
      ['ym.m.positions', String(L.maxPositions)],
      ['ym.m.parameters', L.parameters.toLocaleString('en-US')],
      ['ym.m.bytes', t('ym.m.bytesValue', { mb: mib(L.bytes), bytes: L.bytes.toLocaleString('en-US'), n: L.shards.length })],
      ['ym.m.dtype', L.dtypes.join(', ')],
      L.format === 'gguf'
        ? ['ym.m.kept', t(L.fits ? 'ym.m.keptValue' : 'ym.m.tooLarge', { mb: mib(L.keptBytes), limit: mib(L.heapLimit) })]
        : ['ym.m.memory', L.heapLimit === null ? t('ym.m.memoryNoLimit', { mb: mib(L.float32Bytes) }) : t(L.fits ? 'ym.m.memoryValue' : 'ym.m.tooLarge', { mb: mib(L.float32Bytes), limit: mib(L.heapLimit) })],
      L.format === 'gguf' && !L.tokenizerBytes
        ? ['ym.m.tokenizer', t(L.hasTokenizer ? 'ym.m.ggufTokenizer' : 'ym.m.noTokenizer')]
        : ['ym.m.tokenizer', L.tokenizerBytes === null ? t('ym.m.noTokenizer') : t('ym.m.tokenizerValue', { mb: mib(L.tokenizerBytes) })],
    ];
    // A GGUF file: each tensor group (llama.cpp's role: attn_q, ffn_down, …)
    // with its types and the bytes kept (text from the file, shown as text).
    const groups = (L.quantGroups ?? []).map((g) => h('tr', { dataset: { group: g.role } },
      h('th', { scope: 'row', text: g.role }),
      h('td', { text: t('ym.m.groupValue', { types: g.types.join(' + '), n: g.tensors, file: mib(g.bytes), kept: mib(g.keptBytes), how: t(g.quantized ? 'ym.m.asBlocks' : 'ym.m.asFloats') }) })));
    listBox.replaceChildren(h('table', { class: 'ym-table ym-model-table' },
      h('caption', { text: t('ym.m.caption', { ms: L.ms.toFixed(0), read: (L.headerBytes / 1024).toFixed(1) }) }),
      h('tbody', null, rows.map(([k, v]) => h('tr', { dataset: { key: k.slice(5) } }, h('th', { scope: 'row', text: t(k) }), h('td', { text: v })))),
      groups.length ? h('tbody', { class: 'ym-groups' }, [h('tr', null, h('td', { colspan: '2', class: 'ym-groups-head', text: t('ym.m.groups') })), ...groups]) : null));
    loadBtn.textContent = t('ym.m.load');
    cancelBtn.textContent = t('ym.m.cancel');
    loadBtn.disabled = Boolean(abort) || !L.hasTokenizer;
    progress.setAttribute('aria-label', t('ym.m.progressLabel'));
  }

  async function show(files) {
    const t0 = performance.now();
    cancel();
    disposeModel();
    box.hidden = false;
    showError(null);
    loadInfo.textContent = '';
    progress.hidden = true;
    progressText.textContent = '';
    listing = null;
    listError = null;
    section.dataset.model = 'listing';
    try {
      // The heap's limit as the library reports it (lab.heapLimit of the wasm build the worker runs).
      const heapLimit = await Promise.resolve(ctx.labFor?.('wasm')).then((l) => l?.heapLimit ?? null, () => null);
      listing = await listModel(files, { heapLimit });
      section.dataset.listMs = (performance.now() - t0).toFixed(1);
      section.dataset.model = 'listed';
      renderListing();
      if (!listing.hasTokenizer) showError(new Error(ctx.t('ym.m.needTokenizer')));
    } catch (e) {
      listError = e;
      section.dataset.model = 'error';
      listBox.replaceChildren();
      showError(e);
    }
  }

  function disposeModel() {
    viewer.model = null;
    viewer.hidden = true;
    model?.dispose();
    model = null;
  }

  let last = null;
  let drawQueued = false;
  let textAt = 0;
  function drawProgress(p, final = false) {
    if (!p) return;
    const f = p.loaded / Math.max(1, p.total);
    // Four times a second, and at the end: each visual change of this long
    // page is a frame the page's thread must commit (50–300 ms here when
    // drawn every frame with a <progress>).
    const now = performance.now();
    if (final || f === 0 || now - textAt > 250) {
      textAt = now;
      progressFill.style.setProperty('transform', `scaleX(${f.toFixed(4)})`);
      progress.setAttribute('aria-valuenow', (100 * f).toFixed(0));
      progressText.textContent = ctx.t('ym.m.progress', { loaded: mib(p.loaded), total: mib(p.total), pct: (100 * f).toFixed(0) });
    }
  }

  async function load() {
    if (!listing || abort) return;
    const t = ctx.t;
    disposeModel();
    showError(null);
    abort = new AbortController();
    state.progressEvents = [];
    const t0 = performance.now();
    section.dataset.model = 'loading';
    loadBtn.disabled = true;
    cancelBtn.hidden = false;
    progress.hidden = false;
    drawProgress({ loaded: 0, total: 1 });
    progressText.textContent = '';
    loadInfo.textContent = t('ym.m.loading');
    try {
      model = await WorkerModel.load(listing.files, {
        signal: abort.signal,
        onProgress: (p) => {
          state.progressEvents.push({ loaded: p.loaded, total: p.total, ms: performance.now() - t0 });
          last = p;
          // Drawn at most once a frame, and then at most 4 times a second (drawProgress).
          if (!drawQueued) {
            drawQueued = true;
            requestAnimationFrame(() => {
              drawQueued = false;
              drawProgress(last);
            });
          }
        },
      });
      state.loadMs = performance.now() - t0;
      drawProgress(last, true);
      section.dataset.model = 'loaded';
      section.dataset.loadMs = state.loadMs.toFixed(0);
      loadInfo.textContent = t('ym.m.loaded', { ms: state.loadMs.toFixed(0), type: model.config.modelType, params: model.config.parameters.toLocaleString('en-US'), mb: mib(model.config.bytes) });
      viewer.hidden = false;
      viewer.setAttribute('text', ctx.state().text);
      viewer.model = model;
    } catch (e) {
      model = null;
      const cancelled = e?.name === 'AbortError';
      section.dataset.model = cancelled ? 'cancelled' : 'error';
      loadInfo.textContent = cancelled ? t('ym.m.cancelled') : '';
      if (!cancelled) showError(e);
    } finally {
      abort = null;
      cancelBtn.hidden = true;
      progress.hidden = section.dataset.model !== 'loaded';
      renderListing();
    }
  }

  function cancel() {
    abort?.abort();
  }

  loadBtn.addEventListener('click', () => load());
  cancelBtn.addEventListener('click', () => cancel());

  return {
    show,
    load,
    cancel,
    hide() {
      cancel();
      disposeModel();
      listing = null;
      box.hidden = true;
      section.dataset.model = '';
    },
    setText(text) {
      if (model && viewer.getAttribute('text') !== text) viewer.setAttribute('text', text);
    },
    setMessages() {
      renderListing();
      if (listError) showError(listError);
      if (model) viewer.requestRender(); // the element reads the page's lang when it renders
    },
    viewer,
    get listing() {
      return listing;
    },
    get model() {
      return model;
    },
    get progressEvents() {
      return state.progressEvents;
    },
  };
}
