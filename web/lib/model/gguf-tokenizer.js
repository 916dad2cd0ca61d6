// A GGUF file's tokenizer (tokenizer.ggml.*) as a tokenizer.json, which
// @huggingface/tokenizers then runs (tokenizer.js): no tokenizer algorithm of
// our own. The conversion follows transformers' own GGUF converters
// (src/transformers/integrations/ggml.py, GGUFTokenizerSkeleton and
// GGUFLlamaConverter / the GPT-2 and Qwen2 converters of
// convert_slow_tokenizer.py):
//   'llama'  SentencePiece tokens, scores and token types: a BPE with byte
//            fallback whose merges are every split of a piece into two
//            pieces, ranked by the merged piece's score (higher first, ties
//            by the parts' scores), as GGUFTokenizerSkeleton builds them;
//            ▁ prepended and spaces replaced (tokenizer.ggml.add_space_prefix,
//            default true); control and unknown tokens special.
//   'gpt2'   tokens plus merges, byte-level BPE; the split pattern from
//            tokenizer.ggml.pre (llama.cpp's llama-vocab.cpp names them).
// bos/eos are added as tokenizer.ggml.add_bos_token / add_eos_token say
// (llama: bos by default, as llama.cpp does).
import { rangeError } from '../errors.js';

const WHERE = 'loadModel';
/** llama_token_type (gguf-py constants.py TokenType). */
const TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 };

// The split patterns of the byte-level BPE tokenizers llama.cpp names in
// tokenizer.ggml.pre, as their tokenizer.json files hold them.
const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const byteLevel = (useRegex) => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: useRegex });
const split = (pattern) => ({ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false });
const PRE = {
  // GPT-2's own pattern (the ByteLevel pre-tokenizer's built-in regex)
  'gpt-2': { normalizer: null, pre_tokenizer: byteLevel(true) },
  default: { normalizer: null, pre_tokenizer: byteLevel(true) },
  qwen2: { normalizer: { type: 'NFC' }, pre_tokenizer: { type: 'Sequence', pretokenizers: [split(QWEN2_PATTERN), byteLevel(false)] } },
  'llama-bpe': { normalizer: null, pre_tokenizer: { type: 'Sequence', pretokenizers: [split(LLAMA3_PATTERN), byteLevel(false)] } },
  // SmolLM: single digits, then GPT-2's pattern
  smollm: { normalizer: null, pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(true)] } },
};

/** SentencePiece's normalizer: ▁ prepended (add_space_prefix) and every space replaced by ▁. */
const spmNormalizer = (prefix) => ({ type: 'Sequence', normalizers: [...(prefix ? [{ type: 'Prepend', prepend: '▁' }] : []), { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] });

function stringArray(meta, key, n) {
  const v = meta.get(key);
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw rangeError(WHERE, `the GGUF metadata ${key} must be an array of strings`);
  if (n !== undefined && v.length !== n) throw rangeError(WHERE, `the GGUF metadata ${key} has ${v.length} entries, but tokenizer.ggml.tokens has ${n}`);
  return v;
}

function numberArray(meta, key, n) {
  const v = meta.get(key);
  if (v === undefined) return null;
  if (!Array.isArray(v) || v.length !== n || v.some((x) => typeof x !== 'number')) {
    throw rangeError(WHERE, `the GGUF metadata ${key} must be an array of ${n} numbers (one per token)`);
  }
  return v;
}

function tokenId(meta, key, n) {
  const v = meta.get(`tokenizer.ggml.${key}_token_id`);
  if (v === undefined) return null;
  if (!Number.isSafeInteger(v) || v < 0 || v >= n) throw rangeError(WHERE, `the GGUF metadata tokenizer.ggml.${key}_token_id (${v}) is not a token id below ${n}`);
  return v;
}

function flag(meta, key, fallback) {
  const v = meta.get(`tokenizer.ggml.${key}`);
  return typeof v === 'boolean' ? v : fallback;
}

/** The vocabulary { token: id } (the first id of a repeated token wins, as in a tokenizer.json vocab). */
function vocabOf(tokens) {
  const vocab = {};
  tokens.forEach((t, i) => {
    if (!Object.hasOwn(vocab, t)) vocab[t] = i;
  });
  return vocab;
}

function addedTokens(tokens, types) {
  const out = [];
  if (!types) return out;
  tokens.forEach((content, id) => {
    const t = types[id];
    if (t === TYPE.CONTROL || t === TYPE.UNKNOWN || t === TYPE.USER_DEFINED) {
      out.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: t !== TYPE.USER_DEFINED });
    }
  });
  return out;
}

/** TemplateProcessing that adds bos/eos as the metadata says, or null. */
function template(tokens, bos, eos) {
  if (bos === null && eos === null) return null;
  const sp = (id) => ({ SpecialToken: { id: tokens[id], type_id: 0 } });
  const single = [...(bos !== null ? [sp(bos)] : []), { Sequence: { id: 'A', type_id: 0 } }, ...(eos !== null ? [sp(eos)] : [])];
  const pair = [...single, ...(bos !== null ? [sp(bos)] : []), { Sequence: { id: 'B', type_id: 1 } }, ...(eos !== null ? [sp(eos)] : [])];
  const special = {};
  for (const id of [bos, eos]) if (id !== null) special[tokens[id]] = { id: tokens[id], ids: [id], tokens: [tokens[id]] };
  return { type: 'TemplateProcessing', single, pair, special_tokens: special };
}

/**
 * transformers' GGUFTokenizerSkeleton: merges from SentencePiece scores.
 * For each piece, every split into two pieces of the vocabulary, sorted by
 * the parts' scores (descending); then all by the merged piece's score
 * (descending, stable).
 */
function mergesFromScores(tokens, scores) {
  const score = new Map();
  tokens.forEach((t, i) => {
    if (!score.has(t)) score.set(t, scores[i]);
  });
  const merges = [];
  for (const [piece, s] of score) {
    const chars = Array.from(piece);
    const local = [];
    for (let k = 1; k < chars.length; k++) {
      const l = chars.slice(0, k).join('');
      const r = chars.slice(k).join('');
      if (score.has(l) && score.has(r)) local.push([l, r, s]);
    }
    local.sort((a, b) => (score.get(b[0]) - score.get(a[0])) || (score.get(b[1]) - score.get(a[1])));
    merges.push(...local);
  }
  merges.sort((a, b) => b[2] - a[2]);
  return merges.map(([l, r]) => [l, r]);
}

/**
 * The tokenizer.json of a GGUF file's tokenizer.ggml.* metadata, or null
 * when it has none. `metadata` is the header's Map.
 */
export function tokenizerJsonOf(metadata) {
  const model = metadata.get('tokenizer.ggml.model');
  if (model === undefined) return null;
  const tokens = stringArray(metadata, 'tokenizer.ggml.tokens');
  const n = tokens.length;
  const types = numberArray(metadata, 'tokenizer.ggml.token_type', n);
  const vocab = vocabOf(tokens);
  const added = addedTokens(tokens, types);
  if (model === 'llama') {
    const scores = numberArray(metadata, 'tokenizer.ggml.scores', n);
    if (!scores) throw rangeError(WHERE, 'the GGUF tokenizer "llama" (SentencePiece) needs tokenizer.ggml.scores');
    const unk = tokenId(metadata, 'unknown', n);
    const bos = flag(metadata, 'add_bos_token', true) ? tokenId(metadata, 'bos', n) : null;
    const eos = flag(metadata, 'add_eos_token', false) ? tokenId(metadata, 'eos', n) : null;
    const prefix = flag(metadata, 'add_space_prefix', true);
    return {
      version: '1.0', truncation: null, padding: null, added_tokens: added,
      normalizer: spmNormalizer(prefix),
      pre_tokenizer: null,
      post_processor: template(tokens, bos, eos),
      decoder: { type: 'Sequence', decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
        ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : [])] },
      model: {
        type: 'BPE', dropout: null, unk_token: unk === null ? null : tokens[unk], continuing_subword_prefix: null, end_of_word_suffix: null,
        fuse_unk: true, byte_fallback: true, vocab, merges: mergesFromScores(tokens, scores),
      },
    };
  }
  if (model === 'gpt2') {
    const pre = metadata.get('tokenizer.ggml.pre') ?? 'default';
    if (typeof pre !== 'string' || !Object.hasOwn(PRE, pre)) {
      throw rangeError(WHERE, `the GGUF tokenizer.ggml.pre ${JSON.stringify(pre)} is not supported; supported: ${Object.keys(PRE).join(', ')} (or pass the model's tokenizer.json as tokenizer, or tokenizer: null to load without one)`);
    }
    const merges = stringArray(metadata, 'tokenizer.ggml.merges').map((m) => {
      const at = m.indexOf(' ');
      if (at <= 0) throw rangeError(WHERE, `the GGUF tokenizer.ggml.merges entry ${JSON.stringify(m)} is not two tokens separated by a space`);
      return [m.slice(0, at), m.slice(at + 1)];
    });
    const bos = flag(metadata, 'add_bos_token', false) ? tokenId(metadata, 'bos', n) : null;
    const eos = flag(metadata, 'add_eos_token', false) ? tokenId(metadata, 'eos', n) : null;
    const bl = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true };
    const t = template(tokens, bos, eos);
    return {
      version: '1.0', truncation: null, padding: null, added_tokens: added,
      ...PRE[pre],
      post_processor: t ? { type: 'Sequence', processors: [bl, t] } : bl,
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
        fuse_unk: false, byte_fallback: false, vocab, merges,
      },
    };
  }
  throw rangeError(WHERE, `the GGUF tokenizer.ggml.model ${JSON.stringify(model)} is not supported; supported: llama, gpt2 (or pass the model's tokenizer.json as tokenizer, or tokenizer: null to load without one)`);
}

/** A pre-tokenizer or normalizer with the fields that do not change the ids left out (ByteLevel's trim_offsets). */
function canonical(node) {
  if (Array.isArray(node)) return node.map(canonical);
  if (!node || typeof node !== 'object') return node ?? null;
  const out = {};
  for (const k of Object.keys(node).sort()) {
    if (node.type === 'ByteLevel' && k === 'trim_offsets') continue;
    out[k] = canonical(node[k]);
  }
  return out;
}

/** The leading special token a TemplateProcessing (alone or in a Sequence) adds, or null. */
function leadingSpecial(post) {
  const steps = post?.type === 'Sequence' ? post.processors ?? [] : [post];
  const t = steps.find((p) => p?.type === 'TemplateProcessing');
  return t?.single?.[0]?.SpecialToken?.id ?? null;
}

/**
 * tokenizer.ggml.* entries ([key, value] pairs, as a GGUF file's header holds them) of a
 * tokenizer.json, the inverse of tokenizerJsonOf, as convert_hf_to_gguf.py writes them
 * (get_vocab_base: one token per id up to vocabSize, [PAD<i>] UNUSED where the vocabulary has
 * none; added tokens CONTROL when special, else USER_DEFINED):
 *   - a byte-level BPE whose normalizer and pre-tokenizer are one of the tokenizer.ggml.pre
 *     patterns above: 'gpt2', its merges as "a b";
 *   - a SentencePiece-style BPE (▁ prepended, byte fallback): 'llama', each token's score the
 *     negated rank of the first merge that makes it (0 for pieces no merge makes), so that
 *     the merges rebuilt from the scores keep the file's order; <0xNN> pieces BYTE.
 * null for any other tokenizer (WordPiece, Unigram, another split pattern): the file then has
 * no tokenizer, as before.
 */
export function ggufTokenizerEntriesOf(json, vocabSize, hfConfig = {}) {
  const m = json?.model;
  if (m?.type !== 'BPE' || !m.vocab || !Array.isArray(m.merges)) return null;
  const merges = m.merges.map((x) => (Array.isArray(x) ? x : String(x).split(' ')));
  if (merges.some((x) => x.length !== 2)) return null;
  const byId = new Map();
  for (const [t, id] of Object.entries(m.vocab)) if (!byId.has(id)) byId.set(id, t);
  const added = new Map((json.added_tokens ?? []).map((a) => [a.id, a]));
  for (const [id, a] of added) byId.set(id, a.content);
  let n = vocabSize; // (a loop: a 150k-token vocabulary is too many arguments for Math.max)
  for (const id of byId.keys()) if (id + 1 > n) n = id + 1;
  const tokens = [];
  const types = [];
  for (let i = 0; i < n; i++) {
    const t = byId.get(i);
    tokens.push(t ?? `[PAD${i}]`);
    types.push(t === undefined ? TYPE.UNUSED : added.has(i) ? (added.get(i).special ? TYPE.CONTROL : TYPE.USER_DEFINED) : TYPE.NORMAL);
  }
  const entries = [];
  const id = (content) => (content !== null && Object.hasOwn(m.vocab, content) ? m.vocab[content] : [...added.values()].find((a) => a.content === content)?.id ?? null);
  const bosToken = leadingSpecial(json.post_processor);
  const bos = bosToken !== null ? id(bosToken) : Number.isSafeInteger(hfConfig.bos_token_id) ? hfConfig.bos_token_id : null;
  const eos = Number.isSafeInteger(hfConfig.eos_token_id) ? hfConfig.eos_token_id : null;
  const spm = m.byte_fallback === true && json.pre_tokenizer == null
    && JSON.stringify(canonical(json.normalizer)) === JSON.stringify(canonical(spmNormalizer(true)));
  if (spm) {
    const rank = new Map();
    merges.forEach(([l, r], k) => { if (!rank.has(l + r)) rank.set(l + r, k); });
    const scores = tokens.map((t, i) => (types[i] === TYPE.NORMAL && rank.has(t) ? -rank.get(t) : 0));
    tokens.forEach((t, i) => { if (types[i] === TYPE.NORMAL && /^<0x[0-9A-F]{2}>$/.test(t)) types[i] = TYPE.BYTE; });
    const unk = m.unk_token != null ? id(m.unk_token) : null;
    if (unk !== null) types[unk] = TYPE.UNKNOWN;
    entries.push(['tokenizer.ggml.model', 'llama'], ['tokenizer.ggml.tokens', tokens], ['tokenizer.ggml.scores', scores], ['tokenizer.ggml.token_type', types]);
    if (unk !== null) entries.push(['tokenizer.ggml.unknown_token_id', unk]);
    entries.push(['tokenizer.ggml.add_space_prefix', true]);
  } else {
    const key = JSON.stringify(canonical({ normalizer: json.normalizer ?? null, pre_tokenizer: json.pre_tokenizer ?? null }));
    const pre = Object.keys(PRE).find((p) => p !== 'default' && JSON.stringify(canonical(PRE[p])) === key);
    if (!pre) return null;
    entries.push(['tokenizer.ggml.model', 'gpt2'], ['tokenizer.ggml.pre', pre], ['tokenizer.ggml.tokens', tokens], ['tokenizer.ggml.token_type', types],
      ['tokenizer.ggml.merges', merges.map(([l, r]) => `${l} ${r}`)]);
  }
  if (bos !== null) entries.push(['tokenizer.ggml.bos_token_id', bos]);
  if (eos !== null) entries.push(['tokenizer.ggml.eos_token_id', eos]);
  entries.push(['tokenizer.ggml.add_bos_token', bosToken !== null], ['tokenizer.ggml.add_eos_token', false]);
  return entries;
}
