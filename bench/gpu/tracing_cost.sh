#!/usr/bin/env bash
# What kernel tracing costs a launch-bound program, measured as users would feel it: the
# program's own timed part, untraced and under each tracer, alternating variant by variant
# within each round (this machine's GPU runs vary by ±30 % between processes; never one
# variant's rounds in a row). Appends one JSON line per run to REPORT_DIR/tracing_cost.jsonl
# and writes the summary (tracing_cost.md/.json) at the end.
#
# Workloads: decode (bench/gpu/decode_loop.py: a small transformer decoding at batch 1) and
# empty (bench/gpu/empty_kernels.cu: 1,000,000 empty kernels from one thread).
# Variants:
#   plain          untraced
#   floor-kernel   CUPTI with CONCURRENT_KERNEL only, records counted and dropped (the floor)
#   floor-krm      the floor with RUNTIME and MEMORY2 as well, every runtime call recorded
#   floor-kwm      as floor-krm with only the runtime calls that start GPU work recorded
#                  (launches, copies, memsets: what perfscope's library records)
#   floor-ksampled floor-kernel with the runtime kind (work calls) on 100 ms of every second
#   floor-buf1m, floor-buf16m   floor-kernel with 1 MiB or 16 MiB buffers instead of 4 MiB
#   floor-flush100 floor-kernel asking CUPTI for its records every 100 ms (perfscope: 500 ms)
#   file-kernel    perfscope's library, kernel kind, events to a file (no socket, no perfscope run)
#   run-default    perfscope run with its default kinds (kernel,memcpy,memset,launch,memory)
#   run-kernel     perfscope run --kinds kernel (socket, forwarding, a server ingesting)
#   run-runtime    perfscope run --kinds kernel,memcpy,memset,runtime,memory (the runtime
#                  calls that start GPU work recorded: launch correlation; the default kinds
#                  until the launch kind replaced it)
#   run-driver     run-runtime's kinds and driver: driver-API launches too (cuBLAS, Triton)
#   run-launch     perfscope run --kinds kernel,memcpy,memset,launch,memory (launch calls by
#                  callbacks instead of the runtime kind)
#   run-duty5      perfscope run --duty-cycle 5% (kinds as run-launch; 200 ms windows every 4 s)
#   run-duty5r     perfscope run --duty-cycle 5% with the default kinds (the runtime kind when the
#                  first figures were taken, launch callbacks since)
#   run-idle       as run-duty5 with one 10 ms window an hour: the library loaded, CUPTI detached
#   profiler       torch.profiler, CUDA activity only (decode only)
# PIN_CPUS (e.g. 4-7) runs the program, and so every thread of every variant, on those CPUs.
# FIRST_ROUND numbers the rounds of a later call, whose lines join an earlier call's file.
# Usage: bench/gpu/tracing_cost.sh REPORT_DIR WORKLOAD ROUNDS VARIANT...
source "$(dirname "$0")/../../tests/gpu/setup_tracing.sh" "$1"
workload=$2
rounds=$3
shift 3
variants=("$@")
floor=$PWD/build/cupti/libcupti_floor.so
[[ -f $floor ]] || { echo "libcupti_floor.so was not built" >&2; cat "$report/build.log" >&2; exit 1; }
python=${PYTHON:-python3}
case $workload in
  decode) program=("$python" bench/gpu/decode_loop.py --passes "${DECODE_PASSES:-6}") ;;
  empty)
    nvcc -O2 -o build/cupti/empty_kernels bench/gpu/empty_kernels.cu
    program=(build/cupti/empty_kernels "${EMPTY_KERNELS:-1000000}") ;;
  *) echo "unknown workload $workload" >&2; exit 2 ;;
esac
[[ -n ${PIN_CPUS:-} ]] && program=(taskset -c "$PIN_CPUS" "${program[@]}")
source tests/gpu/start_server.sh
scratch=$(mktemp -d)
out=$report/tracing_cost.jsonl
export CUPTI_FLOOR_COUNTS=$report/floor_records.txt  # each floor run's record count

run_variant() {  # variant round → the program's JSON line on stdout
  local v=$1 name="$workload-$1-$2"
  case $v in
    plain) "${program[@]}" ;;
    floor-kernel) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_KINDS=kernel "${program[@]}" ;;
    floor-krm) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_KINDS=kernel,runtime,memory "${program[@]}" ;;
    floor-kwm) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_KINDS=kernel,runtime-work,memory "${program[@]}" ;;
    floor-ksampled) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_RUNTIME_WINDOW_MS=100 CUPTI_FLOOR_RUNTIME_EVERY_MS=1000 \
                      "${program[@]}" ;;
    floor-buf1m) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_BUFFER_BYTES=$((1 << 20)) "${program[@]}" ;;
    floor-buf16m) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_BUFFER_BYTES=$((16 << 20)) "${program[@]}" ;;
    floor-flush100) CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_FLUSH_MS=100 "${program[@]}" ;;
    file-kernel) CUDA_INJECTION64_PATH=$PERFSCOPE_CUPTI_LIBRARY PERFSCOPE_TRACE_FILE=$scratch/$name.ndjson \
                   PERFSCOPE_TRACE_KINDS=kernel PERFSCOPE_RUN_NAME=$name "${program[@]}" ;;
    run-default) "$bin" run --server "$url" --name "$name" -- "${program[@]}" ;;
    run-kernel) "$bin" run --server "$url" --name "$name" --kinds kernel -- "${program[@]}" ;;
    run-launch) "$bin" run --server "$url" --name "$name" --kinds kernel,memcpy,memset,launch,memory -- "${program[@]}" ;;
    run-runtime) "$bin" run --server "$url" --name "$name" --kinds kernel,memcpy,memset,runtime,memory -- "${program[@]}" ;;
    run-driver) "$bin" run --server "$url" --name "$name" --kinds kernel,memcpy,memset,runtime,driver,memory \
                  -- "${program[@]}" ;;
    run-duty5) "$bin" run --server "$url" --name "$name" --duty-cycle 5% --kinds kernel,memcpy,memset,launch,memory \
                 -- "${program[@]}" ;;
    run-duty5r) "$bin" run --server "$url" --name "$name" --duty-cycle 5% -- "${program[@]}" ;;
    run-idle) "$bin" run --server "$url" --name "$name" --trace-window 10ms --trace-every 1h \
                --kinds kernel,memcpy,memset,launch,memory -- "${program[@]}" ;;
    profiler) "${program[@]}" --profiler ;;
    *) echo "unknown variant $v" >&2; return 2 ;;
  esac
}

first=${FIRST_ROUND:-1}
if [[ $workload == decode && $first -eq 1 ]]; then  # how many kernels the timed part launches
  "${program[@]}" --count-kernels | tail -n 1 | sed 's/^/{"workload":"decode","variant":"count","round":0,"result":/; s/$/}/' >>"$out"
fi
for round in $(seq "$first" $((first + rounds - 1))); do
  for v in "${variants[@]}"; do
    line=$(timeout 120 bash -c "$(declare -f run_variant); $(declare -p program floor bin url scratch workload); run_variant $v $round" \
             2>"$scratch/stderr" | grep '^{' | tail -n 1) || true
    if [[ -z $line ]]; then
      echo "$workload $v round $round: no result" >&2
      tail -n 5 "$scratch/stderr" >&2
      line=null
    fi
    echo "{\"workload\":\"$workload\",\"variant\":\"$v\",\"round\":$round,\"result\":$line}" >>"$out"
    echo "$workload $v $round $line"
  done
done
# Launch correlation as each variant gave it, from the last round's runs: kernels with and
# without their launch call in the analysis.
for v in "${variants[@]}"; do
  [[ $v == run-* ]] || continue
  curl -s "$url/api/v1/analysis?run=$workload-$v-$((first + rounds - 1))" |
    "$python" -c 'import json,sys; d=json.load(sys.stdin); rows=[t for t in d["timeline"] if t["stream"] is None]
print(json.dumps({"kernel_count": sum(t["kernel_count"] for t in rows), "with_launch": sum((t["launch_delay_ms"] or {}).get("count", 0) for t in rows),
                  "sampling": d.get("sampling")}))' |
    sed "s/^/{\"workload\":\"$workload\",\"variant\":\"$v\",\"round\":\"correlation\",\"result\":/; s/\$/}/" >>"$out" || true
done
rm -rf "$scratch"
"$python" bench/gpu/tracing_cost_summary.py "$out" "$report"
