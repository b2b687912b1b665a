#!/usr/bin/env bash
# Packs fuzz targets with every shared library they load (the loader included) into
# build/fuzz-bundle/bundle.tar.xz, for a campaign on another x86-64 Linux machine whose
# system libraries differ from this one's (or lack SQLite, Boost, OpenSSL). Unpacked in the
# root of a checkout on that machine, it leaves wrappers in build/fuzz-bundle/bin that run each
# target through the packed loader, so the campaign runs as it would here:
#   tar xJf build/fuzz-bundle/bundle.tar.xz
#   FUZZ_BIN_DIR=build/fuzz-bundle/bin tests/fuzz/campaign.sh OUT SECONDS session=30
# Usage: tests/fuzz/bundle.sh TARGET…   (binaries from build/fuzz, cmake --preset fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
(( $# )) || { echo "usage: tests/fuzz/bundle.sh TARGET…" >&2; exit 2; }
stage=$(mktemp -d)
root=$stage/build/fuzz-bundle
mkdir -p "$root/lib" "$root/bin"
for target in "$@"; do
  binary=build/fuzz/tests/fuzz/fuzz_$target
  [[ -x $binary ]] || { echo "no $binary: cmake --build build/fuzz --target fuzz_$target" >&2; exit 1; }
  strip -o "$root/lib/fuzz_$target" "$binary"
  # The libraries as this machine resolves them, and the loader named in the binary.
  ldd "$binary" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' | while read -r lib; do
    cp -L "$lib" "$root/lib/"
  done
  cat >"$root/bin/fuzz_$target" <<WRAP
#!/usr/bin/env bash
here=\$(cd "\$(dirname "\$0")/../lib" && pwd)
exec "\$here/ld-linux-x86-64.so.2" --library-path "\$here" "\$here/fuzz_$target" "\$@"
WRAP
  chmod +x "$root/bin/fuzz_$target"
done
mkdir -p build/fuzz-bundle
tar cJf build/fuzz-bundle/bundle.tar.xz -C "$stage" build/fuzz-bundle/lib build/fuzz-bundle/bin
rm -rf "$stage"
echo "build/fuzz-bundle/bundle.tar.xz: $(du -h build/fuzz-bundle/bundle.tar.xz | cut -f1) ($*)"
