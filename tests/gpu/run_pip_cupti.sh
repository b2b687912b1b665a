#!/usr/bin/env bash
# Kernel tracing of a pip-installed PyTorch where no CUDA toolkit is: the injection library as
# built on a machine without one (PERFSCOPE_CUPTI_LIBRARY: built there and carried here), run
# with this machine's toolkit out of sight, so the only CUPTI is the one PyTorch's wheels
# installed. verify_pip_cupti.py compares kernel names and counts with torch.profiler's.
# Before that, where nvcc is, a plain CUDA program is traced with the toolkit's CUPTI.
# --hide-toolkit moves /usr/local/cuda and /usr/local/cuda-* away for the run and back at the
# end: for a disposable machine only.
# Usage: PERFSCOPE_CUPTI_LIBRARY=… tests/gpu/run_pip_cupti.sh [--hide-toolkit] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
hide=0
if [[ ${1:-} == --hide-toolkit ]]; then hide=1; shift; fi
report=$(mkdir -p "${1:-gpu-report}" && realpath "${1:-gpu-report}")
library=$(realpath "${PERFSCOPE_CUPTI_LIBRARY:?the injection library, built where no CUDA toolkit is}")
python=$(command -v "${PYTHON:-python3}")  # the environment PyTorch is installed in
# First, with the toolkit still in sight: a CUDA program of its own (no Python) is traced with
# the toolkit's CUPTI.
if command -v nvcc >/dev/null; then
  nvcc -O2 -o "$report/short_kernels" tests/gpu/short_kernels.cu
  rm -f "$report/short.ndjson"
  CUDA_INJECTION64_PATH=$library PERFSCOPE_TRACE_FILE=$report/short.ndjson PERFSCOPE_RUN_NAME=short \
    "$report/short_kernels" 1000 2>"$report/short.stderr"
  rm -f "$report/short_kernels"
fi
hidden=()
restore() { for d in "${hidden[@]}"; do mv "/usr/local/.hidden-${d##*/}" "$d"; done; ldconfig 2>/dev/null || true; }
if ((hide)); then
  trap restore EXIT
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [[ -e $d || -L $d ]] || continue
    mv "$d" "/usr/local/.hidden-${d##*/}"
    hidden+=("$d")
  done
  ldconfig 2>/dev/null || true
  hash -r  # forget where nvcc was
fi
{
  echo "library: $library"
  ldd "$library"
  echo "toolkit visible: $(ls -d /usr/local/cuda* 2>/dev/null | tr '\n' ' ')"
  echo "nvcc: $(command -v nvcc || echo none)"
  echo "libcupti in the loader's cache: $(ldconfig -p | grep -c libcupti || true)"
} >"$report/environment.txt"
env -u CUDA_HOME -u CUDA_PATH -u LD_LIBRARY_PATH PATH="$(dirname "$python"):/usr/local/bin:/usr/bin:/bin" \
  "$python" tests/gpu/verify_pip_cupti.py "$library" "$report"
