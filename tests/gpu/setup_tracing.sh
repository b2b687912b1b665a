# Sourced first by the GPU tracing scripts, with their REPORT_DIR argument: moves to the
# checkout, sets $bin (PERFSCOPE_BIN, default build/release/perfscope) and $report (created),
# builds libperfscope_cupti.so in the CUPTI-only configuration (build/cupti, log in
# $report/build.log) unless PERFSCOPE_CUPTI_LIBRARY names one, and points perfscope run at it
# (PERFSCOPE_CUPTI_LIBRARY; PATH has the CUDA toolkit's bin first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bin=$(realpath "${PERFSCOPE_BIN:-build/release/perfscope}")
report=$(mkdir -p "${1:-gpu-report}" && realpath "${1:-gpu-report}")
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH"
# A library built elsewhere (PERFSCOPE_CUPTI_LIBRARY, carried) is used as it is.
if [[ ! -f ${PERFSCOPE_CUPTI_LIBRARY:-} ]]; then
  cmake -S . -B build/cupti -G Ninja -DCMAKE_BUILD_TYPE=Release -DPERFSCOPE_CUPTI_ONLY=ON \
    -DCUDAToolkit_ROOT="$cuda" >"$report/build.log" 2>&1
  cmake --build build/cupti >>"$report/build.log" 2>&1 || { cat "$report/build.log" >&2; exit 1; }
  export PERFSCOPE_CUPTI_LIBRARY=$PWD/build/cupti/libperfscope_cupti.so
fi
