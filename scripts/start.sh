#!/usr/bin/env bash
# start.sh — `npm start`: install prerequisites, build the wasm modules and
# serve the tutorial page on http://127.0.0.1:8080/ (arguments go to
# scripts/serve.mjs, e.g. `npm start -- --port 9000` or `--no-csp`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh
# Emscripten's JS optimizer loads acorn from Debian's node-acorn.
NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" bash scripts/build.sh
exec node scripts/serve.mjs "$@"
