#!/usr/bin/env bash
# Installs every build and test dependency of Tandem from Debian/Ubuntu packages (and the few
# PyPI packages the tests use as independent references). Idempotent: when everything is already
# there it only checks and returns within a second or two.
set -euo pipefail

DEB_PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git clang clang-format libclang-rt-14-dev
  clang-16  # the HIP backend's RDNA3 (WMMA) kernels: a compile check (hipcc is clang 15)
  python3 python3-pip python3-venv
  # libraries
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqrencode-dev
  libsqlite3-dev sqlite3 libcurl4-openssl-dev libssl-dev libsodium-dev
  nlohmann-json3-dev libcli11-dev libicu-dev
  libibverbs-dev rdma-core ibverbs-providers
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev xvfb xauth
  # Vulkan: headers, loader, shader compiler, Mesa's CPU driver (lavapipe), tools, and the
  # Khronos validation layer (the vulkan.validation test)
  libvulkan-dev vulkan-tools glslc mesa-vulkan-drivers spirv-tools vulkan-validationlayers
  # HIP (ROCm 5.2 as packaged by Debian)
  hipcc libamdhip64-dev rocm-device-libs
  # packaging
  dpkg-dev fakeroot file appstream
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${#missing[@]} Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all Debian packages present"
fi

# Python packages used only by tests/benchmarks as independent references, kept in a venv inside
# the user's cache so nothing is installed into the system Python.
VENV="${TANDEM_PYENV:-$HOME/.cache/tandem/pyenv}"
PY_PACKAGES=(numpy jinja2 gguf safetensors openai)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import numpy, jinja2, gguf, safetensors, openai" 2>/dev/null; then
  echo "install-deps: installing Python test references into $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
else
  echo "install-deps: Python test references present in $VENV"
fi
