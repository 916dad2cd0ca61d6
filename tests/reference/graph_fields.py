#!/usr/bin/env python3
"""Float64 numpy reference of the block graph's config fields (issue 32).

Writes tests/golden/graph-fields.json: for a few lab.transformer configs that
set headDim, qkNorm, attnScale, attnSoftcap, finalSoftcap, slidingWindow,
layerKinds, ropeLocalTheta, rotaryDim, parallelResidual, sandwichNorm,
embedScale and the GeGLU activations, and (issue 34, ModernBERT's
modeling_modernbert.py) the bidirectional window |i - j| < slidingWindow,
normBias, firstNorm1 and gateBias, seeded weights under the parameter
names of src/train/train.h, token ids and the logits of this reference.
tests/js/graph-fields.test.js loads the weights into lab.transformer and
compares its logits.

Written from the documented semantics (/work/notes/graph-fields.md, the
transformers modeling files they come from: Gemma 2/3, GPT-NeoX, Mistral,
Qwen3), independent of src/ and web/: nothing of the library is imported.

    /usr/bin/python3 tests/reference/graph_fields.py   # rewrites the golden file
"""
import json
import math
import os

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), '..', 'golden', 'graph-fields.json')

_erf = np.vectorize(math.erf)


def gelu(x):  # exact (erf)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):  # gelu_pytorch_tanh / gelu_new
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, theta, r):
    """rotate_half RoPE (transformers' apply_rotary_pos_emb) on the first r dims of x [.., L, D]."""
    inv = 1.0 / theta ** (np.arange(0, r, 2, dtype=np.float64) / r)
    ang = pos[:, None] * inv[None, :]  # [L, r/2]
    cos = np.concatenate([np.cos(ang)] * 2, -1)
    sin = np.concatenate([np.sin(ang)] * 2, -1)
    xr, xp = x[..., :r], x[..., r:]
    half = r // 2
    rot = np.concatenate([-xr[..., half:], xr[..., :half]], -1)
    return np.concatenate([xr * cos + rot * sin, xp], -1)


def forward(c, w, tokens):
    E, H, N = c['embedDim'], c['numHeads'], c['numLayers']
    D = c.get('headDim') or E // H
    Hkv = H  # lab.transformer has no numKvHeads
    eps = 1e-5
    L = len(tokens)
    pos = np.arange(L, dtype=np.float64)
    x = w['embed.weight'][tokens] * c.get('embedScale', 1.0)
    if c['positional'] == 'learned':
        x = x + w['pos.weight'][:L]
    window = c.get('slidingWindow', 0)
    kinds = c.get('layerKinds', '') or ('l' * N if window > 0 else 'g' * N)
    R = c.get('rotaryDim') or D
    scale = c.get('attnScale') or 1.0 / math.sqrt(D)
    cap = c.get('attnSoftcap', 0)
    i = np.arange(L)[:, None]
    j = np.arange(L)[None, :]

    def norm(v, name):  # normBias false: no bias
        return layer_norm(v, w[name + '.weight'], w.get(name + '.bias', 0.0), eps)

    def attn(v, l):
        p = f'blocks.{l}.attn.'
        q = (v @ w[p + 'wq'].T + w[p + 'bq']).reshape(L, H, D).transpose(1, 0, 2)
        k = (v @ w[p + 'wk'].T + w[p + 'bk']).reshape(L, Hkv, D).transpose(1, 0, 2)
        vv = (v @ w[p + 'wv'].T + w[p + 'bv']).reshape(L, Hkv, D).transpose(1, 0, 2)
        if c.get('qkNorm'):
            q = rms_norm(q, w[p + 'q_norm.weight'], eps)
            k = rms_norm(k, w[p + 'k_norm.weight'], eps)
        if c['positional'] == 'rope':
            theta = c.get('ropeTheta', 10000.0)
            if kinds[l] == 'l' and c.get('ropeLocalTheta'):
                theta = c['ropeLocalTheta']
            q, k = rope(q, pos, theta, R), rope(k, pos, theta, R)
        s = q @ k.transpose(0, 2, 1) * scale
        if cap > 0:
            s = cap * np.tanh(s / cap)
        causal = c.get('causal', False)
        seen = j <= i if causal else np.ones((L, L), dtype=bool)
        if kinds[l] == 'l':  # causal: i - W < j <= i; bidirectional: |i - j| < W
            seen = seen & ((j > i - window) if causal else (np.abs(i - j) < window))
        s = np.where(seen[None], s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ vv).transpose(1, 0, 2).reshape(L, H * D)
        return ctx @ w[p + 'wo'].T + w[p + 'bo']

    def mlp(v, l):
        p = f'blocks.{l}.ffn.'
        up = v @ w[p + 'w1'].T + w[p + 'b1']
        act = c.get('activation', 'gelu')
        if act in ('geglu', 'geglu_tanh'):
            gate = v @ w[p + 'wg'].T + w.get(p + 'bg', 0.0)
            g = (gelu(gate) if act == 'geglu' else gelu_tanh(gate)) * up
        else:
            g = gelu(up) if act == 'gelu' else gelu_tanh(up)
        return g @ w[p + 'w2'].T + w[p + 'b2']

    for l in range(N):
        b = f'blocks.{l}.'
        if not c.get('prenorm'):
            h = norm(x + attn(x, l), b + 'norm1')
            x = norm(h + mlp(h, l), b + 'norm2')
        elif c.get('parallelResidual'):
            x = x + attn(norm(x, b + 'norm1'), l) + mlp(norm(x, b + 'norm2'), l)
        elif c.get('sandwichNorm'):
            h = x + norm(attn(norm(x, b + 'norm1'), l), b + 'post_attn_norm')
            x = h + norm(mlp(norm(h, b + 'norm2'), l), b + 'post_ffn_norm')
        else:
            # firstNorm1 false: block 0 attends to x itself
            h = x + attn(x if l == 0 and c.get('firstNorm1', True) is False else norm(x, b + 'norm1'), l)
            x = h + mlp(norm(h, b + 'norm2'), l)
    if c.get('prenorm'):
        x = norm(x, 'final_norm')
    head = w['embed.weight'] if c.get('tieEmbeddings') else w['head.weight']
    z = x @ head.T + w['head.bias']
    fc = c.get('finalSoftcap', 0)
    if fc > 0:
        z = fc * np.tanh(z / fc)
    return z


def param_shapes(c):
    """The parameter names and shapes of src/train/train.h for a lab.transformer config (LayerNorm, all biases)."""
    E, H, N, F, V = c['embedDim'], c['numHeads'], c['numLayers'], c['ffnDim'], c['vocabSize']
    D = c.get('headDim') or E // H
    gated = c.get('activation') in ('geglu', 'geglu_tanh')
    s = {'embed.weight': (V, E)}
    if c['positional'] == 'learned':
        s['pos.weight'] = (c['maxLength'], E)
    for l in range(N):
        b = f'blocks.{l}.'
        for n, shape in (('wq', (H * D, E)), ('bq', (H * D,)), ('wk', (H * D, E)), ('bk', (H * D,)),
                         ('wv', (H * D, E)), ('bv', (H * D,)), ('wo', (E, H * D)), ('bo', (E,))):
            s[b + 'attn.' + n] = shape
        s[b + 'ffn.w1'], s[b + 'ffn.b1'], s[b + 'ffn.w2'], s[b + 'ffn.b2'] = (F, E), (F,), (E, F), (E,)
        if gated:
            s[b + 'ffn.wg'] = (F, E)
        if gated and c.get('gateBias'):
            s[b + 'ffn.bg'] = (F,)
        names = ['norm1', 'norm2'] + (['post_attn_norm', 'post_ffn_norm'] if c.get('sandwichNorm') else [])
        if l == 0 and c.get('firstNorm1', True) is False:
            names.remove('norm1')
        for n in names:
            s[b + n + '.weight'] = (E,)
            if c.get('normBias', True):
                s[b + n + '.bias'] = (E,)
        if c.get('qkNorm'):
            s[b + 'attn.q_norm.weight'], s[b + 'attn.k_norm.weight'] = (D,), (D,)
    if c.get('prenorm'):
        s['final_norm.weight'] = (E,)
        if c.get('normBias', True):
            s['final_norm.bias'] = (E,)
    if not c.get('tieEmbeddings'):
        s['head.weight'] = (V, E)
    s['head.bias'] = (V,)
    return s


CONFIGS = [
    ('gemma-like: sandwich norms, qkNorm, headDim, local/global layers, two RoPE bases, partial rotary, '
     'both softcaps, attnScale, embedScale, geglu_tanh, tied head', {
         'vocabSize': 11, 'maxLength': 10, 'embedDim': 8, 'numHeads': 2, 'numLayers': 3, 'ffnDim': 12,
         'causal': True, 'positional': 'rope', 'prenorm': True, 'activation': 'geglu_tanh', 'tieEmbeddings': True,
         'headDim': 6, 'qkNorm': True, 'attnScale': 0.3, 'attnSoftcap': 1.5, 'finalSoftcap': 3.0,
         'slidingWindow': 3, 'layerKinds': 'lgl', 'ropeLocalTheta': 100.0, 'rotaryDim': 4, 'sandwichNorm': True,
         'embedScale': 2.5}),
    ('neox-like: parallel residual, learned positions after embedScale, geglu, attnScale 1, headDim with '
     'numHeads not dividing embedDim', {
         'vocabSize': 13, 'maxLength': 9, 'embedDim': 10, 'numHeads': 3, 'numLayers': 2, 'ffnDim': 14,
         'causal': True, 'positional': 'learned', 'prenorm': True, 'activation': 'geglu',
         'headDim': 4, 'attnScale': 1.0, 'parallelResidual': True, 'embedScale': 1.7}),
    ('mistral-like window on a post-norm block: every layer local, qkNorm, RoPE on 2 of 4 dims', {
         'vocabSize': 9, 'maxLength': 9, 'embedDim': 8, 'numHeads': 2, 'numLayers': 2, 'ffnDim': 10,
         'causal': True, 'positional': 'rope', 'slidingWindow': 2, 'qkNorm': True, 'rotaryDim': 2,
         'finalSoftcap': 2.0}),
    ('modernbert-like: bidirectional, a global layer then local ones whose window |i - j| < 2 is shorter than the '
     'text, two RoPE bases, block 0 without norm1, LayerNorms without bias, geglu with the gate bias', {
         'vocabSize': 10, 'maxLength': 9, 'embedDim': 8, 'numHeads': 2, 'numLayers': 3, 'ffnDim': 6,
         'causal': False, 'positional': 'rope', 'prenorm': True, 'activation': 'geglu', 'tieEmbeddings': True,
         'slidingWindow': 2, 'layerKinds': 'gll', 'ropeLocalTheta': 100.0,
         'firstNorm1': False, 'normBias': False, 'gateBias': True}),
]


def main():
    rng = np.random.default_rng(32)
    cases = []
    for name, c in CONFIGS:
        weights = {}
        for n, shape in param_shapes(c).items():
            if n.endswith('norm.weight') or 'norm1.weight' in n or 'norm2.weight' in n:
                a = 1.0 + 0.2 * rng.standard_normal(shape)
            else:
                a = 0.5 * rng.standard_normal(shape)
            weights[n] = np.asarray(a, dtype=np.float32).astype(np.float64)  # what float32 weights hold
        L = c['maxLength'] - 1
        tokens = rng.integers(0, c['vocabSize'], L)
        logits = forward(c, weights, tokens)
        cases.append({
            'name': name, 'config': c, 'tokens': tokens.tolist(),
            'weights': {n: {'shape': list(a.shape), 'data': a.ravel().tolist()} for n, a in weights.items()},
            'logits': {'shape': list(logits.shape), 'data': [round(float(v), 12) for v in logits.ravel()]},
        })
    with open(OUT, 'w') as f:
        json.dump({'format': 'attention-lab-graph-fields', 'generator': 'tests/reference/graph_fields.py',
                   'cases': cases}, f)
        f.write('\n')
    print(f'wrote {os.path.relpath(OUT)}: {len(cases)} cases')


if __name__ == '__main__':
    main()
