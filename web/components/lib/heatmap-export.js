// The heatmap's figure exports (issue 31): a PNG (the map's canvas with its title and legend) and
// an SVG (one rect per cell with its value as a <title>, or one pixelated image above
// MAX_SVG_RECTS cells), both from a drawn Heatmap (lib/heatmap.js): its geometry, palette,
// domain, labels and canvases.
import { MASKED_THRESHOLD, MASKED_RGB } from './palette.js';
import { fmt, cssVar } from './dom.js';
import { canvasToBlob, escapeXml } from './export.js';

export const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif';
const MAX_SVG_RECTS = 128 * 128;

function r2(v) {
  return Math.round(v * 100) / 100;
}

/** A label cut to 12 characters (… when longer). */
export function trunc(s) {
  const str = String(s ?? '');
  return str.length > 12 ? str.slice(0, 11) + '…' : str;
}

/** A PNG of heatmap `m`'s figure: title, map with labels, legend. */
export async function heatmapPNGBlob(m) {
  const g = m.geom;
  const dpr = g.dpr;
  const titleH = m.title ? 22 : 0;
  const legendH = 30;
  const w = Math.max(g.width, 220);
  const c = document.createElement('canvas');
  c.width = Math.round(w * dpr);
  c.height = Math.round((g.height + titleH + legendH) * dpr);
  const ctx = c.getContext('2d');
  ctx.fillStyle = cssVar(m.el, '--al-bg', '#ffffff');
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.drawImage(m.canvas, 0, Math.round(titleH * dpr));
  ctx.scale(dpr, dpr);
  ctx.fillStyle = cssVar(m.el, '--al-fg', '#1d2330');
  ctx.font = `600 13px ${FONT.split('px ')[1]}`;
  ctx.textBaseline = 'middle';
  if (m.title) ctx.fillText(m.title, 6, 11);
  const ly = titleH + g.height + 8;
  ctx.font = FONT;
  ctx.textAlign = 'right';
  ctx.fillText(fmt(m.domain[0], 3), g.left + 36, ly + 5);
  ctx.drawImage(m.legendCanvas, g.left + 40, ly, 140, 10);
  ctx.textAlign = 'left';
  ctx.fillText(fmt(m.domain[1], 3), g.left + 184, ly + 5);
  return canvasToBlob(c);
}

/** An SVG of heatmap `m`'s figure (cells as rects, or one pixelated image when huge). */
export function heatmapSVG(m) {
  const g = m.geom;
  const titleH = m.title ? 22 : 0;
  const w = Math.max(g.width, 240);
  const H = g.height + titleH + 30;
  const fg = cssVar(m.el, '--al-fg', '#1d2330');
  const bg = cssVar(m.el, '--al-bg', '#ffffff');
  const [lo, hi] = m.domain;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${H}" viewBox="0 0 ${w} ${H}" font-family="system-ui, sans-serif" font-size="11">`);
  out.push(`<rect width="100%" height="100%" fill="${bg}"/>`);
  if (m.title) out.push(`<text x="6" y="15" font-size="13" font-weight="600" fill="${fg}">${escapeXml(m.title)}</text>`);
  out.push(`<g transform="translate(0 ${titleH})">`);
  if (m.rows * m.cols <= MAX_SVG_RECTS) {
    out.push('<g shape-rendering="crispEdges">');
    for (let i = 0; i < m.rows; i++) {
      for (let j = 0; j < m.cols; j++) {
        const v = m.valueAt(i, j);
        const fill = v <= MASKED_THRESHOLD ? `rgb(${MASKED_RGB.join(',')})` : m.palette.hexAt(v, lo, hi);
        out.push(`<rect x="${r2(g.left + j * g.cellW)}" y="${r2(g.top + i * g.cellH)}" width="${r2(g.cellW)}" height="${r2(g.cellH)}" fill="${fill}"><title>${i},${j}: ${escapeXml(fmt(v, 4))}</title></rect>`);
      }
    }
    out.push('</g>');
  } else {
    const bmp = m._bitmap();
    const tmp = document.createElement('canvas');
    tmp.width = m.cols;
    tmp.height = m.rows;
    tmp.getContext('2d').drawImage(bmp, 0, 0);
    out.push(`<image x="${g.left}" y="${g.top}" width="${r2(g.plotW)}" height="${r2(g.plotH)}" preserveAspectRatio="none" image-rendering="pixelated" href="${tmp.toDataURL('image/png')}"/>`);
  }
  if (g.showRows) {
    for (let i = 0; i < m.rows; i++) out.push(`<text x="${g.left - 5}" y="${r2(g.top + (i + 0.5) * g.cellH)}" text-anchor="end" dominant-baseline="middle" fill="${fg}">${escapeXml(trunc(m.rowLabels[i]))}</text>`);
  }
  if (g.showCols) {
    for (let j = 0; j < m.cols; j++) {
      const x = r2(g.left + (j + 0.5) * g.cellW);
      out.push(g.rotate
        ? `<text transform="translate(${x} ${g.top - 4}) rotate(-45)" fill="${fg}">${escapeXml(trunc(m.colLabels[j]))}</text>`
        : `<text x="${x}" y="${g.top - 5}" text-anchor="middle" fill="${fg}">${escapeXml(trunc(m.colLabels[j]))}</text>`);
    }
  }
  out.push('</g>');
  const ly = titleH + g.height + 8;
  const stops = [];
  for (let k = 0; k <= 10; k++) stops.push(`<stop offset="${k / 10}" stop-color="${m.palette.hexAt(k / 10, 0, 1)}"/>`);
  out.push(`<defs><linearGradient id="lg">${stops.join('')}</linearGradient></defs>`);
  out.push(`<text x="${g.left + 36}" y="${ly + 9}" text-anchor="end" fill="${fg}">${escapeXml(fmt(lo, 3))}</text>`);
  out.push(`<rect x="${g.left + 40}" y="${ly}" width="140" height="10" fill="url(#lg)"/>`);
  out.push(`<text x="${g.left + 184}" y="${ly + 9}" fill="${fg}">${escapeXml(fmt(hi, 3))}</text>`);
  out.push('</svg>');
  return out.join('\n');
}
