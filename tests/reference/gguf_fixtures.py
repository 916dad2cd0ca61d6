#!/usr/bin/python3
"""Writes tiny GGUF fixtures into tests/golden/gguf/ from the spec
(llama.cpp ggml/docs/gguf.md, ggml-common.h block layouts, ggml-quants.c
quantize_row_*_ref / dequantize_row_*), with numpy only, independent of the JS
reader. Outputs:
  tiny.gguf            v3, F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K tensors + metadata
  tiny-v2.gguf         the same metadata and two tensors as version 2
  tiny.ref.json        header facts and the float64 dequantized values
  bad-*.gguf           one hostile file per refusal
  models/<family>-<type>.gguf   the golden checkpoints tests/golden/models/
                       {llama,qwen2,gpt2} converted as llama.cpp's
                       convert_hf_to_gguf.py converts them (F32, F16, Q8_0)
  models/<family>-q4_0.gguf     every matrix Q4_0 (llama-quantize --pure)
  models/{llama,qwen2}-bf16.gguf  --outtype bf16
  models/<folder>-{f32,f16,q8_0,q4_0}.gguf and .expected.json  the goldens of
                       issue 32's decoders (qwen3, gemma, gemma2, gemma3, phi3,
                       gpt_neox, gpt_neox-sequential, mistral, no tokenizer) as
                       the converter writes them (Mistral as llama, Gemma's
                       norms as 1 + w, GPT-NeoX's qkv regrouped), with the
                       float64 reference (hf_families.py) on each file's
                       dequantised weights under llama.cpp's reading of the
                       file (gguf_reading)
  models/<family>-{q8_0,q4_0}.expected.json   the float64 reference's logits
                       on the dequantised weights (tests/reference/hf_models.py
                       and hf_families.py run them)
  models/bad-*.gguf    model-level refusals (architecture, missing tensor,
                       wrong shape, truncated)
Run: /usr/bin/python3 tests/reference/gguf_fixtures.py
"""
import json, os, re, struct, sys
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), '..', 'golden', 'gguf')
QK_K = 256
TYPES = {'F32': (0, 1, 4), 'F16': (1, 1, 2), 'Q4_0': (2, 32, 18), 'Q4_1': (3, 32, 20), 'Q8_0': (8, 32, 34),
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




# ---- the golden checkpoints as convert_hf_to_gguf.py writes them ---------------
#
# Names: gguf-py/gguf/tensor_mapping.py (HF name -> MODEL_TENSOR) and
# constants.py TENSOR_NAMES (MODEL_TENSOR -> 'blk.{bid}.attn_q' ...).
# Layout: LlamaModel.modify_tensors permutes the rows of q_proj/k_proj
# (LlamaModel.permute, for llama.cpp's interleaved RoPE); Qwen2Model keeps the
# HF layout (NEOX RoPE); GPT2Model.modify_tensors transposes the Conv1D
# weights (c_attn, c_proj, c_fc) to [out, in] and drops attn.bias/masked_bias.
# Types (ModelBase.prepare_tensors): 1-D tensors, *_norm.weight and
# position_embd stay F32; the other matrices take the output type.
# Metadata: set_gguf_parameters of TextModel/LlamaModel/GPT2Model.

MODELS = os.path.join(os.path.dirname(__file__), '..', 'golden', 'models')
OUT_MODELS = os.path.join(OUT, 'models')
FILE_TYPE = {'F32': 0, 'F16': 1, 'Q4_0': 2, 'Q8_0': 7, 'BF16': 32}  # llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0, MOSTLY_BF16
# Q4_0 is what llama-quantize --pure writes (every matrix Q4_0); the converter writes the others.
QUANTIZED = ('Q8_0', 'Q4_0')
TOKEN_TYPE = {'normal': 1, 'unknown': 2, 'control': 3, 'user_defined': 4, 'byte': 6}

LLAMA_NAMES = {  # HF (within model.layers.N.) -> GGUF (within blk.N.)
    'input_layernorm': 'attn_norm', 'self_attn.q_proj': 'attn_q', 'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v', 'self_attn.o_proj': 'attn_output', 'post_attention_layernorm': 'ffn_norm',
    'mlp.gate_proj': 'ffn_gate', 'mlp.up_proj': 'ffn_up', 'mlp.down_proj': 'ffn_down'}
LLAMA_GLOBAL = {'model.embed_tokens': 'token_embd', 'model.norm': 'output_norm', 'lm_head': 'output'}
GPT2_NAMES = {'ln_1': 'attn_norm', 'attn.c_attn': 'attn_qkv', 'attn.c_proj': 'attn_output', 'ln_2': 'ffn_norm',
              'mlp.c_fc': 'ffn_up', 'mlp.c_proj': 'ffn_down'}
GPT2_GLOBAL = {'wte': 'token_embd', 'wpe': 'position_embd', 'ln_f': 'output_norm', 'lm_head': 'output'}
# The decoders of issue 32 (tensor_mapping.py): q_norm/k_norm -> attn_q_norm/attn_k_norm;
# Phi-3's fused qkv_proj -> attn_qkv and gate_up_proj -> ffn_up (kept fused);
# Gemma 2/3's four norms: post_attention_layernorm -> post_attention_norm,
# pre_feedforward_layernorm -> ffn_norm, post_feedforward_layernorm -> post_ffw_norm.
DECODER_NAMES = {**LLAMA_NAMES, 'self_attn.q_norm': 'attn_q_norm', 'self_attn.k_norm': 'attn_k_norm',
                 'self_attn.qkv_proj': 'attn_qkv', 'mlp.gate_up_proj': 'ffn_up'}
SANDWICH_NAMES = {**DECODER_NAMES, 'post_attention_layernorm': 'post_attention_norm',
                  'pre_feedforward_layernorm': 'ffn_norm', 'post_feedforward_layernorm': 'post_ffw_norm'}
NEOX_NAMES = {'input_layernorm': 'attn_norm', 'attention.query_key_value': 'attn_qkv', 'attention.dense': 'attn_output',
              'post_attention_layernorm': 'ffn_norm', 'mlp.dense_h_to_4h': 'ffn_up', 'mlp.dense_4h_to_h': 'ffn_down'}
NEOX_GLOBAL = {'gpt_neox.embed_in': 'token_embd', 'gpt_neox.final_layer_norm': 'output_norm', 'embed_out': 'output'}
# golden folder -> (model_type of its config.json, general.architecture the converter writes):
# MistralForCausalLM is registered on LlamaModel (arch llama, Q/K permuted);
# Gemma3ForCausalLM on Gemma3Model (arch gemma3); GPTNeoXForCausalLM on GPTNeoXModel (gptneox).
ARCH = {'llama': 'llama', 'qwen2': 'qwen2', 'gpt2': 'gpt2', 'mistral': 'llama', 'qwen3': 'qwen3', 'gemma': 'gemma',
        'gemma2': 'gemma2', 'gemma3': 'gemma3', 'phi3': 'phi3', 'gpt_neox': 'gptneox', 'gpt_neox-sequential': 'gptneox'}
GEMMAS = ('gemma', 'gemma2', 'gemma3')
NEOX = ('gpt_neox', 'gpt_neox-sequential')


def u32(v):
    return struct.pack('<I', 4) + struct.pack('<I', v)


def f32v(v):
    return struct.pack('<I', 6) + struct.pack('<f', v)


def strv(v):
    return struct.pack('<I', 8) + s(v)


def boolv(v):
    return struct.pack('<I', 7) + struct.pack('<B', 1 if v else 0)


def arr(elem, values):
    if elem == 8:
        body = b''.join(s(v) for v in values)
    elif elem == 6:
        body = struct.pack(f'<{len(values)}f', *values)
    else:
        body = struct.pack(f'<{len(values)}i', *values)
    return struct.pack('<I', 9) + struct.pack('<IQ', elem, len(values)) + body


def meta(pairs):
    return [s(k) + v for k, v in pairs]


def permute(w, n_head, n_head_kv):  # convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):  # its inverse, for the reference only
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_safetensors(path):
    sys.path.insert(0, os.path.dirname(__file__))
    from hf_models import read_safetensors
    return {k: np.asarray(v, dtype=np.float32) for k, v in read_safetensors(path).items()}


def gguf_name(family, hf):
    stem, suffix = hf.rsplit('.', 1)
    if family == 'gpt2':
        names, glob, layer = GPT2_NAMES, GPT2_GLOBAL, r'h\.(\d+)\.'
    elif family in NEOX:
        names, glob, layer = NEOX_NAMES, NEOX_GLOBAL, r'gpt_neox\.layers\.(\d+)\.'
    else:
        names = SANDWICH_NAMES if family in ('gemma2', 'gemma3') else DECODER_NAMES
        glob, layer = LLAMA_GLOBAL, r'model\.layers\.(\d+)\.'
    m = re.match(layer + '(.+)$', stem)
    if m:
        return f'blk.{m.group(1)}.{names[m.group(2)]}.{suffix}'
    return f'{glob[stem]}.{suffix}'


def convert_tensors(family, cfg, tensors):
    """[(gguf name, torch-order float32 array)] in the file's order."""
    out = []
    for hf, w in tensors.items():
        if family == 'gpt2' and re.search(r'\.attn\.(bias|masked_bias)$', hf):
            continue
        if family in GEMMAS and hf == 'lm_head.weight':
            continue  # GemmaModel/Gemma2Model.filter_tensors skip lm_head (tied)
        if family in GEMMAS and hf.endswith('norm.weight'):
            # GemmaModel.modify_tensors: `if name.endswith("norm.weight"): data_torch = data_torch + 1`
            # (after prepare_tensors cast bf16 to float32); Gemma3Model.norm_shift likewise,
            # q_norm/k_norm included.
            w = (w.astype(f32) + f32(1)).astype(f32)
        if family in NEOX and re.search(r'query_key_value\.(weight|bias)$', hf):
            # GPTNeoXModel.modify_tensors: qkv.reshape((n_head, 3, n_embed // n_head, n_embed)) and
            # torch.cat of [:, 0], [:, 1], [:, 2] (the bias likewise)
            H, E = cfg['num_attention_heads'], cfg['hidden_size']
            r = w.reshape((H, 3, E // H) + w.shape[1:])
            w = np.concatenate([r[:, j].reshape((-1,) + w.shape[1:]) for j in range(3)], axis=0)
        if family == 'gpt2' and w.ndim == 2 and re.search(r'\.(c_attn|c_proj|c_fc)\.weight$', hf):
            w = w.T.copy()
        if ARCH[family] == 'llama':
            H, Hkv = cfg['num_attention_heads'], cfg.get('num_key_value_heads')
            if re.search(r'q_proj\.(weight|bias)$', hf):
                w = permute(w, H, H)
            if re.search(r'k_proj\.(weight|bias)$', hf):
                w = permute(w, H, Hkv)
        out.append((gguf_name(family, hf), w))
    return out


def qtype_of(name, w, outtype):
    if w.ndim <= 1 or name.endswith('_norm.weight') or name.startswith('position_embd') or not name.endswith('.weight'):
        return 'F32'
    if outtype in QUANTIZED and w.shape[-1] % 32:
        return 'F16'  # convert_hf_to_gguf.py falls back to F16 when a row is not whole blocks
    return outtype


def raw_of(typ, w):
    if typ == 'F32':
        return w.astype('<f4').tobytes()
    if typ == 'F16':
        return w.astype('<f2').tobytes()
    if typ == 'BF16':
        sys.path.insert(0, os.path.dirname(__file__))
        from hf_models import bf16_bits
        return bf16_bits(w).tobytes()
    return q8_0(w.reshape(-1)) if typ == 'Q8_0' else q4_0(w.reshape(-1))


def tokenizer_meta(family, cfg, tok):
    """tokenizer.ggml.* from tokenizer.json, as convert_hf_to_gguf.py's
    _set_vocab_gpt2 (gpt2) and a SentencePiece vocab (llama) write them."""
    model = tok['model']
    vocab = dict(model['vocab'])
    for a in tok.get('added_tokens', []):
        vocab.setdefault(a['content'], a['id'])
    n = max(vocab.values()) + 1
    tokens = [None] * n
    for t, i in vocab.items():
        tokens[i] = t
    assert all(t is not None for t in tokens), 'ids must be dense'
    special = {a['id'] for a in tok.get('added_tokens', []) if a.get('special')}
    merges = [m if isinstance(m, str) else ' '.join(m) for m in model['merges']]
    if family == 'gpt2':
        types = [TOKEN_TYPE['control'] if i in special else TOKEN_TYPE['normal'] for i in range(n)]
        pairs = [('tokenizer.ggml.model', strv('gpt2')), ('tokenizer.ggml.pre', strv('gpt-2')),
                 ('tokenizer.ggml.tokens', arr(8, tokens)), ('tokenizer.ggml.token_type', arr(5, types)),
                 ('tokenizer.ggml.merges', arr(8, merges))]
        for key in ('bos', 'eos'):
            if isinstance(cfg.get(f'{key}_token_id'), int):
                pairs.append((f'tokenizer.ggml.{key}_token_id', u32(cfg[f'{key}_token_id'])))
        return pairs
    # llama: the SentencePiece fields. LlamaHfVocab (the tokenizer.json-only
    # path of convert_hf_to_gguf.py) writes the placeholder score -1000 for
    # every piece, from which neither llama.cpp's SPM tokenizer nor
    # transformers' GGUF converter can recover the merge order; a real Llama
    # GGUF is converted from tokenizer.model, whose BPE pieces carry scores in
    # merge order (SentencePiece's bpe_model_trainer: score = -(index of the
    # piece)). So each piece a merge makes scores -(rank of its first merge),
    # single characters score below every merge, and control/byte/unknown 0.
    score = {}
    for r, m in enumerate(merges):
        a, b = m.split(' ')
        score.setdefault(a + b, -float(r))
    scores, types = [], []
    for i, t in enumerate(tokens):
        if re.fullmatch(r'<0x[0-9A-Fa-f]{2}>', t):
            types.append(TOKEN_TYPE['byte']); scores.append(0.0)
        elif t == model.get('unk_token'):
            types.append(TOKEN_TYPE['unknown']); scores.append(0.0)
        elif i in special:
            types.append(TOKEN_TYPE['control']); scores.append(0.0)
        else:
            types.append(TOKEN_TYPE['normal']); scores.append(score.get(t, -1000.0 - i))
    unk = vocab[model['unk_token']]
    return [('tokenizer.ggml.model', strv('llama')), ('tokenizer.ggml.pre', strv('default')),
            ('tokenizer.ggml.tokens', arr(8, tokens)), ('tokenizer.ggml.scores', arr(6, scores)),
            ('tokenizer.ggml.token_type', arr(5, types)),
            ('tokenizer.ggml.bos_token_id', u32(cfg['bos_token_id'])), ('tokenizer.ggml.eos_token_id', u32(cfg['eos_token_id'])),
            ('tokenizer.ggml.unknown_token_id', u32(unk)),
            ('tokenizer.ggml.add_bos_token', boolv(True)), ('tokenizer.ggml.add_eos_token', boolv(False))]


def model_meta(family, cfg, outtype):
    arch = ARCH[family]
    pairs = [('general.architecture', strv(arch)), ('general.name', strv(f'golden-{family}'))]
    if family in NEOX:
        # GPTNeoXModel.set_gguf_parameters
        E, H = cfg['hidden_size'], cfg['num_attention_heads']
        pairs += [(f'{arch}.context_length', u32(cfg['max_position_embeddings'])), (f'{arch}.embedding_length', u32(E)),
                  (f'{arch}.block_count', u32(cfg['num_hidden_layers'])), (f'{arch}.feed_forward_length', u32(cfg['intermediate_size'])),
                  (f'{arch}.rope.dimension_count', u32(int(cfg['rotary_pct'] * (E // H)))),
                  (f'{arch}.attention.head_count', u32(H)),
                  (f'{arch}.use_parallel_residual', boolv(cfg.get('use_parallel_residual', True))),
                  (f'{arch}.attention.layer_norm_epsilon', f32v(cfg['layer_norm_eps']))]
    elif family in GEMMAS:
        # GemmaModel / Gemma2Model.set_gguf_parameters (no rope.freq_base); Gemma3Model: TextModel's,
        # then rope.freq_base of the global layers and the window (sliding_window_pattern != 1)
        H = cfg['num_attention_heads']
        pairs += [(f'{arch}.context_length', u32(cfg['max_position_embeddings'])), (f'{arch}.embedding_length', u32(cfg['hidden_size'])),
                  (f'{arch}.block_count', u32(cfg['num_hidden_layers'])), (f'{arch}.feed_forward_length', u32(cfg['intermediate_size'])),
                  (f'{arch}.attention.head_count', u32(H)), (f'{arch}.attention.head_count_kv', u32(cfg.get('num_key_value_heads') or H)),
                  (f'{arch}.attention.layer_norm_rms_epsilon', f32v(cfg['rms_norm_eps'])),
                  (f'{arch}.attention.key_length', u32(cfg['head_dim'])), (f'{arch}.attention.value_length', u32(cfg['head_dim']))]
        if family == 'gemma2':
            pairs += [(f'{arch}.attn_logit_softcapping', f32v(cfg['attn_logit_softcapping'])),
                      (f'{arch}.final_logit_softcapping', f32v(cfg['final_logit_softcapping'])),
                      (f'{arch}.attention.sliding_window', u32(cfg['sliding_window']))]
        if family == 'gemma3':
            pairs += [(f'{arch}.rope.freq_base', f32v(cfg['rope_theta']))]
            if cfg.get('final_logit_softcapping'):
                pairs += [(f'{arch}.final_logit_softcapping', f32v(cfg['final_logit_softcapping']))]
            if cfg.get('sliding_window_pattern') != 1:
                pairs += [(f'{arch}.attention.sliding_window', u32(cfg['sliding_window']))]
    elif family == 'phi3':
        # Phi3MiniModel.set_gguf_parameters
        E, H = cfg['hidden_size'], cfg['num_attention_heads']
        pairs += [(f'{arch}.context_length', u32(cfg['max_position_embeddings'])),
                  (f'{arch}.rope.scaling.original_context_length', u32(cfg['original_max_position_embeddings'])),
                  (f'{arch}.embedding_length', u32(E)), (f'{arch}.feed_forward_length', u32(cfg['intermediate_size'])),
                  (f'{arch}.block_count', u32(cfg['num_hidden_layers'])), (f'{arch}.attention.head_count', u32(H)),
                  (f'{arch}.attention.head_count_kv', u32(cfg['num_key_value_heads'])),
                  (f'{arch}.attention.layer_norm_rms_epsilon', f32v(cfg['rms_norm_eps'])),
                  (f'{arch}.rope.dimension_count', u32(int(cfg.get('partial_rotary_factor', 1.0) * E) // H)),
                  (f'{arch}.rope.freq_base', f32v(cfg['rope_theta'])),
                  (f'{arch}.attention.sliding_window', u32(cfg.get('sliding_window') or 0))]
    elif family == 'gpt2':
        E = cfg['n_embd']
        pairs += [(f'{arch}.block_count', u32(cfg['n_layer'])), (f'{arch}.context_length', u32(cfg.get('n_ctx') or cfg['n_positions'])),
                  (f'{arch}.embedding_length', u32(E)), (f'{arch}.feed_forward_length', u32(4 * E)),
                  (f'{arch}.attention.head_count', u32(cfg['n_head'])),
                  (f'{arch}.attention.layer_norm_epsilon', f32v(cfg['layer_norm_epsilon']))]
    else:
        H = cfg['num_attention_heads']
        D = cfg.get('head_dim') or cfg['hidden_size'] // H
        pairs += [(f'{arch}.block_count', u32(cfg['num_hidden_layers'])), (f'{arch}.context_length', u32(cfg['max_position_embeddings'])),
                  (f'{arch}.embedding_length', u32(cfg['hidden_size'])), (f'{arch}.feed_forward_length', u32(cfg['intermediate_size'])),
                  (f'{arch}.attention.head_count', u32(H)), (f'{arch}.attention.head_count_kv', u32(cfg.get('num_key_value_heads') or H)),
                  (f'{arch}.rope.freq_base', f32v(cfg['rope_theta'])),
                  (f'{arch}.attention.layer_norm_rms_epsilon', f32v(cfg['rms_norm_eps']))]
        if arch == 'llama':
            pairs += [(f'{arch}.vocab_size', u32(cfg['vocab_size'])), (f'{arch}.rope.dimension_count', u32(D))]
        if cfg.get('head_dim') is not None:  # TextModel.set_gguf_parameters: key_length/value_length from head_dim
            pairs += [(f'{arch}.attention.key_length', u32(D)), (f'{arch}.attention.value_length', u32(D))]
    pairs.append(('general.file_type', u32(FILE_TYPE[outtype])))
    if outtype in QUANTIZED:
        pairs.append(('general.quantization_version', u32(2)))
    return pairs


def gguf_reading(family, cfg):
    """The config.json that llama.cpp's reading of the converted file stands
    for, where it differs from the checkpoint's (the file does not hold it):
      mistral  written as llama (LlamaModel): no sliding window in the file,
               llama.cpp's llama runs full causal attention;
      gemma2   no query_pre_attn_scalar: llama.cpp scales by head_dim^-0.5
               (E/H for the 46-layer 27B), layers alternate (set_swa_pattern(2));
      gemma3   set_swa_pattern(6) whatever layer_types said, the local base
               10000, the scale as gemma2's (62 layers: the 27B);
      gemmas   the embeddings scaled by sqrtf(n_embd) in float32 (the bf16
               goldens' reference rounds it to bf16): spec(..., 'F32').
    """
    c = dict(cfg)
    if family == 'mistral':
        c['sliding_window'] = None
    if family in ('gemma2', 'gemma3'):
        big = {'gemma2': 46, 'gemma3': 62}[family]
        c['query_pre_attn_scalar'] = c['hidden_size'] // c['num_attention_heads'] if c['num_hidden_layers'] == big else c['head_dim']
    if family == 'gemma3':
        n = c['num_hidden_layers']
        c['sliding_window_pattern'] = 6
        c['rope_local_base_freq'] = 10000.0
        c['layer_types'] = ['sliding_attention' if (i + 1) % 6 else 'full_attention' for i in range(n)]
    return c


def reference_logits(family, cfg, tensors, ids):
    """The float64 references of tests/reference on `tensors` (HF names and layouts)."""
    sys.path.insert(0, os.path.dirname(__file__))
    if family not in ('llama', 'qwen2', 'gpt2'):
        import hf_families as hff
        sp = hff.spec(gguf_reading(family, cfg), 'F32')
        return hff.forward_batched(sp, hff.W({k: v.astype(np.float64) for k, v in tensors.items()}, sp), ids)['logits']
    if family == 'qwen2':
        import hf_families as hff
        sp = hff.spec(cfg, 'F32')
        return hff.forward_batched(sp, hff.W({k: v.astype(np.float64) for k, v in tensors.items()}, sp), ids)['logits']
    import hf_models as hfm
    r = hfm.FAMILIES[family](cfg, {k: v.astype(np.float64) for k, v in tensors.items()}, np.asarray(ids))
    return r['logits'][0]


def back_to_hf(family, cfg, name, w, hf_names):
    """The Q8_0 file's dequantised tensor under its HF name and layout (the reference's input)."""
    hf = hf_names[name]
    if family == 'gpt2' and w.ndim == 2 and re.search(r'\.(c_attn|c_proj|c_fc)\.weight$', hf):
        w = w.T.copy()
    if family in GEMMAS and hf.endswith('norm.weight'):
        w = w.astype(np.float64) - 1.0  # the file holds 1 + w
    if family in NEOX and re.search(r'query_key_value\.(weight|bias)$', hf):
        H, E = cfg['num_attention_heads'], cfg['hidden_size']
        blocks = w.reshape((3, H, E // H) + w.shape[1:])  # q | k | v, each [H, D, ...]
        w = np.stack([blocks[j] for j in range(3)], axis=1).reshape(w.shape)  # back to [H][q|k|v][D]
    if ARCH[family] == 'llama':
        H, Hkv = cfg['num_attention_heads'], cfg.get('num_key_value_heads') or cfg['num_attention_heads']
        if re.search(r'q_proj\.(weight|bias)$', hf):
            w = unpermute(w, H)
        if re.search(r'k_proj\.(weight|bias)$', hf):
            w = unpermute(w, Hkv)
    return hf, w


def model_fixtures():
    os.makedirs(OUT_MODELS, exist_ok=True)
    made = {}
    for family in ('llama', 'qwen2', 'gpt2'):
        d = os.path.join(MODELS, family)
        cfg = json.load(open(os.path.join(d, 'config.json')))
        expected = json.load(open(os.path.join(d, 'expected.json')))
        src = expected.get('dtype_files', ['model.safetensors'])[0]
        tensors = load_safetensors(os.path.join(d, src))
        tok_path = os.path.join(d, 'tokenizer.json')
        tok = tokenizer_meta(family, cfg, json.load(open(tok_path))) if os.path.exists(tok_path) else []
        converted = convert_tensors(family, cfg, tensors)
        hf_names = {gguf_name(family, hf): hf for hf in tensors}
        for outtype in ('F32', 'F16', 'Q8_0', 'Q4_0') + (('BF16',) if family != 'gpt2' else ()):
            items = [(name, list(w.shape), qtype_of(name, w, outtype), raw_of(qtype_of(name, w, outtype), w)) for name, w in converted]
            data = gguf(3, meta(model_meta(family, cfg, outtype) + tok), items)
            path = os.path.join(OUT_MODELS, f'{family}-{outtype.lower()}.gguf')
            open(path, 'wb').write(data)
            made[(family, outtype)] = (items, cfg, tok)
            print(f'{os.path.relpath(path)}: {len(data)} bytes')
            if outtype in QUANTIZED:
                deq_t = dict(back_to_hf(family, cfg, n, deq(t, raw, int(np.prod(sh))).reshape(sh).astype(np.float32), hf_names)
                             for n, sh, t, raw in items)
                cases = []
                for c in expected['cases']:
                    lg = reference_logits(family, cfg, deq_t, c['ids'])
                    full = np.asarray(c['logits'], dtype=np.float64)
                    cases.append({'ids': c['ids'], 'logits': np.round(lg, 9).tolist(),
                                  'max_rel_to_f32': float(np.max(np.abs(lg - full)) / np.max(np.abs(full)))})
                json.dump({'note': f'float64 logits of the dequantised {outtype} weights (tests/reference/gguf_fixtures.py); '
                           'max_rel_to_f32: how far quantisation moved them from the F32 golden',
                           'family': family, 'type': outtype, 'cases': cases},
                          open(os.path.join(OUT_MODELS, f'{family}-{outtype.lower()}.expected.json'), 'w'))
    # The decoders of issue 32, without tokenizers (the goldens have none).
    # Every type gets its reference on the file's own (dequantised) weights,
    # under llama.cpp's reading of the file (gguf_reading).
    for family in ('qwen3', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neox-sequential', 'mistral'):
        d = os.path.join(MODELS, family)
        cfg = json.load(open(os.path.join(d, 'config.json')))
        expected = json.load(open(os.path.join(d, 'expected.json')))
        tensors = load_safetensors(os.path.join(d, expected.get('dtype_files', ['model.safetensors'])[0]))
        converted = convert_tensors(family, cfg, tensors)
        hf_names = {gguf_name(family, hf): hf for hf in tensors}
        for outtype in ('F32', 'F16', 'Q8_0', 'Q4_0'):
            items = [(name, list(w.shape), qtype_of(name, w, outtype), raw_of(qtype_of(name, w, outtype), w)) for name, w in converted]
            data = gguf(3, meta(model_meta(family, cfg, outtype)), items)
            stem = f'{family}-{outtype.lower()}'
            open(os.path.join(OUT_MODELS, f'{stem}.gguf'), 'wb').write(data)
            print(f'{os.path.relpath(os.path.join(OUT_MODELS, stem))}.gguf: {len(data)} bytes')
            deq_t = dict(back_to_hf(family, cfg, n, deq(t, raw, int(np.prod(sh))).reshape(sh).astype(np.float32), hf_names)
                         for n, sh, t, raw in items)
            cases = []
            for c in expected['cases']:
                lg = reference_logits(family, cfg, deq_t, c['ids'])
                full = np.asarray(c['logits'], dtype=np.float64)
                cases.append({'ids': c['ids'], 'logits': np.round(lg, 9).tolist(),
                              'max_rel_to_golden': float(np.max(np.abs(lg - full)) / np.max(np.abs(full)))})
            json.dump({'note': f'float64 logits of the {outtype} file\'s dequantised weights under llama.cpp\'s reading of the '
                       'file (tests/reference/gguf_fixtures.py gguf_reading); max_rel_to_golden: how far the type and the '
                       'reading moved them from the golden checkpoint\'s expected.json',
                       'family': family, 'architecture': ARCH[family], 'type': outtype,
                       'reading': {k: v for k, v in gguf_reading(family, cfg).items() if cfg.get(k) != v}, 'cases': cases},
                      open(os.path.join(OUT_MODELS, f'{stem}.expected.json'), 'w'))
        if family == 'phi3':
            # Phi3MiniModel.generate_extra_tensors for longrope: rope_factors_long/short [rope_dims / 2]
            half = int(cfg.get('partial_rotary_factor', 1.0) * cfg['hidden_size']) // cfg['num_attention_heads'] // 2
            extra = [(n, [half], 'F32', np.ones(half, f32).tobytes()) for n in ('rope_factors_long.weight', 'rope_factors_short.weight')]
            open(os.path.join(OUT_MODELS, 'bad-phi3-longrope.gguf'), 'wb').write(gguf(3, meta(model_meta(family, cfg, 'F32')), extra + items))
        if family == 'gemma3':
            # TextModel.set_gguf_parameters for rope_scaling {rope_type: linear, factor: 8} (gemma-3-4b and larger)
            scaled = model_meta(family, cfg, 'F32') + [(f'{ARCH[family]}.rope.scaling.type', strv('linear')),
                                                        (f'{ARCH[family]}.rope.scaling.factor', f32v(8.0))]
            open(os.path.join(OUT_MODELS, 'bad-gemma3-rope-linear.gguf'), 'wb').write(gguf(3, meta(scaled), items))
    # Model-level refusals, from the small qwen2 Q8_0 file.
    items, cfg, tok = made[('qwen2', 'Q8_0')]
    base = meta(model_meta('qwen2', cfg, 'Q8_0'))
    arch = [m for m in base if not m.startswith(s('general.architecture'))]
    bad = {
        'arch': gguf(3, meta([('general.architecture', strv('mamba'))]) + arch, items),
        'no-arch': gguf(3, arch, items),
        'missing-tensor': gguf(3, base, [it for it in items if it[0] != 'blk.1.ffn_down.weight']),
        'wrong-shape': gguf(3, [m.replace(struct.pack('<I', 64), struct.pack('<I', 96)) if m.startswith(s('qwen2.feed_forward_length')) else m for m in base], items),
        'truncated': gguf(3, base, items)[:-100],
        'unknown-type-tensor': gguf(3, base, [it if it[0] != 'blk.0.ffn_up.weight' else (it[0], it[1], 'Q4_1', b'\0' * (int(np.prod(it[1])) // 32 * 20)) for it in items]),
    }
    for k, v in bad.items():
        open(os.path.join(OUT_MODELS, f'bad-{k}.gguf'), 'wb').write(v)


def q4_k(x):
    """Q4_K super-blocks of x (a multiple of 256 values): a plain quantizer
    (each sub-block's range over 15 steps, its scale and min rounded to 6 bits
    under the block's d and dmin), not llama.cpp's make_qkx2_quants search:
    any valid block is a valid file, and the reference reads the values back
    with deq (dequantize_row_q4_K) whatever chose them."""
    out = b''
    for sb in x.reshape(-1, 256).astype(f32):
        subs = sb.reshape(8, 32)
        lo = np.minimum(subs.min(axis=1), 0).astype(np.float64)
        scale = (subs.max(axis=1) - lo) / 15
        d = f32(h2f(half_bits(scale.max() / 63)))
        dmin = f32(h2f(half_bits(-lo.min() / 63)))
        sc = np.clip(np.round(scale / d), 1, 63).astype(int) if d > 0 else np.zeros(8, int)
        m = np.clip(np.round(-lo / dmin), 0, 63).astype(int) if dmin > 0 else np.zeros(8, int)
        q = np.zeros((8, 32), int)
        for s_ in range(8):
            step = float(f32(d * f32(sc[s_])))
            q[s_] = np.clip(np.round((subs[s_] + float(f32(dmin * f32(m[s_])))) / step), 0, 15) if step > 0 else 0
        scales = bytearray(12)
        for i in range(4):
            scales[i] = sc[i] | ((sc[i + 4] >> 4) << 6)
            scales[i + 4] = m[i] | ((m[i + 4] >> 4) << 6)
            scales[i + 8] = (sc[i + 4] & 15) | ((m[i + 4] & 15) << 4)
        qs = bytearray(128)
        for g in range(4):
            for l in range(32):
                qs[32 * g + l] = q[2 * g][l] | (q[2 * g + 1][l] << 4)
        out += struct.pack('<HH', half_bits(d), half_bits(dmin)) + bytes(scales) + bytes(qs)
    return out


def q6_k(x):
    """Q6_K super-blocks of x: each sub-block of 16 scaled to ±31 steps, its
    int8 scale under the block's d (a plain quantizer, as q4_k)."""
    out = b''
    for sb in x.reshape(-1, 256).astype(f32):
        subs = sb.reshape(16, 16).astype(np.float64)
        scale = np.abs(subs).max(axis=1) / 31
        d = f32(h2f(half_bits(scale.max() / 127)))
        sc = np.clip(np.round(scale / d), 1, 127).astype(int) if d > 0 else np.zeros(16, int)
        q = np.zeros(256, int)
        for s_ in range(16):
            step = float(f32(d * f32(sc[s_])))
            q[16 * s_:16 * s_ + 16] = np.clip(np.round(subs[s_] / step) + 32, 0, 63) if step > 0 else 32
        ql, qh = bytearray(128), bytearray(64)
        for n in range(2):
            for l in range(32):
                a, b2, c, e = (q[128 * n + l + 32 * k] for k in range(4))
                ql[64 * n + l] = (a & 15) | ((c & 15) << 4)
                ql[64 * n + l + 32] = (b2 & 15) | ((e & 15) << 4)
                qh[32 * n + l] = (a >> 4) | ((b2 >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6)
        out += bytes(ql) + bytes(qh) + np.asarray(sc, np.int8).tobytes() + struct.pack('<H', half_bits(d))
    return out


def k_quant_fixtures():
    """models/kquant-{q4_k_m,q6_k}.gguf + .expected.json: a tiny llama whose
    rows are 256 (and 512) values long, the K-quants' super-block, with
    generated weights (seeded normal, std 0.05): every matrix Q6_K; or as
    llama-quantize's Q4_K_M mixes them, Q4_K with attn_v, ffn_down and
    output in Q6_K. The reference: hf_models' llama on the dequantised
    weights (deq), unpermuted as the loader does."""
    cfg = {'model_type': 'llama', 'architectures': ['LlamaForCausalLM'], 'hidden_size': 256, 'intermediate_size': 512,
           'num_attention_heads': 4, 'num_key_value_heads': 1, 'num_hidden_layers': 1, 'vocab_size': 48,
           'max_position_embeddings': 64, 'rms_norm_eps': 1e-6, 'rope_theta': 10000.0, 'hidden_act': 'silu',
           'tie_word_embeddings': False, 'attention_bias': False, 'mlp_bias': False, 'head_dim': 64, 'rope_scaling': None}
    rng = np.random.default_rng(256)
    E, F, V, H, Hkv, D = 256, 512, 48, 4, 1, 64
    hf = {'model.embed_tokens.weight': (V, E)}
    p = 'model.layers.0.'
    for name, shape in (('self_attn.q_proj', (H * D, E)), ('self_attn.k_proj', (Hkv * D, E)), ('self_attn.v_proj', (Hkv * D, E)),
                        ('self_attn.o_proj', (E, H * D)), ('mlp.gate_proj', (F, E)), ('mlp.up_proj', (F, E)), ('mlp.down_proj', (E, F))):
        hf[p + name + '.weight'] = shape
    tensors = {k: (rng.standard_normal(s) * 0.05).astype(f32) for k, s in hf.items()}
    tensors[p + 'input_layernorm.weight'] = (1 + 0.05 * rng.standard_normal(E)).astype(f32)
    tensors[p + 'post_attention_layernorm.weight'] = (1 + 0.05 * rng.standard_normal(E)).astype(f32)
    tensors['model.norm.weight'] = (1 + 0.05 * rng.standard_normal(E)).astype(f32)
    tensors['lm_head.weight'] = (rng.standard_normal((V, E)) * 0.05).astype(f32)
    converted = convert_tensors('llama', cfg, tensors)
    hf_names = {gguf_name('llama', k): k for k in tensors}
    ids_cases = [[1, 7, 30, 2, 11, 45, 3], [5, 5, 19, 40, 0, 23, 8, 12, 9]]
    for stem, ftype, typ_of in (('q4_k_m', 15, lambda n: 'Q6_K' if re.search(r'(attn_v|ffn_down)\.weight$|^output\.weight$', n) else 'Q4_K'),
                                ('q6_k', 18, lambda n: 'Q6_K')):
        items = []
        for name, w in converted:
            t = typ_of(name) if w.ndim == 2 else 'F32'
            raw = w.astype('<f4').tobytes() if t == 'F32' else (q4_k if t == 'Q4_K' else q6_k)(w.reshape(-1))
            items.append((name, list(w.shape), t, raw))
        pairs = [pr for pr in model_meta('llama', cfg, 'F32') if not pr[0].startswith('general.file_type')]
        pairs += [('general.file_type', u32(ftype)), ('general.quantization_version', u32(2))]
        data = gguf(3, meta(pairs), items)
        path = os.path.join(OUT_MODELS, f'kquant-{stem}.gguf')
        open(path, 'wb').write(data)
        print(f'{os.path.relpath(path)}: {len(data)} bytes')
        deq_t = dict(back_to_hf('llama', cfg, n, deq(t, raw, int(np.prod(sh))).reshape(sh).astype(np.float32), hf_names)
                     for n, sh, t, raw in items)
        cases = []
        for ids in ids_cases:
            lg = reference_logits('llama', cfg, deq_t, ids)
            full = reference_logits('llama', cfg, tensors, ids)
            cases.append({'ids': ids, 'logits': np.round(lg, 9).tolist(),
                          'max_rel_to_f32': float(np.max(np.abs(lg - full)) / np.max(np.abs(full)))})
        json.dump({'note': f'float64 logits of the dequantised {stem.upper()} weights (tests/reference/gguf_fixtures.py '
                   'k_quant_fixtures); max_rel_to_f32: how far quantisation moved them from the float32 weights',
                   'types': sorted({t for _, _, t, _ in items}), 'cases': cases},
                  open(os.path.join(OUT_MODELS, f'kquant-{stem}.expected.json'), 'w'))


if __name__ == '__main__':
    import sys as _sys
    if _sys.argv[1:] == ['kquant']:
        k_quant_fixtures()
    else:
        main()
        model_fixtures()
        k_quant_fixtures()
