#!/usr/bin/env bash
# npm run bench — builds if needed, then prints the benchmark tables.
#
#   npm run bench                     Node: ours vs onnxruntime-web vs tfjs-wasm (bench/bench.mjs)
#   npm run bench -- --quick          a short pass (1 repeat, short budgets, no long run)
#   npm run bench -- --only threads   ours and ORT on 1 and 2 threads (MHA [1,512,768,H12], [1,128,512,H8], [2,5,512,H8])
#   npm run bench -- --only lm        GPT-2-small-shaped model on ours and ORT, 1 and 2 threads: prefill 128,
#                                     decode step at 128 cached, tokens/s, memory, agreement (bench/lm-bench.mjs);
#                                     then a SmolLM2-shaped GGUF in F16/Q8_0/Q4_0 on ours and wllama
#                                     (bench/lm-gguf-bench.mjs; --gguf-only / --no-gguf)
#   npm run bench -- --only lm --model qwen2.5-0.5b
#                                     the same on Qwen2.5-0.5B's shape in BF16 (about 1 GB generated into
#                                     $TMPDIR, never in git) against ORT's GroupQueryAttention + rotary graph
#   npm run bench -- --only interp    issue 33's interpretability calls (logit lens, head scores, attribution,
#                                     the 144-head patching grid) on GPT-2 small's shape, 2 threads, L 32
#                                     (bench/interp-bench.mjs)
#   npm run bench -- --browser        the same in headless Chromium
#   npm run bench -- --baseline REV  + ours wasm SIMD built from git revision REV (e.g. 9f599ff, the
#                                     build before issue 10) beside ours in the same run, with current ÷
#                                     baseline per case and the ±3% verdict (built once into
#                                     build/baseline-<sha>/ by bench/baseline.mjs)
#   npm run bench -- --train          training figures (bench/training.mjs; also npm run bench:train)
#   npm run bench -- --ui             the page's frame goals in headless Chromium (bench/ui-bench.mjs):
#                                     recompute + redraw, L = 512 hover, frames while the trainer trains
#   npm run bench -- --native [ARGS]  Google Benchmark binaries (bench/native/), AVX2 and,
#                                     when the CPU has it, AVX-512; ARGS go to the binaries
#                                     (e.g. --benchmark_filter=Gemm)
# See `node bench/bench.mjs --help` for the other options.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

pin=()
if command -v taskset >/dev/null 2>&1 && taskset -c 1 true 2>/dev/null; then pin=(taskset -c 1); fi

if [[ "${1:-}" == "--native" ]]; then
  shift
  arches=(avx2)
  if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then arches+=(avx512); fi
  mkdir -p bench/results
  for arch in "${arches[@]}"; do
    dir="build/native-bench-$arch"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_BUILD_BENCH=ON \
      -DATTNLAB_BUILD_TESTS=OFF -DATTNLAB_NATIVE_ARCH="$arch" >/dev/null
    cmake --build "$dir" -j 2 >/dev/null
    for b in gemm_benchmark attention_benchmark; do
      echo "== $b ($arch)"
      "${pin[@]}" "$dir/attnlab_$b" --benchmark_out="bench/results/native-$b-$arch.json" \
        --benchmark_out_format=json "$@"
    done
  done
  exit 0
fi

if [ ! -f web/dist/attention_lab_simd.wasm ] || [ ! -f web/dist/attention_lab_scalar.wasm ] \
  || [ ! -f web/dist/attention_lab_threads.wasm ] \
  || [ ! -d build/wasm-simd ] || [ ! -d build/wasm-scalar ]; then
  bash scripts/build.sh
fi
if [[ "${1:-}" == "--train" ]]; then
  shift
  exec "${pin[@]}" node --no-liftoff bench/training.mjs "$@"
fi
if [[ "${1:-}" == "--ui" ]]; then
  # Not pinned: the page, its worker and the browser's compositor share the
  # machine's cores as a reader's browser would.
  shift
  exec node bench/ui-bench.mjs "$@"
fi
# The bench modules: the library plus the benchmark-only bindings
# (bindings/bench/, e.g. benchGemm); never shipped in web/dist.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# (A first attempt may only regenerate the build files after CMakeLists.txt
# changed: ninja then reports the target unknown, and the second one builds.)
for variant in simd scalar; do
  cmake --build "build/wasm-$variant" --target "attention_lab_bench_$variant" -j2 >/dev/null 2>&1 \
    || cmake --build "build/wasm-$variant" --target "attention_lab_bench_$variant" -j2 >/dev/null
done
node bench/bench.mjs "$@"
