#!/usr/bin/env bash
# Kernel-tracing verification on a machine with an NVIDIA GPU, the CUDA toolkit (nvcc, CUPTI)
# and PyTorch: builds libperfscope_cupti.so (CUPTI-only configuration) and the short CUDA test
# program, starts perfscope (PERFSCOPE_BIN, default build/release/perfscope) and runs
# verify_cupti.py. Leaves cupti_report.json/.md, the build log and the recorded fixtures in
# REPORT_DIR. Exit status: 0 when every check passed.
# Usage: tests/gpu/run_cupti.sh [REPORT_DIR]
source "$(dirname "$0")/setup_tracing.sh" "${1:-gpu-report}"
nvcc -O2 -o build/cupti/short_kernels tests/gpu/short_kernels.cu
source tests/gpu/start_server.sh
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_cupti.py "$url" "$bin" build/cupti/short_kernels "$report"
