#!/usr/bin/env bash
# Storage of the same sampled series by perfscope and by a real Prometheus (issue 21): one
# perfscope samples the host every INTERVAL_MS and stores its series; a Prometheus scrapes that
# perfscope's /metrics at the same interval, keeping only those series (metric_relabel_configs).
# After MINUTES both stop; Prometheus writes its head as a block (admin snapshot), perfscope's
# WAL is checkpointed; the report gives each one's bytes per sample.
#
# Usage: bench/storage_side_by_side.sh PERFSCOPE_BINARY OUT_DIR [MINUTES=30] [INTERVAL_MS=1000]
set -euo pipefail
bin=$(realpath "$1")
out=$2
minutes=${3:-30}
interval_ms=${4:-1000}
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/perfscope" "$out/prometheus"
mkdir -p "$out/perfscope" "$out/prometheus"
here=$(cd "$(dirname "$0")" && pwd)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data-dir "$out/perfscope" --sampling-interval-ms "$interval_ms" \
  --enable-gpu-collector false > "$out/perfscope.log" 2>&1 &
perfscope_pid=$!
cat > "$out/prometheus.yml" <<EOF
global:
  scrape_interval: $((interval_ms / 1000))s
scrape_configs:
  - job_name: perfscope
    static_configs:
      - targets: ['127.0.0.1:$port']
    metric_relabel_configs:
      # The series perfscope samples and stores: its host collector's families (exposed with a prefix).
      - source_labels: [__name__]
        regex: 'perfscope_(host|process|cgroup)_.*'
        action: keep
EOF
prometheus --config.file="$out/prometheus.yml" --storage.tsdb.path="$out/prometheus/data" \
  --web.listen-address="127.0.0.1:$prom_port" --web.enable-admin-api > "$out/prometheus.log" 2>&1 &
prom_pid=$!
trap 'kill $perfscope_pid $prom_pid 2>/dev/null || true' EXIT
sleep $((minutes * 60))

# Prometheus: its head (everything scraped) written as a block, and its own counts.
curl -sf "http://127.0.0.1:$prom_port/metrics" | grep -E '^prometheus_tsdb_head_(samples_appended_total|series|chunks) ' > "$out/prom_head.txt" || true
curl -sf -XPOST "http://127.0.0.1:$prom_port/api/v1/admin/tsdb/snapshot" > "$out/prom_snapshot.json"
kill -TERM $perfscope_pid $prom_pid
wait $perfscope_pid $prom_pid 2>/dev/null || true
trap - EXIT

python3 - "$out" "$here" <<'EOF'
import glob, json, os, sys
sys.path.insert(0, sys.argv[2])
from sample_storage import measure
out = sys.argv[1]
snap = json.load(open(f"{out}/prom_snapshot.json"))["data"]["name"]
blocks = glob.glob(f"{out}/prometheus/data/snapshots/{snap}/*/meta.json")
prom_bytes = prom_samples = prom_chunk_bytes = 0
for meta_path in blocks:
    block = os.path.dirname(meta_path)
    meta = json.load(open(meta_path))
    prom_samples += meta["stats"]["numSamples"]
    for root, _, files in os.walk(block):
        for f in files:
            size = os.path.getsize(os.path.join(root, f))
            prom_bytes += size
            if "/chunks" in root:
                prom_chunk_bytes += size
p = measure(f"{out}/perfscope/perfscope.db")
report = {
    "prometheus": {"blocks": len(blocks), "samples": prom_samples, "block_bytes": prom_bytes,
                   "chunk_bytes": prom_chunk_bytes,
                   "bytes_per_sample": prom_bytes / prom_samples if prom_samples else None,
                   "chunk_bytes_per_sample": prom_chunk_bytes / prom_samples if prom_samples else None},
    "perfscope": {k: p[k] for k in ("series", "samples", "file_bytes", "wal_bytes_after_checkpoint", "bytes_per_sample",
                                    "chunk_tables_bytes_per_sample", "series_and_chunk_tables_bytes_per_sample",
                                    "encoded_bytes_per_sample")},
}
json.dump(report, open(f"{out}/side_by_side.json", "w"), indent=1)
print(json.dumps(report, indent=1))
EOF
