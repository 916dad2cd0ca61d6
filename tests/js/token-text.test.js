// token-text.test.js — the model view's readable token strings
// (web/components/lib/token-text.js): GPT-2's byte-level pieces decode to
// the text the tokenizer itself decodes them to (@huggingface/tokenizers,
// vendored), a leading space shows as ␣, broken UTF-8 as \xNN, and anything
// else (an added token, a SentencePiece '▁' piece) is kept as it is.
import fs from 'node:fs';
import { readableToken, looksByteLevel } from '../../web/components/lib/token-text.js';
import { Tokenizer } from '../../web/lib/vendor/tokenizers.js';

const gpt2 = JSON.parse(fs.readFileSync(new URL('../golden/models/gpt2/tokenizer.json', import.meta.url), 'utf8'));

describe('readableToken', () => {
  test('every byte-level piece of the gpt2 tokenizer reads as the tokenizer decodes it', () => {
    const tok = new Tokenizer(gpt2, {});
    const V = tok.get_vocab(true).size;
    let checked = 0;
    for (let id = 0; id < V; id++) {
      const piece = tok.id_to_token(id);
      const text = tok.decode([id], { skip_special_tokens: false });
      const shown = readableToken(piece, true);
      if (text.includes('\uFFFD')) {
        // one byte of a multi-byte character: shown as its escape, never as U+FFFD
        expect(shown).toMatch(/\\x[0-9A-F]{2}/);
        continue;
      }
      expect(shown.replace(/^␣/, ' ').replace(/␣$/, ' ').replace(/↵/g, '\n').replace(/⇥/g, '\t').replace(/\\x([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)))).toBe(text);
      checked++;
    }
    expect(checked).toBeGreaterThan(100);
  });

  test('spaces, newlines, UTF-8 and non-byte-level strings', () => {
    expect(readableToken('Ġthe', true)).toBe('␣the');
    expect(readableToken('Ċ', true)).toBe('↵');
    expect(readableToken('ä½ł', true)).toBe('你'); // the three bytes of 你
    expect(readableToken('ä½', true)).toBe('\\xE4\\xBD');
    expect(readableToken('<img src=x onerror=alert(1)>', true)).toBe('<img src=x onerror=alert(1)>');
    expect(readableToken('▁cat', false)).toBe('▁cat');
    expect(readableToken('##ing', false)).toBe('##ing');
    expect(readableToken(null)).toBe('');
    expect(looksByteLevel(['The', 'Ġcat'])).toBe(true);
    expect(looksByteLevel(['[CLS]', 'the'])).toBe(false);
  });
});
