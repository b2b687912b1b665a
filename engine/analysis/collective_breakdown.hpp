// The time-breakdown half of the collective analysis (collectives.hpp): spans and their
// unions, steps from the matched instances, and each rank's compute, communication (overlapped
// and exposed) and idle time over the job's window and per step. Private to engine/analysis.
//
// Pure functions over values.
#pragma once

#include <vector>

#include "engine/analysis/collectives.hpp"

namespace perfscope::analysis::collective_detail {

using Span = RankCollectives::Span;

double ms(TimestampNs ns);
// The nearest-rank percentile q of v; 0 for none.
double nearest_rank(std::vector<double> v, double q);
// Disjoint spans in start order: the union of `spans`.
std::vector<Span> merged(std::vector<Span> spans);
// How much of [from, to) disjoint spans cover.
TimestampNs length_within(const std::vector<Span>& spans, TimestampNs from, TimestampNs to);

// Each rank's compute and communication as disjoint spans.
struct RankSpans {
  std::vector<Span> compute, communication;
};
std::vector<RankSpans> spans_of(const std::vector<RankCollectives>& ranks);

// Each rank's breakdown over the window (the first kernel of any rank to the last one's end)
// and, where steps are found, per step, into `out.ranks` (sized as `spans`), with the steps'
// count and period. `first`: each instance's first arrival.
void add_breakdowns(const std::vector<RankSpans>& spans, const std::vector<CollectiveInstance>& instances,
                    const std::vector<TimestampNs>& first, CollectiveAnalysis& out);

}  // namespace perfscope::analysis::collective_detail
