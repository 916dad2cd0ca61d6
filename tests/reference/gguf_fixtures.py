#!/usr/bin/python3
"""Writes tiny GGUF fixtures into tests/golden/gguf/ from the spec
(llama.cpp ggml/docs/gguf.md, ggml-common.h block layouts, ggml-quants.c
quantize_row_*_ref / dequantize_row_*), with numpy only, independent of the JS
reader. Outputs:
  tiny.gguf            v3, F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K tensors + metadata
  tiny-v2.gguf         the same metadata and two tensors as version 2
  tiny.ref.json        header facts and the float64 dequantized values
  bad-*.gguf           one hostile file per refusal
Run: /usr/bin/python3 tests/reference/gguf_fixtures.py
"""
import json, os, struct
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), '..', 'golden', 'gguf')
QK_K = 256
TYPES = {'F32': (0, 1, 4), 'F16': (1, 1, 2), 'Q4_0': (2, 32, 18), 'Q8_0': (8, 32, 34),
         'Q4_K': (12, QK_K, 144), 'Q6_K': (14, QK_K, 210), 'BF16': (30, 1, 2)}
f32 = np.float32


def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b


def kv(key, vt, payload):
    return s(key) + struct.pack('<I', vt) + payload


def half_bits(x):
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def roundf(x):  # C roundf: half away from zero
    return np.sign(x) * np.floor(np.abs(x) + f32(0.5))


def q8_0(x):
    out = bytearray()
    for b in x.reshape(-1, 32).astype(f32):
        amax = np.max(np.abs(b))
        d = f32(amax / f32(127))
        idv = f32(1) / d if d else f32(0)
        out += struct.pack('<H', half_bits(d))
        out += roundf((b * idv).astype(f32)).astype(np.int8).tobytes()
    return bytes(out)


def q4_0(x):
    out = bytearray()
    for b in x.reshape(-1, 32).astype(f32):
        i = int(np.argmax(np.abs(b)))  # first index of the largest |x|, as the C loop keeps
        mx = b[i]
        d = f32(mx / f32(-8))
        idv = f32(1) / d if d else f32(0)
        out += struct.pack('<H', half_bits(d))
        q0 = np.minimum(15, np.trunc((b[:16] * idv).astype(f32) + f32(8.5)).astype(np.int32))
        q1 = np.minimum(15, np.trunc((b[16:] * idv).astype(f32) + f32(8.5)).astype(np.int32))
        out += (q0 | (q1 << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def h2f(bits):
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def deq(typ, raw, n):
    """float64 values of the float32 dequantization (every step rounded to float32)."""
    a = np.frombuffer(raw, dtype=np.uint8)
    if typ == 'F32':
        return np.frombuffer(raw, '<f4').astype(np.float64)
    if typ == 'F16':
        return np.frombuffer(raw, '<f2').astype(np.float64)
    if typ == 'BF16':
        return (np.frombuffer(raw, '<u2').astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    y = []
    if typ == 'Q8_0':
        for b in a.reshape(-1, 34):
            d = f32(h2f(b[0] | (b[1] << 8)))
            y += list((b[2:].view(np.int8).astype(f32) * d).astype(f32))
    elif typ == 'Q4_0':
        for b in a.reshape(-1, 18):
            d = f32(h2f(b[0] | (b[1] << 8)))
            q = b[2:]
            y += list(((q & 15).astype(f32) - 8) * d) + list(((q >> 4).astype(f32) - 8) * d)
    elif typ == 'Q4_K':
        for b in a.reshape(-1, 144):
            d = f32(h2f(int(b[0]) | (int(b[1]) << 8))); dmin = f32(h2f(int(b[2]) | (int(b[3]) << 8)))
            sc = [int(v) for v in b[4:16]]; qs = b[16:]
            def smk(j):
                if j < 4:
                    return sc[j] & 63, sc[j + 4] & 63
                return (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)
            for g in range(4):
                s1, m1 = smk(2 * g); s2, m2 = smk(2 * g + 1)
                d1, mm1, d2, mm2 = f32(d * f32(s1)), f32(dmin * f32(m1)), f32(d * f32(s2)), f32(dmin * f32(m2))
                q = qs[32 * g:32 * g + 32]
                y += list(f32(d1 * (q & 15).astype(f32)) - mm1) + list(f32(d2 * (q >> 4).astype(f32)) - mm2)
    elif typ == 'Q6_K':
        for b in a.reshape(-1, 210):
            ql, qh, sc = b[:128], b[128:192], b[192:208].view(np.int8)
            d = f32(h2f(int(b[208]) | (int(b[209]) << 8)))
            out = np.zeros(256, f32)
            for half in range(2):
                L, H, S = ql[64 * half:], qh[32 * half:], sc[8 * half:]
                for l in range(32):
                    i = l // 16
                    q1 = int((L[l] & 15) | (((H[l] >> 0) & 3) << 4)) - 32
                    q2 = int((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32
                    q3 = int((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)) - 32
                    q4 = int((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32
                    for k, q in enumerate((q1, q2, q3, q4)):
                        out[128 * half + l + 32 * k] = f32(f32(d * f32(S[i + 2 * k])) * f32(q))
            y += list(out)
    return np.array(y, dtype=np.float64)


def gguf(version, kvs, tensors, alignment=32, raw_infos=None):
    """tensors: list of (name, shape_torch_order, type, raw bytes)."""
    head = struct.pack('<4sIQQ', b'GGUF', version, len(tensors), len(kvs)) + b''.join(kvs)
    infos, data, off = b'', b'', 0
    for name, shape, typ, raw in tensors:
        ne = list(reversed(shape))
        infos += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
        infos += struct.pack('<IQ', TYPES[typ][0], off)
        pad = (-len(raw)) % alignment
        data += raw + b'\0' * pad
        off += len(raw) + pad
    if raw_infos is not None:
        infos = raw_infos
    h = head + infos
    return h + b'\0' * ((-len(h)) % alignment) + data


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(36)
    x = rng.standard_normal((4, 64)).astype(f32)
    x[0, 5] = 0  # a zero inside a block
    x[1, :32] = 0  # an all-zero block (d = 0)
    tensors = [
        ('t.f32', [4, 64], 'F32', x.astype('<f4').tobytes()),
        ('t.f16', [4, 64], 'F16', x.astype('<f2').tobytes()),
        ('t.bf16', [4, 64], 'BF16', (x.view(np.uint32) >> 16).astype('<u2').tobytes()),
        ('t.q8_0', [4, 64], 'Q8_0', q8_0(x)),
        ('t.q4_0', [4, 64], 'Q4_0', q4_0(x)),
        # K-quants: random but valid blocks (every byte pattern is a valid block),
        # d/dmin as finite halves, so the dequantizer is checked on all bit paths.
        ('t.q4_k', [2, 256], 'Q4_K', b''.join(
            struct.pack('<HH', half_bits(rng.uniform(0.001, 0.05)), half_bits(rng.uniform(0.001, 0.05)))
            + rng.integers(0, 256, 140, dtype=np.uint8).tobytes() for _ in range(2))),
        ('t.q6_k', [1, 3, 256], 'Q6_K', b''.join(
            rng.integers(0, 256, 208, dtype=np.uint8).tobytes() + struct.pack('<H', half_bits(rng.uniform(0.001, 0.05)))
            for _ in range(3))),
    ]
    kvs = [
        kv('general.architecture', 8, s('llama')),
        kv('general.name', 8, s('tiny')),
        kv('llama.block_count', 4, struct.pack('<I', 2)),
        kv('llama.attention.layer_norm_rms_epsilon', 6, struct.pack('<f', 1e-5)),
        kv('test.u8', 0, struct.pack('<B', 200)), kv('test.i8', 1, struct.pack('<b', -5)),
        kv('test.u16', 2, struct.pack('<H', 60000)), kv('test.i16', 3, struct.pack('<h', -300)),
        kv('test.i32', 5, struct.pack('<i', -70000)), kv('test.bool', 7, struct.pack('<B', 1)),
        kv('test.u64', 10, struct.pack('<Q', 2 ** 40)), kv('test.i64', 11, struct.pack('<q', -2 ** 40)),
        kv('test.f64', 12, struct.pack('<d', 0.1)),
        kv('test.strings', 9, struct.pack('<IQ', 8, 3) + s('a') + s('') + s('中文')),
        kv('test.floats', 9, struct.pack('<IQ', 6, 2) + struct.pack('<ff', 0.5, -2.0)),
        kv('test.nested', 9, struct.pack('<IQ', 9, 1) + struct.pack('<IQ', 5, 2) + struct.pack('<ii', 1, -1)),
    ]
    main_file = gguf(3, kvs, tensors)
    open(os.path.join(OUT, 'tiny.gguf'), 'wb').write(main_file)
    ref = {'version': 3, 'alignment': 32, 'tensors': [], 'metadata': {
        'general.architecture': 'llama', 'general.name': 'tiny', 'llama.block_count': 2,
        'test.u8': 200, 'test.i8': -5, 'test.u16': 60000, 'test.i16': -300, 'test.i32': -70000, 'test.bool': True,
        'test.u64': 2 ** 40, 'test.i64': -2 ** 40, 'test.f64': 0.1, 'test.strings': ['a', '', '中文'],
        'test.floats': [0.5, -2.0], 'test.nested': [[1, -1]]}}
    for name, shape, typ, raw in tensors:
        n = int(np.prod(shape))
        ref['tensors'].append({'name': name, 'ggmlType': typ, 'shape': shape, 'bytes': len(raw), 'values': deq(typ, raw, n).tolist()})
    # writer check: the q8_0/q4_0/f16/f32 bytes the JS writer must reproduce
    ref['source'] = x.astype(np.float64).tolist()
    json.dump(ref, open(os.path.join(OUT, 'tiny.ref.json'), 'w'))
    open(os.path.join(OUT, 'tiny-v2.gguf'), 'wb').write(gguf(2, kvs[:3], tensors[:2]))

    one = [tensors[0]]
    bad = {
        'magic': b'GGUX' + main_file[4:],
        'version1': main_file[:4] + struct.pack('<I', 1) + main_file[8:],
        'string-past-end': struct.pack('<4sIQQ', b'GGUF', 3, 0, 1) + struct.pack('<Q', 10 ** 12) + b'abc',
        'array-past-end': struct.pack('<4sIQQ', b'GGUF', 3, 0, 1) + s('k') + struct.pack('<IIQ', 9, 4, 10 ** 15),
        'ndims': gguf(3, [], one, raw_infos=s('t') + struct.pack('<I', 5) + struct.pack('<5Q', 1, 1, 1, 1, 64) + struct.pack('<IQ', 0, 0)),
        'offset-outside': gguf(3, [], one, raw_infos=s('t') + struct.pack('<IQ', 1, 64) + struct.pack('<IQ', 0, 4096)),
        'overlap': gguf(3, [], [tensors[0], tensors[0]], raw_infos=b''.join(
            s(nm) + struct.pack('<IQQ', 2, 64, 4) + struct.pack('<IQ', 0, o) for nm, o in (('a', 0), ('b', 512)))),
        'alignment': gguf(3, [kv('general.alignment', 4, struct.pack('<I', 24))], []),
        'unknown-type': gguf(3, [], one, raw_infos=s('t') + struct.pack('<IQ', 1, 64) + struct.pack('<IQ', 99, 0)),
        'wrong-type-alignment': gguf(3, [kv('general.alignment', 8, s('32'))], []),
        'wrong-type-arch': gguf(3, [kv('general.architecture', 4, struct.pack('<I', 1))], []),
        'wrong-type-block-count': gguf(3, [kvs[0], kv('llama.block_count', 8, s('2'))], []),
        'truncated-block': gguf(3, [], [('q', [1, 32], 'Q8_0', q8_0(x[0, :32]))])[:-40],
    }
    for k, v in bad.items():
        open(os.path.join(OUT, f'bad-{k}.gguf'), 'wb').write(v)


if __name__ == '__main__':
    main()
