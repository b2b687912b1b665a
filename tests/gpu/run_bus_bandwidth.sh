#!/usr/bin/env bash
# On a machine with two GPUs joined by NVLink: a pure all-reduce loop of 64, 128 and 256 MiB
# (collective_job.py --sweep-mb) under `perfscope run`, which loads the tracing library as NCCL's
# profiler plugin too. Saves what perfscope says of it (GET /api/v1/collectives, the NVLink
# series over the job, GET /api/v1/devices) beside the job's own CUDA-event timing, and
# verify_bus_bandwidth.py compares them: per size, bus bandwidth against the job's (nccl-tests'
# formula) and the NVLink tx series against the bytes each GPU sent. Then records a short sweep
# to a file, the CI fixture (tests/fixtures/collectives/sweep).
# Usage: [NPROC=ranks, default 2] tests/gpu/run_bus_bandwidth.sh [PERFSCOPE_BIN] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/perfscope}")
report=$(mkdir -p "${2:-gpu-report}" && realpath "${2:-gpu-report}")
source tests/gpu/start_server.sh
torchrun=${TORCHRUN:-torchrun}
out="$report/busbw"
mkdir -p "$out"
from=$(date +%s%N)
"$bin" run --server "$url" --name busbw -- "$torchrun" --standalone --nproc-per-node "${NPROC:-2}" tests/gpu/collective_job.py \
  --out "$out" --sweep-mb 64,128,256 --seconds 3 >"$out/job.log" 2>&1 || { cat "$out/job.log" >&2; exit 1; }
to=$(date +%s%N)
sleep 2
curl -sf "$url/api/v1/collectives?run=busbw&from=$from&to=$to" >"$out/collectives.json"
curl -sf "$url/api/v1/devices" >"$out/devices.json"
for d in tx rx; do
  curl -sf "$url/api/v1/series/query?name=gpu_nvlink_${d}_bytes_per_second&from=$from&to=$to&max_points=100000" >"$out/nvlink_$d.json"
done
status=0
${PYTHON:-python3} tests/gpu/verify_bus_bandwidth.py "$out" >"$out/verify.txt" || status=1
cat "$out/verify.txt"
# The fixture: the same loop, 0.3 s a size, traced to a file.
lib=$(dirname "$bin")/libperfscope_cupti.so
fixture="$report/sweep"
mkdir -p "$fixture"
CUDA_INJECTION64_PATH=$lib NCCL_PROFILER_PLUGIN=$lib PERFSCOPE_TRACE_FILE="$fixture/trace.ndjson" PERFSCOPE_RUN_NAME=sweep \
  "$torchrun" --standalone --nproc-per-node "${NPROC:-2}" tests/gpu/collective_job.py --out "$fixture" --sweep-mb 64,128,256 \
  --seconds 0.3 >"$fixture/job.log" 2>&1 || { cat "$fixture/job.log" >&2; exit 1; }
gzip -f "$fixture/trace.ndjson"
exit $status
