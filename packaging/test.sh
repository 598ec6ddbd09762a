#!/usr/bin/env bash
# Command 2 of the README (and what CI runs): installs everything, builds, fetches the default
# model and runs the whole test suite through CTest. Extra arguments go to ctest
# (e.g. -L fast, -LE slow, -R Tokenizer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
export TANDEM_DEFAULT_MODEL="$(bash packaging/fetch-default-model.sh)"
cd build
ctest --output-on-failure --timeout 1200 -j "${TANDEM_TEST_JOBS:-2}" "$@"
