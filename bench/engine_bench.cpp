// Engine micro-benchmarks: the costs the walking skeleton's budgets name.
//   host sampling pass  <= 200 us CPU   (BM_HostSamplingPass, real /proc and /sys)
//   series append       <= 50 ns        (BM_SeriesAppend)
#include <benchmark/benchmark.h>

#include "engine/host_collector.hpp"
#include "engine/sampler.hpp"
#include "engine/series_store.hpp"

namespace perfscope {
namespace {

void BM_HostSamplingPass(benchmark::State& state) {
  // The whole pass as the sampler runs it: read procfs/sysfs, intern, append, build the batch.
  SeriesStore store(10000);
  Sampler sampler(store, std::chrono::milliseconds(100));
  sampler.add_collector(std::make_unique<HostCollector>());
  sampler.sample_once();
  std::size_t readings = 0;
  for (auto _ : state) readings = sampler.sample_once()->values.size();
  state.counters["readings"] = static_cast<double>(readings);
}
BENCHMARK(BM_HostSamplingPass)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);

void BM_HostCollectorOnly(benchmark::State& state) {
  HostCollector collector;
  std::vector<Reading> out;
  TimestampNs ts = 1;
  for (auto _ : state) {
    out.clear();
    collector.collect(ts++ * 100'000'000, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_HostCollectorOnly)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);

void BM_SeriesAppend(benchmark::State& state) {
  SeriesStore store(10000);
  SeriesId id = store.intern(SeriesKey("m", {{"cpu", "total"}}));
  TimestampNs ts = 0;
  for (auto _ : state) store.append(id, ++ts, 0.5);
}
BENCHMARK(BM_SeriesAppend);

void BM_SeriesAppendBatch(benchmark::State& state) {
  // Per-sample cost when a pass appends all its readings under one lock.
  SeriesStore store(10000);
  SampleBatch batch;
  for (int i = 0; i < state.range(0); ++i) {
    batch.values.emplace_back(store.intern(SeriesKey("m", {{"i", std::to_string(i)}})), 1.0);
  }
  for (auto _ : state) {
    ++batch.ts_ns;
    store.append(batch);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SeriesAppendBatch)->Arg(64);

}  // namespace
}  // namespace perfscope

BENCHMARK_MAIN();
