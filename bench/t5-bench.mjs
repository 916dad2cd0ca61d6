// npm run bench -- --only lm (after the GPT-2 table; --model t5 for this one
// alone): issue 34's speed report, a t5-small-shaped encoder-decoder on both
// engines.
//
//   node --no-liftoff bench/t5-bench.mjs [--threads 1,2] [--repeats N] [--source 64] [--gen 32]
//        [--ff relu | gated-gelu] [--layers N] [--vocab V] (smaller, for a quick look) [--json FILE]
//
// The model has t5-small's shape (6 + 6 layers, d_model 512, 8 heads, d_kv
// 64, d_ff 2048, vocabulary 32128, 32 buckets, max distance 128) with the
// original T5's relu DenseReluDense and its tied head (lm_head = shared,
// rescaled by d_model^-0.5); --ff gated-gelu gives v1.1's gated FFN and an
// untied lm_head instead. Weights are generated with transformers'
// T5PreTrainedModel._init_weights standard deviations (factor 1: shared
// 1.0, q (d_model·d_kv)^-½, k/v/wi d_model^-½, o (H·d_kv)^-½, wo d_ff^-½,
// relative_attention_bias d_model^-½; layer norms 1 + 0.05·normal), seeded,
// written once as a safetensors folder under
// $TMPDIR/attention-lab-lm-bench/t5-… (ATTNLAB_LM_CACHE=DIR elsewhere),
// never in the repository.
//
// The task: encode 64 seeded source ids, then decode 32 tokens greedily from
// decoder_start_token_id (the arg max each step; every step one token on a
// key/value cache; the encoder's cross keys and values projected once).
//   ours  lab.loadModel of the folder (EncoderDecoderModel): Model._encode
//         (transformerRun of the encoder, then SetMemory's cross projections)
//         and Model._extend one token a step, an arg-max loop; beside it the
//         public model.generate (temperature 0), timed the same way
//   ORT   onnxruntime-web (wasm EP, graphOptimizationLevel all) on two graphs
//         of the same weights built by bench/onnx-models.mjs
//         (buildT5EncoderOnnx: the encoder plus every layer's cross K/V;
//         buildT5DecoderOnnx: the decoder with past, logits of the last
//         position), session.run + logits.data, an arg-max loop
// Before timing, both engines' greedy tokens must be equal and the logits of
// every step within 1e-3 (max abs); the run fails otherwise.
// Timing: one process per thread count (pinned as lm-bench.mjs: 1 thread →
// core 1), both engines loaded in it; one warm-up task each, then --repeats
// (default 7) rounds, the engines interleaved (the order alternating
// each round); the verdict is ours ÷ ORT on the medians of the total task
// time (target ≤ 0.75 at 1 thread), with the fastest round of each beside it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { argValue, median } from './common.mjs';
import { normals, promptIds, LM_CACHE, pinned, pinFor, fmt, pad, lpad } from './lm-bench.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const T5_TARGET = 0.75;

export const T5_CONFIG = Object.freeze({
  architectures: ['T5ForConditionalGeneration'],
  d_ff: 2048,
  d_kv: 64,
  d_model: 512,
  decoder_start_token_id: 0,
  dense_act_fn: 'relu',
  eos_token_id: 1,
  feed_forward_proj: 'relu',
  initializer_factor: 1.0,
  is_encoder_decoder: true,
  is_gated_act: false,
  layer_norm_epsilon: 1e-6,
  model_type: 't5',
  n_positions: 512,
  num_decoder_layers: 6,
  num_heads: 8,
  num_layers: 6,
  pad_token_id: 0,
  relative_attention_max_distance: 128,
  relative_attention_num_buckets: 32,
  tie_word_embeddings: true,
  torch_dtype: 'float32',
  vocab_size: 32128,
});

/** The tensors of T5ForConditionalGeneration in the hub's names: [name, shape, std, mean]. */
export function t5TensorList(c) {
  const E = c.d_model, H = c.num_heads, D = c.d_kv, HD = H * D, F = c.d_ff, V = c.vocab_size;
  const gated = c.feed_forward_proj.startsWith('gated-');
  const list = [['shared.weight', [V, E], 1.0, 0]];
  const ln = (name) => list.push([name, [E], 0.05, 1]);
  for (const [stack, n] of [['encoder', c.num_layers], ['decoder', c.num_decoder_layers]]) {
    for (let l = 0; l < n; l++) {
      const p = `${stack}.block.${l}.layer.`;
      const attn = [['0.SelfAttention', 0]];
      if (stack === 'decoder') attn.push(['1.EncDecAttention', 1]);
      for (const [name, i] of attn) {
        list.push([`${p}${name}.q.weight`, [HD, E], (E * D) ** -0.5, 0], [`${p}${name}.k.weight`, [HD, E], E ** -0.5, 0],
          [`${p}${name}.v.weight`, [HD, E], E ** -0.5, 0], [`${p}${name}.o.weight`, [E, HD], HD ** -0.5, 0]);
        if (l === 0 && i === 0) list.push([`${p}0.SelfAttention.relative_attention_bias.weight`, [c.relative_attention_num_buckets, H], E ** -0.5, 0]);
        ln(`${p}${i}.layer_norm.weight`);
      }
      const f = `${p}${attn.length}.`;
      if (gated) list.push([`${f}DenseReluDense.wi_0.weight`, [F, E], E ** -0.5, 0], [`${f}DenseReluDense.wi_1.weight`, [F, E], E ** -0.5, 0]);
      else list.push([`${f}DenseReluDense.wi.weight`, [F, E], E ** -0.5, 0]);
      list.push([`${f}DenseReluDense.wo.weight`, [E, F], F ** -0.5, 0]);
      ln(`${f}layer_norm.weight`);
    }
    ln(`${stack}.final_layer_norm.weight`);
  }
  if (c.tie_word_embeddings === false) list.push(['lm_head.weight', [V, E], 1.0, 0]);
  return list;
}

/** Writes config.json and model.safetensors (F32) once into a folder under LM_CACHE; returns the paths. */
export function ensureT5Weights({ config = T5_CONFIG, seed = 1, dir } = {}) {
  const tag = `${config.feed_forward_proj}-${config.num_layers}+${config.num_decoder_layers}x${config.d_model}-v${config.vocab_size}-s${seed}`;
  dir ??= path.join(LM_CACHE, `t5-${tag}`);
  const files = { dir, config: path.join(dir, 'config.json'), weights: path.join(dir, 'model.safetensors') };
  const stamp = path.join(dir, '.done');
  if (fs.existsSync(stamp)) return files;
  fs.mkdirSync(dir, { recursive: true });
  const list = t5TensorList(config);
  const header = {};
  let offset = 0;
  for (const [name, shape] of list) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  header.__metadata__ = { format: 'pt', generator: `attention-lab bench/t5-bench.mjs seed ${seed}` };
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const fd = fs.openSync(`${files.weights}.tmp`, 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.writeSync(fd, len);
  fs.writeSync(fd, json);
  const next = normals(seed);
  for (const [, shape, std, mean] of list) {
    const a = new Float32Array(shape.reduce((x, y) => x * y, 1));
    for (let i = 0; i < a.length; i++) a[i] = mean + std * next();
    fs.writeSync(fd, new Uint8Array(a.buffer));
  }
  fs.closeSync(fd);
  fs.renameSync(`${files.weights}.tmp`, files.weights);
  fs.writeFileSync(files.config, JSON.stringify(config, null, 2) + '\n');
  fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
  return files;
}

// ---- child: both engines, one thread count -------------------------------------

const now = () => performance.now();

function argmax(a) {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

async function child(spec) {
  const { nodeEnv } = await import('./node-env.mjs');
  const { buildT5EncoderOnnx, buildT5DecoderOnnx, readSafetensorsF32 } = await import('./onnx-models.mjs');
  const config = JSON.parse(fs.readFileSync(spec.files.config, 'utf8'));
  const ids = spec.ids;
  const G = spec.gen;
  const start = config.decoder_start_token_id;
  const N = config.num_decoder_layers, H = config.num_heads, D = config.d_kv;

  // ours
  const lab = await nodeEnv.loadOurs('wasm', spec.threads);
  let t0 = now();
  let weights = fs.readFileSync(spec.files.weights);
  const model = await lab.loadModel({ config, weights });
  weights = null;
  const oursLoadMs = now() - t0;
  const where = 'lm-bench t5';
  const prompt = Int32Array.from(ids);
  const ours = (keep, forced = null) => {
    const owner = Symbol('bench');
    const a = now();
    model._encode(where, prompt, owner);
    const enc = now() - a;
    const got = [];
    const logits = [];
    let lg = model._extend(where, 0, Int32Array.of(start), owner);
    for (;;) {
      if (keep) logits.push(lg);
      const id = forced ? forced[got.length] : argmax(lg);
      got.push(id);
      if (got.length === G) break;
      lg = model._extend(where, got.length, [id], owner);
    }
    return { total: now() - a, encode: enc, ids: got, logits };
  };
  const oursPublic = async () => {
    const a = now();
    const got = [];
    for await (const t of model.generate(ids, { maxNewTokens: G, temperature: 0 })) got.push(t.id);
    return { total: now() - a, ids: got };
  };

  // ORT
  const ort = await nodeEnv.loadOrt(spec.threads);
  t0 = now();
  const tensors = readSafetensorsF32(fs.readFileSync(spec.files.weights));
  const opts = { executionProviders: ['wasm'], graphOptimizationLevel: 'all', intraOpNumThreads: spec.threads, interOpNumThreads: 1 };
  let bytes = buildT5EncoderOnnx(config, tensors);
  const encSession = await ort.InferenceSession.create(bytes, opts);
  bytes = buildT5DecoderOnnx(config, tensors);
  const decSession = await ort.InferenceSession.create(bytes, opts);
  bytes = null;
  const ortLoadMs = now() - t0;
  const empty = new ort.Tensor('float32', new Float32Array(0), [1, H, 0, D]);
  const idsT = (a) => new ort.Tensor('int64', BigInt64Array.from(a.map(BigInt)), [1, a.length]);
  const srcT = idsT(ids);
  const ortTask = async (keep, forced = null) => {
    const a = now();
    const enc = await encSession.run({ input_ids: srcT });
    const encMs = now() - a;
    const feeds = { input_ids: idsT([start]) };
    for (let l = 0; l < N; l++) {
      feeds[`past_key_${l}`] = empty;
      feeds[`past_value_${l}`] = empty;
      feeds[`cross_key_${l}`] = enc[`cross_key_${l}`];
      feeds[`cross_value_${l}`] = enc[`cross_value_${l}`];
    }
    const got = [];
    const logits = [];
    for (;;) {
      const o = await decSession.run(feeds);
      const lg = o.logits.data;
      if (keep) logits.push(Float32Array.from(lg));
      const id = forced ? forced[got.length] : argmax(lg);
      got.push(id);
      if (got.length === G) break;
      feeds.input_ids = idsT([id]);
      for (let l = 0; l < N; l++) {
        feeds[`past_key_${l}`] = o[`present_key_${l}`];
        feeds[`past_value_${l}`] = o[`present_value_${l}`];
      }
    }
    return { total: now() - a, encode: encMs, ids: got, logits };
  };

  // Agreement first (also the warm-up of each).
  const a = ours(true);
  const b = await ortTask(true);
  const p = await oursPublic();
  // Teacher-forced too: the random tied head repeats its input token under
  // greedy decoding, so a second pass feeds seeded varied tokens (every step's
  // logits compared again).
  const fa = ours(true, spec.forced);
  const fb = await ortTask(true, spec.forced);
  const diff = (x, y) => {
    let m = 0;
    for (let s = 0; s < Math.min(x.length, y.length); s++) {
      for (let i = 0; i < x[s].length; i++) m = Math.max(m, Math.abs(x[s][i] - y[s][i]));
    }
    return m;
  };
  const same = (x, y) => x.length === y.length && x.every((t, i) => t === y[i]);
  const agreement = {
    maxAbsLogits: Math.max(diff(a.logits, b.logits), diff(fa.logits, fb.logits)), greedyMaxAbs: diff(a.logits, b.logits), forcedMaxAbs: diff(fa.logits, fb.logits),
    steps: Math.min(a.logits.length, b.logits.length), sameTokens: same(a.ids, b.ids), publicSame: same(p.ids, a.ids), ours: a.ids, ort: b.ids, publicIds: p.ids,
  };

  // Rounds, interleaved.
  const rounds = [];
  for (let r = 0; r < spec.repeats; r++) {
    const row = {};
    const order = r % 2 ? ['ort', 'ours', 'public'] : ['ours', 'ort', 'public'];
    for (const e of order) {
      const c = process.cpuUsage();
      const res = e === 'ours' ? ours(false) : e === 'ort' ? await ortTask(false) : await oursPublic();
      const d = process.cpuUsage(c);
      row[e] = { total: res.total, encode: res.encode, cpu: (d.user + d.system) / 1000 };
    }
    rounds.push(row);
  }
  model.dispose();
  await encSession.release();
  await decSession.release();
  return { threads: spec.threads, oursLoadMs, ortLoadMs, agreement, rounds, ortVersion: ort.env.versions?.web ?? ort.env.versions?.common, labThreads: lab.threads };
}

// ---- driver ----------------------------------------------------------------------

// (pinning and the table's formats: lm-bench.mjs's pinned, pinFor, fmt, pad, lpad)

export async function runT5Bench(argv) {
  const value = (name, dflt) => argValue(argv, name, dflt);
  const opts = {
    threads: value('--threads', '1').split(',').map(Number),
    repeats: Number(value('--repeats', argv.includes('--quick') ? 3 : 7)),
    source: Number(value('--source', 64)),
    gen: Number(value('--gen', 32)),
    ff: value('--ff', 'relu'),
    layers: Number(value('--layers', T5_CONFIG.num_layers)),
    vocab: Number(value('--vocab', T5_CONFIG.vocab_size)),
    seed: Number(value('--seed', 1)),
  };
  if (!['relu', 'gated-gelu'].includes(opts.ff)) throw new Error(`t5-bench: --ff relu or gated-gelu, got ${opts.ff}`);
  const config = {
    ...T5_CONFIG, num_layers: opts.layers, num_decoder_layers: opts.layers, vocab_size: opts.vocab,
    ...(opts.ff === 'gated-gelu' ? { feed_forward_proj: 'gated-gelu', dense_act_fn: 'gelu_new', is_gated_act: true, tie_word_embeddings: false } : {}),
  };
  const tw = now();
  const files = ensureT5Weights({ config, seed: opts.seed });
  const weightsMs = now() - tw;
  const ids = promptIds(opts.source, config.vocab_size, 11);
  const started = new Date();
  const cpu = `${os.cpus()[0]?.model ?? 'unknown'} ×${os.cpus().length}`;
  console.log(`\nattention-lab encoder-decoder benchmark (issue 34) — t5-small shape (${config.num_layers}+${config.num_decoder_layers} layers, d_model ${config.d_model}, H ${config.num_heads}, d_kv ${config.d_kv}, d_ff ${config.d_ff}, V ${config.vocab_size}, ${config.feed_forward_proj}, ${config.tie_word_embeddings === false ? 'untied lm_head' : 'tied head'}), generated weights (seed ${opts.seed}, F32)`);
  console.log(`weights: ${files.weights} (${(fs.statSync(files.weights).size / 2 ** 20).toFixed(0)} MiB${weightsMs > 1000 ? `, written in ${(weightsMs / 1000).toFixed(1)} s` : ', cached'})`);
  console.log(`${started.toISOString()}; Node ${process.version}; CPU ${cpu}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; pinned: ${pinned ? '1 thread → core 1' : 'no'}`);
  console.log(`task: encode ${opts.source} ids, then ${opts.gen} greedy tokens from decoder_start_token_id on a KV cache; ${opts.repeats} interleaved rounds after a warm-up, one process per thread count`);
  const results = [];
  for (const threads of opts.threads) {
    const spec = { threads, files, ids, gen: opts.gen, repeats: opts.repeats, forced: promptIds(opts.gen, config.vocab_size, 13) };
    const cmd = [...pinFor(threads), process.execPath, '--no-liftoff', fileURLToPath(import.meta.url), '--child', JSON.stringify(spec)];
    process.stderr.write(`  t5: ours and ORT, ${threads} thread(s) …\n`);
    const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout: 1800e3, maxBuffer: 64 << 20, env: process.env });
    const line = (r.stdout || '').trim().split('\n').reverse().find((l) => l.startsWith('{'));
    const out = line ? JSON.parse(line) : { error: `exit ${r.status}${r.signal ? ` (${r.signal})` : ''}: ${(r.stderr || '').trim().split('\n').slice(-6).join(' | ')}` };
    results.push({ threads, ...out });
  }
  let fail = false;
  const acceptance = [];
  console.log(`\n  ${pad('engine', 34)}${lpad('load s', 8)}${lpad('encode ms', 11)}${lpad('total ms', 10)}${lpad('(cpu)', 8)}${lpad('fastest', 9)}${lpad('ms/tok', 8)}`);
  for (const res of results) {
    if (res.error) {
      console.log(`  ${res.threads} thread(s): ERROR ${String(res.error).slice(0, 400)}`);
      fail = true;
      continue;
    }
    const s = (e, f) => median(res.rounds.map((r) => r[e][f]));
    const fastest = (e) => Math.min(...res.rounds.map((r) => r[e].total));
    const rows = [
      ['ours', `ours wasm SIMD, ${res.threads} thr (_encode + _extend)`, res.oursLoadMs],
      ['public', `  ours, model.generate`, null],
      ['ort', `ORT ${res.ortVersion} MHA, ${res.threads} thr`, res.ortLoadMs],
    ];
    for (const [e, label, load] of rows) {
      const enc = e === 'public' ? null : s(e, 'encode');
      console.log(`  ${pad(label, 34)}${lpad(load === null ? '' : (load / 1000).toFixed(1), 8)}${lpad(enc === null ? '—' : fmt(enc), 11)}${lpad(fmt(s(e, 'total')), 10)}${lpad(fmt(s(e, 'cpu')), 8)}${lpad(fmt(fastest(e)), 9)}${lpad(enc === null ? '—' : fmt((s(e, 'total') - enc) / opts.gen), 8)}`);
    }
    const ag = res.agreement;
    const agreeOk = ag.sameTokens && ag.publicSame && ag.maxAbsLogits <= 1e-3;
    if (!agreeOk) fail = true;
    const ratio = s('ours', 'total') / s('ort', 'total');
    const ratioPublic = s('public', 'total') / s('ort', 'total');
    const cpuRatio = s('ours', 'cpu') / s('ort', 'cpu');
    acceptance.push({ threads: res.threads, ratio, ratioPublic, cpuRatio, fastestRatio: fastest('ours') / fastest('ort'), ours: s('ours', 'total'), ort: s('ort', 'total'), agreement: ag, agreeOk });
  }
  console.log(`CPU: ${cpu}; load average at the end ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} (a shared machine: the figures are indicative; the ratio is of one process, interleaved)`);
  console.log(`\nTargets of issue 34 (ours ÷ ORT, total time of encode ${opts.source} + decode ${opts.gen}, medians of ${opts.repeats} rounds):`);
  for (const a of acceptance) {
    const t = `${a.threads} thread${a.threads > 1 ? 's' : ''}`;
    console.log(`  ${a.threads === 1 ? (a.ratio <= T5_TARGET ? 'PASS' : 'MISS') : 'INFO'}  ${pad(`encode + greedy decode, ${t}: ours ÷ ORT`, 64)} ${lpad(a.ratio.toFixed(2) + '×', 7)}  cpu ${a.cpuRatio.toFixed(2)}×  fastest ${a.fastestRatio.toFixed(2)}×  target ≤ ${T5_TARGET}×  (${fmt(a.ours)} vs ${fmt(a.ort)} ms)`);
    console.log(`  INFO  ${pad(`  the public model.generate ÷ ORT, ${t}`, 64)} ${lpad(a.ratioPublic.toFixed(2) + '×', 7)}`);
    const ag = a.agreement;
    console.log(`  ${a.agreeOk ? 'PASS' : 'MISS'}  ${pad(`agreement, ${t}: logits of all ${ag.steps} steps, max abs`, 64)} ${lpad(ag.maxAbsLogits.toExponential(1), 7)}  target ≤ 1e-3 (greedy ${ag.greedyMaxAbs.toExponential(1)}, teacher-forced ${ag.forcedMaxAbs.toExponential(1)}); greedy tokens ${ag.sameTokens ? 'equal' : 'DIFFER'}${ag.publicSame ? ' (model.generate too)' : ' (model.generate DIFFERS)'}: ${ag.ours.slice(0, 8).join(' ')} …`);
  }
  const report = { date: started.toISOString(), kind: 'lm-t5', options: opts, config, weights: files.weights, source: ids, environment: { node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length, pinned, loadavg: os.loadavg() }, results, acceptance };
  const jsonOut = value('--json', path.join(here, 'results', `lm-t5-${started.toISOString().replace(/[:.]/g, '-')}.json`));
  fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
  fs.writeFileSync(jsonOut, JSON.stringify(report, null, 2));
  console.log(`JSON: ${path.relative(process.cwd(), jsonOut)}  (${((now() - tw) / 1000).toFixed(0)} s)`);
  return fail ? 1 : 0;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain && process.argv[2] === '--child') {
  try {
    process.stdout.write(JSON.stringify(await child(JSON.parse(process.argv[3]))) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: String(err && err.stack || err) }) + '\n');
  }
  process.exit(0);
} else if (isMain) {
  process.exit(await runT5Bench(process.argv.slice(2)));
}
