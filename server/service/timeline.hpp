// The kernel timeline of a window or a run at the level of detail a view can draw
// (engine/analysis/timeline_view.hpp): raw executions with their launch calls and gaps, or
// equal time buckets; the host's operators beside them (an imported trace's CPU ops); and, for
// a multi-GPU job drawn raw, its collectives matched across ranks.
//
// A function over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/event_scope.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/timeline_view.hpp"
#include "server/service/collectives.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct TimelineQuery {
  db::EventScope scope;
  db::TimeRange range;
  bool whole = false;  // a whole run or everything: the view spans the executions themselves
  std::size_t buckets = 1000;
  std::size_t max_raw = 20'000;
};

// A device's rank in the window's multi-GPU jobs.
struct DeviceRank {
  std::string device, run, rank;
};

// One collective instance started in the view, as the timeline links its members.
struct CollectiveLink {
  std::string op;
  double bytes = 0;  // 0: unknown
  std::string last_rank;  // the rank that arrived last
  double skew_ms = 0;
  double busbw_gb_per_second = 0;  // 0: unknown
  std::vector<std::pair<std::string, TimestampNs>> arrivals;  // (device, start) in the order they arrived
};

struct TimelineCollectives {
  std::vector<DeviceRank> ranks;  // a device two jobs' ranks ran on is named by neither
  std::vector<CollectiveLink> links;  // at most kMaxCollectiveLinks
};
inline constexpr std::size_t kMaxCollectiveLinks = 5'000;

struct TimelineAnswer {
  analysis::KernelTrace trace;
  analysis::TimelineViewOptions options;  // the span drawn: from_ns is the view's origin
  analysis::TimelineView view;
  std::optional<analysis::OperatorTrack> operators;  // where the scope holds operators
  // A raw view of NCCL kernels: the jobs' ranks and collectives (none where there are no jobs
  // or they could not be read: the timeline is drawn without them).
  std::optional<TimelineCollectives> collectives;
};

Result<TimelineAnswer> timeline(const Sources& sources, const TimelineQuery& query);

}  // namespace perfscope::service
