// Runs (`perfscope run` and the programs that report one): what a run's kernels say (executions,
// kernel time, GPU busy time as the union of its kernels per device, launch efficiency, the
// devices they ran on), what NVML saw of its processes, and run against run, kernel by kernel
// (engine/analysis/run_compare.hpp) with the totals and one verdict.
//
// Functions over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/analysis/run_compare.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/events/events.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

// What NVML saw of a run's processes while it ran. Time and energy are attributed by SM
// share: with none reported for any process they are unknown, not zero.
struct RunGpuProcesses {
  std::size_t processes = 0;
  double peak_memory_bytes = 0;
  std::optional<double> gpu_seconds, mean_sm_ratio, energy_joules;
};

struct RunFigures {
  RunEvent run;
  TimestampNs end_ns = 0;  // the run's end, or now while it runs
  double wall_s = 0;
  std::vector<std::string> devices;  // the run's GPUs and its kernels' devices, sorted
  std::size_t kernel_count = 0, distinct_kernels = 0;
  double kernel_ms = 0;
  // A duty-cycled run: its traced windows; executions and time scaled by them estimate the run.
  std::optional<analysis::TracedWindows> traced;
  std::optional<double> estimated_kernel_count, estimated_kernel_ms;  // none where nothing was traced
  double gpu_busy_ms = 0, kernel_span_ms = 0;  // summed over devices; the longest device span
  std::optional<double> launch_efficiency;     // devices weighted by their spans
  std::optional<RunGpuProcesses> gpu_processes;
};

// One pass over the run's executions; `durations`: each kernel's durations (ms) by name too.
Result<RunFigures> run_figures(const Sources& sources, const RunEvent& run, TimestampNs now,
                               analysis::KernelDurations* durations = nullptr);

// A figure of both runs, with b's change against a (none where a has none or is zero).
struct ComparedTotal {
  std::optional<double> a, b, change;
};

struct RunComparison {
  RunFigures a, b;
  ComparedTotal wall_s, gpu_busy_ms, kernel_count, kernel_ms, launch_efficiency;
  std::vector<analysis::KernelDiff> kernels;
  analysis::RunVerdict verdict;
};

// invalid_argument (field "a" or "b") for a name left empty, not_found for a run perfscope does
// not know.
Result<RunComparison> compare_runs(const Sources& sources, const std::string& a, const std::string& b,
                                   const analysis::RunCompareOptions& options, TimestampNs now);

}  // namespace perfscope::service
