// What per-process GPU attribution adds to a sampling pass of one GPU (budget: ≤ 50 µs with 10
// processes): the GPU collector over the tests' stand-in NVML (PERFSCOPE_FAKE_NVML names it),
// a pass with 10 real processes listed (children of this program, so procfs knows them, with
// SM shares renewed as the driver's ~200 ms periods would) against a pass with none, the
// lifetime tracker attached. Simulated time advances 100 ms per pass, so each process's procfs
// entry is re-read once a second as in the server. The stand-in reads and parses its script on
// every call, so the difference also holds its two extra calls: an upper bound of our cost.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/collectors/gpu_collector.hpp"
#include "engine/collectors/process_tracker.hpp"

extern char** environ;

namespace {

std::vector<pid_t> children;

void spawn_children(int n) {
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("600"), nullptr};
    if (posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ) == 0) children.push_back(pid);
  }
}

std::string script_path() { return (std::filesystem::temp_directory_path() / "perfscope-process-bench.txt").string(); }

void write_script(int processes, long long now_us) {
  std::ofstream out(script_path());
  out << "count 1\n0.name NVIDIA H100 80GB HBM3\n0.uuid GPU-bench\n0.util_gpu 90\n0.mem_total 85520809984\n"
         "0.mem_used 9000000000\n0.power_mw 300000\n0.limit_mw 700000\n0.temp 60\n";
  if (processes == 0) return;
  out << "0.procs ";
  for (int i = 0; i < processes; ++i) out << (i ? "," : "") << children[i] << ":" << (1 << 30);
  out << "\n0.proc_util ";
  for (int i = 0; i < processes; ++i) out << (i ? "," : "") << children[i] << ":" << 10 + i << ":5:0:0@" << now_us;
  out << "\n";
}

void BM_GpuPassWithProcesses(benchmark::State& state) {
  const char* lib = std::getenv("PERFSCOPE_FAKE_NVML");
  if (!lib) {
    state.SkipWithError("set PERFSCOPE_FAKE_NVML to the stand-in NVML library (build/…/tests/libfake_nvml.so)");
    return;
  }
  const int processes = static_cast<int>(state.range(0));
  ::setenv("PERFSCOPE_FAKE_NVML_SCRIPT", script_path().c_str(), 1);
  perfscope::TimestampNs now = 1'000'000'000;
  write_script(processes, now / 1000);
  perfscope::ProcessTracker tracker;
  perfscope::GpuCollectorOptions options;
  options.library_path = lib;
  options.tracker = &tracker;
  perfscope::GpuCollector c(options);
  std::vector<perfscope::Reading> out;
  int pass = 0;
  for (auto _ : state) {
    now += 100'000'000;
    if (++pass % 2 == 0) {  // a new driver period every 200 ms
      state.PauseTiming();
      write_script(processes, now / 1000);
      state.ResumeTiming();
    }
    out.clear();
    c.collect(now, out);
  }
  state.counters["readings"] = static_cast<double>(out.size());
  state.counters["tracked"] = static_cast<double>(tracker.running().size());
}
BENCHMARK(BM_GpuPassWithProcesses)->Arg(0)->Arg(10)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  spawn_children(10);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (pid_t pid : children) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  std::filesystem::remove(script_path());
  return 0;
}
