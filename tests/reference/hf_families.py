#!/usr/bin/python3
"""Float64 references of the decoder families beyond gpt2/llama/bert (issue
32), and their tiny checkpoints in tests/golden/models/<family>/.

numpy only, independent of attention-lab (nothing from web/, src/ or
bindings/). The safetensors writer, the float64 blocks, the tokenizer
builder and the folder writer come from tests/reference/hf_models.py, whose
own `generate` output this file does not touch. Every folder's reference is
computed twice, in two independent formulations that must agree to 1e-10:

  batched   hf_models.forward: the whole sequence at once, a causal mask
  cached    this file's forward_cached: one position at a time against a
            key/value cache (no mask: a row sees the cache it has)

Families (semantics from transformers' modeling files, eval mode, eager
attention):

  qwen2  Qwen2ForCausalLM (models/qwen2/modeling_qwen2.py)
         Llama's block graph with Qwen2Attention's projections:
         q_proj/k_proj/v_proj `bias=True`, o_proj `bias=False`; Qwen2MLP
         without biases; Qwen2RMSNorm as LlamaRMSNorm; RoPE rotate_half with
         rope_theta; GQA (repeat_kv). Layers are "sliding_attention" only
         when use_sliding_window is true (Qwen2Config.layer_types), which the
         Qwen2.5 checkpoints leave false. The head is tied here
         (tie_word_embeddings, as Qwen2.5-0.5B).

Run:
  /usr/bin/python3 tests/reference/hf_families.py generate
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_models as hm  # noqa: E402

rng = np.random.default_rng(20261202)


def w(*shape, std=0.1):
    return hm.exact(rng.standard_normal(shape) * std)


def norm_w(n, std=0.1):
    return hm.exact(1.0 + rng.standard_normal(n) * std)


# ---- the second formulation: one position at a time with a KV cache ---------------

def forward_cached(cfg, tensors, ids):
    """The llama-family decoder (llama, qwen2), position by position: at step
    p the new row's q, k, v (RoPE at position p) are computed, k and v are
    appended to the layer's cache, and q attends over the cache 0..p."""
    t = hm.Tensors(tensors, [''])
    E, H = cfg['hidden_size'], cfg['num_attention_heads']
    Hkv = cfg.get('num_key_value_heads') or H
    D = cfg.get('head_dim') or E // H
    eps = cfg.get('rms_norm_eps', 1e-6)
    theta = float(cfg.get('rope_theta', 10000.0))
    f = hm.act(cfg.get('hidden_act', 'silu'))
    N, L = cfg['num_hidden_layers'], len(ids)
    emb = t.get('model.embed_tokens.weight')
    head = emb if cfg.get('tie_word_embeddings', False) else t.get('lm_head.weight')
    cache = [([], []) for _ in range(N)]  # per layer: lists of [Hkv, D] rows
    logits = np.zeros((L, head.shape[0]))
    atts = [np.zeros((H, L, L)) for _ in range(N)]
    states = [np.zeros((L, E)) for _ in range(N + 1)]

    def lin(a, name):
        b = t.get(name + '.bias', optional=True)
        y = t.get(name + '.weight') @ a
        return y + b if b is not None else y

    def rot(x, p):  # x [h, D] at position p: rotate_half pairs i and i + D/2
        inv = 1.0 / theta ** (np.arange(0, D, 2, dtype=np.float64) / D)
        ang = np.concatenate([p * inv, p * inv])
        return x * np.cos(ang) + np.concatenate([-x[:, D // 2:], x[:, :D // 2]], axis=1) * np.sin(ang)

    for p in range(L):
        x = emb[ids[p]].copy()
        for i in range(N):
            states[i][p] = x
            pre = f'model.layers.{i}.'
            a = hm.rms_norm(x, t.get(pre + 'input_layernorm.weight'), eps)
            q = rot(lin(a, pre + 'self_attn.q_proj').reshape(H, D), p)
            cache[i][0].append(rot(lin(a, pre + 'self_attn.k_proj').reshape(Hkv, D), p))
            cache[i][1].append(lin(a, pre + 'self_attn.v_proj').reshape(Hkv, D))
            K, V = np.stack(cache[i][0], axis=1), np.stack(cache[i][1], axis=1)  # [Hkv, p+1, D]
            ctx = np.zeros((H, D))
            for h in range(H):
                g = h // (H // Hkv)
                s = K[g] @ q[h] * D ** -0.5
                e = np.exp(s - s.max())
                pr = e / e.sum()
                atts[i][h, p, :p + 1] = pr
                ctx[h] = pr @ V[g]
            x = x + lin(ctx.reshape(H * D), pre + 'self_attn.o_proj')
            m = hm.rms_norm(x, t.get(pre + 'post_attention_layernorm.weight'), eps)
            x = x + lin(f(lin(m, pre + 'mlp.gate_proj')) * lin(m, pre + 'mlp.up_proj'), pre + 'mlp.down_proj')
        h_out = hm.rms_norm(x, t.get('model.norm.weight'), eps)
        states[N][p] = h_out
        logits[p] = head @ h_out
    return {'logits': logits[None], 'attentions': [a[None] for a in atts], 'hidden_states': states[N][None],
            'all_hidden_states': [s[None] for s in states]}


def check_two_ways(folder, ids):
    cfg, tensors = hm.load_folder(folder)
    a = hm.forward(folder, ids)
    b = forward_cached(cfg, tensors, ids)
    worst = 0.0
    for key in ('logits', 'hidden_states'):
        worst = max(worst, float(np.max(np.abs(a[key] - b[key]))))
    for x, y in zip(a['attentions'], b['attentions']):
        worst = max(worst, float(np.max(np.abs(x - y))))
    for x, y in zip(a['all_hidden_states'], b['all_hidden_states']):
        worst = max(worst, float(np.max(np.abs(x - y))))
    assert worst < 1e-10, (folder, worst)
    return worst


# ---- qwen2 ----------------------------------------------------------------------------

# Qwen2's pre-tokenizer (its tokenizer.json: a Split on this pattern, then
# ByteLevel without its own regex). For the ASCII letters, spaces and
# punctuation of the texts below it splits as GPT-2's pattern does, so
# hf_models' byte-level BPE encoder gives the ids; the node check confirms.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def qwen2_tokenizer():
    tok, enc, eot = hm.gpt2_tokenizer()
    tok['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [
        {'type': 'Split', 'pattern': {'Regex': QWEN2_SPLIT}, 'behavior': 'Isolated', 'invert': False},
        {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}]}
    tok['post_processor'] = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}
    tok['decoder'] = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}
    tok['added_tokens'][0]['normalized'] = False
    return tok, enc, eot


def qwen2_weights(V, E=32, H=4, Hkv=2, I=64, layers=2):
    D = E // H
    t = [('model.embed_tokens.weight', w(V, E, std=0.2))]
    for i in range(layers):
        p = f'model.layers.{i}.'
        stds = hm.head_stds(H, 0.4 - 0.1 * i)
        wq = np.concatenate([w(D, E, std=s) for s in stds])
        wk = np.concatenate([w(D, E, std=stds[j * (H // Hkv)]) for j in range(Hkv)])
        t += [(p + 'input_layernorm.weight', norm_w(E)),
              (p + 'self_attn.q_proj.weight', wq), (p + 'self_attn.q_proj.bias', w(H * D, std=0.1)),
              (p + 'self_attn.k_proj.weight', wk), (p + 'self_attn.k_proj.bias', w(Hkv * D, std=0.1)),
              (p + 'self_attn.v_proj.weight', w(Hkv * D, E, std=0.15)), (p + 'self_attn.v_proj.bias', w(Hkv * D, std=0.05)),
              (p + 'self_attn.o_proj.weight', w(E, H * D, std=0.1)),
              (p + 'mlp.gate_proj.weight', w(I, E, std=0.15)), (p + 'mlp.up_proj.weight', w(I, E, std=0.15)),
              (p + 'mlp.down_proj.weight', w(E, I, std=0.1)),
              (p + 'post_attention_layernorm.weight', norm_w(E))]
    t += [('model.norm.weight', norm_w(E))]
    return t


def qwen2_config(V, eot):
    return {'architectures': ['Qwen2ForCausalLM'], 'attention_dropout': 0.0, 'bos_token_id': eot,
            'eos_token_id': eot, 'hidden_act': 'silu', 'hidden_size': 32, 'initializer_range': 0.02,
            'intermediate_size': 64, 'max_position_embeddings': 64, 'max_window_layers': 2,
            'model_type': 'qwen2', 'num_attention_heads': 4, 'num_hidden_layers': 2, 'num_key_value_heads': 2,
            'rms_norm_eps': 1e-06, 'rope_scaling': None, 'rope_theta': 1000000.0, 'sliding_window': 32,
            'tie_word_embeddings': True, 'torch_dtype': 'bfloat16', 'transformers_version': hm.TF_VERSION,
            'use_cache': True, 'use_sliding_window': False, 'vocab_size': V}


def generate():
    hm.FAMILIES.setdefault('qwen2', hm.forward_llama)  # the batched formulation: llama's, biases where present
    out = []
    tok, enc, eot = qwen2_tokenizer()
    V = eot + 1
    texts = ['The cat sat on the mat.', 'Attention is all you need', 'the dog sat on the log, and the cat']
    seqs = [(texts[0], enc(texts[0])), (texts[1], enc(texts[1]) + [eot]), (texts[2], enc(texts[2]))]
    for _, ids in seqs:
        assert 5 <= len(ids) <= 12, ids
    d = hm.write_model('qwen2', qwen2_weights(V), qwen2_config(V, eot), tok, seqs)
    worst = max(check_two_ways(d, ids) for _, ids in seqs)
    checked = hm.check_tokenizers({d: {'texts': texts + ["It's 2024: 3 cats!"], 'expect': {s: enc(s) for s in texts},
                                       'roundtrip': lambda s: s}})
    out.append(f'qwen2 (vocab {V}; batched vs cached max |d| {worst:.1e}; tokenizer '
               f'{"checked" if checked else "NOT checked"})')
    print('wrote ' + ', '.join(out))


if __name__ == '__main__':
    if sys.argv[1:] == ['generate']:
        generate()
    else:
        print(__doc__)
        sys.exit(2)
