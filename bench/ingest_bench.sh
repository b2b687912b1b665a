#!/usr/bin/env bash
# HTTP ingest throughput: starts the Release server on a fresh database, runs the load
# generator against it, and reports events/s, request latency and bytes on disk per event.
# Usage: bench/ingest_bench.sh [connections] [events_per_request] [seconds]
# PERFSCOPE_BIN and INGEST_LOAD name other builds (bench/compare.sh runs one load generator
# against two servers).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PERFSCOPE_BIN:-build/release/perfscope}
load=${INGEST_LOAD:-build/release/bench/ingest_load}
[[ -x $bin && -x $load ]] || { echo "build Release first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
$bin serve --listen 127.0.0.1:0 --data-dir "$dir" --enable-host-collector false >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
url=$(sed -n 's|^perfscope listening on \(http://[^/]*\)/.*|\1|p' "$dir/out")
$load "$url" "${1:-4}" "${2:-1000}" "${3:-10}" | tee "$dir/load"
kill -TERM $pid; wait $pid || true
events=$(sed -n 's/.* events=\([0-9]*\) .*/\1/p' "$dir/load")
bytes=$(du -cb "$dir"/perfscope.db* | tail -1 | cut -f1)
awk -v b="$bytes" -v e="$events" 'BEGIN { printf "database %d bytes for %d events = %.1f bytes/event\n", b, e, b / e }'
