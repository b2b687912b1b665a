# Sourced by the GPU tracing scripts: builds libperfscope_cupti.so in the CUPTI-only
# configuration (build/cupti, log in $report/build.log) and points perfscope run at it.
# Expects $report; sets PERFSCOPE_CUPTI_LIBRARY and PATH (the CUDA toolkit's bin first).
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH"
cmake -S . -B build/cupti -G Ninja -DCMAKE_BUILD_TYPE=Release -DPERFSCOPE_CUPTI_ONLY=ON \
  -DCUDAToolkit_ROOT="$cuda" >"$report/build.log" 2>&1
cmake --build build/cupti >>"$report/build.log" 2>&1 || { cat "$report/build.log" >&2; exit 1; }
export PERFSCOPE_CUPTI_LIBRARY=$PWD/build/cupti/libperfscope_cupti.so
