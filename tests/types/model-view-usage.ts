// Compile-only check of <attention-lab-model-view>'s whole-model declarations.
import { WorkerModel, listModel, isModelFolder, type AttentionLabModelView, type ModelViewRun, type ModelViewName, type ModelViewCrossMap } from '../../web/components/index.js';
import { init } from '../../web/index.js';

async function main(files: File[]): Promise<void> {
  const view = document.createElement('attention-lab-model-view') as AttentionLabModelView;
  if (isModelFolder(files)) {
    const listing = await listModel(files);
    const layers: number = listing.numLayers;
    const worker = await WorkerModel.load(listing.files, { onProgress: (p) => console.log(p.loaded / p.total), signal: new AbortController().signal });
    view.model = worker;
    const next = await worker.nextTokens('The cat', { k: 10, temperature: 0.7 });
    console.log(layers, next[0].prob, worker.config.numHeads);
    // The interpretability calls in the worker (the heads panel's).
    const off = await worker.nextTokens('The cat', { k: 10, ablate: [{ layer: 0, head: 1, mode: 'mean' }] });
    const scores = await worker.headScores('The cat sat');
    const rep = await worker.headScores.repeated({ length: 8, seed: 1 });
    const lens = await worker.logitLens('The cat', { k: 3 });
    const attr = await worker.attribute('The cat', { target: next[0].id, baseline: next[1].id });
    const patch = await worker.patch({ clean: 'The cat', corrupted: 'The dog', target: 1, baseline: 2, over: 'heads' });
    console.log(off[0].prob, scores.induction.shape, rep.ids.length, lens.topIds.shape, attr.heads.data[0], patch.ldClean);
    const shipped = await WorkerModel.pretrained('zh');
    shipped.dispose();
  }
  await view.openHeads();
  const shown = view.heads?.shown;
  console.log(shown?.next?.ablated?.[0].prob, shown?.patch?.data[0], shown?.lens?.topTokens[0]);
  await view.heads?.toggleHead(0, 1);
  const lab = await init({ backend: 'wasm' });
  view.model = await lab.loadModel(files);
  view.text = 'The cat sat on the mat.';
  view.setAttribute('text', 'The dog');
  const run: ModelViewRun | null = view.modelRun;
  const ids: number[] = run ? run.ids : [];
  await view.generate();
  view.stop();
  const png: Blob | null = await view.export('png');
  console.log(ids, png, view.enlarged?.data.length);
  // An encoder-decoder (Marian, BART): the three views, the alignment map and the hover.
  const views: ModelViewName[] = ['encoder', 'decoder', 'cross'];
  view.setAttribute('view', views[2]);
  view.setAttribute('head', 'mean');
  const map: ModelViewCrossMap | null = view.crossMap;
  const mean: boolean = map?.head === 'mean';
  const target: number | undefined = view.highlighted?.target;
  const translated: number[] | undefined = run?.generated?.ids;
  console.log(map?.data[0], map?.rowLabels[0], mean, target, translated, run?.decoderInputIds, run?.targetShown);
  const w = await WorkerModel.load({ config: files[0], weights: files[1], tokenizer: files[2] });
  const r = await w.forward('The cat', { decoderInputIds: [52, 13] });
  console.log(r.crossAttentions[0].shape, r.crossMean[0].data[0], r.encoderAttentions.length, r.decoderTokens);
  view.model = null;
}
void main([]);
