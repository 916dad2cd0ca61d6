// The entries agree: what `require('attention-lab')` (web/node.cjs) exports
// is what web/index.d.cts declares as values, and each of those is also an
// export of the ESM entries (web/node.js, web/index.js).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ROOT } from './readme-blocks.js';

const require = createRequire(import.meta.url);

test('node.cjs exports exactly the values index.d.cts declares; the ESM entries export them too', async () => {
  const dcts = fs.readFileSync(path.join(ROOT, 'web/index.d.cts'), 'utf8');
  const declared = [...dcts.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]).sort();
  const cjs = Object.keys(require(path.join(ROOT, 'web/node.cjs'))).sort();
  expect(cjs).toEqual(declared);
  const esm = await import(path.join(ROOT, 'web/node.js'));
  for (const name of declared) expect([name, typeof esm[name]]).toEqual([name, 'function']);
  const browserSrc = fs.readFileSync(path.join(ROOT, 'web/index.js'), 'utf8');
  for (const name of declared) expect([name, new RegExp(`\\b${name}\\b`).test(browserSrc)]).toEqual([name, true]);
});
