import { init, readSafetensors, writeNpz, openSafetensors } from '../../web/index.js';
const lab = await init();
const r = lab.readSafetensors(new Uint8Array(8));
const t = readSafetensors(new ArrayBuffer(8), { names: ['a'] }).tensors.a;
const b: Uint8Array = writeNpz({ x: { data: new Float32Array(1), shape: [1], dtype: 'F16' } });
const f = await openSafetensors(new Blob([]));
console.log(r.metadata, t.dtype, b, f.entries[0].byteLength, lab.backend);
