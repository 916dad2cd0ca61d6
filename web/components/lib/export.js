// Export of figures (PNG, SVG) and tensors (CSV, JSON). Everything is built
// locally and saved through a temporary blob: URL; nothing leaves the page.
import { fmt } from './dom.js';

/** Saves a Blob under a file name (a download in browsers). */
export function saveBlob(blob, fileName) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  a.rel = 'noopener';
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function canvasToBlob(canvas, type = 'image/png') {
  return new Promise((resolve, reject) => {
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('canvas.toBlob failed'))), type);
  });
}

/** Nested arrays of a flat tensor (for JSON). */
export function toNested(data, shape, offset = 0) {
  if (shape.length === 0) return data[offset];
  if (shape.length === 1) return Array.from(data.subarray(offset, offset + shape[0]), (v) => (Number.isFinite(v) ? v : String(v)));
  const stride = shape.slice(1).reduce((a, b) => a * b, 1);
  const out = [];
  for (let i = 0; i < shape[0]; i++) out.push(toNested(data, shape.slice(1), offset + i * stride));
  return out;
}

export function tensorToJSON(tensor, meta = {}) {
  return JSON.stringify({ ...meta, shape: tensor.shape, data: toNested(tensor.data, tensor.shape) });
}

/**
 * CSV with one row per index of the leading dims: the leading indices
 * (named by `dimNames`, default d0, d1, …) then the last dim's values.
 */
export function tensorToCSV(tensor, dimNames) {
  const { data, shape } = tensor;
  const last = shape[shape.length - 1] ?? 1;
  const lead = shape.slice(0, -1);
  const names = dimNames ?? shape.map((_, i) => `d${i}`);
  const head = [...lead.map((_, i) => names[i]), ...Array.from({ length: last }, (_, j) => `${names[shape.length - 1]}=${j}`)];
  const lines = [head.join(',')];
  const rows = data.length / last;
  const idx = new Array(lead.length).fill(0);
  for (let r = 0; r < rows; r++) {
    const vals = Array.from(data.subarray(r * last, (r + 1) * last), (v) => String(v));
    lines.push([...idx, ...vals].join(','));
    for (let k = lead.length - 1; k >= 0; k--) {
      if (++idx[k] < lead[k]) break;
      idx[k] = 0;
    }
  }
  return lines.join('\n') + '\n';
}

export function saveTensor(tensor, name, format, dimNames) {
  const base = safeName(name);
  if (format === 'json') {
    saveBlob(new Blob([tensorToJSON(tensor, { name })], { type: 'application/json' }), `${base}.json`);
  } else {
    saveBlob(new Blob([tensorToCSV(tensor, dimNames)], { type: 'text/csv' }), `${base}.csv`);
  }
}

export function safeName(name) {
  return String(name || 'tensor').replace(/[^\p{L}\p{N}_.-]+/gu, '_').slice(0, 80) || 'tensor';
}

export function escapeXml(s) {
  return String(s).replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]);
}

export { fmt };
