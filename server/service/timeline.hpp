// The kernel timeline of a window or a run at the level of detail a view can draw
// (engine/analysis/timeline_view.hpp): raw executions with their launch calls and gaps, or
// equal time buckets; the host's operators beside them (an imported trace's CPU ops); and, for
// a multi-GPU job drawn raw, its collectives matched across ranks.
//
// A function over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <optional>
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

struct TimelineAnswer {
  analysis::KernelTrace trace;
  analysis::TimelineViewOptions options;  // the span drawn: from_ns is the view's origin
  analysis::TimelineView view;
  std::optional<analysis::OperatorTrack> operators;  // where the scope holds operators
  // A raw view of NCCL kernels: the jobs' collectives, every instance listed (none where they
  // could not be read: the timeline is drawn without them).
  std::vector<JobCollectives> collectives;
};

Result<TimelineAnswer> timeline(const Sources& sources, const TimelineQuery& query);

}  // namespace perfscope::service
