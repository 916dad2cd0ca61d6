#!/usr/bin/python3
"""Writes tiny PyTorch checkpoints into tests/golden/torch/ with real
torch.save (Debian's python3-torch 1.13: `apt-get install python3-torch`),
from the golden safetensors checkpoints of tests/golden/models/ (parsed here
with numpy: an 8-byte little-endian header length, the JSON header, the data),
so each .bin holds exactly the values of its safetensors twin. Nothing from
web/, src/ or bindings/ is used.

  gpt2/pytorch_model.bin        F32; lm_head.weight shares wte.weight's storage (a tied head)
  gpt2-views/pytorch_model.bin  F32; every tensor a view at an offset of one flat storage, and
                                h.0.mlp.c_fc.weight a transposed (non-contiguous) view
  bert/pytorch_model.bin        F32; cls.predictions.decoder.weight tied to the word embeddings,
                                an int64 bert.embeddings.position_ids buffer (ignored by loadModel)
  bert-deflated/pytorch_model.bin  the same zip re-packed with deflate (zipfile), not torch's own
  bert-legacy/pytorch_model.bin    the same in the legacy format of torch < 1.6
                                (_use_new_zipfile_serialization=False; its storage keys are
                                object addresses, so legacy files differ from run to run)
  llama-f16/pytorch_model.bin   F16 (saved to a BytesIO: the folder is 'archive/')
  llama-bf16/pytorch_model.bin  BF16
  llama-sharded/pytorch_model-0000{1,2}-of-00002.bin + pytorch_model.bin.index.json (F32),
                                with llama's config.json and tokenizer.json: a whole folder
  weights/torch_mha.pth, weights/hf_gpt2.bin  tests/golden/weights/{torch_mha,hf_gpt2}.safetensors re-saved
  bad/*.bin                     hostile or unsupported files, one refusal each:
    os-system.bin       a state dict holding an object whose __reduce__ is os.system (never run)
    legacy-os-system.bin  the same in the legacy format
    int8.bin            wte.weight as int8 (a dtype loadModel refuses for weights)
    complex.bin         a complex64 tensor (torch.ComplexFloatStorage: not an allowed global)
    big-endian.bin      gpt2's zip with its byteorder record set to 'big'
    outside.bin         an extra entry '<folder>/../evil' outside the checkpoint's folder
    nested.bin          a training checkpoint {'model': state_dict, 'step': 3}
    expand.bin          a stride-0 view claiming 2^40 elements of a 1-element storage
  dir-entries.bin               a tiny checkpoint re-packed with directory entries (readable)

Run: /usr/bin/python3 tests/reference/torch_fixtures.py
"""
import io, json, os, shutil, struct, sys, zipfile
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, '..', 'golden', 'models')
OUT = os.path.join(HERE, '..', 'golden', 'torch')


def read_safetensors(path):
    """{name: torch tensor} in header order, the dtype kept (F32, F16, BF16, BOOL, I64, I32)."""
    raw = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == '__metadata__':
            continue
        a, b = e['data_offsets']
        buf = data[a:b]
        if e['dtype'] == 'F32':
            t = torch.from_numpy(np.frombuffer(buf, dtype='<f4').copy())
        elif e['dtype'] == 'F16':
            t = torch.from_numpy(np.frombuffer(buf, dtype='<f2').copy())
        elif e['dtype'] == 'BOOL':
            t = torch.from_numpy(np.frombuffer(buf, dtype=np.bool_).copy())
        elif e['dtype'] in ('I64', 'I32'):
            t = torch.from_numpy(np.frombuffer(buf, dtype='<i8' if e['dtype'] == 'I64' else '<i4').copy())
        elif e['dtype'] == 'BF16':
            t = torch.from_numpy(np.frombuffer(buf, dtype='<i2').copy()).view(torch.bfloat16)
        else:
            raise SystemExit(f'{path}: {name}: dtype {e["dtype"]} not handled')
        out[name] = t.reshape(e['shape'])
    return out


def save(sd, *parts):
    path = os.path.join(OUT, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(sd, path)
    return path


def repack(src, dst, edit):
    """Copies the zip src to dst (stored), entries passed through edit(name, bytes) → [(name, bytes)]."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w', zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            for name, data in edit(info.filename, zin.read(info.filename)):
                zout.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def main():
    gpt2 = read_safetensors(os.path.join(MODELS, 'gpt2', 'model.safetensors'))
    llama = read_safetensors(os.path.join(MODELS, 'llama', 'model.safetensors'))
    bert = read_safetensors(os.path.join(MODELS, 'bert', 'model.safetensors'))

    # gpt2: F32, the head tied to wte (one storage, as GPT2LMHeadModel.state_dict()).
    sd = dict(gpt2)
    sd['lm_head.weight'] = sd['wte.weight']
    save(sd, 'gpt2', 'pytorch_model.bin')

    # gpt2-views: one flat storage; each tensor a view at its offset; c_fc.weight transposed.
    total = sum(t.numel() for t in gpt2.values())
    flat = torch.zeros(total, dtype=torch.float32)
    views = {}
    at = 0
    for name, t in gpt2.items():
        n = t.numel()
        if name == 'h.0.mlp.c_fc.weight':
            # Stored as its transpose [out, in]; the view [in, out] has strides (1, in).
            flat[at:at + n] = t.t().contiguous().reshape(-1)
            views[name] = flat[at:at + n].view(t.shape[1], t.shape[0]).t()
            assert not views[name].is_contiguous()
        else:
            flat[at:at + n] = t.reshape(-1)
            views[name] = flat[at:at + n].view(t.shape)
        at += n
    for name, t in gpt2.items():
        assert torch.equal(views[name], t), name
    save(views, 'gpt2-views', 'pytorch_model.bin')

    # bert: decoder tied to the word embeddings; the position_ids buffer.
    sd = dict(bert)
    sd['bert.embeddings.position_ids'] = torch.arange(32, dtype=torch.int64).expand((1, -1))
    sd['cls.predictions.decoder.weight'] = sd['bert.embeddings.word_embeddings.weight']
    p = save(sd, 'bert', 'pytorch_model.bin')
    d = os.path.join(OUT, 'bert-deflated')
    os.makedirs(d, exist_ok=True)
    with zipfile.ZipFile(p) as zin, zipfile.ZipFile(os.path.join(d, 'pytorch_model.bin'), 'w', zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), zin.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)

    # bert in the legacy format of torch < 1.6 (what old hub BERT fine-tunes hold).
    os.makedirs(os.path.join(OUT, 'bert-legacy'), exist_ok=True)
    torch.save(sd, os.path.join(OUT, 'bert-legacy', 'pytorch_model.bin'), _use_new_zipfile_serialization=False)

    # llama in F16 (to a BytesIO: folder 'archive/') and BF16.
    f16 = read_safetensors(os.path.join(MODELS, 'llama', 'model-f16.safetensors'))
    buf = io.BytesIO()
    torch.save(f16, buf)
    os.makedirs(os.path.join(OUT, 'llama-f16'), exist_ok=True)
    open(os.path.join(OUT, 'llama-f16', 'pytorch_model.bin'), 'wb').write(buf.getvalue())
    save(read_safetensors(os.path.join(MODELS, 'llama', 'model-bf16.safetensors')), 'llama-bf16', 'pytorch_model.bin')

    # llama in two F32 shards with their index, as save_pretrained(safe_serialization=False) names them.
    names = list(llama)
    half = len(names) // 2
    weight_map = {}
    for i, part in enumerate([names[:half], names[half:]]):
        fname = f'pytorch_model-0000{i + 1}-of-00002.bin'
        save({n: llama[n] for n in part}, 'llama-sharded', fname)
        for n in part:
            weight_map[n] = fname
    index = {'metadata': {'total_size': sum(t.numel() * 4 for t in llama.values())}, 'weight_map': dict(sorted(weight_map.items()))}
    with open(os.path.join(OUT, 'llama-sharded', 'pytorch_model.bin.index.json'), 'w') as f:
        json.dump(index, f, indent=2)
        f.write('\n')
    # A whole folder (for <attention-lab-model-view src=".../llama-sharded/">).
    for fname in ['config.json', 'tokenizer.json']:
        shutil.copy(os.path.join(MODELS, 'llama', fname), os.path.join(OUT, 'llama-sharded', fname))

    # Single-layer and small state dicts of tests/golden/weights, for the page's one-file drop.
    wdir = os.path.join(HERE, '..', 'golden', 'weights')
    os.makedirs(os.path.join(OUT, 'weights'), exist_ok=True)
    torch.save(read_safetensors(os.path.join(wdir, 'torch_mha.safetensors')), os.path.join(OUT, 'weights', 'torch_mha.pth'))
    torch.save(read_safetensors(os.path.join(wdir, 'hf_gpt2.safetensors')), os.path.join(OUT, 'weights', 'hf_gpt2.bin'))

    # Hostile and unsupported files.
    class Boom:
        def __reduce__(self):
            return (os.system, ('echo this must never run',))
    save({'wte.weight': gpt2['wte.weight'][:2].clone(), 'boom': Boom()}, 'bad', 'os-system.bin')
    torch.save({'wte.weight': gpt2['wte.weight'][:2].clone(), 'boom': Boom()}, os.path.join(OUT, 'bad', 'legacy-os-system.bin'), _use_new_zipfile_serialization=False)
    save({'wte.weight': (gpt2['wte.weight'] * 100).to(torch.int8)}, 'bad', 'int8.bin')
    save({'wte.weight': torch.zeros(2, dtype=torch.complex64)}, 'bad', 'complex.bin')
    small = os.path.join(OUT, 'bad', 'small.tmp')
    torch.save({'wte.weight': gpt2['wte.weight'][:2].clone()}, small)
    # torch 1.13 writes no byteorder record (torch >= 2.1 does): add one saying 'big'.
    repack(small, os.path.join(OUT, 'bad', 'big-endian.bin'), lambda n, b: [(n, b)] + ([(n.split('/')[0] + '/byteorder', b'big')] if n.endswith('/version') else []))
    repack(small, os.path.join(OUT, 'bad', 'outside.bin'), lambda n, b: [(n, b)] + ([(n.split('/')[0] + '/../evil', b'x')] if n.endswith('/version') else []))
    # Directory entries ('small/', 'small/data/'), as zip tools other than torch's add: still readable.
    with zipfile.ZipFile(small) as zin, zipfile.ZipFile(os.path.join(OUT, 'dir-entries.bin'), 'w') as z:
        for d in ['small/', 'small/data/']:
            z.writestr(zipfile.ZipInfo(d, date_time=(1980, 1, 1, 0, 0, 0)), b'')
        for info in zin.infolist():
            z.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), zin.read(info.filename))
    os.remove(small)
    # A stride-0 view claiming 2^40 elements of a 1-element storage.
    save({'x': torch.zeros(1).expand(2 ** 20, 2 ** 20)}, 'bad', 'expand.bin')
    save({'model': {'wte.weight': gpt2['wte.weight'][:2].clone()}, 'step': 3}, 'bad', 'nested.bin')

    # Seeds of tests/fuzz/fuzz-torch.mjs: tiny checkpoints with every feature the reader handles.
    fuzz = os.path.join(HERE, '..', 'fuzz', 'torch-corpus')
    os.makedirs(fuzz, exist_ok=True)
    base = torch.arange(24, dtype=torch.float32) / 8
    seeds = {
        'features.bin': {'a': base[:6].view(2, 3), 'b': base[6:18].view(3, 4).t(), 'tied': base[:6].view(2, 3),
                         'h': base[:4].to(torch.float16), 'bf': base[:4].to(torch.bfloat16), 'ids': torch.arange(5).expand(1, -1),
                         'scalar': torch.tensor(1.5), 'empty': torch.zeros(0, 3)},
        'plain.bin': {'w': base.view(4, 6).clone(), 'b': base[:4].clone()},
    }
    for fname, sd in seeds.items():
        torch.save(sd, os.path.join(fuzz, fname))
    torch.manual_seed(0)
    torch.save(torch.nn.Linear(3, 2).state_dict(), os.path.join(fuzz, 'linear.bin'))
    with zipfile.ZipFile(os.path.join(fuzz, 'features.bin')) as zin, zipfile.ZipFile(os.path.join(fuzz, 'features-deflated.bin'), 'w', zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), zin.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)
    torch.save(seeds['features.bin'], os.path.join(fuzz, 'legacy.bin'), _use_new_zipfile_serialization=False)
    for fname in ['os-system.bin', 'outside.bin', 'big-endian.bin', 'nested.bin']:
        shutil.copy(os.path.join(OUT, 'bad', fname), os.path.join(fuzz, fname))

    # Check: every fixture reads back (weights_only where torch 1.13 has it) equal to its source.
    def same(a, b):
        return all(torch.equal(a[k], b[k]) for k in b) and set(a) >= set(b)
    assert same(torch.load(os.path.join(OUT, 'gpt2', 'pytorch_model.bin')), gpt2)
    assert same(torch.load(os.path.join(OUT, 'gpt2-views', 'pytorch_model.bin')), gpt2)
    assert same(torch.load(os.path.join(OUT, 'bert', 'pytorch_model.bin')), bert)
    assert same(torch.load(os.path.join(OUT, 'bert-legacy', 'pytorch_model.bin')), bert)
    assert same(torch.load(os.path.join(OUT, 'llama-f16', 'pytorch_model.bin')), f16)
    print('wrote', OUT, file=sys.stderr)


if __name__ == '__main__':
    main()
