// Copies the browser-ready ES module of @huggingface/tokenizers (a
// dependency: Apache-2.0, no dependencies of its own) into web/lib/vendor/,
// with its licence, so that web/lib imports it by a relative path: the page
// and docs sites serve web/ as it is, where a bare specifier would need an
// import map (an inline script, which the page's CSP refuses). Bundlers and
// Node read the same file. Run by scripts/build.sh.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = path.join(root, 'node_modules', '@huggingface', 'tokenizers');
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const out = path.join(root, 'web', 'lib', 'vendor');
fs.mkdirSync(out, { recursive: true });
const src = fs.readFileSync(path.join(pkgDir, 'dist', 'tokenizers.min.mjs'), 'utf8');
const header = `// ${pkg.name} ${pkg.version} (${pkg.license}), copied from its dist/tokenizers.min.mjs by\n// scripts/vendor.mjs; licence: tokenizers.LICENSE beside this file. Do not edit.\n`;
fs.writeFileSync(path.join(out, 'tokenizers.js'), header + src);
fs.copyFileSync(path.join(pkgDir, 'LICENSE'), path.join(out, 'tokenizers.LICENSE'));
fs.writeFileSync(path.join(out, 'tokenizers.d.ts'), `export { Tokenizer } from '${pkg.name}';\n`);
