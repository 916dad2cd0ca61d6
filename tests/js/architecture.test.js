// The structure the architecture promises (docs/ARCHITECTURE.md): module-level
// classes shared by every lab, and no web/lib file over 400 lines.
import { readdirSync, readFileSync } from 'node:fs';
import { init } from '../../web/node.js';
import { MultiHeadAttention, SelfAttentionLayer, KVCache } from '../../web/lib/lab.js';

const LIB = new URL('../../web/lib/', import.meta.url);

describe('module-level classes', () => {
  let a;
  let b;
  beforeAll(async () => {
    a = await init({ backend: 'wasm' });
    b = await init({ backend: 'wasm-scalar' });
  });

  test('instanceof holds across labs and backends', () => {
    const m1 = a.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const m2 = b.multiHeadAttention({ embedDim: 8, numHeads: 2 });
    const l1 = a.selfAttentionLayer({ embedDim: 8, numHeads: 2 });
    const c2 = m2.createKVCache({ maxLength: 4 });
    expect(m1).toBeInstanceOf(MultiHeadAttention);
    expect(m2).toBeInstanceOf(m1.constructor);
    expect(l1).toBeInstanceOf(SelfAttentionLayer);
    expect(l1).not.toBeInstanceOf(MultiHeadAttention);
    expect(c2).toBeInstanceOf(KVCache);
    // A cache of another lab is a KVCache, but not this layer's.
    expect(() => m1.forwardSync([[0, 0, 0, 0, 0, 0, 0, 0]], undefined, undefined, { kvCache: c2 }))
      .toThrow(/kvCache belongs to another multiHeadAttention/);
    for (const o of [m1, m2, l1, c2]) o.dispose();
  });
});

describe('web/lib', () => {
  test('no file over 400 lines (wgsl-sources.js is generated)', () => {
    const long = [];
    for (const name of readdirSync(LIB, { recursive: true })) {
      if (name === 'wgsl-sources.js' || !/\.(js|mjs|cjs|ts)$/.test(name)) continue;
      const lines = readFileSync(new URL(name, LIB), 'utf8').split('\n').length;
      if (lines > 401) long.push(`${name}: ${lines} lines`);
    }
    expect(long).toEqual([]);
  });
});
