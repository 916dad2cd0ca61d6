// Served from /starlight/ (build/examples/starlight/ under a static server):
// every page is <route>/index.html and links end in a slash, so a plain
// static server finds them without rewrites.
import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';

export default defineConfig({
  base: '/starlight',
  trailingSlash: 'always',
  outDir: '../../build/examples/starlight',
  build: { format: 'directory' },
  integrations: [
    starlight({
      title: 'attention-lab in Starlight',
      customCss: ['./src/styles/attention-lab.css'],
      sidebar: [
        { label: 'Introduction', link: '/' },
        { label: 'Components', link: '/components/' },
        { label: 'Another page', link: '/other/' },
      ],
    }),
  ],
  vite: {
    // The threaded build's worker is an ES module: Vite's default worker format (iife) fails.
    worker: { format: 'es' },
  },
});
