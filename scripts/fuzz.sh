#!/usr/bin/env bash
# fuzz.sh — build and run the libFuzzer target tests/fuzz/fuzz_attention.cpp
# (clang, -fsanitize=fuzzer,address,undefined), which drives the C++ core's
# validation and kernels with arbitrary shapes, masks, weights and data.
#
#   npm run fuzz                      # 300 s (or: npm run fuzz -- 3600)
#   bash scripts/fuzz.sh [SECONDS]    # the same
#   bash scripts/fuzz.sh --short [S]  # npm test: 30 s from the committed corpus
#
# The committed corpus tests/fuzz/corpus/ is always read (every input in it is
# run first: a regression check) and never written. A normal run keeps the new
# inputs it finds in build/fuzz/corpus/ (reused by the next run); --short uses a
# temporary directory. Crashes, leaks and timeouts are written to
# test-artifacts/fuzz/ and make the script exit non-zero; reproduce one with
#   build/fuzz/fuzz_attention test-artifacts/fuzz/crash-<sha1>
# and, once fixed, copy it into tests/fuzz/corpus/ so it stays fixed. To fold
# new inputs into the committed corpus (keeps only those adding coverage):
#   build/fuzz/fuzz_attention -merge=1 tests/fuzz/corpus build/fuzz/corpus
#
# Environment: JOBS (build jobs, default 2), ATTNLAB_NATIVE_ARCH (avx2,
# avx512, native), FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

short=0
seconds=""
for arg in "$@"; do
  case "$arg" in
    --short) short=1 ;;
    ''|*[!0-9]*)
      echo "usage: bash scripts/fuzz.sh [--short] [SECONDS]" >&2
      exit 2
      ;;
    *) seconds="$arg" ;;
  esac
done
if [[ -z "$seconds" ]]; then
  if ((short)); then seconds=30; else seconds=300; fi
fi

JOBS="${JOBS:-2}"
BUILD=build/fuzz
CORPUS=tests/fuzz/corpus
ARTIFACTS=test-artifacts/fuzz

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found; install clang (scripts/setup.sh does) — libFuzzer needs it" >&2
  exit 1
fi

ARCH="${ATTNLAB_NATIVE_ARCH:-avx2}"
if [[ "$ARCH" == avx2 ]] && [[ -r /proc/cpuinfo ]] &&
  ! { grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; }; then
  ARCH=native
fi
source scripts/ccache-env.sh
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# A build dir configured with another generator cannot be reused.
if [[ -f "$BUILD/CMakeCache.txt" ]] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${generator[1]:-Unix Makefiles}\$" "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi

echo "== fuzz: configure $BUILD (clang++, ASan + UBSan + libFuzzer)"
cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  -DATTNLAB_BUILD_FUZZ=ON -DATTNLAB_BUILD_TESTS=OFF -DATTNLAB_NATIVE_ARCH="$ARCH" "${CCACHE_LAUNCHER[@]}" >/dev/null
echo "== fuzz: build fuzz_attention"
cmake --build "$BUILD" --target fuzz_attention --parallel "$JOBS"

mkdir -p "$ARTIFACTS"
if ((short)); then
  work="$(mktemp -d -t attnlab-fuzz.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
else
  work="$BUILD/corpus"
  mkdir -p "$work"
fi
log="$ARTIFACTS/fuzz.log"

echo "== fuzz: ${seconds} s from $CORPUS ($(find "$CORPUS" -type f | wc -l) inputs); new inputs → $work"
# detect_leaks: libFuzzer reports leaks of the code under test as crashes.
rc=0
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
  "$BUILD/fuzz_attention" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" ${FUZZ_ARGS:-} \
  "$work" "$CORPUS" >"$log" 2>&1 || rc=$?

# The interesting lines: sanitizer reports, our own check failures, the stats.
grep -E "ERROR: |runtime error|fuzz_attention: |SUMMARY|Test unit written|^stat::|INITED|DONE|Done " "$log" | grep -v "^INFO" || true
execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -n 1)"
new="$(grep -E '^stat::new_units_added' "$log" | awk '{print $2}' | tail -n 1)"
if ((rc != 0)); then
  echo "fuzz: FAILED (exit $rc) after ${execs:-?} executions; full log: $log"
  ls -1 "$ARTIFACTS" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sed "s|^|  reproduce: $BUILD/fuzz_attention $ARTIFACTS/|" || true
  exit "$rc"
fi
echo "fuzz: ${execs:-?} executions in ${seconds} s, ${new:-0} new inputs, no crash (log: $log)"
