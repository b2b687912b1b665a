#!/usr/bin/env bash
# Kernel-tracing verification on a machine with an NVIDIA GPU, the CUDA toolkit (nvcc, CUPTI)
# and PyTorch: builds libperfscope_cupti.so (CUPTI-only configuration) and the short CUDA test
# program, starts perfscope (PERFSCOPE_BIN, default build/release/perfscope) and runs
# verify_cupti.py. Leaves cupti_report.json/.md, the build log and the recorded fixtures in
# REPORT_DIR. Exit status: 0 when every check passed.
# Usage: tests/gpu/run_cupti.sh [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${PERFSCOPE_BIN:-build/release/perfscope}")
report=$(mkdir -p "${1:-gpu-report}" && realpath "${1:-gpu-report}")
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH"
cmake -S . -B build/cupti -G Ninja -DCMAKE_BUILD_TYPE=Release -DPERFSCOPE_CUPTI_ONLY=ON \
  -DCUDAToolkit_ROOT="$cuda" >"$report/build.log" 2>&1
cmake --build build/cupti >>"$report/build.log" 2>&1 || { cat "$report/build.log" >&2; exit 1; }
export PERFSCOPE_CUPTI_LIBRARY=$PWD/build/cupti/libperfscope_cupti.so
nvcc -O2 -o build/cupti/short_kernels tests/gpu/short_kernels.cu
source tests/gpu/start_server.sh
PYTHONUNBUFFERED=1 ${PYTHON:-python3} tests/gpu/verify_cupti.py "$url" "$bin" build/cupti/short_kernels "$report"
