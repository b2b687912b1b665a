#!/usr/bin/env bash
# Builds perfscope (Release) and serves it on http://127.0.0.1:8080 with its database under
# ./data/. Extra arguments go to `perfscope serve` (try --help). Ctrl-C stops it cleanly.
# `scripts/run.sh --demo [serve options]` also runs `perfscope demo` beside the server, so a
# machine with no instrumented program of its own shows a full dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target perfscope
mkdir -p data
if [[ "${1:-}" != "--demo" ]]; then
  exec build/release/perfscope serve --data-dir ./data "$@"
fi
shift
build/release/perfscope serve --data-dir ./data "$@" > >(tee data/serve.out) &
server=$!
trap 'kill -INT $demo 2>/dev/null; kill -INT $server 2>/dev/null; wait' INT TERM
url=""
for _ in $(seq 1 100); do
  url=$(sed -n 's|^perfscope listening on \(http://[^/]*\)/.*|\1|p' data/serve.out 2>/dev/null)
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || { echo "perfscope: the server did not start" >&2; kill $server; exit 1; }
build/release/perfscope demo --server "$url" &
demo=$!
wait $server
