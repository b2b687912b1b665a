#!/usr/bin/env bash
# The collective analysis on every GPU of a node (issue: multi-GPU at node scale): NPROC ranks
# (default: all GPUs) of collective_job.py, one job with a planted straggler (SLOW_RANK, default
# the last, doing 8 more matmuls a step) and one with equal ranks, traced as `perfscope run`
# traces them; a server imports both and GET /api/v1/collectives says who straggles and by how
# much, beside each rank's own CUDA-event compute time (the planted amount: the slow rank's
# median compute per step less the others' mean). Then the bus-bandwidth check at NPROC ranks
# (run_bus_bandwidth.sh). Everything goes to REPORT_DIR; verify.txt says each check.
# Usage: [NPROC=N] [SLOW_RANK=R] tests/gpu/run_node_scale.sh [PERFSCOPE_BIN] [REPORT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/perfscope}")
report=$(mkdir -p "${2:-gpu-report}" && realpath "${2:-gpu-report}")
export NPROC=${NPROC:-$(nvidia-smi -L | wc -l)}
slow=${SLOW_RANK:-$((NPROC - 1))}
lib=$(dirname "$bin")/libperfscope_cupti.so
torchrun=${TORCHRUN:-torchrun}
record() {  # job name, then the job's arguments
  local job=$1 dir="$report/$1"
  shift
  mkdir -p "$dir"
  rm -f "$dir/trace.ndjson" "$dir/trace.ndjson.gz"
  CUDA_INJECTION64_PATH=$lib NCCL_PROFILER_PLUGIN=$lib PERFSCOPE_TRACE_FILE="$dir/trace.ndjson" PERFSCOPE_RUN_NAME="$job" \
    "$torchrun" --standalone --nproc-per-node "$NPROC" tests/gpu/collective_job.py --out "$dir" "$@" >"$dir/job.log" 2>&1 ||
    { cat "$dir/job.log" >&2; exit 1; }
  gzip -f "$dir/trace.ndjson"
}
record straggler --extra-matmuls 8 --slow-rank "$slow"
record equal
source tests/gpu/start_server.sh
for job in straggler equal; do
  "$bin" import "$report/$job/trace.ndjson.gz" --server "$url" >/dev/null
  curl -sf "$url/api/v1/collectives?tag.run=$job&window=all" >"$report/$job/collectives.json"
done
${PYTHON:-python3} - "$report" "$slow" <<'PY' | tee "$report/verify.txt"
import glob, json, os, statistics, sys
report, slow = sys.argv[1], sys.argv[2]
def ranks(job):
    return {str(r["rank"]): r for r in (json.load(open(f)) for f in glob.glob(os.path.join(report, job, "rank*.json")))}
def jobs(job):
    return json.load(open(os.path.join(report, job, "collectives.json")))["jobs"]
own = ranks("straggler")
others = [r["compute_ms_median"] for k, r in own.items() if k != slow]
planted = own[slow]["compute_ms_median"] - statistics.mean(others)
j = jobs("straggler")[0]
s = j.get("straggler") or {}
extra = s.get("extra_per_step_ms")
err = (extra / planted - 1) if extra else None
print(f"ranks: {len(own)}; straggler named: rank {s.get('rank')} (planted: rank {slow}); extra compute per step "
      f"{extra} ms against {planted:.3f} ms planted ({err:+.1%})" if err is not None else f"no straggler: {j.get('no_straggler')}")
print("CHECK straggler_named", "PASS" if s.get("rank") == slow else "FAIL")
print("CHECK extra_within_10pct", "PASS" if err is not None and abs(err) <= 0.10 else "FAIL")
e = jobs("equal")[0]
print(f"equal ranks: straggler {e.get('straggler')}; {e.get('no_straggler')}")
print("CHECK equal_none_named", "PASS" if not e.get("straggler") else "FAIL")
PY
grep -q 'FAIL$' "$report/verify.txt" && status=1 || status=0
bash tests/gpu/run_bus_bandwidth.sh "$bin" "$report" || true
exit "$status"  # a failed check fails the run (the bus bandwidth sweep reports on its own)
