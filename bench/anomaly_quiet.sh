#!/usr/bin/env bash
# Anomalies on a steady workload: serves on a loopback port at the default sampling interval,
# runs the demo workload (steady rates) for the whole time, then counts the anomalies the
# detector reported per series, as anomalies per series per hour. The issue's goal: at most one
# per series per hour. The machine should be otherwise quiet: other work on it shows in the
# host's series as real excursions.
# Usage: bench/anomaly_quiet.sh [minutes] [perfscope binary]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
bin=${2:-build/release/perfscope}
[[ -x $bin ]] || { echo "build Release first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
dir=$(mktemp -d)
trap 'kill $demo $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
$bin serve --listen 127.0.0.1:0 --data-dir "$dir" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 50); do grep -q 'listening on' "$dir/out" 2>/dev/null && break; sleep 0.2; done
url=$(sed -n 's/.*listening on //p' "$dir/out")
$bin demo --server "$url" --duration "$((minutes * 60))" >"$dir/demo.out" 2>&1 &
demo=$!
sleep "$((minutes * 60))"
curl -s "${url}api/v1/anomalies?window=$((minutes + 1))m" >"$dir/anomalies.json"
curl -s "${url}api/v1/info" >"$dir/info.json"
python3 - "$dir/anomalies.json" "$dir/info.json" "$minutes" <<'PY'
import collections, json, sys
anomalies = json.load(open(sys.argv[1]))["anomalies"]
series = json.load(open(sys.argv[2]))["runtime"]["series"]
hours = float(sys.argv[3]) / 60
per = collections.Counter(a["series"] for a in anomalies)
print(f"{len(anomalies)} anomalies over {series} series in {sys.argv[3]} min "
      f"({len(anomalies) / max(1, series) / hours:.3f} per series per hour)")
worst = per.most_common(10)
for name, n in worst:
    print(f"  {n / hours:6.2f}/h  {name}")
print(f"series over one per hour: {sum(1 for n in per.values() if n / hours > 1)}")
PY
