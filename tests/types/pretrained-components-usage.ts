// Compile-only check of the components on the shipped models (issue 22): the heatmap's model
// attribute and <attention-lab-next-token>.
import { defineAll, type AttentionLabHeatmap, type AttentionLabNextToken, type NextTokenGeneration } from '../../web/components/index.js';

async function main(): Promise<void> {
  defineAll();
  const heat = document.createElement('attention-lab-heatmap') as AttentionLabHeatmap;
  heat.setAttribute('model', 'zh');
  heat.setAttribute('text', '白日依山尽，黄河入海流。');
  document.body.append(heat);
  await heat.updateComplete;
  const run = heat.modelRun;
  if (run) console.log(run.model, run.layer, run.attention.shape, run.unknown.join(''));
  const nt = document.createElement('attention-lab-next-token');
  nt.setAttribute('model', 'en');
  document.body.append(nt);
  const first: string | null | undefined = nt.nextRun?.list[0]?.token;
  const g: NextTokenGeneration | null = await nt.generate();
  nt.stop();
  const el: AttentionLabNextToken = nt;
  console.log(first, g?.ids.length, g?.state, el.generation?.attention?.shape);
}
void main();
