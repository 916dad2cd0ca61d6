#!/usr/bin/env bash
# Builds the WebAssembly variants into web/dist/:
#   attention_lab_simd.{mjs,wasm}     SIMD128, single-threaded (the default)
#   attention_lab_scalar.{mjs,wasm}   no SIMD (engines without SIMD128)
#   attention_lab_threads.{mjs,wasm,worker.js}
#                                     SIMD128 + pthreads, ES module for browsers
#                                     (crossOriginIsolated pages only)
#   attention_lab_threads_node.{cjs,worker.cjs}
#                                     the same wasm, CommonJS glue for Node
# (docs/threads.md says why Node needs its own glue.)
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/embed-wgsl.mjs
node scripts/vendor.mjs
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# ccache (scripts/ccache-env.sh): em++ is a Python wrapper whose file does not
# change when Debian updates Emscripten's clang, so the compiler check is the
# versions of the packages that make up the toolchain.
source scripts/ccache-env.sh
if ((${#CCACHE_LAUNCHER[@]})) && [[ "${CCACHE_LAUNCHER[0]}" == -D* ]]; then
  export CCACHE_COMPILERCHECK="string:$(dpkg-query -W -f='${Package}=${Version};' emscripten clang-14 llvm-14 lld-14 2>/dev/null || em++ --version 2>/dev/null | head -n 1)"
fi
mkdir -p web/dist
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
for variant in simd scalar threads; do
  flags=(-DATTNLAB_WASM_SIMD=ON -DATTNLAB_WASM_THREADS=OFF)
  [ "$variant" = scalar ] && flags=(-DATTNLAB_WASM_SIMD=OFF -DATTNLAB_WASM_THREADS=OFF)
  [ "$variant" = threads ] && flags=(-DATTNLAB_WASM_THREADS=ON)
  dir="build/wasm-$variant"
  emcmake cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    "${flags[@]}" "${CCACHE_LAUNCHER[@]}" -DATTNLAB_BUILD_TESTS=OFF >/dev/null
  cmake --build "$dir" -j2
  if [ "$variant" = threads ]; then
    # Both glues load the same wasm (the Node entry passes it as wasmBinary).
    cmp -s "$dir/attention_lab_threads.wasm" "$dir/attention_lab_threads_node.wasm" || {
      echo "build: the browser and Node threaded builds produced different wasm files" >&2
      exit 1
    }
    cp "$dir/attention_lab_threads.mjs" "$dir/attention_lab_threads.wasm" \
      "$dir/attention_lab_threads.worker.js" "$dir/attention_lab_threads_node.cjs" web/dist/
    # .cjs: in this "type": "module" package Node would load a .js worker as an
    # ES module (web/node.js maps the name in locateFile).
    cp "$dir/attention_lab_threads_node.worker.js" web/dist/attention_lab_threads_node.worker.cjs
  else
    cp "$dir/attention_lab_$variant.mjs" "$dir/attention_lab_$variant.wasm" web/dist/
  fi
done
if command -v ccache >/dev/null 2>&1 && [[ "${CCACHE_LAUNCHER[0]:-}" == -D* ]]; then
  echo "build: ccache $CCACHE_DIR: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m=$2} END{printf "%d hits, %d misses (cumulative)", h, m}')"
fi
echo "build: web/dist/ holds attention_lab_{simd,scalar,threads}.{mjs,wasm}, attention_lab_threads.worker.js and attention_lab_threads_node.{cjs,worker.cjs}"
