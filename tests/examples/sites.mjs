// What the examples test knows of each documentation site: its component
// page, a link to another page, how its dark toggle is worked, whether it
// navigates on the client, and the Content-Security-Policy it is served with
// (the one docs/embedding.md gives for it).
import { inlineScriptHashes } from './server.mjs';

const WASM = "'wasm-unsafe-eval'";

export const SITES = {
  vitepress: {
    page: '/vitepress/components.html',
    away: '.VPSidebar a[href="/vitepress/other.html"]',
    back: '.vp-doc a[href$="components.html"]',
    clientNav: true,
    // VitePress's own inline scripts (dark-mode check, page hash map) by hash;
    // Vue sets style attributes, hence 'unsafe-inline' for styles.
    csp: (html) => `default-src 'self'; script-src 'self' ${WASM} ${inlineScriptHashes(html).join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; worker-src 'self'`,
    isDark: () => document.documentElement.classList.contains('dark'),
    toggleDark: async (page) => page.locator('.VPNavBar button.VPSwitchAppearance:visible').first().click(),
  },
  docusaurus: {
    page: '/docusaurus/components/',
    away: 'nav.menu a[href="/docusaurus/other/"]',
    back: 'article a[href="/docusaurus/components/"]',
    clientNav: true,
    csp: (html) => `default-src 'self'; script-src 'self' ${WASM} ${inlineScriptHashes(html).join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; worker-src 'self'`,
    isDark: () => document.documentElement.dataset.theme === 'dark',
    toggleDark: async (page) => page.locator('.navbar button[class*="toggleButton"]').first().click(),
  },
  starlight: {
    page: '/starlight/components/',
    away: 'nav.sidebar a[href="/starlight/other/"]',
    back: '.sl-markdown-content a[href="/starlight/components/"]',
    clientNav: false,
    csp: (html) => `default-src 'self'; script-src 'self' ${WASM} ${inlineScriptHashes(html).join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; worker-src 'self'`,
    isDark: () => document.documentElement.dataset.theme === 'dark',
    toggleDark: async (page) => page.locator('starlight-theme-select select').first().selectOption('dark'),
  },
  mkdocs: {
    page: '/mkdocs/components/',
    away: '.md-nav--primary a[href="../other/"]',
    back: '.md-content a[href="../components/"]',
    clientNav: true,
    csp: (html) => `default-src 'self'; script-src 'self' ${WASM} ${inlineScriptHashes(html).join(' ')}; style-src 'self'; img-src 'self' data:; font-src 'self'; worker-src 'self'`,
    isDark: () => document.body.getAttribute('data-md-color-scheme') === 'slate',
    toggleDark: async (page) => page.locator('form[data-md-component="palette"] label:visible').first().click(),
  },
  sphinx: {
    page: '/sphinx/components.html',
    away: '.sidebar-tree a[href="other.html"]',
    back: 'article a[href="components.html"]',
    clientNav: false,
    csp: (html) => `default-src 'self'; script-src 'self' ${WASM} ${inlineScriptHashes(html).join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; worker-src 'self'`,
    isDark: () => document.body.dataset.theme === 'dark',
    toggleDark: async (page) => page.locator('button.theme-toggle:visible').first().click(),
  },
};

/**
 * The elements every site's component page embeds, once each (selectors): the
 * seeded heatmap, the shape flow, the positional-encoding view and the heatmap
 * of the shipped English model (MODEL_EMBED).
 */
export const SEEDED_HEATMAP = 'attention-lab-heatmap:not([model])';
export const EMBEDS = [SEEDED_HEATMAP, 'attention-lab-shape-flow', 'attention-lab-positional-encoding', 'attention-lab-heatmap[model]'];

/**
 * The shipped-model heatmap of every component page: <attention-lab-heatmap
 * model="en" text="…"> (Docusaurus and Starlight: their AttentionLab wrapper).
 * The test checks that it draws lab.pretrained('en')'s attention for this
 * text, as Node computes it, and that the model's files come from the site.
 */
export const MODEL_EMBED = {
  selector: 'attention-lab-heatmap[model]',
  model: 'en',
  text: 'The cat sat on the mat because it was tired.',
  // The package's data/models/en/ files that the element fetches.
  files: ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
};
