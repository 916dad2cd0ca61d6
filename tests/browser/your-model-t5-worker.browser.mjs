// The tiny T5 folder (tests/golden/models/t5, the original T5: relu, tied
// head, relative position bias) in the browser, checked against the same
// library calls made here in Node on the same files (issue 34's browser
// acceptance for T5):
// - in the page's model worker (web/model-worker.js, driven by the page's
//   client WorkerModel of web/components/lib/model-client.js, as "Your
//   model" loads a folder): greedy and seeded generation (model.generate,
//   pulled a token at a time) equal Node's, and nextTokens with
//   decoderInputIds equals Node's;
// - the cross-attentions of forwardSync with decoderInputIds = [start,
//   …translation] equal Node's, computed on the page's thread by the
//   library (web/index.js). On this branch the worker's `forward` answers
//   decoder-only models alone: its encoder-decoder form (encoder, decoder
//   and cross-attentions) and the page's views belong to the encdec-page
//   branch (tests/browser/your-model-encdec.browser.mjs there), so the
//   cross-attention check runs beside the worker rather than in it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { nodeModel } from './your-model-whole.browser.mjs';

const T5 = path.join(REPO_ROOT, 'tests', 'golden', 'models', 't5');
const DIR = '/tests/golden/models/t5/';
const TEXT = 'the cat sat on the mat.';

async function nodeGenerate(node, text, options) {
  const ids = [];
  for await (const t of node.generate(text, options)) ids.push(t.id);
  return ids;
}

export default function (t) {
  t.test('tiny T5: the model worker generates (greedy and seeded) and predicts as Node; cross-attentions in the browser equal Node', async (h) => {
    const node = await nodeModel(T5);
    const page = await h.newPage();
    try {
      await page.goto(h.url('/tests/browser/pages/blank.html'));
      const greedyOpts = { maxNewTokens: 8, temperature: 0 };
      const seededOpts = { maxNewTokens: 8, temperature: 1, seed: 7 };
      const worker = await page.evaluate(async ({ dir, text, greedyOpts, seededOpts }) => {
        const { WorkerModel } = await import('/web/components/lib/model-client.js');
        const file = async (name) => new File([await (await fetch(dir + name)).blob()], name);
        const files = { config: await file('config.json'), weights: await file('model.safetensors'), tokenizer: await file('tokenizer.json') };
        const m = await WorkerModel.load(files);
        const run = async (opts) => {
          const got = [];
          for await (const tk of m.generate(text, opts)) got.push(tk);
          return got;
        };
        const greedy = await run(greedyOpts);
        const seeded = await run(seededOpts);
        const next = await m.nextTokens(text, { decoderInputIds: [m.config.decoderStartTokenId, ...seeded.slice(0, 2).map((x) => x.id)], k: 5, temperature: 1 });
        const config = { isEncoderDecoder: m.config.isEncoderDecoder, modelType: m.config.modelType, decoderStartTokenId: m.config.decoderStartTokenId };
        m.dispose();
        return { config, greedy, seeded, next };
      }, { dir: DIR, text: TEXT, greedyOpts, seededOpts });
      assert.deepEqual(worker.config, { isEncoderDecoder: true, modelType: 't5', decoderStartTokenId: 0 });
      const greedy = await nodeGenerate(node, TEXT, greedyOpts);
      const seeded = await nodeGenerate(node, TEXT, seededOpts);
      assert.deepEqual(worker.greedy.map((x) => x.id), greedy);
      assert.deepEqual(worker.seeded.map((x) => x.id), seeded);
      assert.notDeepEqual(seeded, greedy, 'the seeded draw should leave the greedy path (else it tests nothing more)');
      // the tokens and the text pieces as Node's generate gives them
      const nodeSeeded = [];
      for await (const x of node.generate(TEXT, seededOpts)) nodeSeeded.push(x);
      assert.deepEqual(worker.seeded, nodeSeeded);
      const nodeNext = await node.nextTokens(TEXT, { decoderInputIds: [0, ...seeded.slice(0, 2)], k: 5, temperature: 1 });
      assert.deepEqual(worker.next.map((x) => x.id), nodeNext.map((x) => x.id));
      let worstP = 0;
      worker.next.forEach((x, i) => { worstP = Math.max(worstP, Math.abs(x.prob - nodeNext[i].prob)); });
      assert.ok(worstP <= 1e-6, `nextTokens probabilities: max |Δ| ${worstP}`);
      console.log(`    worker: greedy ${greedy.length} and seeded ${seeded.length} tokens equal Node's; nextTokens top 5 max |Δp| ${worstP.toExponential(2)}`);

      // The cross-attentions of the translation, on the page's thread.
      const decoderInputIds = [0, ...seeded];
      const ref = node.forwardSync(TEXT, { decoderInputIds, attentions: true });
      const inPage = await page.evaluate(async ({ dir, text, decoderInputIds }) => {
        const { init } = await import('/web/index.js');
        const lab = await init({ backend: 'wasm' });
        const bytes = async (name) => new Uint8Array(await (await fetch(dir + name)).arrayBuffer());
        const model = await lab.loadModel({ config: await bytes('config.json'), weights: await bytes('model.safetensors'), tokenizer: await bytes('tokenizer.json') });
        const r = model.forwardSync(text, { decoderInputIds, attentions: true });
        const out = { ids: r.ids, cross: r.crossAttentions.map((a) => ({ shape: a.shape, data: Array.from(a.data) })) };
        model.dispose();
        return out;
      }, { dir: DIR, text: TEXT, decoderInputIds });
      assert.deepEqual(inPage.ids, ref.ids);
      const N = node.config.numLayers, H = node.config.numHeads, Le = ref.ids.length, Ld = decoderInputIds.length;
      assert.equal(inPage.cross.length, N);
      let worst = 0;
      for (let l = 0; l < N; l++) {
        assert.deepEqual(inPage.cross[l].shape, [1, H, Ld, Le]);
        const want = ref.crossAttentions[l].data;
        for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(inPage.cross[l].data[i] - want[i]));
      }
      assert.ok(worst <= 1e-6, `cross-attentions: max |Δ| ${worst}`);
      console.log(`    cross-attentions (${N} layers, [1, ${H}, ${Ld}, ${Le}]) in the page: max |Δ| vs Node ${worst.toExponential(2)}`);
      assert.deepEqual(page.problems(), []);
    } finally {
      await page.closeAll();
    }
  });
}
