// A minimal zip reader for torch.save checkpoints (PKWARE APPNOTE 6.3): the
// end of central directory record (and its zip64 form, which torch's
// PyTorchStreamWriter writes past 4 GiB), the central directory, and each
// entry's local header, found only when the entry is used. Reading is over a
// random-access byte source { size, read(a, b) → Promise<Uint8Array> } (a
// File.slice or bytes in memory): nothing but the directory and the entries
// asked for is read.
//
// torch writes its records stored (method 0), their data aligned to 64 bytes
// by padding in the local header's extra field, so a stored entry is a byte
// range of the file. A deflated entry (method 8, a zip re-packed by another
// tool) is inflated with DecompressionStream('deflate-raw') where the
// environment has it, else refused with an Error. Encrypted entries, other
// methods, multi-disk archives and entries whose data lie outside the file are
// refused. CRC-32s are not checked (the parsers above check what they read).
import { rangeError } from '../errors.js';

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CENTRAL_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;
const EOCD_BYTES = 22;
const MAX_COMMENT = 0xffff;
/** Largest deflated entry inflated in memory (the wasm heap holds 2 GiB). */
const MAX_INFLATED_BYTES = 2 ** 31;

/** True when `prefix` (the first bytes of a file) starts with a zip local header or an empty archive's end record. */
export function isZip(prefix) {
  return prefix.length >= 4 && prefix[0] === 0x50 && prefix[1] === 0x4b
    && ((prefix[2] === 3 && prefix[3] === 4) || (prefix[2] === 5 && prefix[3] === 6));
}

function view(u8) {
  return new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
}

function u64(dv, at) {
  const lo = dv.getUint32(at, true);
  const hi = dv.getUint32(at + 4, true);
  return hi * 2 ** 32 + lo; // past 2^53 the checks against the file size refuse it
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const latin1 = new TextDecoder('latin1');

/**
 * Reads the central directory of the zip in `src`. Returns { entries:
 * [{ name, method, compressedSize, size, localOffset }], entry(name), data(e) }
 * where data(e) resolves to { begin, end } (the entry's stored bytes in the
 * file) and bytes(e) to the entry's contents (inflated if need be).
 * @param {string} where the function named in errors
 * @param {{ size: number, read(a: number, b: number): Promise<Uint8Array> }} src
 */
export async function openZip(where, src) {
  const size = src.size;
  if (size < EOCD_BYTES) throw rangeError(where, `truncated zip: ${size} bytes, less than the ${EOCD_BYTES}-byte end of central directory record`);
  // The end record is the last 22 bytes unless the archive has a comment
  // (torch writes none): look in the last KB first, then the whole window.
  let tailStart = 0;
  let tail = null;
  let tdv = null;
  let eocd = -1;
  for (const back of [1024, EOCD_BYTES + MAX_COMMENT]) {
    tailStart = Math.max(0, size - back);
    tail = await src.read(tailStart, size);
    tdv = view(tail);
    for (let i = tail.length - EOCD_BYTES; i >= 0; i--) {
      if (tdv.getUint32(i, true) === EOCD_SIG && i + EOCD_BYTES + tdv.getUint16(i + 20, true) === tail.length) { eocd = i; break; }
    }
    if (eocd >= 0 || tailStart === 0) break;
  }
  if (eocd < 0) throw rangeError(where, 'truncated or damaged zip: no end of central directory record (a torch.save file ends with one)');
  const eocdAt = tailStart + eocd;
  const disk = tdv.getUint16(eocd + 4, true);
  const cdDisk = tdv.getUint16(eocd + 6, true);
  let count = tdv.getUint16(eocd + 10, true);
  let cdSize = tdv.getUint32(eocd + 12, true);
  let cdOffset = tdv.getUint32(eocd + 16, true);
  let cdEnd = eocdAt;
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    // zip64: a locator just before the end record points at the zip64 end record.
    const locAt = eocdAt - 20;
    if (locAt < 0) throw rangeError(where, 'damaged zip64: no room for the zip64 end of central directory locator');
    const loc = view(await src.read(locAt, eocdAt));
    if (loc.getUint32(0, true) !== ZIP64_LOCATOR_SIG) throw rangeError(where, 'damaged zip64: the zip64 end of central directory locator is missing');
    const recAt = u64(loc, 8);
    if (recAt + 56 > locAt) throw rangeError(where, `damaged zip64: the zip64 end record's offset ${recAt} lies outside the file`);
    const rec = view(await src.read(recAt, recAt + 56));
    if (rec.getUint32(0, true) !== ZIP64_EOCD_SIG) throw rangeError(where, 'damaged zip64: no zip64 end of central directory record where the locator points');
    count = u64(rec, 32);
    cdSize = u64(rec, 40);
    cdOffset = u64(rec, 48);
    cdEnd = recAt;
  }
  if (disk !== 0 || cdDisk !== 0) throw rangeError(where, 'multi-disk (split) zip archives are not supported');
  if (cdOffset + cdSize > cdEnd) {
    throw rangeError(where, `truncated or damaged zip: the central directory [${cdOffset}, ${cdOffset + cdSize}) lies outside the ${cdEnd} bytes before its end record`);
  }
  if (count * 46 > cdSize) throw rangeError(where, `damaged zip: ${count} entries cannot fit a central directory of ${cdSize} bytes`);
  const cd = await src.read(cdOffset, cdOffset + cdSize);
  const dv = view(cd);
  const entries = [];
  const byName = new Map();
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.length || dv.getUint32(p, true) !== CENTRAL_SIG) throw rangeError(where, `damaged zip: central directory entry ${i} is missing or cut short`);
    const flags = dv.getUint16(p + 8, true);
    const method = dv.getUint16(p + 10, true);
    let compressedSize = dv.getUint32(p + 20, true);
    let size2 = dv.getUint32(p + 24, true);
    const nameLen = dv.getUint16(p + 28, true);
    const extraLen = dv.getUint16(p + 30, true);
    const commentLen = dv.getUint16(p + 32, true);
    let localOffset = dv.getUint32(p + 42, true);
    const next = p + 46 + nameLen + extraLen + commentLen;
    if (next > cd.length) throw rangeError(where, `damaged zip: central directory entry ${i} runs past the directory`);
    const rawName = cd.subarray(p + 46, p + 46 + nameLen);
    let name;
    try {
      name = (flags & 0x800) ? utf8.decode(rawName) : latin1.decode(rawName);
    } catch {
      throw rangeError(where, `damaged zip: the name of central directory entry ${i} is not valid UTF-8`);
    }
    // zip64 extended information (0x0001): the 0xffffffff fields, in order.
    let q = p + 46 + nameLen;
    const extraEnd = q + extraLen;
    while (q + 4 <= extraEnd) {
      const id = dv.getUint16(q, true);
      const len = dv.getUint16(q + 2, true);
      if (q + 4 + len > extraEnd) break;
      if (id === 1) {
        let r = q + 4;
        const take = () => {
          if (r + 8 > q + 4 + len) throw rangeError(where, `damaged zip64: entry ${JSON.stringify(name)}'s extended information is cut short`);
          const v = u64(dv, r);
          r += 8;
          return v;
        };
        if (size2 === 0xffffffff) size2 = take();
        if (compressedSize === 0xffffffff) compressedSize = take();
        if (localOffset === 0xffffffff) localOffset = take();
      }
      q += 4 + len;
    }
    if (flags & 1) throw rangeError(where, `zip entry ${JSON.stringify(name)} is encrypted`);
    if (method !== 0 && method !== 8) throw rangeError(where, `zip entry ${JSON.stringify(name)} uses compression method ${method}; allowed: 0 (stored, as torch.save writes) or 8 (deflate)`);
    if (method === 0 && compressedSize !== size2) throw rangeError(where, `damaged zip: stored entry ${JSON.stringify(name)} has compressed size ${compressedSize} but size ${size2}`);
    if (localOffset + 30 + compressedSize > cdOffset) {
      throw rangeError(where, `truncated or damaged zip: entry ${JSON.stringify(name)} (${compressedSize} bytes at ${localOffset}) lies outside the data before the central directory (${cdOffset} bytes)`);
    }
    if (byName.has(name)) throw rangeError(where, `damaged zip: the entry ${JSON.stringify(name)} is listed twice`);
    const e = { name, method, compressedSize, size: size2, localOffset };
    entries.push(e);
    byName.set(name, e);
    p = next;
  }

  /** The stored bytes' range [begin, end) in the file, from the local header. */
  async function data(e) {
    const h = await src.read(e.localOffset, e.localOffset + 30);
    const hv = view(h);
    if (h.length < 30 || hv.getUint32(0, true) !== LOCAL_SIG) throw rangeError(where, `damaged zip: no local header for entry ${JSON.stringify(e.name)} at offset ${e.localOffset}`);
    const begin = e.localOffset + 30 + hv.getUint16(26, true) + hv.getUint16(28, true);
    const end = begin + e.compressedSize;
    if (end > cdOffset) throw rangeError(where, `truncated or damaged zip: entry ${JSON.stringify(e.name)}'s data [${begin}, ${end}) run into the central directory at ${cdOffset}`);
    return { begin, end };
  }

  /** The entry's contents (inflated for method 8). */
  async function bytes(e) {
    const { begin, end } = await data(e);
    const raw = await src.read(begin, end);
    if (e.method === 0) return raw;
    return inflateRaw(where, e, raw);
  }

  return { entries, entry: (name) => byName.get(name), data, bytes };
}

async function inflateRaw(where, e, raw) {
  if (typeof DecompressionStream !== 'function') {
    throw new Error(`${where}: zip entry ${JSON.stringify(e.name)} is deflated, and this environment has no DecompressionStream to inflate it; torch.save writes stored entries: re-save the checkpoint with torch.save, or as safetensors`);
  }
  if (e.size > MAX_INFLATED_BYTES) throw rangeError(where, `zip entry ${JSON.stringify(e.name)} would inflate to ${e.size} bytes, more than the ${MAX_INFLATED_BYTES} this reader inflates in memory; re-save it stored (as torch.save writes)`);
  // Inflated chunk by chunk into the size the directory gives, and stopped
  // as soon as it would grow past it (a zip bomb costs no more than that).
  const out = new Uint8Array(e.size);
  let n = 0;
  let reader;
  try {
    reader = new Blob([raw]).stream().pipeThrough(new DecompressionStream('deflate-raw')).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (n + value.length > e.size) {
        await reader.cancel();
        n = -1;
        break;
      }
      out.set(value, n);
      n += value.length;
    }
  } catch (err) {
    throw rangeError(where, `zip entry ${JSON.stringify(e.name)}: its deflate data do not inflate (${err && err.message})`);
  }
  if (n !== e.size) throw rangeError(where, `zip entry ${JSON.stringify(e.name)} inflates to ${n < 0 ? `more than ${e.size}` : n} bytes, but the directory says ${e.size}`);
  return out;
}
