// Compile-only check of <attention-lab-model-view>'s whole-model declarations.
import { WorkerModel, listModel, isModelFolder, type AttentionLabModelView, type ModelViewRun } from '../../web/components/index.js';
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
  }
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
  view.model = null;
}
void main([]);
