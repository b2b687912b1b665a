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
#include "server/service/runs.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

json QueryEndpoints::sampling_json(const RunEvent& r, const an::TracedWindows& traced) {
  return {{"run", r.name},
          {"window_ms", static_cast<double>(r.trace_window_ns.value_or(0)) / 1e6},
          {"every_ms", static_cast<double>(r.trace_every_ns.value_or(0)) / 1e6},
          {"windows", traced.windows.size()},
          {"traced_ms", static_cast<double>(traced.traced_ns) / 1e6},
          {"sampled_fraction", traced.fraction}};
}

json QueryEndpoints::run_json(const service::RunFigures& f) {
  const RunEvent& r = f.run;
  auto opt_any = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json kernels = {{"count", f.kernel_count}, {"total_ms", f.kernel_ms}, {"distinct", f.distinct_kernels}};
  json sampling = nullptr;
  if (f.traced) {
    sampling = sampling_json(r, *f.traced);
    // Executions and time over the whole run, had it been traced throughout.
    kernels["estimated_count"] = optional_json(f.estimated_kernel_count);
    kernels["estimated_total_ms"] = optional_json(f.estimated_kernel_ms);
  }
  json nvml = nullptr;
  if (const auto& p = f.gpu_processes) {
    nvml = {{"processes", p->processes}, {"peak_memory_bytes", p->peak_memory_bytes}, {"gpu_seconds", optional_json(p->gpu_seconds)},
            {"mean_sm_ratio", optional_json(p->mean_sm_ratio)}, {"energy_joules", optional_json(p->energy_joules)}};
  }
  return json{{"name", r.name},
              {"status", run_status(r)},
              {"command", r.command},
              {"host", r.host},
              {"pids", r.pids},
              {"start_ns", r.start_ns},
              {"end_ns", opt_any(r.end_ns)},
              {"wall_s", f.wall_s},
              {"exit_status", opt_any(r.exit_status)},
              {"kinds", r.kinds},
              {"trace_window_ns", opt_any(r.trace_window_ns)},
              {"trace_every_ns", opt_any(r.trace_every_ns)},
              {"records", opt_any(r.records)},
              {"dropped", opt_any(r.dropped)},
              {"gpus", f.devices},
              {"tags", labels_to_json(r.tags)},
              {"sampling", sampling},
              {"kernels", kernels},
              {"gpu_busy_ms", f.gpu_busy_ms},
              {"kernel_span_ms", f.kernel_span_ms},
              {"launch_efficiency", optional_json(f.launch_efficiency)},
              {"gpu_processes", nvml}};
}

HttpResponse QueryEndpoints::runs(const HttpRequest& request) const {
  auto limit = size_param(request, "limit", 50, 1, 1000);
  if (!limit.ok()) return status_response(limit.status());
  auto list = sources_.events->runs(*limit);
  if (!list.ok()) return status_response(list.status());
  const TimestampNs now = now_ns();
  json out = json::array();
  for (const RunEvent& r : *list) {
    auto f = service::run_figures(sources_, r, now);
    if (!f.ok()) return status_response(f.status());
    out.push_back(run_json(*f));
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

HttpResponse QueryEndpoints::compare_runs(const HttpRequest& request) const {
  auto j = compare_runs_json(param(request, "a"), param(request, "b"), request);
  if (!j.ok()) return status_response(j.status());
  return json_response(200, *j);
}

Result<json> QueryEndpoints::compare_runs_json(const std::string& name_a, const std::string& name_b,
                                    const HttpRequest& request) const {
  an::RunCompareOptions options;
  auto alpha = fraction_param(request, "alpha", options.alpha);
  if (!alpha.ok()) return alpha.status();
  auto min_effect = fraction_param(request, "min_effect", options.min_effect);
  if (!min_effect.ok()) return min_effect.status();
  options.alpha = *alpha;
  options.min_effect = *min_effect;
  auto c = service::compare_runs(sources_, name_a, name_b, options, now_ns());
  if (!c.ok()) return c.status();
  json kernels = json::array();
  for (const an::KernelDiff& d : c->kernels) {
    kernels.push_back({{"name", d.name}, {"count_a", d.count_a}, {"count_b", d.count_b},
                       {"total_a_ms", d.total_a_ms}, {"total_b_ms", d.total_b_ms}, {"moved_ms", d.moved_ms()},
                       {"mean_a_ms", optional_json(d.mean_a_ms)}, {"mean_b_ms", optional_json(d.mean_b_ms)},
                       {"mean_change", optional_json(d.mean_change)}, {"p_value", optional_json(d.p_value)},
                       {"p_adjusted", optional_json(d.p_adjusted)}, {"verdict", d.verdict}});
  }
  // Totals side by side, with b's change against a (null where a has none).
  auto total = [](const service::ComparedTotal& t) { return json{{"a", optional_json(t.a)}, {"b", optional_json(t.b)}, {"change", optional_json(t.change)}}; };
  json kernel_count = total(c->kernel_count);
  kernel_count["a"] = c->a.kernel_count;  // counts stay integers
  kernel_count["b"] = c->b.kernel_count;
  json totals = {{"wall_s", total(c->wall_s)}, {"gpu_busy_ms", total(c->gpu_busy_ms)}, {"kernel_count", kernel_count},
                 {"kernel_ms", total(c->kernel_ms)}, {"launch_efficiency", total(c->launch_efficiency)}};
  const json a = run_json(c->a), b = run_json(c->b);
  const an::RunVerdict& verdict = c->verdict;
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

HttpResponse QueryEndpoints::run(const std::string& name) const {
  auto found = sources_.events->run(name);
  if (!found.ok()) return status_response(found.status());
  if (!*found) return error_response(404, "not_found", no_run_message(name), "name");
  auto f = service::run_figures(sources_, **found, now_ns());
  if (!f.ok()) return status_response(f.status());
  return json_response(200, run_json(*f));
}

}  // namespace perfscope::server
