// The Web Worker of chapter 10's live language models: owns an LmSession (lm-session.js) and
// streams its progress to the page (<attention-lab-lm-trainer>). Messages in:
//   { type: 'configure', lang, train, heldout, recipe? }   train/heldout: absolute URLs of the
//                                 corpus files; a new session from scratch → 'ready' + 'report' + 'probe'
//   { type: 'play' } | { type: 'pause' } | { type: 'step', count }
//   { type: 'probe' }             samples, head roles and maps now → 'probe'
//   { type: 'shipped' }           the shipped model (lab.pretrained(lang)), the end point, on the
//                                 same held-out windows, example, prompt and seeds → 'shipped'
// Messages out: { type: 'ready', info } (LmSession.describe()), { type: 'report', report } every
// time slice (about SLICE_MS of training), { type: 'probe', probe } every PROBE_MS of training
// (and at step 0), { type: 'shipped', shipped }, { type: 'error', message }.
import { init } from '../../index.js';
import { Tokenizer } from '../vendor/tokenizers.js';
import { pretrainedFiles } from '../pretrained.js';
import { LmSession, probeModel, modelLoss } from './lm-session.js';

const SLICE_MS = 100;
const PROBE_MS = 3000;
let lab = null;
let session = null;
let playing = false;
let timer = null;
let since = 0; // the last step whose loss was posted
let sinceProbe = 0; // training ms since the last probe
let generation = 0; // bumped by configure: a stale loop or probe posts nothing

const post = (msg) => self.postMessage(msg);

function report() {
  const r = session.report({ since });
  since = r.step;
  post({ type: 'report', report: r });
  if (r.stopped) playing = false;
}

async function probe() {
  const g = generation;
  const p = await session.probe();
  if (g === generation) post({ type: 'probe', probe: p });
}

async function loop() {
  timer = null;
  if (!playing || !session) return;
  const g = generation;
  try {
    const t0 = performance.now();
    session.run(SLICE_MS);
    sinceProbe += performance.now() - t0;
    report();
    if (sinceProbe >= PROBE_MS) {
      sinceProbe = 0;
      await probe();
    }
  } catch (e) {
    playing = false;
    post({ type: 'error', message: e.message });
    return;
  }
  if (playing && g === generation && !timer) timer = setTimeout(loop, 0);
}

async function text(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`lm-worker: could not load ${url} (HTTP ${res.status})`);
  return res.text();
}

async function configure(m) {
  generation++;
  playing = false;
  session?.dispose();
  session = null;
  const [files, trainText, heldoutText] = await Promise.all([pretrainedFiles(m.lang), text(m.train), text(m.heldout)]);
  const dec = (b) => new TextDecoder().decode(b);
  const tokenizerJson = JSON.parse(dec(files.tokenizer));
  const tokenizer = new Tokenizer(tokenizerJson, JSON.parse(dec(files.tokenizerConfig)));
  const t0 = performance.now();
  session = new LmSession(lab, { lang: m.lang, tokenizer, tokenizerJson, trainText, heldoutText, recipe: m.recipe });
  since = 0;
  sinceProbe = 0;
  post({ type: 'ready', info: { ...session.describe(), setupMs: performance.now() - t0 } });
  report();
  await probe();
}

async function shipped() {
  const g = generation;
  const model = await lab.pretrained(session.lang);
  try {
    const t0 = performance.now();
    const out = { heldOut: modelLoss(model, session.held), config: model.config, ...(await probeModel(model, session)) };
    if (g === generation) post({ type: 'shipped', shipped: { ...out, ms: performance.now() - t0 } });
  } finally {
    model.dispose();
  }
}

self.onmessage = async (ev) => {
  const m = ev.data;
  try {
    if (!lab) lab = await init({ backend: m.backend ?? 'auto' });
    if (m.type === 'configure') return await configure(m);
    if (!session) throw new Error('lm-worker: configure first');
    switch (m.type) {
      case 'play':
        playing = true;
        if (!timer) timer = setTimeout(loop, 0);
        break;
      case 'pause':
        playing = false;
        break;
      case 'step':
        session.run(Infinity, m.count ?? 1);
        report();
        break;
      case 'probe':
        await probe();
        break;
      case 'shipped':
        await shipped();
        break;
      default:
        throw new TypeError(`lm-worker: unknown message type ${m.type}`);
    }
  } catch (e) {
    post({ type: 'error', message: e.message });
  }
};
