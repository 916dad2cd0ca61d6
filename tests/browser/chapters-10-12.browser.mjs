// Chapters 10 to 12 read closely (issue 25): what the text says is what the
// library measures.
//   - ch10: the copy snapshot needs no attention (the residual carries token i
//     to position i): with every head switched off its held-out accuracy stays
//     at 100%, while reverse and shift fall; the text says why; the snapshot
//     buttons are in the page's language; two learning rates share one
//     labelled log axis; the maps carry token labels.
//   - ch11: H_kv = 1 shows the 8× fewer bytes; softcap 50 leaves the map as
//     it is.
//   - "Your model": a Llama layer with a config.json runs with the config's
//     heads, KV heads and rope_theta, and its output equals a float64
//     reference (tests/reference/reference.mjs, composed here: projections,
//     rotate_half RoPE, causal GQA attention); without config.json the head
//     count is shown as a guess and the reader sets it; a Keras .npz of
//     weights is listed and run.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARTIFACTS, REPO_ROOT } from './harness.mjs';
import { mulberry32, linearTorch, rotaryEmbedding, attentionModern } from '../reference/reference.mjs';

const PAGE = '/web/page/index.html';

async function openAt(h, hash, id) {
  const page = await h.newPage({ viewport: { width: 1200, height: 1000 } });
  await page.goto(h.url(`${PAGE}#${hash}`));
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 60000 });
  await page.evaluate((i) => document.getElementById(i).scrollIntoView(), id);
  await page.waitForFunction((i) => document.getElementById(i).dataset.state === 'ok', id, { timeout: 60000 });
  return page;
}

// ---- a Llama layer written by hand (safetensors: u64 header length, JSON, f32 data)
const E = 64;
const H = 4;
const HKV = 1;
const D = E / H;
const THETA = 500000;
const PREFIX = 'model.layers.0.';

function llamaWeights() {
  const rng = mulberry32(2025);
  const mk = (rows, cols) => Float32Array.from({ length: rows * cols }, () => Math.fround((rng() * 2 - 1) * 0.3));
  return { wq: mk(H * D, E), wk: mk(HKV * D, E), wv: mk(HKV * D, E), wo: mk(E, H * D) };
}

function safetensorsBytes(tensors) {
  const header = {};
  let off = 0;
  for (const [name, { data, shape }] of Object.entries(tensors)) {
    header[name] = { dtype: 'F32', shape, data_offsets: [off, off + 4 * data.length] };
    off += 4 * data.length;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8) json += ' ';
  const out = Buffer.alloc(8 + json.length + off);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  out.write(json, 8, 'latin1');
  let p = 8 + json.length;
  for (const { data } of Object.values(tensors)) {
    Buffer.from(data.buffer, data.byteOffset, data.byteLength).copy(out, p);
    p += data.byteLength;
  }
  return out;
}

/** transformers' LlamaAttention in float64 from the reference's pieces. x [L, E] → [L, E]. */
function llamaReference(w, x, L, { heads, kvHeads, theta }) {
  const d = E / heads;
  const q = linearTorch(x, L, E, w.wq, null, heads * d);
  const k = linearTorch(x, L, E, w.wk, null, kvHeads * d);
  const v = linearTorch(x, L, E, w.wv, null, kvHeads * d);
  const split = (X, n) => {
    const out = new Float64Array(n * L * d);
    for (let hh = 0; hh < n; hh++) for (let i = 0; i < L; i++) for (let c = 0; c < d; c++) out[(hh * L + i) * d + c] = X[i * n * d + hh * d + c];
    return { data: out, shape: [1, n, L, d] };
  };
  const qr = rotaryEmbedding(split(q, heads), { base: theta });
  const kr = rotaryEmbedding(split(k, kvHeads), { base: theta });
  const att = attentionModern(qr, kr, split(v, kvHeads), { causal: true });
  const concat = new Float64Array(L * heads * d);
  for (let hh = 0; hh < heads; hh++) for (let i = 0; i < L; i++) for (let c = 0; c < d; c++) concat[i * heads * d + hh * d + c] = att.output.data[(hh * L + i) * d + c];
  return linearTorch(concat, L, heads * d, w.wo, null, E);
}

const maxDiff = (a, b) => a.reduce((m, x, n) => Math.max(m, Math.abs(x - b[n])), 0);

function llamaFiles() {
  const w = llamaWeights();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'al-llama-'));
  const file = path.join(dir, 'llama-layer.safetensors');
  fs.writeFileSync(file, safetensorsBytes({
    [`${PREFIX}self_attn.q_proj.weight`]: { data: w.wq, shape: [H * D, E] },
    [`${PREFIX}self_attn.k_proj.weight`]: { data: w.wk, shape: [HKV * D, E] },
    [`${PREFIX}self_attn.v_proj.weight`]: { data: w.wv, shape: [HKV * D, E] },
    [`${PREFIX}self_attn.o_proj.weight`]: { data: w.wo, shape: [E, H * D] },
  }));
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ model_type: 'llama', hidden_size: E, num_attention_heads: H, num_key_value_heads: HKV, rope_theta: THETA }));
  return { w, file, config };
}

const lastRun = (page) => page.evaluate(() => window.__attentionLab.runners.find((r) => r.id === 'your-model').inst.lastRun);
const runRow = async (page) => {
  await page.evaluate(() => { document.getElementById('your-model').dataset.ran = ''; });
  await page.click(`#your-model tr[data-prefix="${PREFIX}"] .ym-run`);
  await page.waitForFunction(() => document.getElementById('your-model').dataset.ran !== '' || !document.querySelector('#your-model .ym-error').hidden);
};

export default function (t) {
  t.test('ch10: the copy snapshot keeps 100% with every head off, and the text says why (the residual); reverse and shift fall', async (h) => {
    const page = await openAt(h, 'lang=en&ch=ch10', 'ch10');
    try {
      // The numbers the text cites, measured by the library when the chapter rendered.
      await page.waitForFunction(() => document.querySelector('#ch10 [data-i18n-key="ch10.p2"]').dataset.copyOff !== undefined, null, { timeout: 60000 });
      const text = await page.evaluate(() => {
        const p2 = document.querySelector('#ch10 [data-i18n-key="ch10.p2"]');
        const try1 = document.querySelector('#ch10 [data-i18n-key^="ch10.try1"]');
        return { p2: p2.textContent, ...p2.dataset, try1: try1.textContent, worst: try1.dataset.worst, sharpest: try1.dataset.sharpest };
      });
      assert.equal(Number(text.copyOff), 1, 'copy with every head off');
      assert.ok(Number(text.reverseOff) < 0.1 && Number(text.shiftOff) < 0.1, `reverse ${text.reverseOff}, shift ${text.shiftOff} with every head off`);
      assert.match(text.p2, /Copy needs no attention at all: the residual connection already carries token i to position i/);
      assert.match(text.p2, /stays at 100\.0%, while reverse falls to \d+\.\d% and shift to \d+\.\d%/);
      assert.match(text.p2, /tokens\[\(i−1\) mod L\].*row 0 wraps around to key L−1/);
      assert.match(text.try1, /heads 0 to 3 off in turn is \d+\.\d% \/ \d+\.\d% \/ \d+\.\d% \/ \d+\.\d%: one head carries the task, head \d/);
      // Load the copy snapshot and switch every head off with the trainer's own switches.
      await page.click('#ch10 button[data-task="copy"]');
      await page.waitForFunction(() => document.getElementById('ch10').dataset.measured === 'copy' && document.getElementById('ch10-trainer').report?.heldOut >= 0.99, null, { timeout: 60000 });
      const r = await page.evaluate(async () => {
        const el = document.getElementById('ch10-trainer');
        const toggles = [...el.shadowRoot.querySelectorAll('.al-tr-head button')];
        const pressedBefore = toggles.map((b) => b.getAttribute('aria-pressed'));
        for (const b of toggles) b.click();
        await el.ablate(0, toggles.length - 1, true); // resolves after the worker has taken every click
        const table = document.querySelector('#ch10 .ch10-heads-table');
        return {
          task: el.getAttribute('task'), n: toggles.length, pressedBefore, pressed: toggles.map((b) => b.getAttribute('aria-pressed')),
          acc: el.ablationAccuracy, readout: [...el.shadowRoot.querySelectorAll('.al-readout')].map((x) => x.textContent).join(' | '),
          tableAll: table.querySelector('tr.current td').textContent, line: document.querySelector('#ch10 .ch10-heads-line').textContent,
          perHead: [...table.querySelectorAll('tr[data-head]')].map((tr) => Number(tr.dataset.off)),
        };
      });
      await page.locator('#ch10').screenshot({ path: path.join(ARTIFACTS, 'page-ch10-copy-heads-off.png') });
      assert.equal(r.task, 'copy');
      assert.equal(r.n, 4);
      assert.deepEqual(r.pressedBefore, ['false', 'false', 'false', 'false'], 'a loaded snapshot starts with every head on');
      assert.deepEqual(r.pressed, ['true', 'true', 'true', 'true']);
      assert.equal(r.acc, 1, 'held-out accuracy with every head off');
      assert.match(r.readout, /With the heads switched off, held-out sequence accuracy is 100\.0%/);
      assert.equal(r.tableAll, '100.0%');
      assert.deepEqual(r.perHead, [1, 1, 1, 1]);
      assert.match(r.line, /Copy needs no attention: the residual connection carries token i to position i/);
      // The maps carry the example's tokens on both axes.
      const labels = await page.evaluate(() => {
        const el = document.getElementById('ch10-trainer');
        const cell = el.shadowRoot.querySelector('.al-tr-grid');
        return { keys: [...cell.querySelectorAll('.al-tr-keys span')].map((s) => s.textContent), queries: [...cell.querySelectorAll('.al-tr-queries span')].map((s) => s.textContent), tokens: el.report.tokens.map(String), axes: el.shadowRoot.querySelector('.al-tr-axes').textContent };
      });
      assert.deepEqual(labels.keys, labels.tokens);
      assert.deepEqual(labels.queries, labels.tokens);
      assert.match(labels.axes, /row i is the query position \(0 to 7, top to bottom\) and column j the key position/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 180000 });

  t.test('ch10 in zh: snapshot buttons show Chinese task names; the shift text names the diagonal below the main one', async (h) => {
    const page = await openAt(h, 'lang=zh&ch=ch10', 'ch10');
    try {
      await page.waitForFunction(() => document.querySelector('#ch10 [data-i18n-key="ch10.p2"]').dataset.copyOff !== undefined, null, { timeout: 60000 });
      const r = await page.evaluate(() => ({
        buttons: [...document.querySelectorAll('#ch10 button[data-task]')].map((b) => b.textContent),
        p2: document.querySelector('#ch10 [data-i18n-key="ch10.p2"]').textContent,
      }));
      assert.deepEqual(r.buttons, ['复制', '反转', '排序', '移位']);
      assert.match(r.p2, /主对角线正下方/);
      assert.doesNotMatch(r.p2, /次对角线/);
      assert.match(r.p2, /残差连接/);
      assert.match(r.p2, /仍为 100\.0%/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 120000 });

  t.test('ch10: two learning rates on one labelled log axis (the previous run stays, faint)', async (h) => {
    const page = await openAt(h, 'lang=en&ch=ch10', 'ch10');
    try {
      const r = await page.evaluate(async () => {
        const el = document.getElementById('ch10-trainer');
        const frame = () => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
        el.setAttribute('task', 'sort');
        await el.updateComplete;
        // One history point per report: 20 reports of 3 steps each per run.
        for (let i = 0; i < 20; i++) await el.step(3);
        const sel = [...el.shadowRoot.querySelectorAll('select')].find((s) => [...s.options].some((o) => o.value === '0.01'));
        sel.value = '0.01';
        sel.dispatchEvent(new Event('change'));
        await el.updateComplete;
        for (let i = 0; i < 20; i++) await el.step(3);
        await frame();
        // The per-head measurement of the trainer's own weights.
        document.querySelector('#ch10 .ch10-measure').click();
        const t0 = performance.now();
        while (performance.now() - t0 < 20000 && !document.querySelector('#ch10 .ch10-heads-table')) await new Promise((res) => setTimeout(res, 50));
        const table = document.querySelector('#ch10 .ch10-heads-table');
        const measured = { caption: table?.querySelector('caption').textContent, rows: table?.querySelectorAll('tbody tr').length };
        const c = el.shadowRoot.querySelector('.al-tr-chart');
        return { runs: c.dataset.runs, yTicks: c.dataset.yTicks, xTicks: c.dataset.xTicks, previous: c.dataset.previous, label: c.getAttribute('aria-label'), prevSteps: el.previous?.history.length, steps: el.history.length, lr: el.getAttribute('lr'), measured };
      });
      assert.equal(r.lr, '0.01');
      assert.match(r.measured.caption, /on the sort model \(the trainer’s weights at step 60\)/);
      assert.equal(r.measured.rows, 6, 'none, 4 heads, all');
      assert.equal(r.runs, '2', 'the chart draws both runs');
      assert.equal(r.previous, 'sort, E = 64, lr = 0.003');
      assert.ok(r.prevSteps >= 20 && r.steps >= 20, `${r.prevSteps} and ${r.steps} points`);
      const ticks = r.yTicks.split(',').map(Number);
      assert.ok(ticks.length >= 2 && ticks.every((v, i) => v > 0 && (i === 0 || v > ticks[i - 1])), `log ticks ${r.yTicks}`);
      assert.ok(r.xTicks.split(',').length >= 2, `step ticks ${r.xTicks}`);
      assert.match(r.label, /labelled ticks.*previous run \(sort, E = 64, lr = 0\.003\)/);
      await page.locator('#ch10-trainer').screenshot({ path: path.join(ARTIFACTS, 'page-ch10-two-rates.png') });
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 180000 });

  t.test('ch11: H_kv = 1 shows 8× fewer bytes; at softcap 50 the map is unchanged (measured)', async (h) => {
    const page = await openAt(h, 'lang=en&ch=ch11', 'ch11');
    try {
      await page.click('#ch11 button[data-kv="1"]');
      await page.evaluate(() => window.__attentionLab.settled());
      const r = await page.evaluate(() => {
        const s = document.getElementById('ch11');
        return {
          line: s.querySelector('.ch11-kv-line').textContent, ratio: Number(s.querySelector('.ch11-kv-line').dataset.ratio),
          current: [...s.querySelectorAll('.ch11-kv-table tr.current')].map((tr) => tr.dataset.kv),
          try2: { ...s.querySelector('[data-i18n-key="ch11.try2"]').dataset, text: s.querySelector('[data-i18n-key="ch11.try2"]').textContent },
          try3: s.querySelector('[data-i18n-key="ch11.try3"]').textContent,
          win: s.querySelector('[data-i18n-key="ch11.win.p1"]').textContent,
        };
      });
      assert.deepEqual(r.current, ['1']);
      assert.equal(r.ratio, 8);
      assert.match(r.line, /H_kv = 1 \(MQA\): 256 bytes per token and layer, 8× fewer than MHA’s 2048/);
      assert.match(r.try3, /8 times fewer bytes/);
      assert.ok(Number(r.try2.d50) < 1e-6, `largest weight change at c = 50: ${r.try2.d50}`);
      assert.ok(Number(r.try2.p1) < Number(r.try2.pDefault) && Number(r.try2.pDefault) < Number(r.try2.p0), JSON.stringify(r.try2));
      assert.match(r.try2.text, /At Gemma 2’s own cap of 50 the map is unchanged/);
      assert.match(r.win, /Mistral 7B v0\.1 uses W = 4096, v0\.2 and v0\.3 have no window/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 240000 });

  t.test('your model: a Llama layer with config.json runs with 4 heads, 1 KV head, rope_theta 500000 and equals the float64 reference', async (h) => {
    const page = await openAt(h, 'lang=en&ch=your-model', 'your-model');
    try {
      const { w, file, config } = llamaFiles();
      await page.setInputFiles('#ym-file', [file, config]);
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '1');
      const row = await page.evaluate((p) => {
        const tr = document.querySelector(`#your-model tr[data-prefix="${p}"]`);
        return { source: tr.dataset.source, heads: tr.querySelector('.ym-heads').value, kv: tr.querySelector('.ym-kv').value, theta: tr.querySelector('.ym-theta').value, notes: tr.querySelector('.ym-notes').textContent, info: document.querySelector('#your-model .ym-info').textContent };
      }, PREFIX);
      assert.deepEqual([row.source, row.heads, row.kv, row.theta], ['config', '4', '1', '500000']);
      assert.match(row.notes, /from config\.json: 4 heads, 1 KV heads, rope_theta 500000/);
      assert.match(row.info, /config\.json read: num_attention_heads 4, num_key_value_heads 1, rope_theta 500000/);
      await runRow(page);
      const ran = await lastRun(page);
      assert.deepEqual([ran.numHeads, ran.numKvHeads, ran.theta, ran.source], [4, 1, 500000, 'config']);
      const L = ran.shape[0];
      const ref = llamaReference(w, ran.x, L, { heads: 4, kvHeads: 1, theta: THETA });
      const diff = maxDiff(ran.output, ref);
      console.log(`    Llama layer (E ${E}, H 4, H_kv 1, θ 500000, L ${L}) against float64: max |Δ| ${diff.toExponential(2)}`);
      assert.ok(diff < 2e-5, `max |page − float64| ${diff}`);
      assert.match(await page.textContent('#your-model .ym-ran'), /H 4, H_kv 1, rope_theta 500000: from config\.json\)/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 120000 });

  t.test('your model: without config.json the Llama heads and rope_theta are shown as a guess, and the reader sets them', async (h) => {
    const page = await openAt(h, 'lang=en&ch=your-model', 'your-model');
    try {
      const { w, file } = llamaFiles();
      await page.setInputFiles('#ym-file', file);
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '1');
      const row = await page.evaluate((p) => {
        const tr = document.querySelector(`#your-model tr[data-prefix="${p}"]`);
        const i = tr.querySelector('.ym-heads');
        return { source: tr.dataset.source, heads: i.value, guessClass: i.classList.contains('ym-guess'), disabled: i.disabled, theta: tr.querySelector('.ym-theta').value, notes: tr.querySelector('.ym-notes').textContent };
      }, PREFIX);
      await page.locator('#your-model .ym-layers').screenshot({ path: path.join(ARTIFACTS, 'page-your-model-llama-guess.png') });
      assert.equal(row.source, 'guess');
      assert.ok(row.guessClass && !row.disabled, 'the guessed head count is marked and editable');
      assert.match(row.notes, new RegExp(`guessed, not read: ${row.heads} heads of size \\d+ \\(\\d+ KV heads\\) and rope_theta 10000.*config\\.json`));
      // Run on the guess: it says so, and with θ 10000 it is not the model (θ 500000).
      await runRow(page);
      const guessed = await lastRun(page);
      assert.equal(guessed.source, 'guess');
      assert.match(await page.textContent('#your-model .ym-ran'), /rope_theta 10000: guessed\)/);
      const refTrue = llamaReference(w, guessed.x, guessed.shape[0], { heads: 4, kvHeads: 1, theta: THETA });
      if (guessed.numHeads === 4 && guessed.numKvHeads === 1) assert.ok(maxDiff(guessed.output, refTrue) > 1e-4, 'rope_theta matters');
      // The reader sets the values from the model's config.
      await page.fill(`#your-model tr[data-prefix="${PREFIX}"] .ym-heads`, '4');
      await page.fill(`#your-model tr[data-prefix="${PREFIX}"] .ym-kv`, '1');
      await page.fill(`#your-model tr[data-prefix="${PREFIX}"] .ym-theta`, '500000');
      await runRow(page);
      const set = await lastRun(page);
      assert.deepEqual([set.numHeads, set.numKvHeads, set.theta, set.source], [4, 1, 500000, 'set']);
      assert.ok(maxDiff(set.output, llamaReference(w, set.x, set.shape[0], { heads: 4, kvHeads: 1, theta: THETA })) < 2e-5);
      assert.match(await page.textContent('#your-model .ym-ran'), /rope_theta 500000: as set in the table\)/);
      // config.json dropped on its own afterwards applies to the listed checkpoint.
      const { config } = llamaFiles();
      await page.setInputFiles('#ym-file', config);
      await page.waitForFunction((p) => document.querySelector(`#your-model tr[data-prefix="${p}"]`)?.dataset.source === 'config', PREFIX);
      assert.deepEqual(await page.evaluate((p) => [...document.querySelectorAll(`#your-model tr[data-prefix="${p}"] input`)].map((i) => i.value), PREFIX), ['4', '1', '500000']);
      assert.match(await page.textContent('#your-model .ym-info'), /^llama-layer\.safetensors .*config\.json read: num_attention_heads 4/);
      // A Keras .npz of weights (the README's recipe) is listed and run, not drawn as arrays.
      await page.setInputFiles('#ym-file', path.join(REPO_ROOT, 'tests', 'golden', 'weights', 'keras_mha.npz'));
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '1' && document.querySelector('#your-model .ym-table tbody tr')?.dataset.source === 'weights');
      const keras = await page.evaluate(() => ({ format: document.querySelector('#your-model .ym-table tbody td:nth-child(2)').textContent, heads: document.querySelector('#your-model .ym-heads').value, info: document.querySelector('#your-model .ym-info').textContent }));
      assert.deepEqual([keras.format, keras.heads], ['keras', '2']);
      assert.match(keras.info, /keras_mha\.npz \([\d.]+ MB\): a \.npz of \d+ weight arrays, 1 attention layers/);
      await page.evaluate(() => { document.getElementById('your-model').dataset.ran = ''; });
      await page.click('#your-model .ym-run');
      await page.waitForFunction(() => document.getElementById('your-model').dataset.ran !== '' || !document.querySelector('#your-model .ym-error').hidden);
      assert.equal(await page.evaluate(() => document.querySelector('#your-model .ym-error').hidden), true, await page.textContent('#your-model .ym-error'));
      assert.match(await page.textContent('#your-model .ym-ran'), /\(keras, E 8, H 2\)/);
      // GPT-2's weights do not hold n_head either: a marked guess, or its config.json.
      const gpt2 = path.join(REPO_ROOT, 'tests', 'golden', 'weights', 'hf_gpt2.safetensors');
      await page.setInputFiles('#ym-file', gpt2);
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '2');
      assert.match(await page.textContent('#your-model tr[data-prefix="h.0."] .ym-notes'), /heads guessed \(8, head size 1\): the weights do not say/);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'al-gpt2-'));
      fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'gpt2', n_embd: 8, n_head: 2 }));
      await page.setInputFiles('#ym-file', [gpt2, path.join(dir, 'config.json')]);
      await page.waitForFunction(() => document.querySelector('#your-model tr[data-prefix="h.0."]')?.dataset.source === 'config');
      assert.equal(await page.inputValue('#your-model tr[data-prefix="h.0."] .ym-heads'), '2');
      assert.match(await page.textContent('#your-model tr[data-prefix="h.0."] .ym-notes'), /heads from config\.json: 2/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  }, { timeout: 120000 });
}
