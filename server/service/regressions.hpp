// Regressions and improvements over a window (GET /api/v1/regressions): every kernel's
// durations and every model's latency cut into intervals, each interval's p50 and p99 (nearest
// rank), and the change points of those series (E-divisive means, engine/analysis/
// change_points.hpp). One kernel or one model alone when asked for (a drill-down's chart); the
// other kind is then not read at all.
//
// A function over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "db/event_scope.hpp"
#include "engine/analysis/change_points.hpp"
#include "server/service/query_time.hpp"
#include "server/service/sources.hpp"

namespace perfscope::service {

struct RegressionQuery {
  db::EventScope scope;
  server::TimeWindow window;
  TimestampNs interval_ns = 10'000'000'000;
  analysis::ChangePointOptions options;
  std::string kernel, model;  // non-empty: that subject alone
};

struct Regression {
  std::string kind;             // "kernel" or "model"
  std::string subject;          // a kernel's name, or model@version
  const char* statistic = "p50";  // "p50" or "p99"
  TimestampNs at_ns = 0;          // the start of the first interval after the change
  analysis::ChangePoint change;
  // Later intervals are slower: a regression; else faster: an improvement.
  bool slower() const { return change.change > 0; }
};

struct Regressions {
  std::size_t subjects = 0;  // subjects examined
  std::vector<Regression> found;
};

// Intervals with fewer than three points are left out of a subject's series.
Result<Regressions> find_regressions(const Sources& sources, const RegressionQuery& query, TimestampNs now);

}  // namespace perfscope::service
