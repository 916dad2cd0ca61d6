// The shared controls panel: built from a list of specs, bound two ways to
// the store. Inputs are validated with the state schema; a bad value shows a
// message next to its control and leaves the state alone. Combinations the
// library refuses (E not divisible by H) are passed on, so the chapters can
// show the library's own message.
import { h } from '../../components/lib/dom.js';
import { checkValue } from './state.js';

export const CONTROL_SPECS = [
  { key: 'text', type: 'text', wide: true },
  { key: 'text2', type: 'text', wide: true },
  { key: 'B', type: 'number', min: 1, max: 4 },
  { key: 'L', type: 'number', min: 0, max: 512 },
  { key: 'E', type: 'number', min: 1, max: 1024 },
  { key: 'H', type: 'number', min: 1, max: 64 },
  { key: 'dk', type: 'number', min: 1, max: 512 },
  { key: 'seed', type: 'number', min: 0, max: 4294967295, reseed: true },
  { key: 'mask', type: 'select', options: ['none', 'padding', 'causal', 'both'] },
  { key: 'T', type: 'range', min: 0.05, max: 5, step: 0.05 },
  { key: 'scale', type: 'checkbox' },
  { key: 'pe', type: 'checkbox' },
  { key: 'backend', type: 'select', options: ['wasm', 'wasm-scalar', 'webgpu'] },
];

/**
 * @param {HTMLElement} form
 * @param {{get: Function, set: Function}} store
 * @param {() => Function} getT current translator
 */
export function buildControls(form, store, getT) {
  const items = new Map();
  for (const spec of CONTROL_SPECS) {
    const id = `ctl-${spec.key}`;
    const label = h('span', { class: 'ctl-label', id: `${id}-label` });
    const msg = h('span', { class: 'ctl-msg', id: `${id}-msg`, role: 'alert', hidden: true });
    let input;
    let extra = null;
    if (spec.type === 'select') {
      input = h('select', { id, name: spec.key, class: 'al-select' }, spec.options.map((o) => h('option', { value: o })));
    } else if (spec.type === 'checkbox') {
      input = h('input', { id, name: spec.key, type: 'checkbox' });
    } else if (spec.type === 'range') {
      input = h('input', { id, name: spec.key, type: 'range', min: spec.min, max: spec.max, step: spec.step });
      extra = h('output', { class: 'ctl-value', for: id });
    } else if (spec.type === 'number') {
      input = h('input', { id, name: spec.key, type: 'number', min: spec.min, max: spec.max, step: '1', inputmode: 'numeric', class: 'al-input' });
    } else {
      input = h('input', { id, name: spec.key, type: 'text', class: 'al-input', spellcheck: 'false', autocomplete: 'off', maxlength: '300' });
    }
    input.setAttribute('aria-describedby', `${id}-msg`);
    if (spec.reseed) {
      extra = h('button', { type: 'button', class: 'al-btn al-btn-icon', id: `${id}-reseed` }, '↻');
      extra.addEventListener('click', () => {
        const v = Math.floor(Math.random() * 100000);
        store.set({ seed: v });
      });
    }
    const wrap = spec.type === 'checkbox'
      ? h('div', { class: 'ctl ctl-check', dataset: { key: spec.key } }, input, h('label', { for: id }, label), msg)
      : h('div', { class: `ctl${spec.wide ? ' ctl-wide' : ''}`, dataset: { key: spec.key } }, h('label', { for: id }, label), h('div', { class: 'ctl-row' }, input, extra), msg);
    form.append(wrap);
    const item = { spec, input, label, msg, extra, wrap };
    items.set(spec.key, item);

    const commit = () => {
      let raw;
      if (spec.type === 'checkbox') raw = input.checked;
      else raw = input.value;
      if (spec.type === 'number' || spec.type === 'range') raw = raw.trim();
      const r = checkValue(spec.key, spec.type === 'range' ? Number(raw) : raw);
      if (r.error) {
        const t = getT();
        msg.textContent = t(`err.${r.error.key}`, r.error.params);
        msg.hidden = false;
        input.setAttribute('aria-invalid', 'true');
        return;
      }
      msg.hidden = true;
      input.removeAttribute('aria-invalid');
      store.set({ [spec.key]: r.value });
    };
    let timer = 0;
    if (spec.type === 'text' || spec.type === 'number') {
      input.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(commit, spec.type === 'text' ? 150 : 350);
      });
      input.addEventListener('change', () => {
        clearTimeout(timer);
        commit();
      });
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          clearTimeout(timer);
          commit();
        }
      });
    } else {
      input.addEventListener(spec.type === 'range' ? 'input' : 'change', commit);
    }
  }
  form.addEventListener('submit', (e) => e.preventDefault());
  // What the sentences become: token counts and the resulting L.
  const info = h('p', { class: 'ctl-info', id: 'ctl-info', 'aria-live': 'polite' });
  items.get('text2').wrap.after(info);

  const api = {
    items,
    /** Writes the state into the inputs (skipping the one being edited). */
    sync(state) {
      for (const [key, it] of items) {
        const v = state[key];
        if (it.spec.type === 'checkbox') it.input.checked = Boolean(v);
        else if (document.activeElement !== it.input || it.spec.type === 'select' || it.spec.type === 'range') {
          if (it.input.value !== String(v)) it.input.value = String(v);
        }
        if (it.spec.type === 'range') it.extra.textContent = Number(v).toFixed(2);
        it.msg.hidden = true;
        it.input.removeAttribute('aria-invalid');
      }
    },
    /** Shows "n tokens · L = …" under the sentences. */
    info(t, counts, L) {
      info.textContent = `${counts.map((n) => t('ctl.tokens', { n })).join(' / ')} · ${t('ctl.derivedL', { L })}`;
    },
    relabel(t) {
      for (const [key, it] of items) {
        it.label.textContent = t(`ctl.${key}`);
        if (it.spec.type === 'select') {
          for (const o of it.input.options) {
            o.textContent = o.dataset.unavailable === 'true' ? t('ctl.backend.webgpuOff') : t(`ctl.${key}.${o.value}`);
          }
        }
        if (it.spec.reseed) {
          it.extra.setAttribute('aria-label', t('ctl.reseed'));
          it.extra.title = t('ctl.reseed');
        }
      }
    },
    /** Enables or disables a backend option (e.g. WebGPU when unavailable). */
    setBackendAvailable(name, ok, t) {
      const opt = [...items.get('backend').input.options].find((o) => o.value === name);
      if (!opt) return;
      opt.disabled = !ok;
      opt.dataset.unavailable = ok ? '' : 'true';
      if (!ok && name === 'webgpu') opt.textContent = t('ctl.backend.webgpuOff');
    },
  };
  return api;
}
