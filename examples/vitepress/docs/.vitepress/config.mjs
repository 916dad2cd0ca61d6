import { defineConfig } from 'vitepress';

// Served from /vitepress/ (build/examples/vitepress/ under a static server).
export default defineConfig({
  title: 'attention-lab in VitePress',
  description: 'attention-lab web components embedded in a VitePress site',
  base: '/vitepress/',
  outDir: '../../../build/examples/vitepress',
  cacheDir: '../node_modules/.vitepress-cache',
  // Links end in .html, so a plain static server finds the files as they are.
  cleanUrls: false,
  // No inline script of ours; VitePress's own appearance script stays (see docs/embedding.md for its CSP).
  appearance: true,
  lastUpdated: false,
  vue: {
    template: {
      compilerOptions: {
        // <attention-lab-*> are custom elements: Vue must not try to resolve them as components.
        isCustomElement: (tag) => tag.startsWith('attention-lab-'),
      },
    },
  },
  vite: {
    // The threaded build's worker is an ES module: Vite's default worker format (iife) fails.
    worker: { format: 'es' },
    build: {
      // VitePress 1 bundles Vite 5, which ignores the package's `?no-inline`
      // and would inline files under 4 KB as data: URLs: the 2 KB threads
      // worker script (a worker the CSP and COEP refuse) and the shipped
      // models' small JSON files (config.json, tokenizer.json: a fetch of a
      // data: URL, which the CSP's connect-src 'self' refuses). Keep the
      // package's files as files.
      assetsInlineLimit: (file) => (/attention_lab_|[\\/]attention-lab[\\/]data[\\/]models[\\/]/.test(file) ? false : undefined),
    },
  },
  themeConfig: {
    nav: [{ text: 'Guide', link: '/' }, { text: 'Components', link: '/components' }],
    sidebar: [
      { text: 'Guide', items: [{ text: 'Introduction', link: '/' }, { text: 'Components', link: '/components' }, { text: 'Another page', link: '/other' }] },
    ],
  },
});
