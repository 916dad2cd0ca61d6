// The page's "Your model" section: a weight file chosen on the page is read
// locally (no request carries it), its attention layers are listed from the
// header, a listed layer runs on the page's sentence and its weights are
// drawn; attention arrays from Python are drawn as they are.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';

const PAGE = '/web/page/index.html';
const W = (name) => path.join(REPO_ROOT, 'tests', 'golden', 'weights', name);

async function open(h) {
  const page = await h.newPage({ viewport: { width: 1200, height: 900 } });
  const requests = [];
  page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
  await page.goto(h.url(`${PAGE}#your-model`));
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 30000 });
  await page.locator('#your-model').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.getElementById('your-model').dataset.state === 'ok', null, { timeout: 30000 });
  return { page, requests };
}

export default function (t) {
  t.test('a GPT-2 checkpoint is listed from its header, a layer runs on the sentence, nothing is uploaded', async (h) => {
    const { page, requests } = await open(h);
    try {
      const before = requests.length;
      await page.setInputFiles('#ym-file', W('hf_gpt2.safetensors'));
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '2');
      const listed = await page.evaluate(() => ({
        prefixes: [...document.querySelectorAll('#your-model .ym-table tbody tr')].map((tr) => tr.dataset.prefix),
        notes: document.querySelector('#your-model .ym-table tbody tr td:nth-child(5)').textContent,
        info: document.querySelector('#your-model .ym-info').textContent,
      }));
      assert.deepEqual(listed.prefixes, ['h.0.', 'h.1.']);
      assert.match(listed.notes, /decoder: causal mask; pre-norm: LayerNorm\(x\)/);
      assert.match(listed.info, /^hf_gpt2\.safetensors \(0\.005 MB\): 20 tensors, 2 attention layers, listed in \d+ ms/);
      await page.fill('#your-model tr[data-prefix="h.1."] .ym-heads', '2');
      await page.click('#your-model tr[data-prefix="h.1."] .ym-run');
      await page.waitForFunction(() => document.getElementById('your-model').dataset.ran === 'h.1.');
      await page.evaluate(() => document.getElementById('ym-view').updateComplete);
      const ran = await page.evaluate(() => {
        const v = document.getElementById('ym-view');
        return { shape: [v.data.layers, v.data.heads, v.data.lq, v.data.lk], lines: v.shadowRoot.querySelectorAll('.al-hv line').length, tokens: v.tokens, text: document.querySelector('#your-model .ym-ran').textContent, upper: (() => { const d = v.data; let bad = 0; for (let hh = 0; hh < d.heads; hh++) for (let i = 0; i < d.lq; i++) for (let j = i + 1; j < d.lk; j++) if (d.data[(hh * d.lq + i) * d.lk + j] !== 0) bad++; return bad; })() };
      });
      assert.equal(ran.shape[0], 1);
      assert.equal(ran.shape[1], 2);
      assert.equal(ran.shape[2], ran.tokens.length);
      assert.ok(ran.lines > 0);
      assert.equal(ran.upper, 0, 'GPT-2 runs with the causal mask');
      assert.match(ran.text, /^Layer h\.1\. \(hf-gpt2, E 8, H 2\) on the sentence’s \d+ tokens/);
      // Nothing but GETs of the page's own files (lazily loaded modules may
      // still arrive); nothing sends or names the chosen file.
      const after = requests.slice(before);
      assert.deepEqual(after.filter((r) => !/^GET \/(web\/[\w/.-]+\.(js|mjs|wasm|css)|data\/models\/[\w-]+\/[\w.-]+)$/.test(r)), [], 'only the page\'s own static files are fetched');
      assert.ok(requests.every((r) => r.startsWith('GET ') && !r.includes('hf_gpt2')));
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('a PyTorch state dict (torch.save .bin of the same GPT-2) is listed and runs as its safetensors twin', async (h) => {
    const { page, requests } = await open(h);
    try {
      const run = async (file) => {
        await page.setInputFiles('#ym-file', file);
        await page.waitForFunction((n) => document.querySelector('#your-model .ym-info').textContent.startsWith(n), path.basename(file));
        await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '2');
        const prefixes = await page.evaluate(() => [...document.querySelectorAll('#your-model .ym-table tbody tr')].map((tr) => tr.dataset.prefix));
        await page.fill('#your-model tr[data-prefix="h.1."] .ym-heads', '2');
        // (the second file's run must not be taken for the first's)
        await page.evaluate(() => { delete document.getElementById('your-model').dataset.ran; document.getElementById('ym-view').data = null; });
        await page.click('#your-model tr[data-prefix="h.1."] .ym-run');
        await page.waitForFunction(() => document.getElementById('your-model').dataset.ran === 'h.1.');
        await page.evaluate(() => document.getElementById('ym-view').updateComplete);
        const data = await page.evaluate(() => Array.from(document.getElementById('ym-view').data.data));
        const info = await page.textContent('#your-model .ym-info');
        return { prefixes, data, info };
      };
      const bin = await run(path.join(REPO_ROOT, 'tests', 'golden', 'torch', 'weights', 'hf_gpt2.bin'));
      assert.deepEqual(bin.prefixes, ['h.0.', 'h.1.']);
      assert.match(bin.info, /^hf_gpt2\.bin \(0\.0\d+ MB\): 20 tensors, 2 attention layers, listed in \d+ ms/);
      const st = await run(W('hf_gpt2.safetensors'));
      assert.ok(bin.data.length > 0);
      assert.deepEqual(bin.data, st.data, 'the same weights give the same attention');
      assert.ok(requests.every((r) => !r.includes('hf_gpt2')));
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });

  t.test('attention arrays from Python are drawn; a refused layer and a bad file say why', async (h) => {
    const { page } = await open(h);
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'al-tokens-'));
      fs.writeFileSync(path.join(dir, 'tokens.json'), JSON.stringify(['the', 'cat', 'sat', 'on', 'a', 'mat']));
      await page.setInputFiles('#ym-file', [W('attentions_2x3x6.npy'), path.join(dir, 'tokens.json')]);
      await page.waitForFunction(() => document.getElementById('your-model').dataset.arrays === '2x3x6x6');
      const arrays = await page.evaluate(async () => { const v = document.getElementById('ym-view'); await v.updateComplete; return { thumbs: v.shadowRoot.querySelectorAll('.al-mv-thumb').length, label: v.shadowRoot.querySelector('.al-mv-thumb').getAttribute('aria-label') }; });
      assert.equal(arrays.thumbs, 6);
      assert.match(arrays.label, /from “(the|cat|sat|on|a|mat)” to “(the|cat|sat|on|a|mat)”/, 'tokens.json labels the arrays');
      await page.setInputFiles('#ym-file', W('torch_mha_bias_kv.safetensors'));
      await page.waitForFunction(() => document.getElementById('your-model').dataset.layers === '1');
      const refused = await page.evaluate(() => ({ note: document.querySelector('#your-model .ym-table tbody td:nth-child(5)').textContent, disabled: document.querySelector('#your-model .ym-run').disabled }));
      assert.match(refused.note, /bias_k\/bias_v/);
      assert.equal(refused.disabled, true);
      await page.setInputFiles('#ym-file', { name: 'broken.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 0, 0, 0, 0, 1, 0, 0, 0]) });
      await page.waitForFunction(() => !document.querySelector('#your-model .ym-error').hidden);
      assert.match(await page.textContent('#your-model .ym-error'), /^RangeError: openSafetensors: header length 1099511627776 bytes \(about 2\^40\.0\) exceeds the limit/);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
