#!/usr/bin/python3
"""Float64 numpy references and tiny golden checkpoints of the encoder-decoder
(translation) families of issue 34 item 2: marian (opus-mt), bart and t5
(the original relu T5 with its tied, rescaled head; v1.1 / Flan's gated-gelu
with an untied lm_head).

    /usr/bin/python3 tests/reference/hf_encdec.py generate

writes tests/golden/models/{marian,bart,t5,t5-v1_1}/{config.json, tokenizer.json,
model.safetensors (F32), model-f16.safetensors (the same values in F16),
expected.json, tokenizer-samples.json}. numpy only; nothing here reads web/,
src/ or bindings/ (helpers of tests/reference/hf_models.py: safetensors, the
16-bit-exact draws, the activations). Every number is computed twice, in two
independent formulations, and the generator asserts that they agree to 1e-10:

  * batched: matrices over whole sequences; the decoder's causal mask as a
    matrix; the greedy continuation (4 tokens, or up to the eos, which
    generate yields and stops at) by running the whole decoder again on the
    growing sequence;
  * cached: one row and one head at a time with explicit dot products; the
    decoder one position at a time with a key/value cache of its
    self-attention and the cross-attention's keys and values of the encoder
    output projected once per layer (as transformers' EncoderDecoderCache);
    the greedy continuation from those steps.

Semantics (transformers v4.x, eval mode, eager attention):

  marian  modeling_marian.py: embed_tokens(ids) * embed_scale (sqrt(d_model)
          when scale_embedding) + MarianSinusoidalPositionalEmbedding (sin of
          pos / 10000^(2(j//2)/dim) for the even j in the first half, cos for
          the odd j in the second; a float32 table), positions from 0 (from
          past_key_values_length when decoding); post-LN layers: x =
          self_attn_layer_norm(x + self_attn(x)); decoder: x =
          encoder_attn_layer_norm(x + encoder_attn(x, enc)); x =
          final_layer_norm(x + fc2(act(fc1(x)))), act = activation_function;
          q scaled by head_dim^-0.5; LayerNorm eps 1e-5; no final norm, no
          embedding norm; shared embeddings; logits = lm_head(x) +
          final_logits_bias with lm_head tied to the shared embedding;
          decoding starts from decoder_start_token_id (the pad id).
  bart    modeling_bart.py: BartLearnedPositionalEmbedding (rows at position
          + 2), layernorm_embedding after the sum (both stacks), the same
          post-LN layers with encoder_attn, scale_embedding (sqrt(d_model)
          when true), activation_function, final_logits_bias, shared
          embeddings, decoder_start_token_id.
  t5      modeling_t5.py: x0 = shared(ids) (no scale, no positions); pre-norm
          T5LayerNorm (x / sqrt(mean(x^2) + eps) * w, no mean, no bias);
          T5Attention without the 1/sqrt(d) scaling, inner dim num_heads *
          d_kv, no biases; the relative position bias (block 0's
          relative_attention_bias [num_buckets, H], _relative_position_bucket
          of key - query: bidirectional in the encoder, causal in the
          decoder) added to every self-attention layer's scores, none in
          EncDecAttention; layer.0 SelfAttention, (decoder) layer.1
          EncDecAttention, the last layer DenseReluDense: wo(act(wi(x))) or,
          gated, wo(act(wi_0(x)) * wi_1(x)) (feed_forward_proj "gated-gelu" is
          gelu_new); final_layer_norm after each stack; logits =
          lm_head(x * d_model^-0.5) when tie_word_embeddings (lm_head =
          shared), lm_head(x) otherwise; decoder_start_token_id (the pad id).
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import (OUT, act, check_tokenizers, exact, layer_norm, read_safetensors,  # noqa: E402
                       round_floats, softmax, write_json, write_safetensors)

TOL = 1e-10
TF_VERSION = '4.46.3'
FOLDERS = ('marian', 'bart', 't5', 't5-v1_1')
GREEDY = 4
rng = np.random.default_rng(20261204)


# ---- reading a folder ----------------------------------------------------------------

def load(folder, weights=None):
    with open(os.path.join(folder, 'config.json')) as f:
        cfg = json.load(f)
    t = read_safetensors(os.path.join(folder, weights or 'model.safetensors'))
    return cfg, {k: np.asarray(v, dtype=np.float64) for k, v in t.items()}


def marian_sinusoid(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight, kept as the float32 table it is."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = np.empty((n_pos, dim))
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, 0:sentinel] = np.sin(position_enc[:, 0::2])
    out[:, sentinel:] = np.cos(position_enc[:, 1::2])
    return out.astype(np.float32).astype(np.float64)


def spec(cfg, t):
    """The family's config keys and tensor names, read as transformers does."""
    mt = cfg['model_type']
    E = cfg['d_model']
    s = {'E': E, 'He': cfg['encoder_attention_heads'], 'Hd': cfg['decoder_attention_heads'],
         'Ne': cfg['encoder_layers'], 'Nd': cfg['decoder_layers'], 'eps': 1e-5,
         'act': act(cfg['activation_function']), 'embed': t['model.shared.weight'],
         'scale': math.sqrt(E) if cfg.get('scale_embedding', False) else 1.0,
         'bias': t['final_logits_bias'][0], 'start': cfg['decoder_start_token_id'], 'eos': cfg['eos_token_id']}
    if mt == 'marian':
        table = marian_sinusoid(cfg['max_position_embeddings'], E)
        s.update(pos_enc=table, pos_dec=table, offset=0, ln_enc=None, ln_dec=None)
    elif mt == 'bart':
        s.update(pos_enc=t['model.encoder.embed_positions.weight'], pos_dec=t['model.decoder.embed_positions.weight'],
                 offset=2, ln_enc='model.encoder.layernorm_embedding', ln_dec='model.decoder.layernorm_embedding')
    else:
        raise NotImplementedError(mt)
    s['enc'] = lambda i: f'model.encoder.layers.{i}.'
    s['dec'] = lambda i: f'model.decoder.layers.{i}.'
    return s


# ---- formulation 1: batched ------------------------------------------------------------

def lin(t, x, n):
    return x @ t[n + '.weight'].T + t[n + '.bias']


def ln(t, x, n, eps):
    return layer_norm(x, t[n + '.weight'], t[n + '.bias'], eps)


def mha(t, pre, xq, xk, H, causal):
    E = xq.shape[1]
    D = E // H
    q = (lin(t, xq, pre + 'q_proj') * D ** -0.5).reshape(len(xq), H, D).transpose(1, 0, 2)
    k = lin(t, xk, pre + 'k_proj').reshape(len(xk), H, D).transpose(1, 0, 2)
    v = lin(t, xk, pre + 'v_proj').reshape(len(xk), H, D).transpose(1, 0, 2)
    sc = q @ k.transpose(0, 2, 1)
    if causal:
        sc = np.where(np.tril(np.ones(sc.shape[1:], dtype=bool)), sc, -np.inf)
    p = softmax(sc)
    return lin(t, (p @ v).transpose(1, 0, 2).reshape(len(xq), E), pre + 'out_proj'), p


def embed(s, t, ids, which):
    pos = s['pos_' + which][np.arange(len(ids)) + s['offset']]
    x = s['embed'][ids] * s['scale'] + pos
    norm = s['ln_' + which]
    return x if norm is None else ln(t, x, norm, s['eps'])


def encode_batched(s, t, ids):
    x = embed(s, t, ids, 'enc')
    atts = []
    for i in range(s['Ne']):
        p = s['enc'](i)
        a, w = mha(t, p + 'self_attn.', x, x, s['He'], False)
        atts.append(w)
        h = ln(t, x + a, p + 'self_attn_layer_norm', s['eps'])
        x = ln(t, h + lin(t, s['act'](lin(t, h, p + 'fc1')), p + 'fc2'), p + 'final_layer_norm', s['eps'])
    return x, atts


def decode_batched(s, t, mem, dids):
    x = embed(s, t, dids, 'dec')
    selfs, crosses = [], []
    for i in range(s['Nd']):
        p = s['dec'](i)
        a, w = mha(t, p + 'self_attn.', x, x, s['Hd'], True)
        h = ln(t, x + a, p + 'self_attn_layer_norm', s['eps'])
        c, wc = mha(t, p + 'encoder_attn.', h, mem, s['Hd'], False)
        h = ln(t, h + c, p + 'encoder_attn_layer_norm', s['eps'])
        x = ln(t, h + lin(t, s['act'](lin(t, h, p + 'fc1')), p + 'fc2'), p + 'final_layer_norm', s['eps'])
        selfs.append(w)
        crosses.append(wc)
    return x @ s['embed'].T + s['bias'], selfs, crosses


def forward_batched(cfg, t, ids, dids):
    s = spec(cfg, t)
    mem, enc_atts = encode_batched(s, t, np.array(ids))
    logits, selfs, crosses = decode_batched(s, t, mem, np.array(dids))
    seq = [s['start']]
    while len(seq) <= GREEDY and seq[-1] != s['eos'] or len(seq) == 1:  # generate's stop: the eos, yielded
        lg, _, _ = decode_batched(s, t, mem, np.array(seq))  # the whole decoder again on the growing sequence
        seq.append(int(np.argmax(lg[-1])))
    return {'logits': logits, 'encoder_attentions': enc_atts, 'decoder_attentions': selfs,
            'cross_attentions': crosses, 'encoder_hidden': mem, 'greedy': seq[1:]}


# ---- formulation 2: one row and one head at a time, with caches ---------------------------

def lin_row(t, row, n):
    w, b = t[n + '.weight'], t[n + '.bias']
    return np.array([float(np.dot(w[o], row)) + b[o] for o in range(w.shape[0])])


def ln_row(t, row, n, eps):
    m = sum(row) / len(row)
    var = sum((v - m) * (v - m) for v in row) / len(row)
    return np.array([(v - m) / math.sqrt(var + eps) for v in row]) * t[n + '.weight'] + t[n + '.bias']


def attend_row(q, ks, vs, H):
    """One query row against key/value rows: the context row and the weights [H, len(ks)]."""
    E = len(q)
    D = E // H
    ctx = np.zeros(E)
    w = np.zeros((H, len(ks)))
    for h in range(H):
        sl = slice(h * D, (h + 1) * D)
        sc = [float(np.dot(q[sl], k[sl])) / math.sqrt(D) for k in ks]
        m = max(sc)
        ex = [math.exp(c - m) for c in sc]
        z = sum(ex)
        for j, v in enumerate(vs):
            w[h, j] = ex[j] / z
            ctx[sl] += w[h, j] * v[sl]
    return ctx, w


def embed_row(s, t, tok, pos, which):
    x = s['embed'][tok] * s['scale'] + s['pos_' + which][pos + s['offset']]
    norm = s['ln_' + which]
    return x if norm is None else ln_row(t, x, norm, s['eps'])


def encode_cached(s, t, ids):
    rows = [embed_row(s, t, tok, i, 'enc') for i, tok in enumerate(ids)]
    atts = []
    for li in range(s['Ne']):
        p = s['enc'](li)
        ks = [lin_row(t, r, p + 'self_attn.k_proj') for r in rows]
        vs = [lin_row(t, r, p + 'self_attn.v_proj') for r in rows]
        new, w = [], np.zeros((s['He'], len(rows), len(rows)))
        for i, r in enumerate(rows):
            ctx, w[:, i, :] = attend_row(lin_row(t, r, p + 'self_attn.q_proj'), ks, vs, s['He'])
            h = ln_row(t, r + lin_row(t, ctx, p + 'self_attn.out_proj'), p + 'self_attn_layer_norm', s['eps'])
            f = lin_row(t, s['act'](lin_row(t, h, p + 'fc1')), p + 'fc2')
            new.append(ln_row(t, h + f, p + 'final_layer_norm', s['eps']))
        rows = new
        atts.append(w)
    return rows, atts


class Decoder:
    """The decoder one position at a time: self-attention K/V cached per layer,
    the cross K/V of the memory projected once per layer."""

    def __init__(self, s, t, mem):
        self.s, self.t = s, t
        self.cache = [([], []) for _ in range(s['Nd'])]
        self.cross = []
        for li in range(s['Nd']):
            p = s['dec'](li) + 'encoder_attn.'
            self.cross.append(([lin_row(t, m, p + 'k_proj') for m in mem], [lin_row(t, m, p + 'v_proj') for m in mem]))

    def step(self, tok):
        s, t = self.s, self.t
        pos = len(self.cache[0][0])
        x = embed_row(s, t, tok, pos, 'dec')
        ws, wcs = [], []
        for li in range(s['Nd']):
            p = s['dec'](li)
            ks, vs = self.cache[li]
            ks.append(lin_row(t, x, p + 'self_attn.k_proj'))
            vs.append(lin_row(t, x, p + 'self_attn.v_proj'))
            ctx, w = attend_row(lin_row(t, x, p + 'self_attn.q_proj'), ks, vs, s['Hd'])
            h = ln_row(t, x + lin_row(t, ctx, p + 'self_attn.out_proj'), p + 'self_attn_layer_norm', s['eps'])
            ctx, wc = attend_row(lin_row(t, h, p + 'encoder_attn.q_proj'), *self.cross[li], s['Hd'])
            h = ln_row(t, h + lin_row(t, ctx, p + 'encoder_attn.out_proj'), p + 'encoder_attn_layer_norm', s['eps'])
            f = lin_row(t, s['act'](lin_row(t, h, p + 'fc1')), p + 'fc2')
            x = ln_row(t, h + f, p + 'final_layer_norm', s['eps'])
            ws.append(w)
            wcs.append(wc)
        logits = np.array([float(np.dot(s['embed'][v], x)) + s['bias'][v] for v in range(len(s['bias']))])
        return logits, ws, wcs


def forward_cached(cfg, t, ids, dids):
    s = spec(cfg, t)
    mem, enc_atts = encode_cached(s, t, ids)
    return run_cached(s, Decoder(s, t, mem), lambda: Decoder(s, t, mem), mem, enc_atts, ids, dids, s['Hd'])


def run_cached(s, dec, fresh, mem, enc_atts, ids, dids, H):
    """The decoder ids one step at a time, then the greedy continuation on a fresh decoder."""
    Ld, Le = len(dids), len(ids)
    logits = []
    selfs = [np.zeros((H, Ld, Ld)) for _ in range(s['Nd'])]
    crosses = [np.zeros((H, Ld, Le)) for _ in range(s['Nd'])]
    for i, tok in enumerate(dids):
        lg, ws, wcs = dec.step(tok)
        logits.append(lg)
        for li in range(s['Nd']):
            selfs[li][:, i, :i + 1] = ws[li]  # the causal zeros beyond
            crosses[li][:, i, :] = wcs[li]
    g = fresh()
    seq = [s['start']]
    while len(seq) <= GREEDY and seq[-1] != s['eos'] or len(seq) == 1:
        lg, _, _ = g.step(seq[-1])
        top = np.sort(lg)[-2:]
        assert top[1] - top[0] > 1e-3, 'a near tie in the greedy continuation: pick other weights'
        seq.append(int(np.argmax(lg)))
    return {'logits': np.array(logits), 'encoder_attentions': enc_atts, 'decoder_attentions': selfs,
            'cross_attentions': crosses, 'encoder_hidden': np.array(mem), 'greedy': seq[1:]}


def forward(folder, ids, dids, weights=None):
    cfg, t = load(folder, weights)
    t5 = cfg['model_type'] == 't5'
    a = (t5_batched if t5 else forward_batched)(cfg, t, ids, dids)
    b = (t5_cached if t5 else forward_cached)(cfg, t, ids, dids)
    for k in ('logits', 'encoder_hidden'):
        err = np.max(np.abs(a[k] - b[k]))
        assert err < TOL, (k, err)
    for k in ('encoder_attentions', 'decoder_attentions', 'cross_attentions'):
        for x, y in zip(a[k], b[k]):
            assert np.max(np.abs(x - y)) < TOL, k
    assert a['greedy'] == b['greedy'], (a['greedy'], b['greedy'])
    return a


# ---- t5 ----------------------------------------------------------------------------------

def t5_spec(cfg, t):
    proj = cfg.get('feed_forward_proj', 'relu')
    parts = proj.split('-')
    gated = parts[0] == 'gated'
    name = 'gelu_new' if proj == 'gated-gelu' else parts[-1]
    tied = cfg.get('tie_word_embeddings', True)
    return {'E': cfg['d_model'], 'H': cfg['num_heads'], 'D': cfg['d_kv'], 'Ne': cfg['num_layers'],
            'Nd': cfg.get('num_decoder_layers') or cfg['num_layers'], 'eps': cfg['layer_norm_epsilon'],
            'act': act(name), 'gated': gated, 'embed': t['shared.weight'],
            'head': t['shared.weight'] if tied else t['lm_head.weight'], 'head_scale': cfg['d_model'] ** -0.5 if tied else 1.0,
            'buckets': cfg['relative_attention_num_buckets'], 'max_distance': cfg['relative_attention_max_distance'],
            'start': cfg['decoder_start_token_id'], 'eos': cfg['eos_token_id']}


def t5_bucket(rel, bidirectional, n, max_distance):
    """_relative_position_bucket for one distance (key - query)."""
    out = 0
    if bidirectional:
        n //= 2
        out += n if rel > 0 else 0
        rel = abs(rel)
    else:
        rel = -min(rel, 0)
    exact = n // 2
    if rel < exact:
        return out + rel
    large = exact + int(math.log(rel / exact) / math.log(max_distance / exact) * (n - exact))
    return out + min(large, n - 1)


def t5_bias_matrix(s, t, stack, lq, lk, pos0=0):
    """compute_bias: [H, lq, lk] of block 0's table, queries at pos0.., as a matrix of buckets."""
    table = t[f'{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight']
    ctx = np.arange(pos0, pos0 + lq)[:, None]
    mem = np.arange(lk)[None, :]
    rel = mem - ctx
    n, md = s['buckets'], s['max_distance']
    bidir = stack == 'encoder'
    if bidir:
        n //= 2
        b = (rel > 0).astype(np.int64) * n
        rel = np.abs(rel)
    else:
        b = np.zeros_like(rel)
        rel = -np.minimum(rel, 0)
    exact = n // 2
    large = exact + (np.log(np.maximum(rel, 1) / exact) / math.log(md / exact) * (n - exact)).astype(np.int64)
    b = b + np.where(rel < exact, rel, np.minimum(large, n - 1))
    return table[b].transpose(2, 0, 1)


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def t5_attn(t, pre, xq, xk, H, D, bias, causal):
    q = (xq @ t[pre + 'q.weight'].T).reshape(len(xq), H, D).transpose(1, 0, 2)
    k = (xk @ t[pre + 'k.weight'].T).reshape(len(xk), H, D).transpose(1, 0, 2)
    v = (xk @ t[pre + 'v.weight'].T).reshape(len(xk), H, D).transpose(1, 0, 2)
    sc = q @ k.transpose(0, 2, 1)  # no 1/sqrt(D)
    if bias is not None:
        sc = sc + bias
    if causal:
        sc = np.where(np.tril(np.ones(sc.shape[1:], dtype=bool)), sc, -np.inf)
    p = softmax(sc)
    return (p @ v).transpose(1, 0, 2).reshape(len(xq), H * D) @ t[pre + 'o.weight'].T, p


def t5_ff(s, t, pre, x):
    if s['gated']:
        h = s['act'](x @ t[pre + 'wi_0.weight'].T) * (x @ t[pre + 'wi_1.weight'].T)
    else:
        h = s['act'](x @ t[pre + 'wi.weight'].T)
    return h @ t[pre + 'wo.weight'].T


def t5_encode_batched(s, t, ids):
    x = s['embed'][ids]
    bias = t5_bias_matrix(s, t, 'encoder', len(ids), len(ids))
    atts = []
    for i in range(s['Ne']):
        p = f'encoder.block.{i}.layer.'
        n = rms(x, t[p + '0.layer_norm.weight'], s['eps'])
        a, w = t5_attn(t, p + '0.SelfAttention.', n, n, s['H'], s['D'], bias, False)
        x = x + a
        atts.append(w)
        x = x + t5_ff(s, t, p + '1.DenseReluDense.', rms(x, t[p + '1.layer_norm.weight'], s['eps']))
    return rms(x, t['encoder.final_layer_norm.weight'], s['eps']), atts


def t5_decode_batched(s, t, mem, dids):
    x = s['embed'][dids]
    bias = t5_bias_matrix(s, t, 'decoder', len(dids), len(dids))
    selfs, crosses = [], []
    for i in range(s['Nd']):
        p = f'decoder.block.{i}.layer.'
        n = rms(x, t[p + '0.layer_norm.weight'], s['eps'])
        a, w = t5_attn(t, p + '0.SelfAttention.', n, n, s['H'], s['D'], bias, True)
        x = x + a
        c, wc = t5_attn(t, p + '1.EncDecAttention.', rms(x, t[p + '1.layer_norm.weight'], s['eps']), mem, s['H'], s['D'], None, False)
        x = x + c
        x = x + t5_ff(s, t, p + '2.DenseReluDense.', rms(x, t[p + '2.layer_norm.weight'], s['eps']))
        selfs.append(w)
        crosses.append(wc)
    x = rms(x, t['decoder.final_layer_norm.weight'], s['eps'])
    return (x * s['head_scale']) @ s['head'].T, selfs, crosses


def t5_batched(cfg, t, ids, dids):
    s = t5_spec(cfg, t)
    mem, enc_atts = t5_encode_batched(s, t, np.array(ids))
    logits, selfs, crosses = t5_decode_batched(s, t, mem, np.array(dids))
    seq = [s['start']]
    while len(seq) <= GREEDY and seq[-1] != s['eos'] or len(seq) == 1:
        lg, _, _ = t5_decode_batched(s, t, mem, np.array(seq))
        seq.append(int(np.argmax(lg[-1])))
    return {'logits': logits, 'encoder_attentions': enc_atts, 'decoder_attentions': selfs,
            'cross_attentions': crosses, 'encoder_hidden': mem, 'greedy': seq[1:]}


def mat_row(w, row):
    return np.array([float(np.dot(w[o], row)) for o in range(w.shape[0])])


def rms_row(row, w, eps):
    ms = sum(v * v for v in row) / len(row)
    return np.array([v / math.sqrt(ms + eps) for v in row]) * w


def t5_attend_row(q, ks, vs, H, D, bias_row):
    """bias_row(h, j): the score bias of key j (None: no bias); no scaling."""
    ctx = np.zeros(H * D)
    w = np.zeros((H, len(ks)))
    for h in range(H):
        sl = slice(h * D, (h + 1) * D)
        sc = [float(np.dot(q[sl], k[sl])) + (bias_row(h, j) if bias_row else 0.0) for j, k in enumerate(ks)]
        m = max(sc)
        ex = [math.exp(c - m) for c in sc]
        z = sum(ex)
        for j, v in enumerate(vs):
            w[h, j] = ex[j] / z
            ctx[sl] += w[h, j] * v[sl]
    return ctx, w


def t5_ff_row(s, t, pre, x):
    if s['gated']:
        h = s['act'](mat_row(t[pre + 'wi_0.weight'], x)) * mat_row(t[pre + 'wi_1.weight'], x)
    else:
        h = s['act'](mat_row(t[pre + 'wi.weight'], x))
    return mat_row(t[pre + 'wo.weight'], h)


def t5_encode_cached(s, t, ids):
    H, D, eps = s['H'], s['D'], s['eps']
    table = t['encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight']
    rows = [s['embed'][tok].copy() for tok in ids]
    atts = []
    for li in range(s['Ne']):
        p = f'encoder.block.{li}.layer.'
        ns = [rms_row(r, t[p + '0.layer_norm.weight'], eps) for r in rows]
        ks = [mat_row(t[p + '0.SelfAttention.k.weight'], n) for n in ns]
        vs = [mat_row(t[p + '0.SelfAttention.v.weight'], n) for n in ns]
        w = np.zeros((H, len(rows), len(rows)))
        new = []
        for i, n in enumerate(ns):
            brow = lambda h, j, i=i: table[t5_bucket(j - i, True, s['buckets'], s['max_distance'])][h]  # noqa: E731
            ctx, w[:, i, :] = t5_attend_row(mat_row(t[p + '0.SelfAttention.q.weight'], n), ks, vs, H, D, brow)
            x = rows[i] + mat_row(t[p + '0.SelfAttention.o.weight'], ctx)
            new.append(x + t5_ff_row(s, t, p + '1.DenseReluDense.', rms_row(x, t[p + '1.layer_norm.weight'], eps)))
        rows = new
        atts.append(w)
    return [rms_row(r, t['encoder.final_layer_norm.weight'], eps) for r in rows], atts


class T5Decoder:
    def __init__(self, s, t, mem):
        self.s, self.t = s, t
        self.cache = [([], []) for _ in range(s['Nd'])]
        self.cross = []
        for li in range(s['Nd']):
            p = f'decoder.block.{li}.layer.1.EncDecAttention.'
            self.cross.append(([mat_row(t[p + 'k.weight'], m) for m in mem], [mat_row(t[p + 'v.weight'], m) for m in mem]))
        self.table = t['decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight']

    def step(self, tok):
        s, t = self.s, self.t
        H, D, eps = s['H'], s['D'], s['eps']
        pos = len(self.cache[0][0])
        x = s['embed'][tok].copy()
        ws, wcs = [], []
        for li in range(s['Nd']):
            p = f'decoder.block.{li}.layer.'
            n = rms_row(x, t[p + '0.layer_norm.weight'], eps)
            ks, vs = self.cache[li]
            ks.append(mat_row(t[p + '0.SelfAttention.k.weight'], n))
            vs.append(mat_row(t[p + '0.SelfAttention.v.weight'], n))
            brow = lambda h, j: self.table[t5_bucket(j - pos, False, s['buckets'], s['max_distance'])][h]  # noqa: E731
            ctx, w = t5_attend_row(mat_row(t[p + '0.SelfAttention.q.weight'], n), ks, vs, H, D, brow)
            x = x + mat_row(t[p + '0.SelfAttention.o.weight'], ctx)
            n = rms_row(x, t[p + '1.layer_norm.weight'], eps)
            ctx, wc = t5_attend_row(mat_row(t[p + '1.EncDecAttention.q.weight'], n), *self.cross[li], H, D, None)
            x = x + mat_row(t[p + '1.EncDecAttention.o.weight'], ctx)
            x = x + t5_ff_row(s, t, p + '2.DenseReluDense.', rms_row(x, t[p + '2.layer_norm.weight'], eps))
            ws.append(w)
            wcs.append(wc)
        x = rms_row(x, t['decoder.final_layer_norm.weight'], eps) * s['head_scale']
        return np.array([float(np.dot(s['head'][v], x)) for v in range(s['head'].shape[0])]), ws, wcs


def t5_cached(cfg, t, ids, dids):
    s = t5_spec(cfg, t)
    mem, enc_atts = t5_encode_cached(s, t, ids)
    return run_cached(s, T5Decoder(s, t, mem), lambda: T5Decoder(s, t, mem), mem, enc_atts, ids, dids, s['H'])


# ---- tokenizer -------------------------------------------------------------------------------

WORDS = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'is', 'a', 'hello', 'world', 'die', 'katze', 'der', 'hund',
         'auf', 'ist', 'ein', 'hallo', 'welt']


def tokenizer(t5=False):
    """An opus-mt conversion's tokenizer.json layout: a Unigram (SentencePiece)
    model over ▁-prefixed pieces, </s> 0 and <unk> 1 first, <pad> last (the
    decoder's start), Metaspace pre-tokenizer and decoder, TemplateProcessing
    $A </s>. t5: T5's order, <pad> 0 (the decoder's start), </s> 1, <unk> 2."""
    if t5:
        return t5_tokenizer()
    pieces = [('</s>', 0.0), ('<unk>', 0.0)]
    for i, w in enumerate(WORDS):
        pieces.append(('\u2581' + w, -4.0 - 0.05 * i))
    for i, c in enumerate(['\u2581'] + list('.,!?') + [chr(c) for c in range(ord('a'), ord('z') + 1)]):
        pieces.append((c, -8.0 - 0.01 * i))
    pad = len(pieces)
    pieces.append(('<pad>', 0.0))

    def added(i, content):
        return {'id': i, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False,
                'normalized': False, 'special': True}
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(0, '</s>'), added(1, '<unk>'), added(pad, '<pad>')],
        'normalizer': None,
        'pre_tokenizer': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'Sequence': {'id': 'A', 'type_id': 0}}, {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
            'pair': [{'Sequence': {'id': 'A', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 0}},
                     {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
            'special_tokens': {'</s>': {'id': '</s>', 'ids': [0], 'tokens': ['</s>']}}},
        'decoder': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True},
        'model': {'type': 'Unigram', 'unk_id': 1, 'vocab': [[p, s] for p, s in pieces], 'byte_fallback': False},
    }
    index = {p: i for i, (p, _) in enumerate(pieces) if i not in (0, 1, pad)}
    score = dict(pieces)
    unk_score = min(score.values()) - 10.0

    def viterbi(s):  # the highest-scoring segmentation; an unknown char is <unk>
        best = [(-math.inf, None)] * (len(s) + 1)
        best[0] = (0.0, None)
        for end in range(1, len(s) + 1):
            for start in range(end):
                piece = s[start:end]
                if piece in index:
                    sc = score[piece]
                elif end - start == 1:
                    sc = unk_score
                else:
                    continue
                cand = best[start][0] + sc
                if cand > best[end][0]:
                    best[end] = (cand, (start, piece))
        out, at = [], len(s)
        while at > 0:
            start, piece = best[at][1]
            out.append(index.get(piece, 1))
            at = start
        return out[::-1]

    def encode(text):
        return viterbi('\u2581' + text.replace(' ', '\u2581')) + [0]
    return tok, encode, len(pieces), pad


def t5_tokenizer():
    tok, encode, n, pad = tokenizer()
    # the same pieces, the specials moved: <pad> 0, </s> 1, <unk> 2 (T5's spiece order)
    vocab = tok['model']['vocab']
    words = vocab[2:pad]
    new = [['<pad>', 0.0], ['</s>', 0.0], ['<unk>', 0.0]] + words
    remap = {0: 1, 1: 2, pad: 0}
    remap.update({i: i + 1 for i in range(2, pad)})

    def added(i, content):
        return {'id': i, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False,
                'normalized': False, 'special': True}
    tok = dict(tok, added_tokens=[added(0, '<pad>'), added(1, '</s>'), added(2, '<unk>')],
               model={'type': 'Unigram', 'unk_id': 2, 'vocab': new, 'byte_fallback': False},
               post_processor=dict(tok['post_processor'],
                                   special_tokens={'</s>': {'id': '</s>', 'ids': [1], 'tokens': ['</s>']}}))
    return tok, lambda text: [remap[i] for i in encode(text)], len(new), 0


# ---- weights ---------------------------------------------------------------------------------

def w(*shape, std=0.1):
    return exact(rng.standard_normal(shape) * std)


def norm_w(n, std=0.1):
    return exact(1.0 + rng.standard_normal(n) * std)


def attn_tensors(p, E, sharp):
    return [(p + 'k_proj.weight', w(E, E, std=sharp)), (p + 'k_proj.bias', w(E, std=0.05)),
            (p + 'v_proj.weight', w(E, E, std=0.2)), (p + 'v_proj.bias', w(E, std=0.05)),
            (p + 'q_proj.weight', w(E, E, std=sharp)), (p + 'q_proj.bias', w(E, std=0.05)),
            (p + 'out_proj.weight', w(E, E, std=0.15)), (p + 'out_proj.bias', w(E, std=0.02))]


def ln_tensors(p, E):
    return [(p + '.weight', norm_w(E)), (p + '.bias', w(E, std=0.05))]


def encdec_weights(V, E, F, Ne, Nd, positions=None):
    """transformers' names of a Marian/BART MTModel as save_pretrained writes
    them (the tied embed_tokens and lm_head left out, model.shared kept);
    positions: (rows) of BART's learned tables, None for Marian's sinusoid."""
    bias = w(1, V, std=0.3)
    bias[0, 0] = -1.5  # the eos (id 0) less likely, so that the greedy continuations run their 4 tokens
    t = [('final_logits_bias', bias), ('model.shared.weight', w(V, E, std=0.5))]
    for stack, n in (('encoder', Ne), ('decoder', Nd)):
        if positions:
            t.append((f'model.{stack}.embed_positions.weight', w(positions, E, std=0.3)))
            t += ln_tensors(f'model.{stack}.layernorm_embedding', E)
        for i in range(n):
            p = f'model.{stack}.layers.{i}.'
            t += attn_tensors(p + 'self_attn.', E, 0.5)
            t += ln_tensors(p + 'self_attn_layer_norm', E)
            if stack == 'decoder':
                t += attn_tensors(p + 'encoder_attn.', E, 0.6)
                t += ln_tensors(p + 'encoder_attn_layer_norm', E)
            t += [(p + 'fc1.weight', w(F, E, std=0.3)), (p + 'fc1.bias', w(F, std=0.05)),
                  (p + 'fc2.weight', w(E, F, std=0.2)), (p + 'fc2.bias', w(E, std=0.02))]
            t += ln_tensors(p + 'final_layer_norm', E)
    return t


def t5_weights(V, E, D, H, F, N, buckets, gated, tied):
    """transformers' names of a T5ForConditionalGeneration (shared kept, the
    tied embed_tokens left out; lm_head when untied)."""
    t = [('shared.weight', w(V, E, std=0.5))]
    for stack in ('encoder', 'decoder'):
        t.append((f'{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight', w(buckets, H, std=0.8)))
        for i in range(N):
            p = f'{stack}.block.{i}.layer.'
            attn = [('0.SelfAttention', 0.3)] + ([('1.EncDecAttention', 0.35)] if stack == 'decoder' else [])
            for name, sharp in attn:
                t += [(p + name + '.q.weight', w(H * D, E, std=sharp)), (p + name + '.k.weight', w(H * D, E, std=sharp)),
                      (p + name + '.v.weight', w(H * D, E, std=0.2)), (p + name + '.o.weight', w(E, H * D, std=0.2))]
                t.append((p + name[0] + '.layer_norm.weight', norm_w(E)))
            ff = f'{len(attn)}.DenseReluDense.'
            if gated:
                t += [(p + ff + 'wi_0.weight', w(F, E, std=0.3)), (p + ff + 'wi_1.weight', w(F, E, std=0.3))]
            else:
                t.append((p + ff + 'wi.weight', w(F, E, std=0.3)))
            t += [(p + ff + 'wo.weight', w(E, F, std=0.2)), (p + f'{len(attn)}.layer_norm.weight', norm_w(E))]
        t.append((f'{stack}.final_layer_norm.weight', norm_w(E)))
    if not tied:
        t.append(('lm_head.weight', w(V, E, std=0.5)))
    return t


# ---- configs, as save_pretrained writes them ---------------------------------------------

def marian_config(V, pad):
    return {'activation_dropout': 0.0, 'activation_function': 'swish', 'architectures': ['MarianMTModel'],
            'attention_dropout': 0.0, 'bos_token_id': 0, 'classifier_dropout': 0.0, 'd_model': 16,
            'decoder_attention_heads': 4, 'decoder_ffn_dim': 32, 'decoder_layerdrop': 0.0, 'decoder_layers': 2,
            'decoder_start_token_id': pad, 'decoder_vocab_size': V, 'dropout': 0.1, 'encoder_attention_heads': 4,
            'encoder_ffn_dim': 32, 'encoder_layerdrop': 0.0, 'encoder_layers': 2, 'eos_token_id': 0,
            'forced_eos_token_id': 0, 'init_std': 0.02, 'is_encoder_decoder': True, 'max_length': 64,
            'max_position_embeddings': 32, 'model_type': 'marian', 'normalize_embedding': False, 'num_beams': 4,
            'num_hidden_layers': 2, 'pad_token_id': pad, 'scale_embedding': True,
            'share_encoder_decoder_embeddings': True, 'static_position_embeddings': True,
            'torch_dtype': 'float32', 'transformers_version': TF_VERSION, 'use_cache': True, 'vocab_size': V}


def bart_config(V, pad):
    return {'activation_dropout': 0.0, 'activation_function': 'gelu', 'add_final_layer_norm': False,
            'architectures': ['BartForConditionalGeneration'], 'attention_dropout': 0.0, 'bos_token_id': 2,
            'classifier_dropout': 0.0, 'd_model': 16, 'decoder_attention_heads': 4, 'decoder_ffn_dim': 32,
            'decoder_layerdrop': 0.0, 'decoder_layers': 2, 'decoder_start_token_id': 0, 'dropout': 0.1,
            'encoder_attention_heads': 4, 'encoder_ffn_dim': 32, 'encoder_layerdrop': 0.0, 'encoder_layers': 2,
            'eos_token_id': 0, 'forced_eos_token_id': 0, 'init_std': 0.02, 'is_encoder_decoder': True,
            'max_position_embeddings': 32, 'model_type': 'bart', 'normalize_before': False, 'num_hidden_layers': 2,
            'pad_token_id': pad, 'scale_embedding': True, 'torch_dtype': 'float32',
            'transformers_version': TF_VERSION, 'use_cache': True, 'vocab_size': V}


def t5_config(V, gated):
    c = {'architectures': ['T5ForConditionalGeneration'], 'classifier_dropout': 0.0, 'd_ff': 32, 'd_kv': 6, 'd_model': 16,
         'decoder_start_token_id': 0, 'dense_act_fn': 'gelu_new' if gated else 'relu', 'dropout_rate': 0.1,
         'eos_token_id': 1, 'feed_forward_proj': 'gated-gelu' if gated else 'relu', 'initializer_factor': 1.0,
         'is_encoder_decoder': True, 'is_gated_act': gated, 'layer_norm_epsilon': 1e-6, 'model_type': 't5',
         'num_decoder_layers': 2, 'num_heads': 3, 'num_layers': 2, 'pad_token_id': 0,
         'relative_attention_max_distance': 12, 'relative_attention_num_buckets': 8, 'torch_dtype': 'float32',
         'transformers_version': TF_VERSION, 'use_cache': True, 'vocab_size': V}
    if gated:
        c['tie_word_embeddings'] = False  # v1.1 and Flan-T5
    return c


# ---- generate ------------------------------------------------------------------------------------

def write_folder(name, tensors, config, tok, seqs):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, 'config.json'), config)
    write_json(os.path.join(d, 'tokenizer.json'), tok, pretty=False)
    files = [('model.safetensors', 'F32'), ('model-f16.safetensors', 'F16')]
    for fname, dt in files:
        write_safetensors(os.path.join(d, fname), [(k, dt, v) for k, v in tensors], {'format': 'pt'})
    ref = read_safetensors(os.path.join(d, 'model.safetensors'))
    other = read_safetensors(os.path.join(d, files[1][0]))
    assert all(np.array_equal(ref[k], other[k]) for k in ref)
    cases = []
    for text, ids, dids in seqs:
        r = forward(d, ids, dids)
        cases.append({'text': text, 'ids': [int(i) for i in ids], 'decoder_input_ids': [int(i) for i in dids],
                      'logits': round_floats(r['logits'].tolist()),
                      'encoder_attentions': round_floats([a.tolist() for a in r['encoder_attentions']]),
                      'decoder_attentions': round_floats([a.tolist() for a in r['decoder_attentions']]),
                      'cross_attentions': round_floats([a.tolist() for a in r['cross_attentions']]),
                      'encoder_hidden': round_floats(r['encoder_hidden'].tolist()),
                      'greedy': r['greedy']})
    # num_parameters(): the tied embed_tokens / lm_head once (model.shared),
    # plus BART's position tables; final_logits_bias is a buffer, not a parameter.
    params = int(sum(v.size for k, v in tensors if k != 'final_logits_bias'))  # (t5: every tensor a parameter)
    if config['model_type'] == 'marian':  # each stack's sinusoid table is an nn.Parameter (not saved)
        params += 2 * config['max_position_embeddings'] * config['d_model']
    expected = {'model_type': config['model_type'], 'architecture': config['architectures'][0],
                'dtype_files': [f for f, _ in files], 'parameters': params,
                'tensors': [k for k, _ in tensors], 'shapes': {k: list(v.shape) for k, v in tensors},
                'decoder_start_token_id': config['decoder_start_token_id'], 'cases': cases}
    write_json(os.path.join(d, 'expected.json'), expected, pretty=False)
    return d


def generate():
    tok, encode, V, pad = tokenizer()
    texts = ['the cat sat on the mat.', 'hello world!', 'a dog is on a mat']
    # decoder inputs: the start id, then the target-side ids of a translation
    targets = ['die katze', 'hallo welt!', 'ein hund ist auf']
    jobs, dirs = {}, []
    for name, cfg, weights in (
            ('marian', marian_config(V, pad), encdec_weights(V, 16, 32, 2, 2)),
            ('bart', bart_config(V, pad), encdec_weights(V, 16, 32, 2, 2, positions=34))):
        start = cfg['decoder_start_token_id']
        seqs = [(x, encode(x), [start] + encode(y)[:-1]) for x, y in zip(texts, targets)]
        d = write_folder(name, weights, cfg, tok, seqs)
        jobs[d] = {'texts': texts, 'expect': {x: ids for x, ids, _ in seqs}}
        dirs.append(d)
    ttok, tencode, TV, _ = tokenizer(t5=True)
    for name, gated in (('t5', False), ('t5-v1_1', True)):
        cfg = t5_config(TV, gated)
        seqs = [(x, tencode(x), [0] + tencode(y)[:-1]) for x, y in zip(texts, targets)]
        d = write_folder(name, t5_weights(TV, 16, 6, 3, 32, 2, 8, gated, not gated), cfg, ttok, seqs)
        jobs[d] = {'texts': texts, 'expect': {x: ids for x, ids, _ in seqs}}
    checked = check_tokenizers({d: dict(j, roundtrip=lambda x: ANY) for d, j in jobs.items()})
    for d in jobs if checked else ():
        f = os.path.join(d, 'tokenizer-samples.json')
        with open(f, encoding='utf-8') as fh:
            samples = json.load(fh)
        samples['note'] = samples['note'].replace('hf_models.py', 'hf_encdec.py')
        write_json(f, samples)
    print(f'wrote {", ".join(FOLDERS)}: vocab {V}; tokenizers '
          f'{"checked with @huggingface/tokenizers" if checked else "NOT checked"}')


class _Any:
    def __eq__(self, other):
        return True


ANY = _Any()


def main(argv):
    if argv[:1] == ['generate']:
        generate()
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
