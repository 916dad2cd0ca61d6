// In-page checks of whole models on the webgpu backend, imported by
// tests/browser/models-webgpu.browser.mjs on a page served by the harness.
// One webgpu lab: each model's forward (on the GPU, web/lib/webgpu-model.js)
// against forwardSync (the same Model's wasm copy: the wasm backend's block
// graph) and, for the tiny checkpoints of tests/golden/models/, against the
// float64 references of tests/reference/hf_models.py. Returns plain data
// (max differences, counters); the Node side asserts.
import { init } from '/web/index.js';

/** max |a - b| over flat arrays or nested ones ([layer][head][L][L], [L][V]); Infinity on a length or NaN mismatch. */
function maxDiff(a, b) {
  const fa = Float64Array.from(a.flat ? a.flat(Infinity) : a);
  const fb = Float64Array.from(b.flat ? b.flat(Infinity) : b);
  if (fa.length !== fb.length) return Infinity;
  let m = 0;
  for (let i = 0; i < fa.length; i++) {
    const d = Math.abs(fa[i] - fb[i]);
    if (!(d <= m)) m = d; // NaN propagates as NaN
  }
  return m;
}

const cat = (list) => {
  const n = list.reduce((s, x) => s + x.data.length, 0);
  const out = new Float32Array(n);
  let o = 0;
  for (const x of list) {
    out.set(x.data, o);
    o += x.data.length;
  }
  return out;
};

/** GPU vs wasm (and vs `want`, the float64 case): { logits, attentions (worst layer), hidden, shapes }. */
function compare(g, w, want) {
  const shapes = JSON.stringify([g.logits?.shape, g.attentions.map((a) => a.shape), g.hiddenStates.shape])
    === JSON.stringify([w.logits?.shape, w.attentions.map((a) => a.shape), w.hiddenStates.shape]);
  const r = {
    shapes,
    ids: JSON.stringify(g.ids) === JSON.stringify(w.ids),
    logits: g.logits ? maxDiff(g.logits.data, w.logits.data) : (w.logits ? Infinity : 0),
    attentions: Math.max(...g.attentions.map((a, l) => maxDiff(a.data, w.attentions[l].data))),
    hidden: maxDiff(g.hiddenStates.data, w.hiddenStates.data),
  };
  if (want) {
    r.golden = {
      logits: want.logits ? maxDiff(g.logits.data, want.logits) : 0,
      attentions: maxDiff(cat(g.attentions), want.attentions),
      hidden: maxDiff(g.hiddenStates.data, want.hidden_states),
      // the wasm copy's own distance, for scale
      wasmLogits: want.logits ? maxDiff(w.logits.data, want.logits) : 0,
    };
  }
  return r;
}

const bytes = async (url) => {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
};

/**
 * @param {{ name: string, folder?: string, file?: string, shards?: string[] }[]} goldens folders of
 *   tests/golden/models/ (folder: when name is a variant; file: its weights, model.safetensors)
 * @param {string} text the input of lab.pretrained('en')
 */
export async function modelParity(goldens, text) {
  const t0 = performance.now();
  const lab = await init({ backend: 'webgpu' });
  const backend = lab._backend;
  const persistent0 = backend.poolStats().persistentBytes;
  const out = { backend: lab.backend, models: {}, times: {} };
  for (const { name, folder = name, file = 'model.safetensors', shards } of goldens) {
    const dir = `/tests/golden/models/${folder}/`;
    const expected = await (await fetch(`${dir}expected.json`)).json();
    const weights = shards
      ? [...await Promise.all(shards.map(async (f) => new File([await bytes(dir + f)], f))), new File([await bytes(`${dir}model.safetensors.index.json`)], 'model.safetensors.index.json')]
      : await bytes(dir + file);
    const t = performance.now();
    const model = await lab.loadModel({ config: await bytes(`${dir}config.json`), weights, tokenizer: await bytes(`${dir}tokenizer.json`) });
    const c0 = backend.counters();
    const cases = [];
    for (const c of expected.cases) {
      const g = await model.forward(c.ids, { attentions: true, hiddenStates: true });
      cases.push(compare(g, model.forwardSync(c.ids, { attentions: true, hiddenStates: true }), c));
    }
    const c1 = backend.counters();
    // Without attentions: the fused (flash) kernel; the same logits.
    const ids = expected.cases[0].ids;
    const flash = await model.forward(ids, { attentions: false });
    const wasm = model.forwardSync(ids, { attentions: false });
    const r = {
      cases,
      submissionsPerForward: (c1.submissions - c0.submissions) / expected.cases.length,
      flashLogits: flash.logits ? maxDiff(flash.logits.data, wasm.logits.data) : maxDiff(flash.hiddenStates.data, wasm.hiddenStates.data),
      flashAttentionsNull: flash.attentions === null,
      gpuBytes: model._gpu?.bytes ?? 0,
      wasmBytes: model.config.bytes,
      parameters: model.config.parameters,
    };
    if (name === 'bert' || folder === 'modernbert') {
      // the MLM head and [MASK] predictions stay the shared ones (fillMask on the wasm copy)
      r.fillMask = (await model.fillMask('the [MASK] sat .', { k: 1 })).length;
    }
    model.dispose();
    r.disposedThrows = await model.forward(ids).then(() => false, (e) => /dispose/i.test(String(e)));
    out.models[name] = r;
    out.times[name] = Math.round(performance.now() - t);
  }
  out.persistentAfterDispose = backend.poolStats().persistentBytes - persistent0;

  // The shipped model, by text.
  let t = performance.now();
  const en = await lab.pretrained('en');
  backend.trimPool();
  backend.resetPoolStats();
  const g = await en.forward(text, { attentions: true, hiddenStates: true });
  const pool = backend.poolStats();
  const w = en.forwardSync(text, { attentions: true, hiddenStates: true });
  out.pretrained = {
    ...compare(g, w, null), length: g.ids.length, tokens: JSON.stringify(g.tokens) === JSON.stringify(w.tokens),
    gpuBytes: en._gpu.bytes, wasmBytes: en.config.bytes, poolPeakBytes: pool.peakBytes,
  };
  out.times.pretrained = Math.round(performance.now() - t);
  out.fallbackCalls = backend.counters().fallbackCalls;

  // After a device loss the wasm copy answers forward (the same numbers as forwardSync).
  t = performance.now();
  await backend.simulateDeviceLoss();
  const lost = await en.forward(text, { attentions: true, hiddenStates: true });
  out.afterLoss = { ...compare(lost, w, null), fallbackCalls: backend.counters().fallbackCalls - out.fallbackCalls, backend: lab.backend };
  const next = await en.nextTokens(text, { k: 3 });
  out.afterLoss.nextTokens = next.length;
  en.dispose();
  out.times.afterLoss = Math.round(performance.now() - t);
  out.times.total = Math.round(performance.now() - t0);
  return out;
}

/** max |a − b| / max(1, |b|) over flat arrays or nested ones (the jest helpers' maxRel); Infinity on a length or NaN mismatch. */
function maxRel(a, b) {
  const fa = Float64Array.from(a.flat ? a.flat(Infinity) : a);
  const fb = Float64Array.from(b.flat ? b.flat(Infinity) : b);
  if (fa.length !== fb.length) return Infinity;
  let m = 0;
  for (let i = 0; i < fa.length; i++) {
    const d = Math.abs(fa[i] - fb[i]) / Math.max(1, Math.abs(fb[i]));
    if (!(d <= m)) m = d; // NaN propagates as NaN
  }
  return m;
}

/** The worst of `f` over the layers' attentions (GPU `g` vs `w`'s [layer] arrays). */
const worstLayer = (g, w, f) => Math.max(...g.attentions.map((a, l) => f(a.data, w[l].data ?? w[l])));

/**
 * The decoder families of issue 32 (tests/reference/hf_families.py's folders,
 * no tokenizer): per case the GPU forward against forwardSync (the wasm copy)
 * and against the float64 case, as max relative differences (|Δ| / max(1, |ref|))
 * and max absolute ones; the fused (flash) kernel's logits without attentions.
 * @param {{ name: string, folder?: string, expected?: string }[]} goldens folders of
 *   tests/golden/models/ (folder: the weights' folder when name is a variant; expected:
 *   another reference file of it, whose config_patch applies)
 */
export async function familyParity(goldens) {
  const t0 = performance.now();
  const lab = await init({ backend: 'webgpu' });
  const backend = lab._backend;
  const out = { backend: lab.backend, models: {}, times: {} };
  for (const { name, folder = name, expected: file = 'expected.json' } of goldens) {
    const t = performance.now();
    const dir = `/tests/golden/models/${folder}/`;
    const main = await (await fetch(`${dir}expected.json`)).json();
    const ref = file === 'expected.json' ? main : await (await fetch(dir + file)).json();
    const config = { ...await (await fetch(`${dir}config.json`)).json(), ...ref.config_patch };
    const model = await lab.loadModel({ config, weights: await bytes(dir + main.dtype_files[0]), tokenizer: null });
    const c0 = backend.counters();
    const cases = [];
    for (const c of ref.cases) {
      const g = await model.forward(c.ids, { attentions: true, hiddenStates: true });
      const w = model.forwardSync(c.ids, { attentions: true, hiddenStates: true });
      const shapes = JSON.stringify([g.logits.shape, g.attentions.map((a) => a.shape), g.hiddenStates.shape])
        === JSON.stringify([w.logits.shape, w.attentions.map((a) => a.shape), w.hiddenStates.shape]);
      cases.push({
        length: c.ids.length,
        shapes,
        wasm: {
          logits: maxRel(g.logits.data, w.logits.data),
          attentions: worstLayer(g, w.attentions, maxRel),
          hidden: maxRel(g.hiddenStates.data, w.hiddenStates.data),
        },
        golden: {
          logits: maxRel(g.logits.data, c.logits),
          attentions: worstLayer(g, c.attentions, maxRel),
          hidden: maxRel(g.hiddenStates.data, c.hidden_states),
          absLogits: maxDiff(g.logits.data, c.logits),
          // the wasm copy's own distance, for scale
          wasmLogits: maxRel(w.logits.data, c.logits),
        },
      });
    }
    const c1 = backend.counters();
    const ids = ref.cases[0].ids;
    const flash = await model.forward(ids, { attentions: false });
    out.models[name] = {
      cases,
      submissionsPerForward: (c1.submissions - c0.submissions) / ref.cases.length,
      flashLogits: maxRel(flash.logits.data, model.forwardSync(ids, { attentions: false }).logits.data),
      flashAttentionsNull: flash.attentions === null,
      gpuBytes: model._gpu?.bytes ?? 0,
      parameters: model.config.parameters,
      dtype: main.dtype,
      half: main.dtype === 'F16' || main.dtype === 'BF16',
    };
    model.dispose();
    out.times[name] = Math.round(performance.now() - t);
  }
  out.fallbackCalls = backend.counters().fallbackCalls;
  out.times.total = Math.round(performance.now() - t0);
  return out;
}

/**
 * The modernbert folder's F32 file with the biases its config leaves out added
 * (mlp_bias: Wi's [gate | up] bias → gateBias's ffn.bg and ffn.b1, Wo's;
 * classifier_bias: head.dense's), values drawn here: a safetensors file
 * written from the folder's header. No float64 reference has these values:
 * the GPU is checked against the wasm block graph.
 */
async function modernBertWithBiases() {
  const dir = '/tests/golden/models/modernbert/';
  const config = { ...await (await fetch(`${dir}config.json`)).json(), mlp_bias: true, classifier_bias: true };
  const file = await bytes(`${dir}model.safetensors`);
  const n = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + n)));
  const data = file.subarray(8 + n);
  const F = config.intermediate_size;
  const E = config.hidden_size;
  const extra = [['head.dense.bias', E]];
  for (let l = 0; l < config.num_hidden_layers; l++) extra.push([`model.layers.${l}.mlp.Wi.bias`, 2 * F], [`model.layers.${l}.mlp.Wo.bias`, E]);
  let end = data.length;
  const added = [];
  extra.forEach(([name, count], k) => {
    const v = new Float32Array(count);
    for (let i = 0; i < count; i++) v[i] = 0.3 * Math.sin(1.7 * i + 0.9 * k);
    header[name] = { dtype: 'F32', shape: [count], data_offsets: [end, end + 4 * count] };
    end += 4 * count;
    added.push(new Uint8Array(v.buffer));
  });
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + end);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  out.set(data, 8 + head.length);
  let at = 8 + head.length + data.length;
  for (const a of added) {
    out.set(a, at);
    at += a.length;
  }
  return { config, weights: out };
}

/** ModernBERT with every MLP and MLM-dense bias (gateBias, mlmBias): the GPU forward against forwardSync. */
export async function biasParity() {
  const lab = await init({ backend: 'webgpu' });
  const { config, weights } = await modernBertWithBiases();
  const model = await lab.loadModel({ config, weights, tokenizer: null });
  const ids = (await (await fetch('/tests/golden/models/modernbert/expected.json')).json()).cases[0].ids;
  const g = await model.forward(ids, { attentions: true, hiddenStates: true });
  const w = model.forwardSync(ids, { attentions: true, hiddenStates: true });
  // Against the folder's own weights without the biases: they move the logits (so they are read).
  const plain = await lab.loadModel({ config: { ...config, mlp_bias: false, classifier_bias: false }, weights: await bytes('/tests/golden/models/modernbert/model.safetensors'), tokenizer: null });
  const out = {
    gateBias: model._t.getWeights()['blocks.0.ffn.bg'] !== undefined,
    logits: maxRel(g.logits.data, w.logits.data),
    attentions: worstLayer(g, w.attentions, maxRel),
    hidden: maxRel(g.hiddenStates.data, w.hiddenStates.data),
    moved: maxDiff(g.logits.data, plain.forwardSync(ids).logits.data),
    fallbackCalls: lab._backend.counters().fallbackCalls,
  };
  model.dispose();
  plain.dispose();
  return out;
}
