#!/usr/bin/env bash
# test.sh — `npm test`: everything CI runs, in order.
#
#   1. setup        scripts/setup.sh (Debian packages as root, npm ci)
#   2. build        scripts/build.sh (both wasm variants → web/dist/)
#   3. native       scripts/test-native.sh release  (CTest, Release, AVX2)
#   4. native-asan  scripts/test-native.sh asan     (CTest, Debug, ASan + UBSan)
#   4b. fuzz        scripts/fuzz.sh --short         (libFuzzer + ASan/UBSan, ~30 s from tests/fuzz/corpus)
#   5. jest         Jest (tests/js)
#   6. browser      node tests/browser/run.mjs      (when present)
#   7. types        npm run typecheck: tsc -p tests/types/tsconfig.json (the
#                   public declarations) and tests/types/tsconfig.lib.json
#                   (web/lib checked against the backend interface web/lib/backend.d.ts)
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

# section NAME TITLE CMD... — run CMD, tee its output to the log, record the result.
section() {
  local name="$1" title="$2"
  shift 2
  local log="$LOG_DIR/$name.log" rc start=$SECONDS
  header "$title"
  if "$@" 2>&1 | tee "$log"; then rc=0; else rc=$?; fi
  names+=("$name")
  if ((rc == 0)); then
    results+=(PASS)
  else
    results+=(FAIL)
    echo "-- $name failed (exit $rc); log: $log"
  fi
  notes+=("$(note_for "$name" "$log") [$((SECONDS - start))s]")
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

# 2. WebAssembly build (Emscripten's JS optimizer loads acorn from node-acorn).
section build "build: wasm SIMD + scalar → web/dist/" \
  env NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" bash scripts/build.sh

# 3–4. Native CTest, plain and sanitized.
section native "native: CTest, Release (build/native)" bash scripts/test-native.sh release
section native-asan "native-asan: CTest, Debug + ASan/UBSan (build/native-asan)" bash scripts/test-native.sh asan

# 4b. libFuzzer short pass over the committed corpus (clang, ASan + UBSan).
if [[ -f scripts/fuzz.sh ]]; then
  section fuzz "fuzz: libFuzzer short pass, ~30 s (build/fuzz, tests/fuzz/corpus)" bash scripts/fuzz.sh --short 30
else
  skip fuzz "fuzz: libFuzzer short pass" "scripts/fuzz.sh not found"
fi

# 5. Jest (Node, ESM).
section jest "jest: tests/js" node --experimental-vm-modules node_modules/jest/bin/jest.js --ci

# 6. Browser tests (Playwright + Debian chromium).
if [[ -f tests/browser/run.mjs ]]; then
  section browser "browser: tests/browser/run.mjs" node tests/browser/run.mjs
else
  skip browser "browser: tests/browser/run.mjs" "tests/browser/run.mjs not found"
fi

# 7. TypeScript declarations, checked against a usage file.
if [[ -f tests/types/tsconfig.json ]]; then
  section types "types: tsc (declarations; web/lib against web/lib/backend.d.ts)" npm run --silent typecheck
else
  skip types "types: tsc -p tests/types/tsconfig.json" "tests/types/tsconfig.json not found"
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
