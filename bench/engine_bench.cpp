// Engine micro-benchmarks: the costs the walking skeleton's budgets name.
//   host sampling pass  <= 200 us CPU   (BM_HostSamplingPass, real /proc and /sys)
//   series append       <= 50 ns        (BM_SeriesAppend)
#include <benchmark/benchmark.h>

#include "engine/collectors/host_collector.hpp"
#include "engine/sdk/monitor.hpp"
#include "engine/sdk/tick_clock.hpp"
#include "engine/series/sampler.hpp"
#include "engine/series/series_store.hpp"

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

// The two timestamps the code base uses: the wall clock (clock_gettime) and the TSC ticks
// the Monitor's hot path reads.
void BM_WallClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(now_ns());
}
BENCHMARK(BM_WallClockNow);

void BM_TickClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(TickClock::now());
}
BENCHMARK(BM_TickClockNow);

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

// The in-process API's hot path: what a begin/end pair costs the application's thread.
// Runs `record` once per iteration, draining the monitor outside the timed region every half
// ring, so the figure is the recording cost on the application thread alone.
template <typename Record>
void time_recording(benchmark::State& state, Monitor& monitor, Record&& record) {
  const std::size_t half = monitor.config().ring_capacity / 2;
  std::size_t n = 0;
  for (auto _ : state) {
    record();
    if (++n == half) {
      state.PauseTiming();
      monitor.drain();
      n = 0;
      state.ResumeTiming();
    }
  }
  state.counters["dropped"] = static_cast<double>(monitor.dropped_records());
}

void BM_BeginEndPair(benchmark::State& state) {
  Monitor monitor;
  time_recording(state, monitor, [&] {
    monitor.begin_kernel("gemm");
    monitor.end_kernel("gemm");
  });
}
BENCHMARK(BM_BeginEndPair);

// Sustained: an application that does nothing but begin/end pairs, with the drain thread
// running beside it; the rate is bounded by the drain (kWait: the producer waits, nothing is
// dropped). Shows how fast the monitor absorbs records end to end.
void BM_BeginEndPairSustained(benchmark::State& state) {
  Monitor monitor;
  monitor.start();
  for (auto _ : state) {
    monitor.begin_kernel("gemm");
    monitor.end_kernel("gemm");
  }
  monitor.stop();
  state.counters["dropped"] = static_cast<double>(monitor.dropped_records());
}
BENCHMARK(BM_BeginEndPairSustained);

void BM_ScopedKernel(benchmark::State& state) {
  Monitor monitor;
  time_recording(state, monitor, [&] { Monitor::ScopedKernel k(monitor, "gemm"); });
}
BENCHMARK(BM_ScopedKernel);

void BM_TrackAllocationAndFree(benchmark::State& state) {
  Monitor monitor;
  monitor.start();
  int buffer = 0;
  for (auto _ : state) {
    monitor.track_allocation(&buffer, 4096, MemoryKind::kDevice, "activations");
    monitor.track_deallocation(&buffer);
  }
  monitor.stop();
}
BENCHMARK(BM_TrackAllocationAndFree);

}  // namespace
}  // namespace perfscope

BENCHMARK_MAIN();
