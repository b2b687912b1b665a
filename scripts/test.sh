#!/usr/bin/env bash
# Installs what is missing, builds with sanitizers and warnings as errors, and runs every
# test (unit, integration, browser) through ctest under ASan+UBSan, the engine, database and
# server tests under TSan, then the fuzz targets for 30 s each; with
# PERFSCOPE_TEST_CONTAINER=1 also builds and tests the container image. Exits non-zero on any
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --tests
# Where the system's Node is too old for the tests, the one install_deps.sh fetched comes first.
if [[ -x .tools/node/bin/node ]]; then export PATH="$PWD/.tools/node/bin:$PATH"; fi
# ccache keyed on paths relative to the checkout, so a fresh clone reuses what an earlier
# build of the same sources compiled; room for the four build trees below.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build/asan-ubsan --output-on-failure --no-tests=error -j 2 "$@"
# ThreadSanitizer over the engine, database and server tests (threads: sampler, writer,
# retention, network and worker pools), then the libFuzzer targets (clang, their own preset)
# for 30 s each over their seeds. Both skipped when ctest arguments pick a subset of the tests.
if (( $# == 0 )); then
  cmake --preset tsan >/dev/null
  cmake --build build/tsan --target engine_tests db_tests server_tests
  for t in engine_tests db_tests server_tests; do
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} "build/tsan/tests/$t" --gtest_brief=1
  done
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz --target fuzz_targets
  tests/fuzz/run.sh 30
fi
# The container image, built and run (long: about ten minutes on two cores).
if [[ "${PERFSCOPE_TEST_CONTAINER:-0}" == 1 ]]; then
  tests/container/test_image.sh
fi
