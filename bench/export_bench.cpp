// What exports cost: EventMetrics::observe runs on the database writer thread for every
// committed batch (its cost adds to ingest), and a /metrics scrape renders every histogram.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/events/event_metrics.hpp"
#include "server/api/metrics_exposition.hpp"

namespace {

using namespace perfscope;

std::vector<Event> kernel_batch(int n, int distinct) {
  std::vector<Event> events;
  for (int i = 0; i < n; ++i) {
    KernelEvent k;
    k.name = "gemm_kernel_" + std::to_string(i % distinct);
    k.stream = "1";
    k.variant = "tiled";
    k.start_ns = 1'700'000'000'000'000'000LL + i * 1000LL;
    k.end_ns = k.start_ns + 850 + (i % 97) * 1000;
    events.emplace_back(std::move(k));
  }
  return events;
}

// One 1000-event commit of 16 kernel names into the live histograms.
void BM_ObserveKernelBatch(benchmark::State& state) {
  EventMetrics metrics;
  const auto batch = kernel_batch(1000, 16);
  for (auto _ : state) metrics.observe(batch);
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_ObserveKernelBatch)->Unit(benchmark::kMicrosecond);

// A scrape's formatting with `range(0)` kernel names (23 buckets each, plus the counter).
void BM_RenderExposition(benchmark::State& state) {
  EventMetrics metrics;
  metrics.observe(kernel_batch(static_cast<int>(state.range(0)) * 10, static_cast<int>(state.range(0))));
  std::vector<server::ExpositionFamily> families;
  for (EventMetricFamily& e : metrics.snapshot()) {
    server::ExpositionFamily f{e.family, {}, e.bounds, {}};
    for (auto& c : e.counters) f.samples.push_back({c.labels, c.value});
    for (auto& h : e.histograms) f.histograms.push_back({h.labels, h.cumulative, h.sum, h.count});
    families.push_back(std::move(f));
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = server::render_exposition(families, server::ExpositionFormat::kPrometheusText);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderExposition)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
