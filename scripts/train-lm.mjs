#!/usr/bin/env node
// Trains issue 22's character-level GPT-2 models, and issue 33's induction model, with the library
// (2 threads) and writes the shipped files, deterministically (scripts/lib/train-lm.mjs):
//
//   npm run train:lm -- --lang en|zh|induction
//                                          → data/models/<lang>/{config.json, model.safetensors (F16)}
//                                            (tokenizer.json is scripts/char-tokenizer.mjs's, kept;
//                                            induction: the English one, copied),
//                                            scripts/lib/train-lm-logs/<lang>.json (the log, with
//                                            the induction curve of every held-out evaluation)
//   … --check [N]                          → trains N steps (default 50) and compares their losses
//                                            with the committed log, bit for bit; writes nothing
//   … --out DIR                            → writes there instead (and no log, unless --log FILE)
//   … --set key=value[,key=value]          → overrides recipe fields (for trials; --out needed)
//   … --max-seconds S                      → stops after S seconds (for trials)
//   … --quick                              → skips the final full evaluation (for trials)
//   … --checkpoints DIR                    → also writes DIR/step-<t>/ (the F16 files and the losses) at
//                                            every held-out evaluation: the schedule ends at the
//                                            recipe's horizon, so step t's files are a t-step run's
//   … --threads N                          → default 2 (the results are the same bits for any N)
//
// It prints the held-out loss (a fixed subset of the held-out windows) every evalEvery steps, and at
// the end the full evaluation of docs/models.md on the saved F16 files, loaded with lab.loadModel.

import fs from 'node:fs';
import path from 'node:path';
import { execSync } from 'node:child_process';
import { init } from '../web/node.js';
import { RECIPES, CORPUS, ROOT, train, evaluateModel, sha256 } from './lib/train-lm.mjs';

function parseArgs(argv) {
  const a = { lang: null, check: 0, out: null, set: {}, maxSeconds: 0, threads: 2, quick: false, log: null, checkpoints: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => argv[++i];
    if (k === '--lang') a.lang = v();
    else if (k === '--check') a.check = /^\d+$/.test(argv[i + 1] ?? '') ? Number(v()) : 50;
    else if (k === '--out') a.out = v();
    else if (k === '--max-seconds') a.maxSeconds = Number(v());
    else if (k === '--threads') a.threads = Number(v());
    else if (k === '--quick') a.quick = true;
    else if (k === '--log') a.log = v();
    else if (k === '--checkpoints') a.checkpoints = v();
    else if (k === '--set') {
      for (const kv of v().split(',')) {
        const [key, val] = kv.split('=');
        a.set[key] = /^\[/.test(val) ? JSON.parse(val) : Number(val);
      }
    } else throw new Error(`train-lm: unknown argument ${k}`);
  }
  if (!Object.hasOwn(RECIPES, a.lang ?? '')) throw new Error('train-lm: --lang en, --lang zh or --lang induction');
  if ((Object.keys(a.set).length || a.maxSeconds) && !a.out && !a.check) throw new Error('train-lm: --set and --max-seconds are for trials: give --out DIR');
  return a;
}

function gitHead() {
  try {
    const head = execSync('git rev-parse HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain --untracked-files=no -- src bindings web/lib', { cwd: ROOT, encoding: 'utf8' }).trim();
    return { commit: head, coreDirty: dirty.length > 0 };
  } catch {
    return { commit: null, coreDirty: null };
  }
}

const args = parseArgs(process.argv.slice(2));
const logFile = args.log ? path.resolve(args.log) : path.join(ROOT, 'scripts', 'lib', 'train-lm-logs', `${args.lang}.json`);
// The wasm this run trains with (the core's bits), read before it loads.
const wasmSha256 = sha256(fs.readFileSync(new URL('../web/dist/attention_lab_threads.wasm', import.meta.url)));
const head = gitHead();
const lab = await init({ backend: 'wasm', threads: args.threads });
const say = (line) => console.log(line);

if (args.check) {
  // The first N steps of the logged run (the same recipe, so the same lr schedule), loss by loss.
  const ref = JSON.parse(fs.readFileSync(logFile, 'utf8'));
  const n = Math.min(args.check, ref.loss.length);
  const { history, model } = train({ lab, lang: args.lang, recipe: ref.recipe, stopAfter: n, log: say });
  model.dispose();
  let same = 0;
  let worst = 0;
  let firstDiff = 0;
  for (let i = 0; i < n; i++) {
    if (history.loss[i] === ref.loss[i]) same++;
    else if (!firstDiff) firstDiff = i + 1;
    worst = Math.max(worst, Math.abs(history.loss[i] - ref.loss[i]));
  }
  console.log(`${same}/${n} step losses bit-identical to ${path.relative(ROOT, logFile)} (trained at ${ref.commit}${ref.coreDirty ? ' + uncommitted core changes' : ''}, wasm ${ref.wasmSha256.slice(0, 12)}; this wasm ${wasmSha256.slice(0, 12)})${same === n ? '' : `; first different step ${firstDiff}, max |Δloss| ${worst.toExponential(2)}`}`);
  lab.dispose();
  process.exit(same === n ? 0 : 1);
}

const t0 = performance.now();
const cpu0 = process.cpuUsage();
let checkpoint;
if (args.checkpoints) {
  const dir = path.resolve(args.checkpoints);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'run.json'), `${JSON.stringify({ lang: args.lang, set: args.set, threads: args.threads, ...head, wasmSha256, started: new Date().toISOString() })}\n`);
  checkpoint = (t, files, history) => {
    const d = path.join(dir, `step-${t}`);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'config.json'), files['config.json']);
    fs.writeFileSync(path.join(d, 'model.safetensors'), files['model.safetensors']);
    const cpu = process.cpuUsage(cpu0);
    fs.writeFileSync(path.join(d, 'history.json'), `${JSON.stringify({ step: t, seconds: (performance.now() - t0) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6, ...history })}\n`);
  };
}
const run = train({ lab, lang: args.lang, recipe: args.set, log: say, maxSeconds: args.maxSeconds, checkpoint });
const outDir = args.out ? path.resolve(args.out) : path.join(ROOT, 'data', 'models', args.lang);
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'config.json'), run.files['config.json']);
fs.writeFileSync(path.join(outDir, 'model.safetensors'), run.files['model.safetensors']);
const tokDir = path.join(ROOT, 'data', 'models', CORPUS[args.lang]);
if (outDir !== tokDir) {
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(tokDir, f), path.join(outDir, f));
}
const cpu = process.cpuUsage(cpu0);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
console.log(`training: ${run.steps} steps, ${(run.seconds / 60).toFixed(1)} min wall, ${(cpuSeconds / 60).toFixed(1)} CPU-min (all threads); load average at the end ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
run.model.dispose();
if (args.quick) {
  console.log(`${run.steps} steps in ${(run.seconds / 60).toFixed(1)} min`);
  lab.dispose();
  process.exit(0);
}

// The shipped files, as a user gets them.
const read = (f) => fs.readFileSync(path.join(outDir, f));
const model = await lab.loadModel({ config: read('config.json').toString('utf8'), weights: read('model.safetensors'), tokenizer: read('tokenizer.json').toString('utf8') });
const ev = await evaluateModel(model, args.lang);
const baselines = JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'corpora', 'baselines.json'), 'utf8'))[CORPUS[args.lang]];
for (const split of ['heldout', 'unseen']) {
  const b = baselines[split].bigram;
  console.log(`${split}: ${ev[split].loss.toFixed(4)} nats/char = ${(ev[split].loss / b.loss).toFixed(3)}× bigram (${b.loss.toFixed(4)}); top-1 ${(100 * ev[split].accuracy).toFixed(2)}% (bigram ${(100 * b.accuracy).toFixed(2)}%)`);
}
// The shipped files' induction scores (model.headScores.repeated, the live length and seeds 0-3).
const indLength = Math.floor((model.config.maxPositions - 1) / 2);
const inductionFinal = [0, 1, 2, 3].map((seed) => {
  const s = model.headScores.repeated({ length: indLength, seed });
  let k = 0;
  s.induction.data.forEach((v, i) => { if (v > s.induction.data[k]) k = i; });
  const H = model.config.numHeads;
  return { seed, length: indLength, best: s.induction.data[k], layer: Math.floor(k / H), head: k % H, previousTokenBest: Math.max(...s.previousToken.data) };
});
for (const f of inductionFinal) console.log(`induction (headScores.repeated, length ${f.length}, seed ${f.seed}): best head L${f.layer} H${f.head} ${f.best.toFixed(4)}; best previous-token head ${f.previousTokenBest.toFixed(4)}`);
const bytes = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].reduce((s, f) => s + fs.statSync(path.join(outDir, f)).size, 0);
console.log(`files: ${bytes.toLocaleString('en-US')} bytes (${(bytes / 1048576).toFixed(3)} MiB); safetensors sha256 ${sha256(run.files['model.safetensors'])}; ${run.steps} steps in ${(run.seconds / 60).toFixed(1)} min (whole run ${((performance.now() - t0) / 60000).toFixed(1)} min)`);
model.dispose();

if (!args.out || args.log) {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = {
    lang: args.lang, recipe: run.recipe, steps: run.steps, seconds: run.seconds, cpuSeconds, threads: args.threads,
    wholeRunSeconds: (performance.now() - t0) / 1000, ...head, wasmSha256, safetensorsSha256: sha256(run.files['model.safetensors']), bytes,
    evaluation: ev, inductionFinal, heldoutSubset: run.history.heldout, induction: run.history.induction, loss: run.history.loss,
  };
  fs.writeFileSync(logFile, `${JSON.stringify(log)}\n`);
  console.log(`log: ${path.relative(ROOT, logFile)}`);
}
lab.dispose();
