#include "server/service/timeline.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace perfscope::service {

namespace {

// The ranks of the jobs by device, and their collectives' instances started in [from, to).
TimelineCollectives timeline_collectives(const std::vector<JobCollectives>& jobs, TimestampNs from, TimestampNs to) {
  TimelineCollectives out;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_device;  // device → (run, rank)
  for (const JobCollectives& job : jobs) {
    const analysis::CollectiveAnalysis& a = job.analysis;
    for (const auto& r : a.ranks) by_device[r.device].emplace_back(job.run, r.rank);
    for (const analysis::CollectiveInstance& inst : a.instances) {
      if (out.links.size() >= kMaxCollectiveLinks) break;
      const auto [lo, hi] = std::minmax_element(inst.start_ns.begin(), inst.start_ns.end());
      if (*lo < from || *hi >= to) continue;
      CollectiveLink link{inst.op, inst.bytes, a.ranks[inst.last_rank].rank, inst.skew_ms, inst.busbw_gb_per_second, {}};
      for (std::size_t m : arrival_order(inst)) link.arrivals.emplace_back(a.ranks[inst.ranks[m]].device, inst.start_ns[m]);
      out.links.push_back(std::move(link));
    }
  }
  for (const auto& [device, held] : by_device) {
    if (held.size() == 1) out.ranks.push_back({device, held[0].first, held[0].second});
  }
  return out;
}

}  // namespace

Result<TimelineAnswer> timeline(const Sources& sources, const TimelineQuery& query) {
  const db::EventReader& events = *sources.events;
  const db::TimeRange& range = query.range;
  TimelineAnswer out;
  auto trace = events.kernel_trace(range, query.scope);
  if (!trace.ok()) return trace.status();
  out.trace = std::move(*trace);
  // The host's operators beside the kernels (an imported trace's CPU ops), of the same run.
  db::OperatorSelector ops_of{.op = {}, .model = {}, .provider = {}, .tags = query.scope.wanted_tags()};
  auto operators = events.operator_executions(ops_of, range);
  if (!operators.ok()) return operators.status();
  out.options = {range.from_ns, range.to_ns, query.buckets, query.max_raw};
  analysis::TimelineViewOptions& options = out.options;
  if (query.whole && (!out.trace.kernels.empty() || !operators->empty())) {
    options.from_ns = INT64_MAX;
    options.to_ns = INT64_MIN;
    for (const analysis::TraceKernel& k : out.trace.kernels) {
      options.from_ns = std::min(options.from_ns, k.start_ns);
      options.to_ns = std::max(options.to_ns, k.end_ns);
    }
    for (const analysis::OperatorExecution& op : *operators) {
      options.from_ns = std::min(options.from_ns, analysis::operator_start_ns(op));
      options.to_ns = std::max(options.to_ns, op.ts_ns);
    }
    options.to_ns = std::max(options.to_ns, options.from_ns + 1);
  }
  out.view = analysis::timeline_view(out.trace, options);
  if (!operators->empty()) out.operators = analysis::operator_track(*operators, options);
  const bool nccl = std::any_of(out.trace.names.begin(), out.trace.names.end(),
                                [](const std::string& n) { return n.starts_with("nccl"); });
  if (out.view.raw && nccl) {
    analysis::CollectiveOptions all_instances;
    all_instances.max_instances_listed = SIZE_MAX;
    auto jobs = read_collectives(events, range, query.scope, all_instances);
    if (jobs.ok() && !jobs->empty()) out.collectives = timeline_collectives(*jobs, options.from_ns, options.to_ns);
  }
  return out;
}

}  // namespace perfscope::service
