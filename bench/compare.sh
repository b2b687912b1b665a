#!/usr/bin/env bash
# The hot-path regression guard: builds two commits in Release and alternates their ingest,
# codec, writer, begin/end-pair and percentile benches round by round (A B, then B A, ...),
# printing each figure's median per side and the median HEAD/BASE ratio of the paired rounds
# with its spread. Only ratios of paired rounds compare on a machine whose speed drifts.
#
# Usage: bench/compare.sh BASE HEAD [rounds=5]
#   BASE, HEAD: commits (anything git rev-parse takes). Uncommitted changes are not measured.
#   Trees and builds are kept under build/compare/<commit>/ (ccache makes rebuilds cheap).
# Ingest runs one load generator, HEAD's, against each side's server (bench/ingest_bench.sh
# 8 5000 10); the other figures run each side's own bench programs.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n 2,11p "$0" >&2; exit 2; }
rounds=${3:-5}
root=$PWD/build/compare
mkdir -p "$root"

targets=(perfscope perfscope_bench codec_bench db_bench analysis_bench ingest_load)

build() {  # commit → prints its build directory
  local sha dir
  sha=$(git rev-parse --verify "$1^{commit}")
  dir=$root/${sha:0:12}
  if [[ ! -d $dir/src ]]; then
    git worktree add --detach "$dir/src" "$sha" >&2
  fi
  # The build embeds the dashboard's vendored files; both sides read this checkout's.
  [[ -e $dir/src/web/node_modules ]] || ln -s "$PWD/web/node_modules" "$dir/src/web/node_modules"
  cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPERFSCOPE_BUILD_TESTS=OFF \
    -DPERFSCOPE_BUILD_BENCH=ON >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }
  CCACHE_BASEDIR=$dir/src ninja -C "$dir/build" "${targets[@]}" >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log" >&2; exit 1; }
  echo "$dir/build"
}

base_label=$(git rev-parse --short "$1^{commit}")
head_label=$(git rev-parse --short "$2^{commit}")
echo "building $base_label and $head_label (Release) ..." >&2
base=$(build "$1")
head=$(build "$2")
load=$head/bench/ingest_load

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

gbench() {  # dir program filter → real time in ns of the one benchmark matched
  "$1/bench/$2" --benchmark_filter="$3" --benchmark_min_time=0.5 --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys
b=[x for x in json.load(sys.stdin)["benchmarks"] if x.get("run_type","iteration")=="iteration"]
u={"ns":1,"us":1e3,"ms":1e6,"s":1e9}[b[0]["time_unit"]]
print(b[0]["real_time"]*u)'
}

measure() {  # side dir round
  local side=$1 dir=$2 r=$3 eps
  eps=$(PERFSCOPE_BIN=$dir/perfscope INGEST_LOAD=$load bench/ingest_bench.sh 8 5000 10 |
    sed -n 's/.* events_per_second=\([0-9]*\).*/\1/p')
  {
    echo "$side $r ingest_events_per_s $eps"
    echo "$side $r decode_1000_ns $(gbench "$dir" codec_bench 'BM_DecodeNdjsonKernels/1000$')"
    echo "$side $r writer_10000_ns $(gbench "$dir" db_bench 'BM_WriterKernelEvents/10000/')"
    echo "$side $r begin_end_pair_ns $(gbench "$dir" perfscope_bench 'BM_BeginEndPair$')"
    echo "$side $r percentiles_1m_ns $(gbench "$dir" analysis_bench 'BM_Percentiles/1000000/1$')"
  } >>"$out/figures"
}

for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(base head); else order=(head base); fi
  for side in "${order[@]}"; do
    echo "round $r/$rounds: $side" >&2
    if [[ $side == base ]]; then measure base "$base" "$r"; else measure head "$head" "$r"; fi
  done
done

python3 - "$out/figures" "$base_label" "$head_label" <<'PY'
import statistics, sys
from collections import defaultdict
fig = defaultdict(lambda: defaultdict(dict))
for line in open(sys.argv[1]):
    side, r, name, value = line.split()
    fig[name][side][int(r)] = float(value)
higher_better = {"ingest_events_per_s"}
print(f"BASE {sys.argv[2]}  HEAD {sys.argv[3]}  rounds alternated A B / B A")
print(f"{'figure':22} {'BASE median':>14} {'HEAD median':>14} {'HEAD/BASE':>10} {'paired min..max':>16}  better")
for name, sides in fig.items():
    rounds = sorted(set(sides["base"]) & set(sides["head"]))
    ratios = [sides["head"][r] / sides["base"][r] for r in rounds if sides["base"][r] > 0]
    b = statistics.median(sides["base"].values()); h = statistics.median(sides["head"].values())
    ratio = statistics.median(ratios)
    good = ratio >= 1 if name in higher_better else ratio <= 1
    print(f"{name:22} {b:14.1f} {h:14.1f} {ratio:10.3f} {min(ratios):7.3f}..{max(ratios):<7.3f}  "
          f"{'HEAD' if good else 'BASE'} ({'higher' if name in higher_better else 'lower'} is better)")
PY
