// attention-lab — CommonJS entry for `require('attention-lab')` in Node.
// The library is an ES module; `init` loads it on first use:
//   const { init } = require('attention-lab');
//   const lab = await init();
'use strict';

let loading = null;
function load() {
  if (!loading) loading = import('./node.js');
  return loading;
}

/** @type {typeof import('./index').init} */
exports.init = function init(options) {
  return load().then((m) => m.init(options));
};

/**
 * Thrown when a disposed object is used (a TypeError named 'DisposedError').
 * The errors come from the ES module's class (lib/errors.js); this copy
 * exists so that `require` users have it at once, and `instanceof` works
 * both ways (both classes recognise the name).
 */
class DisposedError extends TypeError {
  constructor(message) {
    super(message);
    this.name = 'DisposedError';
  }

  static [Symbol.hasInstance](value) {
    return value instanceof TypeError && value.name === 'DisposedError';
  }
}
exports.DisposedError = DisposedError;

/** Thrown by trainer.step when the loss becomes non-finite (an Error named 'TrainingStoppedError'; see DisposedError). */
class TrainingStoppedError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TrainingStoppedError';
  }

  static [Symbol.hasInstance](value) {
    return value instanceof Error && value.name === 'TrainingStoppedError';
  }
}
exports.TrainingStoppedError = TrainingStoppedError;

/** @type {typeof import('./index').simdSupported} */
exports.simdSupported = function simdSupported() {
  // Same probe as lib/loader.js, kept synchronous here.
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  try {
    return WebAssembly.validate(probe);
  } catch {
    return false;
  }
};

/** @type {typeof import('./index').threadsSupported} */
exports.threadsSupported = function threadsSupported() {
  // Node: shared wasm memory is all the threaded build needs.
  try {
    return new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch {
    return false;
  }
};
