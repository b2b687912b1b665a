#!/usr/bin/env bash
# The whole server's CPU on a GPU machine at the default intervals (100 ms sampling, GPU
# processes read every 200 ms), with 0, 2 and 8 GPU processes (idle PyTorch processes holding
# memory, spread over the GPUs; with BUSY=1 each runs a small matmul every 10 ms instead), in
# alternating order over ROUNDS rounds: a fresh server each
# time, 5 s to settle, then its CPU time over SECONDS from /proc. Prints one line per measurement
# (with the CPU of each of its threads, by name) and the median per process count.
# Usage: tests/gpu/server_cpu.sh [PERFSCOPE_BIN] [SECONDS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/release/perfscope}")
seconds=${2:-30}
rounds=${3:-2}
gpus=$(nvidia-smi -L | wc -l)
hz=$(getconf CLK_TCK)
results=$(mktemp)
# CPU ticks per thread name: "name ticks" lines, summed over threads of one name.
thread_ticks() {
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' < "$t/comm")" "$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "$t/stat")"
  done | awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }' | sort
}
measure() {  # $1: GPU processes
  local n=$1 pids=() dir
  for i in $(seq 1 "$n"); do
    local device="cuda:$(( (i - 1) % gpus ))" body="time.sleep(900)"
    if [[ ${BUSY:-0} == 1 ]]; then
      body="a = torch.randn(2048, 2048, device='$device')
while True:
    a @ a; torch.cuda.synchronize(); time.sleep(0.01)"
    fi
    ${PYTHON:-python3} -c "import torch, time
x = torch.empty(1 << 28, dtype=torch.uint8, device='$device'); print('ready', flush=True)
$body" > "/tmp/cpu-worker.$$.$i" &
    pids+=($!)
  done
  for _ in $(seq 240); do [[ $(cat /tmp/cpu-worker.$$.* 2>/dev/null | grep -c ready) -ge $n ]] && break; sleep 0.25; done
  dir=$(mktemp -d)
  "$bin" serve --listen 127.0.0.1:0 --data-dir "$dir" >"$dir/out" 2>"$dir/err" &
  local server=$!
  sleep 5
  local t0 t1
  t0=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$server/stat")
  thread_ticks "$server" > "$dir/threads0"
  sleep "$seconds"
  t1=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$server/stat")
  thread_ticks "$server" > "$dir/threads1"
  local threads
  threads=$(join "$dir/threads0" "$dir/threads1" | awk -v hz="$hz" -v s="$seconds" '{ printf "%s=%.3f ", $1, 100 * ($3 - $2) / hz / s }')
  local listed
  listed=$(curl -s "$(sed -n 's/.*listening on //p' "$dir/out")api/v1/processes?window=1m" | ${PYTHON:-python3} -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["processes"] if p["state"] == "running"))')
  kill "$server"; wait "$server" 2>/dev/null || true
  rm -rf "$dir"
  if ((n > 0)); then kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; fi
  rm -f /tmp/cpu-worker.$$.*
  awk -v d="$((t1 - t0))" -v hz="$hz" -v s="$seconds" -v n="$n" -v g="$gpus" -v l="$listed" \
    -v b="${BUSY:-0}" 'BEGIN { printf "gpus %d processes %d busy %d listed %d cpu_percent %.3f\n", g, n, b, l, 100 * d / hz / s }' | tee -a "$results"
  echo "  threads (percent of a core): $threads"
}
for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then order="0 2 8"; else order="8 2 0"; fi
  for n in $order; do measure "$n"; done
done
for n in 0 2 8; do
  awk -v n="$n" '$4 == n { print $10 }' "$results" | sort -g |
    awk -v n="$n" -v g="$gpus" '{ v[++k] = $1 } END { m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2;
      printf "median: gpus %d processes %d cpu_percent %.3f (%d measurements, %.3f-%.3f)\n", g, n, m, k, v[1], v[k] }'
done
rm -f "$results"
