#!/usr/bin/env bash
# The .deb works from a clean root: builds it with CPack from the build folder, unpacks it with
# dpkg -x into an empty directory and runs the CLI from there with LD_LIBRARY_PATH unset (the
# RUNPATHs must find libtandem-core.so and the plugins). With $TANDEM_DEFAULT_MODEL it also
# generates a few tokens. Usage: deb_install_test.sh <build dir> <scratch dir>
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work/pkg" "$work/root"
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/tandem_*.deb | head -n1)
[ -f "$deb" ] || fail "no tandem_*.deb in $work/pkg"
echo "package: $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
dpkg-deb --field "$deb" Package | grep -qx tandem || fail "package name is not tandem"
dpkg -x "$deb" "$work/root"
root=$work/root

for f in usr/bin/tandem-cli usr/bin/tandem-node usr/lib/tandem/libtandem-core.so \
         usr/lib/systemd/user/tandem-node.service \
         usr/share/applications/io.github.tandem.Tandem.desktop \
         usr/share/icons/hicolor/scalable/apps/io.github.tandem.Tandem.svg \
         usr/share/metainfo/io.github.tandem.Tandem.metainfo.xml; do
  [ -e "$root/$f" ] || fail "$f is not in the package"
done
if command -v desktop-file-validate > /dev/null; then
  desktop-file-validate "$root/usr/share/applications/io.github.tandem.Tandem.desktop"
fi
if command -v appstreamcli > /dev/null; then
  appstreamcli validate --no-net "$root/usr/share/metainfo/io.github.tandem.Tandem.metainfo.xml"
fi
# Nothing in the package may look for libraries in the build tree.
for elf in "$root"/usr/bin/* "$root"/usr/lib/tandem/*.so*; do
  rp=$(readelf -d "$elf" | grep -E 'R(UN)?PATH' || true)
  case "$rp" in *"$build"*) fail "$elf has RUNPATH into the build tree: $rp" ;; esac
done

# Every library a packaged program or core library links directly must come from a package named
# in Depends (backend plugins are exempt: they skip themselves when their runtime is absent, which
# is why libvulkan1 is only suggested). Catches a new link (libsodium, libibverbs, Qt modules)
# that the hand-written Depends list forgot.
owner_package() { # merged /usr: dpkg may know a library under /lib or /usr/lib
  local real p
  real=$(readlink -f "$1")
  for p in "$1" "$real" "${real#/usr}" "/usr$1"; do
    dpkg -S "$p" 2> /dev/null | head -n1 | cut -d: -f1 | grep . && return 0
  done
  return 0
}
depends=$(dpkg-deb --field "$deb" Depends | tr ',' '\n' | sed 's/[[:space:]]*(.*//; s/^[[:space:]]*//; s/[[:space:]]*$//')
for elf in "$root"/usr/bin/* "$root"/usr/lib/tandem/libtandem-core.so*; do
  [ -f "$elf" ] && readelf -h "$elf" > /dev/null 2>&1 || continue
  for needed in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case "$needed" in libtandem* | ld-linux*) continue ;; esac
    path=$(env -u LD_LIBRARY_PATH ldd "$elf" | awk -v n="$needed" '$1 == n { print $3 }')
    [ -n "$path" ] && [ -e "$path" ] || fail "$elf needs $needed, which is not found"
    pkg=$(owner_package "$path")
    [ -n "$pkg" ] || { echo "note: $needed ($path) belongs to no Debian package"; continue; }
    echo "$depends" | grep -qx "$pkg" ||
      fail "$(basename "$elf") links $needed from package $pkg, which Depends does not name"
  done
done

cli=$root/usr/bin/tandem-cli
version=$(env -u LD_LIBRARY_PATH -u TANDEM_PLUGIN_DIR "$cli" --version)
echo "$version"
[ "$version" = "tandem-cli $(dpkg-deb --field "$deb" Version)" ] ||
  fail "--version says '$version', the package is $(dpkg-deb --field "$deb" Version)"
# The core library must come from the unpacked root, not from the build tree or the system.
env -u LD_LIBRARY_PATH ldd "$cli" | grep libtandem-core | grep -q "$root/usr/bin/../lib/tandem" ||
  { env -u LD_LIBRARY_PATH ldd "$cli"; fail "libtandem-core.so not found through RUNPATH"; }
env -u LD_LIBRARY_PATH -u TANDEM_PLUGIN_DIR "$cli" devices | tee "$work/devices.txt"
grep -q '^cpu' "$work/devices.txt" || fail "devices lists no cpu backend"

model=${TANDEM_DEFAULT_MODEL:-}
if [ -n "$model" ] && [ -f "$model" ]; then
  out=$(env -u LD_LIBRARY_PATH -u TANDEM_PLUGIN_DIR "$cli" generate -m "$model" --ctx 512 \
        -p "The capital of France is" -n 4 --print-ids)
  echo "$out"
  ids=$(echo "$out" | tail -n1)
  [[ "$ids" =~ ^[0-9]+( [0-9]+){0,3}$ ]] || fail "generate printed no ids: '$ids'"
else
  echo "generate from the package: skipped (no TANDEM_DEFAULT_MODEL)"
fi
echo "packaging.deb_install: ok"
