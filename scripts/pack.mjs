#!/usr/bin/env node
// Packs the npm package as it is published: the files `npm pack` would take
// from the repository (package.json `files`), with a package.json stripped of
// what only the repository uses (scripts, which run scripts/*.sh and tests/
// that are not shipped; devDependencies; the jest config; `private`, which
// keeps a plain `npm publish` from the repository root from publishing the
// unstripped manifest). Publish the tarball this writes:
//   npm run pack -- --pack-destination out && npm publish out/attention-lab-<version>.tgz
//
// Usage: node scripts/pack.mjs [--pack-destination DIR] [--dry-run] [--json]
// Prints what `npm pack` prints for the staged folder (the same JSON with --json).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** package.json fields that only the repository uses. */
export const REPO_ONLY_FIELDS = ['scripts', 'devDependencies', 'jest', 'private'];

/** The published manifest: the repository's package.json without REPO_ONLY_FIELDS. */
export function publishedManifest(manifest) {
  const out = { ...manifest };
  for (const k of REPO_ONLY_FIELDS) delete out[k];
  return out;
}

/** Files `npm pack` takes from the repository (paths relative to ROOT). */
export function packedFiles(root = ROOT) {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out)[0].files.map((f) => f.path);
}

/**
 * Stages the package in a temporary folder and runs `npm pack` there.
 * @returns {object} npm pack's JSON record for the tarball (filename, files, …)
 */
export function pack({ destination = process.cwd(), dryRun = false, root = ROOT } = {}) {
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-stage-'));
  try {
    for (const rel of packedFiles(root)) {
      if (rel === 'package.json') continue;
      fs.mkdirSync(path.dirname(path.join(stage, rel)), { recursive: true });
      fs.copyFileSync(path.join(root, rel), path.join(stage, rel));
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(publishedManifest(manifest), null, 2) + '\n');
    const args = ['pack', '--json', '--ignore-scripts', '--pack-destination', path.resolve(destination)];
    if (dryRun) args.push('--dry-run');
    const out = execFileSync('npm', args, { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return JSON.parse(out)[0];
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--pack-destination');
  const info = pack({ destination: at >= 0 ? argv[at + 1] : process.cwd(), dryRun: argv.includes('--dry-run') });
  if (argv.includes('--json')) console.log(JSON.stringify([info], null, 2));
  else console.log(info.filename);
}
