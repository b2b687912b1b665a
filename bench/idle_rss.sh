#!/usr/bin/env bash
# Idle server RSS and CPU: starts the Release server on a loopback port with no clients,
# waits, and prints VmRSS/VmHWM from /proc and the CPU it used after its first second. Usage: bench/idle_rss.sh [seconds] [sampling-interval-ms]
# With 10 ms sampling for 105 s every ring buffer (10000 samples) is full: the steady state
# a server reaches after ~17 minutes at the default 100 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
interval=${2:-100}
bin=build/release/perfscope
[[ -x $bin ]] || { echo "build Release first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
$bin serve --listen 127.0.0.1:0 --data-dir "$dir" --sampling-interval-ms "$interval" >"$dir/out" 2>"$dir/err" &
pid=$!
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' /proc/$pid/stat; }
sleep 1
t0=$(cpu_ticks)
sleep "$((seconds - 1))"
t1=$(cpu_ticks)
series=$(curl -s "$(sed -n 's/.*listening on //p' "$dir/out")api/v1/info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runtime"]["series"])')
echo "after ${seconds}s at ${interval} ms sampling, ${series} series:"
grep -E 'VmRSS|VmHWM' /proc/$pid/status
awk -v d="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v s="$((seconds - 1))" \
  'BEGIN { printf "CPU: %.2f s in %d s = %.2f%% of one core\n", d / hz, s, 100 * d / hz / s }'
