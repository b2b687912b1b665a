#!/usr/bin/env bash
# A fuzzing campaign for a release: runs libFuzzer targets in parallel processes (each over its
# own copy of the committed seeds) for SECONDS, then merges what every process found into one
# minimized corpus per target (the committed seeds first, then inputs that add coverage), ready
# to commit as tests/fuzz/corpus/<target>/. Prints executions per target; findings (crashes,
# leaks, sanitizer reports) go to OUT_DIR/findings/ and make the exit status non-zero.
# Usage: tests/fuzz/campaign.sh OUT_DIR SECONDS TARGET=PROCESSES [TARGET=PROCESSES…]
#   e.g. tests/fuzz/campaign.sh /tmp/campaign 540 event_decoder=4 query=2 subscription=4 access=1 config=5
# Binaries: build/fuzz/tests/fuzz/fuzz_<target> (cmake --preset fuzz), or FUZZ_BIN_DIR.
# SEED_BASE (1000) offsets the processes' seeds, so a campaign run in parts does not repeat
# itself. MERGE=0 skips the merge (on a machine whose time is short) and leaves every process's
# inputs in OUT_DIR/inputs/<target>/, to merge later elsewhere with
#   fuzz_<target> -merge=1 corpus/<target> OUT_DIR/inputs/<target>/*
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tests/fuzz/campaign.sh OUT_DIR SECONDS TARGET=PROCESSES…}
seconds=${2:?seconds}
shift 2
bin_dir=${FUZZ_BIN_DIR:-build/fuzz/tests/fuzz}
work=$(mktemp -d)
mkdir -p "$out/findings" "$out/logs" "$out/corpus"
flags=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

for spec in "$@"; do
  target=${spec%=*}
  procs=${spec#*=}
  for ((i = 0; i < procs; i++)); do
    mkdir -p "$work/$target/$i"
    cp tests/fuzz/corpus/"$target"/* "$work/$target/$i"/
    "$bin_dir/fuzz_$target" -max_total_time="$seconds" -seed=$((${SEED_BASE:-1000} + i)) "${flags[@]}" \
      -artifact_prefix="$out/findings/$target-$i-" "$work/$target/$i" >"$out/logs/$target-$i.log" 2>&1 &
  done
done
status=0
wait || true  # a process that found something exits non-zero; its artifact says what

for spec in "$@"; do
  target=${spec%=*}
  procs=${spec#*=}
  total=0
  for ((i = 0; i < procs; i++)); do
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$target-$i.log" | tail -1)
    total=$((total + ${n:-0}))
  done
  if [[ ${MERGE:-1} == 0 ]]; then
    mkdir -p "$out/inputs"
    mv "$work/$target" "$out/inputs/$target"
    kept="inputs $(find "$out/inputs/$target" -type f | wc -l) (not merged)"
  else
    mkdir -p "$out/corpus/$target"
    cp tests/fuzz/corpus/"$target"/* "$out/corpus/$target"/
    "$bin_dir/fuzz_$target" -merge=1 "${flags[@]}" "$out/corpus/$target" "$work/$target"/* >"$out/logs/$target-merge.log" 2>&1
    kept="corpus $(ls "$out/corpus/$target" | wc -l) inputs"
  fi
  found=$(ls "$out/findings" | grep -c "^$target-" || true)
  (( found == 0 )) || status=1
  echo "fuzz_$target: $total executions in $procs processes x ${seconds} s; $kept; findings: $found"
done
rm -rf "$work"
exit $status
