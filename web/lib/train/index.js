// Training entry points added to the lab object (createLab calls
// attachTraining): lab.transformer, lab.tasks and
// lab.scaledDotProductAttentionBackward, and lab.loadModel (whole models
// over the same block graph, web/lib/model/). (mha.backward and layer.backward are
// methods of the classes, over backward.js.) Training runs on the wasm
// backends; on webgpu these throw a clear Error, except loadModel and
// pretrained (the model in the webgpu backend's wasm backend, forward on the GPU).
import { wasmModuleOf } from './heap.js';
import { createTasks } from './tasks.js';
import { Transformer, TrainingStoppedError } from './transformer.js';
import { sdpaBackward } from './backward.js';
import { loadModel } from '../model/load.js';
import { pretrained } from '../pretrained.js';

export { TrainingStoppedError };

/** Adds the training API to `lab` (built over `backend`). */
export function attachTraining(lab, backend) {
  const moduleFor = (where) => wasmModuleOf(backend, where);
  lab.tasks = createTasks(moduleFor);
  lab.transformer = (config) => new Transformer(moduleFor('transformer'), config);
  // Whole Hugging Face models run on the same block graph (web/lib/model/).
  // On webgpu: loaded into its wasm backend as on wasm, plus a GPU copy that runs model.forward.
  lab.loadModel = async (source) => {
    if (typeof backend.modelCreate !== 'function') return loadModel(wasmModuleOf(backend, 'loadModel', 'a whole model'), source);
    const wasm = await backend.wasmReady;
    if (!wasm) throw new Error("loadModel: the webgpu backend was created without its wasm backend (the fallback), which holds the model's block graph; create the lab with init({ backend: 'webgpu' })");
    return loadModel(wasmModuleOf(wasm, 'loadModel', 'a whole model'), source, { gpu: backend });
  };
  lab.pretrained = async (name) => pretrained(lab.loadModel, name); // the package's models (data/models/)
  lab.scaledDotProductAttentionBackward = (q, k, v, dOutput, options) =>
    sdpaBackward(moduleFor('scaledDotProductAttentionBackward'), q, k, v, dOutput, options);
  return lab;
}
