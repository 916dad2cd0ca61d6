#!/usr/bin/env python3
"""Writes structured seed inputs for fuzz_attention (one file per seed).

The committed corpus (tests/fuzz/corpus/) was grown from these seeds by
libFuzzer and minimised with -merge=1; rerun this only to start afresh:

    python3 tests/fuzz/make_seeds.py /tmp/seeds
    build/fuzz/fuzz_attention -max_total_time=600 /tmp/work /tmp/seeds
    build/fuzz/fuzz_attention -merge=1 tests/fuzz/corpus /tmp/work

The byte layout mirrors Reader in fuzz_attention.cpp: an op byte, then sizes
(a byte b < 224 means 1 + b % 8), flags, masks and data (fill mode 0: one
signed byte per element, value/64).
"""
import os
import random
import sys

OPS = {"pe": 0, "sdpa": 1, "mha": 2, "layer": 3, "layernorm": 4, "dropout": 5}


def dim(n):
    assert 1 <= n <= 8
    return n - 1


def fill(rng, count, mode=0):
    if mode == 0:
        return [0] + [rng.randrange(256) for _ in range(count)]
    if mode == 1:
        return [1, rng.randrange(256)]
    return [2] + [rng.randrange(256) for _ in range(4 * count)]


def mask(rng, b, h, lq, lk):
    causal = rng.random() < 0.4
    lengths = rng.random() < 0.3
    kind = rng.choice([0, 0, 1, 2, 3])
    out = [int(causal) | (int(lengths) << 1) | (kind << 2)]
    if lengths:
        out += [rng.randrange(lk + 1) for _ in range(b)]
    if kind:
        full = [b, h, lq, lk]
        shape = []
        for d in range(4):
            c = rng.choice([0, 1])
            out.append(c)
            shape.append(1 if c == 0 else full[d])
        count = shape[0] * shape[1] * shape[2] * shape[3]
        out.append(rng.choice([0, 1, 3]))
        out += [rng.randrange(256) for _ in range(count)]
    return out


def sdpa(rng):
    b, h, lq, lk, d, dv = (rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 8),
                           rng.randint(1, 8), rng.randint(1, 8), rng.randint(1, 8))
    flags = rng.randrange(4)
    out = [OPS["sdpa"]] + [dim(x) for x in (b, h, lq, lk, d, dv)] + [flags]
    if flags & 2:
        out.append(rng.randrange(200))
    out += mask(rng, b, h, lq, lk)
    for n in (b * h * lq * d, b * h * lk * d, b * h * lk * dv):
        out += fill(rng, n)
    return out


def mha_config(rng, layer=False):
    h = rng.randint(1, 4)
    mult = rng.randint(1, 4)
    sel = rng.choice([1, 2, 3]) | (0 if layer else rng.choice([0, 4, 8, 12])) | rng.choice([0, 16])
    out = [sel, dim(h), mult - 1]
    e = h * mult
    kd = vd = e
    if sel & 4:
        kd = rng.randint(1, 8)
        out.append(dim(kd))
    if sel & 8:
        vd = rng.randint(1, 8)
        out.append(dim(vd))
    out += [rng.randrange(256) for _ in range(4)]  # seed
    return out, e, h, kd, vd


def weights_ops(rng, e, kd, vd, bias):
    rounds = rng.randrange(3)
    out = [rounds]
    sizes = [e * e, e, kd * e, e, vd * e, e, e * e, e]
    for _ in range(rounds):
        wid = rng.randrange(8)
        sel = wid | 32 | rng.choice([0, 16])
        out.append(sel)
        if wid % 2 == 1 and not bias:
            continue
        out += fill(rng, sizes[wid])
    return out


def mha(rng):
    cfg, e, h, kd, vd = mha_config(rng)
    bias = (cfg[0] & 16) == 0
    out = [OPS["mha"]] + cfg + weights_ops(rng, e, kd, vd, bias)
    calls = rng.randint(1, 2)
    out.append(calls - 1)
    for _ in range(calls):
        b, lq = rng.randint(1, 3), rng.randint(1, 6)
        same_len = rng.random() < 0.6
        lk = lq if same_len else rng.randint(1, 6)
        flags = int(same_len) | (rng.randrange(8) << 1)
        out += [dim(b), dim(lq), flags]
        if not same_len:
            out.append(dim(lk))
        out += mask(rng, b, h, lq, lk)
        same = (flags & 8) and lq == lk and kd == e and vd == e
        out += fill(rng, b * lq * e)
        if not same:
            out += fill(rng, b * lk * kd)
            out += fill(rng, b * lk * vd)
    return out


def layer(rng):
    cfg, e, h, _, _ = mha_config(rng, layer=True)
    bias = (cfg[0] & 16) == 0
    out = [OPS["layer"]] + cfg + [rng.randrange(4), rng.choice([0, 1, 7])]  # dropout, eps
    out += weights_ops(rng, e, e, e, bias)
    out.append(0)  # no SetNorm
    b, l = rng.randint(1, 3), rng.randint(1, 6)
    out += [dim(b), dim(l), rng.randrange(8)] + [rng.randrange(256) for _ in range(4)]
    out += mask(rng, b, h, l, l)
    out += fill(rng, b * l * e)
    return out


def pe(rng):
    return [OPS["pe"], dim(rng.randint(1, 8)), dim(rng.randint(1, 8)), rng.randrange(128)]


def layernorm(rng):
    rows, d = rng.randint(1, 8), rng.randint(1, 8)
    flags = rng.randrange(16)
    out = [OPS["layernorm"], dim(rows), dim(d), flags, rng.choice([0, 1, 2])]
    out += fill(rng, rows * d)
    if flags & 1:
        out += fill(rng, rows * d)
    if flags & 2:
        out += fill(rng, d)
    if flags & 4:
        out += fill(rng, d)
    return out


def dropout(rng):
    n = rng.randint(1, 8)
    return [OPS["dropout"], dim(n), rng.randrange(5)] + [rng.randrange(256) for _ in range(4)] + fill(rng, n - 1)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "seeds"
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(20261129)
    makers = {"pe": pe, "sdpa": sdpa, "mha": mha, "layer": layer, "layernorm": layernorm, "dropout": dropout}
    counts = {"pe": 4, "sdpa": 24, "mha": 24, "layer": 16, "layernorm": 8, "dropout": 4}
    for name, maker in makers.items():
        for i in range(counts[name]):
            with open(os.path.join(out_dir, f"seed-{name}-{i:02d}"), "wb") as f:
                f.write(bytes(maker(rng)))
    print(f"wrote {sum(counts.values())} seeds to {out_dir}")


if __name__ == "__main__":
    main()
