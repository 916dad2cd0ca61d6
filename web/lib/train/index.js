// Training entry points added to the lab object (createLab calls
// attachTraining): lab.transformer, lab.tasks and
// lab.scaledDotProductAttentionBackward. (mha.backward and layer.backward are
// methods of the classes, over backward.js.) Training runs on the wasm
// backends; on webgpu these throw a clear Error.
import { wasmModuleOf } from '../graph/arena.js';
import { createTasks } from './tasks.js';
import { TrainableTransformer, TrainingStoppedError } from './trainer.js';
import { sdpaBackward } from './backward.js';

export { TrainingStoppedError };

/** Adds the training API to `lab` (built over `backend`). */
export function attachTraining(lab, backend) {
  const moduleFor = (where) => wasmModuleOf(backend, where);
  lab.tasks = createTasks(moduleFor);
  lab.transformer = (config) => new TrainableTransformer(moduleFor('transformer'), config);
  lab.scaledDotProductAttentionBackward = (q, k, v, dOutput, options) =>
    sdpaBackward(moduleFor('scaledDotProductAttentionBackward'), q, k, v, dOutput, options);
  return lab;
}
