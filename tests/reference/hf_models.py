#!/usr/bin/python3
"""Float64 references of whole Hugging Face language models, and the tiny
checkpoints of tests/golden/models/ (issue 21).

numpy only, independent of attention-lab (nothing from web/, src/ or
bindings/) and of tests/reference/make_weights.py (its safetensors and bf16
helpers are copied here, not imported). The forward passes follow the
transformers modeling code:

  gpt2   GPT2LMHeadModel   wte + wpe; pre-LN blocks x + attn(ln_1(x)),
                           x + mlp(ln_2(x)); ln_f; Conv1D (y = x·W + b,
                           W [in, out]); c_attn split q, k, v; causal;
                           scale 1/sqrt(D) (scale_attn_weights, and
                           1/(layer+1) when scale_attn_by_inverse_layer_idx);
                           activation_function (gelu_new: tanh form); LM head
                           tied to wte.
  llama  LlamaForCausalLM  embed_tokens; RMSNorm x·rsqrt(mean(x²)+eps)·w;
                           RoPE rotate_half (dims i, i+D/2), inv_freq
                           1/theta^(2i/D), positions 0..L-1; GQA (repeat_kv);
                           causal; scale head_dim^-0.5; SwiGLU
                           down(silu(gate(x))·up(x)); final norm; lm_head
                           (or embed_tokens when tie_word_embeddings).
  bert   BertForMaskedLM   word + position + token_type(0) embeddings → LN;
                           post-LN blocks LN(x + attn(x)), LN(h + ffn(h));
                           erf GELU (hidden_act "gelu"); bidirectional, no
                           mask (one unpadded sequence); MLM head transform
                           dense → act → LayerNorm → decoder tied to the word
                           embeddings + cls.predictions.bias.

forward() returns logits [1, L, V] (None for a BERT checkpoint without cls.*),
attentions (one [1, H, L, L] softmax array per layer) and hidden_states
[1, L, E] (transformers' last_hidden_state: after ln_f / model.norm for gpt2
and llama, the last encoder layer for bert).

Run:
  /usr/bin/python3 tests/reference/hf_models.py generate
      writes tests/golden/models/ (deterministic; checks the tokenizers with
      @huggingface/tokenizers through node when it is there)
  /usr/bin/python3 tests/reference/hf_models.py selfcheck
      layer-1 attention of tests/golden/weights/hf_gpt2(_f16), hf_llama_bf16
      by this file's blocks vs make_weights.py's expectations (not a suite)
  /usr/bin/python3 tests/reference/hf_models.py forward DIR --ids 1,2,3 \\
      [--weights FILE] [--out FILE]
      {logits, attentions, hidden_states} of any HF folder as JSON
      (logits [L][V], attentions [layer][head][L][L], hidden_states [L][E]).
"""
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
OUT = os.path.join(ROOT, 'tests', 'golden', 'models')


# ---- safetensors (by the format spec) and bf16 --------------------------------

def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet)."""
    u = np.asarray(a, dtype='<f4').view('<u4').astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype('<u2')
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    r[nan] = ((u[nan] >> 16) | 0x40).astype('<u2')
    return r


def bf16_to_f32(bits):
    return (np.asarray(bits).astype('<u4') << 16).view('<f4')


ST_DTYPES = {'F32': '<f4', 'F16': '<f2', 'F64': '<f8', 'I32': '<i4', 'I64': '<i8',
             'I16': '<i2', 'I8': 'i1', 'U8': 'u1', 'BOOL': '?'}


def safetensors_bytes(tensors, metadata=None):
    """tensors: list of (name, dtype, array); BF16 arrays are given as float."""
    header = {}
    if metadata:
        header['__metadata__'] = metadata
    blobs = []
    offset = 0
    for key, dtype, arr in tensors:
        arr = np.asarray(arr)
        if dtype == 'BF16':
            data = bf16_bits(np.asarray(arr, dtype=np.float32)).tobytes()
        else:
            data = np.ascontiguousarray(arr, dtype=ST_DTYPES[dtype]).tobytes()
        header[key] = {'dtype': dtype, 'shape': list(arr.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(',', ':')).encode('utf-8')
    text += b' ' * (-len(text) % 8)
    return struct.pack('<Q', len(text)) + text + b''.join(blobs)


def write_safetensors(path, tensors, metadata=None):
    with open(path, 'wb') as f:
        f.write(safetensors_bytes(tensors, metadata))


def read_safetensors(path):
    """{name: float64 array} for the float tensors (F64/F32/F16/BF16); other
    dtypes (bool or integer buffers) are returned as they are."""
    with open(path, 'rb') as f:
        raw = f.read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n].decode('utf-8'))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        a, b = info['data_offsets']
        buf = raw[base + a:base + b]
        shape = info['shape']
        dt = info['dtype']
        if dt == 'BF16':
            arr = bf16_to_f32(np.frombuffer(buf, dtype='<u2')).astype(np.float64)
        elif dt in ('F32', 'F16', 'F64'):
            arr = np.frombuffer(buf, dtype=ST_DTYPES[dt]).astype(np.float64)
        elif dt in ST_DTYPES:
            arr = np.frombuffer(buf, dtype=ST_DTYPES[dt]).copy()
        else:
            continue
        out[name] = arr.reshape(shape)
    return out


def load_folder(folder, weights=None):
    """config.json + the tensors of a Hugging Face folder: `weights` (a file
    name or path), else model.safetensors, else the shards listed by
    model.safetensors.index.json."""
    if os.path.isfile(folder):
        folder, weights = os.path.dirname(folder) or '.', folder
    with open(os.path.join(folder, 'config.json')) as f:
        config = json.load(f)
    tensors = {}
    if weights is None and not os.path.exists(os.path.join(folder, 'model.safetensors')):
        with open(os.path.join(folder, 'model.safetensors.index.json')) as f:
            index = json.load(f)
        for shard in sorted(set(index['weight_map'].values())):
            tensors.update(read_safetensors(os.path.join(folder, shard)))
        missing = set(index['weight_map']) - set(tensors)
        if missing:
            raise ValueError(f'index names tensors missing from the shards: {sorted(missing)}')
    else:
        path = weights if weights and os.path.isabs(weights) else os.path.join(folder, weights or 'model.safetensors')
        if not os.path.exists(path):
            path = weights
        tensors = read_safetensors(path)
    return config, tensors


# ---- float64 building blocks ----------------------------------------------------

def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


_erf = np.vectorize(math.erf, otypes=[np.float64])


def act(name):
    """transformers.activations.ACT2FN, the entries these families use."""
    if name in ('gelu', 'gelu_python'):  # GELUActivation: exact erf form
        return lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ('gelu_new', 'gelu_pytorch_tanh', 'gelu_fast'):  # tanh form
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == 'quick_gelu':
        return lambda x: x / (1.0 + np.exp(-1.702 * x))
    if name in ('silu', 'swish'):
        return lambda x: x / (1.0 + np.exp(-x))
    if name == 'relu':
        return lambda x: np.maximum(x, 0.0)
    raise NotImplementedError(f'activation {name!r}')


def heads(x, h):  # [L, h*D] -> [h, L, D]
    l, e = x.shape
    return x.reshape(l, h, e // h).transpose(1, 0, 2)


def merge(x):  # [h, L, D] -> [L, h*D]
    h, l, d = x.shape
    return x.transpose(1, 0, 2).reshape(l, h * d)


def attend(q, k, v, scale, causal):
    """q [H, L, D], k/v [H, L, D]; returns the context [H, L, D] and the softmax."""
    s = (q @ k.transpose(0, 2, 1)) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    p = softmax(s)
    return p @ v, p


def rope(x, theta, positions):
    """HF apply_rotary_pos_emb on x [H, L, D]: rotate_half pairs i and i+D/2."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = positions[:, None].astype(np.float64) * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(emb) + rot * np.sin(emb)


class Tensors:
    """Name lookup with the prefixes and synonyms transformers accepts."""

    def __init__(self, tensors, prefixes):
        self.t = tensors
        self.prefixes = prefixes

    def get(self, name, optional=False):
        cands = [name]
        if name.endswith('LayerNorm.weight'):
            cands.append(name[:-len('weight')] + 'gamma')
        if name.endswith('LayerNorm.bias'):
            cands.append(name[:-len('bias')] + 'beta')
        for c in cands:
            for p in self.prefixes:
                if p + c in self.t:
                    return np.asarray(self.t[p + c], dtype=np.float64)
        if optional:
            return None
        raise KeyError(f'tensor {name!r} not found (prefixes {self.prefixes})')


# ---- the three families -----------------------------------------------------------

def forward_gpt2(cfg, tensors, ids):
    t = Tensors(tensors, ['', 'transformer.'])
    E, H = cfg['n_embd'], cfg['n_head']
    D = E // H
    eps = cfg.get('layer_norm_epsilon', 1e-5)
    f = act(cfg.get('activation_function', 'gelu_new'))
    L = len(ids)
    wte = t.get('wte.weight')
    x = wte[ids] + t.get('wpe.weight')[np.arange(L)]
    atts = []
    states = []  # output_hidden_states: the input of every block, then ln_f's output
    for i in range(cfg['n_layer']):
        states.append(x[None])
        p = f'h.{i}.'
        a = layer_norm(x, t.get(p + 'ln_1.weight'), t.get(p + 'ln_1.bias'), eps)
        qkv = a @ t.get(p + 'attn.c_attn.weight') + t.get(p + 'attn.c_attn.bias')
        q, k, v = (heads(qkv[:, j * E:(j + 1) * E], H) for j in range(3))
        scale = 1.0
        if cfg.get('scale_attn_weights', True):
            scale /= math.sqrt(D)
        if cfg.get('scale_attn_by_inverse_layer_idx', False):
            scale /= float(i + 1)
        ctx, pr = attend(q, k, v, scale, causal=True)
        atts.append(pr[None])
        x = x + merge(ctx) @ t.get(p + 'attn.c_proj.weight') + t.get(p + 'attn.c_proj.bias')
        m = layer_norm(x, t.get(p + 'ln_2.weight'), t.get(p + 'ln_2.bias'), eps)
        m = f(m @ t.get(p + 'mlp.c_fc.weight') + t.get(p + 'mlp.c_fc.bias'))
        x = x + m @ t.get(p + 'mlp.c_proj.weight') + t.get(p + 'mlp.c_proj.bias')
    h = layer_norm(x, t.get('ln_f.weight'), t.get('ln_f.bias'), eps)
    # GPT2LMHeadModel: lm_head (no bias) tied to wte (tie_word_embeddings, default true).
    head = wte if cfg.get('tie_word_embeddings', True) else t.get('lm_head.weight')
    return {'logits': (h @ head.T)[None], 'attentions': atts, 'hidden_states': h[None],
            'all_hidden_states': states + [h[None]]}


def forward_llama(cfg, tensors, ids):
    t = Tensors(tensors, [''])
    E, H = cfg['hidden_size'], cfg['num_attention_heads']
    Hkv = cfg.get('num_key_value_heads') or H
    D = cfg.get('head_dim') or E // H
    eps = cfg.get('rms_norm_eps', 1e-6)
    theta = float(cfg.get('rope_theta', 10000.0))
    rs = cfg.get('rope_scaling')
    if rs and rs.get('rope_type', rs.get('type', 'default')) != 'default':
        raise NotImplementedError(f'rope_scaling {rs}')
    f = act(cfg.get('hidden_act', 'silu'))
    L = len(ids)
    pos = np.arange(L)
    emb = t.get('model.embed_tokens.weight')
    x = emb[ids]
    atts = []
    states = []  # output_hidden_states: the input of every layer, then model.norm's output

    def lin(a, name):  # torch Linear, [out, in]; attention_bias / mlp_bias when present
        b = t.get(name + '.bias', optional=True)
        y = a @ t.get(name + '.weight').T
        return y + b if b is not None else y

    for i in range(cfg['num_hidden_layers']):
        states.append(x[None])
        p = f'model.layers.{i}.'
        a = rms_norm(x, t.get(p + 'input_layernorm.weight'), eps)
        q = rope(heads(lin(a, p + 'self_attn.q_proj'), H), theta, pos)
        k = rope(heads(lin(a, p + 'self_attn.k_proj'), Hkv), theta, pos)
        v = heads(lin(a, p + 'self_attn.v_proj'), Hkv)
        rep = H // Hkv  # repeat_kv: query head j reads kv head j // rep
        ctx, pr = attend(q, np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0), D ** -0.5, causal=True)
        atts.append(pr[None])
        x = x + lin(merge(ctx), p + 'self_attn.o_proj')
        m = rms_norm(x, t.get(p + 'post_attention_layernorm.weight'), eps)
        x = x + lin(f(lin(m, p + 'mlp.gate_proj')) * lin(m, p + 'mlp.up_proj'), p + 'mlp.down_proj')
    h = rms_norm(x, t.get('model.norm.weight'), eps)
    head = emb if cfg.get('tie_word_embeddings', False) else t.get('lm_head.weight')
    return {'logits': (h @ head.T)[None], 'attentions': atts, 'hidden_states': h[None],
            'all_hidden_states': states + [h[None]]}


def forward_bert(cfg, tensors, ids):
    t = Tensors(tensors, ['bert.', ''])
    E, H = cfg['hidden_size'], cfg['num_attention_heads']
    D = E // H
    eps = cfg.get('layer_norm_eps', 1e-12)
    f = act(cfg.get('hidden_act', 'gelu'))
    if cfg.get('position_embedding_type', 'absolute') != 'absolute':
        raise NotImplementedError('position_embedding_type ' + cfg['position_embedding_type'])
    L = len(ids)

    def lin(a, name):
        return a @ t.get(name + '.weight').T + t.get(name + '.bias')

    def ln(a, name):
        return layer_norm(a, t.get(name + '.weight'), t.get(name + '.bias'), eps)

    word = t.get('embeddings.word_embeddings.weight')
    x = word[ids] + t.get('embeddings.position_embeddings.weight')[np.arange(L)] \
        + t.get('embeddings.token_type_embeddings.weight')[0]
    x = ln(x, 'embeddings.LayerNorm')
    atts = []
    states = [x[None]]  # output_hidden_states: the embeddings' output, then every layer's
    for i in range(cfg['num_hidden_layers']):
        p = f'encoder.layer.{i}.'
        q, k, v = (heads(lin(x, p + 'attention.self.' + n), H) for n in ('query', 'key', 'value'))
        ctx, pr = attend(q, k, v, 1.0 / math.sqrt(D), causal=False)
        atts.append(pr[None])
        x = ln(lin(merge(ctx), p + 'attention.output.dense') + x, p + 'attention.output.LayerNorm')
        m = f(lin(x, p + 'intermediate.dense'))
        x = ln(lin(m, p + 'output.dense') + x, p + 'output.LayerNorm')
        states.append(x[None])
    out = {'logits': None, 'attentions': atts, 'hidden_states': x[None], 'all_hidden_states': states}
    c = Tensors(tensors, ['cls.'])
    dense = c.get('predictions.transform.dense.weight', optional=True)
    if dense is not None:
        tr = f(x @ dense.T + c.get('predictions.transform.dense.bias'))
        tr = layer_norm(tr, c.get('predictions.transform.LayerNorm.weight'),
                        c.get('predictions.transform.LayerNorm.bias'), eps)
        dec = word if cfg.get('tie_word_embeddings', True) else c.get('predictions.decoder.weight')
        bias = c.get('predictions.bias', optional=True)
        if bias is None:
            bias = c.get('predictions.decoder.bias')
        out['logits'] = (tr @ dec.T + bias)[None]
    return out


FAMILIES = {'gpt2': forward_gpt2, 'llama': forward_llama, 'bert': forward_bert}


def forward(folder, ids, weights=None):
    cfg, tensors = load_folder(folder, weights)
    mt = cfg.get('model_type')
    if mt not in FAMILIES:
        raise NotImplementedError(f'model_type {mt!r}')
    ids = np.asarray(ids, dtype=np.int64)
    if ids.min() < 0 or ids.max() >= cfg['vocab_size']:
        raise ValueError(f'ids outside [0, {cfg["vocab_size"]})')
    return FAMILIES[mt](cfg, tensors, ids)


def result_json(r):
    """{ids?, logits [L][V] | null, attentions [layer][head][L][L], hidden_states [L][E],
    all_hidden_states [layer + 1][L][E] (transformers' output_hidden_states)}."""
    return {'logits': None if r['logits'] is None else r['logits'][0].tolist(),
            'attentions': [a[0].tolist() for a in r['attentions']],
            'hidden_states': r['hidden_states'][0].tolist(),
            'all_hidden_states': [a[0].tolist() for a in r['all_hidden_states']]}


# ---- tokenizers ------------------------------------------------------------------------

def bytes_to_unicode():
    """GPT-2's byte -> printable symbol table, in its vocabulary order."""
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return list(zip(bs, [chr(c) for c in cs]))  # in vocabulary order


def learn_merges(words, n):
    """Plain BPE training on {word (tuple of symbols): count}; ties broken by
    the pair's text, so the merges are the same on every run."""
    words = dict(words)
    merges = []
    for _ in range(n):
        pairs = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        words = new
    return merges


def bpe(symbols, ranks):
    """Apply merges by rank (lowest first), as tokenizers' BPE does."""
    w = list(symbols)
    while len(w) > 1:
        cand = [(ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(w, w[1:]))]
        r, i = min(cand)
        if r == 1 << 30:
            break
        w[i:i + 2] = [w[i] + w[i + 1]]
    return w


# GPT-2's split pattern, for ASCII text (Python's re has no \p{L}).
GPT2_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")

GPT2_CORPUS = ('The cat sat on the mat. The dog sat on the log. '
               'Attention is all you need, and the cat is on the mat with the dog.')
LLAMA_CORPUS = ('The cat sat on the mat. The cat is on the mat. The dog sat on the log. '
                'Hello world! Hello, the cat is all you need. 你好')
BERT_WORDS = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'log', 'is', 'a', 'all', 'you', 'need',
              'hello', 'world', 'attention', 'and', 'with', 'play', 'run', 'walk', 'talk']
BERT_SUFFIXES = ['##s', '##ing', '##ed', '##er', '##ly']


def gpt2_tokenizer():
    table = bytes_to_unicode()
    b2u = dict(table)
    words = {}
    for piece in GPT2_SPLIT.findall(GPT2_CORPUS):
        w = tuple(b2u[b] for b in piece.encode('utf-8'))
        words[w] = words.get(w, 0) + 1
    merges = learn_merges(words, 40)
    vocab = {u: i for i, (_, u) in enumerate(table)}
    for a, b in merges:
        vocab[a + b] = len(vocab)
    eot = len(vocab)
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [{'id': eot, 'content': '<|endoftext|>', 'single_word': False, 'lstrip': False,
                          'rstrip': False, 'normalized': True, 'special': True}],
        'normalizer': None,
        'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True},
        'post_processor': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': False, 'use_regex': True},
        'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': '',
                  'end_of_word_suffix': '', 'fuse_unk': False, 'byte_fallback': False,
                  'vocab': dict(vocab, **{'<|endoftext|>': eot}), 'merges': [a + ' ' + b for a, b in merges]},
    }
    ranks = {m: r for r, m in enumerate(merges)}

    def encode(text):  # ASCII text only (the split pattern above)
        ids = []
        for piece in GPT2_SPLIT.findall(text):
            ids += [vocab[s] for s in bpe([b2u[b] for b in piece.encode('utf-8')], ranks)]
        return ids
    return tok, encode, eot


def llama_tokenizer():
    specials = ['<unk>', '<s>', '</s>']
    vocab = {s: i for i, s in enumerate(specials)}
    for b in range(256):
        vocab[f'<0x{b:02X}>'] = len(vocab)
    norm = '▁' + LLAMA_CORPUS.replace(' ', '▁')
    # SentencePiece pieces start a word with ▁: train on the ▁-words.
    words = {}
    chars = {}
    for w in re.findall('▁[^▁]*', norm):
        words[tuple(w)] = words.get(tuple(w), 0) + 1
        for ch in w:
            chars[ch] = chars.get(ch, 0) + 1
    merges = learn_merges(words, 40)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for ch in sorted(chars, key=lambda c: (-chars[c], c)):  # single characters last, as in Llama's vocab
        vocab.setdefault(ch, len(vocab))
    # '你' and '好' are pieces; an emoji or other CJK falls back to <0xNN> bytes.
    added = [{'id': i, 'content': s, 'single_word': False, 'lstrip': False, 'rstrip': False,
              'normalized': False, 'special': True} for i, s in enumerate(specials)]
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': {'type': 'Sequence', 'normalizers': [
            {'type': 'Prepend', 'prepend': '▁'},
            {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '▁'}]},
        'pre_tokenizer': None,
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '<s>', 'type_id': 1}}, {'Sequence': {'id': 'B', 'type_id': 1}}],
            'special_tokens': {'<s>': {'id': '<s>', 'ids': [1], 'tokens': ['<s>']}}},
        'decoder': {'type': 'Sequence', 'decoders': [
            {'type': 'Replace', 'pattern': {'String': '▁'}, 'content': ' '},
            {'type': 'ByteFallback'}, {'type': 'Fuse'},
            {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}]},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': True, 'byte_fallback': True,
                  'vocab': vocab, 'merges': [a + ' ' + b for a, b in merges]},
    }
    ranks = {m: r for r, m in enumerate(merges)}

    def encode(text):  # with <s>, as the post-processor adds it
        ids = [1]
        for s in bpe(list('▁' + text.replace(' ', '▁')), ranks):
            if s in vocab:
                ids.append(vocab[s])
            else:
                ids += [vocab[f'<0x{b:02X}>'] for b in s.encode('utf-8')]
        return ids
    return tok, encode


def bert_tokenizer():
    specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    pieces = specials + list('.,!?\'') + [chr(c) for c in range(ord('a'), ord('z') + 1)] + ['你'] \
        + ['##' + chr(c) for c in range(ord('a'), ord('z') + 1)] + BERT_WORDS + BERT_SUFFIXES
    vocab = {}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    added = [{'id': vocab[s], 'content': s, 'single_word': False, 'lstrip': False, 'rstrip': False,
              'normalized': False, 'special': True} for s in specials]
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': {'type': 'BertNormalizer', 'clean_text': True, 'handle_chinese_chars': True,
                       'strip_accents': None, 'lowercase': True},
        'pre_tokenizer': {'type': 'BertPreTokenizer'},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
            'special_tokens': {
                '[CLS]': {'id': '[CLS]', 'ids': [vocab['[CLS]']], 'tokens': ['[CLS]']},
                '[SEP]': {'id': '[SEP]', 'ids': [vocab['[SEP]']], 'tokens': ['[SEP]']}}},
        'decoder': {'type': 'WordPiece', 'prefix': '##', 'cleanup': True},
        'model': {'type': 'WordPiece', 'unk_token': '[UNK]', 'continuing_subword_prefix': '##',
                  'max_input_chars_per_word': 100, 'vocab': vocab},
    }

    def encode(text):  # ASCII, no accents; [MASK] kept whole; with [CLS] ... [SEP]
        ids = [vocab['[CLS]']]
        for word in re.findall(r"\[MASK\]|[A-Za-z0-9]+|[^\sA-Za-z0-9]", text):
            if word == '[MASK]':
                ids.append(vocab[word])
                continue
            word, start, sub = word.lower(), 0, []
            while start < len(word):
                end = len(word)
                while end > start and (('##' if start else '') + word[start:end]) not in vocab:
                    end -= 1
                if end == start:
                    sub = [vocab['[UNK]']]
                    break
                sub.append(vocab[('##' if start else '') + word[start:end]])
                start = end
            ids += sub
        return ids + [vocab['[SEP]']]
    return tok, encode, vocab


# ---- weights ---------------------------------------------------------------------------

rng = np.random.default_rng(20261201)
TINY = 2.0 ** -14  # smallest normal float16


def exact(a):
    """Round to bfloat16 and lift nonzero magnitudes below 2^-14 to 2^-14, so
    the value is the same in F32, F16 and BF16."""
    v = bf16_to_f32(bf16_bits(np.asarray(a, dtype=np.float32))).astype(np.float64)
    small = (v != 0) & (np.abs(v) < TINY)
    v[small] = np.sign(v[small]) * TINY
    assert np.all(np.abs(v) <= 65504)
    assert np.array_equal(v.astype(np.float16).astype(np.float64), v)
    return v


def w(*shape, std=0.1):
    return exact(rng.standard_normal(shape) * std)


def norm_w(n, std=0.1):
    return exact(1.0 + rng.standard_normal(n) * std)


def head_stds(h, sharp):
    """Per-head scale of the q/k weights: the first half sharp, then one
    moderate head, the last ones soft."""
    return [sharp * 0.8 ** j if j < h // 2 else (0.15 if j == h // 2 else 0.06) for j in range(h)]


def gpt2_weights(V, E=32, H=4, layers=2, P=32):
    D, I = E // H, 4 * E
    t = [('wte.weight', w(V, E, std=0.2)), ('wpe.weight', w(P, E, std=0.1))]
    for i in range(layers):
        p = f'h.{i}.'
        ca = w(E, 3 * E, std=0.1)
        for j, s in enumerate(head_stds(H, 0.45 - 0.15 * i)):  # q and k columns of head j
            for part in (0, 1):
                cols = slice(part * E + j * D, part * E + (j + 1) * D)
                ca[:, cols] = w(E, D, std=s)
        t += [(p + 'ln_1.weight', norm_w(E)), (p + 'ln_1.bias', w(E, std=0.05)),
              (p + 'attn.c_attn.weight', ca), (p + 'attn.c_attn.bias', w(3 * E, std=0.05)),
              (p + 'attn.c_proj.weight', w(E, E, std=0.1)), (p + 'attn.c_proj.bias', w(E, std=0.02)),
              (p + 'ln_2.weight', norm_w(E)), (p + 'ln_2.bias', w(E, std=0.05)),
              (p + 'mlp.c_fc.weight', w(E, I, std=0.3)), (p + 'mlp.c_fc.bias', w(I, std=0.05)),
              (p + 'mlp.c_proj.weight', w(I, E, std=0.2)), (p + 'mlp.c_proj.bias', w(E, std=0.02))]
    t += [('ln_f.weight', norm_w(E)), ('ln_f.bias', w(E, std=0.05))]
    return t


def llama_weights(V, E=32, H=4, Hkv=2, I=64, layers=2):
    D = E // H
    t = [('model.embed_tokens.weight', w(V, E, std=0.2))]
    for i in range(layers):
        p = f'model.layers.{i}.'
        stds = head_stds(H, 0.4 - 0.1 * i)
        wq = np.concatenate([w(D, E, std=s) for s in stds])
        wk = np.concatenate([w(D, E, std=stds[j * (H // Hkv)]) for j in range(Hkv)])
        t += [(p + 'input_layernorm.weight', norm_w(E)),
              (p + 'self_attn.q_proj.weight', wq), (p + 'self_attn.k_proj.weight', wk),
              (p + 'self_attn.v_proj.weight', w(Hkv * D, E, std=0.15)),
              (p + 'self_attn.o_proj.weight', w(E, H * D, std=0.1)),
              (p + 'mlp.gate_proj.weight', w(I, E, std=0.15)), (p + 'mlp.up_proj.weight', w(I, E, std=0.15)),
              (p + 'mlp.down_proj.weight', w(E, I, std=0.1)),
              (p + 'post_attention_layernorm.weight', norm_w(E))]
    t += [('model.norm.weight', norm_w(E)), ('lm_head.weight', w(V, E, std=0.2))]
    return t


def bert_weights(V, E=32, H=4, I=64, layers=2, P=32, T=2):
    D = E // H
    p0 = 'bert.embeddings.'
    t = [(p0 + 'word_embeddings.weight', w(V, E, std=0.2)), (p0 + 'position_embeddings.weight', w(P, E, std=0.1)),
         (p0 + 'token_type_embeddings.weight', w(T, E, std=0.1)),
         (p0 + 'LayerNorm.weight', norm_w(E)), (p0 + 'LayerNorm.bias', w(E, std=0.05))]
    for i in range(layers):
        p = f'bert.encoder.layer.{i}.'
        stds = head_stds(H, 0.45 - 0.15 * i)
        for n in ('query', 'key'):
            t += [(p + f'attention.self.{n}.weight', np.concatenate([w(D, E, std=s) for s in stds])),
                  (p + f'attention.self.{n}.bias', w(E, std=0.05))]
        t += [(p + 'attention.self.value.weight', w(E, E, std=0.15)), (p + 'attention.self.value.bias', w(E, std=0.05)),
              (p + 'attention.output.dense.weight', w(E, E, std=0.1)), (p + 'attention.output.dense.bias', w(E, std=0.02)),
              (p + 'attention.output.LayerNorm.weight', norm_w(E)), (p + 'attention.output.LayerNorm.bias', w(E, std=0.05)),
              (p + 'intermediate.dense.weight', w(I, E, std=0.3)), (p + 'intermediate.dense.bias', w(I, std=0.05)),
              (p + 'output.dense.weight', w(E, I, std=0.2)), (p + 'output.dense.bias', w(E, std=0.02)),
              (p + 'output.LayerNorm.weight', norm_w(E)), (p + 'output.LayerNorm.bias', w(E, std=0.05))]
    t += [('cls.predictions.bias', w(V, std=0.05)),
          ('cls.predictions.transform.dense.weight', w(E, E, std=0.15)),
          ('cls.predictions.transform.dense.bias', w(E, std=0.05)),
          ('cls.predictions.transform.LayerNorm.weight', norm_w(E)),
          ('cls.predictions.transform.LayerNorm.bias', w(E, std=0.05))]
    return t


# ---- configs, as PretrainedConfig.save_pretrained writes them (indent 2, sorted keys) --------

TF_VERSION = '4.46.3'


def gpt2_config(V, eot):
    return {'activation_function': 'gelu_new', 'architectures': ['GPT2LMHeadModel'], 'attn_pdrop': 0.1,
            'bos_token_id': eot, 'embd_pdrop': 0.1, 'eos_token_id': eot, 'initializer_range': 0.02,
            'layer_norm_epsilon': 1e-05, 'model_type': 'gpt2', 'n_embd': 32, 'n_head': 4, 'n_inner': None,
            'n_layer': 2, 'n_positions': 32, 'reorder_and_upcast_attn': False, 'resid_pdrop': 0.1,
            'scale_attn_by_inverse_layer_idx': False, 'scale_attn_weights': True,
            'summary_activation': None, 'summary_first_dropout': 0.1, 'summary_proj_to_labels': True,
            'summary_type': 'cls_index', 'summary_use_proj': True, 'torch_dtype': 'float32',
            'transformers_version': TF_VERSION, 'use_cache': True, 'vocab_size': V}


def llama_config(V):
    return {'architectures': ['LlamaForCausalLM'], 'attention_bias': False, 'attention_dropout': 0.0,
            'bos_token_id': 1, 'eos_token_id': 2, 'head_dim': 8, 'hidden_act': 'silu', 'hidden_size': 32,
            'initializer_range': 0.02, 'intermediate_size': 64, 'max_position_embeddings': 64,
            'mlp_bias': False, 'model_type': 'llama', 'num_attention_heads': 4, 'num_hidden_layers': 2,
            'num_key_value_heads': 2, 'pretraining_tp': 1, 'rms_norm_eps': 1e-06, 'rope_scaling': None,
            'rope_theta': 500000.0, 'tie_word_embeddings': False, 'torch_dtype': 'float32',
            'transformers_version': TF_VERSION, 'use_cache': True, 'vocab_size': V}


def bert_config(V):
    return {'architectures': ['BertForMaskedLM'], 'attention_probs_dropout_prob': 0.1,
            'classifier_dropout': None, 'hidden_act': 'gelu', 'hidden_dropout_prob': 0.1, 'hidden_size': 32,
            'initializer_range': 0.02, 'intermediate_size': 64, 'layer_norm_eps': 1e-12,
            'max_position_embeddings': 32, 'model_type': 'bert', 'num_attention_heads': 4,
            'num_hidden_layers': 2, 'pad_token_id': 0, 'position_embedding_type': 'absolute',
            'torch_dtype': 'float32', 'transformers_version': TF_VERSION, 'type_vocab_size': 2,
            'use_cache': True, 'vocab_size': V}


def write_json(path, obj, pretty=True):
    with open(path, 'w', encoding='utf-8') as f:
        if pretty:
            json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write('\n')
        else:
            json.dump(obj, f, separators=(',', ':'), ensure_ascii=False)


def round_floats(x, digits=12):
    """Nested lists of float64, at `digits` significant digits (relative error
    below 1e-12: far under anything a float32 forward can resolve)."""
    if isinstance(x, list):
        return [round_floats(v, digits) for v in x]
    return float(f'{x:.{digits}g}')


def write_model(name, tensors, config, tokenizer, sequences):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, 'config.json'), config)
    write_json(os.path.join(d, 'tokenizer.json'), tokenizer, pretty=False)
    for fname, dt in (('model.safetensors', 'F32'), ('model-f16.safetensors', 'F16'), ('model-bf16.safetensors', 'BF16')):
        write_safetensors(os.path.join(d, fname), [(k, dt, v) for k, v in tensors], {'format': 'pt'})
    # The three files hold the same values.
    ref = read_safetensors(os.path.join(d, 'model.safetensors'))
    for fname in ('model-f16.safetensors', 'model-bf16.safetensors'):
        other = read_safetensors(os.path.join(d, fname))
        assert all(np.array_equal(ref[k], other[k]) for k in ref), fname
    cases = []
    for text, ids in sequences:
        r = forward(d, ids)
        j = result_json(r)
        case = {'text': text, 'ids': [int(i) for i in ids]}
        case.update({k: (None if v is None else round_floats(v)) for k, v in j.items()})
        cases.append(case)
    params = int(sum(v.size for _, v in tensors))  # tied weights are not stored
    expected = {'model_type': config['model_type'], 'architecture': config['architectures'][0],
                'dtype_files': ['model.safetensors', 'model-f16.safetensors', 'model-bf16.safetensors'],
                'parameters': params, 'tensors': [k for k, _ in tensors],
                'shapes': {k: list(v.shape) for k, v in tensors}, 'cases': cases}
    write_json(os.path.join(d, 'expected.json'), expected, pretty=False)
    return d


def write_sharded(src, dst, tensors):
    """The same tensors in two BF16 shards + model.safetensors.index.json
    (hub checkpoints of this size are sharded bf16)."""
    os.makedirs(dst, exist_ok=True)
    for f in ('config.json', 'tokenizer.json'):
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    half = len(tensors) // 2
    shards = [tensors[:half], tensors[half:]]
    weight_map = {}
    total = 0
    for n, part in enumerate(shards, 1):
        fname = f'model-{n:05d}-of-{len(shards):05d}.safetensors'
        write_safetensors(os.path.join(dst, fname), [(k, 'BF16', v) for k, v in part], {'format': 'pt'})
        for k, v in part:
            weight_map[k] = fname
            total += v.size * 2
    write_json(os.path.join(dst, 'model.safetensors.index.json'),
               {'metadata': {'total_size': int(total)}, 'weight_map': dict(sorted(weight_map.items()))})
    with open(os.path.join(src, 'expected.json')) as f:
        exp = json.load(f)
    exp['dtype_files'] = ['model.safetensors.index.json']
    write_json(os.path.join(dst, 'expected.json'), exp, pretty=False)


# ---- tokenizer check through @huggingface/tokenizers ---------------------------------

NODE_CHECK = r"""
const fs = require('fs');
import('@huggingface/tokenizers').then(({ Tokenizer }) => {
  const jobs = JSON.parse(fs.readFileSync(0, 'utf8'));
  const out = {};
  for (const [dir, job] of Object.entries(jobs)) {
    const tok = new Tokenizer(JSON.parse(fs.readFileSync(dir + '/tokenizer.json', 'utf8')), {});
    out[dir] = job.texts.map((text) => {
      const e = tok.encode(text);
      return { text, ids: e.ids, tokens: e.tokens,
               decoded: tok.decode(e.ids, { skip_special_tokens: true }),
               decoded_with_special: tok.decode(e.ids) };
    });
  }
  process.stdout.write(JSON.stringify(out));
}).catch((e) => { console.error(e); process.exit(1); });
"""


def check_tokenizers(jobs):
    """jobs: {dir: {texts, expect: {text: ids}, roundtrip: fn(text) -> expected decode}}.
    Returns False (and says why) when node or the package is missing."""
    try:
        res = subprocess.run(['node', '-e', NODE_CHECK], input=json.dumps({d: {'texts': j['texts']} for d, j in jobs.items()}),
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f'tokenizer check skipped: {e}')
        return False
    if res.returncode != 0:
        print('tokenizer check skipped: ' + res.stderr.strip().splitlines()[-1] if res.stderr.strip() else 'node failed')
        return False
    out = json.loads(res.stdout)
    for d, job in jobs.items():
        for s in out[d]:
            if s['text'] in job['expect']:
                assert s['ids'] == job['expect'][s['text']], (d, s['text'], s['ids'], job['expect'][s['text']])
            want = job['roundtrip'](s['text'])
            assert s['decoded'] == want, (d, s['text'], s['decoded'], want)
        write_json(os.path.join(d, 'tokenizer-samples.json'),
                   {'note': 'What @huggingface/tokenizers 0.2.0 gives for tokenizer.json (documentation only; '
                            'written by tests/reference/hf_models.py generate).', 'samples': out[d]})
    return True


# ---- generate ------------------------------------------------------------------------

def generate():
    kept = {}  # tokenizer-samples.json, put back if node cannot check the tokenizers
    for n in ('gpt2', 'llama', 'llama-sharded', 'bert'):
        f = os.path.join(OUT, n, 'tokenizer-samples.json')
        if os.path.exists(f):
            with open(f, encoding='utf-8') as fh:
                kept[f] = fh.read()
        shutil.rmtree(os.path.join(OUT, n), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)

    # gpt2
    tok, enc, eot = gpt2_tokenizer()
    V = eot + 1
    g_texts = ['The cat sat on the mat.', 'Attention is all you need', 'the dog sat on the log, and the cat']
    g_seqs = [(g_texts[0], enc(g_texts[0])), (g_texts[1], enc(g_texts[1]) + [eot]),
              (g_texts[2], enc(g_texts[2]))]
    for _, ids in g_seqs:
        assert 5 <= len(ids) <= 12, ids
    tw = gpt2_weights(V)
    gdir = write_model('gpt2', tw, gpt2_config(V, eot), tok, g_seqs)

    # llama
    ltok, lenc = llama_tokenizer()
    LV = len(ltok['model']['vocab'])
    l_texts = ['The cat sat on the mat.', 'Hello 🐱 world!', 'The dog is on the log.']
    l_seqs = [(t, lenc(t)) for t in l_texts]
    for _, ids in l_seqs:
        assert 5 <= len(ids) <= 12, ids
    lw = llama_weights(LV)
    ldir = write_model('llama', lw, llama_config(LV), ltok, l_seqs)
    write_sharded(ldir, os.path.join(OUT, 'llama-sharded'), lw)

    # bert
    btok, benc, bvocab = bert_tokenizer()
    BV = len(bvocab)
    b_texts = ['the cat [MASK] on the mat.', 'Hello [MASK] world!', 'the dog is walking with a cat']
    b_seqs = [(t, benc(t)) for t in b_texts]
    for _, ids in b_seqs:
        assert 5 <= len(ids) <= 12, ids
    bw = bert_weights(BV)
    bdir = write_model('bert', bw, bert_config(BV), btok, b_seqs)

    # The sharded folder and the F16/BF16 files read back to the same values.
    sh = forward(os.path.join(OUT, 'llama-sharded'), l_seqs[0][1])
    full = forward(ldir, l_seqs[0][1])
    assert np.array_equal(sh['logits'], full['logits'])
    for fname in ('model-f16.safetensors', 'model-bf16.safetensors'):
        for d, seqs in ((gdir, g_seqs), (ldir, l_seqs), (bdir, b_seqs)):
            assert np.array_equal(forward(d, seqs[0][1], fname)['logits'], forward(d, seqs[0][1])['logits'])

    emoji = 'I like 🐱'
    chinese = '你好，注意力机制'
    jobs = {
        gdir: {'texts': g_texts + ['Hello world! 你好', chinese, emoji, 'cat<|endoftext|>dog'],
               'expect': {t: ids for t, ids in zip(g_texts, [enc(t) for t in g_texts])},
               'roundtrip': lambda t: t.replace('<|endoftext|>', '')},
        ldir: {'texts': l_texts + [chinese, emoji, '  two  spaces'],
               'expect': dict(l_seqs), 'roundtrip': lambda t: t},
        bdir: {'texts': b_texts + ['the cat sat on the mat.', 'The Cats played with the Dog!', '你好'],
               'expect': dict(b_seqs, **{'the cat sat on the mat.': benc('the cat sat on the mat.')}),
               'roundtrip': None},
    }
    # WordPiece decode: lower case, '[UNK]' for '好', cleanup joins ' .' and ' !'.
    bert_decoded = {'the cat [MASK] on the mat.': 'the cat on the mat.', 'Hello [MASK] world!': 'hello world!',
                    'the dog is walking with a cat': 'the dog is walking with a cat',
                    'the cat sat on the mat.': 'the cat sat on the mat.',
                    'The Cats played with the Dog!': 'the cats played with the dog!', '你好': '你'}
    jobs[bdir]['roundtrip'] = lambda t: bert_decoded[t]
    checked = check_tokenizers(jobs)
    if not checked:
        for f, text in kept.items():
            if os.path.isdir(os.path.dirname(f)):
                with open(f, 'w', encoding='utf-8') as fh:
                    fh.write(text)
    write_readme()
    total = 0
    for dp, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(dp, f)) for f in files)
    print(f'wrote {os.path.normpath(OUT)}: {total} bytes; vocab gpt2 {V}, llama {LV}, bert {BV}; '
          f'tokenizers {"checked with @huggingface/tokenizers" if checked else "NOT checked"}')


README = """# Tiny Hugging Face language models

Written by `tests/reference/hf_models.py` (numpy only, deterministic;
nothing from `web/`, `src/` or `bindings/`):

```sh
/usr/bin/python3 tests/reference/hf_models.py generate     # Debian python3-numpy
/usr/bin/python3 tests/reference/hf_models.py forward tests/golden/models/gpt2 --ids 263,270,274 [--weights model-f16.safetensors] [--out FILE]
/usr/bin/python3 tests/reference/hf_models.py selfcheck    # vs tests/golden/weights (make_weights.py)
```

`forward` runs the float64 reference on any Hugging Face folder (config.json +
model.safetensors, or the shards of model.safetensors.index.json; F32, F16 or
BF16) and prints `{ids, logits [L][V], attentions [layer][head][L][L],
hidden_states [L][E]}` (logits null for a BERT checkpoint without `cls.*`).

Each folder is a model folder as `save_pretrained` writes it: `config.json`
(the family's own keys, sorted, indent 2), `tokenizer.json`, the weights,
`expected.json` and `tokenizer-samples.json`.

| folder | model | shape | what it checks |
| --- | --- | --- | --- |
| `gpt2/` | GPT2LMHeadModel | 2 layers, n_embd 32, 4 heads, n_positions 32, vocab 297 | learned positions, pre-LN, Conv1D [in, out], c_attn split q/k/v, causal, gelu_new, ln_f, LM head tied to `wte` |
| `llama/` | LlamaForCausalLM | 2 layers, hidden 32, 4 heads / 2 kv heads, head_dim 8, intermediate 64, vocab 324 | RMSNorm eps 1e-6, RoPE rotate_half with rope_theta 500000 (not 10000), GQA, SwiGLU, untied `lm_head` |
| `llama-sharded/` | the same weights | two BF16 shards + `model.safetensors.index.json` | shard reading; the same `expected.json` |
| `bert/` | BertForMaskedLM | 2 layers, hidden 32, 4 heads, intermediate 64, 32 positions, 2 token types, vocab 87 | word + position + token-type embeddings, post-LN, erf GELU, bidirectional, MLM head, decoder tied to the word embeddings + `cls.predictions.bias` |

- Weights: `model.safetensors` (F32), `model-f16.safetensors` and
  `model-bf16.safetensors` hold the same values: drawn, rounded to bfloat16,
  nonzero magnitudes lifted to at least 2^-14, so they are exact in the three
  dtypes and one reference serves all. In each layer the first two heads have
  large q/k weights (sharp attention), the third moderate, the last small.
  Tied weights are not stored (as `save_pretrained` leaves them out: no
  `lm_head.weight` in gpt2, no `cls.predictions.decoder.*` in bert); names
  as on the hub (gpt2 without the `transformer.` prefix, no `attn.bias`
  buffers; bert with `bert.`).
- `expected.json`: `{model_type, architecture, dtype_files, parameters
  (num_parameters(): tied weights once), tensors (names in file order),
  shapes, cases: [{text, ids, logits [L][V], attentions [layer][head][L][L],
  hidden_states [L][E]}]}`. `hidden_states` is transformers'
  last_hidden_state (after `ln_f` / `model.norm` for gpt2 / llama, the last
  encoder layer for bert). Float64 values at 12 significant digits. The ids
  are the tokenizer's ids of `text` (gpt2 case 2 ends with `<|endoftext|>`;
  llama ids start with `<s>` and case 2 holds the byte-fallback tokens of an
  emoji; bert cases hold `[MASK]`).
- Tokenizers: gpt2 byte-level BPE (the 256 byte symbols of bytes_to_unicode
  in GPT-2's order, ids 0..255, 40 merges learned from an English sentence,
  `<|endoftext|>` last, an added special token); llama BPE with byte
  fallback as TinyLlama's tokenizer.json (Prepend/Replace `▁` normalizer, no
  pre-tokenizer, `<s>` added by TemplateProcessing, decoder
  Replace/ByteFallback/Fuse/Strip; 40 merges learned on `▁`-words, then the
  single characters, `你` and `好` among them); bert WordPiece (BertNormalizer
  lowercase, BertPreTokenizer, `##` pieces, `[CLS] $A [SEP]`).
- Special tokens: gpt2 `<|endoftext|>` 296 = bos = eos; llama `<unk>` 0,
  `<s>` 1, `</s>` 2, bytes `<0x00>`..`<0xFF>` 3..258; bert `[PAD]` 0,
  `[UNK]` 1, `[CLS]` 2, `[SEP]` 3, `[MASK]` 4.
- `tokenizer-samples.json`: what `@huggingface/tokenizers` gives for a few
  texts (Chinese, an emoji) and its decodes: documentation, not a test
  input. `generate` checks that the library loads each tokenizer.json, gives
  the ids of `expected.json` for their texts and decodes the samples back.
"""


def write_readme():
    with open(os.path.join(OUT, 'README.md'), 'w') as f:
        f.write(README)


# ---- self-check against tests/golden/weights (make_weights.py) ------------------------

def selfcheck():
    """The attention of layer 1 of tests/golden/weights/hf_gpt2 and
    hf_llama_bf16, by this file's building blocks, against the expectations
    that make_weights.py wrote: a slip in a shared convention (Conv1D layout,
    q/k/v split, head split, rotate_half, repeat_kv) shows as a mismatch."""
    gw = os.path.join(ROOT, 'tests', 'golden', 'weights')
    worst = 0.0
    for name in ('hf_gpt2', 'hf_gpt2_f16'):
        t = read_safetensors(os.path.join(gw, name + '.safetensors'))
        with open(os.path.join(gw, name + '.expected.json')) as f:
            e = json.load(f)
        H = e['num_heads']['data'][0]
        ln1 = np.array(e['ln_1']['data']).reshape(e['ln_1']['shape'])
        for b in range(ln1.shape[0]):
            E = ln1.shape[-1]
            qkv = ln1[b] @ t['h.1.attn.c_attn.weight'] + t['h.1.attn.c_attn.bias']
            q, k, v = (heads(qkv[:, j * E:(j + 1) * E], H) for j in range(3))
            ctx, pr = attend(q, k, v, 1 / math.sqrt(E // H), causal=True)
            a = merge(ctx) @ t['h.1.attn.c_proj.weight'] + t['h.1.attn.c_proj.bias']
            want_a = np.array(e['attn']['data']).reshape(e['attn']['shape'])[b]
            want_p = np.array(e['weights']['data']).reshape(e['weights']['shape'])[b]
            worst = max(worst, np.abs(a - want_a).max(), np.abs(pr - want_p).max())
    t = read_safetensors(os.path.join(gw, 'hf_llama_bf16.safetensors'))
    with open(os.path.join(gw, 'hf_llama_bf16.expected.json')) as f:
        e = json.load(f)
    H, Hkv = e['num_heads']['data'][0], e['num_kv_heads']['data'][0]
    theta = e['rope_theta']['data'][0]
    x = np.array(e['x']['data']).reshape(e['x']['shape'])
    p = 'model.layers.1.self_attn.'
    for b in range(x.shape[0]):
        pos = np.arange(x.shape[1])
        q = rope(heads(x[b] @ t[p + 'q_proj.weight'].T, H), theta, pos)
        k = rope(heads(x[b] @ t[p + 'k_proj.weight'].T, Hkv), theta, pos)
        v = heads(x[b] @ t[p + 'v_proj.weight'].T, Hkv)
        D = q.shape[-1]
        ctx, pr = attend(q, np.repeat(k, H // Hkv, axis=0), np.repeat(v, H // Hkv, axis=0), D ** -0.5, causal=True)
        y = merge(ctx) @ t[p + 'o_proj.weight'].T
        want_y = np.array(e['output']['data']).reshape(e['output']['shape'])[b]
        want_p = np.array(e['weights']['data']).reshape(e['weights']['shape'])[b]
        worst = max(worst, np.abs(y - want_y).max(), np.abs(pr - want_p).max())
    print(f'selfcheck: largest difference from tests/golden/weights {worst:.3g}')
    return 0 if worst < 1e-9 else 1


# ---- CLI -----------------------------------------------------------------------------

def main(argv):
    if len(argv) >= 1 and argv[0] == 'generate':
        generate()
        return 0
    if len(argv) >= 1 and argv[0] == 'selfcheck':
        return selfcheck()
    if len(argv) >= 2 and argv[0] == 'forward':
        folder, ids, out, weights = argv[1], None, None, None
        i = 2
        while i < len(argv):
            if argv[i] == '--ids':
                ids = [int(s) for s in argv[i + 1].split(',') if s.strip()]
            elif argv[i] == '--out':
                out = argv[i + 1]
            elif argv[i] == '--weights':
                weights = argv[i + 1]
            else:
                raise SystemExit(f'unknown option {argv[i]}')
            i += 2
        if not ids:
            raise SystemExit('--ids 1,2,3 is required')
        j = result_json(forward(folder, ids, weights))
        j = {'ids': ids, **j}
        text = json.dumps(j, separators=(',', ':'))
        if out:
            with open(out, 'w') as f:
                f.write(text)
        else:
            sys.stdout.write(text + '\n')
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
