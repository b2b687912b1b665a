#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU, the CUDA toolkit and PyTorch: builds
# libperfscope_cupti.so (CUPTI-only configuration), starts perfscope (PERFSCOPE_BIN, default
# build/release/perfscope) and runs verify_python_client.py (the Python client's kernel_timer
# against CUPTI). Leaves python_client_report.json/.md in REPORT_DIR; exit 0 when all passed.
# Usage: tests/gpu/run_python_client.sh [REPORT_DIR]
source "$(dirname "$0")/setup_tracing.sh" "${1:-gpu-report}"
source tests/gpu/start_server.sh
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_python_client.py "$url" "$bin" "$report"
