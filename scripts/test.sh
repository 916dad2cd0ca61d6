#!/usr/bin/env bash
# test.sh — `npm test`: everything CI runs, in order.
#
#   1. setup        scripts/setup.sh (Debian packages as root, npm ci)
#   2. build        scripts/build.sh (the wasm variants simd, scalar, threads → web/dist/)
#   3. native       scripts/test-native.sh release  (CTest, Release, AVX2)
#   4. native-asan  scripts/test-native.sh asan     (CTest, Debug, ASan + UBSan)
#   5. jest         Jest (tests/js)
#   6. browser      node tests/browser/run.mjs      (two tests at a time; the
#                   ones marked serial alone)
#   7. types        npm run typecheck: tsc -p tests/types/tsconfig.json (the
#                   public declarations) and tests/types/tsconfig.lib.json
#                   (web/lib checked against the backend interface web/lib/backend.d.ts)
#   7b. fuzz        scripts/fuzz.sh --short 30     (libFuzzer + ASan/UBSan, 30 s from
#                   tests/fuzz/corpus), at the same time as types: both use one core
#
# The C++ compiles (wasm, native, fuzz) go through ccache when it is installed
# (scripts/setup.sh installs it; scripts/ccache-env.sh): the cache is outside the
# clone, in ~/.cache/attention-lab, so a fresh clone on the same machine reuses
# an earlier clone's objects. ATTNLAB_CCACHE=0 turns it off. The summary gives
# each section's seconds, the total and the cache's hits and misses of the run.
#
# Every part runs even when an earlier one failed (except setup: without the
# prerequisites nothing else can run), then the script exits non-zero and
# names the parts that failed. Logs go to test-artifacts/logs/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

LOG_DIR="test-artifacts/logs"
mkdir -p "$LOG_DIR"

names=()
results=()
notes=()

header() {
  printf '\n======================================================================\n'
  printf '== %s\n' "$*"
  printf '======================================================================\n'
}

# note_for NAME LOG — a one-line count taken from the runner's own summary.
note_for() {
  local log="$2" line=""
  case "$1" in
    native*) line="$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$log" | tail -n 1 || true)" ;;
    jest) line="$(grep -E '^Tests: ' "$log" | tail -n 1 | sed 's/  */ /g' || true)" ;;
    browser) line="$(grep -E '[0-9]+ passed' "$log" | tail -n 1 || true)" ;;
    fuzz) line="$(grep -E '^fuzz: ' "$log" | tail -n 1 || true)" ;;
  esac
  printf '%s' "$line"
}

record() { # record NAME RC LOG START
  names+=("$1")
  if (($2 == 0)); then
    results+=(PASS)
  else
    results+=(FAIL)
    echo "-- $1 failed (exit $2); log: $3"
  fi
  notes+=("$(note_for "$1" "$3") [$((SECONDS - $4))s]")
}

# section_bg NAME CMD... — start CMD in the background, its output to the log
# only; section_wait NAME TITLE prints that log and records the result.
declare -A bg_pid=() bg_start=()
section_bg() {
  local name="$1"
  shift
  bg_start[$name]=$SECONDS
  "$@" >"$LOG_DIR/$name.log" 2>&1 &
  bg_pid[$name]=$!
}
section_wait() {
  local name="$1" title="$2" rc=0
  wait "${bg_pid[$name]}" || rc=$?
  header "$title"
  cat "$LOG_DIR/$name.log"
  record "$name" "$rc" "$LOG_DIR/$name.log" "${bg_start[$name]}"
}

ccache_counts() { # "HITS MISSES" of the cache scripts/ccache-env.sh uses, or empty
  ( source scripts/ccache-env.sh
    if [[ "${CCACHE_LAUNCHER[0]:-}" == -D* ]]; then
      ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m=$2} END{print h+0, m+0}'
    fi )
}
total_start=$SECONDS

# section NAME TITLE CMD... — run CMD, tee its output to the log, record the result.
section() {
  local name="$1" title="$2"
  shift 2
  local log="$LOG_DIR/$name.log" rc start=$SECONDS
  header "$title"
  if "$@" 2>&1 | tee "$log"; then rc=0; else rc=$?; fi
  record "$name" "$rc" "$log" "$start"
}

skip() {
  header "$2"
  echo "-- skipped: $3"
  names+=("$1")
  results+=(SKIP)
  notes+=("$3")
}

# 1. Prerequisites. A failure here is fatal: the rest would only bury the
#    message that says what to install.
section setup "setup: Debian packages and npm dependencies" bash scripts/setup.sh
if [[ "${results[0]}" != PASS ]]; then
  echo
  echo "test.sh: setup failed; see the message above. Nothing else was run."
  echo "sections: 0 passed, 1 failed"
  exit 1
fi

cc0="$(ccache_counts)"

# 2. WebAssembly build (Emscripten's JS optimizer loads acorn from node-acorn).
section build "build: wasm SIMD + scalar + threads → web/dist/" \
  env NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" bash scripts/build.sh

# 3–4. Native CTest, plain and sanitized.
section native "native: CTest, Release (build/native)" bash scripts/test-native.sh release
section native-asan "native-asan: CTest, Debug + ASan/UBSan (build/native-asan)" bash scripts/test-native.sh asan

# 5. Jest (Node, ESM).
section jest "jest: tests/js" node --experimental-vm-modules node_modules/jest/bin/jest.js --ci

# 6. Browser tests (Playwright + Debian chromium).
if [[ -f tests/browser/run.mjs ]]; then
  section browser "browser: tests/browser/run.mjs" node tests/browser/run.mjs
else
  skip browser "browser: tests/browser/run.mjs" "tests/browser/run.mjs not found"
fi

# 7b. libFuzzer short pass over the committed corpus (clang, ASan + UBSan): its
#     30 s run uses one core, so it runs while tsc (one core too) checks the types.
if [[ -f scripts/fuzz.sh ]]; then
  section_bg fuzz bash scripts/fuzz.sh --short 30
fi

# 7. TypeScript declarations, checked against a usage file.
if [[ -f tests/types/tsconfig.json ]]; then
  section types "types: tsc (declarations; web/lib against web/lib/backend.d.ts)" npm run --silent typecheck
else
  skip types "types: tsc -p tests/types/tsconfig.json" "tests/types/tsconfig.json not found"
fi

if [[ -f scripts/fuzz.sh ]]; then
  section_wait fuzz "fuzz: libFuzzer short pass, 30 s (build/fuzz, tests/fuzz/corpus; ran beside types)"
else
  skip fuzz "fuzz: libFuzzer short pass" "scripts/fuzz.sh not found"
fi

header "summary"
passed=0
failed=0
skipped=0
failed_names=()
for i in "${!names[@]}"; do
  printf '  %-4s  %-12s %s\n' "${results[$i]}" "${names[$i]}" "${notes[$i]}"
  case "${results[$i]}" in
    PASS) passed=$((passed + 1)) ;;
    FAIL)
      failed=$((failed + 1))
      failed_names+=("${names[$i]}")
      ;;
    SKIP) skipped=$((skipped + 1)) ;;
  esac
done
total=$((SECONDS - total_start))
echo
printf '  total %d s (%d min %02d s), setup included\n' "$total" $((total / 60)) $((total % 60))
cc1="$(ccache_counts)"
if [[ -n "$cc0" && -n "$cc1" ]]; then
  read -r h0 m0 <<<"$cc0"
  read -r h1 m1 <<<"$cc1"
  echo "  ccache: $((h1 - h0)) hits, $((m1 - m0)) misses in this run (${ATTNLAB_CACHE_DIR:-~/.cache/attention-lab}/ccache)"
fi
echo
if ((failed)); then
  echo "test.sh: FAILED: ${failed_names[*]} (logs in $LOG_DIR/)"
else
  echo "test.sh: all parts passed"
fi
if ((skipped)); then
  echo "sections: $passed passed, $failed failed, $skipped skipped"
else
  echo "sections: $passed passed, $failed failed"
fi
((failed == 0))
