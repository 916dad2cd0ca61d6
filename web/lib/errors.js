// Error helpers: every message names the function and argument, what was
// given and what is allowed.
//
// The rule (docs/errors.md), one class per kind of mistake:
//   * TypeError: a value of the wrong kind: wrong JS type, a missing field, an
//     unknown option key, an object that is not what the call needs, a call
//     the object cannot take now (forwardSync on webgpu, a KV cache still in
//     use by an unfinished forward: like a locked stream);
//   * RangeError: a value of the right kind that is not allowed: numbers out
//     of range, unknown names ('layout', 'backend'), shapes and sizes,
//     non-finite elements under checkFinite, out of wasm memory;
//   * DisposedError (a TypeError, like a detached ArrayBuffer): a disposed
//     multiHeadAttention, selfAttentionLayer or KV cache was used;
//   * Error: the environment cannot do it (no WebGPU adapter, wasm without
//     SIMD, a .wasm file that does not instantiate): nothing the arguments
//     could fix.

/** Short description of a value for error messages. */
export function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value);
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of length ${/** @type {Uint8Array} */ (value).length}`;
  if (typeof value === 'function') return 'a function';
  return 'an object';
}

export function typeError(where, message) {
  return new TypeError(`${where}: ${message}`);
}

export function rangeError(where, message) {
  return new RangeError(`${where}: ${message}`);
}

/** Checks that `value` is an integer in [min, max]; returns it. */
export function checkInt(where, name, value, min, max = 2 ** 31 - 1) {
  if (typeof value !== 'number') {
    throw typeError(where, `${name} must be an integer >= ${min}, got ${describe(value)}`);
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw rangeError(where, `${name} must be an integer in [${min}, ${max}], got ${describe(value)}`);
  }
  return value;
}

/** Checks that `value` is a finite number (optionally in a range). */
export function checkNumber(where, name, value, { min = -Infinity, max = Infinity, minExclusive = false, maxExclusive = false } = {}) {
  if (typeof value !== 'number') {
    throw typeError(where, `${name} must be a number, got ${describe(value)}`);
  }
  const lowOk = minExclusive ? value > min : value >= min;
  const highOk = maxExclusive ? value < max : value <= max;
  if (!Number.isFinite(value) || !lowOk || !highOk) {
    const lo = min === -Infinity ? '(-∞' : `${minExclusive ? '(' : '['}${min}`;
    const hi = max === Infinity ? '∞)' : `${max}${maxExclusive ? ')' : ']'}`;
    throw rangeError(where, `${name} must be a finite number in ${lo}, ${hi}, got ${describe(value)}`);
  }
  return value;
}

export function checkBool(where, name, value) {
  if (typeof value !== 'boolean') {
    throw typeError(where, `${name} must be true or false, got ${describe(value)}`);
  }
  return value;
}

/**
 * Checks an options object (undefined/null mean {}). With `allowed`, a key
 * that is not in it (and whose value is not undefined) is a TypeError that
 * names the key and lists the allowed ones.
 * @param {string} where
 * @param {string} name
 * @param {unknown} value
 * @param {readonly string[]} [allowed]
 * @returns {any} the options object ({} for undefined/null)
 */
export function checkOptions(where, name, value, allowed) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw typeError(where, `${name} must be an options object, got ${describe(value)}`);
  }
  if (allowed) checkKeys(where, name, value, allowed);
  return value;
}

/** Refuses keys of `obj` outside `allowed` (keys whose value is undefined are ignored). */
export function checkKeys(where, name, obj, allowed) {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key) && obj[key] !== undefined) {
      throw typeError(where, `${name} has an unknown key ${JSON.stringify(key)}; allowed: ${allowed.join(', ')}`);
    }
  }
}

/**
 * Thrown when a disposed multiHeadAttention, selfAttentionLayer or KV cache
 * is used. A TypeError (like using a detached ArrayBuffer), named
 * 'DisposedError'. `instanceof` also recognises instances made by another
 * copy of this class (the CommonJS entry declares its own).
 */
export class DisposedError extends TypeError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'DisposedError';
  }

  /** @param {unknown} value */
  static [Symbol.hasInstance](value) {
    return value instanceof TypeError && /** @type {TypeError} */ (value).name === 'DisposedError';
  }
}

/** DisposedError for `where`: `what` (e.g. 'this object') has been disposed. */
export function disposedError(where, what, remedy) {
  return new DisposedError(`${where}: ${what} has been disposed; ${remedy}`);
}
