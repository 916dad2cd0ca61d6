// Repaints canvases when a site switches between light and dark. Shadow-root
// CSS follows the --al-* variables by itself, but canvas text and lines are
// painted with the values read at draw time, so a theme switch must redraw
// them. Documentation frameworks switch themes by changing an attribute on
// <html> or <body>, not prefers-color-scheme:
//   VitePress       class="dark" on <html>
//   Docusaurus      data-theme="dark" on <html>
//   Starlight       data-theme="dark" on <html>
//   MkDocs Material data-md-color-scheme="slate" on <body>
//   Sphinx Furo     data-theme="dark" on <body>
// One MutationObserver (and one media-query listener) serves every element of
// the page; it exists only while an element is connected. Nothing happens at
// import: safe in Node and during server-side rendering.
import { clearCssVarCache } from './dom.js';

const ATTRIBUTES = ['class', 'style', 'data-theme', 'data-md-color-scheme', 'data-bs-theme', 'data-mode'];
const listeners = new Set();
let observer = null;
let media = null;
let queued = false;

function notify() {
  if (queued) return;
  queued = true;
  // One repaint per frame, after the framework has set all its attributes.
  const run = () => {
    queued = false;
    clearCssVarCache();
    for (const fn of [...listeners]) {
      try {
        fn();
      } catch (e) {
        console.error(e);
      }
    }
  };
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(run);
  else setTimeout(run, 0);
}

function start() {
  if (typeof MutationObserver !== 'function' || typeof document === 'undefined') return;
  observer = new MutationObserver(notify);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ATTRIBUTES });
  if (document.body) observer.observe(document.body, { attributes: true, attributeFilter: ATTRIBUTES });
  if (typeof matchMedia === 'function') {
    media = matchMedia('(prefers-color-scheme: dark)');
    media.addEventListener?.('change', notify);
  }
}

function stop() {
  observer?.disconnect();
  observer = null;
  media?.removeEventListener?.('change', notify);
  media = null;
}

/**
 * Calls fn (batched, once per frame) after the page's theme attributes or
 * prefers-color-scheme change. Returns the function that stops it.
 * @param {() => void} fn
 */
export function onThemeChange(fn) {
  listeners.add(fn);
  if (!observer) start();
  return () => {
    listeners.delete(fn);
    if (!listeners.size) stop();
  };
}
