#!/usr/bin/env bash
# Builds what the GPU-host runs need (Vulkan + HIP-as-CUDA backends, CLI, node, backend tests) and
# packs it with the shared libraries the GPU host's image lacks, so the lent NVIDIA machine (which
# has the driver, nvcc and nothing of Debian's) can run it as is.
#   packaging/gpu/bundle.sh [DEST=.gpu/bundle]      then carry .gpu (and .gl, the Vulkan loader)
# On the GPU host: tar -xJf .gpu/bundle.tar.xz -C /tmp && /tmp/bundle/env.sh <command>
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST="${1:-.gpu/bundle}"
BUILD_DIR="${TANDEM_GPU_BUILD_DIR:-build-gpu}"
TARGETS="${TANDEM_GPU_TARGETS:-tandem-cli tandem-node tandem-backend-vulkan tandem-backend-hip test-backend-ops test-vulkan test-hip bench-cluster-decode bench-backend-stages}"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_BENCH=ON \
    -DTANDEM_HIP=ON -DTANDEM_HIP_PLATFORM=nvidia -DTANDEM_CUDA_ARCHS=90 -DTANDEM_BUILD_APP=OFF
fi
# shellcheck disable=SC2086
nice -n 5 cmake --build "$BUILD_DIR" -j "${TANDEM_JOBS:-2}" --target $TARGETS

rm -rf "$DEST"; mkdir -p "$DEST/bin" "$DEST/lib"
for t in $TARGETS; do
  f=$(find "$BUILD_DIR/bin" -maxdepth 1 \( -name "$t" -o -name "lib$t.so" \) | head -1)
  [ -n "$f" ] && cp "$f" "$DEST/bin/"
done
cp "$BUILD_DIR"/bin/libtandem-core.so* "$DEST/bin/" 2>/dev/null || true
strip --strip-debug "$DEST"/bin/* 2>/dev/null || true

# Shared libraries from this Debian that the GPU image may not have. glibc, libstdc++ and libgcc
# are newer there; the Vulkan loader comes from .gl and libcuda from the driver.
skip='linux-vdso|libresolv|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libvulkan|libcuda\.so|libtandem'
for f in "$DEST"/bin/*; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -Ev "$skip" | while read -r lib; do cp -L "$lib" "$DEST/lib/"; done

# hf-tiny oracles for the logits/greedy tests (the ../shared beside the checkout does not travel).
FIX="${TANDEM_FIXTURES:-$(cd .. && pwd)/shared/fixtures}"
if [ -d "$FIX/hf-tiny" ]; then
  mkdir -p "$DEST/fixtures"; cp -r "$FIX/hf-tiny" "$DEST/fixtures/"
fi
cat > "$DEST/env.sh" <<'ENV'
#!/usr/bin/env bash
# Runs a command with the bundle's binaries and libraries first on the paths. A plugin folder or
# fixtures set by the caller stay (A/B runs of an older plugin: TANDEM_PLUGIN_DIR=old env.sh ...;
# a folder without a plugin falls back to the bundle's, docs/architecture.md).
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$here/bin:$PATH" LD_LIBRARY_PATH="$here/bin:$here/lib:${LD_LIBRARY_PATH:-}"
export TANDEM_PLUGIN_DIR="${TANDEM_PLUGIN_DIR:-$here/bin}" TANDEM_FIXTURES="${TANDEM_FIXTURES:-$here/fixtures}"
exec "$@"
ENV
chmod +x "$DEST/env.sh"
tar -C "$(dirname "$DEST")" -cJf "$DEST.tar.xz" "$(basename "$DEST")"
du -sh "$DEST" "$DEST.tar.xz"
