// @ts-check
// Served from /docusaurus/ (build/examples/docusaurus/ under a static server).
// trailingSlash: true writes every page as <route>/index.html and links to
// <route>/, which any static server finds without rewrite rules.

/** @type {import('@docusaurus/types').Config} */
module.exports = {
  title: 'attention-lab in Docusaurus',
  tagline: 'attention-lab web components embedded in a Docusaurus site',
  url: 'http://127.0.0.1',
  baseUrl: '/docusaurus/',
  trailingSlash: true,
  onBrokenLinks: 'throw',
  markdown: { hooks: { onBrokenMarkdownLinks: 'throw' } },
  i18n: { defaultLocale: 'en', locales: ['en'] },
  presets: [
    [
      'classic',
      /** @type {import('@docusaurus/preset-classic').Options} */
      ({
        docs: { routeBasePath: '/', sidebarPath: require.resolve('./sidebars.js') },
        blog: false,
        theme: { customCss: require.resolve('./src/css/custom.css') },
      }),
    ],
  ],
  // Registers the elements in the browser only (see the file).
  clientModules: [require.resolve('./src/attention-lab-client.js')],
  themeConfig: {
    colorMode: { defaultMode: 'light', respectPrefersColorScheme: false },
    navbar: { title: 'attention-lab', items: [{ to: '/components/', label: 'Components', position: 'left' }] },
  },
};
