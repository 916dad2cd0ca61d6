#!/usr/bin/env node
// Character tokenizers of issue 22: one token per character (Unicode code point), built from the
// training text of data/corpora/<lang>/train.txt, and checked with @huggingface/tokenizers.
//
//   node scripts/char-tokenizer.mjs            → data/models/{en,zh}/tokenizer.json, tokenizer_config.json
//                                                 and data/corpora/vocab-stats.json, then verifies them
//   node scripts/char-tokenizer.mjs --verify   → only verifies the files that are there
//
// Vocabulary: id 0 "[UNK]", id 1 "\n" (the poem/paragraph separator, also the start-of-text token:
// every evaluation window starts with it), then the characters by descending training frequency
// (ties by code point): for 中文 the fewest that cover 99.5% of the training characters; for
// English every character seen at least 5 times (the rest, 1–4 occurrences each, are [UNK]).
//
// Format: only standard Hugging Face components, so that the Rust `tokenizers` library and
// transformers' PreTrainedTokenizerFast load it too:
//   pre_tokenizer Split, pattern Regex "[\s\S]", behavior Isolated: every code point is a piece;
//   model BPE with no merges, unk_token "[UNK]", fuse_unk false, byte_fallback false: a piece in
//     the vocabulary is its id, any other piece (an emoji, a rare character) one [UNK];
//   decoder Fuse: the tokens are concatenated with nothing between them;
//   no normalizer, no post-processor (no BOS/EOS added).
// (@huggingface/tokenizers 0.2.0 has no WordLevel model; BPE without merges is the same mapping.)

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeText, loadTokenizer } from './lib/lm-eval.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CORPORA = path.join(ROOT, 'data', 'corpora');
const MODELS = path.join(ROOT, 'data', 'models');
export const UNK = '[UNK]';
export const SETTINGS = {
  zh: { coverage: 0.995, context: 96 },
  en: { minCount: 5, context: 128 },
};

const read = (lang, split) => fs.readFileSync(path.join(CORPORA, lang, `${split}.txt`), 'utf8');

function counts(text) {
  const m = new Map();
  for (const c of text) if (c !== '\n') m.set(c, (m.get(c) ?? 0) + 1);
  return m;
}

/** The vocabulary (token → id) of a language from its training text. */
export function buildVocab(lang) {
  const s = SETTINGS[lang];
  const m = counts(read(lang, 'train'));
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  const sorted = [...m].sort((a, b) => b[1] - a[1] || a[0].codePointAt(0) - b[0].codePointAt(0));
  let chars;
  if (s.coverage) {
    let sum = 0;
    let n = 0;
    while (n < sorted.length && sum < s.coverage * total) sum += sorted[n++][1];
    chars = sorted.slice(0, n);
  } else {
    chars = sorted.filter(([, k]) => k >= s.minCount);
  }
  const vocab = { [UNK]: 0, '\n': 1 };
  for (const [c] of chars) vocab[c] = Object.keys(vocab).length;
  return vocab;
}

export function tokenizerJson(vocab) {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      { id: 0, content: UNK, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    ],
    normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
    post_processor: null,
    decoder: { type: 'Fuse' },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: UNK,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
}

/** JSON with the vocabulary in id order, one entry a line (JSON.stringify would put "0"…"9" first). */
function serialize(json) {
  const entries = Object.entries(json.model.vocab).sort((a, b) => a[1] - b[1]);
  const text = JSON.stringify({ ...json, model: { ...json.model, vocab: '@VOCAB@' } }, null, 2);
  const vocab = `{\n${entries.map(([t, id]) => `      ${JSON.stringify(t)}: ${id}`).join(',\n')}\n    }`;
  return text.replace('"@VOCAB@"', vocab) + '\n';
}

export const tokenizerConfig = (lang) => ({
  tokenizer_class: 'PreTrainedTokenizerFast',
  unk_token: UNK,
  clean_up_tokenization_spaces: false,
  model_max_length: SETTINGS[lang].context,
});

function build() {
  const stats = {};
  for (const lang of ['en', 'zh']) {
    const vocab = buildVocab(lang);
    const dir = path.join(MODELS, lang);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), serialize(tokenizerJson(vocab)));
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig(lang), null, 2) + '\n');
    const st = { vocabSize: Object.keys(vocab).length, rule: SETTINGS[lang], coverage: {} };
    for (const split of ['train', 'heldout', 'unseen']) {
      const m = counts(read(lang, split));
      let all = 0;
      let known = 0;
      const unkTypes = new Set();
      for (const [c, k] of m) { all += k; if (c in vocab) known += k; else unkTypes.add(c); }
      st.coverage[split] = { chars: all, unk: all - known, coverage: Number((known / all).toFixed(6)), unkTypes: unkTypes.size };
    }
    stats[lang] = st;
    console.error(`${lang}: ${st.vocabSize} tokens; coverage ${Object.entries(st.coverage).map(([k, v]) => `${k} ${(100 * v.coverage).toFixed(3)}%`).join(', ')}`);
  }
  fs.writeFileSync(path.join(CORPORA, 'vocab-stats.json'), JSON.stringify(stats, null, 2) + '\n');
}

// ---------------------------------------------------------------- verification

let failures = 0;
let checks = 0;
function check(ok, what) {
  checks++;
  if (!ok) { failures++; console.error(`FAIL ${what}`); }
}
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

function verify(lang) {
  const dir = path.join(MODELS, lang);
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const vocab = json.model.vocab;
  const tok = loadTokenizer(dir);
  const V = Object.keys(vocab).length;
  const ref = (text) => [...text].map((c) => vocab[c] ?? 0); // the reference: one id per code point

  check(vocab[UNK] === 0 && vocab['\n'] === 1, `${lang}: [UNK] is 0 and "\\n" is 1`);
  check(new Set(Object.values(vocab)).size === V && Math.max(...Object.values(vocab)) === V - 1, `${lang}: ids 0…${V - 1}, each once`);
  check(Object.keys(vocab).every((t) => t === UNK || [...t].length === 1), `${lang}: every token but [UNK] is one character`);

  // every vocabulary character alone, and all of them in one string
  let bad = 0;
  for (const [c, id] of Object.entries(vocab)) {
    if (c === UNK) continue;
    const e = tok.encode(c).ids;
    if (!(e.length === 1 && e[0] === id && tok.decode(e) === c)) bad++;
  }
  check(bad === 0, `${lang}: each of the ${V - 1} characters encodes to its one id and back (${bad} did not)`);
  const allChars = Object.keys(vocab).filter((t) => t !== UNK).join('');
  check(same(tok.encode(allChars).ids, ref(allChars)), `${lang}: all characters in one string`);

  // unknown characters: one [UNK] each, never nothing, never two (astral characters are one code point)
  const unknowns = ['😀', '😀😀', '𝄞', '\t', '\u0007', '\u00A0', 'Ω', lang === 'en' ? '中文' : 'ABC', 'é\u0301', '\u{10FFFD}', '👩‍💻'];
  for (const u of unknowns) {
    const want = ref(u);
    const got = tok.encode(u).ids;
    check(same(got, want), `${lang}: ${JSON.stringify(u)} → ${JSON.stringify(want)} (got ${JSON.stringify(got)})`);
  }
  const emoji = tok.encode('😀').ids;
  check(emoji.length === 1 && emoji[0] === 0, `${lang}: an emoji is exactly one [UNK]`);
  const mixed = lang === 'en' ? 'a 😀 b\nc' : '白日😀依山尽，\n黄河';
  check(same(tok.encode(mixed).ids, ref(mixed)), `${lang}: ${JSON.stringify(mixed)} with an emoji`);
  check(tok.decode(tok.encode(mixed).ids) === mixed.replace('😀', UNK), `${lang}: decode shows the emoji as [UNK]`);
  // spaces and newlines are tokens, kept by the round trip, leading, trailing and repeated
  const ws = lang === 'en' ? '  two  spaces \n\n newline ' : '\n一\n\n二\n';
  check(same(tok.encode(ws).ids, ref(ws)) && tok.decode(tok.encode(ws).ids) === ws, `${lang}: whitespace ${JSON.stringify(ws)} round trip`);
  // " ." and " ," must survive decoding (no clean_up_tokenization_spaces)
  if (lang === 'en') check(tok.decode(tok.encode("a . b , c 's").ids) === "a . b , c 's", 'en: no clean-up of spaces before punctuation');
  // the literal text "[UNK]" is the added token: one id (standard for special tokens)
  check(same(tok.encode(UNK).ids, [0]), `${lang}: the text "[UNK]" encodes to the one [UNK] id`);

  // whole corpora: the tokenizer's ids are the reference ids, and decode(encode(x)) = x with the
  // out-of-vocabulary characters shown as [UNK]
  for (const split of ['train', 'heldout', 'unseen']) {
    const text = read(lang, split);
    const ids = encodeText(text, tok);
    const want = ref(text);
    check(ids.length === want.length && ids.every((x, i) => x === want[i]), `${lang}/${split}: ${want.length} ids, one per character, the reference ids`);
    if (split !== 'train') {
      const lines = text.slice(0, -1).split('\n');
      let rt = 0;
      for (const l of lines) {
        const expect = [...l].map((c) => (c in vocab ? c : UNK)).join('');
        if (tok.decode(tok.encode(l).ids) !== expect) rt++;
      }
      check(rt === 0, `${lang}/${split}: decode(encode(line)) round trip on ${lines.length} lines (${rt} differ)`);
    }
  }
  console.error(`${lang}: verified (${V} tokens)`);
}

function main() {
  if (!process.argv.includes('--verify')) build();
  for (const lang of ['en', 'zh']) verify(lang);
  console.log(`char-tokenizer: ${checks - failures} passed, ${failures} failed`);
  if (failures) process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
