#!/usr/bin/env bash
# Per-process GPU attribution on a machine with an NVIDIA GPU, PyTorch and nvidia-smi: starts
# perfscope (PERFSCOPE_BIN, default build/release/perfscope) and runs verify_processes.py (two
# PyTorch processes of different sizes against nvidia-smi's per-process memory and pmon's SM
# share over the same seconds). Leaves processes_report.json/.md in REPORT_DIR; exit 0 when
# every check passed.
# Usage: tests/gpu/run_processes.sh [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/start_server.sh  # $bin, $report (the first argument) and the server
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_processes.py "$url" "$report"
