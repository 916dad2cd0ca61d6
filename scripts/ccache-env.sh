#!/usr/bin/env bash
# ccache-env.sh — sourced by build.sh, test-native.sh and fuzz.sh: when ccache
# is installed (scripts/setup.sh installs it) and ATTNLAB_CCACHE is not 0, sets
# CCACHE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# for cmake's configure step, else an empty array.
#
# The cache lives outside the clone (ATTNLAB_CACHE_DIR, default
# ~/.cache/attention-lab/ccache), so a fresh clone on the same machine reuses
# the objects of an earlier one: CCACHE_BASEDIR rewrites the clone's absolute
# paths to relative ones and CCACHE_NOHASHDIR leaves the working directory out
# of the hash (in a Debug build's debug info the source paths are then those
# of the clone that filled the cache; line numbers are the same). A cold or
# missing cache only costs the compile that would have run anyway.
CCACHE_LAUNCHER=()
if [[ "${ATTNLAB_CCACHE:-1}" != 0 ]] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="${ATTNLAB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/attention-lab}/ccache"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  export CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
  mkdir -p "$CCACHE_DIR"
  CCACHE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  # Clear a launcher an earlier configure of the same build dir recorded.
  CCACHE_LAUNCHER=(-UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER)
fi
