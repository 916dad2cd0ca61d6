// npm run bench -- --only interp — issue 33's 'Speed' row: the interpretability calls on a
// GPT-2-small-shaped model (generated weights, bench/lm-bench.mjs ensureLmWeights: 12 layers,
// E 768, H 12, V 50257), ours on wasm SIMD with --threads (default 2), for a --length-token
// text (default 32):
//
//   forward      model.forwardSync(ids, { attentions: false }) (logits of every position)
//   forward+att  the same with the attention maps
//   logitLens    model.logitLens(ids) (k 5)                       target ≤ 1.5 × forward
//   headScores   model.headScores(ids)                             target ≤ 1.2 × forward+att
//   attribute    model.attribute(ids, { target, baseline })        (no target)
//   patch heads  model.patch({ …, over: 'heads' }): 144 heads      target ≤ 10 s
//
//   node --no-liftoff bench/interp-bench.mjs [--threads 2] [--length 32] [--runs 3]
//        [--layers N] [--vocab V] (a smaller model, for a quick look) [--json FILE]
//
// Medians of --runs after one warm-up call (patch: --patch-runs, default 1). The targets are
// defined for the default shape and 2 threads; a smaller model prints the same table as a
// smoke run.
import fs from 'node:fs';
import os from 'node:os';
import { argValue, median } from './common.mjs';
import { LM_CONFIG, ensureLmWeights, promptIds } from './lm-bench.mjs';

const now = () => performance.now();

export async function runInterpBench(argv) {
  const value = (name, dflt) => argValue(argv, name, dflt);
  const opts = {
    threads: Number(value('--threads', os.cpus().length >= 2 ? 2 : 1)),
    length: Number(value('--length', 32)),
    runs: Number(value('--runs', 3)),
    patchRuns: Number(value('--patch-runs', 1)),
    layers: Number(value('--layers', LM_CONFIG.n_layer)),
    vocab: Number(value('--vocab', LM_CONFIG.vocab_size)),
    json: value('--json', ''),
  };
  const config = { ...LM_CONFIG, n_layer: opts.layers, vocab_size: opts.vocab, bos_token_id: opts.vocab - 1, eos_token_id: opts.vocab - 1 };
  const files = ensureLmWeights({ config });
  const { nodeEnv } = await import('./node-env.mjs');
  const lab = await nodeEnv.loadOurs('wasm', opts.threads);
  const model = await lab.loadModel({ config: JSON.parse(fs.readFileSync(files.config, 'utf8')), weights: fs.readFileSync(files.weights) });
  const ids = promptIds(opts.length, opts.vocab);
  const corrupted = ids.map((t, i) => (i === Math.floor(opts.length / 2) ? (t + 1) % opts.vocab : t));
  const V = opts.vocab;
  const last = model.forwardSync(ids, { attentions: false }).logits.data.subarray((opts.length - 1) * V);
  const order = Array.from(last.keys()).sort((a, b) => last[b] - last[a]);
  const [target, baseline] = order;
  const time = (f, runs) => {
    f();
    const t = [];
    for (let r = 0; r < runs; r++) {
      const a = now();
      f();
      t.push(now() - a);
    }
    return median(t);
  };
  const ms = {
    forward: time(() => model.forwardSync(ids, { attentions: false }), opts.runs),
    forwardAtt: time(() => model.forwardSync(ids, { attentions: true }), opts.runs),
    logitLens: time(() => model.logitLens(ids), opts.runs),
    headScores: time(() => model.headScores(ids), opts.runs),
    attribute: time(() => model.attribute(ids, { target, baseline }), opts.runs),
    patchHeads: time(() => model.patch({ clean: ids, corrupted, target, baseline, over: 'heads' }), opts.patchRuns),
  };
  model.dispose();
  lab.dispose();
  const heads = opts.layers * LM_CONFIG.n_head;
  const rows = [
    ['forward', ms.forward, '', ''],
    ['forward + attentions', ms.forwardAtt, '', ''],
    ['logitLens (k 5)', ms.logitLens, `${(ms.logitLens / ms.forward).toFixed(2)} × forward`, '≤ 1.5 ×'],
    ['headScores', ms.headScores, `${(ms.headScores / ms.forwardAtt).toFixed(2)} × forward+att`, '≤ 1.2 ×'],
    ['attribute', ms.attribute, `${(ms.attribute / ms.forward).toFixed(2)} × forward`, ''],
    [`patch heads (${heads})`, ms.patchHeads, `${(ms.patchHeads / 1000).toFixed(2)} s`, '≤ 10 s'],
  ];
  console.log(`interp bench: gpt2 ${opts.layers}x768 H12 V${opts.vocab}, L ${opts.length}, wasm SIMD, ${opts.threads} thread(s), median of ${opts.runs}`);
  console.log('| call | ms | measure | target |\n|---|---:|---|---|');
  for (const [name, t, m, goal] of rows) console.log(`| ${name} | ${t.toFixed(1)} | ${m} | ${goal} |`);
  const full = opts.layers === LM_CONFIG.n_layer && opts.vocab === LM_CONFIG.vocab_size && opts.length === 32 && opts.threads === 2;
  if (!full) console.log('(not the issue\'s shape: GPT-2 small, L 32, 2 threads; the targets do not apply)');
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify({ opts, ms }, null, 1) + '\n');
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(await runInterpBench(process.argv.slice(2)));
