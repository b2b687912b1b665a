#!/usr/bin/env bash
# Builds perfscope (Release) and serves it on http://127.0.0.1:8080 with its database under
# ./data/. Extra arguments go to `perfscope serve` (try --help). Ctrl-C stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target perfscope
mkdir -p data
exec build/release/perfscope serve --data-dir ./data "$@"
