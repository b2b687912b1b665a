#!/usr/bin/env bash
# On a GPU machine: (1) a pip-installed PyTorch program traced the way a Kubernetes sidecar
# traces it — `perfscope relay` copies the injection library into a folder and listens on a
# socket there; the program gets only CUDA_INJECTION64_PATH, PERFSCOPE_TRACE_SOCKET and
# PERFSCOPE_RUN_NAME — its kernel names and counts compared with torch.profiler's;
# (2) a kernel that faults (xid_fault.cu): the driver's Xid counted and alerted by the server.
# Writes relay_report.json and .md into REPORT_DIR.
# Usage: tests/gpu/run_relay.sh [PERFSCOPE_BIN] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/perfscope}")
report=$(mkdir -p "${2:-gpu-report}" && realpath "${2:-gpu-report}")
source tests/gpu/start_server.sh
fault=""
if command -v nvcc >/dev/null; then
  nvcc -O2 -o "$report/xid_fault" tests/gpu/xid_fault.cu
  fault="$report/xid_fault"
fi
${PYTHON:-python3} tests/gpu/verify_relay.py "$bin" "$url" "$report" "$fault"
