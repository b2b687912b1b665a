// GET /api/v1/timeline: the kernel timeline of a window or a run at the level of detail the
// dashboard can draw (engine/analysis/timeline_view.hpp) — per device and stream, raw
// executions with their launch calls and the gap before each when the window holds at most
// `max_raw`, else `buckets` equal time buckets of busy, idle and launch-call time; and, where
// the scope holds operators (an imported trace's CPU ops), their track (`operators`).
//
// A multi-GPU job in a raw window also gives each device's rank (`ranks`) and each collective
// instance whose members all started in the window (`collectives`): its ranks' kernels in the
// order they arrived, which the dashboard links across the ranks' tracks, as Perfetto draws flows.
//
// Times are nanoseconds from `origin_ns` (the window's start, also given as a decimal string:
// epoch nanoseconds do not fit a JavaScript number), so every one is exact in a double.
#include <string>

#include "engine/analysis/timeline_view.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/service/timeline.hpp"

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

// The timeline's rank groups and links.
void add_collectives(const service::TimelineCollectives& c, TimestampNs origin, json& body) {
  json links = json::array();
  for (const service::CollectiveLink& l : c.links) {
    json at = json::array();
    for (const auto& [device, start_ns] : l.arrivals) at.push_back({device, start_ns - origin});
    links.push_back({{"op", l.op}, {"bytes", l.bytes > 0 ? json(l.bytes) : json(nullptr)}, {"last_rank", l.last_rank},
                     {"skew_ms", l.skew_ms},
                     {"busbw_gb_per_second", l.busbw_gb_per_second > 0 ? json(l.busbw_gb_per_second) : json(nullptr)},
                     {"at", std::move(at)}});
  }
  json ranks = json::array();
  for (const service::DeviceRank& r : c.ranks) ranks.push_back({{"device", r.device}, {"run", r.run}, {"rank", r.rank}});
  body["ranks"] = std::move(ranks);
  body["collectives"] = std::move(links);
}

}  // namespace

HttpResponse QueryEndpoints::timeline(const HttpRequest& request) const {
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
  auto answer = service::timeline(sources_, {*scope, range, w->all, *buckets, *max_raw});
  if (!answer.ok()) return status_response(answer.status());
  const analysis::KernelTrace* trace = &answer->trace;
  const analysis::TimelineViewOptions& options = answer->options;
  const analysis::TimelineView& view = answer->view;
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
  if (answer->operators) body["operators"] = operators_json(*answer->operators, origin);
  if (answer->collectives) add_collectives(*answer->collectives, origin, body);
  if (!scope->run.empty()) body["run"] = scope->run;
  return json_response(200, body);
}

}  // namespace perfscope::server
