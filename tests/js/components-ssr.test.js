// Server-side rendering safety of `attention-lab/components` (issue 24):
// documentation frameworks (VitePress, Docusaurus, Astro) import it in Node,
// where there is no DOM, no HTMLElement and no customElements. Importing it
// must not throw, and registering must do nothing there.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('attention-lab/components without a DOM', () => {
  test('there is no DOM in this test', () => {
    expect(typeof window).toBe('undefined');
    expect(typeof document).toBe('undefined');
    expect(typeof HTMLElement).toBe('undefined');
    expect(typeof customElements).toBe('undefined');
  });

  test('importing web/components/index.js does not throw; defineAll() is a no-op that returns false', async () => {
    const m = await import('../../web/components/index.js');
    expect(Object.keys(m.ELEMENTS)).toEqual(expect.arrayContaining([
      'attention-lab-heatmap', 'attention-lab-shape-flow', 'attention-lab-positional-encoding', 'attention-lab-explorer',
    ]));
    expect(m.defineAll()).toBe(false);
    expect(typeof customElements).toBe('undefined');
    // A registry given without HTMLElement (a half-shimmed SSR global) is left alone too.
    const calls = [];
    const registry = { get: () => undefined, define: (...a) => calls.push(a) };
    expect(m.defineAll(registry)).toBe(false);
    expect(calls).toEqual([]);
    // The classes exist (a framework may reference them) but extend a stub.
    expect(typeof m.AttentionLabHeatmap).toBe('function');
  });

  test('the side-effect entry define.js imports without throwing', async () => {
    await expect(import('../../web/components/define.js')).resolves.toBeDefined();
  });

  test('plain Node resolves the package entries `attention-lab/components` and `attention-lab/components/define.js` and they do nothing', () => {
    const code = [
      "const m = await import('attention-lab/components');",
      "await import('attention-lab/components/define.js');",
      "console.log(JSON.stringify({ defined: m.defineAll(), hasCE: typeof customElements !== 'undefined' }));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
    expect(JSON.parse(out.trim())).toEqual({ defined: false, hasCE: false });
  });
});
