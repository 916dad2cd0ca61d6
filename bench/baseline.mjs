// --baseline <git-rev> (bench/bench.mjs): the library of an earlier revision,
// built once, wasm SIMD only, into build/baseline-<sha12>/ (ignored by git;
// later runs reuse it). Its web/ (wrapper + web/dist/attention_lab_simd.*)
// is what the 'ours-simd-base' rows load (bench/impl-ours.mjs), so that the
// current build and the baseline are measured in the same run.
//
//   node bench/baseline.mjs <git-rev>    builds (or finds) it and prints its web/ path
//
// The tree comes from `git archive <rev>` (no worktree to clean up), and is
// built with that revision's own CMakeLists.txt (emcmake, Release,
// ATTNLAB_WASM_SIMD=ON, no tests), as its scripts/build.sh would.
import { execFileSync, execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Builds (or finds) the baseline library of `rev`.
 * @param {string} rev any git revision (commit, tag, branch, HEAD~3)
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {{ rev: string, sha: string, short: string, web: string, dir: string }}
 */
export function prepareBaseline(rev, { log = (line) => console.error(line) } = {}) {
  let sha;
  try {
    sha = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${rev}^{commit}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    throw new Error(`--baseline: ${JSON.stringify(rev)} is not a commit of this repository`);
  }
  const short = sha.slice(0, 12);
  const dir = path.join(root, 'build', `baseline-${short}`);
  const web = path.join(dir, 'web');
  const stamp = path.join(dir, '.built');
  const glue = path.join(web, 'dist', 'attention_lab_simd.mjs');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8').trim() === sha && fs.existsSync(glue)) {
    return { rev, sha, short, web, dir };
  }
  log(`--baseline ${rev}: building ${short} (wasm SIMD) into ${path.relative(process.cwd(), dir)} (once; later runs reuse it)`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  execSync(`git -C ${JSON.stringify(root)} archive --format=tar ${sha} | tar -x -C ${JSON.stringify(dir)}`, { stdio: ['ignore', 'ignore', 'inherit'] });
  const env = { ...process.env, NODE_PATH: `/usr/share/nodejs${process.env.NODE_PATH ? `:${process.env.NODE_PATH}` : ''}` };
  const build = path.join(dir, 'build', 'wasm-simd');
  const generator = (() => {
    try {
      execFileSync('ninja', ['--version'], { stdio: 'ignore' });
      return ['-G', 'Ninja'];
    } catch {
      return [];
    }
  })();
  const run = (cmd, args) => execFileSync(cmd, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] });
  if (fs.existsSync(path.join(dir, 'scripts', 'embed-wgsl.mjs'))) run(process.execPath, ['scripts/embed-wgsl.mjs']);
  // web/lib/vendor/ is generated (ignored by git, so not in the archive) from node_modules, which
  // the archive lacks too; its wrapper imports it: take this checkout's copy
  const vendor = path.join(root, 'web', 'lib', 'vendor');
  if (fs.existsSync(vendor) && !fs.existsSync(path.join(dir, 'web', 'lib', 'vendor'))) fs.cpSync(vendor, path.join(dir, 'web', 'lib', 'vendor'), { recursive: true });
  run('emcmake', ['cmake', '-S', '.', '-B', build, ...generator, '-DCMAKE_BUILD_TYPE=Release', '-DATTNLAB_WASM_SIMD=ON', '-DATTNLAB_BUILD_TESTS=OFF']);
  run('cmake', ['--build', build, '--target', 'attention_lab_simd', '-j2']);
  fs.mkdirSync(path.join(web, 'dist'), { recursive: true });
  for (const ext of ['mjs', 'wasm']) fs.copyFileSync(path.join(build, `attention_lab_simd.${ext}`), path.join(web, 'dist', `attention_lab_simd.${ext}`));
  fs.writeFileSync(stamp, `${sha}\n`);
  return { rev, sha, short, web, dir };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rev = process.argv[2];
  if (!rev) {
    console.error('usage: node bench/baseline.mjs <git-rev>');
    process.exit(2);
  }
  console.log(prepareBaseline(rev).web);
}
