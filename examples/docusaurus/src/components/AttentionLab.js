// A small MDX component: React renders the custom element with its
// attributes (strings; React 19 passes them to custom elements as they are),
// and it is upgraded by the client module once registered. The server-side
// render writes the same tag, so hydration matches.
import React from 'react';

const TAGS = {
  heatmap: 'attention-lab-heatmap',
  'shape-flow': 'attention-lab-shape-flow',
  'positional-encoding': 'attention-lab-positional-encoding',
  explorer: 'attention-lab-explorer',
};

export default function AttentionLab({ kind, ...attributes }) {
  const Tag = TAGS[kind];
  if (!Tag) throw new Error(`<AttentionLab kind="${kind}">: one of ${Object.keys(TAGS).join(', ')}`);
  return <Tag {...attributes} />;
}
