#!/usr/bin/env bash
# npm run bench — builds if needed, then prints the benchmark tables.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f web/dist/attention_lab_simd.wasm ] || [ ! -f web/dist/attention_lab_scalar.wasm ]; then
  bash scripts/build.sh
fi
node bench/bench.mjs "$@"
