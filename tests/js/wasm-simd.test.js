// The SIMD build really contains wasm SIMD128 in its kernels, and the scalar
// build none (it is the fallback for engines without SIMD). Uses wabt's
// wasm-objdump (installed by scripts/setup.sh).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/dist');

function opcodeCounts(file) {
  const text = execFileSync('wasm-objdump', ['-d', path.join(dist, file)], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  const counts = {};
  for (const m of text.matchAll(/\|\s*((?:f32x4|i32x4|v128|i8x16|i64x2)\.[a-z_0-9]+)/g)) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
  return counts;
}

test('the SIMD module uses f32x4 arithmetic, splat loads and v128 loads/stores', () => {
  const c = opcodeCounts('attention_lab_simd.wasm');
  expect(c['f32x4.mul']).toBeGreaterThan(20);
  expect(c['f32x4.add']).toBeGreaterThan(20);
  expect(c['v128.load32_splat']).toBeGreaterThan(4);
  expect(c['v128.load']).toBeGreaterThan(10);
  expect(c['v128.store']).toBeGreaterThan(10);
});

test('the scalar module has no SIMD instructions', () => {
  expect(opcodeCounts('attention_lab_scalar.wasm')).toEqual({});
});
