"""Head scores (TransformerLens head_detector.py, "mul" measure) for the committed tiny gpt2 and
llama goldens, float64 numpy, independent of the library. Each score is computed twice, by 0/1
detection masks built as head_detector.py builds them (vectorised) and by plain loops over the
definitions; the two must agree to 1e-12. Writes tests/golden/models/<family>/head_scores.json.

  python3 tests/reference/interp.py
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_models  # noqa: E402

MODELS = os.path.join(HERE, '..', 'golden', 'models')
KEYS = ['previousToken', 'duplicateToken', 'induction', 'firstToken']


def masks(ids):
    """The detection patterns of head_detector.py (get_*_detection_pattern), plus column 0."""
    ids = np.asarray(ids)
    L = len(ids)
    prev = np.zeros((L, L))
    prev[1:, :-1] = np.eye(L - 1)
    dup = (ids[None, :] == ids[:, None]).astype(float)
    np.fill_diagonal(dup, 0)
    dup = np.tril(dup)
    ind = np.zeros((L, L))
    ind[:, 1:] = np.roll(dup, 1, axis=1)[:, 1:]
    ind = np.tril(ind)
    first = np.zeros((L, L))
    first[:, 0] = 1
    return {'previousToken': np.tril(prev), 'duplicateToken': dup, 'induction': ind, 'firstToken': first}


def scores_masks(atts, ids):
    m = masks(ids)
    out = {}
    for k in KEYS:
        out[k] = [[float((a[0, h] * m[k]).sum() / a[0, h].sum()) for h in range(a.shape[1])] for a in atts]
    return out


def scores_loops(atts, ids):
    L = len(ids)
    out = {k: [] for k in KEYS}
    for a in atts:
        rows = {k: [] for k in KEYS}
        for h in range(a.shape[1]):
            A = a[0, h]
            p = d = n = f = 0.0
            for i in range(L):
                f += A[i][0]
                if i >= 1:
                    p += A[i][i - 1]
                for j in range(i):
                    if ids[j] == ids[i]:
                        d += A[i][j]
                for j in range(1, i + 1):
                    if ids[j - 1] == ids[i] and j - 1 < i:
                        n += A[i][j]
            for k, v in zip(KEYS, [p, d, n, f]):
                rows[k].append(v / L)
        for k in KEYS:
            out[k].append(rows[k])
    return out


def xorshift(seed):
    """head-roles.js's seeded draw, reimplemented: uniform integers in [0, n)."""
    M = 0xFFFFFFFF
    s = ((((seed & M) ^ 0x9e3779b9) * 0x85ebca6b) & M) or 0x6d2b79f5

    def draw(n):
        nonlocal s
        s = (s ^ (s << 13)) & M
        s ^= s >> 17
        s = (s ^ (s << 5)) & M
        return int(s / 4294967296 * n)
    return draw


def repeated(cfg, length, seed):
    V = cfg['vocab_size']
    bos = cfg.get('bos_token_id')
    has_bos = isinstance(bos, int) and 0 <= bos < V
    pool = [i for i in range(V) if i != 0 and i != bos]
    if len(pool) < 2:
        pool = list(range(V))
    draw = xorshift(seed)
    r = [pool[draw(len(pool))] for _ in range(length)]
    return ([bos] if has_bos else []) + r + r


def case(folder, ids):
    r = hf_models.forward(folder, ids)
    a, b = scores_masks(r['attentions'], ids), scores_loops(r['attentions'], ids)
    for k in KEYS:
        gap = np.abs(np.array(a[k]) - np.array(b[k])).max()
        assert gap < 1e-12, (folder, k, gap)
    return {'ids': [int(i) for i in ids], **a}


def main():
    for family in ['gpt2', 'llama']:
        folder = os.path.join(MODELS, family)
        with open(os.path.join(folder, 'config.json')) as fh:
            cfg = json.load(fh)
        V = cfg['vocab_size']
        rng = np.random.default_rng(33)
        # ids with repeats (a small alphabet), so duplicate and induction pairs exist
        text = [int(i) for i in rng.integers(1, min(V, 6), size=20)]
        out = {'source': 'tests/reference/interp.py (float64 numpy; TransformerLens head_detector.py, "mul")',
               'cases': [case(folder, text)],
               'repeated': [dict(length=T, seed=s, **case(folder, repeated(cfg, T, s))) for T, s in [(7, 0), (10, 5)]]}
        with open(os.path.join(folder, 'head_scores.json'), 'w') as fh:
            json.dump(out, fh, indent=1)
            fh.write('\n')
        print(family, 'ok')


if __name__ == '__main__':
    main()
