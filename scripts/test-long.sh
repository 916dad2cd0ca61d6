#!/usr/bin/env bash
# test-long.sh — `npm run test:long`: the size and stress checks kept out of
# npm test for its 12-minute budget (.ci/run runs them after it):
#   - the browser tests marked { long: true } (tests/browser/run.mjs --long):
#     size and stress checks (the webgpu MHA at [1, 8192, 512]; GPT-2 small,
#     generated, F16, whole in the page's worker; the permalink payloads; the
#     webpack 5 consumer build; every 中文 chapter's screenshot; chapter 10's
#     English model; the permalink round trip; reduced motion; the ONNX
#     golden cases and the positional-encoding / layer checks on webgpu;
#     the payloads typed into every input of the page and set in every
#     component attribute; the webgpu MHA over random shapes, the GQA /
#     window / softcap / ALiBi golden set, the over-limit buffers, trace
#     'values' and KV-cache decoding; the model too large for the wasm
#     heap; Your model running the ten decoder-family folders, 2 × ~20 s;
#     every decoder family and the encoder-decoders on webgpu
#     (SwiftShader: ~30 s each);
#     chapter 10's induction head forming, ~4.5 min), about 11 minutes
#   - tests/js/heap-above-2gib.test.js with ATTNLAB_LONG=1: a model of 2.0 GiB
#     of float32 weights loaded and run (3.0 GiB of wasm memory)
#   - npm run train:lm -- --lang en|zh|induction --check 20: the first 20 training
#     steps of each shipped model's recipe, loss for loss against its committed log
#   - the native tests whose ASan + UBSan Debug run is long (scripts/test-native.sh
#     asan-long: GemmHalf.EqualsTheFloatPanelsBitForBit, 85 s sanitized; npm test
#     runs it in the Release configuration and every other test under ASan)
# It expects npm test's set-up and build (web/dist/) to be done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rc=0
node tests/browser/run.mjs --long || rc=1
ATTNLAB_LONG=1 node --experimental-vm-modules node_modules/jest/bin/jest.js tests/js/heap-above-2gib.test.js -t long || rc=1
bash scripts/test-native.sh asan-long || rc=1
for lang in en zh induction; do
  node scripts/train-lm.mjs --lang "$lang" --check 20 || rc=1
done
exit $rc
