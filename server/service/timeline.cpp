#include "server/service/timeline.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace perfscope::service {

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
    if (auto jobs = read_collectives(events, range, query.scope, all_instances); jobs.ok()) out.collectives = std::move(*jobs);
  }
  return out;
}

}  // namespace perfscope::service
