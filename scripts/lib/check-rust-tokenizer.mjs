// Cross-check: the Rust tokenizers library (npm `tokenizers` 0.23.2, napi binary) loads the files
// and gives the same ids as @huggingface/tokenizers / the one-id-per-code-point reference.
import fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
// usage: mkdir /tmp/tk && (cd /tmp/tk && npm install --no-save tokenizers@0.23.2)
//        node scripts/lib/check-rust-tokenizer.mjs /tmp/tk/node_modules/tokenizers
// (a check run by hand: `tokenizers` is not a dependency of the package)
const { Tokenizer } = require(process.argv[2] ?? 'tokenizers');
const root = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
let fails = 0, n = 0;
for (const lang of ['en', 'zh']) {
  const file = `${root}/data/models/${lang}/tokenizer.json`;
  const vocab = JSON.parse(fs.readFileSync(file, 'utf8')).model.vocab;
  const t = Tokenizer.fromFile(file);
  const ref = (s) => [...s].map((c) => vocab[c] ?? 0);
  const tests = ['😀', '😀😀', '👩‍💻', '\t', 'a  b\n\nc ', '白日依山尽，黄河入海流。', '中文 mixed 😀 text', '[UNK]', 'a . b , c'];
  for (const split of ['heldout', 'unseen']) tests.push(...fs.readFileSync(`${root}/data/corpora/${lang}/${split}.txt`, 'utf8').split('\n').slice(0, 400).filter(Boolean));
  for (const s of tests) {
    const enc = await t.encode(s, null, { addSpecialTokens: true });
    const ids = enc.getIds();
    const want = s === '[UNK]' ? [0] : ref(s);
    n++;
    if (ids.length !== want.length || ids.some((x, i) => x !== want[i])) { fails++; console.log('ids differ', lang, JSON.stringify(s.slice(0, 40)), ids.slice(0, 10), want.slice(0, 10)); continue; }
    const dec = await t.decode(ids, false);
    const wantDec = [...s].map((c) => (c in vocab ? c : '[UNK]')).join('');
    n++;
    if (dec !== (s === '[UNK]' ? '[UNK]' : wantDec)) { fails++; console.log('decode differs', lang, JSON.stringify(s.slice(0, 40)), JSON.stringify(dec.slice(0, 40))); }
  }
}
console.log(`rust tokenizers: ${n - fails} passed, ${fails} failed`);
