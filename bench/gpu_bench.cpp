// One NVML sampling pass for every GPU of the machine (budget per GPU: ≤ 1 ms wall, ≤ 200 µs
// CPU), with and without the GPM step (which runs when ≥ 100 ms passed since its last sample).
// Needs a machine with an NVIDIA GPU; elsewhere it reports that and skips.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "engine/base/clock.hpp"
#include "engine/collectors/gpu_collector.hpp"

namespace {

// CPU time of the whole process (every thread), in microseconds.
double process_cpu_us() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void run(benchmark::State& state, bool with_gpm) {
  perfscope::GpuCollector c;
  if (c.devices().empty()) {
    state.SkipWithError(("no GPU: " + (c.sources().empty() ? std::string() : c.sources().back().detail)).c_str());
    return;
  }
  std::vector<perfscope::Reading> out;
  c.collect(perfscope::now_ns(), out);  // first GPM sample, rates primed
  std::size_t readings = 0;
  for (auto _ : state) {
    if (with_gpm) {
      state.PauseTiming();
      std::this_thread::sleep_for(std::chrono::milliseconds(110));
      state.ResumeTiming();
    }
    out.clear();
    c.collect(perfscope::now_ns(), out);
    readings = out.size();
  }
  state.counters["gpus"] = static_cast<double>(c.devices().size());
  state.counters["readings"] = static_cast<double>(readings);
}

// Passes 100 ms apart in the collector's clock (as the sampler's default interval makes them),
// back to back in real time: the mean includes the pass that reads the GPU's processes once
// a second (--gpu-process-interval-ms) and the GPM step whenever it is due.
void BM_GpuPassAt100ms(benchmark::State& state) {
  perfscope::GpuCollector c;
  if (c.devices().empty()) {
    state.SkipWithError("no GPU");
    return;
  }
  std::vector<perfscope::Reading> out;
  perfscope::TimestampNs now = perfscope::now_ns();
  c.collect(now, out);
  for (auto _ : state) {
    now += 100'000'000;
    out.clear();
    c.collect(now, out);
  }
  state.counters["readings"] = static_cast<double>(out.size());
}
BENCHMARK(BM_GpuPassAt100ms)->Unit(benchmark::kMicrosecond)->Iterations(2000);

// As the server samples: passes 100 ms apart in real time, the processes read every 200 ms on the
// collector's own thread (--gpu-process-interval-ms). The time is the sampler's pass alone;
// cpu_us_per_pass is the CPU of every thread of the process (the worker's reads included) over
// the run, per pass.
void BM_GpuPassServer(benchmark::State& state) {
  perfscope::GpuCollectorOptions o;
  o.process_thread = true;
  o.process_interval = std::chrono::milliseconds(200);
  perfscope::GpuCollector c(o);
  if (c.devices().empty()) {
    state.SkipWithError("no GPU");
    return;
  }
  std::vector<perfscope::Reading> out;
  c.collect(perfscope::now_ns(), out);
  const double cpu_before = process_cpu_us();
  std::size_t process_readings = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state.ResumeTiming();
    out.clear();
    c.collect(perfscope::now_ns(), out);
    for (const auto& r : out) process_readings += r.key.name == "gpu_process_memory_bytes";
  }
  state.counters["cpu_us_per_pass"] = (process_cpu_us() - cpu_before) / static_cast<double>(state.iterations());
  state.counters["process_readings_per_pass"] = static_cast<double>(process_readings) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_GpuPassServer)->Unit(benchmark::kMicrosecond)->Iterations(100);

void BM_GpuPassWithGpm(benchmark::State& state) { run(state, true); }
void BM_GpuPassWithoutGpm(benchmark::State& state) { run(state, false); }
BENCHMARK(BM_GpuPassWithGpm)->Unit(benchmark::kMicrosecond)->Iterations(50);
BENCHMARK(BM_GpuPassWithoutGpm)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// Each NVML call of a pass on its own, to see where a pass spends its time.
void BM_NvmlCall(benchmark::State& state) {
  auto lib = perfscope::nvml::Library::load("");
  if (!lib.ok()) {
    state.SkipWithError(lib.status().message().c_str());
    return;
  }
  const perfscope::nvml::Api& a = (*lib)->api();
  perfscope::nvml::Device d = nullptr;
  if (a.device_by_index(0, &d) != 0) {
    state.SkipWithError("no GPU 0");
    return;
  }
  const int which = static_cast<int>(state.range(0));
  static const char* names[] = {"utilization", "memory_v2", "power", "energy", "temperature", "field_values",
                                "clock", "clock_event_reasons", "processes", "gpm_sample_get", "field_energy",
                                "gpm_metrics_get_11", "gpm_metrics_get_1", "processes_fill", "process_utilization",
                                "process_utilization_size", "process_utilization_recent"};
  state.SetLabel(names[which]);
  perfscope::nvml::GpmSample sample = nullptr, sample2 = nullptr;
  if (which == 9 || which == 11 || which == 12) {
    if (!a.gpm_sample_alloc || a.gpm_sample_alloc(&sample) != 0 || a.gpm_sample_alloc(&sample2) != 0) {
      state.SkipWithError("no GPM");
      return;
    }
    a.gpm_sample_get(d, sample);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    a.gpm_sample_get(d, sample2);
  }
  auto request = std::make_unique<perfscope::nvml::GpmMetricsRequest>();
  const unsigned ids[] = {2, 3, 5, 10, 11, 12, 13, 20, 21, 60, 61};
  int rc = 0;
  const auto pause = std::chrono::milliseconds(state.range(1));
  for (auto _ : state) {
    if (pause.count() > 0) {  // as in the sampler: the call comes after an idle interval
      state.PauseTiming();
      std::this_thread::sleep_for(pause);
      state.ResumeTiming();
    }
    unsigned v = 0;
    unsigned long long ull = 0;
    switch (which) {
      case 0: { perfscope::nvml::Utilization u{}; rc = a.utilization(d, &u); break; }
      case 1: { perfscope::nvml::MemoryV2 m{}; m.version = perfscope::nvml::kMemoryV2Version; rc = a.memory_v2(d, &m); break; }
      case 2: rc = a.power_usage(d, &v); break;
      case 3: rc = a.total_energy(d, &ull); break;
      case 4: rc = a.temperature(d, 0, &v); break;
      case 5: {
        perfscope::nvml::FieldValue fv[2] = {};
        fv[0].field_id = perfscope::nvml::kFieldMemoryTemperature;
        fv[1].field_id = perfscope::nvml::kFieldPowerInstant;
        rc = a.field_values(d, 2, fv);
        break;
      }
      case 6: rc = a.clock(d, perfscope::nvml::kClockSm, &v); break;
      case 7: rc = a.clock_event_reasons(d, &ull); break;
      case 8: { unsigned n = 0; rc = a.compute_processes(d, &n, nullptr); break; }
      case 13: {  // the list itself, into a buffer with room to spare
        perfscope::nvml::ProcessInfo procs[128];
        unsigned n = 128;
        rc = a.compute_processes(d, &n, procs);
        break;
      }
      case 14: {  // per-process utilization; the driver asks for room for 72 samples
        if (!a.process_utilization) { rc = 13; break; }
        perfscope::nvml::ProcessUtilizationSample samples[128];
        unsigned n = 128;
        rc = a.process_utilization(d, samples, &n, 0);
        break;
      }
      case 15: {  // the sizing call the documentation suggests before a read (no buffer)
        if (!a.process_utilization) { rc = 13; break; }
        unsigned n = 0;
        rc = a.process_utilization(d, nullptr, &n, 0);
        break;
      }
      case 16: {  // a read of what is newer than 1 s ago, as a collector asks after its first read
        if (!a.process_utilization) { rc = 13; break; }
        perfscope::nvml::ProcessUtilizationSample samples[128];
        unsigned n = 128;
        const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        rc = a.process_utilization(d, samples, &n, static_cast<unsigned long long>(now_us - 1'000'000));
        break;
      }
      case 9: rc = a.gpm_sample_get(d, sample); break;
      case 11:
      case 12: {
        std::memset(request.get(), 0, sizeof *request);
        request->version = 1;
        request->num_metrics = which == 11 ? 11 : 1;
        request->sample1 = sample;
        request->sample2 = sample2;
        for (unsigned i = 0; i < request->num_metrics; ++i) request->metrics[i].metric_id = which == 11 ? ids[i] : 10;
        rc = a.gpm_metrics_get(request.get());
        break;
      }
      case 10: {
        perfscope::nvml::FieldValue fv[1] = {};
        fv[0].field_id = 83;  // total energy, mJ
        rc = a.field_values(d, 1, fv);
        if (rc == 0) rc = fv[0].nvml_return;
        ull = fv[0].value.ull;
        state.counters["energy_mj"] = static_cast<double>(ull);
        state.counters["value_type"] = fv[0].value_type;
        break;
      }
    }
    benchmark::DoNotOptimize(rc);
  }
  state.counters["rc"] = rc;
  if (sample) a.gpm_sample_free(sample);
  if (sample2) a.gpm_sample_free(sample2);
}
BENCHMARK(BM_NvmlCall)->ArgsProduct({benchmark::CreateDenseRange(0, 16, 1), {0}})->Unit(benchmark::kMicrosecond)->MinTime(0.2);
BENCHMARK(BM_NvmlCall)->ArgsProduct({{0, 1, 2, 4, 5, 6, 7, 8, 9}, {110}})->Unit(benchmark::kMicrosecond)->Iterations(20);
// How the first call's cost grows with the idle time before it (utilization, GPM sample).
BENCHMARK(BM_NvmlCall)->ArgsProduct({{0, 9}, {1, 5, 20, 50}})->Unit(benchmark::kMicrosecond)->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
