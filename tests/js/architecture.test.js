// The structure the architecture promises (docs/ARCHITECTURE.md): module-level
// classes shared by every lab, and no web/lib file over 400 lines.
import { readdirSync, readFileSync } from 'node:fs';
import { init } from '../../web/node.js';
import { MultiHeadAttention, SelfAttentionLayer, KVCache } from '../../web/lib/lab.js';

const LIB = new URL('../../web/lib/', import.meta.url);
const WEB = new URL('../../web/', import.meta.url);

// Every .js/.mjs file under web/ (the package's code), generated files aside.
function webSources() {
  return readdirSync(WEB, { recursive: true })
    .filter((name) => /\.(m?js|cjs)$/.test(name) && !name.startsWith('dist/') && name !== 'lib/wgsl-sources.js');
}

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

describe('one source for each rule', () => {
  // The dropout hash and the seeded init live in C++ (src/dropout.cpp,
  // src/multi_head_attention.cpp); WGSL keeps the GPU copy of the hash
  // (web/webgpu/include/dropout_hash.wgsl). No JS in web/ copies them.
  test.each([
    ['the dropout hash (pcg multiplier)', /747796405/],
    ['the dropout hash (pcg increment)', /2891336453/],
    ['the seeded init (splitmix64 start)', /0x5eeda77e17|5EEDA77E17/i],
    ['the seeded init (splitmix64 mixer)', /0xbf58476d|BF58476D1CE4E5B9/i],
  ])('%s appears in no JS file under web/', (_, pattern) => {
    const found = webSources().filter((name) => pattern.test(readFileSync(new URL(name, WEB), 'utf8')));
    expect(found).toEqual([]);
  });
});
