#!/usr/bin/env bash
# Tracing cost of a two-rank job (tests/gpu/collective_job.py, equal ranks): the job untraced,
# traced by the injection library as `perfscope run` traces it (NCCL's profiler plugin
# included), and under torch.profiler,
# alternated round by round; each rank's median and fastest step wall time per variant.
# Usage: [NPROC=ranks, default 2] tests/gpu/run_collective_cost.sh [REPORT_DIR] [ROUNDS=3]
export PERFSCOPE_BIN=${PERFSCOPE_BIN:-$(command -v true)}
source "$(dirname "$0")/setup_tracing.sh" "${1:-gpu-report}"
torchrun=${TORCHRUN:-torchrun}
rounds=${2:-3}
job() {  # variant dir, then the job's arguments
  local dir=$1
  shift
  mkdir -p "$dir"
  "$torchrun" --standalone --nproc-per-node "${NPROC:-2}" tests/gpu/collective_job.py --out "$dir" --steps 200 "$@" \
    >"$dir/job.log" 2>&1 || { cat "$dir/job.log" >&2; exit 1; }
}
for ((r = 1; r <= rounds; r++)); do
  job "$report/cost/$r/untraced"
  CUDA_INJECTION64_PATH=$PERFSCOPE_CUPTI_LIBRARY NCCL_PROFILER_PLUGIN=$PERFSCOPE_CUPTI_LIBRARY \
    PERFSCOPE_TRACE_FILE="$report/cost/$r/trace.ndjson" \
    PERFSCOPE_RUN_NAME=cost job "$report/cost/$r/perfscope"
  rm -f "$report/cost/$r/trace.ndjson"
  job "$report/cost/$r/torch_profiler" --torch-profiler
done
python3 - "$report/cost" <<'PY'
import glob, json, os, statistics, sys
root = sys.argv[1]
rows = {}
for f in glob.glob(os.path.join(root, "*", "*", "rank*.json")):
    variant = os.path.basename(os.path.dirname(f))
    d = json.load(open(f))
    rows.setdefault(variant, []).append((d["step_wall_ms_median"], d["step_wall_ms_min"]))
base = statistics.median(m for m, _ in rows["untraced"])
for variant in ("untraced", "perfscope", "torch_profiler"):
    med = [m for m, _ in rows[variant]]
    print(f"{variant:15} step median {statistics.median(med):.3f} ms (ranks x rounds: {min(med):.3f}..{max(med):.3f}), "
          f"fastest {min(x for _, x in rows[variant]):.3f} ms, {statistics.median(med) / base - 1:+.1%} vs untraced")
PY
