// Token strings shown readably, always as text (never markup). GPT-2's
// byte-level pieces ('Ġthe', 'Ċ', 'å¥½' …) are mapped back to their bytes and
// decoded as UTF-8 (bytes_to_unicode, as GPT-2's encoder.py and the
// tokenizers' ByteLevel decoder define it); an incomplete UTF-8 sequence is
// shown as \xNN escapes. A leading or trailing space shows as ␣, a newline
// as ↵, a tab as ⇥, other control characters as \xNN.

let charToByte = null;

/** GPT-2's bytes_to_unicode, inverted: the printable byte symbols map to themselves, the rest to 256 + n. */
function table() {
  if (charToByte) return charToByte;
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  charToByte = new Map(bs.map((b, i) => [String.fromCodePoint(cs[i]), b]));
  return charToByte;
}

const utf8 = typeof TextDecoder === 'function' ? new TextDecoder('utf-8', { fatal: true }) : null;
const hex = (b) => `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`;

function visible(s) {
  let out = s.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) => hex(c.charCodeAt(0))).replace(/\n/g, '↵').replace(/\t/g, '⇥');
  out = out.replace(/^ /, '␣').replace(/ $/, '␣');
  return out;
}

/**
 * The readable text of a token string (byteLevel: the tokenizer's pieces are
 * GPT-2's byte symbols). Returns a string; callers put it in textContent.
 */
export function readableToken(token, byteLevel = false) {
  if (token === null || token === undefined) return '';
  const s = String(token);
  if (byteLevel) {
    const map = table();
    const bytes = [];
    for (const ch of s) {
      const b = map.get(ch);
      if (b === undefined) return visible(s); // not a byte-level piece (an added token)
      bytes.push(b);
    }
    if (bytes.length) {
      try {
        if (!utf8) throw new Error('no TextDecoder');
        return visible(utf8.decode(Uint8Array.from(bytes)));
      } catch {
        return bytes.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : hex(b))).join('');
      }
    }
  }
  return visible(s);
}

/** True when token strings look like byte-level pieces (GPT-2's Ġ for a space, Ċ for a newline). */
export function looksByteLevel(tokens) {
  return Array.isArray(tokens) && tokens.some((t) => typeof t === 'string' && /[\u0120\u010a]/.test(t));
}
