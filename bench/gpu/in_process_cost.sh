#!/usr/bin/env bash
# Tracing cost measured inside one process, where the GPU machine's ±30 % between processes
# cannot reach it: the decode loop runs for SECONDS (default 16) timing each pass, while the
# tracer is attached WINDOW_MS of every EVERY_MS (default 2000 of 4000) of the wall clock and
# detached between — perfscope through `perfscope run --trace-window --trace-every`, the bare
# CUPTI floor through its own windows (cupti_floor.cpp). Passes inside a window (150 ms from
# its edges) are traced, passes inside the gap untraced; in_process_summary.py compares them
# per process. Variants alternate round by round.
# Variants:
#   floor-kernel   CUPTI with CONCURRENT_KERNEL only (the floor)
#   floor-kwm      CUPTI with the default kinds' activity (runtime: calls that start GPU work)
#   run-kernel     perfscope run --kinds kernel
#   run-runtime    perfscope run with the default kinds (in a duty cycle every runtime call of
#                  a window is recorded)
#   run-launch     perfscope run --kinds kernel,memcpy,memset,launch,memory (launch callbacks)
# Usage: bench/gpu/in_process_cost.sh REPORT_DIR ROUNDS VARIANT...
source "$(dirname "$0")/../../tests/gpu/setup_tracing.sh" "$1"
rounds=$2
shift 2
floor=$PWD/build/cupti/libcupti_floor.so
window=${WINDOW_MS:-2000}
every=${EVERY_MS:-4000}
program=(${PYTHON:-python3} bench/gpu/decode_loop.py --tokens "${TOKENS:-16}" --seconds "${SECONDS_RUN:-16}" --pass-times)
[[ -n ${PIN_CPUS:-} ]] && program=(taskset -c "$PIN_CPUS" "${program[@]}")
source tests/gpu/start_server.sh
out=$report/in_process.jsonl
for round in $(seq 1 "$rounds"); do
  for v in "$@"; do
    name=inproc-$v-$round
    case $v in
      floor-kernel) line=$(CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_KINDS=kernel CUPTI_FLOOR_WINDOW_MS=$window \
                             CUPTI_FLOOR_EVERY_MS=$every "${program[@]}" 2>"$report/$name.err" | grep '^{' | tail -n 1) || true ;;
      floor-kwm) line=$(CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_KINDS=kernel,runtime-work,memory \
                          CUPTI_FLOOR_WINDOW_MS=$window CUPTI_FLOOR_EVERY_MS=$every "${program[@]}" 2>"$report/$name.err" |
                        grep '^{' | tail -n 1) || true ;;
      run-kernel) line=$("$bin" run --server "$url" --name "$name" --kinds kernel --trace-window "${window}ms" \
                           --trace-every "${every}ms" -- "${program[@]}" 2>"$report/$name.err" | grep '^{' | tail -n 1) || true ;;
      run-runtime) line=$("$bin" run --server "$url" --name "$name" --trace-window "${window}ms" \
                            --trace-every "${every}ms" -- "${program[@]}" 2>"$report/$name.err" | grep '^{' | tail -n 1) || true ;;
      run-launch) line=$("$bin" run --server "$url" --name "$name" --kinds kernel,memcpy,memset,launch,memory \
                           --trace-window "${window}ms" --trace-every "${every}ms" -- "${program[@]}" 2>"$report/$name.err" |
                         grep '^{' | tail -n 1) || true ;;
      *) echo "unknown variant $v" >&2; exit 2 ;;
    esac
    echo "{\"variant\":\"$v\",\"round\":$round,\"window_ms\":$window,\"every_ms\":$every,\"result\":${line:-null}}" >>"$out"
    echo "$v round $round: ${line:0:60}"
  done
done
${PYTHON:-python3} bench/gpu/in_process_summary.py "$out" "$report"
