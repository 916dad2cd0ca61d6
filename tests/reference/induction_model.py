"""The shipped induction model (data/models/induction/, issue 33 item 8) on TransformerLens's
repeated-random-tokens input, float64 numpy, independent of the library: the input drawn with
interp.py's own xorshift (head-roles.js's draw reimplemented), the attentions from hf_models.py's
GPT-2 forward of the F16 files, and the induction score of every head both by head_detector.py's
detection mask and by plain loops (they must agree to 1e-12). tests/js/induction-model.test.js
compares model.headScores.repeated and a by-hand recomputation with these, and asserts a head
>= 0.4. Rerun after retraining the model:

  python3 tests/reference/induction_model.py   → tests/golden/induction-model.json
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_models  # noqa: E402
import interp  # noqa: E402

FOLDER = os.path.join(HERE, '..', '..', 'data', 'models', 'induction')
OUT = os.path.join(HERE, '..', 'golden', 'induction-model.json')


def main():
    with open(os.path.join(FOLDER, 'config.json')) as f:
        cfg = json.load(f)
    length = (cfg['n_positions'] - 1) // 2  # the longest r r after the bos token
    cases = []
    for seed in [0, 1, 2, 3]:
        ids = interp.repeated(cfg, length, seed)
        r = hf_models.forward(FOLDER, ids)
        a = interp.scores_masks(r['attentions'], ids)
        b = interp.scores_loops(r['attentions'], ids)
        gap = np.abs(np.array(a['induction']) - np.array(b['induction'])).max()
        assert gap < 1e-12, gap
        best = float(np.max(a['induction']))
        cases.append({'length': length, 'seed': seed, 'ids': [int(i) for i in ids],
                      'induction': a['induction'], 'previousToken': a['previousToken']})
        print(f'seed {seed}: length {length}, best induction {best:.4f}, '
              f'best previous-token {float(np.max(a["previousToken"])):.4f}')
    with open(OUT, 'w') as f:
        json.dump({'model': 'data/models/induction', 'cases': cases}, f)
        f.write('\n')
    print(f'wrote {os.path.relpath(OUT)}')


if __name__ == '__main__':
    main()
