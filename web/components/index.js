// attention-lab/components — web components for documentation sites.
//
//   import { defineAll } from 'attention-lab/components';
//   defineAll();                       // or: import 'attention-lab/components/define.js'
//
// Elements: <attention-lab-explorer>, <attention-lab-heatmap>,
// <attention-lab-shape-flow>, <attention-lab-positional-encoding>,
// <attention-lab-model-view>, <attention-lab-next-token> (the shipped models'
// next characters and generation), <attention-lab-trainer> (synthetic tasks) and
// <attention-lab-lm-trainer> (a character-level GPT-2 trained live on a shipped corpus).
// Configured by attributes; rich data (attention arrays, token lists) set as
// properties. Styles live in each shadow root (constructable stylesheets) and
// follow the --al-* CSS variables (--al-fg, --al-bg, --al-card, --al-muted,
// --al-border, --al-accent, --al-on-accent, --al-error, --al-font, --al-mono).
// Every element starts lazily when it scrolls near the viewport (attribute
// `eager` to start at once) and all share one wasm instance per page.
//
// Importing this module has no side effects and does not touch the DOM, so it
// is safe in Node and during server-side rendering.
import { AttentionLabExplorer } from './elements/explorer-element.js';
import { AttentionLabHeatmap } from './elements/heatmap-element.js';
import { AttentionLabShapeFlow } from './elements/shape-flow-element.js';
import { AttentionLabPositionalEncoding } from './elements/pe-element.js';
import { AttentionLabTrainer } from './elements/trainer-element.js';
import { AttentionLabModelView } from './elements/model-view-element.js';
import { AttentionLabNextToken } from './elements/next-token-element.js';
import { AttentionLabLmTrainer } from './elements/lm-trainer-element.js';

export { AttentionLabExplorer, AttentionLabHeatmap, AttentionLabShapeFlow, AttentionLabPositionalEncoding, AttentionLabModelView, AttentionLabTrainer, AttentionLabNextToken, AttentionLabLmTrainer };
export { getLab } from './lib/lab-instance.js';
export { Heatmap, linkHeatmaps } from './lib/heatmap.js';
export { ShapeFlow } from './lib/shape-flow.js';
export { viridis, diverging } from './lib/palette.js';
export { tokenize, embedToken } from './lib/tokens.js';
export { translator } from './lib/i18n.js';
export { WorkerModel, listModel, isModelFolder } from './lib/model-client.js';

/** Tag name → element class. */
export const ELEMENTS = Object.freeze({
  'attention-lab-explorer': AttentionLabExplorer,
  'attention-lab-heatmap': AttentionLabHeatmap,
  'attention-lab-shape-flow': AttentionLabShapeFlow,
  'attention-lab-positional-encoding': AttentionLabPositionalEncoding,
  'attention-lab-trainer': AttentionLabTrainer,
  'attention-lab-model-view': AttentionLabModelView,
  'attention-lab-next-token': AttentionLabNextToken,
  'attention-lab-lm-trainer': AttentionLabLmTrainer,
});

/**
 * Defines every element that is not defined yet. Returns false (and does
 * nothing) where there is no custom-element registry, e.g. in Node.
 * @param {CustomElementRegistry} [registry]
 * @returns {boolean}
 */
export function defineAll(registry = typeof customElements !== 'undefined' ? customElements : undefined) {
  if (!registry || typeof HTMLElement !== 'function') return false;
  for (const [tag, cls] of Object.entries(ELEMENTS)) {
    if (!registry.get(tag)) registry.define(tag, cls);
  }
  return true;
}
