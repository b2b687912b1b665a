#!/usr/bin/env bash
# GPU verification on a machine with an NVIDIA GPU, PyTorch and nvidia-smi: starts perfscope
# (PERFSCOPE_BIN, default build/release/perfscope), runs tests/gpu/verify_nvml.py against it
# and leaves report.json and report.md in REPORT_DIR. Exit status: 0 when every check passed.
# Usage: tests/gpu/run.sh [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/start_server.sh  # $bin, $report (the first argument) and the server
${PYTHON:-python3} tests/gpu/verify_nvml.py "$url" "$report"
