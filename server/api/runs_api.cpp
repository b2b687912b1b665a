// GET /api/v1/runs (newest first) and /api/v1/runs/{name}: what each run reported (command,
// host, processes, start and end, exit status, traced kinds, record and drop counts) and what
// its kernels say (executions, kernel time, GPU busy time as the union of its kernels per
// device, the devices they ran on).
#include "engine/analysis/timeline.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

Result<json> Api::run_json(const RunEvent& r, TimestampNs now) const {
  const db::EventScope scope{"", r.name};
  auto kernels = ctx_.events->kernel_summaries({0, INT64_MAX}, scope);
  if (!kernels.ok()) return kernels.status();
  auto trace = ctx_.events->kernel_trace({0, INT64_MAX}, scope);
  if (!trace.ok()) return trace.status();
  std::uint64_t count = 0;
  double kernel_ms = 0;
  std::vector<std::string> devices = r.gpus;
  for (const auto& k : *kernels) {
    count += k.count;
    kernel_ms += k.total_ms;
    for (const auto& d : k.devices) {
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
  }
  std::sort(devices.begin(), devices.end());
  double busy_ms = 0, span_ms = 0;
  for (const an::QueueTimeline& q : an::analyze_timeline(*trace)) {
    if (!q.stream.empty()) continue;
    busy_ms += q.busy_ms;
    span_ms = std::max(span_ms, q.span_ms);
  }
  const TimestampNs end = r.end_ns.value_or(now);
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
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
              {"records", opt(r.records)},
              {"dropped", opt(r.dropped)},
              {"gpus", devices},
              {"tags", labels_to_json(r.tags)},
              {"kernels", {{"count", count}, {"total_ms", kernel_ms}, {"distinct", kernels->size()}}},
              {"gpu_busy_ms", busy_ms},
              {"kernel_span_ms", span_ms}};
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

HttpResponse Api::run(const std::string& name) const {
  auto found = ctx_.events->run(name);
  if (!found.ok()) return status_response(found.status());
  if (!*found) return error_response(404, "not_found", "no run named '" + name + "'", "name");
  auto j = run_json(**found, now_ns());
  if (!j.ok()) return status_response(j.status());
  return json_response(200, *j);
}

}  // namespace perfscope::server
