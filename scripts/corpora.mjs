#!/usr/bin/env node
// Rebuilds the language-model corpora of issue 22 from their packages:
//
//   node scripts/corpora.mjs            → data/corpora/{en,zh}/{train,heldout,unseen}.txt
//                                          and data/corpora/stats.json
//   node scripts/corpora.mjs --check    → rebuilds in memory and fails if a committed file differs
//
// 中文: the Tang poems of the npm package chinese-poetry (MIT), fetched with `npm pack` into
// build/cache/ (gitignored; never a dependency), kept in the regular forms (五言/七言 绝句/律诗),
// converted to simplified with Debian's OpenCC (t2s.json). Unseen text: Song poems of the same
// package in the same forms, sharing no line with any kept Tang poem.
// English: Debian's dict-devil (The Devil's Dictionary) and dict-jargon (Jargon File 4.4.7),
// both public domain, read from their dictd files; unseen text: scripts/lib/unseen-en.txt,
// modern prose written for this project and dedicated to the public domain.
//
// Everything is deterministic: the same packages give the same bytes. docs/models.md has the rules.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { fnv1a32 } from './lib/lm-eval.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = path.join(ROOT, 'build', 'cache');
const OUT = path.join(ROOT, 'data', 'corpora');
const CHECK = process.argv.includes('--check');

export const POETRY = {
  name: 'chinese-poetry',
  version: '2.0.1',
  shasum: 'b6e7e60d0accac7c723d066a5c360549aab8299d', // the registry's dist.shasum (SHA-1 of the tarball)
};
export const HELDOUT_EVERY = 20; // fnv1a32(key) % 20 === 0 → heldout
const SONG_EVERY = 64; // fnv1a32(traditional body) % 64 === 0 → a Song candidate for zh/unseen
const DICTD = '/usr/share/dictd';

const log = (...a) => console.error(...a);
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 30, ...opts });

// ---------------------------------------------------------------- chinese-poetry

function poetryDir() {
  const tgz = path.join(CACHE, `${POETRY.name}-${POETRY.version}.tgz`);
  fs.mkdirSync(CACHE, { recursive: true });
  if (!fs.existsSync(tgz)) {
    log(`npm pack ${POETRY.name}@${POETRY.version} → build/cache/ (85 MB, once)`);
    sh('npm', ['pack', `${POETRY.name}@${POETRY.version}`, '--pack-destination', CACHE, '--silent']);
  }
  const sha1 = createHash('sha1').update(fs.readFileSync(tgz)).digest('hex');
  if (sha1 !== POETRY.shasum) throw new Error(`${tgz}: sha1 ${sha1}, expected ${POETRY.shasum}`);
  const dir = path.join(CACHE, `${POETRY.name}-${POETRY.version}`);
  const stamp = path.join(dir, '.extracted');
  if (!fs.existsSync(stamp)) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    sh('tar', ['-xzf', tgz, '-C', dir, '--wildcards', 'package/LICENSE', 'package/package.json',
      'package/dist/quantangshi/poet.tang.*.json', 'package/dist/quantangshi/poet.song.*.json']);
    fs.writeFileSync(stamp, POETRY.shasum + '\n');
  }
  return path.join(dir, 'package', 'dist', 'quantangshi');
}

/** The poems of poet.<dynasty>.<n>.json, files in numeric order, poems in file order. */
function readPoems(dir, dynasty) {
  const re = new RegExp(`^poet\\.${dynasty}\\.(\\d+)\\.json$`);
  const files = fs.readdirSync(dir).filter((f) => re.test(f)).sort((a, b) => Number(a.match(re)[1]) - Number(b.match(re)[1]));
  const poems = [];
  for (const f of files) for (const p of JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))) poems.push(p);
  return { files: files.length, poems };
}

// A Han character: CJK Unified Ideographs (basic, Ext A, Ext B and later planes) and the
// compatibility ideographs. Not 〇 (U+3007), not the ideographic description characters ⿰…⿻,
// not the private-use area that the data uses for characters it cannot encode.
const HAN = '[\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uF900-\\uFAFF\\u{20000}-\\u{3FFFF}]';
const FORMS = [
  { name: '五言绝句', re: new RegExp(`^(?:${HAN}{5}，${HAN}{5}。){2}$`, 'u') },
  { name: '七言绝句', re: new RegExp(`^(?:${HAN}{7}，${HAN}{7}。){2}$`, 'u') },
  { name: '五言律诗', re: new RegExp(`^(?:${HAN}{5}，${HAN}{5}。){4}$`, 'u') },
  { name: '七言律诗', re: new RegExp(`^(?:${HAN}{7}，${HAN}{7}。){4}$`, 'u') },
];
// Markers of a missing or unencodable character: □ ■ ○ ● ◯ 〇, the private-use area (E000–F8FF,
// where the data puts characters Unicode lacks), U+FFFD, the ideographic description
// characters (⿰木養 = a character spelled out), {…} composed characters (“{篦𥫗+鳥}”), [x]/［x］
// editorial restorations.
const MISSING = /[□■○●◯〇\uE000-\uF8FF\uFFFD\u2FF0-\u2FFF{}\[\]［］]/u;
// Editorial annotations inside the body: （一作「…」）, 〖1〗 notes, 《…》 titles, 「」『』 quotes.
const ANNOTATION = /[（）()〖〗《》「」『』〈〉]/u;

function classify(body) {
  if (body.length === 0) return 'empty';
  if (MISSING.test(body)) return 'missing-character marker';
  if (ANNOTATION.test(body)) return 'editorial annotation';
  for (const f of FORMS) if (f.re.test(body)) return f.name;
  if (new RegExp(`^(?:${HAN}|[，。？！；：、])+$`, 'u').test(body) && /[？！；：、]/u.test(body)) return 'punctuation other than ，。';
  return 'not 4 or 8 lines of 5 or 7';
}

function t2s(lines) {
  if (lines.length === 0) return [];
  const tmp = fs.mkdtempSync(path.join(CACHE, 'opencc-'));
  try {
    const inp = path.join(tmp, 'in.txt');
    const out = path.join(tmp, 'out.txt');
    fs.writeFileSync(inp, lines.join('\n') + '\n');
    sh('opencc', ['-c', 't2s.json', '-i', inp, '-o', out]);
    const res = fs.readFileSync(out, 'utf8').replace(/\n$/, '').split('\n');
    if (res.length !== lines.length) throw new Error(`opencc: ${lines.length} lines in, ${res.length} out`);
    return res;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const verses = (body) => body.split(/[，。]/u).filter(Boolean);
const bump = (o, k, n = 1) => { o[k] = (o[k] ?? 0) + n; };

function buildZh() {
  const dir = poetryDir();
  const stats = { source: `${POETRY.name}@${POETRY.version}`, tang: {}, song: {} };

  // Tang: classify on the traditional text, convert the kept ones, check again, deduplicate.
  const tang = readPoems(dir, 'tang');
  const st = stats.tang;
  st.files = tang.files;
  st.poems = tang.poems.length;
  st.dropped = {};
  st.forms = {};
  const kept = [];
  for (const p of tang.poems) {
    const body = (p.paragraphs ?? []).join('').replace(/\s+/gu, '');
    const c = classify(body);
    if (FORMS.some((f) => f.name === c)) kept.push(body);
    else bump(st.dropped, c);
  }
  const simp = t2s(kept);
  const seen = new Set();
  const tangPoems = [];
  for (const s of simp) {
    const c = classify(s);
    if (!FORMS.some((f) => f.name === c)) { bump(st.dropped, `changed by t2s: ${c}`); continue; }
    if (seen.has(s)) { bump(st.dropped, 'duplicate (after t2s)'); continue; }
    seen.add(s);
    bump(st.forms, c);
    tangPoems.push(s);
  }
  st.kept = tangPoems.length;
  // Split by the hash of the simplified body. A held-out poem that shares a line (句) with a
  // training poem is mostly the same poem under another title or author with a variant character
  // or two: it is left out of both, so the held-out set holds no near-copy of the training text.
  const train = [];
  const held = [];
  for (const s of tangPoems) (fnv1a32(s) % HELDOUT_EVERY === 0 ? held : train).push(s);
  const trainVerses = new Set(train.flatMap(verses));
  const heldout = held.filter((s) => !verses(s).some((v) => trainVerses.has(v)));
  st.train = train.length;
  st.heldoutSharingALineWithTrain = held.length - heldout.length;
  st.heldout = heldout.length;

  // Song → unseen: same forms, a fixed hash sample, sharing no verse (line) with any Tang poem.
  const song = readPoems(dir, 'song');
  const ss = stats.song;
  ss.files = song.files;
  ss.poems = song.poems.length;
  ss.regular = 0;
  ss.sampleEvery = SONG_EVERY;
  ss.dropped = {};
  ss.forms = {};
  const cand = [];
  for (const p of song.poems) {
    const body = (p.paragraphs ?? []).join('').replace(/\s+/gu, '');
    if (!FORMS.some((f) => f.name === classify(body))) continue;
    ss.regular++;
    if (fnv1a32(body) % SONG_EVERY === 0) cand.push(body);
  }
  ss.sampled = cand.length;
  const tangVerses = new Set(tangPoems.flatMap(verses));
  const unseen = [];
  const songSeen = new Set();
  for (const s of t2s(cand)) {
    const c = classify(s);
    if (!FORMS.some((f) => f.name === c)) { bump(ss.dropped, `changed by t2s: ${c}`); continue; }
    if (seen.has(s)) { bump(ss.dropped, 'also a Tang poem'); continue; }
    if (verses(s).some((v) => tangVerses.has(v))) { bump(ss.dropped, 'shares a line with a Tang poem'); continue; }
    if (songSeen.has(s)) { bump(ss.dropped, 'duplicate'); continue; }
    songSeen.add(s);
    bump(ss.forms, c);
    unseen.push(s);
  }
  ss.kept = unseen.length;
  return { stats, files: { train, heldout, unseen } };
}

// ---------------------------------------------------------------- dictd (English)

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const b64num = (s) => [...s].reduce((a, c) => a * 64 + B64.indexOf(c), 0);

/** The entries of a dictd database in file order, without its 00-database-* entries. */
function readDict(name) {
  const data = zlib.gunzipSync(fs.readFileSync(path.join(DICTD, `${name}.dict.dz`)));
  const index = fs.readFileSync(path.join(DICTD, `${name}.index`), 'utf8').split('\n').filter(Boolean)
    .map((l) => { const [head, off, len] = l.split('\t'); return { head, off: b64num(off), len: b64num(len) }; });
  const meta = new Set(index.filter((e) => e.head.startsWith('00database')).map((e) => e.off));
  const byOff = new Map();
  for (const e of index) if (!meta.has(e.off) && !byOff.has(e.off)) byOff.set(e.off, e);
  return [...byOff.values()].sort((a, b) => a.off - b.off)
    .map((e) => ({ text: data.subarray(e.off, e.off + e.len).toString('utf8') }))
    .filter((e) => e.text.trim() !== '');
}

const indent = (l) => l.match(/^ */)[0].length;
const blocks = (lines) => {
  const out = [];
  let cur = [];
  for (const l of lines) {
    if (l.trim() === '') { if (cur.length) out.push(cur); cur = []; } else cur.push(l);
  }
  if (cur.length) out.push(cur);
  return out;
};

function cleanEn(s) {
  return s.normalize('NFC')
    .replace(/[“”„]/gu, '"').replace(/[‘’]/gu, "'").replace(/\u00AD/gu, '') // soft hyphens
    .replace(/\{\s*/gu, '').replace(/\s*\}/gu, '') // Jargon cross-references {bit bucket}
    .replace(/\s+/gu, ' ').trim();
}

// The Devil's Dictionary: "HEADWORD, n.  Definition…" at indent 0, paragraphs that start
// indented by 4, verse indented by 4 or 8, attributions right-aligned (indent ≥ 20: dropped).
// Consecutive indented lines are one paragraph (a stanza); italics _x_ lose their underscores.
function devilParagraphs(text) {
  const paras = [];
  for (const b of blocks(text.split('\n'))) {
    let cur = null;
    let prevIndent = -1;
    for (const l of b) {
      const n = indent(l);
      if (n >= 20) continue;
      if (cur === null || (n > 0 && prevIndent === 0)) { if (cur) paras.push(cur); cur = []; }
      cur.push(l.trim());
      prevIndent = n;
    }
    if (cur) paras.push(cur);
  }
  const out = paras.map((p) => cleanEn(p.join(' ').replace(/_/gu, ''))).filter(Boolean);
  // "ALLEGIANCE, n." alone, then its verse: one paragraph
  if (out.length > 1 && out[0].length < 40) out.splice(0, 2, `${out[0]} ${out[1]}`);
  return out;
}

// The Jargon Lexicon: headword (indent 0), pronunciation and part of speech (indent 1), then
// paragraphs indented by exactly 4. A block with a line indented by 5 or more, or with few
// letters, is a display (code, ASCII art, a table): dropped. The first paragraph is prefixed
// with "headword: ".
function jargonParagraphs(text, dropped) {
  const lines = text.split('\n');
  const head = lines[0].trim();
  const paras = [];
  for (const b of blocks(lines.slice(1))) {
    if (b.every((l) => indent(l) > 0 && indent(l) < 4)) continue; // pronunciation / part of speech
    if (b.some((l) => indent(l) !== 4)) { bump(dropped, 'display block (indent ≠ 4)'); continue; }
    const p = cleanEn(b.join(' '));
    const nonSpace = p.replace(/\s/gu, '').length;
    const letters = (p.match(/\p{L}/gu) ?? []).length;
    if (letters < 0.7 * nonSpace) { bump(dropped, 'display block (letters < 70%)'); continue; }
    paras.push(p);
  }
  if (paras.length) paras[0] = `${head}: ${paras[0]}`;
  return paras;
}

// Entries whose text uses a racial slur (three in the 1911 Devil's Dictionary) are left out:
// the model ships with a tutorial and would otherwise learn to write them.
const SLUR = /\b(nigger|negro)/iu;

function buildEn() {
  const stats = { sources: {} };
  const trainEntries = [];
  const heldoutEntries = [];
  for (const [name, pkg, parse] of [['devil', 'dict-devil', devilParagraphs], ['jargon', 'dict-jargon', jargonParagraphs]]) {
    const s = { package: pkg, version: dpkgVersion(pkg), entries: 0, dropped: {}, paragraphs: 0, chars: 0, train: 0, heldout: 0, heldoutEntries: 0 };
    stats.sources[name] = s;
    for (const e of readDict(name)) {
      s.entries++;
      if (SLUR.test(e.text)) { bump(s.dropped, 'entry with a racial slur'); continue; }
      const paras = parse(e.text, s.dropped).filter((p) => p.length >= 2);
      if (paras.length === 0) { bump(s.dropped, 'entry with no prose'); continue; }
      if (paras.some((p) => p.includes('[UNK]'))) throw new Error(`${name}: "[UNK]" in the text`);
      s.paragraphs += paras.length;
      s.chars += paras.reduce((a, p) => a + [...p].length, 0);
      // split by entry (all its paragraphs together), keyed by source and first paragraph
      const held = fnv1a32(`${name}\n${paras[0]}`) % HELDOUT_EVERY === 0;
      (held ? heldoutEntries : trainEntries).push(paras);
      if (held) { s.heldout += paras.length; s.heldoutEntries++; } else s.train += paras.length;
    }
  }
  const unseenSrc = fs.readFileSync(path.join(ROOT, 'scripts', 'lib', 'unseen-en.txt'), 'utf8');
  const unseen = unseenSrc.split(/\n\s*\n/u).map(cleanEn).filter(Boolean);
  const train = trainEntries.flat();
  const heldout = heldoutEntries.flat();
  const trainSet = new Set(train);
  if (unseen.some((p) => trainSet.has(p))) throw new Error('unseen-en.txt: a paragraph is in the training text');
  stats.train = train.length;
  stats.heldout = heldout.length;
  stats.unseen = { source: 'scripts/lib/unseen-en.txt', paragraphs: unseen.length };
  return { stats, files: { train, heldout, unseen } };
}

function dpkgVersion(pkg) {
  try {
    return sh('dpkg-query', ['-W', '-f=${Version}', pkg]).toString().trim();
  } catch {
    throw new Error(`${pkg} is not installed: apt-get install ${pkg}`);
  }
}

// ---------------------------------------------------------------- main

function main() {
  const missing = ['opencc', 'dict-devil', 'dict-jargon'].filter((p) => { try { dpkgVersion(p); return false; } catch { return true; } });
  if (missing.length) {
    log(`missing Debian packages: apt-get install ${missing.join(' ')}  (the corpora in data/corpora are committed: only a rebuild needs them)`);
    process.exit(2);
  }
  const built = { en: buildEn(), zh: buildZh() };
  const stats = { heldoutEvery: HELDOUT_EVERY, hash: 'FNV-1a 32 of the UTF-8 key', en: built.en.stats, zh: built.zh.stats };
  stats.zh.opencc = dpkgVersion('opencc');
  const outputs = new Map();
  for (const lang of ['en', 'zh']) {
    stats[lang].files = {};
    for (const [split, lines] of Object.entries(built[lang].files)) {
      const text = lines.join('\n') + '\n';
      outputs.set(path.join(OUT, lang, `${split}.txt`), text);
      stats[lang].files[split] = { lines: lines.length, chars: [...text].length, bytes: Buffer.byteLength(text) };
    }
  }
  outputs.set(path.join(OUT, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
  let bad = 0;
  for (const [file, text] of outputs) {
    const rel = path.relative(ROOT, file);
    if (CHECK) {
      const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
      if (old !== text) { bad++; log(`differs: ${rel}`); } else log(`same: ${rel}`);
    } else {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
      log(`wrote ${rel} (${Buffer.byteLength(text)} bytes)`);
    }
  }
  if (bad) process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
