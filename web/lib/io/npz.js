// NumPy .npz reader and writer: a zip archive of .npy members, as written by
// numpy.savez (entries stored, not compressed; zip64 extra fields accepted).
// Deflated members (numpy.savez_compressed) are refused with a message: this
// library has no inflater, and the browser's DecompressionStream is async.
// Each member's CRC-32 is checked.
//
// Copies: as readNpy, each member's data is a view over the input buffer
// when it is little-endian f4/i4 at an offset that is a multiple of 4 (a zip
// member's offset usually is not), else converted into a fresh array.
import { rangeError, typeError, checkOptions } from '../errors.js';
import { asBytes } from './dtypes.js';
import { readNpyAs, writeNpy } from './npy.js';

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_LOC64 = 0x07064b50;

let crcTable = null;
/** CRC-32 (IEEE 802.3), as zip uses. */
export function crc32(u8) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < u8.length; i++) c = crcTable[(c ^ u8[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function u64(dv, off) {
  const lo = dv.getUint32(off, true);
  const hi = dv.getUint32(off + 4, true);
  return hi * 2 ** 32 + lo;
}

function findEocd(where, u8, dv) {
  const min = Math.max(0, u8.byteLength - 22 - 0xffff);
  for (let p = u8.byteLength - 22; p >= min; p--) {
    if (dv.getUint32(p, true) === SIG_EOCD && p + 22 + dv.getUint16(p + 20, true) === u8.byteLength) return p;
  }
  throw rangeError(where, u8.byteLength < 22
    ? `truncated file: ${u8.byteLength} bytes is too short for a zip archive (.npz)`
    : 'not a zip archive (.npz): no end-of-central-directory record (truncated file?)');
}

/** Lists the members: [{ name, method, flags, crc, size, csize, offset }]. */
function centralDirectory(where, u8) {
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const e = findEocd(where, u8, dv);
  if (dv.getUint16(e + 4, true) !== 0 || dv.getUint16(e + 6, true) !== 0) throw rangeError(where, 'multi-disk zip archives are not supported');
  let count = dv.getUint16(e + 10, true);
  let cdSize = dv.getUint32(e + 12, true);
  let cdOffset = dv.getUint32(e + 16, true);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const loc = e - 20;
    if (loc < 0 || dv.getUint32(loc, true) !== SIG_LOC64) throw rangeError(where, 'zip64 archive without a zip64 end-of-central-directory locator');
    const r = u64(dv, loc + 8);
    if (r + 56 > loc || dv.getUint32(r, true) !== SIG_EOCD64) throw rangeError(where, 'the zip64 end-of-central-directory record is missing or out of place');
    count = u64(dv, r + 32);
    cdSize = u64(dv, r + 40);
    cdOffset = u64(dv, r + 48);
  }
  if (cdOffset + cdSize > e) throw rangeError(where, `the central directory [${cdOffset}, ${cdOffset + cdSize}) lies outside the archive (truncated file or lying offsets)`);
  const members = [];
  let p = cdOffset;
  for (let k = 0; k < count; k++) {
    if (p + 46 > cdOffset + cdSize || dv.getUint32(p, true) !== SIG_CENTRAL) throw rangeError(where, `central directory entry ${k} of ${count} is damaged or missing`);
    const nameLen = dv.getUint16(p + 28, true);
    const extraLen = dv.getUint16(p + 30, true);
    const commentLen = dv.getUint16(p + 32, true);
    const next = p + 46 + nameLen + extraLen + commentLen;
    if (next > cdOffset + cdSize) throw rangeError(where, `central directory entry ${k} runs past the directory's end`);
    const name = new TextDecoder().decode(u8.subarray(p + 46, p + 46 + nameLen));
    const m = {
      name,
      flags: dv.getUint16(p + 8, true),
      method: dv.getUint16(p + 10, true),
      crc: dv.getUint32(p + 16, true),
      csize: dv.getUint32(p + 20, true),
      size: dv.getUint32(p + 24, true),
      offset: dv.getUint32(p + 42, true),
    };
    // zip64 extra field (id 1): the 8-byte values of the fields set to 0xffffffff, in this order.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen;) {
      const id = dv.getUint16(x, true);
      const len = dv.getUint16(x + 2, true);
      if (x + 4 + len > p + 46 + nameLen + extraLen) throw rangeError(where, `member ${JSON.stringify(name)}: an extra field runs past its entry`);
      if (id === 1) {
        let q = x + 4;
        for (const f of ['size', 'csize', 'offset']) {
          if (m[f] !== 0xffffffff) continue;
          if (q + 8 > x + 4 + len) throw rangeError(where, `member ${JSON.stringify(name)}: the zip64 extra field is too short`);
          m[f] = u64(dv, q);
          q += 8;
        }
      }
      x += 4 + len;
    }
    members.push(m);
    p = next;
  }
  return { members, cdOffset };
}

/**
 * Reads a .npz archive held in memory. Names lose their '.npy' suffix.
 * @param {ArrayBuffer|ArrayBufferView} bytes
 * @param {{ copy?: boolean }} [options]
 * @returns {{ tensors: Record<string, {data, shape, dtype}> }}
 */
export function readNpz(bytes, options) {
  const where = 'readNpz';
  const opts = checkOptions(where, 'options', options);
  for (const k of Object.keys(opts)) {
    if (k !== 'copy') throw typeError(where, `unknown option ${JSON.stringify(k)}; allowed: copy`);
  }
  const u8 = asBytes(where, bytes);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const { members, cdOffset } = centralDirectory(where, u8);
  /** @type {Record<string, any>} */
  const tensors = {};
  const spans = [];
  for (const m of members) {
    const what = `member ${JSON.stringify(m.name)}`;
    if (m.flags & 1) throw rangeError(where, `${what} is encrypted`);
    if (m.method === 8) {
      throw rangeError(where, `${what} is deflated (numpy.savez_compressed); only stored members (numpy.savez) can be read: save with numpy.savez, or as .npy or .safetensors`);
    }
    if (m.method !== 0) throw rangeError(where, `${what} uses zip compression method ${m.method}; only stored members (method 0, numpy.savez) can be read`);
    if (!m.name.endsWith('.npy')) throw rangeError(where, `${what} is not a .npy array (an .npz holds only NAME.npy members)`);
    if (m.csize !== m.size) throw rangeError(where, `${what}: a stored member's sizes differ (${m.csize} vs ${m.size})`);
    if (m.offset + 30 > cdOffset || dv.getUint32(m.offset, true) !== SIG_LOCAL) {
      throw rangeError(where, `${what}: no local header at offset ${m.offset} (lying offsets or truncated file)`);
    }
    const start = m.offset + 30 + dv.getUint16(m.offset + 26, true) + dv.getUint16(m.offset + 28, true);
    const end = start + m.size;
    if (end > cdOffset) throw rangeError(where, `${what}: its data [${start}, ${end}) runs past the members' area, which ends at ${cdOffset} (truncated file or lying sizes)`);
    for (const s of spans) {
      if (m.offset < s.end && s.start < end) throw rangeError(where, `${what} overlaps member ${JSON.stringify(s.name)}`);
    }
    spans.push({ name: m.name, start: m.offset, end });
    const body = u8.subarray(start, end);
    if (crc32(body) !== m.crc) throw rangeError(where, `${what}: CRC-32 mismatch (damaged file)`);
    const key = m.name.slice(0, -4);
    if (key in tensors) throw rangeError(where, `${what} appears twice`);
    try {
      tensors[key] = readNpyAs(where, body, { copy: Boolean(opts.copy) });
    } catch (err) {
      if (err instanceof RangeError) throw rangeError(where, `${what}: ${err.message.slice(where.length + 2)}`);
      throw err;
    }
  }
  return { tensors };
}

/**
 * Writes tensors (name → { data, shape, dtype? }) as an .npz archive of
 * stored NAME.npy members, which numpy.load reads.
 * @returns {Uint8Array}
 */
export function writeNpz(tensors) {
  const where = 'writeNpz';
  if (tensors === null || typeof tensors !== 'object' || Array.isArray(tensors)) {
    throw typeError(where, 'tensors must be an object mapping names to tensors { data, shape, dtype? }');
  }
  const enc = new TextEncoder();
  const parts = [];
  for (const name of Object.keys(tensors)) {
    let npy;
    try {
      npy = writeNpy(tensors[name]);
    } catch (err) {
      const Ctor = err instanceof RangeError ? RangeError : TypeError;
      throw new Ctor(`${where}: tensors[${JSON.stringify(name)}]: ${err.message.replace(/^writeNpy: (tensor)?:? ?/, '')}`);
    }
    parts.push({ name: enc.encode(`${name}.npy`), npy, crc: crc32(npy), offset: 0 });
  }
  let localSize = 0;
  let cdSize = 0;
  for (const p of parts) {
    if (p.npy.length >= 0xffffffff) throw rangeError(where, 'a member of 4 GiB or more needs zip64, which this writer does not produce');
    localSize += 30 + p.name.length + p.npy.length;
    cdSize += 46 + p.name.length;
  }
  if (localSize + cdSize >= 0xffffffff || parts.length >= 0xffff) throw rangeError(where, 'the archive would need zip64 (4 GiB or 65535 members), which this writer does not produce');
  const out = new Uint8Array(localSize + cdSize + 22);
  const dv = new DataView(out.buffer);
  let p = 0;
  const header = (sig, at, m) => {
    dv.setUint32(at, sig, true);
    const central = sig === SIG_CENTRAL;
    const o = central ? at + 2 : at;
    if (central) dv.setUint16(at + 4, 20, true); // version made by
    dv.setUint16(o + 4, 20, true); // version needed
    dv.setUint16(o + 12, 0x21, true); // date 1980-01-01
    dv.setUint32(o + 14, m.crc, true);
    dv.setUint32(o + 18, m.npy.length, true);
    dv.setUint32(o + 22, m.npy.length, true);
    dv.setUint16(o + 26, m.name.length, true);
  };
  for (const m of parts) {
    m.offset = p;
    header(SIG_LOCAL, p, m);
    out.set(m.name, p + 30);
    out.set(m.npy, p + 30 + m.name.length);
    p += 30 + m.name.length + m.npy.length;
  }
  const cdOffset = p;
  for (const m of parts) {
    header(SIG_CENTRAL, p, m);
    dv.setUint32(p + 42, m.offset, true);
    out.set(m.name, p + 46);
    p += 46 + m.name.length;
  }
  dv.setUint32(p, SIG_EOCD, true);
  dv.setUint16(p + 8, parts.length, true);
  dv.setUint16(p + 10, parts.length, true);
  dv.setUint32(p + 12, cdSize, true);
  dv.setUint32(p + 16, cdOffset, true);
  return out;
}
