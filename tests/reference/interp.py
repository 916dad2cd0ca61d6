"""Head scores (TransformerLens head_detector.py, "mul" measure) for the committed tiny gpt2 and
llama goldens, float64 numpy, independent of the library. Each score is computed twice, by 0/1
detection masks built as head_detector.py builds them (vectorised) and by plain loops over the
definitions; the two must agree to 1e-12. Writes tests/golden/models/<family>/head_scores.json.

Then the logit lens, direct logit attribution, ablation and activation patching (issue 33), each
two ways (see each *_case), into tests/golden/models/<family>/interp.json.

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


# ---- issue 33 items 2-5: logit lens, attribution, ablation, patching ---------------------------
# One float64 forward of the gpt2 / llama goldens with TransformerLens's hook points
# (resid_pre, z, attn_out, mlp_out), written here from the config and tensors (the families'
# modeling code as tests/reference/hf_models.py has it, whose logits it must reproduce).

class Net:
    """The tensors of a pre-norm family in one form: torch [out, in] projections."""

    def __init__(self, folder):
        cfg, tensors = hf_models.load_folder(folder)
        self.cfg = cfg
        self.family = cfg['model_type']
        if self.family == 'gpt2':
            t = hf_models.Tensors(tensors, ['', 'transformer.'])
            E, H = cfg['n_embd'], cfg['n_head']
            self.E, self.H, self.Hkv, self.N = E, H, H, cfg['n_layer']
            self.eps = cfg.get('layer_norm_epsilon', 1e-5)
            self.kind = 'ln'
            self.emb = t.get('wte.weight')
            self.pos = t.get('wpe.weight')
            self.theta = None
            self.layers = []
            for i in range(self.N):
                p = f'h.{i}.'
                w, b = t.get(p + 'attn.c_attn.weight'), t.get(p + 'attn.c_attn.bias')
                cfc, cpr = t.get(p + 'mlp.c_fc.weight'), t.get(p + 'mlp.c_proj.weight')
                bfc, bpr = t.get(p + 'mlp.c_fc.bias'), t.get(p + 'mlp.c_proj.bias')
                f = hf_models.act(cfg.get('activation_function', 'gelu_new'))
                self.layers.append(dict(
                    n1=(t.get(p + 'ln_1.weight'), t.get(p + 'ln_1.bias')),
                    n2=(t.get(p + 'ln_2.weight'), t.get(p + 'ln_2.bias')),
                    wq=w[:, :E].T, bq=b[:E], wk=w[:, E:2 * E].T, bk=b[E:2 * E], wv=w[:, 2 * E:].T, bv=b[2 * E:],
                    wo=t.get(p + 'attn.c_proj.weight').T, bo=t.get(p + 'attn.c_proj.bias'),
                    mlp=(lambda m, cfc=cfc, cpr=cpr, bfc=bfc, bpr=bpr, f=f: f(m @ cfc + bfc) @ cpr + bpr)))
            self.final = (t.get('ln_f.weight'), t.get('ln_f.bias'))
            self.wu, self.bu = self.emb, None
        else:
            t = hf_models.Tensors(tensors, [''])
            E, H = cfg['hidden_size'], cfg['num_attention_heads']
            self.E, self.H, self.N = E, H, cfg['num_hidden_layers']
            self.Hkv = cfg.get('num_key_value_heads') or H
            self.eps = cfg.get('rms_norm_eps', 1e-6)
            self.kind = 'rms'
            self.emb = t.get('model.embed_tokens.weight')
            self.pos = None
            self.theta = float(cfg.get('rope_theta', 10000.0))
            f = hf_models.act(cfg.get('hidden_act', 'silu'))
            self.layers = []

            def opt(name):
                return t.get(name, optional=True)
            for i in range(self.N):
                p = f'model.layers.{i}.self_attn.'
                m = f'model.layers.{i}.mlp.'
                g, u, d = (t.get(m + n + '.weight') for n in ('gate_proj', 'up_proj', 'down_proj'))
                self.layers.append(dict(
                    n1=(t.get(f'model.layers.{i}.input_layernorm.weight'), None),
                    n2=(t.get(f'model.layers.{i}.post_attention_layernorm.weight'), None),
                    wq=t.get(p + 'q_proj.weight'), bq=opt(p + 'q_proj.bias'),
                    wk=t.get(p + 'k_proj.weight'), bk=opt(p + 'k_proj.bias'),
                    wv=t.get(p + 'v_proj.weight'), bv=opt(p + 'v_proj.bias'),
                    wo=t.get(p + 'o_proj.weight'), bo=opt(p + 'o_proj.bias'),
                    mlp=(lambda a, g=g, u=u, d=d, f=f: (f(a @ g.T) * (a @ u.T)) @ d.T)))
            self.final = (t.get('model.norm.weight'), None)
            tied = cfg.get('tie_word_embeddings', False)
            self.wu, self.bu = (self.emb if tied else t.get('lm_head.weight')), None
        self.D = self.E // self.H
        self.V = self.emb.shape[0]

    def norm(self, x, wb):
        w, b = wb
        if self.kind == 'ln':
            return hf_models.layer_norm(x, w, b, self.eps)
        return hf_models.rms_norm(x, w, self.eps)

    def scale(self, x):
        """The final norm's denominator on each row of x (TransformerLens's ln_final hook_scale)."""
        if self.kind == 'ln':
            x = x - x.mean(axis=-1, keepdims=True)
        return np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps)

    def unembed(self, h):
        y = h @ self.wu.T
        return y + self.bu if self.bu is not None else y

    def run(self, ids, hook_z=None, hook_resid=None, start=0, resid=None, upto=None):
        """Forward with hooks: hook_z(l, z [H, L, D]) -> z; hook_resid(l, x [L, E]) -> x. With
        resid the blocks run from `start` on it (x_start). upto: stop after that many
        blocks. Returns the cache {resid_pre [N+1 of L,E], z, attn_out, mlp_out, pattern, logits}."""
        ids = np.asarray(ids)
        L = len(ids)
        H, Hkv, D = self.H, self.Hkv, self.D
        x = self.emb[ids] + (self.pos[np.arange(L)] if self.pos is not None else 0.0)
        c = {'embed': x.copy(), 'resid_pre': [], 'z': [], 'attn_out': [], 'mlp_out': [], 'pattern': [], 'head_out': []}
        n = self.N if upto is None else upto
        if resid is not None:
            x = resid.copy()
        for l in range(start, n):
            p = self.layers[l]
            if hook_resid is not None:
                x = hook_resid(l, x)
            c['resid_pre'].append(x.copy())
            a = self.norm(x, p['n1'])

            def lin(v, w, b):
                return v @ w.T + (b if b is not None else 0.0)
            q = hf_models.heads(lin(a, p['wq'], p['bq']), H)
            k = hf_models.heads(lin(a, p['wk'], p['bk']), Hkv)
            v = hf_models.heads(lin(a, p['wv'], p['bv']), Hkv)
            if self.theta is not None:
                q = hf_models.rope(q, self.theta, np.arange(L))
                k = hf_models.rope(k, self.theta, np.arange(L))
            rep = H // Hkv
            z, pr = hf_models.attend(q, np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0), D ** -0.5, causal=True)
            if hook_z is not None:
                z = hook_z(l, z)
            c['z'].append(z.copy())
            c['pattern'].append(pr)
            # each head's z_h W_O[:, h]ᵀ (TransformerLens's hook_result), then the bias
            c['head_out'].append(np.stack([z[h] @ p['wo'][:, h * D:(h + 1) * D].T for h in range(H)]))
            att = hf_models.merge(z) @ p['wo'].T + (p['bo'] if p['bo'] is not None else 0.0)
            c['attn_out'].append(att)
            x = x + att
            m = p['mlp'](self.norm(x, p['n2']))
            c['mlp_out'].append(m)
            x = x + m
        c['resid_pre'].append(x.copy())  # x_N (resid_post of the last block)
        c['logits'] = self.unembed(self.norm(x, self.final))
        return c


def ld_of(logits, target, baseline, pos=-1):
    return float(logits[pos, target] - logits[pos, baseline])


def lens_case(net, ids, k):
    """Logit lens two ways: the cache's residuals through the final norm (scale from each) and
    the head; and a rerun of the first r blocks alone for each r. Row N is hf_models' logits."""
    c = net.run(ids)
    a = np.stack([net.unembed(net.norm(x, net.final)) for x in c['resid_pre']])
    b = np.stack([net.run(ids, upto=r)['logits'] for r in range(net.N + 1)])
    assert np.abs(a - b).max() < 1e-10
    ref = hf_models.forward_gpt2 if net.family == 'gpt2' else hf_models.forward_llama
    hf = ref(net.cfg, hf_models.load_folder(FOLDERS[net.family])[1], np.asarray(ids))['logits'][0]
    assert np.abs(a[-1] - hf).max() < 1e-10
    p = hf_models.softmax(a)
    order = np.argsort(-a, axis=-1, kind='stable')[..., :k]
    return {'ids': [int(i) for i in ids], 'k': k, 'topIds': order.tolist(),
            'topProbs': np.take_along_axis(p, order, -1).tolist()}, a


def attribute_case(net, ids, position, target, baseline):
    """DLA with the final norm's scale frozen at x_N[position]; the parts' sum must equal the
    logit difference of the logits, and the heads must sum to attn_out less its bias."""
    c = net.run(ids)
    s = net.scale(c['resid_pre'][-1][position:position + 1])[0, 0]
    w, b = net.final
    d = net.wu[target] - net.wu[baseline]

    def part(v):  # apply_ln_to_stack (centre for LN, / frozen scale), then the weight, · direction
        v = np.asarray(v, dtype=np.float64)
        if net.kind == 'ln':
            v = v - v.mean()
        return float((v / s * w) @ d)
    heads = [[part(c['head_out'][l][h][position]) for h in range(net.H)] for l in range(net.N)]
    bias = [part(net.layers[l]['bo']) if net.layers[l]['bo'] is not None else 0.0 for l in range(net.N)]
    for l in range(net.N):
        bo = net.layers[l]['bo'] if net.layers[l]['bo'] is not None else 0.0
        assert np.abs(c['head_out'][l].sum(axis=0) + bo - c['attn_out'][l]).max() < 1e-10
    mlps = [part(c['mlp_out'][l][position]) for l in range(net.N)]
    const = float((b @ d) if b is not None else 0.0) + (float(net.bu[target] - net.bu[baseline]) if net.bu is not None else 0.0)
    embed = part(c['embed'][position])
    total = embed + sum(map(sum, heads)) + sum(bias) + sum(mlps) + const
    ld = ld_of(c['logits'], target, baseline, position)
    assert abs(total - ld) < 1e-10 * max(1.0, abs(ld)), (total, ld)
    return {'ids': [int(i) for i in ids], 'position': position, 'target': target, 'baseline': baseline,
            'embed': embed, 'heads': heads, 'attnBias': bias, 'mlps': mlps, 'constant': const, 'logitDiff': ld}


def ablate_hook(net, ablate):
    def hook(l, z):
        z = z.copy()
        for a in ablate:
            if a['layer'] == l:
                z[a['head']] = 0.0 if a['mode'] == 'zero' else z[a['head']].mean(axis=0, keepdims=True)
        return z
    return hook


def ablate_weights(net, ids, ablate):
    """The second way: o_proj's columns of each ablated head zeroed; a mean-ablated head's
    W_O[:, h]·mean(z_h) (its z averaged over the positions in this run) added to the bias."""
    saved = [(p['wo'], p['bo']) for p in net.layers]
    D = net.D
    try:
        for l, p in enumerate(net.layers):
            heads = [a for a in ablate if a['layer'] == l]
            if not heads:
                continue
            wo = p['wo'].copy()
            for a in heads:
                wo[:, a['head'] * D:(a['head'] + 1) * D] = 0.0
            p['wo'] = wo
        means = {}

        def hook(l, z):  # records z (no edit): the mean ablations' bias terms come from it
            for a in ablate:
                if a['layer'] == l and a['mode'] == 'mean':
                    h = a['head']
                    wo = saved[l][0]
                    means[l] = means.get(l, 0.0) + wo[:, h * D:(h + 1) * D] @ z[h].mean(axis=0)
            if l in means:
                bo = saved[l][1] if saved[l][1] is not None else 0.0
                net.layers[l]['bo'] = bo + means[l]
            return z
        return net.run(ids, hook_z=hook)
    finally:
        for p, (wo, bo) in zip(net.layers, saved):
            p['wo'], p['bo'] = wo, bo


def ablate_case(net, ids, ablate):
    a = net.run(ids, hook_z=ablate_hook(net, ablate))
    b = ablate_weights(net, ids, ablate)
    assert np.abs(a['logits'] - b['logits']).max() < 1e-10
    return {'ids': [int(i) for i in ids], 'ablate': ablate, 'logits': a['logits'].tolist(),
            'attentions': [p.tolist() for p in a['pattern']] if len(ablate) > 1 else None}


def patch_case(net, clean, corrupted, target, baseline):
    """Activation patching (TransformerLens patching.py get_act_patch_attn_head_out_all_pos and
    get_act_patch_resid_pre, normalised as (LD − LD_corr) / (LD_clean − LD_corr)), each value
    two ways: a full corrupted rerun with a hook; and for heads the corrupted run from block l
    with attn_out corrected by W_O[:, h]·(z_clean − z_corr), for the residual the blocks from l
    run on the patched x_l alone."""
    cc, cr = net.run(clean), net.run(corrupted)
    ldc, ldr = ld_of(cc['logits'], target, baseline), ld_of(cr['logits'], target, baseline)
    D = net.D
    heads = np.zeros((net.N, net.H))
    for l in range(net.N):
        for h in range(net.H):
            def hook(ll, z, l=l, h=h):
                if ll == l:
                    z = z.copy()
                    z[h] = cc['z'][l][h]
                return z
            a = ld_of(net.run(corrupted, hook_z=hook)['logits'], target, baseline)
            # second way: x_{l+1} = x_l + attn_out + mlp(...) recomputed by hand from block l
            x = cr['resid_pre'][l]
            p = net.layers[l]
            att = cr['attn_out'][l] + (cc['z'][l][h] - cr['z'][l][h]) @ p['wo'][:, h * D:(h + 1) * D].T
            x = x + att
            x = x + p['mlp'](net.norm(x, p['n2']))
            b = ld_of(net.run(corrupted, start=l + 1, resid=x)['logits'] if l + 1 < net.N
                      else net.unembed(net.norm(x, net.final)), target, baseline)
            assert abs(a - b) < 1e-10, (a, b)
            heads[l, h] = (a - ldr) / (ldc - ldr)
    L = len(clean)
    resid = np.zeros((net.N, L))
    for l in range(net.N):
        for q in range(L):
            def hook(ll, x, l=l, q=q):
                if ll == l:
                    x = x.copy()
                    x[q] = cc['resid_pre'][l][q]
                return x
            a = ld_of(net.run(corrupted, hook_resid=hook)['logits'], target, baseline)
            x = cr['resid_pre'][l].copy()
            x[q] = cc['resid_pre'][l][q]
            b = ld_of(net.run(corrupted, start=l, resid=x)['logits'], target, baseline)
            assert abs(a - b) < 1e-10, (a, b)
            resid[l, q] = (a - ldr) / (ldc - ldr)
    return {'clean': [int(i) for i in clean], 'corrupted': [int(i) for i in corrupted], 'target': target,
            'baseline': baseline, 'ldClean': ldc, 'ldCorrupted': ldr, 'heads': heads.tolist(), 'residual': resid.tolist()}


FOLDERS = {f: os.path.join(MODELS, f) for f in ['gpt2', 'llama']}


def rounded(v):
    """Floats to 10 significant digits (the tests compare at 1e-4): a smaller file."""
    if isinstance(v, float):
        return float(f'{v:.10g}')
    if isinstance(v, list):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    return v


def main_interp():
    for family, folder in FOLDERS.items():
        net = Net(folder)
        rng = np.random.default_rng(34)
        V = net.V
        ids = [int(i) for i in rng.integers(1, V, size=12)]
        short = ids[:6]
        lens, lens_logits = lens_case(net, ids, 5)
        lens_short, short_logits = lens_case(net, short, 3)
        lens_short['logits'] = short_logits.tolist()
        c = net.run(ids)
        top = [int(i) for i in np.argsort(-c['logits'][-1])[:2]]
        attribute = [attribute_case(net, ids, len(ids) - 1, top[0], top[1]),
                     attribute_case(net, ids, 3, int(rng.integers(0, V)), int(rng.integers(0, V)))]
        ablate = [ablate_case(net, ids, [{'layer': 0, 'head': 1, 'mode': 'zero'}]),
                  ablate_case(net, ids, [{'layer': 1, 'head': 2, 'mode': 'mean'}]),
                  ablate_case(net, ids, [{'layer': 0, 'head': 0, 'mode': 'mean'}, {'layer': 0, 'head': 3, 'mode': 'zero'},
                                         {'layer': 1, 'head': 1, 'mode': 'mean'}])]
        corrupted = list(ids)
        corrupted[2] = int((ids[2] + 7) % V)
        corrupted[8] = int((ids[8] + 11) % V)
        cc, cr = net.run(ids), net.run(corrupted)
        diff = cc['logits'][-1] - cr['logits'][-1]
        target, baseline = int(np.argmax(diff)), int(np.argmin(diff))
        patch = [patch_case(net, ids, corrupted, target, baseline)]
        out = {'source': 'tests/reference/interp.py (float64 numpy; TransformerLens ActivationCache.py '
                         'accumulated_resid / decompose_resid / logit_attrs, patching.py)',
               'lens': [lens, lens_short], 'attribute': attribute, 'ablate': ablate, 'patch': patch}
        with open(os.path.join(folder, 'interp.json'), 'w') as fh:
            json.dump(rounded(out), fh)
            fh.write('\n')
        print(family, 'interp ok')


if __name__ == '__main__':
    main()
    main_interp()
