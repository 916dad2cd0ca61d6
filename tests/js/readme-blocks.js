// Reads the package README (not a test file: jest matches *.test.js). Used by
// readme.test.js (every file the README names is shipped) and package.test.js
// (every code block compiles and runs from the installed tarball).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The repository URL of package.json `repository` (https, no .git). */
export function repositoryUrl() {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

/**
 * The fenced ```js / ```ts blocks: { lang, code, compileOnly, line }.
 * A block right after `<!-- readme-test: compile-only -->` is compiled but
 * not run (browser-only code). Indented blocks (in list items) are dedented.
 */
export function codeBlocks(text = README) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) j++;
    const lang = open[2];
    if (lang === 'js' || lang === 'ts') {
      let k = i - 1;
      while (k >= 0 && lines[k].trim() === '') k--;
      blocks.push({
        lang,
        line: i + 1,
        compileOnly: k >= 0 && lines[k].trim() === '<!-- readme-test: compile-only -->',
        code: lines.slice(i + 1, j).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join('\n') + '\n',
      });
    }
    i = j;
  }
  return blocks;
}

/** Relative markdown link targets (anchors stripped), e.g. 'docs/js-api.md'. */
export function relativeLinks(text = README) {
  const out = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
    out.push(target.split('#')[0]);
  }
  return out;
}

/** Absolute http(s) link targets. */
export function absoluteLinks(text = README) {
  return [...text.matchAll(/\]\((https?:\/\/[^)\s]+)\)/g)].map((m) => m[1]);
}

/**
 * Package file paths the README names in `code spans` or in src/href
 * attributes: spans that start with a folder of the repository (web/, docs/,
 * …) or node_modules/attention-lab/, and *.md names. Braces ({a,b}) expand.
 */
export function namedFiles(text = README) {
  const names = new Set();
  const add = (s) => {
    let p = s.replace(/^\/?node_modules\/attention-lab\//, '');
    if (!/^(web|docs|examples|bench|tests|scripts|src|bindings)\//.test(p) && !/^[\w.-]+\.md$/.test(p)) return;
    const brace = /\{([^}]*)\}/.exec(p);
    if (brace) {
      for (const alt of brace[1].split(',')) add(p.replace(brace[0], alt));
      return;
    }
    names.add(p);
  };
  for (const m of text.matchAll(/`([^`\s]+)`/g)) add(m[1]);
  for (const m of text.matchAll(/(?:src|href)="([^"]+)"/g)) add(m[1]);
  return [...names];
}

/** True when `name` (a file, a folder ending in '/', or a '*' glob) is among `files`. */
export function shipped(name, files) {
  if (name.endsWith('/')) return files.some((f) => f.startsWith(name));
  if (name.includes('*')) {
    const re = new RegExp('^' + name.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*') + '$');
    return files.some((f) => re.test(f));
  }
  return files.includes(name);
}
