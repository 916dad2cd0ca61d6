// Compile-only check of the components' declarations (attention-lab/components).
import { defineAll, getLab, tokenize, embedToken, viridis, type AttentionLabHeatmap } from '../../web/components/index.js';

async function main(): Promise<void> {
  const defined: boolean = defineAll();
  const lab = await getLab('wasm');
  const tokens: string[] = tokenize('the cat sat', { maxTokens: 16 });
  const emb: Float32Array = embedToken(tokens[0], 1, 8);
  const heat = document.createElement('attention-lab-heatmap') as AttentionLabHeatmap;
  heat.tokens = tokens;
  heat.attention = { data: new Float32Array(9), shape: [1, 3, 3] };
  document.body.append(heat);
  console.log(defined, lab.backend, emb.length, viridis, heat.maps.length);
}
void main();

// <attention-lab-lm-trainer> (registered in ELEMENTS, issue 35).
{
  const C: typeof import('../../web/components/index.js').AttentionLabLmTrainer = (await import('../../web/components/index.js')).ELEMENTS['attention-lab-lm-trainer'];
  const el = new C();
  const r: Promise<import('../../web/components/index.js').LmTrainerReport> = el.play();
  void r;
  const snaps: number = el.snapshots.length + el.history.length + el.heldout.length;
  void snaps;
  el.showSnapshot(null);
}
