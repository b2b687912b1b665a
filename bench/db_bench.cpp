// Where ingest time goes, part two: committing decoded kernel events through the writer.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include "db/writer.hpp"

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

}  // namespace

BENCHMARK_MAIN();
