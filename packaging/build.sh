#!/usr/bin/env bash
# Configures (once) and builds Tandem into build/ with ccache. Extra arguments go to cmake's
# configure step, e.g. packaging/build.sh -DTANDEM_HIP=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${TANDEM_BUILD_DIR:-build}"
JOBS="${TANDEM_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Paths relative to the checkout, and the build folder not hashed, so a fresh clone (as in CI)
# hits the cache filled by any earlier build of the same sources.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR=1
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ "$#" -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
