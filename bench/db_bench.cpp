// Where ingest time goes, part two: committing decoded kernel events through the writer.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <future>
#include <random>

#include "db/internal/retention_steps.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/migrations.hpp"

#include "db/writer.hpp"
#include "db/internal/writer_tasks.hpp"

namespace {

void BM_WriterKernelEvents(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("perfscope-db-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  perfscope::SeriesStore store(16);
  perfscope::MemoryTracker memory;
  auto writer = perfscope::db::Writer::open((dir / "b.db").string(), store, memory);
  if (!writer.ok()) {
    state.SkipWithError(writer.status().message().c_str());
    return;
  }
  const int n = static_cast<int>(state.range(0));
  std::vector<perfscope::Event> batch;
  for (int i = 0; i < n; ++i) {
    perfscope::KernelEvent k;
    k.name = "gemm_kernel_" + std::to_string(i % 16);
    k.stream = "1";
    k.variant = "tiled";
    k.start_ns = 1'700'000'000'000'000'000LL + i * 1000LL;
    k.end_ns = k.start_ns + 850;
    k.grid = {128, 64, 1};
    k.block = {256, 1, 1};
    batch.emplace_back(std::move(k));
  }
  for (auto _ : state) {
    std::promise<void> committed;
    (*writer)->submit(batch, [&](const perfscope::Status&) { committed.set_value(); });
    committed.get_future().wait();
  }
  state.SetItemsProcessed(state.iterations() * n);
  (*writer)->stop();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WriterKernelEvents)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

// Percentiles over 30 days that retention has rolled up: the stored tiers read from SQLite,
// merged (29 days, 46 hours, 118 minutes for a window not aligned to the day) and read.
// 600 latencies a minute (25.9 M values) went in through the same accumulator retention uses.
void BM_PercentilesFromStoredTiers30Days(benchmark::State& state) {
  namespace db = perfscope::db;
  constexpr std::int64_t kMinute = 60'000'000'000, kDay = 1440 * kMinute;
  constexpr perfscope::TimestampNs kT0 = 1'767'225'600'000'000'000;  // a midnight
  const auto dir = std::filesystem::temp_directory_path() / ("perfscope-tier-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.db").string();
  {
    auto conn = db::Connection::open(path);
    if (!conn.ok() || !db::migrate(*conn).ok()) {
      state.SkipWithError("cannot create the database");
      return;
    }
    std::mt19937_64 rng(5);
    std::lognormal_distribution<double> latency(std::log(2.0), 0.6);
    for (int day = 0; day < 31; ++day) {
      db::RollupAccumulator acc;
      for (int m = 0; m < 1440; ++m) {
        for (int i = 0; i < 600; ++i) {
          acc.add(db::rollup_source::kKernel, "1", "", kT0 + day * kDay + m * kMinute + i * 100'000'000LL, latency(rng));
        }
      }
      db::Transaction tx(*conn);
      if (!acc.write(*conn).ok() || !tx.commit().ok()) {
        state.SkipWithError("cannot write the tiers");
        return;
      }
    }
  }
  auto conn = db::Connection::open(path, /*read_only=*/true);
  const db::TimeRange window{kT0 + (17 * 60 + 23) * kMinute + 30'000'000'000, kT0 + 30 * kDay + (17 * 60 + 41) * kMinute};
  const double qs[] = {50, 90, 95, 99, 99.9};
  std::size_t rows = 0, count = 0;
  for (auto _ : state) {
    auto answer = db::read_rollups(*conn, db::rollup_source::kKernel, {"1"}, "", window);
    if (!answer.ok() || !answer->has_value()) {
      state.SkipWithError("no answer");
      break;
    }
    benchmark::DoNotOptimize((*answer)->rollup.percentiles(qs, perfscope::analysis::PercentileConvention::kNearestRank));
    rows = (*answer)->rows;
    count = (*answer)->rollup.count;
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["values"] = static_cast<double>(count);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_PercentilesFromStoredTiers30Days)->Unit(benchmark::kMillisecond)->Iterations(20);

// One retention step of a busy minute: 60,000 kernels (1,000/s in 60 one-second chunks on 4
// series), 600 LLM requests and 25 gauges at 10 Hz, rolled up and deleted in one
// transaction — the pause it puts on the writer.
void BM_RetentionStepBusyMinute(benchmark::State& state) {
  namespace db = perfscope::db;
  constexpr std::int64_t kSecond = 1'000'000'000, kMinute = 60 * kSecond;
  constexpr perfscope::TimestampNs kT0 = 1'767'225'600'000'000'000;
  const int minutes = 20;
  const auto dir = std::filesystem::temp_directory_path() / ("perfscope-retire-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  perfscope::SeriesStore store(16);
  perfscope::MemoryTracker memory;
  std::vector<perfscope::SeriesId> gauges;
  for (int g = 0; g < 25; ++g) gauges.push_back(store.intern(perfscope::SeriesKey("gauge_" + std::to_string(g), {})));
  auto writer = db::Writer::open((dir / "r.db").string(), store, memory);
  if (!writer.ok()) {
    state.SkipWithError(writer.status().message().c_str());
    return;
  }
  for (int s = 0; s < minutes * 60; ++s) {
    std::vector<perfscope::Event> batch;
    const perfscope::TimestampNs t = kT0 + s * kSecond;
    for (int i = 0; i < 1000; ++i) {
      perfscope::KernelEvent k;
      k.name = "kernel_" + std::to_string(i % 4);
      k.start_ns = t + i * 1'000'000LL;
      k.end_ns = k.start_ns + 200'000 + (i % 37) * 1000;
      batch.emplace_back(std::move(k));
    }
    for (int i = 0; i < 10; ++i) {
      perfscope::InferenceEvent e;
      e.model = "llm";
      e.ts_ns = t + i * 100'000'000LL;
      e.latency_ms = 100 + i;
      e.ttft_ms = 20;
      e.output_tokens = 64;
      batch.emplace_back(std::move(e));
    }
    std::promise<void> committed;
    (*writer)->submit(std::move(batch), [&](const perfscope::Status&) { committed.set_value(); });
    committed.get_future().wait();
    for (int i = 0; i < 10; ++i) {
      std::vector<std::pair<perfscope::SeriesId, double>> values;
      for (auto g : gauges) values.emplace_back(g, i * 0.1);
      (*writer)->enqueue(std::make_shared<const perfscope::SampleBatch>(perfscope::SampleBatch{t + i * 100'000'000LL, values}));
    }
  }
  (*writer)->flush();
  db::RetentionPolicy policy;
  policy.raw_max_age_ns = 1;
  policy.step_ns = kMinute;
  int minute = 1;
  std::uint64_t values = 0;
  for (auto _ : state) {
    std::promise<perfscope::Status> done;
    // "now" one minute further each time: each step retires the next minute.
    const perfscope::TimestampNs now = kT0 + (minute++) * kMinute + 1;
    db::WriterTasks::run(**writer, 
        [&](db::Connection& conn) {
          auto r = db::retention_step(conn, policy, now);
          if (!r.ok()) return r.status();
          values = r->values_rolled_up;
          return perfscope::Status();
        },
        [&](const perfscope::Status& s) { done.set_value(s); });
    if (!done.get_future().get().ok()) {
      state.SkipWithError("retention step failed");
      break;
    }
  }
  state.counters["values_per_step"] = static_cast<double>(values);
  (*writer)->stop();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_RetentionStepBusyMinute)->Unit(benchmark::kMillisecond)->Iterations(15)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
