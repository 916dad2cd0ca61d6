#!/usr/bin/python3
"""Float64 numpy references and tiny golden checkpoints of the encoders of
issue 34 item 1: distilbert, roberta, xlm-roberta and modernbert (masked LMs).

    /usr/bin/python3 tests/reference/hf_encoders.py generate
    /usr/bin/python3 tests/reference/hf_encoders.py forward tests/golden/models/roberta --ids 0,5,7,2

writes tests/golden/models/{distilbert,roberta,xlm-roberta,modernbert}/{config.json,
tokenizer.json, model.safetensors (F32), model-f16.safetensors or model-bf16.safetensors (the same values in 16 bits),
expected.json, tokenizer-samples.json}. numpy only; nothing here reads web/,
src/ or bindings/ (helpers of tests/reference/hf_models.py: safetensors, the
bfloat16-exact draws, the erf GELU, the BPE learner, bert's WordPiece
tokenizer). Every number is computed twice, in two independent
formulations, and the generator asserts that they agree to 1e-10:

  * batched: matrices over the whole sequence, position ids from
    create_position_ids_from_input_ids (a cumulative sum over the non-pad
    mask, as transformers computes them);
  * rowwise: one query row and one head at a time with explicit dot products,
    the LayerNorm from sums of squares, position ids by the closed form
    padding_idx + 1 + i (RoBERTa) or i (DistilBERT); ModernBERT's RoPE as
    explicit (d, d + D/2) rotations and its window as the loop over the keys
    j in [i - local_attention // 2, i + local_attention // 2] (the batched
    form adds transformers' sliding_window_mask, finfo.min outside).

Semantics (transformers v4.x, eval mode, eager attention):

  distilbert   modeling_distilbert.py: Embeddings = LayerNorm(word[ids] +
               position[0..L-1]) (nn.LayerNorm(dim, eps=1e-12), no token
               types); TransformerBlock: sa_layer_norm(out_lin(attn) + x),
               output_layer_norm(lin2(act(lin1(h))) + h), q / sqrt(D) before
               the product, eps 1e-12 everywhere; DistilBertForMaskedLM:
               vocab_projector(vocab_layer_norm(act(vocab_transform(h)))),
               act = config.activation, vocab_projector tied to the word
               embeddings.
  roberta      modeling_roberta.py: RobertaEmbeddings = LayerNorm(word[ids] +
               token_type[0] + position[create_position_ids_from_input_ids])
               with mask = ids != padding_idx, position = cumsum(mask) * mask +
               padding_idx; BertLayer's blocks (layer_norm_eps); RobertaLMHead
               = decoder(layer_norm(gelu(dense(h)))) + bias, gelu the exact
               erf form (activations.gelu, not hidden_act), decoder tied to
               the word embeddings.
  xlm-roberta  modeling_xlm_roberta.py: RoBERTa's classes copied
               (Roberta->XLMRoberta), base_model_prefix "roberta".
  modernbert   modeling_modernbert.py (configuration_modernbert.py for the
               defaults): ModernBertEmbeddings = norm(tok_embeddings[ids]);
               ModernBertEncoderLayer: h = x + attn(attn_norm(x)) with
               attn_norm nn.Identity in layer 0, x' = h + mlp(mlp_norm(h));
               ModernBertAttention: Wqkv viewed [L, 3, H, D], rotate_half
               RoPE at positions 0..L-1 with global_rope_theta on global
               layers and local_rope_theta (None: the global) on layers with
               layer_id % global_attn_every_n_layers != 0, whose eager mask
               is _update_attention_mask's |i - j| <= local_attention // 2;
               scores * head_dim**-0.5; Wo; ModernBertMLP: input, gate =
               Wi(x).chunk(2), Wo(act(input) * gate), act hidden_activation;
               final_norm; ModernBertPredictionHead norm(act(dense(h))) with
               classifier_activation; decoder tied to tok_embeddings, bias
               decoder.bias. Every LayerNorm has norm_eps and a bias only
               with norm_bias; Linear biases with attention_bias, mlp_bias,
               classifier_bias (absent tensors are read as no bias).
               hidden_states (output_hidden_states) end with the last
               layer's output before final_norm, as transformers gives them.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import (OUT, GPT2_SPLIT, BERT_WORDS, act, bert_tokenizer, bpe, bytes_to_unicode,  # noqa: E402
                       check_tokenizers, exact, layer_norm, learn_merges, read_safetensors, rope, round_floats,
                       softmax, write_json, write_safetensors)

TOL = 1e-10
TF_VERSION = '4.46.3'
FOLDERS = ('distilbert', 'roberta', 'xlm-roberta', 'modernbert')
rng = np.random.default_rng(20261202)


# ---- reading a folder ----------------------------------------------------------------

def load(folder, weights=None):
    with open(os.path.join(folder, 'config.json')) as f:
        cfg = json.load(f)
    t = read_safetensors(os.path.join(folder, weights or 'model.safetensors'))
    return cfg, {k: np.asarray(v, dtype=np.float64) for k, v in t.items()}


def spec(cfg, t):
    """The family's config keys and tensor names, read as transformers does."""
    mt = cfg['model_type']
    if mt == 'distilbert':
        if cfg.get('activation', 'gelu') not in ('gelu', 'relu'):
            raise NotImplementedError(cfg['activation'])
        p = 'distilbert.' if 'distilbert.embeddings.word_embeddings.weight' in t else ''
        layer = lambda i: f'{p}transformer.layer.{i}.'  # noqa: E731
        return {
            'E': cfg['dim'], 'H': cfg['n_heads'], 'N': cfg['n_layers'], 'eps': 1e-12, 'head_eps': 1e-12,
            'act': act(cfg.get('activation', 'gelu')), 'head_act': act(cfg.get('activation', 'gelu')),
            'word': t[p + 'embeddings.word_embeddings.weight'], 'pos': t[p + 'embeddings.position_embeddings.weight'],
            'type0': None, 'emb_ln': p + 'embeddings.LayerNorm', 'pad': None,
            'names': lambda i: {'q': layer(i) + 'attention.q_lin', 'k': layer(i) + 'attention.k_lin',
                                'v': layer(i) + 'attention.v_lin', 'o': layer(i) + 'attention.out_lin',
                                'ln1': layer(i) + 'sa_layer_norm', 'fc': layer(i) + 'ffn.lin1',
                                'proj': layer(i) + 'ffn.lin2', 'ln2': layer(i) + 'output_layer_norm'},
            'head': ('vocab_transform', 'vocab_layer_norm', 'vocab_projector.bias') if 'vocab_transform.weight' in t else None,
        }
    if mt in ('roberta', 'xlm-roberta'):
        p = 'roberta.' if 'roberta.embeddings.word_embeddings.weight' in t else ''
        layer = lambda i: f'{p}encoder.layer.{i}.'  # noqa: E731
        eps = cfg.get('layer_norm_eps', 1e-12)
        return {
            'E': cfg['hidden_size'], 'H': cfg['num_attention_heads'], 'N': cfg['num_hidden_layers'],
            'eps': eps, 'head_eps': eps, 'act': act(cfg.get('hidden_act', 'gelu')), 'head_act': act('gelu'),
            'word': t[p + 'embeddings.word_embeddings.weight'], 'pos': t[p + 'embeddings.position_embeddings.weight'],
            'type0': t[p + 'embeddings.token_type_embeddings.weight'][0], 'emb_ln': p + 'embeddings.LayerNorm',
            'pad': cfg.get('pad_token_id', 1),
            'names': lambda i: {'q': layer(i) + 'attention.self.query', 'k': layer(i) + 'attention.self.key',
                                'v': layer(i) + 'attention.self.value', 'o': layer(i) + 'attention.output.dense',
                                'ln1': layer(i) + 'attention.output.LayerNorm', 'fc': layer(i) + 'intermediate.dense',
                                'proj': layer(i) + 'output.dense', 'ln2': layer(i) + 'output.LayerNorm'},
            'head': ('lm_head.dense', 'lm_head.layer_norm', 'lm_head.bias') if 'lm_head.dense.weight' in t else None,
        }
    raise NotImplementedError(f'model_type {mt!r}')


# ---- formulation 1: batched --------------------------------------------------------------

def create_position_ids_from_input_ids(ids, padding_idx):
    """modeling_roberta.py: mask = ids.ne(padding_idx); (cumsum(mask) * mask) + padding_idx."""
    mask = (ids != padding_idx).astype(np.int64)
    return np.cumsum(mask) * mask + padding_idx


def forward_batched(cfg, t, ids):
    s = spec(cfg, t)
    E, H = s['E'], s['H']
    D = E // H
    L = len(ids)
    lin = lambda a, n: a @ t[n + '.weight'].T + t[n + '.bias']  # noqa: E731
    ln = lambda a, n, eps: layer_norm(a, t[n + '.weight'], t[n + '.bias'], eps)  # noqa: E731
    pos = np.arange(L) if s['pad'] is None else create_position_ids_from_input_ids(ids, s['pad'])
    x = s['word'][ids] + s['pos'][pos]
    if s['type0'] is not None:
        x = x + s['type0']
    x = ln(x, s['emb_ln'], s['eps'])
    states, atts = [x], []
    for i in range(s['N']):
        n = s['names'](i)
        q, k, v = (lin(x, n[c]).reshape(L, H, D).transpose(1, 0, 2) for c in 'qkv')
        p = softmax((q / math.sqrt(D)) @ k.transpose(0, 2, 1))
        atts.append(p)
        ctx = (p @ v).transpose(1, 0, 2).reshape(L, E)
        h = ln(lin(ctx, n['o']) + x, n['ln1'], s['eps'])
        x = ln(lin(s['act'](lin(h, n['fc'])), n['proj']) + h, n['ln2'], s['eps'])
        states.append(x)
    logits = None
    if s['head']:
        dense, norm, bias = s['head']
        y = ln(s['head_act'](lin(x, dense)), norm, s['head_eps'])
        logits = y @ s['word'].T + t[bias]
    return {'logits': logits, 'attentions': atts, 'hidden_states': x, 'all_hidden_states': states}


# ---- formulation 2: one row and one head at a time -------------------------------------------

def ln_row(x, g, b, eps):
    n = len(x)
    mu = sum(x) / n
    var = sum((v - mu) * (v - mu) for v in x) / n
    return np.array([(v - mu) / math.sqrt(var + eps) for v in x]) * g + b


def forward_rowwise(cfg, t, ids):
    s = spec(cfg, t)
    E, H = s['E'], s['H']
    D = E // H
    L = len(ids)
    W = lambda n: (t[n + '.weight'], t[n + '.bias'])  # noqa: E731

    def lin(row, n):
        w, b = W(n)
        return np.array([float(np.dot(w[o], row)) + b[o] for o in range(w.shape[0])])

    def ln(row, n, eps):
        g, b = W(n)
        return ln_row(row, g, b, eps)

    if s['pad'] is not None:
        assert s['pad'] not in ids, 'the rowwise form takes unpadded input'
    rows = []
    for i, tok in enumerate(ids):
        pos = i if s['pad'] is None else s['pad'] + 1 + i
        e = s['word'][tok] + s['pos'][pos]
        if s['type0'] is not None:
            e = e + s['type0']
        rows.append(ln(e, s['emb_ln'], s['eps']))
    states, atts = [np.array(rows)], []
    for li in range(s['N']):
        n = s['names'](li)
        q = [lin(r, n['q']) for r in rows]
        k = [lin(r, n['k']) for r in rows]
        v = [lin(r, n['v']) for r in rows]
        probs = np.zeros((H, L, L))
        ctx = [np.zeros(E) for _ in range(L)]
        for h in range(H):
            sl = slice(h * D, (h + 1) * D)
            for i in range(L):
                sc = [float(np.dot(q[i][sl], k[j][sl])) / math.sqrt(D) for j in range(L)]
                m = max(sc)
                ex = [math.exp(c - m) for c in sc]
                z = sum(ex)
                for j in range(L):
                    probs[h, i, j] = ex[j] / z
                    ctx[i][sl] += probs[h, i, j] * v[j][sl]
        atts.append(probs)
        new = []
        for i in range(L):
            hrow = ln(lin(ctx[i], n['o']) + rows[i], n['ln1'], s['eps'])
            f = lin(hrow, n['fc'])
            f = np.array([float(s['act'](np.array([c]))[0]) for c in f])
            new.append(ln(lin(f, n['proj']) + hrow, n['ln2'], s['eps']))
        rows = new
        states.append(np.array(rows))
    logits = None
    if s['head']:
        dense, norm, bias = s['head']
        out = []
        for r in rows:
            y = lin(r, dense)
            y = np.array([float(s['head_act'](np.array([c]))[0]) for c in y])
            y = ln(y, norm, s['head_eps'])
            out.append(np.array([float(np.dot(s['word'][j], y)) for j in range(s['word'].shape[0])]) + t[bias])
        logits = np.array(out)
    return {'logits': logits, 'attentions': atts, 'hidden_states': np.array(rows), 'all_hidden_states': states}


# ---- modernbert: both formulations ----------------------------------------------------------

def mb_spec(cfg, t):
    N = cfg['num_hidden_layers']
    every = cfg.get('global_attn_every_n_layers', 3)
    g_theta = cfg.get('global_rope_theta', 160000.0)
    l_theta = cfg.get('local_rope_theta', 10000.0)
    if cfg.get('layer_types') is not None:
        assert cfg['layer_types'] == ['sliding_attention' if i % every else 'full_attention' for i in range(N)]
    rp = cfg.get('rope_parameters') or {}
    g_theta = (rp.get('full_attention') or {}).get('rope_theta', g_theta)
    l_theta = (rp.get('sliding_attention') or {}).get('rope_theta', l_theta)
    p = 'model.' if 'model.embeddings.tok_embeddings.weight' in t else ''
    E, H = cfg['hidden_size'], cfg['num_attention_heads']
    return {
        'E': E, 'H': H, 'D': E // H, 'N': N, 'I': cfg['intermediate_size'], 'p': p,
        'local': [i % every != 0 for i in range(N)], 'half': cfg.get('local_attention', 128) // 2,
        'theta': [(l_theta if l_theta is not None else g_theta) if i % every else g_theta for i in range(N)],
        'eps': cfg.get('norm_eps', 1e-5), 'act': act(cfg.get('hidden_activation', 'gelu')),
        'head_act': act(cfg.get('classifier_activation', 'gelu')),
        'word': t[p + 'embeddings.tok_embeddings.weight'],
        'decoder': t.get('decoder.weight', t[p + 'embeddings.tok_embeddings.weight'])
        if not cfg.get('tie_word_embeddings', True) else t[p + 'embeddings.tok_embeddings.weight'],
        'head': 'head.dense.weight' in t,
    }


def modernbert_batched(cfg, t, ids):
    s = mb_spec(cfg, t)
    E, H, D, N, I, p = s['E'], s['H'], s['D'], s['N'], s['I'], s['p']
    L = len(ids)
    zero = np.zeros(E)

    def lin(a, n):
        y = a @ t[n + '.weight'].T
        return y + t[n + '.bias'] if n + '.bias' in t else y

    def ln(a, n):
        return layer_norm(a, t[n + '.weight'], t.get(n + '.bias', zero), s['eps'])

    x = ln(s['word'][ids], p + 'embeddings.norm')
    pos = np.arange(L)
    dist = np.abs(pos[:, None] - pos[None, :])
    # _update_attention_mask: the global mask is 0 (no padding); the sliding one finfo.min outside the window
    window = np.where(dist <= s['half'], 0.0, np.finfo(np.float64).min)
    states, atts = [], []
    for i in range(N):
        states.append(x)
        q_in = x if i == 0 else ln(x, f'{p}layers.{i}.attn_norm')
        qkv = lin(q_in, f'{p}layers.{i}.attn.Wqkv').reshape(L, 3, H, D).transpose(1, 2, 0, 3)  # [3, H, L, D]
        q, k, v = qkv[0], qkv[1], qkv[2]
        q, k = rope(q, s['theta'][i], pos), rope(k, s['theta'][i], pos)
        sc = (q @ k.transpose(0, 2, 1)) * D ** -0.5
        if s['local'][i]:
            sc = sc + window
        pr = softmax(sc)
        atts.append(pr)
        ctx = (pr @ v).transpose(1, 0, 2).reshape(L, E)
        x = x + lin(ctx, f'{p}layers.{i}.attn.Wo')
        wi = lin(ln(x, f'{p}layers.{i}.mlp_norm'), f'{p}layers.{i}.mlp.Wi')
        inp, gate = wi[:, :I], wi[:, I:]
        x = x + lin(s['act'](inp) * gate, f'{p}layers.{i}.mlp.Wo')
    states.append(x)
    hidden = ln(x, p + 'final_norm')
    logits = None
    if s['head']:
        y = ln(s['head_act'](lin(hidden, 'head.dense')), 'head.norm')
        logits = y @ s['decoder'].T
        if 'decoder.bias' in t:
            logits = logits + t['decoder.bias']
    return {'logits': logits, 'attentions': atts, 'hidden_states': hidden, 'all_hidden_states': states}


def modernbert_rowwise(cfg, t, ids):
    s = mb_spec(cfg, t)
    E, H, D, N, I, p = s['E'], s['H'], s['D'], s['N'], s['I'], s['p']
    L = len(ids)

    def lin(row, n):
        w = t[n + '.weight']
        b = t.get(n + '.bias')
        return np.array([float(np.dot(w[o], row)) + (b[o] if b is not None else 0.0) for o in range(w.shape[0])])

    def ln(row, n):
        b = t.get(n + '.bias')
        return ln_row(row, t[n + '.weight'], b if b is not None else 0.0, s['eps'])

    def rot(vec, pos, theta):  # pairs (d, d + D/2) at angle pos * theta^(-2d/D)
        out = np.array(vec, dtype=np.float64)
        for d in range(D // 2):
            a = pos * theta ** (-2.0 * d / D)
            c, sn = math.cos(a), math.sin(a)
            out[d] = vec[d] * c - vec[d + D // 2] * sn
            out[d + D // 2] = vec[d + D // 2] * c + vec[d] * sn
        return out

    def gelu_list(f, fn):
        return np.array([float(fn(np.array([c]))[0]) for c in f])

    rows = [ln(s['word'][tok], p + 'embeddings.norm') for tok in ids]
    states, atts = [], []
    for li in range(N):
        states.append(np.array(rows))
        n = f'{p}layers.{li}.'
        qkv = [lin(r if li == 0 else ln(r, n + 'attn_norm'), n + 'attn.Wqkv') for r in rows]
        probs = np.zeros((H, L, L))
        ctx = [np.zeros(E) for _ in range(L)]
        for h in range(H):
            q = [rot(qkv[i][h * D:(h + 1) * D], i, s['theta'][li]) for i in range(L)]
            k = [rot(qkv[j][E + h * D:E + (h + 1) * D], j, s['theta'][li]) for j in range(L)]
            v = [qkv[j][2 * E + h * D:2 * E + (h + 1) * D] for j in range(L)]
            for i in range(L):
                keys = [j for j in range(L) if not s['local'][li] or abs(i - j) <= s['half']]
                sc = {j: float(np.dot(q[i], k[j])) / math.sqrt(D) for j in keys}
                m = max(sc.values())
                z = sum(math.exp(c - m) for c in sc.values())
                for j in keys:
                    probs[h, i, j] = math.exp(sc[j] - m) / z
                    ctx[i][h * D:(h + 1) * D] += probs[h, i, j] * v[j]
        atts.append(probs)
        new = []
        for i in range(L):
            hrow = rows[i] + lin(ctx[i], n + 'attn.Wo')
            wi = lin(ln(hrow, n + 'mlp_norm'), n + 'mlp.Wi')
            g = gelu_list(wi[:I], s['act']) * wi[I:]
            new.append(hrow + lin(g, n + 'mlp.Wo'))
        rows = new
    states.append(np.array(rows))
    hidden = [ln(r, p + 'final_norm') for r in rows]
    logits = None
    if s['head']:
        out = []
        for r in hidden:
            y = ln(gelu_list(lin(r, 'head.dense'), s['head_act']), 'head.norm')
            b = t.get('decoder.bias')
            out.append(np.array([float(np.dot(s['decoder'][j], y)) + (b[j] if b is not None else 0.0)
                                 for j in range(s['decoder'].shape[0])]))
        logits = np.array(out)
    return {'logits': logits, 'attentions': atts, 'hidden_states': np.array(hidden), 'all_hidden_states': states}


def forward(folder, ids, weights=None):
    cfg, t = load(folder, weights)
    ids = np.asarray(ids, dtype=np.int64)
    mb = cfg['model_type'] == 'modernbert'
    a = (modernbert_batched if mb else forward_batched)(cfg, t, ids)
    b = (modernbert_rowwise if mb else forward_rowwise)(cfg, t, ids)
    for key in ('logits', 'hidden_states'):
        if a[key] is not None:
            assert np.max(np.abs(a[key] - b[key])) < TOL, (folder, key)
    for x, y in zip(a['attentions'] + a['all_hidden_states'], b['attentions'] + b['all_hidden_states']):
        assert np.max(np.abs(x - y)) < TOL, folder
    return a


# ---- tokenizers ---------------------------------------------------------------------------

def added(tid, content, lstrip=False):
    return {'id': tid, 'content': content, 'single_word': False, 'lstrip': lstrip, 'rstrip': False,
            'normalized': False, 'special': True}


ROBERTA_CORPUS = ('The cat sat on the mat. The dog sat on the log. '
                  'Attention is all you need, and the cat is on the mat with the dog.')


def roberta_tokenizer():
    """RoBERTa's tokenizer.json layout: byte-level BPE, <s> <pad> </s> <unk>
    first, <mask> last (lstrip), RobertaProcessing <s> $A </s>."""
    table = bytes_to_unicode()
    b2u = dict(table)
    words = {}
    for piece in GPT2_SPLIT.findall(ROBERTA_CORPUS):
        w = tuple(b2u[b] for b in piece.encode('utf-8'))
        words[w] = words.get(w, 0) + 1
    merges = learn_merges(words, 40)
    specials = ['<s>', '<pad>', '</s>', '<unk>']
    vocab = {s: i for i, s in enumerate(specials)}
    for _, u in table:
        vocab[u] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    mask = len(vocab)
    vocab['<mask>'] = mask
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(i, s) for i, s in enumerate(specials)] + [added(mask, '<mask>', lstrip=True)],
        'normalizer': None,
        'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True},
        'post_processor': {'type': 'RobertaProcessing', 'sep': ['</s>', 2], 'cls': ['<s>', 0],
                           'trim_offsets': True, 'add_prefix_space': False},
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': '',
                  'end_of_word_suffix': '', 'fuse_unk': False, 'byte_fallback': False,
                  'vocab': vocab, 'merges': [a + ' ' + b for a, b in merges]},
    }
    ranks = {m: r for r, m in enumerate(merges)}

    def encode(text):  # ASCII; <mask> whole, eating the space before it (lstrip)
        ids = [0]
        parts = text.split('<mask>')
        for n, part in enumerate(parts):
            if n < len(parts) - 1:
                part = part.rstrip()
            for piece in GPT2_SPLIT.findall(part):
                ids += [vocab[s] for s in bpe([b2u[b] for b in piece.encode('utf-8')], ranks)]
            if n < len(parts) - 1:
                ids.append(mask)
        return ids + [2]
    return tok, encode, mask + 1


def xlmr_tokenizer():
    """XLM-RoBERTa's tokenizer.json layout: a Unigram (SentencePiece) model over
    ▁-prefixed pieces, <s> <pad> </s> <unk> first, <mask> last (lstrip),
    Metaspace pre-tokenizer and decoder, TemplateProcessing <s> $A </s>."""
    specials = ['<s>', '<pad>', '</s>', '<unk>']
    pieces = [(s, 0.0) for s in specials]
    for i, w in enumerate(BERT_WORDS):
        pieces.append(('\u2581' + w, -4.0 - 0.05 * i))
    for i, c in enumerate(['\u2581'] + list('.,!?\'') + [chr(c) for c in range(ord('a'), ord('z') + 1)]
                          + [chr(c) for c in range(ord('A'), ord('Z') + 1)] + ['你']):
        pieces.append((c, -8.0 - 0.01 * i))
    for i, w in enumerate(['s', 'ing', 'ed']):
        pieces.append((w, -6.0 - 0.1 * i))
    mask = len(pieces)
    pieces.append(('<mask>', 0.0))
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(i, s) for i, s in enumerate(specials)] + [added(mask, '<mask>', lstrip=True)],
        'normalizer': None,
        'pre_tokenizer': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '</s>', 'type_id': 0}}, {'SpecialToken': {'id': '</s>', 'type_id': 0}},
                     {'Sequence': {'id': 'B', 'type_id': 0}}, {'SpecialToken': {'id': '</s>', 'type_id': 0}}],
            'special_tokens': {'<s>': {'id': '<s>', 'ids': [0], 'tokens': ['<s>']},
                               '</s>': {'id': '</s>', 'ids': [2], 'tokens': ['</s>']}}},
        'decoder': {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True},
        'model': {'type': 'Unigram', 'unk_id': 3, 'vocab': [[p, s] for p, s in pieces], 'byte_fallback': False},
    }
    index = {p: i for i, (p, _) in enumerate(pieces[:mask])}
    score = dict(pieces[:mask])
    unk_score = min(score.values()) - 10.0

    def viterbi(s):  # the highest-scoring segmentation; an unknown char is <unk>
        best = [(-math.inf, None)] * (len(s) + 1)
        best[0] = (0.0, None)
        for end in range(1, len(s) + 1):
            for start in range(end):
                piece = s[start:end]
                if piece in index and piece not in specials:
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
            out.append(index.get(piece, 3))
            at = start
        return out[::-1]

    def encode(text):  # <mask> whole, eating the space before it (lstrip)
        ids = [0]
        parts = text.split('<mask>')
        for n, part in enumerate(parts):
            if n < len(parts) - 1:
                part = part.rstrip()
            if part:
                ids += viterbi('\u2581' + part.replace(' ', '\u2581') if not part.startswith(' ') else part.replace(' ', '\u2581'))
            if n < len(parts) - 1:
                ids.append(mask)
        return ids + [2]
    return tok, encode, mask + 1


MODERNBERT_CORPUS = ('The cat sat on the mat. The dog sat on the log. Attention is all you need, '
                     'and the local window sees its neighbours while the global layers see every token.')


def modernbert_tokenizer():
    """ModernBERT's tokenizer.json layout (answerdotai/ModernBERT-base: OLMo's
    byte-level BPE): NFC normalizer, ByteLevel pre-tokenizer and decoder,
    <|padding|> first, the specials [UNK] [CLS] [SEP] [PAD] [MASK] after the
    merges ([MASK] lstrip), TemplateProcessing [CLS] $A [SEP]."""
    table = bytes_to_unicode()
    b2u = dict(table)
    words = {}
    for piece in GPT2_SPLIT.findall(MODERNBERT_CORPUS):
        w = tuple(b2u[b] for b in piece.encode('utf-8'))
        words[w] = words.get(w, 0) + 1
    merges = learn_merges(words, 48)
    vocab = {'<|padding|>': 0}
    for _, u in table:
        vocab[u] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    specials = ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]']
    for sp in specials:
        vocab[sp] = len(vocab)
    cls, sep, mask = vocab['[CLS]'], vocab['[SEP]'], vocab['[MASK]']
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [added(0, '<|padding|>')] + [added(vocab[sp], sp, lstrip=sp == '[MASK]') for sp in specials],
        'normalizer': {'type': 'NFC'},
        'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
            'special_tokens': {'[CLS]': {'id': '[CLS]', 'ids': [cls], 'tokens': ['[CLS]']},
                               '[SEP]': {'id': '[SEP]', 'ids': [sep], 'tokens': ['[SEP]']}}},
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': vocab, 'merges': [a + ' ' + b for a, b in merges]},
    }
    ranks = {m: r for r, m in enumerate(merges)}

    def encode(text):  # ASCII; [MASK] whole, eating the space before it (lstrip)
        ids = [cls]
        parts = text.split('[MASK]')
        for n, part in enumerate(parts):
            if n < len(parts) - 1:
                part = part.rstrip()
            for piece in GPT2_SPLIT.findall(part):
                ids += [vocab[x] for x in bpe([b2u[b] for b in piece.encode('utf-8')], ranks)]
            if n < len(parts) - 1:
                ids.append(mask)
        return ids + [sep]
    return tok, encode, len(vocab)


# ---- weights -----------------------------------------------------------------------------------

def w(*shape, std=0.1):
    return exact(rng.standard_normal(shape) * std)


def norm_w(n, std=0.1):
    return exact(1.0 + rng.standard_normal(n) * std)


def head_stds(h, sharp):
    return [sharp * 0.8 ** j if j < h // 2 else (0.15 if j == h // 2 else 0.06) for j in range(h)]


def encoder_weights(V, names, E=32, H=4, I=64, layers=2, P=32, T=None, head=None):
    """names: {embed prefix, layer(i), q, k, v, o, ln1, fc, proj, ln2}; head: (dense, norm, bias)."""
    D = E // H
    e = names['embed']
    t = [(e + 'word_embeddings.weight', w(V, E, std=0.2)), (e + 'position_embeddings.weight', w(P, E, std=0.1))]
    if T:
        t.append((e + 'token_type_embeddings.weight', w(T, E, std=0.1)))
    t += [(e + 'LayerNorm.weight', norm_w(E)), (e + 'LayerNorm.bias', w(E, std=0.05))]
    for i in range(layers):
        p = names['layer'](i)
        stds = head_stds(H, 0.45 - 0.15 * i)
        for n in ('q', 'k'):
            t += [(p + names[n] + '.weight', np.concatenate([w(D, E, std=s) for s in stds])),
                  (p + names[n] + '.bias', w(E, std=0.05))]
        t += [(p + names['v'] + '.weight', w(E, E, std=0.15)), (p + names['v'] + '.bias', w(E, std=0.05)),
              (p + names['o'] + '.weight', w(E, E, std=0.1)), (p + names['o'] + '.bias', w(E, std=0.02)),
              (p + names['ln1'] + '.weight', norm_w(E)), (p + names['ln1'] + '.bias', w(E, std=0.05)),
              (p + names['fc'] + '.weight', w(I, E, std=0.3)), (p + names['fc'] + '.bias', w(I, std=0.05)),
              (p + names['proj'] + '.weight', w(E, I, std=0.2)), (p + names['proj'] + '.bias', w(E, std=0.02)),
              (p + names['ln2'] + '.weight', norm_w(E)), (p + names['ln2'] + '.bias', w(E, std=0.05))]
    dense, norm, bias = head
    t += [(dense + '.weight', w(E, E, std=0.15)), (dense + '.bias', w(E, std=0.05)),
          (norm + '.weight', norm_w(E)), (norm + '.bias', w(E, std=0.05)), (bias, w(V, std=0.05))]
    return t


DISTIL_NAMES = {'embed': 'distilbert.embeddings.', 'layer': lambda i: f'distilbert.transformer.layer.{i}.',
                'q': 'attention.q_lin', 'k': 'attention.k_lin', 'v': 'attention.v_lin', 'o': 'attention.out_lin',
                'ln1': 'sa_layer_norm', 'fc': 'ffn.lin1', 'proj': 'ffn.lin2', 'ln2': 'output_layer_norm'}
ROBERTA_NAMES = {'embed': 'roberta.embeddings.', 'layer': lambda i: f'roberta.encoder.layer.{i}.',
                 'q': 'attention.self.query', 'k': 'attention.self.key', 'v': 'attention.self.value',
                 'o': 'attention.output.dense', 'ln1': 'attention.output.LayerNorm', 'fc': 'intermediate.dense',
                 'proj': 'output.dense', 'ln2': 'output.LayerNorm'}


def modernbert_weights(V, E=32, H=4, I=24, layers=4):
    """ModernBertForMaskedLM's tensors without biases (norm_bias, attention_bias,
    mlp_bias, classifier_bias false; decoder_bias true), decoder tied."""
    D = E // H
    p = 'model.'
    t = [(p + 'embeddings.tok_embeddings.weight', w(V, E, std=0.3)), (p + 'embeddings.norm.weight', norm_w(E))]
    for i in range(layers):
        n = f'{p}layers.{i}.'
        if i > 0:
            t.append((n + 'attn_norm.weight', norm_w(E)))
        stds = head_stds(H, 0.5 - 0.08 * i)
        qk = [np.concatenate([w(D, E, std=sd) for sd in stds]) for _ in range(2)]
        t += [(n + 'attn.Wqkv.weight', np.concatenate(qk + [w(E, E, std=0.2)])),
              (n + 'attn.Wo.weight', w(E, E, std=0.12)),
              (n + 'mlp_norm.weight', norm_w(E)),
              (n + 'mlp.Wi.weight', w(2 * I, E, std=0.3)),
              (n + 'mlp.Wo.weight', w(E, I, std=0.15))]
    t += [(p + 'final_norm.weight', norm_w(E)), ('head.dense.weight', w(E, E, std=0.2)),
          ('head.norm.weight', norm_w(E)), ('decoder.bias', w(V, std=0.05))]
    return t


# ---- configs, as save_pretrained writes them -----------------------------------------------------

def distilbert_config(V):
    return {'activation': 'gelu', 'architectures': ['DistilBertForMaskedLM'], 'attention_dropout': 0.1,
            'dim': 32, 'dropout': 0.1, 'hidden_dim': 64, 'initializer_range': 0.02, 'max_position_embeddings': 32,
            'model_type': 'distilbert', 'n_heads': 4, 'n_layers': 2, 'pad_token_id': 0, 'qa_dropout': 0.1,
            'seq_classif_dropout': 0.2, 'sinusoidal_pos_embds': False, 'tie_weights_': True,
            'torch_dtype': 'float32', 'transformers_version': TF_VERSION, 'vocab_size': V}


def roberta_config(V, model_type, arch):
    # max_position_embeddings 34 = 32 positions + padding_idx + 1, as 514 = 512 + 2 on the hub
    return {'architectures': [arch], 'attention_probs_dropout_prob': 0.1, 'bos_token_id': 0,
            'classifier_dropout': None, 'eos_token_id': 2, 'hidden_act': 'gelu', 'hidden_dropout_prob': 0.1,
            'hidden_size': 32, 'initializer_range': 0.02, 'intermediate_size': 64, 'layer_norm_eps': 1e-05,
            'max_position_embeddings': 34, 'model_type': model_type, 'num_attention_heads': 4,
            'num_hidden_layers': 2, 'pad_token_id': 1, 'position_embedding_type': 'absolute',
            'torch_dtype': 'float32', 'transformers_version': TF_VERSION, 'type_vocab_size': 1,
            'use_cache': True, 'vocab_size': V}


def modernbert_config(V, cls, sep, pad):
    # as answerdotai/ModernBERT-base's config.json, shrunk: 4 layers, global every 3rd (g l l g),
    # a window of local_attention 4 (|i - j| <= 2) shorter than every text
    return {'architectures': ['ModernBertForMaskedLM'], 'attention_bias': False, 'attention_dropout': 0.0,
            'bos_token_id': cls, 'classifier_activation': 'gelu', 'classifier_bias': False,
            'classifier_dropout': 0.0, 'classifier_pooling': 'mean', 'cls_token_id': cls, 'decoder_bias': True,
            'deterministic_flash_attn': False, 'embedding_dropout': 0.0, 'eos_token_id': sep,
            'global_attn_every_n_layers': 3, 'global_rope_theta': 160000.0, 'gradient_checkpointing': False,
            'hidden_activation': 'gelu', 'hidden_size': 32, 'initializer_cutoff_factor': 2.0,
            'initializer_range': 0.02, 'intermediate_size': 24, 'layer_norm_eps': 1e-05, 'local_attention': 4,
            'local_rope_theta': 10000.0, 'max_position_embeddings': 64, 'mlp_bias': False, 'mlp_dropout': 0.0,
            'model_type': 'modernbert', 'norm_bias': False, 'norm_eps': 1e-05, 'num_attention_heads': 4,
            'num_hidden_layers': 4, 'pad_token_id': pad, 'position_embedding_type': 'absolute',
            'sep_token_id': sep, 'tie_word_embeddings': True, 'torch_dtype': 'float32',
            'transformers_version': '4.48.0', 'vocab_size': V}


# ---- generate ------------------------------------------------------------------------------------

def write_folder(name, tensors, config, tokenizer, seqs, half):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, 'config.json'), config)
    write_json(os.path.join(d, 'tokenizer.json'), tokenizer, pretty=False)
    files = [('model.safetensors', 'F32'), (f'model-{half.lower()}.safetensors', half)]
    for fname, dt in files:
        write_safetensors(os.path.join(d, fname), [(k, dt, v) for k, v in tensors], {'format': 'pt'})
    ref = read_safetensors(os.path.join(d, 'model.safetensors'))
    other = read_safetensors(os.path.join(d, files[1][0]))
    assert all(np.array_equal(ref[k], other[k]) for k in ref)
    cases = []
    for text, ids in seqs:
        r = forward(d, ids)
        cases.append({'text': text, 'ids': [int(i) for i in ids],
                      'logits': round_floats(r['logits'].tolist()),
                      'attentions': round_floats([a.tolist() for a in r['attentions']]),
                      'hidden_states': round_floats(r['hidden_states'].tolist()),
                      'all_hidden_states': round_floats([a.tolist() for a in r['all_hidden_states']])})
    expected = {'model_type': config['model_type'], 'architecture': config['architectures'][0],
                'dtype_files': [f for f, _ in files], 'parameters': int(sum(v.size for _, v in tensors)),
                'tensors': [k for k, _ in tensors], 'shapes': {k: list(v.shape) for k, v in tensors},
                'mask_token': tokenizer['added_tokens'][-1]['content'] if name != 'distilbert' else '[MASK]',
                'cases': cases}
    write_json(os.path.join(d, 'expected.json'), expected, pretty=False)
    return d


def generate():
    # distilbert: bert's WordPiece tokenizer (hf_models.py), F16
    btok, benc, bvocab = bert_tokenizer()
    V = len(bvocab)
    texts = ['the cat [MASK] on the mat.', 'Hello [MASK] world!', 'the dog is walking with a cat']
    seqs = [(x, benc(x)) for x in texts]
    dw = encoder_weights(V, DISTIL_NAMES, head=('vocab_transform', 'vocab_layer_norm', 'vocab_projector.bias'))
    ddir = write_folder('distilbert', dw, distilbert_config(V), btok, seqs, 'F16')
    jobs = {ddir: {'texts': texts, 'expect': dict(seqs)}}

    # roberta: byte-level BPE, BF16
    rtok, renc, RV = roberta_tokenizer()
    rtexts = ['The cat <mask> on the mat.', 'Attention is all you <mask>', 'the dog sat on the log, and the cat']
    rseqs = [(x, renc(x)) for x in rtexts]
    rw = encoder_weights(RV, ROBERTA_NAMES, P=34, T=1, head=('lm_head.dense', 'lm_head.layer_norm', 'lm_head.bias'))
    rdir = write_folder('roberta', rw, roberta_config(RV, 'roberta', 'RobertaForMaskedLM'), rtok, rseqs, 'BF16')
    jobs[rdir] = {'texts': rtexts, 'expect': dict(rseqs)}

    # xlm-roberta: Unigram, F16
    xtok, xenc, XV = xlmr_tokenizer()
    xtexts = ['the cat <mask> on the mat.', 'Hello <mask> world!', 'the dogs walked with a cat']
    xseqs = [(x, xenc(x)) for x in xtexts]
    xw = encoder_weights(XV, ROBERTA_NAMES, P=34, T=1, head=('lm_head.dense', 'lm_head.layer_norm', 'lm_head.bias'))
    xdir = write_folder('xlm-roberta', xw, roberta_config(XV, 'xlm-roberta', 'XLMRobertaForMaskedLM'), xtok, xseqs, 'F16')
    jobs[xdir] = {'texts': xtexts, 'expect': dict(xseqs)}

    # modernbert: byte-level BPE, [CLS] $A [SEP], BF16; after the others (the shared rng's draws)
    mtok, menc, MV = modernbert_tokenizer()
    vocab = mtok['model']['vocab']
    mtexts = ['The cat [MASK] on the mat.', 'Attention is all you [MASK]', 'the dog sat on the log, and the cat']
    mseqs = [(x, menc(x)) for x in mtexts]
    mw = modernbert_weights(MV)
    mdir = write_folder('modernbert', mw, modernbert_config(MV, vocab['[CLS]'], vocab['[SEP]'], vocab['[PAD]']),
                        mtok, mseqs, 'BF16')
    jobs[mdir] = {'texts': mtexts, 'expect': dict(mseqs)}

    for _, ids in seqs + rseqs + xseqs:
        assert 5 <= len(ids) <= 16, ids
    # the window (|i - j| <= 2) is shorter than every modernbert text
    for _, ids in mseqs:
        assert 6 <= len(ids) <= 20, ids
    # The ids of expected.json are checked; decodes are recorded in
    # tokenizer-samples.json, not compared.
    checked = check_tokenizers({d: dict(j, roundtrip=lambda x: ANY) for d, j in jobs.items()})
    for d in jobs if checked else ():
        f = os.path.join(d, 'tokenizer-samples.json')
        with open(f, encoding='utf-8') as fh:
            samples = json.load(fh)
        samples['note'] = samples['note'].replace('hf_models.py', 'hf_encoders.py')
        write_json(f, samples)
    print(f'wrote {", ".join(FOLDERS)}: vocab distilbert {V}, roberta {RV}, xlm-roberta {XV}, modernbert {MV}; '
          f'tokenizers {"checked with @huggingface/tokenizers" if checked else "NOT checked"}')


class _Any:
    def __eq__(self, other):
        return True


ANY = _Any()


def main(argv):
    if argv[:1] == ['generate']:
        generate()
    elif argv[:1] == ['forward'] and len(argv) >= 4 and argv[2] == '--ids':
        r = forward(argv[1], [int(x) for x in argv[3].split(',')])
        print(json.dumps({'logits': None if r['logits'] is None else r['logits'].tolist(),
                          'attentions': [a.tolist() for a in r['attentions']],
                          'hidden_states': r['hidden_states'].tolist()}))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
