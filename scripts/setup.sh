#!/usr/bin/env bash
# setup.sh — install what attention-lab needs to build and test, if missing.
#
# Idempotent and quiet on success. Debian 12 packages are checked with dpkg and
# installed with apt-get when running as root; otherwise the exact command to
# run is printed and the script exits 1. Then `npm ci` runs when node_modules
# is missing or out of date with package-lock.json (tracked with a stamp).
#
# Environment:
#   ATTNLAB_SKIP_APT=1   skip the Debian package step (e.g. another distro)
#   ATTNLAB_SKIP_NPM=1   skip the npm step
#   ATTNLAB_VERBOSE=1    say what was checked even when nothing was missing
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf 'setup: %s\n' "$*"; }
err() { printf 'setup: error: %s\n' "$*" >&2; }
verbose() { if [[ "${ATTNLAB_VERBOSE:-0}" == 1 ]]; then say "$@"; fi; }

# Debian packages the build and the tests use:
#   emscripten (emcc, emcmake; pulls in clang-14, lld, binaryen, node-acorn)
#   ccache (a compiler cache outside the clone, scripts/ccache-env.sh),
#   libxsimd-dev, cmake, ninja-build, g++ (native build, ASan/UBSan), clang,
#   googletest + libgtest-dev (native tests), chromium (browser tests),
#   wabt (wasm-objdump: SIMD checks), nlohmann-json3-dev (golden data in C++),
#   ca-certificates (npm over TLS), fonts-noto-cjk (CJK glyphs for the browser
#   tests of the Chinese page only: the page itself ships and fetches no fonts).
PACKAGES=(
  ca-certificates
  cmake
  ccache  # compiler cache under ~/.cache/attention-lab (scripts/ccache-env.sh)
  ninja-build
  make
  g++
  clang
  emscripten
  libxsimd-dev
  googletest
  libgtest-dev
  libbenchmark-dev
  nlohmann-json3-dev
  wabt
  chromium
  fonts-noto-cjk
  python3-numpy  # numpy: float64 references of tests/reference/hf_models.py
)

pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
if [[ "${ATTNLAB_SKIP_APT:-0}" != 1 ]]; then
  if ! command -v dpkg-query >/dev/null 2>&1; then
    err "dpkg-query not found: this script installs Debian packages (Debian 12)."
    err "Install the equivalents of: ${PACKAGES[*]} nodejs npm"
    err "then rerun with ATTNLAB_SKIP_APT=1."
    exit 1
  fi
  for p in "${PACKAGES[@]}"; do
    pkg_installed "$p" || missing+=("$p")
  done
  # Node.js may come from Debian or from elsewhere (e.g. NodeSource, which
  # bundles npm): check the commands, and only ask Debian for what is absent.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)

  if ((${#missing[@]})); then
    if [[ "$(id -u)" -ne 0 ]]; then
      err "missing Debian packages: ${missing[*]}"
      err "install them with:"
      printf '  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s\n' "${missing[*]}" >&2
      exit 1
    fi
    say "installing Debian packages: ${missing[*]}"
    log="$(mktemp -t attnlab-apt.XXXXXX)"
    if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      err "apt-get install failed (full log: $log)"
      exit 1
    fi
    rm -f "$log"
    # Check again: a package name that resolved to something else would slip by.
    still=()
    for p in "${missing[@]}"; do
      case "$p" in
        nodejs) command -v node >/dev/null 2>&1 || still+=("$p") ;;
        npm) command -v npm >/dev/null 2>&1 || still+=("$p") ;;
        *) pkg_installed "$p" || still+=("$p") ;;
      esac
    done
    if ((${#still[@]})); then
      err "still missing after apt-get install: ${still[*]}"
      exit 1
    fi
  else
    verbose "Debian packages present: ${PACKAGES[*]}"
  fi
fi

# Commands the scripts call directly.
for c in node npm cmake emcc emcmake; do
  if ! command -v "$c" >/dev/null 2>&1; then
    err "'$c' not found on PATH after the package step"
    exit 1
  fi
done
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if ((node_major < 18)); then
  err "Node.js >= 18 is required (found $(node --version))"
  exit 1
fi

# npm dependencies (jest, playwright-core, typescript). The stamp records the
# hash of package-lock.json that node_modules was installed from, so a changed
# lock file (pull, branch switch) triggers a fresh `npm ci`.
if [[ "${ATTNLAB_SKIP_NPM:-0}" != 1 ]]; then
  stamp="node_modules/.attnlab-setup-stamp"
  want=""
  if [[ -f package-lock.json ]]; then
    want="$(sha256sum package-lock.json package.json | sha256sum | cut -d' ' -f1)"
  fi
  # (A hash rather than mtimes: git checkouts and fresh clones reset mtimes.)
  need_npm=0
  if [[ ! -d node_modules || ! -f node_modules/.package-lock.json || ! -f "$stamp" ]]; then
    need_npm=1
  elif [[ "$(cat "$stamp")" != "$want" ]]; then
    need_npm=1
  fi
  if ((need_npm)); then
    log="$(mktemp -t attnlab-npm.XXXXXX)"
    if [[ -f package-lock.json ]]; then
      say "installing npm dependencies (npm ci)"
      npm_cmd=(npm ci --no-audit --no-fund --loglevel=error)
    else
      say "no package-lock.json: installing npm dependencies (npm install)"
      npm_cmd=(npm install --no-audit --no-fund --loglevel=error)
    fi
    if ! "${npm_cmd[@]}" </dev/null >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      err "${npm_cmd[*]} failed (full log: $log)"
      exit 1
    fi
    rm -f "$log"
    if [[ -f package-lock.json ]]; then
      want="$(sha256sum package-lock.json package.json | sha256sum | cut -d' ' -f1)"
    fi
    printf '%s\n' "$want" >"$stamp"
  else
    verbose "node_modules is up to date with package-lock.json"
  fi
fi
