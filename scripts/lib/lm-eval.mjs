// The evaluation protocol of issue 22, shared by the baselines (scripts/lm-baselines.mjs) and the
// models, so that every figure in docs/models.md is measured on the same windows:
//
//   held-out loss = mean next-character cross-entropy (nats per character) over windows of the
//   model's context, each starting at a poem or paragraph boundary.
//
// A corpus file is lines (poems or paragraphs), each ended by "\n". The token stream is "\n"
// followed by the file, through the character tokenizer, so every poem or paragraph is preceded
// by the newline token, which is the boundary and the start-of-text token. Window k starts at the
// newline before line k and holds context + 1 tokens (fewer at the end of the file): the model
// reads tokens 0…n−2 of it and is scored on predicting tokens 1…n−1, every position of every
// window counting once (a short poem's window runs on into the next poem, as a model's context
// would). [UNK] is a class like any other.
//
//   import { loadTokenizer, stream, windows, evaluate } from './lib/lm-eval.mjs';
//   const tok = loadTokenizer('data/models/zh');
//   const wins = windows(fs.readFileSync('data/corpora/zh/heldout.txt', 'utf8'), tok, 96);
//   const { loss, accuracy, tokens } = await evaluate(wins, (ids) => model.nextProbs(ids), tok.vocabSize);
//
// predict(ids) gets an Int32Array of n−1 input ids and returns the next-token probabilities at
// each position: a flat Float32Array/Float64Array of (n−1)·V values, or an array of n−1 rows of V.

import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { encodeText, stream, windows } from '../../web/lib/train/lm-data.js';

// The token stream and the windows are web/lib/train/lm-data.js's (shared with chapter 10's live
// training in the browser).
export { encodeText, stream, windows };

/** FNV-1a, 32 bits, of the UTF-8 bytes of s: the split's fixed hash. */
export function fnv1a32(s) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

/** The tokenizer of data/models/<lang>/ (tokenizer.json and tokenizer_config.json). */
export function loadTokenizer(dir) {
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const cfgFile = path.join(dir, 'tokenizer_config.json');
  const cfg = fs.existsSync(cfgFile) ? JSON.parse(fs.readFileSync(cfgFile, 'utf8')) : {};
  const tok = new Tokenizer(json, { clean_up_tokenization_spaces: false, ...cfg });
  tok.vocabSize = Object.keys(json.model.vocab).length;
  tok.newlineId = json.model.vocab['\n'];
  tok.unkId = json.model.vocab[json.model.unk_token];
  return tok;
}

/**
 * Mean cross-entropy (nats per token) and top-1 accuracy of predict over the windows.
 * Ties in the top-1 go to the lowest id. A probability of 0 counts as 1e-45 (the float32 floor).
 */
export async function evaluate(wins, predict, vocabSize) {
  let nll = 0;
  let correct = 0;
  let n = 0;
  for (const w of wins) {
    if (w.length < 2) continue;
    const inputs = w.subarray(0, w.length - 1);
    const probs = await predict(inputs);
    const flat = !Array.isArray(probs);
    if (flat && probs.length !== inputs.length * vocabSize) throw new Error(`predict: ${probs.length} values, expected ${inputs.length}×${vocabSize}`);
    if (!flat && probs.length !== inputs.length) throw new Error(`predict: ${probs.length} rows, expected ${inputs.length}`);
    for (let t = 0; t < inputs.length; t++) {
      const row = flat ? probs.subarray(t * vocabSize, (t + 1) * vocabSize) : probs[t];
      const y = w[t + 1];
      nll -= Math.log(Math.max(row[y], 1e-45));
      let best = 0;
      for (let v = 1; v < vocabSize; v++) if (row[v] > row[best]) best = v;
      if (best === y) correct++;
      n++;
    }
  }
  return { loss: nll / n, accuracy: correct / n, tokens: n, windows: wins.length };
}
