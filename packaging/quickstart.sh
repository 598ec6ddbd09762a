#!/usr/bin/env bash
# Command 1 of the README: installs everything, builds, fetches the default model and runs the
# main job: a chat reply from the default model in the terminal, or the desktop app when a display
# is available (TANDEM_NO_GUI=1 forces the terminal).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
model=$(bash packaging/fetch-default-model.sh)
prompt="${1:-Write one friendly sentence about running language models at home.}"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${TANDEM_NO_GUI:-}" ] && [ -x build/bin/tandem ]; then
  exec build/bin/tandem --model "$model"
fi
exec build/bin/tandem-cli run -m "$model" -p "$prompt" -n 96
