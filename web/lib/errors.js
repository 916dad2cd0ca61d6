// Error helpers: every message names the function and argument, what was
// given and what is allowed.

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

export function checkOptions(where, name, value) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw typeError(where, `${name} must be an options object, got ${describe(value)}`);
  }
  return value;
}
