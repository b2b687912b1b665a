#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU and PyTorch: starts perfscope (PERFSCOPE_BIN, default
# build/release/perfscope) with device targets and runs verify_roofline.py (achieved TFLOP/s and
# GB/s against the program's own, GPM's estimates beside them). Leaves roofline_report.json and
# matmul_flops_trace.json in REPORT_DIR; exit 0 when all passed.
# Usage: tests/gpu/run_roofline.sh [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${PERFSCOPE_BIN:-build/release/perfscope}")
report=$(mkdir -p "${1:-gpu-report}" && realpath "${1:-gpu-report}")
server_args=(--device-target '*,min_tflops=500,target_tflops=700,min_gb_per_second=2500,target_gb_per_second=3000')
source tests/gpu/start_server.sh
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_roofline.py "$url" "$bin" "$report"
