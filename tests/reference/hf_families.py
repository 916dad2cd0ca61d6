#!/usr/bin/env python3
"""Float64 numpy references and tiny golden checkpoints of the decoder families
of issue 32: qwen2, qwen3, mistral, gemma, gemma2, gemma3_text, phi3, gpt_neox
(parallel and sequential residual) and gpt_neo.

    /usr/bin/python3 tests/reference/hf_families.py generate
    /usr/bin/python3 tests/reference/hf_families.py forward tests/golden/models/gemma3 --ids 3,17,42

writes tests/golden/models/<folder>/{config.json, model.safetensors,
expected.json, tokenizer.json}. The references are of ids (expected.json
holds no text); tokenizer.json (`tokenizers` writes only it) is a tiny
SentencePiece-style BPE of vocab_size 64 so that the page's "Your model" can
run a folder on typed text (tests/browser/your-model-families.browser.mjs). Nothing here reads web/, src/ or
bindings/. Every number is computed twice, in two independent formulations:

  * batched: the whole sequence at once, with an explicit [L, L] mask
    (causal and, on sliding layers, the window) as transformers' eager
    attention applies it;
  * cached: one position at a time, keys and values appended to a per-layer
    cache, the window applied by slicing the cache, RoPE applied by rotating
    the (i, i + r/2) pairs one position at a time;

and the generator asserts that they agree to 1e-10 (logits, attentions,
hidden states, greedy continuation).

Semantics follow transformers (v4.5x, eval mode, attn_implementation="eager"):
src/transformers/models/<family>/modeling_<family>.py, cited per feature below.
"""
import json
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import (OUT, act, bf16_bits, bf16_to_f32, exact, layer_norm, learn_merges,  # noqa: E402
                       read_safetensors, round_floats, softmax, write_json, write_safetensors)

TOL = 1e-10


# ---- norms ---------------------------------------------------------------------

def rms(x, w, eps):
    """LlamaRMSNorm / Qwen2RMSNorm / Qwen3RMSNorm / MistralRMSNorm / Phi3RMSNorm:
    hidden * rsqrt(mean(hidden^2) + eps), then weight * hidden."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def rms1p(x, w, eps):
    """GemmaRMSNorm (modeling_gemma.py, GemmaRMSNorm.forward; the same in gemma2
    and gemma3): output = self._norm(x.float()); output * (1.0 + weight.float())."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * (1.0 + w)


def norm(kind, x, p, eps):
    if kind == 'ln':
        return layer_norm(x, p[0], p[1], eps)
    return (rms1p if kind == 'rms1p' else rms)(x, p[0], eps)


def round_to(v, dtype):
    """A python float cast to the checkpoint's dtype (torch.tensor(v, dtype=...))."""
    if dtype == 'F32':
        return float(np.float32(v))
    if dtype == 'F16':
        return float(np.float16(v))
    return float(bf16_to_f32(bf16_bits(np.array([v], dtype=np.float32)))[0])


# ---- the per-family reading of config.json ---------------------------------------

def layer_kinds(cfg, n):
    """'full' or 'sliding' per layer, as each family's config decides."""
    mt = cfg['model_type']
    if mt == 'gpt_neo':
        # configuration_gpt_neo.py, GPTNeoConfig.expand_attention_types_params:
        # attention_types [[["global","local"], n]] -> attention_layers.
        kinds = []
        for item in cfg['attention_types']:
            for _ in range(item[1]):
                kinds.extend(item[0])
        assert kinds == cfg['attention_layers'] and len(kinds) == n
        return ['sliding' if k == 'local' else 'full' for k in kinds]
    if mt == 'mistral':
        # modeling_mistral.py: every layer uses create_sliding_window_causal_mask
        # when config.sliding_window is not None.
        return ['sliding' if cfg.get('sliding_window') else 'full'] * n
    if mt in ('gemma2', 'gemma3_text'):
        # configuration_gemma2.py: layer_types default
        #   "sliding_attention" if bool((i + 1) % 2) else "full_attention";
        # configuration_gemma3.py: ... bool((i + 1) % self.sliding_window_pattern) ...
        pat = cfg.get('sliding_window_pattern', 2 if mt == 'gemma2' else 6)
        default = ['sliding_attention' if (i + 1) % pat else 'full_attention' for i in range(n)]
        lt = cfg.get('layer_types') or default
        assert lt == default or 'layer_types' in cfg
        for t in lt:
            assert t in ('sliding_attention', 'full_attention'), t
        return ['sliding' if t == 'sliding_attention' else 'full' for t in lt]
    if mt in ('qwen2', 'qwen3'):
        # configuration_qwen2.py: layer_types "sliding_attention" only when
        # use_sliding_window and i >= max_window_layers.
        if cfg.get('use_sliding_window'):
            return ['sliding' if i >= cfg['max_window_layers'] else 'full' for i in range(n)]
        return ['full'] * n
    if mt == 'phi3':
        return ['sliding' if cfg.get('sliding_window') else 'full'] * n
    return ['full'] * n


def spec(cfg, dtype):
    """Everything the block graph needs, read from config.json by the rules of
    each family's configuration/modeling files."""
    mt = cfg['model_type']
    if mt == 'gpt_neo':
        E, H, n = cfg['hidden_size'], cfg['num_heads'], cfg['num_layers']
    else:
        E, H, n = cfg['hidden_size'], cfg['num_attention_heads'], cfg['num_hidden_layers']
    Hkv = cfg.get('num_key_value_heads') or H
    D = cfg.get('head_dim') or E // H
    s = {'mt': mt, 'E': E, 'H': H, 'Hkv': Hkv, 'D': D, 'n': n, 'V': cfg['vocab_size'],
         'kinds': layer_kinds(cfg, n), 'window': None, 'attn_softcap': None, 'final_softcap': None,
         'embed_scale': None, 'learned_pos': False, 'parallel': False, 'four_norms': False,
         'qk_norm': None, 'rotary': D, 'theta': [cfg.get('rope_theta', 10000.0)] * n,
         'scale': D ** -0.5, 'tied': cfg.get('tie_word_embeddings', True), 'mlp': 'gated', 'norm': 'rms',
         'eps': cfg.get('rms_norm_eps'), 'act': cfg.get('hidden_act', 'silu')}
    assert cfg.get('rope_scaling') is None, 'rope_scaling is not implemented here'
    if 'sliding' in s['kinds']:
        s['window'] = cfg['window_size'] if mt == 'gpt_neo' else cfg['sliding_window']
    if mt == 'qwen3':
        # modeling_qwen3.py, Qwen3Attention.__init__: self.q_norm = Qwen3RMSNorm(self.head_dim, ...)
        s['qk_norm'] = 'rms'
    if mt in ('gemma', 'gemma2', 'gemma3_text'):
        s['norm'] = 'rms1p'
        # GemmaMLP: self.act_fn = ACT2FN[config.hidden_act] (gelu_pytorch_tanh)
        s['act'] = cfg.get('hidden_activation') or cfg['hidden_act']
        # GemmaModel.forward: normalizer = torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype);
        # Gemma3TextScaledWordEmbedding: * self.embed_scale.to(self.weight.dtype)
        s['embed_scale'] = round_to(math.sqrt(E), dtype)
    if mt in ('gemma2', 'gemma3_text'):
        s['four_norms'] = True
        # Gemma2Attention.__init__: self.scaling = config.query_pre_attn_scalar**-0.5
        s['scale'] = cfg['query_pre_attn_scalar'] ** -0.5
        s['attn_softcap'] = cfg.get('attn_logit_softcapping')
        s['final_softcap'] = cfg.get('final_logit_softcapping')
    if mt == 'gemma3_text':
        s['qk_norm'] = 'rms1p'  # Gemma3Attention: self.q_norm = Gemma3RMSNorm(dim=config.head_dim, ...)
        # Gemma3TextModel: rotary_emb_local uses rope_theta = config.rope_local_base_freq
        # on sliding layers; rotary_emb (rope_theta) on full ones.
        s['theta'] = [cfg['rope_local_base_freq'] if k == 'sliding' else cfg['rope_theta'] for k in s['kinds']]
    if mt == 'phi3':
        # modeling_rope_utils._compute_default_rope_parameters:
        # dim = int(head_dim * partial_rotary_factor)
        s['rotary'] = int(D * cfg.get('partial_rotary_factor', 1.0))
    if mt == 'gpt_neox':
        s.update(norm='ln', eps=cfg['layer_norm_eps'], mlp='plain', parallel=cfg['use_parallel_residual'],
                 rotary=int(D * cfg['rotary_pct']), theta=[cfg['rotary_emb_base']] * n)
    if mt == 'gpt_neo':
        # modeling_gpt_neo.py, GPTNeoSelfAttention._attn: no division by sqrt(head_dim)
        s.update(norm='ln', eps=cfg['layer_norm_epsilon'], mlp='plain', learned_pos=True, rotary=0,
                 scale=1.0, act=cfg['activation_function'])
    return s


class W:
    """The checkpoint's tensors in one canonical per-layer form (fused
    projections split here, by each family's rule)."""

    def __init__(self, t, s):
        self.t, self.s = t, s
        mt = s['mt']
        g = lambda k: t[k]  # noqa: E731
        o = lambda k: t.get(k)  # noqa: E731
        E, H, Hkv, D = s['E'], s['H'], s['Hkv'], s['D']
        self.layers = []
        if mt == 'gpt_neox':
            self.embed = g('gpt_neox.embed_in.weight')
            self.final = (g('gpt_neox.final_layer_norm.weight'), g('gpt_neox.final_layer_norm.bias'))
            self.head = g('embed_out.weight')
            for i in range(s['n']):
                p = f'gpt_neox.layers.{i}.'
                # modeling_gpt_neox.py, GPTNeoXAttention.forward:
                # qkv = self.query_key_value(hidden_states).view(*input_shape, -1, 3 * self.head_size)
                # query_states, key_states, value_states = qkv.chunk(3, dim=-1)
                qkv = g(p + 'attention.query_key_value.weight').reshape(H, 3, D, E)
                qkvb = g(p + 'attention.query_key_value.bias').reshape(H, 3, D)
                self.layers.append(dict(
                    ln1=(g(p + 'input_layernorm.weight'), g(p + 'input_layernorm.bias')),
                    ln2=(g(p + 'post_attention_layernorm.weight'), g(p + 'post_attention_layernorm.bias')),
                    q=qkv[:, 0].reshape(H * D, E), k=qkv[:, 1].reshape(H * D, E), v=qkv[:, 2].reshape(H * D, E),
                    qb=qkvb[:, 0].reshape(-1), kb=qkvb[:, 1].reshape(-1), vb=qkvb[:, 2].reshape(-1),
                    o=g(p + 'attention.dense.weight'), ob=g(p + 'attention.dense.bias'),
                    up=g(p + 'mlp.dense_h_to_4h.weight'), upb=g(p + 'mlp.dense_h_to_4h.bias'),
                    down=g(p + 'mlp.dense_4h_to_h.weight'), downb=g(p + 'mlp.dense_4h_to_h.bias')))
            return
        if mt == 'gpt_neo':
            self.embed = g('transformer.wte.weight')
            self.wpe = g('transformer.wpe.weight')
            self.final = (g('transformer.ln_f.weight'), g('transformer.ln_f.bias'))
            self.head = self.embed  # GPTNeoForCausalLM: _tied_weights_keys = ["lm_head.weight"]
            for i in range(s['n']):
                p = f'transformer.h.{i}.'
                a = p + 'attn.attention.'
                self.layers.append(dict(
                    ln1=(g(p + 'ln_1.weight'), g(p + 'ln_1.bias')), ln2=(g(p + 'ln_2.weight'), g(p + 'ln_2.bias')),
                    q=g(a + 'q_proj.weight'), k=g(a + 'k_proj.weight'), v=g(a + 'v_proj.weight'),
                    o=g(a + 'out_proj.weight'), ob=g(a + 'out_proj.bias'),
                    up=g(p + 'mlp.c_fc.weight'), upb=g(p + 'mlp.c_fc.bias'),
                    down=g(p + 'mlp.c_proj.weight'), downb=g(p + 'mlp.c_proj.bias')))
            return
        self.embed = g('model.embed_tokens.weight')
        self.final = (g('model.norm.weight'),)
        self.head = self.embed if s['tied'] else g('lm_head.weight')
        for i in range(s['n']):
            p = f'model.layers.{i}.'
            L = dict(ln1=(g(p + 'input_layernorm.weight'),), ln2=(g(p + 'post_attention_layernorm.weight'),),
                     down=g(p + 'mlp.down_proj.weight'), o=g(p + 'self_attn.o_proj.weight'))
            if mt == 'phi3':
                # modeling_phi3.py, Phi3Attention.forward: query_pos = num_heads * head_dim;
                # q = qkv[..., :query_pos]; k = qkv[..., query_pos:query_pos + kv_heads * head_dim];
                # v = qkv[..., query_pos + kv_heads * head_dim:]
                qkv = g(p + 'self_attn.qkv_proj.weight')
                L.update(q=qkv[:H * D], k=qkv[H * D:H * D + Hkv * D], v=qkv[H * D + Hkv * D:])
                # Phi3MLP.forward: gate, up_states = up_states.chunk(2, dim=-1); up_states * act(gate)
                gu = g(p + 'mlp.gate_up_proj.weight')
                half = gu.shape[0] // 2
                L.update(gate=gu[:half], up=gu[half:])
            else:
                L.update(q=g(p + 'self_attn.q_proj.weight'), k=g(p + 'self_attn.k_proj.weight'),
                         v=g(p + 'self_attn.v_proj.weight'), gate=g(p + 'mlp.gate_proj.weight'),
                         up=g(p + 'mlp.up_proj.weight'))
                L.update(qb=o(p + 'self_attn.q_proj.bias'), kb=o(p + 'self_attn.k_proj.bias'),
                         vb=o(p + 'self_attn.v_proj.bias'), ob=o(p + 'self_attn.o_proj.bias'))
            if s['qk_norm']:
                L.update(qn=(g(p + 'self_attn.q_norm.weight'),), kn=(g(p + 'self_attn.k_norm.weight'),))
            if s['four_norms']:
                L.update(pre_ff=(g(p + 'pre_feedforward_layernorm.weight'),),
                         post_ff=(g(p + 'post_feedforward_layernorm.weight'),))
            self.layers.append(L)


def lin(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def mlp(s, L, x):
    if s['mlp'] == 'plain':  # GPTNeoXMLP / GPTNeoMLP: fc, act, proj, with biases
        return lin(act(s['act'])(lin(x, L['up'], L['upb'])), L['down'], L['downb'])
    return lin(act(s['act'])(lin(x, L['gate'])) * lin(x, L['up']), L['down'])


def softcap(x, cap):
    # Gemma2: attn_weights / softcap; tanh; * softcap (eager_attention_forward), and the
    # same on the final logits in Gemma2ForCausalLM.forward.
    return x if cap is None else np.tanh(x / cap) * cap


def block(s, L, x, attn_out):
    """The residual wiring around attention (attn_out(h) -> [L, E])."""
    if s['mt'] == 'gpt_neox':
        # modeling_gpt_neox.py, GPTNeoXLayer.forward
        a = attn_out(norm('ln', x, L['ln1'], s['eps']))
        if s['parallel']:  # x = x + attn(ln1(x)) + mlp(ln2(x))
            return mlp(s, L, norm('ln', x, L['ln2'], s['eps'])) + a + x
        a = a + x
        return mlp(s, L, norm('ln', a, L['ln2'], s['eps'])) + a
    h = attn_out(norm(s['norm'], x, L['ln1'], s['eps']))
    if s['four_norms']:
        # Gemma2DecoderLayer.forward: post_attention_layernorm on the attention output,
        # then pre_feedforward_layernorm / post_feedforward_layernorm around the MLP.
        x = x + norm(s['norm'], h, L['ln2'], s['eps'])
        return x + norm(s['norm'], mlp(s, L, norm(s['norm'], x, L['pre_ff'], s['eps'])), L['post_ff'], s['eps'])
    x = x + h
    return x + mlp(s, L, norm(s['norm'], x, L['ln2'], s['eps']))


def embed(s, w, ids, positions):
    x = w.embed[ids].astype(np.float64)
    if s['embed_scale'] is not None:
        x = x * s['embed_scale']
    if s['learned_pos']:
        x = x + w.wpe[positions]
    return x


def logits_of(s, w, x):
    h = norm(s['norm'], x, w.final, s['eps'])
    return h, softcap(h @ w.head.T, s['final_softcap'])


def qkv(s, L, h):
    q = lin(h, L['q'], L.get('qb'))
    k = lin(h, L['k'], L.get('kb'))
    v = lin(h, L['v'], L.get('vb'))
    n = h.shape[0]
    q = q.reshape(n, s['H'], s['D'])
    k = k.reshape(n, s['Hkv'], s['D'])
    v = v.reshape(n, s['Hkv'], s['D'])
    if s['qk_norm']:  # Qwen3Attention / Gemma3Attention: q_norm(q.view(hidden_shape)) before RoPE
        q = norm(s['qk_norm'], q, L['qn'], s['eps'])
        k = norm(s['qk_norm'], k, L['kn'], s['eps'])
    return q, k, v


# ---- formulation 1: batched, explicit masks -------------------------------------------

def rope_batched(x, theta, r, positions):
    """apply_rotary_pos_emb with rotate_half over the first r dims
    (GPTNeoX / Phi3: q_rot = q[..., :rotary_dim], q_pass = q[..., rotary_dim:]). x [L, h, D]."""
    if r == 0:
        return x
    inv = 1.0 / theta ** (np.arange(0, r, 2, dtype=np.float64) / r)
    ang = positions[:, None].astype(np.float64) * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)[:, None, :]
    xr, xp = x[..., :r], x[..., r:]
    rot = np.concatenate([-xr[..., r // 2:], xr[..., :r // 2]], axis=-1)
    return np.concatenate([xr * np.cos(emb) + rot * np.sin(emb), xp], axis=-1)


def mask(n, window):
    """masking_utils.causal_mask_function: kv_idx <= q_idx; sliding_window_overlay:
    kv_idx > q_idx - sliding_window. (GPT-Neo's local bias: tril(ones) xor
    tril(ones, -window_size): the same set.)"""
    qi = np.arange(n)[:, None]
    ki = np.arange(n)[None, :]
    m = ki <= qi
    if window is not None:
        m &= ki > qi - window
    return m


def forward_batched(s, w, ids):
    ids = np.asarray(ids)
    n = len(ids)
    pos = np.arange(n)
    x = embed(s, w, ids, pos)
    atts = []
    rep = s['H'] // s['Hkv']
    for i, L in enumerate(w.layers):
        m = mask(n, s['window'] if s['kinds'][i] == 'sliding' else None)

        def attn_out(h):
            q, k, v = qkv(s, L, h)
            q = rope_batched(q, s['theta'][i], s['rotary'], pos)
            k = rope_batched(k, s['theta'][i], s['rotary'], pos)
            k = np.repeat(k, rep, axis=1)  # repeat_kv
            v = np.repeat(v, rep, axis=1)
            sc = np.einsum('qhd,khd->hqk', q, k) * s['scale']
            sc = softcap(sc, s['attn_softcap'])
            p = softmax(np.where(m[None], sc, -np.inf))
            atts.append(p)
            ctx = np.einsum('hqk,khd->qhd', p, v).reshape(n, s['H'] * s['D'])
            return lin(ctx, L['o'], L.get('ob'))
        x = block(s, L, x, attn_out)
    h, lg = logits_of(s, w, x)
    return {'logits': lg, 'attentions': np.stack(atts), 'hidden_states': h}


# ---- formulation 2: one position at a time, with a KV cache ------------------------------

def rope_at(x, theta, r, t):
    """Rotate each pair (j, j + r/2) of x [h, D] by t * theta^(-2j/r)."""
    x = x.copy()
    for j in range(r // 2):
        a = t * theta ** (-(2.0 * j) / r)
        c, sn = math.cos(a), math.sin(a)
        x1, x2 = x[:, j].copy(), x[:, j + r // 2].copy()
        x[:, j] = x1 * c - x2 * sn
        x[:, j + r // 2] = x2 * c + x1 * sn
    return x


def forward_cached(s, w, ids, cache=None, start=0):
    """Feeds ids from position `start`, appending to `cache` (per layer lists of
    k [Hkv, D] and v). Returns per-position rows and the cache."""
    if cache is None:
        cache = [([], []) for _ in w.layers]
    rows = []
    rep = s['H'] // s['Hkv']
    for off, tok in enumerate(ids):
        t = start + off
        x = embed(s, w, np.array([tok]), np.array([t]))
        att_rows = []
        for i, L in enumerate(w.layers):
            ks, vs = cache[i]

            def attn_out(h):
                q, k, v = qkv(s, L, h)
                q = rope_at(q[0], s['theta'][i], s['rotary'], t)
                ks.append(rope_at(k[0], s['theta'][i], s['rotary'], t))
                vs.append(v[0])
                lo = 0
                if s['kinds'][i] == 'sliding':
                    lo = max(0, t + 1 - s['window'])  # the last `window` positions, itself included
                out = np.zeros(s['H'] * s['D'])
                full = np.zeros((s['H'], t + 1))
                for hh in range(s['H']):
                    kv = hh // rep
                    K = np.array([kk[kv] for kk in ks[lo:]])
                    Vv = np.array([vv[kv] for vv in vs[lo:]])
                    sc = softcap(K @ q[hh] * s['scale'], s['attn_softcap'])
                    e = np.exp(sc - sc.max())
                    p = e / e.sum()
                    full[hh, lo:] = p
                    out[hh * s['D']:(hh + 1) * s['D']] = p @ Vv
                att_rows.append(full)
                return lin(out[None], L['o'], L.get('ob'))
            x = block(s, L, x, attn_out)
        h, lg = logits_of(s, w, x)
        rows.append({'logits': lg[0], 'hidden': h[0], 'att': att_rows})
    return rows, cache


def check_agree(s, w, ids, b):
    rows, _ = forward_cached(s, w, ids)
    n = len(ids)
    lg = np.stack([r['logits'] for r in rows])
    hs = np.stack([r['hidden'] for r in rows])
    att = np.zeros_like(b['attentions'])
    for t, r in enumerate(rows):
        for i in range(s['n']):
            att[i, :, t, :t + 1] = r['att'][i]
    for name, a, c in (('logits', lg, b['logits']), ('hidden', hs, b['hidden_states']), ('attentions', att, b['attentions'])):
        d = np.max(np.abs(a - c) / np.maximum(1.0, np.abs(c)))
        assert d < TOL, f'{s["mt"]}: {name} batched vs cached differ by {d} (n={n})'


def greedy(s, w, ids, steps):
    """Greedy continuation with the cache, each step checked against the batched
    forward of the whole sequence."""
    rows, cache = forward_cached(s, w, ids)
    seq = list(ids)
    out = []
    last = rows[-1]['logits']
    for _ in range(steps):
        tok = int(np.argmax(last))
        b = forward_batched(s, w, seq)['logits'][-1]
        assert int(np.argmax(b)) == tok and np.max(np.abs(b - last)) < TOL
        srt = np.sort(last)
        assert srt[-1] - srt[-2] > 1e-6, 'greedy tie'
        out.append(tok)
        seq.append(tok)
        rows, cache = forward_cached(s, w, [tok], cache, len(seq) - 1)
        last = rows[-1]['logits']
    return out


def next_tokens(lg, k=5):
    p = softmax(lg)
    order = sorted(range(len(p)), key=lambda j: (-p[j], j))[:k]
    return [{'id': int(j), 'p': float(f'{p[j]:.12g}'), 'logit': float(f'{lg[j]:.12g}')} for j in order]


# ---- tiny checkpoints ----------------------------------------------------------------------

V = 64
E = 32
TEXT_IDS = [[3, 17, 42, 5, 9, 28, 11, 60, 33, 7, 21, 14], [1, 50, 2, 2, 36]]
STEPS = 8


class Rng:
    def __init__(self, seed):
        self.r = np.random.default_rng(seed)

    def w(self, *shape, std=0.1):
        return exact(self.r.standard_normal(shape) * std)

    def nw(self, n, std=0.1, one=1.0):
        return exact(one + self.r.standard_normal(n) * std)


def decoder_weights(s, cfg, seed):
    """transformers' tensor names, in the order named_parameters() gives them."""
    r = Rng(seed)
    mt, H, Hkv, D, n, E, V = s['mt'], s['H'], s['Hkv'], s['D'], s['n'], s['E'], s['V']
    I = cfg.get('intermediate_size') or 4 * E
    one = 0.0 if s['norm'] == 'rms1p' else 1.0  # Gemma's norms hold w with the scale 1 + w
    t = []
    if mt == 'gpt_neox':
        t.append(('gpt_neox.embed_in.weight', r.w(V, E, std=0.3)))
        for i in range(n):
            p = f'gpt_neox.layers.{i}.'
            t += [(p + 'input_layernorm.weight', r.nw(E)), (p + 'input_layernorm.bias', r.w(E, std=0.05)),
                  (p + 'post_attention_layernorm.weight', r.nw(E)), (p + 'post_attention_layernorm.bias', r.w(E, std=0.05)),
                  (p + 'attention.query_key_value.weight', r.w(3 * E, E, std=0.3)),
                  (p + 'attention.query_key_value.bias', r.w(3 * E, std=0.05)),
                  (p + 'attention.dense.weight', r.w(E, E, std=0.15)), (p + 'attention.dense.bias', r.w(E, std=0.02)),
                  (p + 'mlp.dense_h_to_4h.weight', r.w(I, E, std=0.2)), (p + 'mlp.dense_h_to_4h.bias', r.w(I, std=0.05)),
                  (p + 'mlp.dense_4h_to_h.weight', r.w(E, I, std=0.15)), (p + 'mlp.dense_4h_to_h.bias', r.w(E, std=0.02))]
        t += [('gpt_neox.final_layer_norm.weight', r.nw(E)), ('gpt_neox.final_layer_norm.bias', r.w(E, std=0.05)),
              ('embed_out.weight', r.w(V, E, std=0.3))]
        return t
    if mt == 'gpt_neo':
        t += [('transformer.wte.weight', r.w(V, E, std=0.3)),
              ('transformer.wpe.weight', r.w(cfg['max_position_embeddings'], E, std=0.1))]
        for i in range(n):
            p = f'transformer.h.{i}.'
            a = p + 'attn.attention.'
            t += [(p + 'ln_1.weight', r.nw(E)), (p + 'ln_1.bias', r.w(E, std=0.05)),
                  (a + 'k_proj.weight', r.w(E, E, std=0.12)), (a + 'v_proj.weight', r.w(E, E, std=0.15)),
                  (a + 'q_proj.weight', r.w(E, E, std=0.12)),
                  (a + 'out_proj.weight', r.w(E, E, std=0.15)), (a + 'out_proj.bias', r.w(E, std=0.02)),
                  (p + 'ln_2.weight', r.nw(E)), (p + 'ln_2.bias', r.w(E, std=0.05)),
                  (p + 'mlp.c_fc.weight', r.w(I, E, std=0.2)), (p + 'mlp.c_fc.bias', r.w(I, std=0.05)),
                  (p + 'mlp.c_proj.weight', r.w(E, I, std=0.15)), (p + 'mlp.c_proj.bias', r.w(E, std=0.02))]
        t += [('transformer.ln_f.weight', r.nw(E)), ('transformer.ln_f.bias', r.w(E, std=0.05))]
        return t
    es = 0.3  # Gemma's tied head needs the same scale as the others for logits of a few units
    t.append(('model.embed_tokens.weight', r.w(V, E, std=es)))
    qstd = 0.35 if s['qk_norm'] is None else 0.2
    for i in range(n):
        p = f'model.layers.{i}.'
        a = p + 'self_attn.'
        t.append((p + 'input_layernorm.weight', r.nw(E, one=one)))
        if mt == 'phi3':
            t.append((a + 'o_proj.weight', r.w(E, H * D, std=0.15)))
            t.append((a + 'qkv_proj.weight', r.w(H * D + 2 * Hkv * D, E, std=qstd)))
        else:
            t.append((a + 'q_proj.weight', r.w(H * D, E, std=qstd)))
            if mt == 'qwen2':
                t.append((a + 'q_proj.bias', r.w(H * D, std=0.1)))
            t.append((a + 'k_proj.weight', r.w(Hkv * D, E, std=qstd)))
            if mt == 'qwen2':
                t.append((a + 'k_proj.bias', r.w(Hkv * D, std=0.1)))
            t.append((a + 'v_proj.weight', r.w(Hkv * D, E, std=0.2)))
            if mt == 'qwen2':
                t.append((a + 'v_proj.bias', r.w(Hkv * D, std=0.05)))
            t.append((a + 'o_proj.weight', r.w(E, H * D, std=0.15)))
        if s['qk_norm']:
            t += [(a + 'q_norm.weight', r.nw(D, std=0.2, one=one)), (a + 'k_norm.weight', r.nw(D, std=0.2, one=one))]
        if mt == 'phi3':
            t += [(p + 'mlp.gate_up_proj.weight', r.w(2 * I, E, std=0.2)), (p + 'mlp.down_proj.weight', r.w(E, I, std=0.15))]
        else:
            t += [(p + 'mlp.gate_proj.weight', r.w(I, E, std=0.2)), (p + 'mlp.up_proj.weight', r.w(I, E, std=0.2)),
                  (p + 'mlp.down_proj.weight', r.w(E, I, std=0.15))]
        t.append((p + 'post_attention_layernorm.weight', r.nw(E, one=one)))
        if s['four_norms']:
            t += [(p + 'pre_feedforward_layernorm.weight', r.nw(E, one=one)),
                  (p + 'post_feedforward_layernorm.weight', r.nw(E, one=one))]
    t.append(('model.norm.weight', r.nw(E, one=one)))
    if not s['tied']:
        t.append(('lm_head.weight', r.w(V, E, std=0.3)))
    return t


TF_VERSION = '4.57.1'


def base(model_type, arch, **kw):
    c = {'model_type': model_type, 'architectures': [arch], 'vocab_size': V, 'hidden_size': E,
         'torch_dtype': None, 'transformers_version': TF_VERSION, 'bos_token_id': 1, 'eos_token_id': 2}
    c.update(kw)
    return c


def llama_like(**kw):
    c = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
             max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
             hidden_act='silu', attention_dropout=0.0, initializer_range=0.02, use_cache=True)
    c.update(kw)
    return c


# (folder, dtype, config, what it exercises)
FAMILIES = [
    ('qwen2', 'BF16', base('qwen2', 'Qwen2ForCausalLM', **llama_like(
        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False, sliding_window=None,
        max_window_layers=2)),
     'q/k/v biases, no o bias, GQA 4/2, rope_theta 1e6, tied head'),
    ('qwen3', 'BF16', base('qwen3', 'Qwen3ForCausalLM', **llama_like(
        head_dim=12, rope_theta=1000000.0, tie_word_embeddings=True, attention_bias=False,
        use_sliding_window=False, sliding_window=None, max_window_layers=2)),
     'explicit head_dim 12 (hidden/heads = 8), q_norm/k_norm RMSNorm over head_dim before RoPE, no bias, tied'),
    ('mistral', 'F16', base('mistral', 'MistralForCausalLM', **llama_like(
        head_dim=8, sliding_window=4, tie_word_embeddings=False)),
     'sliding_window 4 on every layer (texts of 12 and 5 tokens), GQA 4/2, untied'),
    ('gemma', 'BF16', base('gemma', 'GemmaForCausalLM', **llama_like(
        num_key_value_heads=1, head_dim=16, hidden_act='gelu_pytorch_tanh', hidden_activation='gelu_pytorch_tanh',
        tie_word_embeddings=True, attention_bias=False, pad_token_id=0)),
     'RMSNorm x*(1+w), embeddings * sqrt(32) rounded to bf16 (5.65625), GeGLU gelu_pytorch_tanh, head_dim 16, MQA, tied'),
    ('gemma2', 'F32', base('gemma2', 'Gemma2ForCausalLM', **llama_like(
        head_dim=8, hidden_act='gelu_pytorch_tanh', hidden_activation='gelu_pytorch_tanh', query_pre_attn_scalar=16,
        attn_logit_softcapping=5.0, final_logit_softcapping=3.0, sliding_window=4,
        layer_types=['sliding_attention', 'full_attention'], tie_word_embeddings=True, pad_token_id=0,
        cache_implementation='hybrid')),
     'query_pre_attn_scalar 16 (not head_dim 8), attn softcap 5, final softcap 3, window 4 on layer 0 only, four norms, tied'),
    ('gemma3', 'BF16', base('gemma3_text', 'Gemma3ForCausalLM', **llama_like(
        num_hidden_layers=3, num_key_value_heads=1, head_dim=16, hidden_act='gelu_pytorch_tanh',
        hidden_activation='gelu_pytorch_tanh', query_pre_attn_scalar=16, attn_logit_softcapping=None,
        final_logit_softcapping=None, sliding_window=4, sliding_window_pattern=3,
        layer_types=['sliding_attention', 'sliding_attention', 'full_attention'], rope_theta=1000000.0,
        rope_local_base_freq=10000.0, use_bidirectional_attention=False, tie_word_embeddings=True, pad_token_id=0)),
     '3 layers sliding/sliding/full (window 4), rope_local_base_freq 1e4 on local, rope_theta 1e6 on global, '
     'q_norm/k_norm (1+w), four norms, 4 heads / 1 KV head, head_dim 16, tied'),
    ('phi3', 'F16', base('phi3', 'Phi3ForCausalLM', **llama_like(
        num_key_value_heads=2, partial_rotary_factor=0.5, rms_norm_eps=1e-5, tie_word_embeddings=False,
        sliding_window=None, original_max_position_embeddings=64, resid_pdrop=0.0, embd_pdrop=0.0,
        pad_token_id=0, eos_token_id=2)),
     'fused qkv_proj [H*d | Hkv*d | Hkv*d] with GQA 4/2, fused gate_up_proj (gate first), partial_rotary_factor 0.5, untied'),
    ('gpt_neox', 'F32', base('gpt_neox', 'GPTNeoXForCausalLM', num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64, rotary_pct=0.25, rotary_emb_base=10000,
                            use_parallel_residual=True, hidden_act='gelu', layer_norm_eps=1e-5,
                            tie_word_embeddings=False, attention_bias=True, attention_dropout=0.0,
                            hidden_dropout=0.0, use_cache=True, bos_token_id=0, eos_token_id=0),
     'fused query_key_value interleaved per head, rotary_pct 0.25 (2 of 8 dims), parallel residual, LayerNorm with bias, '
     'exact gelu, untied embed_out'),
    ('gpt_neox-sequential', 'F16', base('gpt_neox', 'GPTNeoXForCausalLM', num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=128, max_position_embeddings=64, rotary_pct=0.5,
                                       rotary_emb_base=10000, use_parallel_residual=False, hidden_act='gelu',
                                       layer_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True,
                                       attention_dropout=0.0, hidden_dropout=0.0, use_cache=True,
                                       bos_token_id=0, eos_token_id=0),
     'as gpt_neox with use_parallel_residual false and rotary_pct 0.5'),
    ('gpt_neo', 'F32', base('gpt_neo', 'GPTNeoForCausalLM', num_layers=2, num_heads=4, max_position_embeddings=32,
                           attention_types=[[['global', 'local'], 1]], attention_layers=['global', 'local'],
                           window_size=4, intermediate_size=None, activation_function='gelu_new',
                           layer_norm_epsilon=1e-5, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0,
                           tie_word_embeddings=True, use_cache=True, bos_token_id=0, eos_token_id=0),
     'attention_types global/local with window_size 4 on layer 1, no 1/sqrt(d) scaling, learned positions, '
     'q/k/v without bias, out_proj with bias, tied'),
    # gemma-3-270m's attention shape (18 layers, 4 heads, 1 KV head, five sliding layers to one full)
    # at hidden 16: the model view's thumbnails, head view and head roles at 72 heads over one KV head.
    ('gemma3-mqa18', 'BF16', base('gemma3_text', 'Gemma3ForCausalLM', **llama_like(
        hidden_size=16, num_hidden_layers=18, num_key_value_heads=1, head_dim=8, intermediate_size=32,
        hidden_act='gelu_pytorch_tanh', hidden_activation='gelu_pytorch_tanh', query_pre_attn_scalar=8,
        attn_logit_softcapping=None, final_logit_softcapping=None, sliding_window=4, sliding_window_pattern=6,
        layer_types=['full_attention' if (i + 1) % 6 == 0 else 'sliding_attention' for i in range(18)],
        rope_theta=1000000.0, rope_local_base_freq=10000.0, use_bidirectional_attention=False,
        tie_word_embeddings=True, pad_token_id=0)),
     "gemma-3-270m's attention layout at hidden 16: 18 layers, 4 heads / 1 KV head, head_dim 8, "
     'sliding window 4 on five layers of six (layers 5, 11, 17 full), q/k norms, four norms, tied'),
]
# One shorter case where the default two would make expected.json large (18 layers of attentions).
CASE_IDS = {'gemma3-mqa18': [[3, 17, 42, 5, 9, 28, 11, 60, 33]]}
SIZE_LIMIT = {'gemma3-mqa18': 260_000}

TORCH_DTYPE = {'F32': 'float32', 'F16': 'float16', 'BF16': 'bfloat16'}


def result(b):
    return {'logits': b['logits'].tolist(), 'attentions': b['attentions'].tolist(),
            'hidden_states': b['hidden_states'].tolist()}


def write_family(folder, dtype, cfg, features, seed):
    cfg = dict(cfg, torch_dtype=TORCH_DTYPE[dtype])
    d = os.path.join(OUT, folder)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, 'config.json'), cfg)
    s = spec(cfg, dtype)
    tensors = decoder_weights(s, cfg, seed)
    write_safetensors(os.path.join(d, 'model.safetensors'), [(k, dtype, v) for k, v in tensors], {'format': 'pt'})
    t = read_safetensors(os.path.join(d, 'model.safetensors'))
    assert all(np.array_equal(t[k], v) for k, v in tensors)
    w = W(t, s)
    cases = []
    for ids in CASE_IDS.get(folder, TEXT_IDS):
        b = forward_batched(s, w, ids)
        check_agree(s, w, ids, b)
        case = {'ids': ids}
        case.update({k: round_floats(v) for k, v in result(b).items()})
        case['next_tokens'] = next_tokens(b['logits'][-1])
        case['greedy'] = greedy(s, w, ids, STEPS)
        cases.append(case)
    params = int(sum(v.size for _, v in tensors))  # tied heads are not stored: counted once
    expected = {'model_type': cfg['model_type'], 'architecture': cfg['architectures'][0], 'dtype': dtype,
                'dtype_files': ['model.safetensors'], 'features': features, 'parameters': params,
                'layer_types': s['kinds'], 'tensors': [k for k, _ in tensors],
                'shapes': {k: list(v.shape) for k, v in tensors},
                'embed_scale': s['embed_scale'], 'greedy_steps': STEPS, 'cases': cases}
    write_json(os.path.join(d, 'expected.json'), expected, pretty=False)
    return d, s, params


# ---- tokenizer.json ------------------------------------------------------------

FAMILY_CORPUS = ('the cat sat on the mat. the dog sat on the log. a cat is on a mat, and the dog is on the log. '
                 'attention is all you need, and the heads attend to the tokens.')
# Families whose tokenizer's post-processor adds a BOS token (Gemma's, Mistral's
# and Phi-3's, Llama-style tokenizers do; Qwen's, GPT-NeoX's and GPT-Neo's do not).
ADDS_BOS = {'gemma', 'gemma2', 'gemma3_text', 'mistral', 'phi3'}


def family_tokenizer(cfg):
    """A SentencePiece-style BPE (Prepend/Replace '▁' normalizer, as Llama's
    and Gemma's tokenizer.json) of exactly vocab_size (64) ids: the special
    tokens at the config's bos/eos ids, <unk>, '▁', a-z, '.', ',' and merges
    learned from FAMILY_CORPUS. No byte fallback (its 256 byte tokens would
    not fit in 64 ids): a character outside the alphabet is <unk>."""
    bos, eos = cfg['bos_token_id'], cfg['eos_token_id']
    specials = {}
    if bos == eos:
        specials[bos] = '<|endoftext|>'
    else:
        specials[bos], specials[eos] = '<bos>', '<eos>'
    for name in ('<pad>', '<unk>'):
        i = 0
        while i in specials:
            i += 1
        if name == '<pad>' and bos == eos:
            continue
        specials[i] = name
    vocab = {specials[i]: i for i in sorted(specials)}
    assert sorted(vocab.values()) == list(range(len(vocab)))
    for ch in ['▁'] + [chr(c) for c in range(ord('a'), ord('z') + 1)] + ['.', ',']:
        vocab[ch] = len(vocab)
    words = {}
    for w in re.findall('▁[^▁]*', '▁' + FAMILY_CORPUS.replace(' ', '▁')):
        words[tuple(w)] = words.get(tuple(w), 0) + 1
    merges = []
    for a, b in learn_merges(words, V):
        if len(vocab) >= V:
            break
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append((a, b))
    assert len(vocab) == V, len(vocab)
    added = [{'id': i, 'content': t, 'single_word': False, 'lstrip': False, 'rstrip': False,
              'normalized': False, 'special': True} for i, t in sorted(specials.items())]
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': {'type': 'Sequence', 'normalizers': [
            {'type': 'Prepend', 'prepend': '▁'},
            {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '▁'}]},
        'pre_tokenizer': None,
        'post_processor': None,
        'decoder': {'type': 'Sequence', 'decoders': [
            {'type': 'Replace', 'pattern': {'String': '▁'}, 'content': ' '},
            {'type': 'Fuse'},
            {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}]},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': True, 'byte_fallback': False,
                  'vocab': vocab, 'merges': [a + ' ' + b for a, b in merges]},
    }
    if cfg['model_type'] in ADDS_BOS:
        b = specials[bos]
        tok['post_processor'] = {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': b, 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': b, 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': b, 'type_id': 1}}, {'Sequence': {'id': 'B', 'type_id': 1}}],
            'special_tokens': {b: {'id': b, 'ids': [bos], 'tokens': [b]}}}
    return tok


def write_tokenizers():
    for folder, _, cfg, _ in FAMILIES:
        write_json(os.path.join(OUT, folder, 'tokenizer.json'), family_tokenizer(cfg))


def generate():
    rows = []
    for j, (folder, dtype, cfg, features) in enumerate(FAMILIES):
        d, s, params = write_family(folder, dtype, cfg, features, 20261202 + j)
        write_json(os.path.join(d, 'tokenizer.json'), family_tokenizer(cfg))
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        assert size < SIZE_LIMIT.get(folder, 200_000), (folder, size)
        rows.append((folder, dtype, params, size))
        print(f'{folder:22s} {dtype:5s} {params:7d} params {size:7d} bytes  batched == cached (1e-10)')
    return rows


def forward_folder(folder, ids):
    """The float64 reference of any folder of these families (config.json +
    model.safetensors), both formulations checked against each other."""
    with open(os.path.join(folder, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    with open(os.path.join(folder, 'model.safetensors'), 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        hdr = json.loads(f.read(n))
    dtype = next(v['dtype'] for k, v in hdr.items() if k != '__metadata__')
    s = spec(cfg, dtype)
    w = W(read_safetensors(os.path.join(folder, 'model.safetensors')), s)
    b = forward_batched(s, w, ids)
    check_agree(s, w, ids, b)
    out = {'ids': ids}
    out.update({k: round_floats(v) for k, v in result(b).items()})
    out['next_tokens'] = next_tokens(b['logits'][-1])
    return out


def main(argv):
    if argv[1:] == ['generate']:
        generate()
        return 0
    if argv[1:] == ['tokenizers']:
        write_tokenizers()
        return 0
    if len(argv) == 5 and argv[1] == 'forward' and argv[3] == '--ids':
        print(json.dumps(forward_folder(argv[2], [int(x) for x in argv[4].split(',')]), separators=(',', ':')))
        return 0
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
