#!/usr/bin/env bash
# The golden CSV tables read by a real CSV consumer, the sqlite3 shell's RFC 4180 importer:
# every row arrives with all its columns, quoted names come back intact, numbers are numbers.
set -euo pipefail
dir=$1
fail=0
check() { # description, expected, actual
  if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAILED: $1: expected '$2', got '$3'"; fail=1; fi
}
q() { sqlite3 -batch -noheader :memory: ".import --csv $dir/$1.csv t" "$2"; }

check "kernels: rows" 51 "$(q kernels 'SELECT count(*) FROM t')"
check "kernels: quoted name with comma and quotes" 30 "$(q kernels "SELECT count(*) FROM t WHERE name = 'reduce_sum, \"fast\"'")"
check "kernels: duration column is numeric" 225.54 "$(q kernels 'SELECT round(sum(duration_ms), 2) FROM t')"
check "kernels: header names carry units" 1 "$(q kernels "SELECT count(*) FROM pragma_table_info('t') WHERE name = 'duration_ms'")"
check "inference: rows and errors" "40|1" "$(q inference "SELECT count(*), sum(status = 'error') FROM t")"
check "memory: frees have no size" 2 "$(q memory "SELECT count(*) FROM t WHERE op = 'free' AND size_bytes = ''")"
check "samples: labels with quotes survive" 10 "$(q samples "SELECT count(*) FROM t WHERE labels = 'gpu=\"0\"' AND metric = 'gpu_utilization_ratio'")"
exit $fail
