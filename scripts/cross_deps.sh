#!/usr/bin/env bash
# What a Debian 12 build machine needs to build perfscope for another architecture (the image's
# multi-architecture build: the builder stage runs on the build machine and cross-compiles).
#   scripts/cross_deps.sh TARGETARCH             installs Debian's cross compiler and the
#                                                target's -dev packages (nothing when native)
#   scripts/cross_deps.sh --cmake-args TARGETARCH   prints the CMake arguments for it
#   scripts/cross_deps.sh --strip TARGETARCH        prints the strip program for its binaries
# TARGETARCH is Docker's name (amd64, arm64); empty means the build machine's own.
set -euo pipefail
cmake_args=0 strip=0
if [[ ${1:-} == --cmake-args ]]; then cmake_args=1; shift; fi
if [[ ${1:-} == --strip ]]; then strip=1; shift; fi
target=${1:-}
native=$(dpkg --print-architecture)
if [[ -z $target || $target == "$native" ]]; then
  ((strip)) && echo strip
  exit 0
fi
case $target in
  arm64) triple=aarch64-linux-gnu ;;
  amd64) triple=x86_64-linux-gnu ;;
  *) echo "cross_deps.sh: no cross build for $target (amd64 and arm64 are supported)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
if ((strip)); then
  echo "$triple-strip"
  exit 0
fi
if ((cmake_args)); then
  echo "-DCMAKE_TOOLCHAIN_FILE=$here/cmake/toolchains/$triple.cmake"
  exit 0
fi
sudo=""
[[ $(id -u) -ne 0 ]] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo dpkg --add-architecture "$target"
$sudo apt-get update -qq
# The same libraries scripts/install_deps.sh installs for the build machine, for the target.
$sudo apt-get install -y -qq --no-install-recommends "g++-${triple//_/-}" \
  "libboost1.81-dev:$target" "libsqlite3-dev:$target" "zlib1g-dev:$target" "libssl-dev:$target" "libnghttp2-dev:$target" >/dev/null
