#!/usr/bin/python3
"""Writes the weight-file test cases under tests/golden/weights/.

numpy only, independent of attention-lab: safetensors files are written by
the format spec (8-byte little-endian header length, JSON header, data), .npy
and .npz by numpy itself (np.save / np.savez). Each model file comes with
NAME.expected.json: the inputs (float32) and the outputs computed in float64
with the source framework's semantics, re-implemented here from the
frameworks' code:

  torch_mha*          torch.nn.MultiheadAttention (in_proj rows q, k, v;
                      q/k/v_proj_weight when kdim/vdim != E)
  torch_encoder       nn.TransformerEncoderLayer's attention half (post-LN):
                      norm1(x + self_attn(x))
  hf_bert             BertSelfAttention + BertSelfOutput:
                      LayerNorm(dense(context) + x), eps 1e-12, padding mask
  hf_gpt2(_f16)       GPT2Attention (Conv1D: y = x·W + b, W [in, out]),
                      causal; the block is pre-LN: x + attn(ln_1(x)), so the
                      expected file holds ln_1(x) and attn(ln_1(x)) apart
  hf_llama_bf16       LlamaAttention: GQA (4 query heads, 2 kv heads), RoPE
                      (rotate_half, theta 10000), causal, no biases
  keras_mha           keras.layers.MultiHeadAttention: kernels [in, H, D],
                      output kernel [H, D, E], query scaled by 1/sqrt(D)

Run: /usr/bin/python3 tests/reference/make_weights.py   (deterministic)
"""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'weights')
rng = np.random.default_rng(20261130)


# ---- containers ------------------------------------------------------------

def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet)."""
    u = np.asarray(a, dtype='<f4').view('<u4').astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype('<u2')
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    r[nan] = ((u[nan] >> 16) | 0x40).astype('<u2')
    return r


def bf16_to_f32(bits):
    return (bits.astype('<u4') << 16).view('<f4')


ST_DTYPES = {'F32': '<f4', 'F16': '<f2', 'F64': '<f8', 'I32': '<i4', 'I64': '<i8', 'U8': 'u1', 'BOOL': '?'}


def write_safetensors(name, tensors, metadata=None):
    """tensors: list of (name, dtype, array); BF16 arrays are given as float32."""
    header = {}
    if metadata:
        header['__metadata__'] = metadata
    blobs = []
    offset = 0
    for key, dtype, arr in tensors:
        arr = np.asarray(arr)
        data = bf16_bits(arr).tobytes() if dtype == 'BF16' else np.ascontiguousarray(arr, dtype=ST_DTYPES[dtype]).tobytes()
        header[key] = {'dtype': dtype, 'shape': list(arr.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(',', ':')).encode('utf-8')
    text += b' ' * (-len(text) % 8)
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def save_expected(name, **arrays):
    """NAME.expected.json: {key: {shape, data}} (float64 values as numbers;
    float32 arrays whose bits matter as {shape, bits} of uint32)."""
    out = {}
    for k, a in arrays.items():
        a = np.asarray(a)
        if a.dtype == np.float32 and not np.isfinite(a).all():
            out[k] = {'shape': list(a.shape), 'bits': a.view('<u4').ravel().tolist()}
        elif a.dtype.kind in 'iub':
            out[k] = {'shape': list(a.shape), 'data': a.astype(np.int64).ravel().tolist()}
        else:
            out[k] = {'shape': list(a.shape), 'data': a.astype(np.float64).ravel().tolist()}
    with open(os.path.join(OUT, name + '.expected.json'), 'w') as f:
        json.dump(out, f, separators=(',', ':'))


# ---- float64 references of the frameworks' semantics ------------------------

def f32(a):
    return np.asarray(a, dtype=np.float32)


def rnd(*shape, scale=0.5):
    return f32(rng.standard_normal(shape) * scale)


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def split_heads(x, h):  # [B, L, H*D] -> [B, H, L, D]
    b, l, e = x.shape
    return x.reshape(b, l, h, e // h).transpose(0, 2, 1, 3)


def merge_heads(x):  # [B, H, L, D] -> [B, L, H*D]
    b, h, l, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, l, h * d)


def attend(q, k, v, mask_add=None):
    """q [B,H,Lq,D], k/v [B,H,Lk,D]; scale 1/sqrt(D); returns context, probs."""
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if mask_add is not None:
        s = s + mask_add
    p = softmax(s)
    return p @ v, p


def layer_norm(x, g, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def causal_add(lq, lk):
    return np.where(np.tril(np.ones((lq, lk), dtype=bool)), 0.0, -np.inf)


def d64(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def torch_mha(q, k, v, wq, bq, wk, bk, wv, bv, wo, bo, heads, mask_add=None):
    q, k, v, wq, bq, wk, bk, wv, bv, wo, bo = d64(q, k, v, wq, bq, wk, bk, wv, bv, wo, bo)
    Q = split_heads(q @ wq.T + bq, heads)
    K = split_heads(k @ wk.T + bk, heads)
    V = split_heads(v @ wv.T + bv, heads)
    ctx, p = attend(Q, K, V, mask_add)
    return merge_heads(ctx) @ wo.T + bo, p


# ---- cases -------------------------------------------------------------------

B, L, E, H = 2, 5, 8, 2


def case_torch_mha():
    w_in, b_in = rnd(3 * E, E), rnd(3 * E, scale=0.1)
    wo, bo = rnd(E, E), rnd(E, scale=0.1)
    write_safetensors('torch_mha.safetensors', [
        ('in_proj_weight', 'F32', w_in), ('in_proj_bias', 'F32', b_in),
        ('out_proj.weight', 'F32', wo), ('out_proj.bias', 'F32', bo)])
    lk = 4
    q, k, v = rnd(B, L, E, scale=1), rnd(B, lk, E, scale=1), rnd(B, lk, E, scale=1)
    # torch: w_q, w_k, w_v = in_proj_weight.chunk(3); same for the bias.
    y, p = torch_mha(q, k, v, w_in[:E], b_in[:E], w_in[E:2 * E], b_in[E:2 * E], w_in[2 * E:], b_in[2 * E:], wo, bo, H)
    save_expected('torch_mha', query=q, key=k, value=v, output=y, weights=p, num_heads=np.int32(H))
    # add_bias_kv=True: refused by the mapping.
    write_safetensors('torch_mha_bias_kv.safetensors', [
        ('in_proj_weight', 'F32', w_in), ('in_proj_bias', 'F32', b_in),
        ('bias_k', 'F32', rnd(1, 1, E)), ('bias_v', 'F32', rnd(1, 1, E)),
        ('out_proj.weight', 'F32', wo), ('out_proj.bias', 'F32', bo)])


def case_torch_mha_kvdim():
    kdim, vdim = 6, 5
    wq, wk, wv = rnd(E, E), rnd(E, kdim), rnd(E, vdim)
    b_in, wo, bo = rnd(3 * E, scale=0.1), rnd(E, E), rnd(E, scale=0.1)
    np.savez(os.path.join(OUT, 'torch_mha_kvdim.npz'), **{
        'q_proj_weight': wq, 'k_proj_weight': wk, 'v_proj_weight': wv,
        'in_proj_bias': b_in, 'out_proj.weight': wo, 'out_proj.bias': bo})
    q, k, v = rnd(B, L, E, scale=1), rnd(B, 3, kdim, scale=1), rnd(B, 3, vdim, scale=1)
    y, p = torch_mha(q, k, v, wq, b_in[:E], wk, b_in[E:2 * E], wv, b_in[2 * E:], wo, bo, H)
    save_expected('torch_mha_kvdim', query=q, key=k, value=v, output=y, weights=p, num_heads=np.int32(H))


def case_torch_encoder():
    tensors = []
    params = {}
    for i in range(2):
        p = f'layers.{i}.'
        w_in, b_in, wo, bo = rnd(3 * E, E), rnd(3 * E, scale=0.1), rnd(E, E), rnd(E, scale=0.1)
        g, b = f32(1 + rnd(E, scale=0.2)), rnd(E, scale=0.2)
        tensors += [(p + 'self_attn.in_proj_weight', 'F32', w_in), (p + 'self_attn.in_proj_bias', 'F32', b_in),
                    (p + 'self_attn.out_proj.weight', 'F32', wo), (p + 'self_attn.out_proj.bias', 'F32', bo),
                    (p + 'linear1.weight', 'F32', rnd(16, E)), (p + 'linear1.bias', 'F32', rnd(16)),
                    (p + 'norm1.weight', 'F32', g), (p + 'norm1.bias', 'F32', b),
                    (p + 'norm2.weight', 'F32', f32(np.ones(E))), (p + 'norm2.bias', 'F32', f32(np.zeros(E)))]
        params[i] = (w_in, b_in, wo, bo, g, b)
    write_safetensors('torch_encoder.safetensors', tensors)
    w_in, b_in, wo, bo, g, b = params[1]
    x = rnd(B, L, E, scale=1)
    a, p = torch_mha(x, x, x, w_in[:E], b_in[:E], w_in[E:2 * E], b_in[E:2 * E], w_in[2 * E:], b_in[2 * E:], wo, bo, H)
    # TransformerEncoderLayer, norm_first=False: x = norm1(x + self_attn(x)).
    y = layer_norm(np.float64(x) + a, np.float64(g), np.float64(b), 1e-5)
    save_expected('torch_encoder', x=x, output=y, weights=p, num_heads=np.int32(H))


def case_hf_bert():
    tensors = [('bert.embeddings.word_embeddings.weight', 'F32', rnd(12, E))]
    params = {}
    for i in range(2):
        p = f'bert.encoder.layer.{i}.attention.'
        w = {n: (rnd(E, E), rnd(E, scale=0.1)) for n in ['query', 'key', 'value', 'dense']}
        g, b = f32(1 + rnd(E, scale=0.2)), rnd(E, scale=0.2)
        for n in ['query', 'key', 'value']:
            tensors += [(p + f'self.{n}.weight', 'F32', w[n][0]), (p + f'self.{n}.bias', 'F32', w[n][1])]
        tensors += [(p + 'output.dense.weight', 'F32', w['dense'][0]), (p + 'output.dense.bias', 'F32', w['dense'][1]),
                    (p + 'output.LayerNorm.weight', 'F32', g), (p + 'output.LayerNorm.bias', 'F32', b),
                    (f'bert.encoder.layer.{i}.intermediate.dense.weight', 'F32', rnd(16, E))]
        params[i] = (w, g, b)
    write_safetensors('hf_bert.safetensors', tensors, {'format': 'pt'})
    w, g, b = params[1]
    x = rnd(B, L, E, scale=1)
    lengths = np.array([5, 3], dtype=np.int32)
    # BertModel: extended mask (1 - attention_mask) * finfo.min, added to the scores.
    keep = np.arange(L)[None, :] < lengths[:, None]
    add = np.where(keep, 0.0, -np.inf)[:, None, None, :]
    a, p = torch_mha(x, x, x, w['query'][0], w['query'][1], w['key'][0], w['key'][1],
                     w['value'][0], w['value'][1], w['dense'][0], w['dense'][1], H, add)
    y = layer_norm(np.float64(x) + a, np.float64(g), np.float64(b), 1e-12)
    save_expected('hf_bert', x=x, lengths=lengths, output=y, weights=p, num_heads=np.int32(H))


def gpt2_case(name, dtype):
    def q(a):  # the values the file holds
        return f32(np.asarray(a, dtype=np.float16)) if dtype == 'F16' else a
    tensors = [('wte.weight', dtype, q(rnd(12, E))), ('wpe.weight', dtype, q(rnd(L, E)))]
    params = {}
    for i in range(2):
        p = f'h.{i}.'
        wa, ba, wp, bp = q(rnd(E, 3 * E)), q(rnd(3 * E, scale=0.1)), q(rnd(E, E)), q(rnd(E, scale=0.1))
        g, b = q(f32(1 + rnd(E, scale=0.2))), q(rnd(E, scale=0.2))
        tensors += [(p + 'ln_1.weight', dtype, g), (p + 'ln_1.bias', dtype, b),
                    (p + 'attn.bias', 'BOOL', np.tril(np.ones((1, 1, L, L), dtype=bool))),
                    (p + 'attn.c_attn.weight', dtype, wa), (p + 'attn.c_attn.bias', dtype, ba),
                    (p + 'attn.c_proj.weight', dtype, wp), (p + 'attn.c_proj.bias', dtype, bp),
                    (p + 'ln_2.weight', dtype, q(f32(np.ones(E)))), (p + 'mlp.c_fc.weight', dtype, q(rnd(E, 16)))]
        params[i] = (wa, ba, wp, bp, g, b)
    write_safetensors(name + '.safetensors', tensors, {'format': 'pt'})
    wa, ba, wp, bp, g, b = d64(*params[1])
    x = rnd(B, L, E, scale=1)
    h = layer_norm(np.float64(x), g, b, 1e-5)  # ln_1, layer_norm_epsilon 1e-5
    h32 = f32(h)  # what the library's MHA is given
    # GPT2Attention: Conv1D c_attn (x·W + b), split into q, k, v along the last dim.
    qkv = np.float64(h32) @ wa + ba
    Q, K, V = (split_heads(qkv[..., j * E:(j + 1) * E], H) for j in range(3))
    ctx, pr = attend(Q, K, V, causal_add(L, L))
    a = merge_heads(ctx) @ wp + bp
    save_expected(name, x=x, ln_1=h32, attn=a, block=np.float64(x) + a, weights=pr, num_heads=np.int32(H))


def rope_half(x, theta):
    """HF Llama apply_rotary_pos_emb on x [B, H, L, D], positions 0..L-1."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(x.shape[2], dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(emb) + rot * np.sin(emb)


def case_hf_llama():
    e, h, hkv, d = 16, 4, 2, 4
    tensors = [('model.embed_tokens.weight', 'BF16', rnd(12, e))]
    params = {}
    for i in range(2):
        p = f'model.layers.{i}.'
        wq, wk, wv, wo = rnd(h * d, e), rnd(hkv * d, e), rnd(hkv * d, e), rnd(e, h * d)
        tensors += [(p + 'input_layernorm.weight', 'BF16', f32(1 + rnd(e, scale=0.2))),
                    (p + 'self_attn.q_proj.weight', 'BF16', wq), (p + 'self_attn.k_proj.weight', 'BF16', wk),
                    (p + 'self_attn.v_proj.weight', 'BF16', wv), (p + 'self_attn.o_proj.weight', 'BF16', wo),
                    (p + 'mlp.gate_proj.weight', 'BF16', rnd(32, e))]
        params[i] = tuple(bf16_to_f32(bf16_bits(w)) for w in (wq, wk, wv, wo))
    write_safetensors('hf_llama_bf16.safetensors', tensors, {'format': 'pt'})
    wq, wk, wv, wo = d64(*params[1])
    x = rnd(B, L, e, scale=1)  # the input after input_layernorm
    Q = rope_half(split_heads(np.float64(x) @ wq.T, h), 10000.0)
    K = rope_half(split_heads(np.float64(x) @ wk.T, hkv), 10000.0)
    V = split_heads(np.float64(x) @ wv.T, hkv)
    rep = h // hkv  # repeat_kv: query head j reads kv head j // rep
    ctx, pr = attend(Q, np.repeat(K, rep, axis=1), np.repeat(V, rep, axis=1), causal_add(L, L))
    y = merge_heads(ctx) @ wo.T
    save_expected('hf_llama_bf16', x=x, output=y, weights=pr, num_heads=np.int32(h),
                  num_kv_heads=np.int32(hkv), rope_theta=np.float64(10000.0))


def case_keras():
    kdim, vdim, d = 6, 5, E // H
    p = 'multi_head_attention/'
    wq, bq = rnd(E, H, d), rnd(H, d, scale=0.1)
    wk, bk = rnd(kdim, H, d), rnd(H, d, scale=0.1)
    wv, bv = rnd(vdim, H, d), rnd(H, d, scale=0.1)
    wo, bo = rnd(H, d, E), rnd(E, scale=0.1)
    np.savez(os.path.join(OUT, 'keras_mha.npz'), **{
        p + 'query/kernel': wq, p + 'query/bias': bq, p + 'key/kernel': wk, p + 'key/bias': bk,
        p + 'value/kernel': wv, p + 'value/bias': bv,
        p + 'attention_output/kernel': wo, p + 'attention_output/bias': bo})
    q, k, v = rnd(B, L, E, scale=1), rnd(B, 3, kdim, scale=1), rnd(B, 3, vdim, scale=1)
    wq, bq, wk, bk, wv, bv, wo, bo = d64(wq, bq, wk, bk, wv, bv, wo, bo)
    # keras MultiHeadAttention: EinsumDense projections, query * 1/sqrt(key_dim),
    # scores einsum('aecd,abcd->acbe', key, query), output einsum over [H, D, E].
    Q = np.einsum('ble,ehd->bhld', np.float64(q), wq) + bq[None, :, None, :]
    K = np.einsum('ble,ehd->bhld', np.float64(k), wk) + bk[None, :, None, :]
    V = np.einsum('ble,ehd->bhld', np.float64(v), wv) + bv[None, :, None, :]
    ctx, pr = attend(Q, K, V)
    y = np.einsum('bhld,hde->ble', ctx, wo) + bo
    save_expected('keras_mha', query=q, key=k, value=v, output=y, weights=pr, num_heads=np.int32(H))


def case_dtypes():
    specials = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 6.1035156e-05, 5.9604645e-08, 3.0e-08,
                         np.inf, -np.inf, np.nan, 1.0 / 3.0, 70000.0, 1e-9], dtype=np.float32)
    f16 = specials.astype(np.float16)
    bf = np.concatenate([specials, f32([3.4e38, 1.1754944e-38, 9.2e-41, -7.77])])
    bfbits = bf16_bits(bf)
    f64 = np.array([np.pi, -1e-300, 1e300, 2.0 ** -149, 1.0 + 2.0 ** -30], dtype=np.float64)
    i64 = np.array([0, -1, 2 ** 31 - 1, -2 ** 31, 42], dtype=np.int64)
    i32 = np.array([[7, -8], [2 ** 31 - 1, -2 ** 31]], dtype=np.int32)
    u8 = np.array([0, 1, 255], dtype=np.uint8)
    write_safetensors('dtypes.safetensors', [
        ('f16', 'F16', f16), ('f32_after_f16', 'F32', specials[:3]), ('bf16', 'BF16', bf),
        ('f64', 'F64', f64), ('i64', 'I64', i64), ('i32', 'I32', i32), ('u8', 'U8', u8),
        ('empty', 'F32', np.zeros((0, 3), dtype=np.float32))], {'note': 'dtype conversions'})
    save_expected('dtypes',
             f16_source=specials, bf16_source=bf,
             f16=f16.astype(np.float32), f32_after_f16=specials[:3], bf16=bf16_to_f32(bfbits),
             f64=f64.astype(np.float32), i64=i64.astype(np.int32), i32=i32, u8=u8.astype(np.int32))
    write_safetensors('i64_out_of_range.safetensors', [('ids', 'I64', np.array([1, 2 ** 40, 3], dtype=np.int64))])
    # .npy variants: big-endian, Fortran order, 2-D f16.
    a = np.arange(12, dtype=np.float64).reshape(3, 4) / 8
    np.save(os.path.join(OUT, 'fortran_f8.npy'), np.asfortranarray(a))
    np.save(os.path.join(OUT, 'big_endian_f4.npy'), a.astype('>f4'))
    np.save(os.path.join(OUT, 'f2.npy'), a.astype('<f2'))
    np.savez_compressed(os.path.join(OUT, 'compressed.npz'), a=a.astype(np.float32))


def case_attention_arrays():
    """Attention arrays for <attention-lab-model-view> (softmax rows, causal)."""
    layers, heads, n = 2, 3, 6
    s = rng.standard_normal((layers, heads, n, n)) * 2 + causal_add(n, n)
    p = softmax(s).astype(np.float32)
    np.save(os.path.join(OUT, 'attentions_2x3x6.npy'), p)
    tokens = ['the', 'cat', 'sat', 'on', 'a', 'mat']
    # As transformers returns them: one [B, H, L, L] array per layer.
    write_safetensors('attentions_per_layer.safetensors',
                      [(f'attentions.{i}', 'F32', p[i][None]) for i in range(layers)],
                      {'tokens': json.dumps(tokens)})


def main():
    os.makedirs(OUT, exist_ok=True)
    np.seterr(over='ignore')  # float16 casts of 70000 and 1e300 overflow on purpose
    case_torch_mha()
    case_torch_mha_kvdim()
    case_torch_encoder()
    case_hf_bert()
    gpt2_case('hf_gpt2', 'F32')
    gpt2_case('hf_gpt2_f16', 'F16')
    case_hf_llama()
    case_keras()
    case_dtypes()
    case_attention_arrays()
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f'wrote {len(os.listdir(OUT))} files, {total} bytes, to {os.path.normpath(OUT)}')


if __name__ == '__main__':
    main()
