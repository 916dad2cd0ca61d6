// Weight files in and out (safetensors, .npy, .npz) and the mapping of
// framework state dicts onto this library's weights. Pure JS: usable without
// init(), and also exposed on the lab object (lab.readSafetensors, …).
export { readSafetensors, writeSafetensors, openSafetensors, MAX_HEADER_BYTES } from './safetensors.js';
export { readNpy, writeNpy } from './npy.js';
export { readNpz, writeNpz } from './npz.js';
export { openTorchFile, isTorchCheckpoint } from './torch.js'; // PyTorch's torch.save (read only)
export { listAttentionLayers, fromStateDict, toStateDict, layerTensorNames, loadStateDict, moduleStateDict, STATE_DICT_FORMATS } from './state-dict.js';

import { readSafetensors, writeSafetensors, openSafetensors } from './safetensors.js';
import { readNpy, writeNpy } from './npy.js';
import { readNpz, writeNpz } from './npz.js';
import { listAttentionLayers, fromStateDict, toStateDict, layerTensorNames } from './state-dict.js';

/** The functions added to the lab object (see lab.js). */
export const IO_API = Object.freeze({
  readSafetensors, writeSafetensors, openSafetensors, readNpy, writeNpy, readNpz, writeNpz,
  listAttentionLayers, fromStateDict, toStateDict, layerTensorNames,
});
export { readGguf, openGguf, parseGgufHeader, writeGguf, dequantizeGgml, GGML_TYPES } from './gguf.js';
