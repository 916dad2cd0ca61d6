// Colour maps for heatmaps: viridis (sequential, colour-blind safe) for
// weights in [0, 1] and ColorBrewer RdBu (diverging, colour-blind safe) for
// signed values. Each map is a 256-entry lookup table of packed RGBA words in
// the byte order ImageData uses, so a heatmap colours a pixel with one store.

// R's viridis(9): the matplotlib map sampled at 9 even steps.
const VIRIDIS_STOPS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21908c', '#27ad81', '#5dc863', '#aadc32', '#fde725'];
// ColorBrewer RdBu (11 classes) from blue (negative) to red (positive).
const DIVERGING_STOPS = ['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7', '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f'];

/** Colour of masked (−1e9) cells before softmax: neutral grey, outside both maps. */
export const MASKED_RGB = [150, 150, 150];
/** Values at or below this are drawn as masked (the tutorial fills with −1e9). */
export const MASKED_THRESHOLD = -1e8;

function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function buildTable(stops) {
  const rgb = stops.map(hexToRgb);
  const table = new Array(256);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (rgb.length - 1);
    const k = Math.min(rgb.length - 2, Math.floor(t));
    const f = t - k;
    table[i] = rgb[k].map((c, j) => Math.round(c + (rgb[k + 1][j] - c) * f));
  }
  return table;
}

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
function pack([r, g, b], a = 255) {
  return littleEndian ? ((a << 24) | (b << 16) | (g << 8) | r) >>> 0 : ((r << 24) | (g << 16) | (b << 8) | a) >>> 0;
}

function makePalette(name, stops, diverging) {
  const rgb = buildTable(stops);
  const packed = new Uint32Array(256);
  for (let i = 0; i < 256; i++) packed[i] = pack(rgb[i]);
  return Object.freeze({
    name,
    diverging,
    rgb,
    packed,
    maskedPacked: pack(MASKED_RGB),
    /** [r, g, b] of the table entry for value v in [lo, hi]. */
    rgbAt(v, lo, hi) {
      return rgb[indexFor(v, lo, hi)];
    },
    cssAt(v, lo, hi) {
      const [r, g, b] = rgb[indexFor(v, lo, hi)];
      return `rgb(${r},${g},${b})`;
    },
    hexAt(v, lo, hi) {
      const [r, g, b] = rgb[indexFor(v, lo, hi)];
      return '#' + ((1 << 24) | (r << 16) | (g << 8) | b).toString(16).slice(1);
    },
  });
}

/** Table index (0..255) of v in [lo, hi]; NaN maps to 0. */
export function indexFor(v, lo, hi) {
  if (!(hi > lo)) return v > lo ? 255 : 0;
  const t = (v - lo) / (hi - lo);
  if (!(t > 0)) return 0;
  if (t >= 1) return 255;
  return Math.round(t * 255);
}

export const viridis = makePalette('viridis', VIRIDIS_STOPS, false);
export const diverging = makePalette('rdbu', DIVERGING_STOPS, true);

export function paletteByName(name) {
  return name === 'diverging' || name === 'rdbu' ? diverging : viridis;
}

/**
 * The value range a heatmap shows: [0, max] (or [0, 1]) for weights,
 * symmetric [−m, m] for signed values. Masked values (≤ −1e8) are ignored.
 */
export function autoDomain(data, { signed = false, fixed = null, start = 0, length = data.length } = {}) {
  if (fixed) return fixed;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = start; i < start + length; i++) {
    const v = data[i];
    if (!(v > MASKED_THRESHOLD) || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === Infinity) return signed ? [-1, 1] : [0, 1];
  if (signed) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    return [-m, m];
  }
  return [Math.min(0, lo), hi > 0 ? hi : 1];
}
