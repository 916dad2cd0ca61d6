// A restricted unpickler for the data.pkl of a torch.save checkpoint: the
// opcodes of pickle protocols 0–4 that torch.save's state dicts use
// (CPython Lib/pickle.py, Modules/_pickle.c; torch/serialization.py), and
// nothing that runs code. This is a security boundary: a Python pickle can
// call any importable function (os.system, builtins.eval, …). Here a GLOBAL
// resolves only to the few names a state dict needs, each a JS stand-in
// written below; any other global is refused with an Error that names it,
// before anything else happens. REDUCE calls only those stand-ins, BUILD sets
// state only on an OrderedDict (its `_metadata`), and every other opcode that
// builds or calls objects (INST, OBJ, NEWOBJ, EXT*, …) is refused.
//
// What a state dict pickles to (torch._tensor.Tensor._reduce_ex_internal):
//   OrderedDict() BUILD {_metadata} SETITEMS name → REDUCE(
//     torch._utils._rebuild_tensor_v2, (BINPERSID ('storage', torch.FloatStorage,
//     '0', 'cpu', numel), storage_offset, size, stride, requires_grad,
//     OrderedDict()))
// The persistent id names the zip record `data/<key>`; the storage class
// gives the dtype. Two tensors with one key share a storage (tied weights).
import { rangeError } from '../errors.js';

/** torch storage classes → the dtype names of io/dtypes.js. */
export const STORAGE_DTYPES = Object.freeze({
  FloatStorage: 'F32',
  HalfStorage: 'F16',
  BFloat16Storage: 'BF16',
  DoubleStorage: 'F64',
  LongStorage: 'I64',
  IntStorage: 'I32',
  ShortStorage: 'I16',
  CharStorage: 'I8',
  ByteStorage: 'U8',
  BoolStorage: 'BOOL',
});

/** The globals allowed in a checkpoint's pickle ("module.name"). */
export const ALLOWED_GLOBALS = Object.freeze([
  'collections.OrderedDict',
  'torch._utils._rebuild_tensor_v2',
  'torch._utils._rebuild_parameter',
  'torch.Size',
  ...Object.keys(STORAGE_DTYPES).map((s) => `torch.${s}`),
]);

const MAX_DIMS = 64;

/** A Python dict or OrderedDict: insertion-ordered entries. */
export class PyDict {
  constructor() {
    /** @type {Map<any, any>} */
    this.map = new Map();
    /** BUILD state of an OrderedDict (a state dict's _metadata). */
    this.state = null;
  }
}

/** A torch tensor as the pickle describes it (its data stay in the zip). */
export class TorchTensor {
  constructor(storage, offset, shape, stride) {
    this.storage = storage; // { key, dtype, numel }
    this.offset = offset;
    this.shape = shape;
    this.stride = stride;
  }
}

class Global {
  constructor(name, call) {
    this.name = name;
    this.call = call;
  }
}

class Tuple {
  constructor(items) {
    this.items = items;
  }
}

const MARK = Symbol('mark');

function isInt(v) {
  return Number.isSafeInteger(v);
}

function intList(where, what, v) {
  if (!(v instanceof Tuple) || v.items.length > MAX_DIMS || !v.items.every((d) => isInt(d) && d >= 0)) {
    throw rangeError(where, `${what} must be a tuple of at most ${MAX_DIMS} non-negative integers`);
  }
  return v.items.slice();
}

function rebuildTensorV2(where, args) {
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  const a = args.items;
  if (a.length < 4 || a.length > 7) throw rangeError(where, `torch._utils._rebuild_tensor_v2 takes 6 or 7 arguments, got ${a.length}`);
  const [storage, offset, sizeT, strideT] = a;
  if (!storage || typeof storage !== 'object' || !('key' in storage) || !('numel' in storage)) {
    throw rangeError(where, 'torch._utils._rebuild_tensor_v2: the first argument is not a storage (a persistent id)');
  }
  if (!isInt(offset) || offset < 0) throw rangeError(where, 'torch._utils._rebuild_tensor_v2: the storage offset must be a non-negative integer');
  const shape = intList(where, 'a tensor size', sizeT);
  const stride = intList(where, 'a tensor stride', strideT);
  if (shape.length !== stride.length) throw rangeError(where, `a tensor's size [${shape}] and stride [${stride}] differ in length`);
  let count = 1;
  let last = offset;
  for (let i = 0; i < shape.length; i++) {
    count *= shape[i];
    last += (shape[i] - 1) * stride[i];
  }
  if (!Number.isSafeInteger(count) || !Number.isSafeInteger(last)) throw rangeError(where, `tensor size [${shape}] is too large`);
  if (count > 0 && last >= storage.numel) {
    throw rangeError(where, `a tensor of size [${shape}], stride [${stride}] at storage offset ${offset} reaches element ${last}, past its storage ${JSON.stringify(storage.key)} of ${storage.numel} elements`);
  }
  return new TorchTensor(storage, offset, shape, stride);
}

function makeGlobals(where) {
  const g = new Map();
  g.set('collections.OrderedDict', (args) => {
    if (args.items.length !== 0) throw rangeError(where, 'collections.OrderedDict is called with arguments; a state dict pickles it as OrderedDict()');
    return new PyDict();
  });
  g.set('torch._utils._rebuild_tensor_v2', (args) => rebuildTensorV2(where, args));
  g.set('torch._utils._rebuild_parameter', (args) => {
    // (data, requires_grad, backward_hooks): an nn.Parameter around a tensor.
    const t = args.items[0];
    if (!(t instanceof TorchTensor) || args.items.length !== 3) throw rangeError(where, 'torch._utils._rebuild_parameter takes (tensor, requires_grad, backward_hooks)');
    return t;
  });
  g.set('torch.Size', (args) => {
    const t = args.items[0];
    if (args.items.length !== 1 || !(t instanceof Tuple)) throw rangeError(where, 'torch.Size takes one tuple');
    return t;
  });
  for (const s of Object.keys(STORAGE_DTYPES)) {
    g.set(`torch.${s}`, () => {
      throw rangeError(where, `torch.${s} is called in the pickle; a checkpoint names storage classes only in persistent ids`);
    });
  }
  return g;
}

/**
 * Unpickles `bytes` (a data.pkl). `persistentLoad(pid)` gets each persistent
 * id (a plain array of its tuple's items, storage classes as
 * { storageClass: 'FloatStorage' }) and returns the storage. Returns the
 * unpickled object: PyDict, TorchTensor, arrays (lists), Tuples, strings,
 * numbers, BigInts, booleans, null.
 * @param {string} where
 * @param {Uint8Array} bytes
 * @param {(pid: any[]) => any} persistentLoad
 */
export function unpickle(where, bytes, persistentLoad) {
  return unpickleAt(where, bytes, 0, persistentLoad).value;
}

/** A RangeError for a pickle cut short: `truncated` tells a reader that more bytes may complete it. */
function truncated(where, message) {
  const err = rangeError(where, `truncated pickle: ${message}`);
  Object.defineProperty(err, 'truncated', { value: true });
  return err;
}

/**
 * Unpickles the one pickle that starts at `start` in `bytes` (the legacy
 * format holds several in a row): { value, end } with `end` just past its
 * STOP. A pickle cut short throws a RangeError with `truncated` true.
 * @param {string} where
 * @param {Uint8Array} bytes
 * @param {number} start
 * @param {(pid: any[]) => any} persistentLoad
 */
export function unpickleAt(where, bytes, start, persistentLoad) {
  const globals = makeGlobals(where);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.length;
  let p = start;
  /** @type {any[]} */
  let stack = [];
  /** @type {any[][]} */
  const marks = [];
  const memo = new Map();
  const need = (k, what) => {
    if (p + k > n) throw truncated(where, `${what} at byte ${p - 1} needs ${k} bytes, ${n - p} left`);
  };
  const pop = (op) => {
    if (stack.length === 0) throw rangeError(where, `bad pickle: opcode ${op} at byte ${p - 1} on an empty stack`);
    const v = stack.pop();
    if (v === MARK) throw rangeError(where, `bad pickle: opcode ${op} at byte ${p - 1} found a mark`);
    return v;
  };
  const top = (op) => {
    if (stack.length === 0) throw rangeError(where, `bad pickle: opcode ${op} at byte ${p - 1} on an empty stack`);
    return stack[stack.length - 1];
  };
  const popMark = (op) => {
    if (marks.length === 0) throw rangeError(where, `bad pickle: opcode ${op} at byte ${p - 1} without a MARK`);
    const items = stack;
    stack = marks.pop();
    return items;
  };
  const str = (k, what, decoder) => {
    need(k, what);
    const s = bytes.subarray(p, p + k);
    p += k;
    if (!decoder) return s.slice();
    try {
      return decoder.decode(s);
    } catch {
      throw rangeError(where, `bad pickle: ${what} at byte ${p - k} is not valid UTF-8`);
    }
  };
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const latin1 = new TextDecoder('latin1');
  const line = (what) => {
    const end = bytes.indexOf(0x0a, p);
    if (end < 0) throw truncated(where, `${what} at byte ${p - 1} has no newline`);
    const s = latin1.decode(bytes.subarray(p, end));
    p = end + 1;
    return s;
  };
  const global = (module, name) => {
    const full = `${module}.${name}`;
    const fn = globals.get(full);
    if (!fn) {
      throw rangeError(where, `the pickle asks for the global ${full}, which a state dict does not need and this reader never calls; allowed: ${ALLOWED_GLOBALS.join(', ')}`);
    }
    return new Global(full, fn);
  };
  const setItem = (d, k, v, op) => {
    if (!(d instanceof PyDict)) throw rangeError(where, `bad pickle: ${op} at byte ${p - 1} on something that is not a dict`);
    d.map.set(k, v);
  };
  const append = (l, v, op) => {
    if (!Array.isArray(l)) throw rangeError(where, `bad pickle: ${op} at byte ${p - 1} on something that is not a list`);
    l.push(v);
  };
  const put = (k) => {
    if (stack.length === 0) throw rangeError(where, `bad pickle: a memo put at byte ${p - 1} on an empty stack`);
    memo.set(k, stack[stack.length - 1]);
  };
  const get = (k) => {
    if (!memo.has(k)) throw rangeError(where, `bad pickle: memo key ${k} at byte ${p - 1} was never put`);
    stack.push(memo.get(k));
  };

  while (true) {
    if (p >= n) throw truncated(where, 'it ends without a STOP opcode');
    const op = bytes[p++];
    const name = `0x${op.toString(16).padStart(2, '0')}`;
    switch (op) {
      case 0x80: // PROTO
        need(1, 'PROTO');
        if (bytes[p] > 5) throw rangeError(where, `unsupported pickle protocol ${bytes[p]}`);
        p += 1;
        break;
      case 0x95: // FRAME (protocol 4): an 8-byte length, framing only
        need(8, 'FRAME');
        p += 8;
        break;
      case 0x2e: // STOP
        if (stack.length !== 1 || marks.length) throw rangeError(where, `bad pickle: STOP with ${stack.length} values on the stack and ${marks.length} open marks`);
        return { value: pop('STOP'), end: p };
      case 0x28: // MARK
        marks.push(stack);
        stack = [];
        break;
      case 0x7d: stack.push(new PyDict()); break; // EMPTY_DICT
      case 0x5d: stack.push([]); break; // EMPTY_LIST
      case 0x29: stack.push(new Tuple([])); break; // EMPTY_TUPLE
      // (popMark replaces `stack`: take the items before naming stack.push)
      case 0x74: { const items = popMark('TUPLE'); stack.push(new Tuple(items)); break; } // TUPLE
      case 0x85: stack.push(new Tuple([pop('TUPLE1')])); break;
      case 0x86: { const b = pop('TUPLE2'); const a = pop('TUPLE2'); stack.push(new Tuple([a, b])); break; }
      case 0x87: { const c = pop('TUPLE3'); const b = pop('TUPLE3'); const a = pop('TUPLE3'); stack.push(new Tuple([a, b, c])); break; }
      case 0x6c: { const items = popMark('LIST'); stack.push(items); break; } // LIST
      case 0x64: { // DICT
        const items = popMark('DICT');
        if (items.length % 2) throw rangeError(where, `bad pickle: DICT at byte ${p - 1} with an odd number of items`);
        const d = new PyDict();
        for (let i = 0; i < items.length; i += 2) d.map.set(items[i], items[i + 1]);
        stack.push(d);
        break;
      }
      case 0x4e: stack.push(null); break; // NONE
      case 0x88: stack.push(true); break; // NEWTRUE
      case 0x89: stack.push(false); break; // NEWFALSE
      case 0x4b: need(1, 'BININT1'); stack.push(bytes[p]); p += 1; break;
      case 0x4d: need(2, 'BININT2'); stack.push(dv.getUint16(p, true)); p += 2; break;
      case 0x4a: need(4, 'BININT'); stack.push(dv.getInt32(p, true)); p += 4; break;
      case 0x8a: { // LONG1: n bytes, little-endian two's complement
        need(1, 'LONG1');
        const k = bytes[p++];
        need(k, 'LONG1');
        let v = 0n;
        for (let i = k - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[p + i]);
        if (k && bytes[p + k - 1] & 0x80) v -= 1n << BigInt(8 * k);
        p += k;
        stack.push(v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);
        break;
      }
      case 0x47: need(8, 'BINFLOAT'); stack.push(dv.getFloat64(p, false)); p += 8; break;
      case 0x58: { need(4, 'BINUNICODE'); const k = dv.getUint32(p, true); p += 4; stack.push(str(k, 'BINUNICODE', utf8)); break; }
      case 0x8c: { need(1, 'SHORT_BINUNICODE'); const k = bytes[p++]; stack.push(str(k, 'SHORT_BINUNICODE', utf8)); break; }
      case 0x54: { need(4, 'BINSTRING'); const k = dv.getInt32(p, true); p += 4; if (k < 0) throw rangeError(where, 'bad pickle: BINSTRING with a negative length'); stack.push(str(k, 'BINSTRING', latin1)); break; }
      case 0x55: { need(1, 'SHORT_BINSTRING'); const k = bytes[p++]; stack.push(str(k, 'SHORT_BINSTRING', latin1)); break; }
      case 0x42: { need(4, 'BINBYTES'); const k = dv.getUint32(p, true); p += 4; stack.push(str(k, 'BINBYTES', null)); break; }
      case 0x43: { need(1, 'SHORT_BINBYTES'); const k = bytes[p++]; stack.push(str(k, 'SHORT_BINBYTES', null)); break; }
      case 0x71: need(1, 'BINPUT'); put(bytes[p]); p += 1; break;
      case 0x72: need(4, 'LONG_BINPUT'); put(dv.getUint32(p, true)); p += 4; break;
      case 0x94: put(memo.size); break; // MEMOIZE
      case 0x68: need(1, 'BINGET'); p += 1; get(bytes[p - 1]); break;
      case 0x6a: need(4, 'LONG_BINGET'); p += 4; get(dv.getUint32(p - 4, true)); break;
      case 0x30: pop('POP'); break; // POP
      case 0x31: popMark('POP_MARK'); break;
      case 0x32: stack.push(top('DUP')); break; // DUP
      case 0x63: { // GLOBAL: "module\nname\n"
        const module = line('GLOBAL');
        const gname = line('GLOBAL');
        stack.push(global(module, gname));
        break;
      }
      case 0x93: { // STACK_GLOBAL
        const gname = pop('STACK_GLOBAL');
        const module = pop('STACK_GLOBAL');
        if (typeof gname !== 'string' || typeof module !== 'string') throw rangeError(where, 'bad pickle: STACK_GLOBAL needs two strings');
        stack.push(global(module, gname));
        break;
      }
      case 0x52: { // REDUCE
        const args = pop('REDUCE');
        const fn = pop('REDUCE');
        if (!(fn instanceof Global)) throw rangeError(where, `bad pickle: REDUCE at byte ${p - 1} calls something that is not an allowed global`);
        if (!(args instanceof Tuple)) throw rangeError(where, `bad pickle: REDUCE at byte ${p - 1} calls ${fn.name} without an argument tuple`);
        stack.push(fn.call(args));
        break;
      }
      case 0x62: { // BUILD: only an OrderedDict's state (a state dict's _metadata)
        const state = pop('BUILD');
        const obj = top('BUILD');
        if (!(obj instanceof PyDict)) throw rangeError(where, `bad pickle: BUILD at byte ${p - 1} sets state on something other than an OrderedDict`);
        obj.state = state;
        break;
      }
      case 0x51: { // BINPERSID
        const pid = pop('BINPERSID');
        if (!(pid instanceof Tuple)) throw rangeError(where, 'bad pickle: a persistent id must be a tuple');
        stack.push(persistentLoad(pid.items.map((v) => (v instanceof Global && v.name.startsWith('torch.') && v.name.slice(6) in STORAGE_DTYPES ? { storageClass: v.name.slice(6) } : v))));
        break;
      }
      case 0x73: { const v = pop('SETITEM'); const k = pop('SETITEM'); setItem(top('SETITEM'), k, v, 'SETITEM'); break; }
      case 0x75: { // SETITEMS
        const items = popMark('SETITEMS');
        if (items.length % 2) throw rangeError(where, `bad pickle: SETITEMS at byte ${p - 1} with an odd number of items`);
        const d = top('SETITEMS');
        for (let i = 0; i < items.length; i += 2) setItem(d, items[i], items[i + 1], 'SETITEMS');
        break;
      }
      case 0x61: { const v = pop('APPEND'); append(top('APPEND'), v, 'APPEND'); break; }
      case 0x65: { // APPENDS
        const items = popMark('APPENDS');
        const l = top('APPENDS');
        for (const v of items) append(l, v, 'APPENDS');
        break;
      }
      default: {
        const known = { 0x69: 'INST', 0x6f: 'OBJ', 0x81: 'NEWOBJ', 0x92: 'NEWOBJ_EX', 0x82: 'EXT1', 0x83: 'EXT2', 0x84: 'EXT4', 0x50: 'PERSID', 0x49: 'INT', 0x4c: 'LONG', 0x8b: 'LONG4', 0x46: 'FLOAT', 0x53: 'STRING', 0x56: 'UNICODE', 0x70: 'PUT', 0x67: 'GET', 0x8d: 'BINUNICODE8', 0x8e: 'BINBYTES8', 0x8f: 'EMPTY_SET', 0x90: 'ADDITEMS', 0x91: 'FROZENSET', 0x96: 'BYTEARRAY8', 0x97: 'NEXT_BUFFER', 0x98: 'READONLY_BUFFER' }[op];
        throw rangeError(where, `the pickle uses opcode ${known ?? name} at byte ${p - 1}, which torch.save's state dicts do not use and this reader refuses`);
      }
    }
  }
}
