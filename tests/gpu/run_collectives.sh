#!/usr/bin/env bash
# Records two-rank jobs (tests/gpu/collective_job.py under torchrun) traced by the injection
# library, as `perfscope run` traces them (NCCL's profiler plugin included), for the collective analysis: one with a planted
# straggler (more matmuls on rank 1), one with equal ranks, one whose all-reduce runs beside
# the matmuls (--overlap). Each job's trace (NDJSON, gzipped)
# and its ranks' own CUDA-event timings go to REPORT_DIR/<job>/. Needs two GPUs.
# Usage: [NPROC=ranks, default 2] tests/gpu/run_collectives.sh [REPORT_DIR]
# No server is needed: the traces are files, imported where they are tested.
export PERFSCOPE_BIN=${PERFSCOPE_BIN:-$(command -v true)}
source "$(dirname "$0")/setup_tracing.sh" "${1:-gpu-report}"
torchrun=${TORCHRUN:-torchrun}
record() {  # job name, then the job's arguments
  local job=$1 dir="$report/$1"
  shift
  mkdir -p "$dir"
  rm -f "$dir/trace.ndjson"
  CUDA_INJECTION64_PATH=$PERFSCOPE_CUPTI_LIBRARY NCCL_PROFILER_PLUGIN=$PERFSCOPE_CUPTI_LIBRARY PERFSCOPE_TRACE_FILE="$dir/trace.ndjson" PERFSCOPE_RUN_NAME="$job" \
    "$torchrun" --standalone --nproc-per-node "${NPROC:-2}" tests/gpu/collective_job.py --out "$dir" "$@" >"$dir/job.log" 2>&1 ||
    { cat "$dir/job.log" >&2; exit 1; }
  gzip -f "$dir/trace.ndjson"
}
record straggler --extra-matmuls 8
record equal
record overlap --overlap
echo "recorded in $report"
