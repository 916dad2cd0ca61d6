// The data side of <attention-lab-model-view> (web/components/lib/model-data.js):
// every accepted input shape normalises to [layers, H, Lq, Lk], and every file
// kind (.npy, .npz, .safetensors with metadata tokens, JSON) reads the same arrays.
import { readFileSync } from 'node:fs';
import { normalizeAttention, parseAttentionFile, strongest } from '../../web/components/lib/model-data.js';
import { writeNpz, writeSafetensors } from '../../web/lib/io/index.js';

const npy = readFileSync(new URL('../golden/weights/attentions_2x3x6.npy', import.meta.url));
const perLayer = readFileSync(new URL('../golden/weights/attentions_per_layer.safetensors', import.meta.url));
const TOKENS = ['the', 'cat', 'sat', 'on', 'a', 'mat'];

describe('model view data', () => {
  const ref = normalizeAttention(parseAttentionFile(npy).attention);

  test('a [layers,H,L,L] .npy and per-layer [1,H,L,L] safetensors (tokens in metadata) give the same arrays', () => {
    expect([ref.layers, ref.heads, ref.lq, ref.lk]).toEqual([2, 3, 6, 6]);
    const st = parseAttentionFile(perLayer);
    expect(st.tokens).toEqual(TOKENS);
    expect(normalizeAttention(st.attention).data).toEqual(ref.data);
  });

  test('JSON (object with tokens, or a bare nested array) and .npz read the same', () => {
    const nested = [];
    for (let l = 0; l < 2; l++) {
      nested.push([]);
      for (let hh = 0; hh < 3; hh++) {
        nested[l].push([]);
        for (let i = 0; i < 6; i++) nested[l][hh].push(Array.from(ref.data.subarray(((l * 3 + hh) * 6 + i) * 6, ((l * 3 + hh) * 6 + i + 1) * 6)));
      }
    }
    const json = parseAttentionFile(new TextEncoder().encode(JSON.stringify({ attentions: nested, tokens: TOKENS })));
    expect(json.tokens).toEqual(TOKENS);
    expect(normalizeAttention(json.attention).data).toEqual(ref.data);
    expect(normalizeAttention(parseAttentionFile(new TextEncoder().encode(` ${JSON.stringify(nested)}`)).attention).data).toEqual(ref.data);
    const layers = [0, 1].map((l) => ({ data: ref.data.slice(l * 108, (l + 1) * 108), shape: [1, 3, 6, 6] }));
    const npz = parseAttentionFile(writeNpz({ 'layer.10': layers[1], 'layer.2': layers[0] }));
    expect(normalizeAttention(npz.attention).data).toEqual(ref.data); // natural order: layer.2 before layer.10
    const st = parseAttentionFile(writeSafetensors({ a: { data: ref.data, shape: [2, 3, 6, 6] } }));
    expect(normalizeAttention(st.attention).data).toEqual(ref.data);
  });

  test('batched inputs pick a sequence; [H,L,L] and [L,L] are one layer', () => {
    const two = new Float32Array(2 * 108);
    two.set(ref.data.subarray(0, 108), 108); // batch 1 of layer 0
    const picked = normalizeAttention([{ data: two, shape: [2, 3, 6, 6] }], { batch: 1 });
    expect(picked.data).toEqual(ref.data.subarray(0, 108));
    const five = normalizeAttention({ data: two, shape: [1, 2, 3, 6, 6] }, { batch: 1 });
    expect(five.data).toEqual(ref.data.subarray(0, 108));
    expect(normalizeAttention({ data: ref.data.subarray(0, 108), shape: [3, 6, 6] })).toMatchObject({ layers: 1, heads: 3 });
    expect(normalizeAttention([[0.5, 0.5], [1, 0]])).toMatchObject({ layers: 1, heads: 1, lq: 2, lk: 2 });
    expect(strongest(new Float32Array([0.1, 0.7, 0.2, 0.9]), 0, 2, 2)).toEqual({ i: 1, j: 1, value: expect.closeTo(0.9, 6) });
  });

  test('bad inputs say what is wrong', () => {
    expect(() => normalizeAttention({ data: new Float32Array(64), shape: [2, 2, 2, 2, 2, 2] })).toThrow(/must be \[layers, H, Lq, Lk\]/);
    expect(() => normalizeAttention([{ data: new Float32Array(8), shape: [2, 2, 2] }, { data: new Float32Array(4), shape: [1, 2, 2] }])).toThrow(/attention\[1\] has shape \[1,2,2\], but layer 0 has \[2,2,2\]/);
    expect(() => normalizeAttention([{ data: new Float32Array(8), shape: [1, 2, 2, 2] }], { batch: 3 })).toThrow(/batch 3 is out of range/);
    expect(() => normalizeAttention('x')).toThrow(TypeError);
    expect(() => parseAttentionFile(new TextEncoder().encode('{"tokens": []}'))).toThrow(/no "attention"/);
    expect(() => parseAttentionFile(new TextEncoder().encode('{"attention": [1,'))).toThrow(/not valid JSON/);
  });
});
