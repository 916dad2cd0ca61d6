// The package README is a user guide that works from the package alone: every
// file it links or names is in the tarball (`npm pack --dry-run --json`), and
// every other link is absolute (into the repository, or elsewhere). The
// published package.json carries no repository-only scripts.
import fs from 'node:fs';
import path from 'node:path';
import { packedFiles, publishedManifest } from '../../scripts/pack.mjs';
import { ROOT, README, relativeLinks, absoluteLinks, namedFiles, shipped, repositoryUrl, codeBlocks } from './readme-blocks.js';

describe('README and the tarball', () => {
  let files;
  beforeAll(() => {
    files = packedFiles(ROOT);
  }, 120000);

  test('the tarball holds the README, the docs and the types', () => {
    for (const f of ['README.md', 'package.json', 'docs/js-api.md', 'web/index.d.ts', 'web/index.d.cts', 'web/node.cjs']) {
      expect(files).toContain(f);
    }
    expect(files.some((f) => f.startsWith('tests/') || f.startsWith('src/') || f.startsWith('scripts/'))).toBe(false);
  });

  test('every relative link of the README resolves inside the package', () => {
    const links = relativeLinks();
    expect(links).toContain('docs/js-api.md');
    const missing = links.filter((l) => !shipped(l.replace(/^\.\//, ''), files));
    expect(missing).toEqual([]);
  });

  test('every file the README names is in the tarball', () => {
    const names = namedFiles();
    expect(names).toEqual(expect.arrayContaining(['web/dist/attention_lab_simd.wasm', 'web/index.d.cts', 'web/components/define.js']));
    const missing = names.filter((n) => !shipped(n, files));
    expect(missing).toEqual([]);
  });

  test('absolute links into the repository use package.json `repository`', () => {
    const repo = repositoryUrl();
    expect(repo).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+$/);
    const host = new URL(repo).host;
    const intoRepo = absoluteLinks().filter((l) => new URL(l).host === host && !l.includes('xtensor-stack'));
    expect(intoRepo.length).toBeGreaterThan(0);
    expect(intoRepo.filter((l) => !(l === repo || l.startsWith(repo + '/') || l.startsWith(repo + '#')))).toEqual([]);
    // Linked repository files exist in this checkout (blob/main/<path>, tree/main/<dir>).
    for (const l of intoRepo) {
      const m = /\/(?:blob|tree)\/main\/(.+)$/.exec(l);
      if (m) expect([l, fs.existsSync(path.join(ROOT, m[1]))]).toEqual([l, true]);
    }
  });

  test('the published package.json has no scripts or dev-only fields', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const pub = publishedManifest(manifest);
    expect(pub.scripts).toBeUndefined();
    expect(pub.devDependencies).toBeUndefined();
    expect(pub.private).toBeUndefined();
    expect(pub.exports['.'].node.require.types).toBe('./web/index.d.cts');
  });

  test('the README has runnable code blocks (compiled and run by package.test.js)', () => {
    const blocks = codeBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    expect(blocks.filter((b) => !b.compileOnly).length).toBeGreaterThanOrEqual(6);
  });
});
