#!/usr/bin/env bash
# Moves docker/Dockerfile's base-image pin to the digest the tag names today (the manifest list,
# so every architecture keeps resolving). Needs a registry and skopeo (Debian: apt-get install
# skopeo). Review the diff, rebuild, run tests/container/test_image.sh, commit.
#   docker/pin_base.sh [TAG]      (default docker.io/library/debian:bookworm-slim)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-docker.io/library/debian:bookworm-slim}
command -v skopeo >/dev/null || { echo "pin_base.sh: needs skopeo (apt-get install skopeo)" >&2; exit 1; }
digest=$(skopeo inspect --raw "docker://$tag" | sha256sum | cut -d' ' -f1)
sed -i -E "s|^ARG DEBIAN_IMAGE=.*|ARG DEBIAN_IMAGE=$tag@sha256:$digest|" docker/Dockerfile
grep '^ARG DEBIAN_IMAGE=' docker/Dockerfile
