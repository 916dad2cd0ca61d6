// Widget styles as constructable stylesheets (allowed under a strict CSP with
// no 'unsafe-inline'): adopted by every component's shadow root and by the
// tutorial page's document. Everything is themable through --al-* variables.

export const WIDGET_CSS = `
.al-hm { margin: 0; display: inline-flex; flex-direction: column; gap: 4px; max-width: 100%; min-width: 0; vertical-align: top; color: var(--al-fg, #1d2330); }
.al-hm-title { font: 600 0.85rem/1.3 var(--al-font, system-ui, sans-serif); color: var(--al-fg, #1d2330); }
.al-hm-plot { position: relative; max-width: 100%; border-radius: 4px; outline: none; }
.al-hm-plot:focus-visible { box-shadow: 0 0 0 2px var(--al-accent, #2f5fb3); }
.al-hm-canvas, .al-hm-overlay { position: absolute; left: 0; top: 0; display: block; }
.al-hm-overlay { cursor: crosshair; touch-action: none; }
.al-hm-foot { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; }
.al-hm-legend { display: inline-flex; align-items: center; gap: 6px; font: 0.72rem/1 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); }
.al-hm-legend[hidden] { display: none; }
.al-hm-legend-bar { width: 110px; height: 10px; border: 1px solid var(--al-border, #d9dde6); border-radius: 2px; image-rendering: auto; }
.al-hm-legend-masked { display: inline-flex; align-items: center; gap: 4px; }
.al-hm-legend-masked[hidden] { display: none; }
.al-hm-swatch { display: inline-block; width: 10px; height: 10px; background: rgb(150,150,150); border-radius: 2px; }
.al-hm-swatch-marked { background: rgb(64,64,64); }
.al-hm-readout { display: block; min-height: 1.3em; font: 0.76rem/1.3 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); overflow-wrap: anywhere; }
.al-hm-compact .al-hm-legend-bar { width: 52px; }
.al-hm-compact .al-hm-foot { gap: 2px 6px; }
.al-hm-tools { display: inline-flex; gap: 4px; flex-wrap: wrap; }
.al-hm-tools[hidden] { display: none; }
.al-hm-menu { position: relative; }
.al-hm-menu > summary { list-style: none; }
.al-hm-menu > summary::-webkit-details-marker { display: none; }
.al-hm-menu-body { position: absolute; z-index: 5; top: 100%; left: 0; display: flex; gap: 4px; padding: 4px; background: var(--al-card, #fff); border: 1px solid var(--al-border, #d9dde6); border-radius: 6px; box-shadow: 0 4px 14px rgba(0,0,0,.15); }
.al-hm-table { font-size: 0.8rem; }
.al-hm-table[hidden] { display: none; }
.al-hm-table summary { cursor: pointer; color: var(--al-muted, #5b6475); }
.al-hm-table-scroll { max-width: 100%; max-height: 320px; overflow: auto; }
.al-hm-table table { border-collapse: collapse; font: 0.72rem/1.2 var(--al-mono, ui-monospace, monospace); }
.al-hm-table caption { text-align: left; font-weight: 600; padding: 2px 0; }
.al-hm-table th, .al-hm-table td { border: 1px solid var(--al-border, #d9dde6); padding: 1px 4px; text-align: right; white-space: nowrap; }
.al-hm-table th { background: var(--al-card, #fff); position: sticky; top: 0; }
.al-btn { font: 0.8rem/1.2 var(--al-font, system-ui, sans-serif); color: var(--al-fg, #1d2330); background: var(--al-card, #fff); border: 1px solid var(--al-border, #d9dde6); border-radius: 6px; padding: 4px 10px; cursor: pointer; }
.al-btn:hover { border-color: var(--al-accent, #2f5fb3); }
.al-btn:focus-visible { outline: 2px solid var(--al-accent, #2f5fb3); outline-offset: 1px; }
.al-btn[aria-pressed="true"] { background: var(--al-accent, #2f5fb3); color: var(--al-on-accent, #fff); border-color: var(--al-accent, #2f5fb3); }
.al-btn:disabled { opacity: .5; cursor: default; }
.al-icon { vertical-align: -1px; }
.al-btn-small { padding: 1px 6px; font-size: 0.7rem; border-radius: 4px; }
.al-grid { display: flex; flex-wrap: wrap; gap: 10px 14px; align-items: flex-start; }
.al-error { color: var(--al-error, #a3261b); border: 1px solid currentColor; border-radius: 6px; padding: 6px 10px; font: 0.85rem/1.4 var(--al-mono, ui-monospace, monospace); white-space: pre-wrap; overflow-wrap: anywhere; }
.al-error[hidden] { display: none; }
.al-muted { color: var(--al-muted, #5b6475); }

/* shape flow */
.al-flow { display: flex; flex-direction: column; gap: 8px; color: var(--al-fg, #1d2330); font: 0.9rem/1.4 var(--al-font, system-ui, sans-serif); }
.al-flow-bar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.al-flow-range { flex: 1 1 160px; min-width: 120px; accent-color: var(--al-accent, #2f5fb3); }
.al-flow-counter { font: 0.8rem/1 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); min-width: 7em; }
.al-flow-stage { width: 100%; height: auto; display: block; background: var(--al-stage, transparent); border: 1px solid var(--al-border, #d9dde6); border-radius: 8px; }
.al-flow-stage text { fill: var(--al-fg, #1d2330); font-family: var(--al-font, system-ui, sans-serif); }
.al-flow-stage .al-shape-label { font: 600 15px var(--al-mono, ui-monospace, monospace); fill: var(--al-accent, #2f5fb3); }
.al-flow-stage .al-dim-label { font: 11px var(--al-mono, ui-monospace, monospace); fill: var(--al-muted, #5b6475); }
.al-flow-stage .al-step-label { font-weight: 600; font-size: 14px; }
.al-flow-stage .al-formula { font-size: 12px; fill: var(--al-muted, #5b6475); }
.al-slab { cursor: pointer; }
.al-slab rect { stroke: var(--al-slab-stroke, rgba(0,0,0,.35)); stroke-width: 1; }
.al-slab:hover rect, .al-slab:focus rect { stroke: var(--al-accent, #2f5fb3); stroke-width: 2.5; }
.al-slab:focus { outline: none; }
.al-flow-steps { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px; }
.al-flow-steps li { margin: 0; }
.al-flow-steps button { font: 0.72rem/1.25 var(--al-mono, ui-monospace, monospace); background: var(--al-card, #fff); color: var(--al-fg, #1d2330); border: 1px solid var(--al-border, #d9dde6); border-radius: 5px; padding: 2px 6px; cursor: pointer; text-align: left; }
.al-flow-steps button[aria-current="step"] { border-color: var(--al-accent, #2f5fb3); background: var(--al-accent, #2f5fb3); color: var(--al-on-accent, #fff); }
.al-flow-steps .al-step-shape { display: block; opacity: .85; }
.al-flow-values { border-top: 1px dashed var(--al-border, #d9dde6); padding-top: 6px; }
.al-flow-values[hidden] { display: none; }
.al-flow-picks { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; font-size: 0.8rem; }
.al-flow-picks label { display: inline-flex; gap: 4px; align-items: center; }
.al-select, .al-input { font: 0.85rem/1.2 var(--al-font, system-ui, sans-serif); color: var(--al-fg, #1d2330); background: var(--al-card, #fff); border: 1px solid var(--al-border, #d9dde6); border-radius: 6px; padding: 3px 6px; }

/* positional-encoding curves */
.al-curves { display: block; max-width: 100%; }
.al-curves-legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font: 0.75rem/1.2 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); }
.al-curves-legend span::before { content: ""; display: inline-block; width: 14px; height: 3px; margin-right: 4px; vertical-align: middle; background: var(--al-line-color, currentColor); }

@media (prefers-reduced-motion: reduce) {
  .al-hm *, .al-flow * { transition: none !important; animation: none !important; }
}
/* the "what the heads do" panel (lib/heads-panel.js) */
.al-hp { display: grid; gap: 14px; }
.al-hp-sec { min-width: 0; }
.al-hp-sec[hidden], .al-hp-err[hidden], .al-hp-map[hidden] { display: none; }
.al-hp-h { margin: 6px 0 4px; font-size: 0.9rem; }
.al-hp-hint { margin: 0 0 6px; color: var(--al-muted, #5b6475); font-size: 0.8rem; }
.al-hp-err { color: var(--al-danger, #b3261e); font-size: 0.8rem; overflow-wrap: anywhere; }
.al-hp-bar { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: center; margin-bottom: 6px; font-size: 0.8rem; }
.al-hp-bar label { display: inline-flex; gap: 4px; align-items: center; }
.al-hp-num { width: 5.5em; }
.al-hp-tables { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.al-hp-scroll { max-width: 100%; overflow-x: auto; }
.al-hp-table { border-collapse: collapse; font: 0.72rem/1.2 var(--al-mono, ui-monospace, monospace); }
.al-hp-table caption { text-align: left; font: 0.78rem/1.3 var(--al-font, system-ui, sans-serif); color: var(--al-muted, #5b6475); padding-bottom: 2px; caption-side: top; }
.al-hp-table th, .al-hp-table td { border: 1px solid var(--al-border, #d9dde6); padding: 0; text-align: center; }
.al-hp-table th { padding: 1px 4px; font-weight: 500; white-space: pre; }
.al-hp-cell { display: block; width: 100%; min-width: 3.4em; padding: 3px 4px; border: 0; font: inherit; cursor: pointer; background: transparent; color: inherit; }
.al-hp-cell:focus-visible { outline: 2px solid var(--al-accent, #2f5fb3); outline-offset: -2px; }
.al-hp-cell[aria-pressed="true"] { outline: 2px solid var(--al-fg, #1d2330); outline-offset: -3px; }
.al-hp-lens td { padding: 2px 4px; min-width: 1.6em; white-space: pre; }
.al-hp-abl { padding: 3px 6px; min-width: 3.6em; font: inherit; cursor: pointer; border: 0; background: var(--al-card, #fff); color: var(--al-fg, #1d2330); }
.al-hp-abl[aria-pressed="true"] { background: var(--al-fg, #1d2330); color: var(--al-card, #fff); text-decoration: line-through; }
.al-hp-next { list-style: none; margin: 4px 0 0; padding: 0; display: grid; grid-template-columns: max-content max-content max-content; gap: 2px 10px; font: 0.78rem/1.3 var(--al-mono, ui-monospace, monospace); }
.al-hp-next li { display: contents; }
.al-hp-next .al-hp-tok { white-space: pre; }
.al-hp-was { color: var(--al-muted, #5b6475); }
.al-hp-line { margin: 4px 0; font-size: 0.8rem; overflow-wrap: anywhere; }
.al-hp-text { flex: 1 1 18em; min-width: 10em; }
`;

export const HOST_CSS = `
:host { display: block; box-sizing: border-box; font: 15px/1.5 var(--al-font, system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif); color: var(--al-fg, #1d2330); background: var(--al-bg, transparent); contain: content; }
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
.al-root { display: flex; flex-direction: column; gap: 10px; min-height: 40px; }
.al-status { font: 0.8rem/1.3 var(--al-mono, ui-monospace, monospace); color: var(--al-muted, #5b6475); }
.al-controls { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: flex-end; }
.al-controls label { display: flex; flex-direction: column; gap: 2px; font-size: 0.78rem; color: var(--al-muted, #5b6475); }
.al-controls .al-input-text { min-width: 14em; }
.al-tokens { display: flex; flex-wrap: wrap; gap: 4px; list-style: none; margin: 0; padding: 0; }
.al-token { font: 0.8rem/1.2 var(--al-mono, ui-monospace, monospace); border: 1px solid var(--al-border, #d9dde6); border-radius: 4px; padding: 1px 5px; background: var(--al-card, #fff); }
h3 { font-size: 0.95rem; margin: 4px 0; }
`;

let cache = null;
/** The shared CSSStyleSheet objects (null where constructable sheets are missing). */
export function widgetSheets() {
  if (cache) return cache;
  if (typeof CSSStyleSheet !== 'function' || !('replaceSync' in CSSStyleSheet.prototype)) return null;
  const widget = new CSSStyleSheet();
  widget.replaceSync(WIDGET_CSS);
  const host = new CSSStyleSheet();
  host.replaceSync(HOST_CSS);
  cache = { widget, host };
  return cache;
}

/** Adds the widget sheet to a document (once). */
export function adoptWidgetStyles(doc = document) {
  const s = widgetSheets();
  if (!s || doc.adoptedStyleSheets.includes(s.widget)) return;
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, s.widget];
}
