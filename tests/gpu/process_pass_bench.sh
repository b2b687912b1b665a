#!/usr/bin/env bash
# What per-process attribution costs a sampling pass on a real GPU: bench/gpu_bench's passes
# back to back (WithoutGpm: every pass reads the processes once the interval passed) and 100 ms
# apart in the collector's clock (At100ms: the processes read once a second, GPM when due), and
# as the server samples (PassServer: 100 ms apart in real time, the processes read every 200 ms
# on the collector's own thread; its cpu_us_per_pass counts every thread),
# with no compute process on the GPU, then with 10 idle PyTorch processes holding memory on it,
# alternated twice, and with the processes, the driver calls a read of them makes, one by one.
# Prints the benchmark lines.
# Usage: tests/gpu/process_pass_bench.sh [GPU_BENCH]
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${1:-build/release/bench/gpu_bench}
run() { "$bench" --benchmark_filter="WithoutGpm|At100ms|PassServer" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null | grep -E "_(median|mean)"; }
for round in 1 2; do
  echo "round $round: no GPU process"
  run
  pids=()
  for _ in $(seq 10); do
    ${PYTHON:-python3} -c 'import torch, time; x = torch.empty(1 << 28, dtype=torch.uint8, device="cuda"); print("ready", flush=True); time.sleep(600)' > /tmp/worker.$$.$_ &
    pids+=($!)
  done
  for _ in $(seq 120); do [[ $(cat /tmp/worker.$$.* 2>/dev/null | grep -c ready) -ge 10 ]] && break; sleep 0.5; done
  echo "round $round: 10 GPU processes ($(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) listed by nvidia-smi)"
  run
  # The driver calls a read makes, one by one: the count, the list, per-process utilization.
  "$bench" --benchmark_filter='NvmlCall/(8|13|14|15|16)/0/' 2>/dev/null | grep NvmlCall
  kill "${pids[@]}"; wait 2>/dev/null || true; rm -f /tmp/worker.$$.*
done
