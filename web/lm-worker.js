// The Web Worker of chapter 10's live language models: owns an LmSession (lm-session.js) and
// streams its progress to the page (<attention-lab-lm-trainer>). Messages in:
//   { type: 'configure', lang, train, heldout, recipe? }   train/heldout: absolute URLs of the
//                                 corpus files; a new session from scratch → 'ready' + 'report' + 'probe'
//   { type: 'play' } | { type: 'pause' } | { type: 'step', count }
//   { type: 'probe' }             samples, head roles and maps now → 'probe'
//   { type: 'shipped' }           the shipped model (lab.pretrained(lang): en, zh or induction), the end point, on the
//                                 same held-out windows, example, prompt and seeds → 'shipped'
// Messages out: { type: 'ready', info } (LmSession.describe()), { type: 'report', report } every
// time slice (about SLICE_MS of training), { type: 'probe', probe } every PROBE_MS of training
// (and at step 0), { type: 'shipped', shipped }, { type: 'error', message }. The loop: worker-loop.js.
import { Tokenizer } from './lib/vendor/tokenizers.js';
import { pretrainedFiles } from './lib/pretrained.js';
import { LmSession, LIVE_CORPUS, probeModel, modelLoss } from './lib/train/lm-session.js';
import { serveSessionWorker } from './lib/train/worker-loop.js';

const SLICE_MS = 100;
const PROBE_MS = 3000;
let since = 0; // the last step whose loss was posted
let sinceProbe = 0; // training ms since the last probe

async function probe(w) {
  const g = w.generation;
  const p = await w.session.probe();
  if (g === w.generation) w.post({ type: 'probe', probe: p });
}

async function text(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`lm-worker: could not load ${url} (HTTP ${res.status})`);
  return res.text();
}

async function configure(w, m) {
  // The tokenizer of the model's corpus (the induction model's is the English one).
  const [files, trainText, heldoutText] = await Promise.all([pretrainedFiles(LIVE_CORPUS[m.lang] ?? m.lang), text(m.train), text(m.heldout)]);
  const dec = (b) => new TextDecoder().decode(b);
  const tokenizerJson = JSON.parse(dec(files.tokenizer));
  const tokenizer = new Tokenizer(tokenizerJson, JSON.parse(dec(files.tokenizerConfig)));
  const t0 = performance.now();
  w.session = new LmSession(w.lab, { lang: m.lang, tokenizer, tokenizerJson, trainText, heldoutText, recipe: m.recipe });
  since = 0;
  sinceProbe = 0;
  w.post({ type: 'ready', info: { ...w.session.describe(), setupMs: performance.now() - t0 } });
  w.report();
  await probe(w);
}

async function shipped(w) {
  const g = w.generation;
  const session = w.session;
  const model = await w.lab.pretrained(session.lang);
  try {
    const t0 = performance.now();
    const out = { heldOut: modelLoss(model, session.held), config: model.config, ...(await probeModel(model, session)) };
    if (g === w.generation) w.post({ type: 'shipped', shipped: { ...out, ms: performance.now() - t0 } });
  } finally {
    model.dispose();
  }
}

serveSessionWorker({
  name: 'lm-worker',
  sliceMs: SLICE_MS,
  configure,
  report(w) {
    const r = w.session.report({ since });
    since = r.step;
    return r;
  },
  async afterSlice(w, ms) {
    sinceProbe += ms;
    if (sinceProbe >= PROBE_MS) {
      sinceProbe = 0;
      await probe(w);
    }
  },
  messages: { probe, shipped },
});
