#include "server/service/regressions.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/analysis/stats.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {

constexpr std::size_t kMinPointsPerInterval = 3;

// Per-interval p50 and p99 (nearest rank) of (time, value) points; intervals with fewer than
// `min_count` points are left out.
struct IntervalStats {
  std::vector<TimestampNs> start_ns;
  std::vector<double> p50, p99;
};
IntervalStats per_interval(std::vector<std::pair<TimestampNs, double>> points, TimestampNs interval_ns,
                           std::size_t min_count) {
  IntervalStats out;
  std::sort(points.begin(), points.end());
  std::size_t i = 0;
  while (i < points.size()) {
    const TimestampNs bucket = points[i].first / interval_ns * interval_ns;
    std::vector<double> v;
    while (i < points.size() && points[i].first / interval_ns * interval_ns == bucket) v.push_back(points[i++].second);
    if (v.size() < min_count) continue;
    const double qs[] = {50, 99};
    auto p = an::percentiles(v, qs, an::PercentileConvention::kNearestRank);
    out.start_ns.push_back(bucket);
    out.p50.push_back(p[0]);
    out.p99.push_back(p[1]);
  }
  return out;
}

}  // namespace

Result<Regressions> find_regressions(const Sources& sources, const RegressionQuery& query, TimestampNs now) {
  const db::TimeRange range{query.window.from_ns, std::min(query.window.to_ns, now)};
  // (kind, subject) → (time, value) points.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<TimestampNs, double>>> subjects;
  const bool every_subject = query.kernel.empty() && query.model.empty();
  if (every_subject || !query.kernel.empty()) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto trace, sources.events->kernel_trace(range, query.scope));
    for (const auto& k : trace.kernels) {
      const std::string& name = trace.names[k.name];
      if (!query.kernel.empty() && name != query.kernel) continue;
      subjects[{"kernel", name}].emplace_back(k.end_ns, static_cast<double>(k.end_ns - k.start_ns) / 1e6);
    }
  }
  if (every_subject || !query.model.empty()) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto requests, sources.events->inference_events(range, query.scope));
    for (const auto& r : requests) {
      if (!query.model.empty() && r.model != query.model) continue;
      subjects[{"model", r.version.empty() ? r.model : r.model + "@" + r.version}].emplace_back(r.ts_ns, r.latency_ms);
    }
  }
  Regressions out;
  for (auto& [subject, points] : subjects) {
    IntervalStats s = per_interval(std::move(points), query.interval_ns, kMinPointsPerInterval);
    ++out.subjects;
    for (auto [stat, values] : {std::pair{"p50", &s.p50}, std::pair{"p99", &s.p99}}) {
      for (const an::ChangePoint& c : an::find_change_points(*values, query.options)) {
        out.found.push_back({subject.first, subject.second, stat, s.start_ns[c.index], c});
      }
    }
  }
  return out;
}

}  // namespace perfscope::service
