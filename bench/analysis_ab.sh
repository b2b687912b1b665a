#!/usr/bin/env bash
# Two perfscope builds answering the same analysis documents in turn: loads SECONDS of a busy
# window at KERNELS_PER_S into a server of the OLD build (as bench/analysis_doc.sh does; a newer
# build migrates an older database, never the other way), copies its data directory, starts both builds on the two copies, then asks each for
# /api/v1/analysis?window=1h REPEAT times, alternating, and prints each one's response times
# and process CPU per request. Alternating keeps a noisy machine's swings out of the comparison.
# Usage: bench/analysis_ab.sh OLD_PERFSCOPE NEW_PERFSCOPE [seconds] [kernels_per_s] [repeat]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?old perfscope binary}
new=${2:?new perfscope binary}
seconds=${3:-300}
rate=${4:-1000}
repeat=${5:-30}
gen=build/release/bench/busy_window
[[ -x $old && -x $new && -x $gen ]] || { echo "need two perfscope binaries and $gen (Release build)" >&2; exit 1; }
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
start() {  # start BINARY DATA_DIR: sets url and pid
  "$1" serve --listen 127.0.0.1:0 --data-dir "$2" >"$2.out" 2>"$2.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 100); do grep -q listening "$2.out" && break; sleep 0.1; done
  url=$(sed -n 's|^perfscope listening on \(http://[^/]*\)/.*|\1|p' "$2.out")
}
mkdir -p "$dir/new" "$dir/old"
start "$old" "$dir/old"
$gen "$seconds" "$rate" > "$dir/events.ndjson"
"$old" push --server "$url" < "$dir/events.ndjson"
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()
cp "$dir/old/"* "$dir/new/"
start "$new" "$dir/new"; new_url=$url; new_pid=$pid
start "$old" "$dir/old"; old_url=$url; old_pid=$pid
sleep 2
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # clock ticks
ticks=$(getconf CLK_TCK)
old_cpu=$(cpu "$old_pid"); new_cpu=$(cpu "$new_pid")
for _ in $(seq 1 "$repeat"); do
  curl -s -o /dev/null -w 'old %{time_total}\n' "$old_url/api/v1/analysis?window=1h"
  curl -s -o /dev/null -w 'new %{time_total}\n' "$new_url/api/v1/analysis?window=1h"
done > "$dir/times"
old_cpu=$(( $(cpu "$old_pid") - old_cpu )); new_cpu=$(( $(cpu "$new_pid") - new_cpu ))
for side in old new; do
  used=$old_cpu; [[ $side == new ]] && used=$new_cpu
  grep "^$side " "$dir/times" | awk '{ print $2 }' | sort -n |
    awk -v side="$side" -v cpu="$used" -v tck="$ticks" -v n="$repeat" \
      '{ a[NR] = $1 } END { printf "%s: n=%d min %.1f ms, median %.1f ms, max %.1f ms; process CPU %.0f ms per request\n", side, NR, a[1] * 1000, a[int((NR + 1) / 2)] * 1000, a[NR] * 1000, cpu / tck * 1000 / n }'
done
