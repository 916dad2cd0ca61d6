#!/usr/bin/env bash
# test-native.sh — build the C++ core natively and run its GoogleTest suite.
#
#   bash scripts/test-native.sh            # both configurations
#   bash scripts/test-native.sh release    # build/native      Release, AVX2 kernels
#   bash scripts/test-native.sh asan       # build/native-asan Debug + ASan + UBSan
#   bash scripts/test-native.sh asan-long  # the same build, only the tests in ASAN_LONG
#
# ASAN_LONG: tests whose sanitized Debug run is long (GemmHalf.EqualsTheFloatPanelsBitForBit:
# 85 s under ASan, 3 s in Release). `asan` leaves them out (npm test's 12-minute
# budget) and `asan-long` runs only them (npm run test:long, scripts/test-long.sh);
# the Release configuration runs every test.
#
# Uses Ninja when available, else Unix Makefiles. Exits non-zero when any
# configuration fails to configure, build or pass; both are always attempted.
#
# Environment:
#   ATTNLAB_NATIVE_ARCH   ISA for the SIMD kernels: avx2 (default), avx512, native
#   JOBS                  parallel build/test jobs (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

JOBS="${JOBS:-2}"

if command -v ninja >/dev/null 2>&1; then
  GENERATOR="Ninja"
else
  GENERATOR="Unix Makefiles"
fi

ARCH="${ATTNLAB_NATIVE_ARCH:-avx2}"
if [[ "$ARCH" == avx2 ]] && [[ -r /proc/cpuinfo ]] &&
  ! { grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; }; then
  echo "test-native: this CPU has no AVX2+FMA; building the kernels with -march=native instead" >&2
  ARCH=native
fi

source scripts/ccache-env.sh

# A build dir configured with another generator cannot be reused: start afresh.
prepare_dir() {
  local dir="$1" cache="$1/CMakeCache.txt"
  if [[ -f "$cache" ]] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=$GENERATOR" "$cache"; then
    echo "test-native: $dir was configured with another generator; removing it"
    rm -rf "$dir"
  fi
}

ASAN_LONG='^GemmHalf\.EqualsTheFloatPanelsBitForBit$'

# run_config NAME DIR CTEST_SELECT CMAKE_ARGS...  (CTEST_SELECT: "" or "-E RE" / "-R RE")
run_config() {
  local name="$1" dir="$2" select="$3"
  shift 3
  echo "== native ($name): configure $dir [$GENERATOR]"
  prepare_dir "$dir"
  cmake -S . -B "$dir" -G "$GENERATOR" -DATTNLAB_BUILD_TESTS=ON "${CCACHE_LAUNCHER[@]}" "$@" || return 1
  echo "== native ($name): build"
  cmake --build "$dir" --parallel "$JOBS" || return 1
  echo "== native ($name): ctest"
  # shellcheck disable=SC2086  # $select is empty or one option and its regex
  (cd "$dir" && ctest --output-on-failure --no-tests=error --parallel "$JOBS" $select) || return 1
}

release() {
  run_config release build/native "" \
    -DCMAKE_BUILD_TYPE=Release -DATTNLAB_NATIVE_ARCH="$ARCH" -DATTNLAB_SANITIZE=OFF
}

asan() { # asan [CTEST_SELECT]
  local select="${1:--E $ASAN_LONG}"
  # halt_on_error keeps the first report readable; detect_leaks is on by
  # default on Linux x86_64 but is spelled out so nobody turns it off by accident.
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    run_config "asan${1:+-long}" build/native-asan "$select" \
    -DCMAKE_BUILD_TYPE=Debug -DATTNLAB_NATIVE_ARCH="$ARCH" -DATTNLAB_SANITIZE=ON
}

configs=("$@")
if ((${#configs[@]} == 0)); then
  configs=(release asan)
fi

failed=()
for c in "${configs[@]}"; do
  case "$c" in
    release) release || failed+=("$c") ;;
    asan) asan || failed+=("$c") ;;
    asan-long) asan "-R $ASAN_LONG" || failed+=("$c") ;;
    *)
      echo "test-native: unknown configuration '$c' (use release, asan, asan-long)" >&2
      exit 2
      ;;
  esac
done

if ((${#failed[@]})); then
  echo "test-native: FAILED: ${failed[*]}"
  exit 1
fi
echo "test-native: OK (${configs[*]})"
