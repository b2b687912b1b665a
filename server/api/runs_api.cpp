// GET /api/v1/runs (newest first) and /api/v1/runs/{name}: what each run reported (command,
// host, processes, start and end, exit status, traced kinds, record and drop counts) and what
// its kernels say (executions, kernel time, GPU busy time as the union of its kernels per
// device, launch efficiency, the devices they ran on). GET /api/v1/runs/compare?a=&b=: run
// against run, kernel by kernel (engine/analysis/run_compare.hpp), with the totals.
#include <cmath>

#include "engine/analysis/run_compare.hpp"
#include "engine/analysis/timeline.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

json Api::sampling_json(const RunEvent& r, const an::TracedWindows& traced) {
  return {{"run", r.name},
          {"window_ms", static_cast<double>(r.trace_window_ns.value_or(0)) / 1e6},
          {"every_ms", static_cast<double>(r.trace_every_ns.value_or(0)) / 1e6},
          {"windows", traced.windows.size()},
          {"traced_ms", static_cast<double>(traced.traced_ns) / 1e6},
          {"sampled_fraction", traced.fraction}};
}

Result<json> Api::run_json(const RunEvent& r, TimestampNs now, an::KernelDurations* durations) const {
  // One pass over the run's executions gives every kernel figure (and, for comparisons, the
  // durations by name).
  auto trace = ctx_.events->kernel_trace({0, INT64_MAX}, db::EventScope{"", r.name});
  if (!trace.ok()) return trace.status();
  double kernel_ms = 0;
  for (const an::TraceKernel& k : trace->kernels) {
    const double ms = static_cast<double>(k.end_ns - k.start_ns) / 1e6;
    kernel_ms += ms;
    if (durations) (*durations)[trace->names[k.name]].push_back(ms);
  }
  std::vector<std::string> devices = r.gpus;
  for (const auto& d : trace->devices) {
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  std::sort(devices.begin(), devices.end());
  // A duty-cycled run: its timeline over the windows traced; counts and times scaled by them.
  auto traced = service::run_windows(*ctx_.history, r, r.start_ns, INT64_MAX, now);
  if (!traced.ok()) return traced.status();
  an::TimelineOptions timeline;
  if (*traced) timeline.windows = (*traced)->windows;
  double busy_ms = 0, span_ms = 0, spans = 0, efficient = 0;
  for (const an::QueueTimeline& q : an::analyze_timeline(*trace, timeline)) {
    if (!q.stream.empty()) continue;
    busy_ms += q.busy_ms;
    span_ms = std::max(span_ms, q.span_ms);
    spans += q.span_ms;
    efficient += q.launch_efficiency * q.span_ms;  // devices weighted by their spans
  }
  const TimestampNs end = r.end_ns.value_or(now);
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json kernels = {{"count", trace->kernels.size()}, {"total_ms", kernel_ms}, {"distinct", trace->names.size()}};
  json sampling = nullptr;
  if (*traced) {
    sampling = sampling_json(r, **traced);
    const double f = (*traced)->fraction;
    // Executions and time over the whole run, had it been traced throughout.
    kernels["estimated_count"] = f > 0 ? json(static_cast<double>(trace->kernels.size()) / f) : json(nullptr);
    kernels["estimated_total_ms"] = f > 0 ? json(kernel_ms / f) : json(nullptr);
  }
  // What NVML saw of the run's processes while it ran, beside what tracing says.
  auto listed = gpu_processes_in(r.start_ns, end);
  if (!listed.ok()) return listed.status();
  std::size_t gpu_processes = 0;
  double peak_memory = 0, gpu_seconds = 0, sm_seconds = 0, energy = 0;
  for (const ListedProcess& l : *listed) {
    if (std::find(r.pids.begin(), r.pids.end(), l.record.identity.pid) == r.pids.end()) continue;
    ++gpu_processes;
    peak_memory = std::max(peak_memory, l.record.peak_memory_bytes);
    gpu_seconds += l.record.gpu_seconds;
    sm_seconds += l.record.sm_observed_seconds;
    energy += l.record.energy_joules;
  }
  // Time and energy are attributed by SM share: with none reported for any process they are
  // unknown, not zero.
  const bool share_known = sm_seconds > 0;
  json nvml = gpu_processes == 0 ? json(nullptr)
                                 : json{{"processes", gpu_processes}, {"peak_memory_bytes", peak_memory},
                                        {"gpu_seconds", share_known ? json(gpu_seconds) : json(nullptr)},
                                        {"mean_sm_ratio", share_known ? json(gpu_seconds / sm_seconds) : json(nullptr)},
                                        {"energy_joules", share_known ? json(energy) : json(nullptr)}};
  return json{{"name", r.name},
              {"status", run_status(r)},
              {"command", r.command},
              {"host", r.host},
              {"pids", r.pids},
              {"start_ns", r.start_ns},
              {"end_ns", opt(r.end_ns)},
              {"wall_s", static_cast<double>(std::max<TimestampNs>(0, end - r.start_ns)) / 1e9},
              {"exit_status", opt(r.exit_status)},
              {"kinds", r.kinds},
              {"trace_window_ns", opt(r.trace_window_ns)},
              {"trace_every_ns", opt(r.trace_every_ns)},
              {"records", opt(r.records)},
              {"dropped", opt(r.dropped)},
              {"gpus", devices},
              {"tags", labels_to_json(r.tags)},
              {"sampling", sampling},
              {"kernels", kernels},
              {"gpu_busy_ms", busy_ms},
              {"kernel_span_ms", span_ms},
              {"launch_efficiency", spans > 0 ? json(efficient / spans) : json(nullptr)},
              {"gpu_processes", nvml}};
}

HttpResponse Api::runs(const HttpRequest& request) const {
  auto limit = size_param(request, "limit", 50, 1, 1000);
  if (!limit.ok()) return status_response(limit.status());
  auto list = ctx_.events->runs(*limit);
  if (!list.ok()) return status_response(list.status());
  const TimestampNs now = now_ns();
  json out = json::array();
  for (const RunEvent& r : *list) {
    auto j = run_json(r, now);
    if (!j.ok()) return status_response(j.status());
    out.push_back(std::move(*j));
  }
  return json_response(200, {{"runs", out}});
}

namespace {

// A fraction in (0, 1) given as a query parameter, or `fallback`.
Result<double> fraction_param(const HttpRequest& request, const char* name, double fallback) {
  const std::string v = param(request, name);
  if (v.empty()) return fallback;
  auto d = parse_number(v, name);
  if (!d.ok() || !(*d > 0) || *d >= 1) {
    return Status::invalid_argument(std::string("'") + name + "' must be a number between 0 and 1", name);
  }
  return *d;
}

}  // namespace

HttpResponse Api::compare_runs(const HttpRequest& request) const {
  auto j = compare_runs_json(param(request, "a"), param(request, "b"), request);
  if (!j.ok()) return status_response(j.status());
  return json_response(200, *j);
}

Result<json> Api::compare_runs_json(const std::string& name_a, const std::string& name_b,
                                    const HttpRequest& request) const {
  an::RunCompareOptions options;
  auto alpha = fraction_param(request, "alpha", options.alpha);
  if (!alpha.ok()) return alpha.status();
  auto min_effect = fraction_param(request, "min_effect", options.min_effect);
  if (!min_effect.ok()) return min_effect.status();
  options.alpha = *alpha;
  options.min_effect = *min_effect;
  const TimestampNs now = now_ns();
  json sides = json::object();
  an::KernelDurations durations[2];
  for (int i = 0; i < 2; ++i) {
    const char* side = i == 0 ? "a" : "b";
    const std::string& name = i == 0 ? name_a : name_b;
    if (name.empty()) return Status::invalid_argument(std::string("'") + side + "' is required: the name of a run", side);
    auto found = ctx_.events->run(name);
    if (!found.ok()) return found.status();
    if (!*found) return Status::not_found(no_run_message(name), side);
    auto j = run_json(**found, now, &durations[i]);
    if (!j.ok()) return j.status();
    sides[side] = std::move(*j);
  }
  const std::vector<an::KernelDiff> diffs = an::compare_kernels(durations[0], durations[1], options);
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json kernels = json::array();
  for (const an::KernelDiff& d : diffs) {
    kernels.push_back({{"name", d.name}, {"count_a", d.count_a}, {"count_b", d.count_b},
                       {"total_a_ms", d.total_a_ms}, {"total_b_ms", d.total_b_ms}, {"moved_ms", d.moved_ms()},
                       {"mean_a_ms", opt(d.mean_a_ms)}, {"mean_b_ms", opt(d.mean_b_ms)},
                       {"mean_change", opt(d.mean_change)}, {"p_value", opt(d.p_value)},
                       {"p_adjusted", opt(d.p_adjusted)}, {"verdict", d.verdict}});
  }
  // Totals side by side, with b's change against a (null where a has none).
  auto total = [&](const json& va, const json& vb) {
    json change = nullptr;
    if (va.is_number() && vb.is_number() && va.get<double>() != 0) change = vb.get<double>() / va.get<double>() - 1;
    return json{{"a", va}, {"b", vb}, {"change", change}};
  };
  const json& a = sides["a"];
  const json& b = sides["b"];
  json totals = {{"wall_s", total(a["wall_s"], b["wall_s"])},
                 {"gpu_busy_ms", total(a["gpu_busy_ms"], b["gpu_busy_ms"])},
                 {"kernel_count", total(a["kernels"]["count"], b["kernels"]["count"])},
                 {"kernel_ms", total(a["kernels"]["total_ms"], b["kernels"]["total_ms"])},
                 {"launch_efficiency", total(a["launch_efficiency"], b["launch_efficiency"])}};
  an::RunTotals run_totals;
  run_totals.kernel_ms_a = a["kernels"]["total_ms"].is_number() ? a["kernels"]["total_ms"].get<double>() : 0;
  run_totals.kernel_ms_b = b["kernels"]["total_ms"].is_number() ? b["kernels"]["total_ms"].get<double>() : 0;
  if (a["wall_s"].is_number()) run_totals.wall_s_a = a["wall_s"].get<double>();
  if (b["wall_s"].is_number()) run_totals.wall_s_b = b["wall_s"].get<double>();
  const an::RunVerdict verdict = an::overall_verdict(diffs, run_totals, options);
  return json({{"a", a}, {"b", b}, {"totals", totals}, {"kernels", kernels},
                             {"verdict", verdict.verdict}, {"verdict_reason", verdict.reason},
                             {"min_run_share", options.min_run_share},
                             {"min_wall_change", options.min_wall_change}, {"min_wall_delta_s", options.min_wall_delta_s},
                             {"alpha", options.alpha},
                             {"min_effect", options.min_effect},
                             {"method", "per kernel name: Mann-Whitney U of the two runs' execution durations, "
                                        "p-values of all kernels in both runs adjusted together (Benjamini-Hochberg); "
                                        "slower/faster when the adjusted p < alpha and the mean moved by at least "
                                        "min_effect; rows ordered by the kernel time they moved"}});
}

HttpResponse Api::run(const std::string& name) const {
  auto found = ctx_.events->run(name);
  if (!found.ok()) return status_response(found.status());
  if (!*found) return error_response(404, "not_found", no_run_message(name), "name");
  auto j = run_json(**found, now_ns());
  if (!j.ok()) return status_response(j.status());
  return json_response(200, *j);
}

}  // namespace perfscope::server
