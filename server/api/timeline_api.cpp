// GET /api/v1/timeline: the kernel timeline of a window or a run at the level of detail the
// dashboard can draw (engine/analysis/timeline_view.hpp) — per device and stream, raw
// executions with their launch calls and the gap before each when the window holds at most
// `max_raw`, else `buckets` equal time buckets of busy, idle and launch-call time; and, where
// the scope holds operators (an imported trace's CPU ops), their track (`operators`).
//
// Times are nanoseconds from `origin_ns` (the window's start, also given as a decimal string:
// epoch nanoseconds do not fit a JavaScript number), so every one is exact in a double.
#include <algorithm>
#include <string>

#include "engine/analysis/timeline_view.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {

constexpr std::size_t kDefaultBuckets = 1000;
constexpr std::size_t kMaxBuckets = 20'000;
constexpr std::size_t kDefaultMaxRaw = 20'000;
constexpr std::size_t kMaxMaxRaw = 500'000;

const char* gap_name(analysis::GapCause c) {
  switch (c) {
    case analysis::GapCause::kHostWait: return "host_wait";
    case analysis::GapCause::kKernelWait: return "kernel_wait";
    case analysis::GapCause::kOther: return "other";
    case analysis::GapCause::kNone: break;
  }
  return "none";
}

json relative(TimestampNs t, TimestampNs origin) {
  return t == analysis::kNoLaunch ? json(nullptr) : json(t - origin);
}

json track_json(const analysis::TimelineTrack& t, const analysis::KernelTrace& trace, TimestampNs origin, bool raw) {
  const std::string& stream = trace.streams[t.stream];
  json out = {{"device", trace.devices[t.device]},
              {"stream", stream.empty() ? "default" : stream},
              {"count", t.count},
              {"busy_ns", t.busy_ns},
              {"host_wait_ns", t.host_wait_ns},
              {"other_idle_ns", t.other_idle_ns}};
  if (raw) {
    json start = json::array(), end = json::array(), name = json::array(), launch_start = json::array(),
         launch_end = json::array(), gap_ns = json::array(), gap = json::array();
    for (const analysis::TimelineEvent& e : t.events) {
      start.push_back(e.start_ns - origin);
      end.push_back(e.end_ns - origin);
      name.push_back(e.name);
      launch_start.push_back(relative(e.launch_start_ns, origin));
      launch_end.push_back(relative(e.launch_end_ns, origin));
      gap_ns.push_back(e.gap_ns);
      gap.push_back(static_cast<int>(e.gap));
    }
    out["start"] = std::move(start);
    out["end"] = std::move(end);
    out["name"] = std::move(name);
    out["launch_start"] = std::move(launch_start);
    out["launch_end"] = std::move(launch_end);
    out["gap_ns"] = std::move(gap_ns);
    out["gap"] = std::move(gap);
    return out;
  }
  const analysis::TimelineBuckets& b = t.buckets;
  out["busy"] = b.busy_ns;
  out["count"] = b.count;
  out["top"] = b.top;
  out["host_wait"] = b.host_wait_ns;
  out["other_idle"] = b.other_idle_ns;
  out["launch"] = b.launch_ns;
  return out;
}

// The operator track: raw slices relative to the origin, or busy time and starts per bucket.
json operators_json(const analysis::OperatorTrack& t, TimestampNs origin) {
  json out = {{"mode", t.raw ? "raw" : "aggregate"}, {"count", t.count}, {"bucket_ns", t.bucket_ns},
              {"names", t.names}, {"providers", t.providers}};
  if (!t.raw) {
    out["busy"] = t.busy_ns;
    out["started"] = t.started;
    return out;
  }
  json start = json::array(), end = json::array(), name = json::array(), provider = json::array();
  for (const analysis::OperatorSlice& s : t.slices) {
    start.push_back(s.start_ns - origin);
    end.push_back(s.end_ns - origin);
    name.push_back(s.name);
    provider.push_back(s.provider);
  }
  out["start"] = std::move(start);
  out["end"] = std::move(end);
  out["name"] = std::move(name);
  out["provider"] = std::move(provider);
  return out;
}

}  // namespace

HttpResponse Api::timeline(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "5m", now);
  if (!w.ok()) return status_response(w.status());
  auto buckets = size_param(request, "buckets", kDefaultBuckets, 1, kMaxBuckets);
  if (!buckets.ok()) return status_response(buckets.status());
  auto max_raw = size_param(request, "max_raw", kDefaultMaxRaw, 0, kMaxMaxRaw);
  if (!max_raw.ok()) return status_response(max_raw.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  const db::TimeRange range{w->all ? 0 : w->from_ns, w->all ? now : w->to_ns};
  if (range.to_ns <= range.from_ns) {
    return error_response(400, "invalid_argument", "the window is empty: to must be after from", "to");
  }
  auto trace = ctx_.events->kernel_trace(range, *scope);
  if (!trace.ok()) return status_response(trace.status());
  // The host's operators beside the kernels (an imported trace's CPU ops), of the same run.
  db::OperatorSelector ops_of{.op = {}, .model = {}, .provider = {}, .tags = scope->wanted_tags()};
  auto operators = ctx_.events->operator_executions(ops_of, range);
  if (!operators.ok()) return status_response(operators.status());

  // A whole run (or everything): the window is its executions' own span.
  analysis::TimelineViewOptions options{range.from_ns, range.to_ns, *buckets, *max_raw};
  if (w->all && (!trace->kernels.empty() || !operators->empty())) {
    options.from_ns = INT64_MAX;
    options.to_ns = INT64_MIN;
    for (const analysis::TraceKernel& k : trace->kernels) {
      options.from_ns = std::min(options.from_ns, k.start_ns);
      options.to_ns = std::max(options.to_ns, k.end_ns);
    }
    for (const analysis::OperatorExecution& op : *operators) {
      options.from_ns = std::min(options.from_ns, analysis::operator_start_ns(op));
      options.to_ns = std::max(options.to_ns, op.ts_ns);
    }
    options.to_ns = std::max(options.to_ns, options.from_ns + 1);
  }
  const analysis::TimelineView view = analysis::timeline_view(*trace, options);
  const TimestampNs origin = options.from_ns;

  json tracks = json::array();
  for (const analysis::TimelineTrack& t : view.tracks) tracks.push_back(track_json(t, *trace, origin, view.raw));
  json causes = json::array();
  for (auto c : {analysis::GapCause::kNone, analysis::GapCause::kHostWait, analysis::GapCause::kKernelWait,
                 analysis::GapCause::kOther}) {
    causes.push_back(gap_name(c));
  }
  json body = {{"window", window_json(*w)},
               {"origin_ns", origin},
               {"origin", std::to_string(origin)},
               {"span_ns", options.to_ns - options.from_ns},
               {"mode", view.raw ? "raw" : "aggregate"},
               {"events", view.events},
               {"max_raw", *max_raw},
               {"bucket_ns", view.bucket_ns},
               {"buckets", view.raw ? 0 : *buckets},
               {"names", trace->names},
               {"gap_causes", std::move(causes)},
               {"tracks", std::move(tracks)}};
  if (!operators->empty()) body["operators"] = operators_json(analysis::operator_track(*operators, options), origin);
  if (!scope->run.empty()) body["run"] = scope->run;
  return json_response(200, body);
}

}  // namespace perfscope::server
