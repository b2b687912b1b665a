// What one scrape costs the scraper, without HTTP: a 2,000-line exposition (the vLLM shape:
// gauges, counters and histograms per model, repeated over models) parsed and turned into
// readings, and the readings interned and appended to the in-memory store, as a sampler pass
// does.
#include <benchmark/benchmark.h>

#include <string>

#include "engine/series/series_store.hpp"
#include "server/scrape/scrape_series.hpp"
#include "server/wire/exposition_parse.hpp"

namespace {

std::string exposition(int models) {
  std::string out = "# TYPE vllm:num_requests_running gauge\n# TYPE vllm:generation_tokens_total counter\n"
                    "# TYPE vllm:e2e_request_latency_seconds histogram\n";
  const char* bounds[] = {"0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0",
                          "40.0", "50.0", "60.0", "+Inf"};
  for (int m = 0; m < models; ++m) {
    const std::string labels = "model_name=\"model-" + std::to_string(m) + "\"";
    out += "vllm:num_requests_running{" + labels + "} " + std::to_string(m % 7) + "\n";
    out += "vllm:generation_tokens_total{" + labels + "} " + std::to_string(51200 + m) + ".0\n";
    int cumulative = 0;
    for (const char* le : bounds) {
      cumulative += 3;
      out += "vllm:e2e_request_latency_seconds_bucket{le=\"" + std::string(le) + "\"," + labels + "} " +
             std::to_string(cumulative) + ".0\n";
    }
    out += "vllm:e2e_request_latency_seconds_count{" + labels + "} " + std::to_string(cumulative) + ".0\n";
    out += "vllm:e2e_request_latency_seconds_sum{" + labels + "} 1204.7\n";
  }
  return out;
}

void BM_ScrapeParseConvertStore(benchmark::State& state) {
  const std::string text = exposition(static_cast<int>(state.range(0)));
  perfscope::server::ScrapeSeries series({"vllm", "127.0.0.1:8000", {}}, 1'000'000, 1'000'000);
  perfscope::SeriesStore store(1000);
  perfscope::TimestampNs ts = 1'700'000'000'000'000'000;
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  for (auto _ : state) {
    auto parsed = perfscope::server::parse_exposition(text, false);
    auto readings = series.convert(*parsed, ts);
    perfscope::SampleBatch batch;
    batch.ts_ns = ts;
    for (const perfscope::Reading& r : *readings) batch.values.emplace_back(store.intern(r.key), r.value);
    store.append(batch);
    ts += 1'000'000'000;
  }
  state.counters["lines"] = static_cast<double>(lines);
  state.SetItemsProcessed(state.iterations() * static_cast<long long>(lines));
}
// 100 models × 20 lines + 3 TYPE lines: 2,003 lines.
BENCHMARK(BM_ScrapeParseConvertStore)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
