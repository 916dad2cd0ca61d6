#!/usr/bin/env node
// examples-build.mjs — builds the documentation-site examples (issue 24) into
// build/examples/<name>/, each a static site for a plain static server at the
// base path /<name>/.
//
//   npm run examples:build -- [name ...] [--force] [--update-locks]
//   node scripts/examples-build.mjs vitepress docusaurus
//
// Sites: vitepress, docusaurus, starlight (npm: each folder has its own
// package.json and package-lock.json), mkdocs, sphinx (Debian's mkdocs +
// mkdocs-material, python3-sphinx + furo; installed with apt-get when missing
// and running as root). No name: all five.
//
// Every example depends on the package as an npm user gets it: the tarball
// that `npm run pack` makes (scripts/pack.mjs), written to
// build/examples-pkg/attention-lab.tgz, so the build sees the published files
// only (package.json `files` and `exports`), installed by npm. The web/dist
// wasm must be built first (npm run build).
//
// Caching (a clean clone builds everything):
//   - node_modules of an example is installed with `npm ci` when missing or
//     when its package.json / package-lock.json changed (a stamp holds their
//     hash); when only the tarball changed, node_modules/attention-lab is
//     replaced by the new tarball's files (and the bundlers' caches dropped).
//   - a site is rebuilt when the hash of its inputs changed: its folder (less
//     node_modules and generated files), the tarball, the tool versions and
//     this script. --force rebuilds anyway.
//
// --update-locks: `npm install` in each npm example (to refresh its lock after
// a change of its package.json), then drops the `integrity` of the local
// tarball from the lock: the tarball changes with every change of the
// package, and npm ci would otherwise take the cached copy of the old one.
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pack } from './pack.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_ROOT = path.join(ROOT, 'build', 'examples');
export const PKG_TARBALL = path.join(ROOT, 'build', 'examples-pkg', 'attention-lab.tgz');

/** The example sites: how each installs and builds. */
export const SITES = {
  vitepress: { kind: 'npm', build: ['npx', '--no-install', 'vitepress', 'build', 'docs'] },
  docusaurus: { kind: 'npm', build: ['npx', '--no-install', 'docusaurus', 'build', '--out-dir', '../../build/examples/docusaurus'] },
  starlight: { kind: 'npm', build: ['npx', '--no-install', 'astro', 'build'] },
  mkdocs: { kind: 'python', copyTo: 'docs/assets/attention-lab', build: ['mkdocs', 'build', '--strict', '--site-dir', '../../build/examples/mkdocs'] },
  sphinx: { kind: 'python', copyTo: 'source/_static/attention-lab', build: ['sphinx-build', '-W', '-q', '-b', 'html', '-d', '../../build/examples-doctrees/sphinx', 'source', '../../build/examples/sphinx'] },
};

// What the sites without a bundler (mkdocs, sphinx) copy from the installed
// package into their static files, keeping the package's layout.
export const COPIED = ['web', 'data/models'];

// Files inside an example folder that are generated, not inputs.
const GENERATED = new Set(['node_modules', '.docusaurus', '.astro', 'dist', 'build', '.cache', 'cache', '__pycache__', 'attention-lab', '.doctrees']);

function log(msg) {
  console.log(`examples-build: ${msg}`);
}

function sha256(...parts) {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

function fileHash(file) {
  return sha256(fs.readFileSync(file));
}

/** Hash of every input file under dir (sorted paths + contents), skipping generated folders. */
function treeHash(dir) {
  const h = crypto.createHash('sha256');
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (GENERATED.has(e.name)) continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        h.update(path.relative(dir, p) + '\0');
        h.update(fs.readFileSync(p));
      }
    }
  };
  walk(dir);
  return h.digest('hex');
}

function run(cmd, args, opts = {}) {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal}) in ${opts.cwd ?? process.cwd()}`);
  return (Date.now() - t0) / 1000;
}

let packedSha = null;

/**
 * Packs the package into build/examples-pkg/attention-lab.tgz (rewritten
 * only when its bytes change), once per process. Returns its SHA-256.
 */
export function ensureTarball() {
  if (packedSha && fs.existsSync(PKG_TARBALL)) return packedSha;
  for (const f of ['attention_lab_simd.wasm', 'attention_lab_scalar.wasm', 'attention_lab_threads.wasm']) {
    if (!fs.existsSync(path.join(ROOT, 'web', 'dist', f))) throw new Error(`web/dist/${f} is missing: build the wasm first (npm run build)`);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-examples-'));
  try {
    const info = pack({ destination: tmp });
    const fresh = path.join(tmp, info.filename);
    fs.mkdirSync(path.dirname(PKG_TARBALL), { recursive: true });
    if (!fs.existsSync(PKG_TARBALL) || fileHash(PKG_TARBALL) !== fileHash(fresh)) {
      fs.copyFileSync(fresh, PKG_TARBALL);
      log(`packed ${path.relative(ROOT, PKG_TARBALL)} (${(fs.statSync(PKG_TARBALL).size / 1024).toFixed(0)} KiB)`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  packedSha = fileHash(PKG_TARBALL);
  for (const m of missingAssets()) log(`warning: the package's ${m.from} refers to ${m.target}, which the package does not contain (webpack, so Docusaurus, fails on it; Vite leaves the URL as it is)`);
  return packedSha;
}

/** `new URL('…', import.meta.url)` targets of the tarball's JS files that the tarball lacks. */
function missingAssets() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-pkg-'));
  try {
    execFileSync('tar', ['-xzf', PKG_TARBALL, '-C', dir]);
    const root = path.join(dir, 'package');
    const out = [];
    const walk = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.m?js$/.test(e.name)) {
          const text = fs.readFileSync(p, 'utf8');
          for (const m of text.matchAll(/new URL\(\s*['"](\.{1,2}\/[^'"?#]+)[^'"]*['"]\s*,\s*import\.meta\.url\s*\)/g)) {
            const target = path.resolve(path.dirname(p), m[1]);
            if (!fs.existsSync(target)) out.push({ from: path.relative(root, p), target: path.relative(root, target) });
          }
        }
      }
    };
    walk(path.join(root, 'web'));
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The tarball's package.json. */
function tarballManifest() {
  const out = execFileSync('tar', ['-xzOf', PKG_TARBALL, 'package/package.json'], { encoding: 'utf8' });
  return JSON.parse(out);
}

/** Strips the integrity of the local tarball from an example's lock (see --update-locks). */
function stripTarballIntegrity(dir) {
  const lockFile = path.join(dir, 'package-lock.json');
  const lock = JSON.parse(fs.readFileSync(lockFile, 'utf8'));
  const entry = lock.packages?.['node_modules/attention-lab'];
  if (entry && 'integrity' in entry) {
    delete entry.integrity;
    fs.writeFileSync(lockFile, JSON.stringify(lock, null, 2) + '\n');
  }
}

/** npm ci when needed; swaps in a changed tarball. */
function ensureNodeModules(name, dir, tarSha, { updateLocks = false } = {}) {
  const nm = path.join(dir, 'node_modules');
  if (updateLocks) {
    log(`${name}: npm install (refreshing package-lock.json)`);
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
    stripTarballIntegrity(dir);
  }
  const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
  const lockDeps = lock.packages?.['node_modules/attention-lab']?.dependencies ?? {};
  const tarDeps = tarballManifest().dependencies ?? {};
  if (JSON.stringify(lockDeps) !== JSON.stringify(tarDeps)) {
    throw new Error(`${name}: the package's dependencies (${JSON.stringify(tarDeps)}) differ from examples/${name}/package-lock.json (${JSON.stringify(lockDeps)}): run node scripts/examples-build.mjs ${name} --update-locks`);
  }
  const depStamp = path.join(nm, '.attnlab-examples-deps');
  const pkgStamp = path.join(nm, '.attnlab-examples-pkg');
  const want = sha256(fs.readFileSync(path.join(dir, 'package.json')), fs.readFileSync(path.join(dir, 'package-lock.json')));
  if (!fs.existsSync(depStamp) || fs.readFileSync(depStamp, 'utf8') !== want) {
    log(`${name}: npm ci`);
    const s = run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
    log(`${name}: npm ci took ${s.toFixed(1)} s`);
    fs.writeFileSync(depStamp, want);
    fs.writeFileSync(pkgStamp, tarSha);
  }
  if (!fs.existsSync(pkgStamp) || fs.readFileSync(pkgStamp, 'utf8') !== tarSha) {
    log(`${name}: the package changed: replacing node_modules/attention-lab with the new tarball`);
    const dest = path.join(nm, 'attention-lab');
    fs.rmSync(dest, { recursive: true, force: true });
    fs.mkdirSync(dest, { recursive: true });
    execFileSync('tar', ['-xzf', PKG_TARBALL, '-C', dest, '--strip-components=1']);
    // Bundler caches may key node_modules files by package version only.
    for (const c of ['.cache', '.vite', '.astro', '.vitepress-cache']) fs.rmSync(path.join(nm, c), { recursive: true, force: true });
    fs.writeFileSync(pkgStamp, tarSha);
  }
}

function hasCommand(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Debian package installed (true where there is no dpkg: then only the commands are checked). */
function debInstalled(pkg) {
  if (!hasCommand('dpkg-query')) return true;
  const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.includes('install ok installed');
}

/** Debian's mkdocs, mkdocs-material, python3-sphinx and furo, installed when missing (as root). */
function ensureDebianTools(name) {
  const pkgs = name === 'mkdocs' ? ['mkdocs', 'mkdocs-material'] : ['python3-sphinx', 'furo'];
  const ok = () => hasCommand(name === 'mkdocs' ? 'mkdocs' : 'sphinx-build') && pkgs.every(debInstalled);
  if (ok()) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`${name} needs Debian packages: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs.join(' ')}`);
  }
  log(`${name}: apt-get install ${pkgs.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env }).status === 0;
  if (!install()) {
    run('apt-get', ['update'], { env });
    if (!install()) throw new Error(`apt-get install ${pkgs.join(' ')} failed`);
  }
  if (!ok()) throw new Error(`${name}: still missing after apt-get install ${pkgs.join(' ')}`);
}

function toolVersions(name) {
  const q = (cmd, args) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  if (name === 'mkdocs') return q('dpkg-query', ['-W', 'mkdocs', 'mkdocs-material']);
  if (name === 'sphinx') return q('dpkg-query', ['-W', 'python3-sphinx', 'furo']);
  return process.version;
}

/**
 * Builds one site (if its inputs changed). Returns { name, out, built, seconds }.
 */
export function buildSite(name, { force = false, updateLocks = false } = {}) {
  const site = SITES[name];
  if (!site) throw new Error(`unknown example "${name}": one of ${Object.keys(SITES).join(', ')}`);
  const dir = path.join(ROOT, 'examples', name);
  const out = path.join(OUT_ROOT, name);
  const t0 = Date.now();
  const tarSha = ensureTarball();
  if (site.kind === 'python') ensureDebianTools(name);
  // Every example installs the package with npm (mkdocs and sphinx copy its web/ and data/models/ folders as static files).
  ensureNodeModules(name, dir, tarSha, { updateLocks });
  const stampFile = path.join(out, '.attnlab-build-stamp');
  const want = sha256(treeHash(dir), tarSha, toolVersions(name), fs.readFileSync(fileURLToPath(import.meta.url)));
  if (!force && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === want) {
    log(`${name}: up to date (${path.relative(ROOT, out)}/)`);
    return { name, out, built: false, seconds: (Date.now() - t0) / 1000 };
  }
  fs.rmSync(out, { recursive: true, force: true });
  if (site.copyTo) {
    // The package's browser files as static assets, laid out as in the
    // package: <copyTo>/web/ (define.js loads ../index.js, which finds the
    // .wasm files in dist/ beside it) and <copyTo>/data/models/ (the shipped
    // models, which web/lib/pretrained.js fetches from ../../data/models/).
    const dest = path.join(dir, site.copyTo);
    fs.rmSync(dest, { recursive: true, force: true });
    for (const sub of COPIED) fs.cpSync(path.join(dir, 'node_modules', 'attention-lab', sub), path.join(dest, sub), { recursive: true });
  }
  log(`${name}: ${site.build.join(' ')}`);
  run(site.build[0], site.build.slice(1), { cwd: dir });
  if (!fs.existsSync(path.join(out, 'index.html'))) throw new Error(`${name}: the build wrote no ${path.relative(ROOT, out)}/index.html`);
  fs.writeFileSync(stampFile, want);
  const seconds = (Date.now() - t0) / 1000;
  log(`${name}: built ${path.relative(ROOT, out)}/ in ${seconds.toFixed(1)} s`);
  return { name, out, built: true, seconds };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const names = argv.filter((a) => !a.startsWith('--'));
  const opts = { force: argv.includes('--force'), updateLocks: argv.includes('--update-locks') };
  try {
    for (const n of names.length ? names : Object.keys(SITES)) buildSite(n, opts);
  } catch (e) {
    console.error(`examples-build: error: ${e.message}`);
    process.exit(1);
  }
}
