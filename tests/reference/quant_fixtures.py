#!/usr/bin/python3
"""Writes the GGML block fixtures of tests/native/quant_test.cpp into
tests/golden/quant/, with numpy only (independent of src/kernels/quant.cpp):
  <kind>.bin   W [3, 96] as GGUF rows of blocks (ggml-common.h block_q8_0 /
               block_q4_0: an F16 scale d, then 32 int8 or 16 bytes of nibbles)
  <kind>.f32   its dequantized values, float32 little-endian, as ggml-quants.c
               dequantize_row_q8_0 (d*q) / dequantize_row_q4_0 (d*((q&15)-8),
               d*((q>>4)-8) at +16); each product is exact in float32.
The quants are random bytes (every pattern is a valid block); the scales are
random finite halves with the edge cases set by hand: zero, negative zero, a
subnormal, the smallest normal, the largest finite half (65504) and negatives.
Run: /usr/bin/python3 tests/reference/quant_fixtures.py
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), '..', 'golden', 'quant')
N, K = 3, 96
SPECIAL = [0x0000, 0x8000, 0x0001, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x2e66]


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(3608)
    for kind, qbytes in (('q8_0', 32), ('q4_0', 16)):
        nb = N * K // 32
        scales = rng.uniform(-0.05, 0.05, nb).astype(np.float16).view(np.uint16)
        scales[:len(SPECIAL)] = SPECIAL
        quants = rng.integers(0, 256, (nb, qbytes), dtype=np.uint8)
        raw = bytearray()
        vals = []
        for d_bits, q in zip(scales, quants):
            raw += int(d_bits).to_bytes(2, 'little') + q.tobytes()
            d = np.float32(np.array([d_bits], np.uint16).view(np.float16)[0])
            if kind == 'q8_0':
                v = q.view(np.int8).astype(np.float32) * d
            else:
                lo = (q & 15).astype(np.int32) - 8
                hi = (q >> 4).astype(np.int32) - 8
                v = np.concatenate([lo, hi]).astype(np.float32) * d
            vals.append(v.astype(np.float32))
        open(os.path.join(OUT, kind + '.bin'), 'wb').write(bytes(raw))
        np.concatenate(vals).astype('<f4').tofile(os.path.join(OUT, kind + '.f32'))


if __name__ == '__main__':
    main()
