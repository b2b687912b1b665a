// Analysis budgets (issue 4): percentiles over 1M raw samples, an A/B test of 10k vs 10k
// samples with 10k bootstrap resamples.
#include <benchmark/benchmark.h>

#include <random>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/log_histogram.hpp"
#include "engine/analysis/stats.hpp"
#include "engine/analysis/timeline.hpp"

namespace {

using namespace perfscope::analysis;

std::vector<double> latencies(std::size_t n, double median_ms, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median_ms), 0.35);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

void BM_Percentiles(benchmark::State& state) {
  const auto data = latencies(static_cast<std::size_t>(state.range(0)), 2.0, 1);
  const double qs[] = {50, 90, 95, 99, 99.9};
  const auto convention = state.range(1) ? PercentileConvention::kLinear : PercentileConvention::kNearestRank;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<double> work = data;  // the query copies what it reads from storage too
    state.ResumeTiming();
    auto p = percentiles(work, qs, convention);
    Moments m = moments(work);
    benchmark::DoNotOptimize(p.data());
    benchmark::DoNotOptimize(m);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Percentiles)->Args({1'000'000, 0})->Args({1'000'000, 1})->Unit(benchmark::kMillisecond);

void BM_AbTest(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto a = latencies(n, 2.0, 2), b = latencies(n, 1.9, 3);
  AbOptions o;
  o.bootstrap_resamples = static_cast<std::size_t>(state.range(1));
  for (auto _ : state) {
    AbResult r = compare(a, b, o);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_AbTest)->Args({10'000, 10'000})->Unit(benchmark::kMillisecond);

void BM_Bootstrap(benchmark::State& state) {
  const auto a = latencies(10'000, 2.0, 2), b = latencies(10'000, 1.9, 3);
  for (auto _ : state) benchmark::DoNotOptimize(bootstrap_speedup_ci(a, b, 10'000, 1));
}
BENCHMARK(BM_Bootstrap)->Unit(benchmark::kMillisecond);

void BM_MannWhitneyAndHodgesLehmann(benchmark::State& state) {
  const auto a = latencies(10'000, 2.0, 2), b = latencies(10'000, 1.9, 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(mann_whitney_u(a, b));
    benchmark::DoNotOptimize(hodges_lehmann_shift(a, b));
  }
}
BENCHMARK(BM_MannWhitneyAndHodgesLehmann)->Unit(benchmark::kMillisecond);

// Percentiles over 30 days from histogram tiers, as stored blobs: a window not aligned to
// days reads the whole days inside it from the day tier and its ragged ends from the hour
// and minute tiers (29 days + 2 × 23 hours + 2 × 59 minutes = 193 histograms), deserializes
// and merges them, then reads five percentiles. Each minute holds 600 latencies (10/s).
void BM_HistogramTiers30Days(benchmark::State& state) {
  auto minute = [](std::uint64_t seed) {
    LogHistogram h;
    for (double v : latencies(600, 2.0, seed)) h.add(v);
    return h;
  };
  LogHistogram hour, day;
  for (int m = 0; m < 60; ++m) hour.merge(minute(100 + static_cast<std::uint64_t>(m)));
  for (int h = 0; h < 24; ++h) day.merge(hour);
  std::vector<std::string> blobs;
  for (int i = 0; i < 29; ++i) blobs.push_back(day.serialize());
  for (int i = 0; i < 46; ++i) blobs.push_back(hour.serialize());
  for (int i = 0; i < 118; ++i) blobs.push_back(minute(static_cast<std::uint64_t>(i)).serialize());
  const double qs[] = {50, 90, 95, 99, 99.9};
  for (auto _ : state) {
    LogHistogram all;
    for (const std::string& b : blobs) all.merge(*LogHistogram::deserialize(b));
    for (double q : qs) benchmark::DoNotOptimize(all.percentile(q));
  }
  state.counters["histograms"] = static_cast<double>(blobs.size());
  state.counters["samples"] = static_cast<double>(30.0 * 86400 * 10);
}
BENCHMARK(BM_HistogramTiers30Days)->Unit(benchmark::kMillisecond);

// The same 30 days merged from minute histograms alone (43,200 of them): why tiers exist.
void BM_HistogramMinutes30Days(benchmark::State& state) {
  std::vector<LogHistogram> minutes;
  for (int i = 0; i < 64; ++i) {
    LogHistogram h;
    for (double v : latencies(600, 2.0, 1000 + static_cast<std::uint64_t>(i))) h.add(v);
    minutes.push_back(std::move(h));
  }
  for (auto _ : state) {
    LogHistogram all;
    for (int i = 0; i < 43'200; ++i) all.merge(minutes[static_cast<std::size_t>(i % 64)]);
    benchmark::DoNotOptimize(all.percentile(99));
  }
}
BENCHMARK(BM_HistogramMinutes30Days)->Unit(benchmark::kMillisecond);

// The kernel timeline of a busy 5-minute window: 300,000 executions (1,000/s) on 4 streams of
// one device, each with its launch call, 16 kernel names. Second argument 1: series by series,
// each in start order, as the database returns them (64 runs of ascending start); 0: as they
// arrived, 64 at a time per stream (4,688 runs); 2: shuffled (runs of about two: sorted).
void BM_AnalyzeTimeline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  KernelTrace trace;
  trace.devices = {"0"};
  trace.streams = {"7", "13", "21", "29"};
  for (int i = 0; i < 16; ++i) trace.names.push_back("kernel_" + std::to_string(i));
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> duration(20'000, 900'000), gap(0, 400'000);
  std::vector<perfscope::TimestampNs> at(4, 1'767'225'600'000'000'000);
  for (std::size_t i = 0; i < n; ++i) {
    const auto stream = static_cast<std::uint32_t>((i / 64) % 4);  // chunks of 64 per stream
    TraceKernel k;
    k.launch_start_ns = at[stream];
    k.launch_end_ns = at[stream] + 4'000;
    k.start_ns = at[stream] + 6'000 + gap(rng);
    k.end_ns = k.start_ns + duration(rng);
    at[stream] = k.end_ns;
    k.name = static_cast<std::uint32_t>(i % 16);
    k.stream = stream;
    trace.kernels.push_back(k);
  }
  if (state.range(1) == 1) {
    std::stable_sort(trace.kernels.begin(), trace.kernels.end(), [](const TraceKernel& a, const TraceKernel& b) {
      return std::pair(a.stream, a.name) < std::pair(b.stream, b.name);
    });
  } else if (state.range(1) == 2) {
    std::shuffle(trace.kernels.begin(), trace.kernels.end(), rng);
  }
  for (auto _ : state) benchmark::DoNotOptimize(analyze_timeline(trace));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AnalyzeTimeline)->Args({300'000, 1})->Args({300'000, 0})->Args({300'000, 2})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
