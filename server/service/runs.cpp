#include "server/service/runs.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "server/service/processes.hpp"
#include "server/service/scoped_reads.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {

Result<std::optional<RunGpuProcesses>> run_gpu_processes(const Sources& sources, const RunEvent& r, TimestampNs end) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto listed, gpu_processes_in(sources, r.start_ns, end));
  RunGpuProcesses out;
  double gpu_seconds = 0, sm_seconds = 0, energy = 0;
  for (const ListedProcess& l : listed) {
    if (std::find(r.pids.begin(), r.pids.end(), l.record.identity.pid) == r.pids.end()) continue;
    ++out.processes;
    out.peak_memory_bytes = std::max(out.peak_memory_bytes, l.record.peak_memory_bytes);
    gpu_seconds += l.record.gpu_seconds;
    sm_seconds += l.record.sm_observed_seconds;
    energy += l.record.energy_joules;
  }
  if (out.processes == 0) return std::optional<RunGpuProcesses>();
  if (sm_seconds > 0) {
    out.gpu_seconds = gpu_seconds;
    out.mean_sm_ratio = gpu_seconds / sm_seconds;
    out.energy_joules = energy;
  }
  return std::optional(out);
}

ComparedTotal compared(std::optional<double> a, std::optional<double> b) {
  ComparedTotal t{a, b, std::nullopt};
  if (a && b && *a != 0) t.change = *b / *a - 1;
  return t;
}

}  // namespace

Result<RunFigures> run_figures(const Sources& sources, const RunEvent& r, TimestampNs now,
                               an::KernelDurations* durations) {
  RunFigures out;
  out.run = r;
  // One pass over the run's executions gives every kernel figure (and, for comparisons, the
  // durations by name).
  auto trace = sources.events->kernel_trace({0, INT64_MAX}, db::EventScope{"", r.name});
  if (!trace.ok()) return trace.status();
  for (const an::TraceKernel& k : trace->kernels) {
    const double ms = static_cast<double>(k.end_ns - k.start_ns) / 1e6;
    out.kernel_ms += ms;
    if (durations) (*durations)[trace->names[k.name]].push_back(ms);
  }
  out.kernel_count = trace->kernels.size();
  out.distinct_kernels = trace->names.size();
  out.devices = r.gpus;
  for (const auto& d : trace->devices) {
    if (std::find(out.devices.begin(), out.devices.end(), d) == out.devices.end()) out.devices.push_back(d);
  }
  std::sort(out.devices.begin(), out.devices.end());
  // A duty-cycled run: its timeline over the windows traced.
  auto traced = run_windows(*sources.history, r, r.start_ns, INT64_MAX, now);
  if (!traced.ok()) return traced.status();
  out.traced = std::move(*traced);
  an::TimelineOptions timeline;
  if (out.traced) timeline.windows = out.traced->windows;
  if (out.traced && out.traced->fraction > 0) {
    out.estimated_kernel_count = static_cast<double>(out.kernel_count) / out.traced->fraction;
    out.estimated_kernel_ms = out.kernel_ms / out.traced->fraction;
  }
  double spans = 0, efficient = 0;
  for (const an::QueueTimeline& q : an::analyze_timeline(*trace, timeline)) {
    if (!q.stream.empty()) continue;
    out.gpu_busy_ms += q.busy_ms;
    out.kernel_span_ms = std::max(out.kernel_span_ms, q.span_ms);
    spans += q.span_ms;
    efficient += q.launch_efficiency * q.span_ms;
  }
  if (spans > 0) out.launch_efficiency = efficient / spans;
  out.end_ns = r.end_ns.value_or(now);
  out.wall_s = static_cast<double>(std::max<TimestampNs>(0, out.end_ns - r.start_ns)) / 1e9;
  PERFSCOPE_ASSIGN_OR_RETURN(auto processes, run_gpu_processes(sources, r, out.end_ns));
  out.gpu_processes = processes;
  return out;
}

Result<RunComparison> compare_runs(const Sources& sources, const std::string& name_a, const std::string& name_b,
                                   const an::RunCompareOptions& options, TimestampNs now) {
  RunFigures figures[2];
  an::KernelDurations durations[2];
  for (int i = 0; i < 2; ++i) {
    const char* side = i == 0 ? "a" : "b";
    const std::string& name = i == 0 ? name_a : name_b;
    if (name.empty()) return Status::invalid_argument(std::string("'") + side + "' is required: the name of a run", side);
    PERFSCOPE_ASSIGN_OR_RETURN(auto found, sources.events->run(name));
    if (!found) return Status::not_found(no_run_message(name), side);
    PERFSCOPE_ASSIGN_OR_RETURN(auto f, run_figures(sources, *found, now, &durations[i]));
    figures[i] = std::move(f);
  }
  RunComparison out;
  const RunFigures& a = figures[0];
  const RunFigures& b = figures[1];
  out.wall_s = compared(a.wall_s, b.wall_s);
  out.gpu_busy_ms = compared(a.gpu_busy_ms, b.gpu_busy_ms);
  out.kernel_count = compared(static_cast<double>(a.kernel_count), static_cast<double>(b.kernel_count));
  out.kernel_ms = compared(a.kernel_ms, b.kernel_ms);
  out.launch_efficiency = compared(a.launch_efficiency, b.launch_efficiency);
  out.kernels = an::compare_kernels(durations[0], durations[1], options);
  out.verdict = an::overall_verdict(out.kernels, {a.kernel_ms, b.kernel_ms, a.wall_s, b.wall_s}, options);
  out.a = std::move(figures[0]);
  out.b = std::move(figures[1]);
  return out;
}

}  // namespace perfscope::service
