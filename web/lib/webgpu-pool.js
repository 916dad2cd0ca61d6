// The buffer pool of the webgpu runtime: storage, uniform and readback
// buffers reused across calls by size class, with the statistics that
// poolStats() reports.

// GPUBufferUsage / GPUMapMode values (spelled out so this module also loads
// where the WebGPU globals are absent).
export const USAGE = { MAP_READ: 0x1, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80 };
export const MAP_READ = 0x1;
const POOL_USAGE = {
  storage: USAGE.STORAGE | USAGE.COPY_DST | USAGE.COPY_SRC,
  uniform: USAGE.UNIFORM | USAGE.COPY_DST,
  readback: USAGE.MAP_READ | USAGE.COPY_DST,
};
/** Idle pooled bytes kept for reuse; above this, released buffers are destroyed. */
const MAX_IDLE_BYTES = 256 * 2 ** 20;

export function formatBytes(n) {
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(n >= 100 * 2 ** 20 ? 0 : 1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

// Pool size classes: quarter steps between powers of two (≤ 25% slack), 256 B minimum.
function sizeClass(bytes) {
  const b = Math.max(bytes, 256);
  const step = 2 ** Math.max(8, Math.floor(Math.log2(b)) - 2);
  return Math.ceil(b / step) * step;
}

/** Buffers reused across calls, by kind (storage, uniform, readback) and size class. */
export class BufferPool {
  constructor(device, maxBufferSize) {
    this.device = device;
    this.maxBufferSize = maxBufferSize;
    this.free = new Map(); // `${kind}:${size}` → GPUBuffer[]
    this.live = new Set(); // every pool buffer not destroyed
    this.bytesAllocated = 0;
    this.idleBytes = 0;
    this.resetStats();
  }

  resetStats() {
    this.largestBuffer = 0;
    this.peakBytes = this.bytesAllocated;
    this.created = 0;
    this.reused = 0;
    for (const b of this.live) this.largestBuffer = Math.max(this.largestBuffer, b.size);
  }

  acquire(kind, bytes) {
    let size = sizeClass(bytes);
    if (size > this.maxBufferSize) size = Math.ceil(bytes / 4) * 4;
    const key = `${kind}:${size}`;
    const list = this.free.get(key);
    if (list && list.length) {
      this.reused++;
      this.idleBytes -= size;
      return { buffer: list.pop(), size, kind };
    }
    const buffer = this.device.createBuffer({ size, usage: POOL_USAGE[kind], label: `pool ${kind} ${size}` });
    this.created++;
    this.live.add(buffer);
    this.bytesAllocated += size;
    this.peakBytes = Math.max(this.peakBytes, this.bytesAllocated);
    this.largestBuffer = Math.max(this.largestBuffer, size);
    return { buffer, size, kind };
  }

  release(entry) {
    if (!this.live.has(entry.buffer)) return;
    if (this.idleBytes + entry.size > MAX_IDLE_BYTES) {
      this.destroy(entry.buffer);
      return;
    }
    const key = `${entry.kind}:${entry.size}`;
    if (!this.free.has(key)) this.free.set(key, []);
    this.free.get(key).push(entry.buffer);
    this.idleBytes += entry.size;
  }

  destroy(buffer) {
    if (!this.live.delete(buffer)) return;
    this.bytesAllocated -= buffer.size;
    buffer.destroy();
  }

  /** Destroys every idle buffer. */
  trim() {
    for (const list of this.free.values()) for (const b of list) this.destroy(b);
    this.free.clear();
    this.idleBytes = 0;
  }

  destroyAll() {
    this.trim();
    for (const b of [...this.live]) this.destroy(b);
  }

  stats() {
    return {
      bytesAllocated: this.bytesAllocated,
      largestBuffer: this.largestBuffer,
      buffers: this.live.size,
      idleBytes: this.idleBytes,
      peakBytes: this.peakBytes,
      created: this.created,
      reused: this.reused,
    };
  }
}

