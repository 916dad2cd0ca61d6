// WebGPU runtime of the webgpu backend: the device and its limits, one
// compute pipeline per kernel (created on first use, then cached), a pool of
// reusable buffers, and the Job that records one call: inputs uploaded, every
// dispatch in one compute pass, ONE command submission, ONE readback of what
// was asked. Sizes travel in uniforms, so a new shape never recompiles.
import { WGSL, WGSL_PARAMS } from './wgsl-sources.js';
import { BufferPool, USAGE, MAP_READ, formatBytes } from './webgpu-pool.js';
import { shapeString } from './tensor.js';

export { formatBytes };

export class GpuRuntime {
  /**
   * @param {any} device the GPUDevice
   * @param {object} [caps] optional lower limits to enforce (tests), e.g.
   *   { maxStorageBufferBindingSize: 2 ** 20 }
   */
  constructor(device, caps = {}) {
    this.device = device;
    const dl = device.limits;
    const cap = (name) => Math.min(dl[name], caps[name] ?? Infinity);
    this.limits = {
      maxStorageBufferBindingSize: cap('maxStorageBufferBindingSize'),
      maxBufferSize: cap('maxBufferSize'),
      maxComputeWorkgroupsPerDimension: cap('maxComputeWorkgroupsPerDimension'),
      maxComputeWorkgroupStorageSize: cap('maxComputeWorkgroupStorageSize'),
      maxComputeInvocationsPerWorkgroup: cap('maxComputeInvocationsPerWorkgroup'),
      maxStorageBuffersPerShaderStage: cap('maxStorageBuffersPerShaderStage'),
      minUniformBufferOffsetAlignment: dl.minUniformBufferOffsetAlignment,
    };
    // The kernels use 256 invocations, ≤ 12.4 KiB of workgroup memory and ≤ 8
    // storage buffers: the WebGPU defaults every device provides.
    if (this.limits.maxComputeInvocationsPerWorkgroup < 256 || this.limits.maxComputeWorkgroupStorageSize < 16384 ||
        this.limits.maxStorageBuffersPerShaderStage < 8) {
      throw new RangeError(`webgpu: this device's limits are below the WebGPU defaults the kernels need (${JSON.stringify(this.limits)})`);
    }
    this.pipelines = new Map();
    this.pool = new BufferPool(device, Math.min(this.limits.maxBufferSize, this.limits.maxStorageBufferBindingSize));
    this.dummy = device.createBuffer({ size: 16, usage: USAGE.STORAGE, label: 'dummy' });
    this.counters = { jobs: 0, submissions: 0, dispatches: 0, readbacks: 0, readbackBytes: 0 };
    this.persistentBytes = 0;
  }

  _pipelineDescriptor(name, constants) {
    if (!WGSL[name]) throw new Error(`webgpu: unknown kernel '${name}'`);
    const module = this.device.createShaderModule({ code: WGSL[name], label: name });
    const compute = { module, entryPoint: 'main', ...(constants ? { constants } : {}) };
    return { layout: 'auto', compute, label: name };
  }

  /**
   * The cached pipeline of a kernel (web/webgpu/<name>.wgsl), created on first
   * use; `constants` set its `override` constants (one pipeline per set).
   */
  pipeline(name, constants) {
    const key = constants ? `${name} ${JSON.stringify(constants)}` : name;
    let p = this.pipelines.get(key);
    if (!p) {
      p = this.device.createComputePipeline(this._pipelineDescriptor(name, constants));
      this.pipelines.set(key, p);
    }
    return p;
  }

  /**
   * Compiles every kernel's pipeline asynchronously into the cache: one per
   * setting of its `override NAME: bool` constants (as dispatches pass them).
   */
  async warmUp() {
    const jobs = [];
    for (const name of Object.keys(WGSL)) {
      const flags = [...WGSL[name].matchAll(/^override ([A-Z_][A-Z0-9_]*): bool/gm)].map((m) => m[1]);
      if (!flags.length) jobs.push([name, undefined]);
      for (let bits = 0; flags.length && bits < 2 ** flags.length; bits++) {
        jobs.push([name, Object.fromEntries(flags.map((f, i) => [f, (bits >> i) & 1]))]);
      }
    }
    await Promise.all(jobs.map(async ([name, constants]) => {
      const key = constants ? `${name} ${JSON.stringify(constants)}` : name;
      if (this.pipelines.has(key)) return;
      const p = await this.device.createComputePipelineAsync(this._pipelineDescriptor(name, constants));
      if (!this.pipelines.has(key)) this.pipelines.set(key, p);
    }));
  }

  /**
   * Throws a RangeError when a buffer of `bytes` cannot be bound on this
   * device, naming the tensor, its shape, the size and the limit.
   */
  checkBuffer(where, name, shape, bytes, hint = '') {
    const { maxStorageBufferBindingSize: bind, maxBufferSize: max } = this.limits;
    const [limit, limitName] = bind <= max ? [bind, 'maxStorageBufferBindingSize'] : [max, 'maxBufferSize'];
    if (bytes > limit) {
      throw new RangeError(`${where}: ${name} ${shapeString(shape)} needs ${formatBytes(bytes)} in one GPU buffer, ` +
        `above this device's ${limitName} (${formatBytes(limit)})${hint ? `; ${hint}` : ''}`);
    }
  }

  /** A buffer that lives until destroyPersistent (weights, LayerNorm parameters). */
  createPersistent(label, data) {
    const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
    const buffer = this.device.createBuffer({ size, usage: USAGE.STORAGE | USAGE.COPY_DST, label });
    this.device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
    this.persistentBytes += size;
    return { buffer, bytes: data.byteLength, size };
  }

  writePersistent(entry, data) {
    this.device.queue.writeBuffer(entry.buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  }

  destroyPersistent(entry) {
    if (!entry || entry.destroyed) return;
    entry.destroyed = true;
    this.persistentBytes -= entry.size;
    entry.buffer.destroy();
  }

  /**
   * A new job. `oom` is what its out-of-memory error tells the caller to do (by default: smaller
   * sizes, or needWeights: false, the advice for the attention ops).
   * @param {string} where
   * @param {{ oom?: string }} [options]
   */
  job(where, { oom } = {}) {
    return new Job(this, where, oom);
  }

  /** Workgroup grid (x, y) for `count` linearly numbered workgroups. */
  grid(where, count) {
    const max = this.limits.maxComputeWorkgroupsPerDimension;
    if (count <= max) return [Math.max(count, 1), 1];
    const y = Math.ceil(count / max);
    if (y > max) {
      throw new RangeError(`${where}: ${count} workgroups exceed this device's dispatch limit (${max}² = ${max * max}); use smaller sizes`);
    }
    return [Math.ceil(count / y), y];
  }
}

/**
 * One call on the GPU. Build it synchronously (storage / input / dispatch /
 * read), then `await submit()`. Validation and out-of-memory errors raised
 * while building are captured by error scopes and rethrown from submit().
 */
class Job {
  constructor(rt, where, oom) {
    this.rt = rt;
    this.where = where;
    this.oom = oom ?? 'use smaller sizes or needWeights: false';
    this.held = [];
    this.dispatches = [];
    this.reads = [];
    this.done = false;
    rt.device.pushErrorScope('out-of-memory');
    rt.device.pushErrorScope('validation');
  }

  get dummy() {
    return { buffer: this.rt.dummy, bytes: 16 };
  }

  /** A pooled storage buffer for `count` floats, checked against the limits first. */
  storage(name, shape, count, hint) {
    const bytes = Math.max(count, 1) * 4;
    this.rt.checkBuffer(this.where, name, shape, bytes, hint);
    const entry = this.rt.pool.acquire('storage', bytes);
    this.held.push(entry);
    return { buffer: entry.buffer, bytes, name };
  }

  /** A pooled storage buffer holding `data` (Float32Array, Int32Array, …). */
  input(name, shape, data, hint) {
    const t = this.storage(name, shape, data.length, hint);
    this.rt.device.queue.writeBuffer(t.buffer, 0, data.buffer, data.byteOffset, data.byteLength);
    return t;
  }

  /**
   * Records a dispatch of `kernel` over `count` linearly numbered workgroups.
   * `buffers` follow the kernel's bindings (inputs → outputs); the Params
   * uniform (packed from `params` by the field list of the WGSL struct) is
   * bound last. `constants`: the kernel's `override` constants, if any.
   */
  dispatch(kernel, buffers, params, count, constants) {
    const fields = WGSL_PARAMS[kernel];
    for (const key of Object.keys(params)) {
      if (!fields.some(([n]) => n === key)) throw new Error(`webgpu: ${kernel} has no uniform field '${key}'`);
    }
    this.dispatches.push({ kernel, buffers, params, constants, grid: this.rt.grid(this.where, count) });
  }

  /** Asks for `count` floats of `t` in the readback (in the order of the calls). */
  read(t, count) {
    this.reads.push({ t, count });
  }

  _packUniforms(slot) {
    const data = new ArrayBuffer(slot * this.dispatches.length);
    const view = new DataView(data);
    this.dispatches.forEach((d, k) => {
      let off = k * slot;
      for (const [name, type] of WGSL_PARAMS[d.kernel]) {
        const v = d.params[name];
        if (typeof v !== 'number' || Number.isNaN(v) && type !== 'f32') {
          throw new Error(`webgpu: ${d.kernel} uniform '${name}' is ${v}`);
        }
        if (type === 'f32') {
          view.setFloat32(off, v, true);
        } else {
          if (!Number.isInteger(v) || v < (type === 'i32' ? -(2 ** 31) : 0) || v > (type === 'i32' ? 2 ** 31 - 1 : 2 ** 32 - 1)) {
            throw new RangeError(`${this.where}: ${d.kernel} uniform '${name}' = ${v} does not fit in ${type}; use smaller sizes`);
          }
          if (type === 'i32') view.setInt32(off, v, true);
          else view.setUint32(off, v, true);
        }
        off += 4;
      }
    });
    return data;
  }

  /** Drops the job without submitting (after a synchronous error). */
  abort() {
    if (this.done) return;
    this.done = true;
    const { device, pool } = this.rt;
    device.popErrorScope().catch(() => {});
    device.popErrorScope().catch(() => {});
    for (const e of this.held) pool.release(e);
  }

  /** Submits once and reads back once; resolves to one Float32Array per read(). */
  async submit() {
    const { rt } = this;
    const { device, pool } = rt;
    let readbacks;
    try {
      const align = rt.limits.minUniformBufferOffsetAlignment;
      const slot = Math.ceil(Math.max(...this.dispatches.map((d) => WGSL_PARAMS[d.kernel].length * 4), 16) / align) * align;
      const uniformData = this._packUniforms(slot);
      const uniforms = pool.acquire('uniform', uniformData.byteLength);
      this.held.push(uniforms);
      device.queue.writeBuffer(uniforms.buffer, 0, uniformData);

      const encoder = device.createCommandEncoder({ label: this.where });
      const pass = encoder.beginComputePass({ label: this.where });
      this.dispatches.forEach((d, k) => {
        const pipeline = rt.pipeline(d.kernel, d.constants);
        const entries = d.buffers.map((b, i) => ({ binding: i, resource: { buffer: b.buffer, size: b.bytes } }));
        entries.push({ binding: d.buffers.length, resource: { buffer: uniforms.buffer, offset: k * slot, size: slot } });
        const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries, label: d.kernel });
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(d.grid[0], d.grid[1]);
      });
      pass.end();

      // Readback: the requested regions packed into as few mappable buffers as the limits allow.
      readbacks = [];
      let current = null;
      const maxRead = rt.limits.maxBufferSize;
      for (const r of this.reads) {
        const bytes = r.count * 4;
        if (!current || current.bytes + bytes > maxRead) {
          current = { regions: [], bytes: 0, entry: null };
          readbacks.push(current);
        }
        current.regions.push({ ...r, offset: current.bytes, bytes });
        current.bytes += bytes;
      }
      for (const rb of readbacks) {
        rb.entry = pool.acquire('readback', rb.bytes);
        this.held.push(rb.entry);
        for (const g of rb.regions) encoder.copyBufferToBuffer(g.t.buffer, 0, rb.entry.buffer, g.offset, g.bytes);
      }
      device.queue.submit([encoder.finish()]);
      rt.counters.jobs++;
      rt.counters.submissions++;
      rt.counters.dispatches += this.dispatches.length;
      rt.counters.readbacks++;
      rt.counters.readbackBytes += readbacks.reduce((a, rb) => a + rb.bytes, 0);
    } catch (err) {
      this.abort();
      throw err;
    }
    this.done = true;
    const validation = device.popErrorScope();
    const oom = device.popErrorScope();
    const maps = readbacks.map((rb) => rb.entry.buffer.mapAsync(MAP_READ, 0, rb.bytes));
    const [v, m, ...mapped] = await Promise.allSettled([validation, oom, ...maps]);
    try {
      if (v.status === 'fulfilled' && v.value) {
        // Arguments are validated before any GPU work, so this is an internal
        // failure (a driver rejecting a kernel, or a bug): the backend moves to wasm.
        const err = /** @type {Error & { gpuValidation?: boolean }} */ (new Error(`${this.where}: WebGPU validation error: ${v.value.message}`));
        err.gpuValidation = true;
        throw err;
      }
      if (m.status === 'fulfilled' && m.value) {
        throw new RangeError(`${this.where}: the GPU ran out of memory (${m.value.message}); ${this.oom}`);
      }
      for (const r of mapped) {
        if (r.status === 'rejected') {
          const err = /** @type {Error & { gpuFailure?: boolean }} */ (new Error(`${this.where}: reading the result back from the GPU failed: ${r.reason && r.reason.message}`));
          err.gpuFailure = true;
          throw err;
        }
      }
      const out = [];
      for (const rb of readbacks) {
        const range = rb.entry.buffer.getMappedRange(0, rb.bytes);
        for (const g of rb.regions) out.push(new Float32Array(range, g.offset, g.count).slice());
      }
      return out;
    } finally {
      readbacks.forEach((rb, i) => {
        if (mapped[i].status === 'fulfilled') rb.entry.buffer.unmap();
      });
      for (const e of this.held) pool.release(e);
      this.held.length = 0;
    }
  }
}
