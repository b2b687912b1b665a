#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU, the CUDA toolkit and PyTorch: builds
# libperfscope_cupti.so (CUPTI-only configuration) and variant_kernels, starts two perfscope
# servers (PERFSCOPE_BIN, default build/release/perfscope) and runs verify_runs.py. Leaves
# runs_report.json/.md and the logs in REPORT_DIR. Exit status: 0 when every check passed.
# Usage: tests/gpu/run_runs.sh [REPORT_DIR]
source "$(dirname "$0")/setup_tracing.sh" "${1:-gpu-report}"
nvcc -O2 -o build/cupti/variant_kernels tests/gpu/variant_kernels.cu
# The empty server first (its own directory, log and exit), then the main one.
alone_dir=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$alone_dir" >"$alone_dir/out" 2>"$report/server-alone.log" &
alone_pid=$!
source tests/gpu/start_server.sh
trap 'kill $pid $alone_pid 2>/dev/null || true; rm -rf "$dir" "$alone_dir"' EXIT
for _ in $(seq 1 100); do grep -q listening "$alone_dir/out" && break; sleep 0.1; done
alone=$(sed -n 's|^perfscope listening on \(https\?://[^/]*\)/.*|\1|p' "$alone_dir/out")
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_runs.py "$url" "$alone" "$bin" build/cupti/variant_kernels "$report"
