#!/usr/bin/env bash
# Builds the two WebAssembly variants (SIMD128 and scalar) into web/dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/embed-wgsl.mjs
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
mkdir -p web/dist
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
for variant in simd scalar; do
  flag=ON; [ "$variant" = scalar ] && flag=OFF
  dir="build/wasm-$variant"
  emcmake cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DATTNLAB_WASM_SIMD=$flag -DATTNLAB_BUILD_TESTS=OFF >/dev/null
  cmake --build "$dir" -j2
  cp "$dir/attention_lab_$variant.mjs" "$dir/attention_lab_$variant.wasm" web/dist/
done
echo "build: web/dist/ holds attention_lab_simd.{mjs,wasm} and attention_lab_scalar.{mjs,wasm}"
