// The shipped models (lab.pretrained('en' | 'zh'), data/models/<lang>/) for browser tests, while
// they are still being trained: a language whose config.json or model.safetensors is not in
// data/models/ gets a stand-in, a few steps of scripts/lib/train-lm.mjs's own training on a slice
// of its corpus (small widths, the shipped context and tokenizer), written once to a temp folder.
// routeStandIns(page) answers the page's requests for those two files from the stand-in (the
// request stays on the origin: it is the same URL lab.pretrained fetches), and nodePretrained(lab,
// lang) loads the same files in Node as lab.pretrained does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';

const STAND_IN_ROOT = path.join(os.tmpdir(), 'attention-lab-pretrained-stand-in');
const MODEL_FILES = ['config.json', 'model.safetensors'];
const SMALL = { embedDim: 32, numLayers: 2, numHeads: 4, ffnDim: 64, batch: 4, steps: 6, horizon: 6, warmup: 1, lr: 1e-2, minLr: 1e-3, evalEvery: 1000, evalWindows: 4 };

const shippedDir = (lang) => path.join(REPO_ROOT, 'data', 'models', lang);
export const isShipped = (lang) => MODEL_FILES.every((f) => fs.existsSync(path.join(shippedDir(lang), f)));

let ownLab = null;
/** A wasm lab for training a stand-in when the caller passes none (kept for the process). */
async function fixtureLab() {
  if (!ownLab) {
    const { init } = await import('../../web/node.js');
    ownLab = init({ backend: 'wasm' });
  }
  return ownLab;
}

/** The folder whose config.json and model.safetensors the tests use for `lang`. */
export async function modelDir(lab, lang) {
  if (isShipped(lang)) return shippedDir(lang);
  lab ??= await fixtureLab();
  const dir = path.join(STAND_IN_ROOT, lang);
  if (MODEL_FILES.every((f) => fs.existsSync(path.join(dir, f)))) return dir;
  const { train, RECIPES } = await import('../../scripts/lib/train-lm.mjs');
  const slice = (split, lines) => fs.readFileSync(path.join(REPO_ROOT, 'data', 'corpora', lang, `${split}.txt`), 'utf8').split('\n').slice(0, lines).join('\n') + '\n';
  const run = train({ lab, lang, recipe: { ...SMALL, context: RECIPES[lang].context }, trainText: slice('train', 200), heldoutText: slice('heldout', 8) });
  run.model.dispose();
  fs.mkdirSync(dir, { recursive: true });
  for (const f of MODEL_FILES) fs.writeFileSync(path.join(dir, f), run.files[f]);
  return dir;
}

/** The Model lab.pretrained(lang) gives, from the files the page will get. */
export async function nodePretrained(lab, lang) {
  if (isShipped(lang)) return lab.pretrained(lang);
  const dir = await modelDir(lab, lang);
  const tokDir = shippedDir(lang);
  const read = (d, f) => fs.readFileSync(path.join(d, f));
  const tokenizer = read(tokDir, 'tokenizer.json').toString('utf8');
  const model = await lab.loadModel({ config: read(dir, 'config.json').toString('utf8'), weights: new Uint8Array(read(dir, 'model.safetensors')), tokenizer });
  // as web/lib/pretrained.js: the tokenizer rebuilt with tokenizer_config.json
  const { Tokenizer } = await import('../../web/lib/vendor/tokenizers.js');
  model._tokenizer._tok = new Tokenizer(JSON.parse(tokenizer), JSON.parse(read(tokDir, 'tokenizer_config.json').toString('utf8')));
  return model;
}

/**
 * Answers the page's requests for stand-in files (call before page.goto; lab: optional, for
 * training a missing stand-in). Returns the stand-in languages.
 */
export async function routeStandIns(page, lab, langs = ['en', 'zh']) {
  const standing = [];
  for (const lang of langs) {
    if (isShipped(lang)) continue;
    const dir = await modelDir(lab, lang);
    standing.push(lang);
    await page.route((u) => u.pathname.startsWith(`/data/models/${lang}/`) && MODEL_FILES.includes(u.pathname.split('/').pop()), (route) => {
      const name = new URL(route.request().url()).pathname.split('/').pop();
      return route.fulfill({ status: 200, body: fs.readFileSync(path.join(dir, name)), contentType: name.endsWith('.json') ? 'application/json' : 'application/octet-stream', headers: { 'cross-origin-resource-policy': 'same-origin' } });
    });
  }
  return standing;
}
