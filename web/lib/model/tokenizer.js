// A model's tokenizer: tokenizer.json read by @huggingface/tokenizers (the
// field's own library, vendored into web/lib/vendor/ by scripts/vendor.mjs),
// never a tokenizer of our own. encode() adds the special tokens that the
// file's post-processor adds, as transformers' tokenizer(text) does.
import { Tokenizer } from '../vendor/tokenizers.js';
import { rangeError, typeError, describe } from '../errors.js';

const WHERE = 'loadModel';

export class ModelTokenizer {
  /**
   * @param {object} json the parsed tokenizer.json
   * @param {number} vocabSize the model's V: every id the tokenizer gives must be below it
   */
  constructor(json, vocabSize) {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) {
      throw typeError(WHERE, `tokenizer must be the parsed tokenizer.json or its bytes, got ${describe(json)}`);
    }
    const model = Object.prototype.hasOwnProperty.call(json, 'model') ? json.model : undefined;
    if (model === null || typeof model !== 'object' || typeof model.type !== 'string' && !('vocab' in model)) {
      throw rangeError(WHERE, 'tokenizer.json is malformed: it has no "model" object with a "type" (BPE, WordPiece, Unigram, WordLevel)');
    }
    try {
      this._tok = new Tokenizer(json, {});
      this._vocab = this._tok.get_vocab(true);
    } catch (err) {
      throw rangeError(WHERE, `tokenizer.json is malformed: ${err && err.message ? err.message : err}`);
    }
    let maxId = -1;
    for (const id of this._vocab.values()) if (id > maxId) maxId = id;
    this.size = maxId + 1;
    if (maxId >= vocabSize) {
      let name = '';
      for (const [tok, id] of this._vocab) if (id === maxId) name = tok;
      throw rangeError(WHERE, `tokenizer.json has ids up to ${maxId} (${JSON.stringify(name)}), but config.json vocab_size is ${vocabSize}: the tokenizer belongs to another model`);
    }
    // Special tokens (added tokens marked special), for decode's skipping.
    this.special = new Set();
    for (const [id, t] of this._tok.get_added_tokens_decoder()) if (t.special) this.special.add(id);
  }

  /** Ids of `text`, with the post-processor's special tokens. */
  encode(text, { addSpecialTokens = true } = {}) {
    return this._tok.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  decode(ids, { skipSpecialTokens = false } = {}) {
    return this._tok.decode(Array.from(ids), { skip_special_tokens: skipSpecialTokens });
  }

  /** The token strings as the tokenizer spells them (GPT-2's 'Ġ', Llama's '▁', BERT's '##'). */
  tokens(ids) {
    return Array.from(ids, (id) => this._tok.id_to_token(id) ?? '');
  }

  tokenToId(token) {
    return this._tok.token_to_id(token);
  }
}
