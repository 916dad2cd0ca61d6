// KVCache: the keys and values of the positions a MultiHeadAttention has
// seen, for incremental decoding (made by mha.createKVCache()). The checks
// that a forward applies to a cache are checkCache below.
import { describe, typeError, rangeError, checkInt, disposedError } from './errors.js';
import { registry } from './attention-module.js';

/** Keys and values of the positions a MultiHeadAttention has seen (see createKVCache). */
export class KVCache {
  /**
   * @param {import('./backend.js').Backend} backend
   * @param {object} mha the MultiHeadAttention that owns the cache
   * @param {any} obj the backend's cache handle
   * @param {number} batch
   * @param {number} maxLength
   */
  constructor(backend, mha, obj, batch, maxLength) {
    this._backend = backend;
    this._mha = mha;
    this._obj = obj;
    this._length = 0;
    this._busy = false;
    this.batch = batch;
    this.maxLength = maxLength;
    this._token = {};
    if (registry) registry.register(this, () => backend.kvCacheDestroy(obj), this._token);
  }

  /** Positions held (grows by the new keys of every forward that uses the cache). */
  get length() {
    return this._length;
  }

  get disposed() {
    return this._obj === null;
  }

  /** Forgets every position (length 0), keeping the memory for the next sequence. */
  reset() {
    if (!this._obj) throw disposedError('kvCache.reset', 'this cache', 'create a new one with createKVCache()');
    if (this._busy) throw typeError('kvCache.reset', 'a forward using this cache has not finished; await it first');
    this._backend.kvCacheReset(this._obj);
    this._length = 0;
  }

  /**
   * Keeps the first `length` positions: rolls back decode steps, or returns
   * to a shared prefix (a prompt) for the next continuation.
   */
  truncate(length) {
    const where = 'kvCache.truncate';
    if (!this._obj) throw disposedError(where, 'this cache', 'create a new one with createKVCache()');
    if (this._busy) throw typeError(where, 'a forward using this cache has not finished; await it first');
    const n = checkInt(where, 'length', length, 0, this._length);
    this._backend.kvCacheTruncate(this._obj, n);
    this._length = n;
  }

  /** Bytes held by the cached keys and values. */
  heldBytes() {
    if (!this._obj) return 0;
    return this._backend.kvCacheHeldBytes(this._obj);
  }

  /** Frees the cache. Safe to call more than once. */
  dispose() {
    if (!this._obj) return;
    if (registry) registry.unregister(this._token);
    this._backend.kvCacheDestroy(this._obj);
    this._obj = null;
  }
}

/**
 * The checks of a forward's kvCache option that only the wrapper can make: a
 * KVCache of this MHA, live and idle (the C++ core checks the batch and the
 * room for the new keys).
 * @param {string} where
 * @param {any} cache the option as given
 * @param {object} mha the MultiHeadAttention running the forward
 * @returns {KVCache}
 */
export function checkCache(where, cache, mha) {
  if (!(cache instanceof KVCache)) {
    throw typeError(where, `kvCache must be a cache from this layer's createKVCache(), got ${describe(cache)}`);
  }
  if (cache._mha !== mha) {
    throw rangeError(where, 'kvCache belongs to another multiHeadAttention; use one created by this layer\'s createKVCache()');
  }
  if (!cache._obj) throw disposedError(where, 'kvCache', 'create a new one with createKVCache()');
  if (cache._busy) {
    throw typeError(where, 'kvCache is in use by a forward that has not finished; await it before the next step');
  }
  // The batch and the room for the new keys are checked once, by the C++
  // core (MultiHeadAttention::Forward), which a cached step always runs on.
  return cache;
}
