#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS (default 30) over a scratch copy of its seeds; exits
# non-zero at the first finding (crash, leak, sanitizer report), whose input is left in
# build/fuzz/findings/. Prints one line per target with its executions.
# Usage: tests/fuzz/run.sh [SECONDS [TARGET…]]   (targets: event_decoder query subscription config access exposition trace_import sample_chunk session)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
shift || true
targets=("$@")
(( ${#targets[@]} )) || targets=(event_decoder query subscription config access exposition trace_import sample_chunk session)
mkdir -p build/fuzz/findings
for target in "${targets[@]}"; do
  scratch=$(mktemp -d)
  cp tests/fuzz/corpus/$target/* "$scratch"/
  log=build/fuzz/findings/$target.log
  if ! build/fuzz/tests/fuzz/fuzz_$target -max_total_time="$seconds" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
       -artifact_prefix=build/fuzz/findings/$target- -print_final_stats=1 "$scratch" >"$log" 2>&1; then
    rm -rf "$scratch"
    echo "fuzz_$target: FINDING (see $log)" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  rm -rf "$scratch"
  echo "fuzz_$target: $(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1) executions in ${seconds} s, no finding"
done
