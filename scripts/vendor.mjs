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
// The part of its API web/lib uses (its own .d.ts files import without
// extensions, which NodeNext type checking refuses).
fs.writeFileSync(path.join(out, 'tokenizers.d.ts'), `// ${pkg.name} ${pkg.version}: the part of its API that web/lib uses.
export declare class Tokenizer {
  constructor(tokenizer: object, config: object);
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[]; tokens: string[] };
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  id_to_token(id: number): string | undefined;
  token_to_id(token: string): number | undefined;
  get_vocab(withAddedTokens?: boolean): Map<string, number>;
  get_added_tokens_decoder(): Map<number, { special: boolean; content: string }>;
}
`);
