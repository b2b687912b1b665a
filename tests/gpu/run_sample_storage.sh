#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU and PyTorch (issue 21): perfscope (PERFSCOPE_BIN, default
# build/release/perfscope) samples only the GPU collector every 100 ms for SECONDS while the
# GPU is under load (a bf16 GEMM loop with a streaming copy between) or idle; then its database
# is measured (bench/sample_storage.py: bytes per sample after a checkpoint) and re-encoded
# series by series (SAMPLE_CHUNK_SIZES, default build/release/bench/sample_chunk_sizes).
# Leaves storage_MODE.json, chunk_sizes_MODE.md and the database in REPORT_DIR.
# Usage: tests/gpu/run_sample_storage.sh load|idle SECONDS [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=$1
seconds=$2
bin=$(realpath "${PERFSCOPE_BIN:-build/release/perfscope}")
sizes=$(realpath "${SAMPLE_CHUNK_SIZES:-build/release/bench/sample_chunk_sizes}")
report=$(mkdir -p "${3:-gpu-report}" && realpath "${3:-gpu-report}")
data=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$data" --enable-host-collector false > "$data/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 2
if [[ $mode == load ]]; then
  ${PYTHON:-python3} - "$seconds" <<'EOF'
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
x = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
while time.time() < end:
    for _ in range(20):
        c = a @ b
    x.mul_(1.0001)  # a memory-bound phase between GEMMs
    torch.cuda.synchronize()
EOF
else
  sleep "$seconds"
fi
kill -TERM $pid
wait $pid || true
trap - EXIT
python3 bench/sample_storage.py "$data/perfscope.db" --json > "$report/storage_$mode.json"
cp "$data/perfscope.db" "$report/gpu_$mode.db"
"$sizes" "$data/perfscope.db" > "$report/chunk_sizes_$mode.md"
python3 - "$report/storage_$mode.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{m['samples']} samples of {m['series']} series: {m['bytes_per_sample']:.3f} B/sample (file + WAL after a checkpoint), "
      f"chunk tables {m['chunk_tables_bytes_per_sample']:.3f}, encoded {m['encoded_bytes_per_sample']:.3f}")
EOF
rm -rf "$data"
