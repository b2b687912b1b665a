#!/usr/bin/env bash
# SIGKILL trials at the release count: the crash-consistency test (several clients ingesting
# while the server is killed at random moments and restarted on the same database; every
# acknowledged batch must be there and the database must pass its integrity check) run for
# ROUNDS kills instead of the test command's 20. Run once per release; figures go to
# bench/RESULTS.md, "Reliability".
# Usage: bench/kill_trials.sh PERFSCOPE_BIN [ROUNDS=100]
set -euo pipefail
bin=${1:?usage: bench/kill_trials.sh PERFSCOPE_BIN [ROUNDS]}
rounds=${2:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
log=$(mktemp)
status=0
PERFSCOPE_BIN=$(realpath "$bin") PERFSCOPE_KILL_ROUNDS=$rounds \
  node --test "$here/tests/faults/crash_consistency.test.mjs" >"$log" 2>&1 || status=$?
grep -E "^# (tests|pass|fail) |acknowledged batches|^not ok|^ok|error:" "$log" || true
[ "$status" = 0 ] || tail -40 "$log"
rm -f "$log"
echo "rounds: $rounds, wall: $(( $(date +%s) - start )) s, exit status: $status"
exit "$status"
