// Where ingest time goes: decoding NDJSON into validated events, without HTTP or SQLite.
#include <benchmark/benchmark.h>

#include <string>

#include "server/wire/event_codec.hpp"

namespace {

std::string kernel_lines(int n) {
  std::string body;
  for (int i = 0; i < n; ++i) {
    long long start = 1'700'000'000'000'000'000LL + static_cast<long long>(i) * 1000;
    body += "{\"type\":\"kernel\",\"name\":\"gemm_kernel_" + std::to_string(i % 16) +
            "\",\"device\":\"0\",\"stream\":\"1\",\"variant\":\"tiled\",\"start_ns\":" + std::to_string(start) +
            ",\"end_ns\":" + std::to_string(start + 850) + ",\"grid\":[128,64,1],\"block\":[256,1,1]}\n";
  }
  return body;
}

void BM_DecodeNdjsonKernels(benchmark::State& state) {
  const std::string body = kernel_lines(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = perfscope::server::decode_ndjson_events(body, 1);
    benchmark::DoNotOptimize(r.events.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<long long>(body.size()));
}
BENCHMARK(BM_DecodeNdjsonKernels)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
