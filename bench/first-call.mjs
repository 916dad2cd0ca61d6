// First-call cost: what a fresh process (or page) pays for the first
// multi-head attention, with and without lab.warmUp(). Runs with the engine's
// default tiering (no --no-liftoff: users get baseline code first), one
// process per sample, pinned like the rest of the bench.
//
//   node bench/first-call.mjs [--repeats N] [--browser] [--json]
//
// A sample: init({ backend: 'wasm' }); optionally await lab.warmUp(); then
// the MHA [1,128,512,H8] constructor, its first forward (causal, no weights)
// and 30 more forwards; reports the constructor, the first forward, the
// steady median (of the last 20) and first ÷ steady. bench.mjs runs it in
// Node mode and prints the table and the acceptance line (first forward after
// warmUp ≤ 1.5× the steady median).

/** The case: MHA [B=1, L=128, E=512, H=8], causal, needWeights false. */
export const FIRST_CALL = { batch: 1, seqLen: 128, embedDim: 512, numHeads: 8 };

const now = () => performance.now();
const cpuMs = typeof process === 'object' && process.cpuUsage ? () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; } : null;

/**
 * One sample in this process / page.
 * @param {(opts: object) => Promise<object>} init the package's init
 * @param {{ warm: boolean }} opts
 */
export async function firstCallSample(init, { warm }) {
  const { batch: B, seqLen: L, embedDim: E, numHeads: H } = FIRST_CALL;
  const t0 = now();
  const lab = await init({ backend: 'wasm' });
  const t1 = now();
  let warmReport = null;
  if (warm) warmReport = await lab.warmUp({ embedDim: E, numHeads: H, seqLen: L, batch: B });
  const t2 = now();
  const mha = lab.multiHeadAttention({ embedDim: E, numHeads: H, seed: 1 });
  const t3 = now();
  const x = { data: new Float32Array(B * L * E).map((_, i) => Math.sin(0.37 * i)), shape: [B, L, E] };
  const opts = { mask: { kind: 'causal' }, needWeights: false };
  const c4 = cpuMs?.();
  const t4 = now();
  mha.forwardSync(x, x, x, opts);
  const first = now() - t4;
  const firstCpu = cpuMs ? cpuMs() - c4 : undefined;
  const times = [];
  const cpus = [];
  for (let i = 0; i < 30; i++) {
    const c = cpuMs?.();
    const a = now();
    mha.forwardSync(x, x, x, opts);
    times.push(now() - a);
    if (cpuMs) cpus.push(cpuMs() - c);
  }
  mha.dispose();
  const med = (v) => { const s = v.slice(-20).sort((a, b) => a - b); return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2; };
  const steady = med(times);
  return {
    warm,
    initMs: t1 - t0,
    warmUpMs: t2 - t1,
    warmUpRounds: warmReport?.rounds,
    ctorMs: t3 - t2,
    firstMs: first,
    secondMs: times[0],
    steadyMs: steady,
    ratio: first / steady,
    ...(cpuMs ? { firstCpuMs: firstCpu, steadyCpuMs: med(cpus), cpuRatio: firstCpu / med(cpus) } : {}),
  };
}

const median = (v) => { const s = [...v].sort((a, b) => a - b); return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2; };

/** Summary over samples of one mode. */
export function summarize(samples) {
  const keys = ['initMs', 'warmUpMs', 'ctorMs', 'firstMs', 'secondMs', 'steadyMs', 'ratio', 'firstCpuMs', 'steadyCpuMs', 'cpuRatio'];
  const out = { samples: samples.length };
  for (const k of keys) if (samples.every((s) => typeof s[k] === 'number')) out[k] = median(samples.map((s) => s[k]));
  out.ratios = samples.map((s) => +s.ratio.toFixed(2));
  return out;
}

/** The table lines for a { cold, warm } summary. */
export function formatFirstCall(res, label) {
  const f = (v) => (v === undefined ? '' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
  const lines = [
    '',
    `First call after init — MHA [1,128,512,H8] causal, no weights (${label}; default tiering, fresh process per sample, medians)`,
    `  ${'mode'.padEnd(16)}${'init ms'.padStart(9)}${'warmUp ms'.padStart(11)}${'ctor ms'.padStart(9)}${'first ms'.padStart(10)}${'steady ms'.padStart(11)}${'first÷steady'.padStart(14)}${res.cold.cpuRatio !== undefined ? 'cpu ratio'.padStart(11) : ''}  per-sample ratios`,
  ];
  for (const [name, s] of [['no warm-up', res.cold], ['after warmUp()', res.warm]]) {
    lines.push(`  ${name.padEnd(16)}${f(s.initMs).padStart(9)}${f(s.warmUpMs).padStart(11)}${f(s.ctorMs).padStart(9)}${f(s.firstMs).padStart(10)}${f(s.steadyMs).padStart(11)}${(s.ratio.toFixed(2) + '×').padStart(14)}${s.cpuRatio !== undefined ? (s.cpuRatio.toFixed(2) + '×').padStart(11) : ''}  ${s.ratios.join(' ')}`);
  }
  return lines;
}

// ---- Node driver ----------------------------------------------------------------------
// `node bench/first-call.mjs --sample warm|cold` runs one sample and prints
// one JSON line; without --sample, runs the samples as child processes.
if (typeof process === 'object' && process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const { spawnSync, execFileSync } = await import('node:child_process');
  const path = await import('node:path');
  const { fileURLToPath, pathToFileURL } = await import('node:url');
  const argv = process.argv.slice(2);
  const value = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
  const self = fileURLToPath(import.meta.url);
  if (argv.includes('--sample')) {
    const dir = process.env.ATTNLAB_BENCH_WEB;
    const { init } = await import(dir ? pathToFileURL(path.join(dir, 'node.js')).href : '../web/node.js');
    process.stdout.write(JSON.stringify(await firstCallSample(init, { warm: value('--sample') === 'warm' })) + '\n');
    process.exit(0);
  }
  const repeats = Number(value('--repeats', 3));
  let pin = [];
  try {
    execFileSync('taskset', ['-c', '1', 'true'], { stdio: 'ignore' });
    pin = ['taskset', '-c', '1'];
  } catch { /* not pinned */ }
  if (argv.includes('--browser')) {
    // Chromium and all its processes on the one pinned core: re-run under taskset.
    if (pin.length && !process.env.ATTNLAB_FIRST_CALL_PINNED) {
      const r = spawnSync(pin[0], [...pin.slice(1), process.execPath, self, ...argv], { stdio: 'inherit', env: { ...process.env, ATTNLAB_FIRST_CALL_PINNED: '1' } });
      process.exit(r.status ?? 1);
    }
    const res = await runBrowser({ repeats });
    if (argv.includes('--json')) console.log(JSON.stringify(res));
    else console.log(formatFirstCall(res, `headless Chromium ${res.browser ?? ''}`.trim()).join('\n'));
    process.exit(0);
  }
  const res = await runNode({ repeats, pin, self, spawnSync });
  if (argv.includes('--json')) console.log(JSON.stringify(res));
  else console.log(formatFirstCall(res, `Node ${process.version}`).join('\n'));
}

/** Runs `repeats` cold and warm samples, alternating, each in a fresh process. */
export async function runNode({ repeats, pin, self, spawnSync, env = process.env }) {
  const samples = { cold: [], warm: [] };
  for (let r = 0; r < repeats; r++) {
    for (const mode of r % 2 ? ['warm', 'cold'] : ['cold', 'warm']) {
      const cmd = [...pin, process.execPath, self, '--sample', mode];
      const out = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', env, timeout: 120e3 });
      const line = (out.stdout || '').trim().split('\n').reverse().find((l) => l.startsWith('{'));
      if (!line) throw new Error(`first-call sample (${mode}) failed: ${(out.stderr || '').trim().split('\n').slice(-3).join(' | ')}`);
      samples[mode].push(JSON.parse(line));
    }
  }
  return { cold: summarize(samples.cold), warm: summarize(samples.warm), raw: samples };
}

/**
 * Browser samples: each in a fresh browser context (its own renderer and
 * cache) of headless Chromium with its default flags (default wasm tiering),
 * through the test harness's server (strict CSP, no other network).
 */
export async function runBrowser({ repeats }) {
  const { startHarness } = await import('../tests/browser/harness.mjs');
  const harness = await startHarness();
  const samples = { cold: [], warm: [] };
  let browser = '';
  try {
    for (let r = 0; r < repeats; r++) {
      for (const mode of r % 2 ? ['warm', 'cold'] : ['cold', 'warm']) {
        const page = await harness.newPage();
        try {
          await page.goto(harness.url('/bench/browser/page.html'));
          const out = await page.evaluate(async (warm) => {
            const { firstCallSample } = await import('/bench/first-call.mjs');
            const { init } = await import('/web/index.js');
            return { sample: await firstCallSample(init, { warm }), ua: navigator.userAgent };
          }, mode === 'warm');
          browser = (/Chrome\/[\d.]+/.exec(out.ua) ?? [''])[0];
          samples[mode].push(out.sample);
        } finally {
          await page.closeAll();
        }
      }
    }
  } finally {
    await harness.close();
  }
  return { cold: summarize(samples.cold), warm: summarize(samples.warm), raw: samples, browser };
}
