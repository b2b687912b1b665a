#include "engine/analysis/collective_breakdown.hpp"

#include <algorithm>

#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace collective_detail {

double ms(TimestampNs ns) { return static_cast<double>(ns) / 1e6; }

double nearest_rank(std::vector<double> v, double q) {
  return v.empty() ? 0.0 : percentile(v, q, PercentileConvention::kNearestRank);
}

// Disjoint spans in start order: the union of `spans`.
std::vector<Span> merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (s.end_ns <= s.start_ns) continue;
    if (!out.empty() && s.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, s.end_ns);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// The first of disjoint spans that ends after `from`.
std::vector<Span>::const_iterator first_after(const std::vector<Span>& spans, TimestampNs from) {
  return std::partition_point(spans.begin(), spans.end(), [&](const Span& s) { return s.end_ns <= from; });
}

// How much of [from, to) disjoint spans cover.
TimestampNs length_within(const std::vector<Span>& spans, TimestampNs from, TimestampNs to) {
  TimestampNs total = 0;
  for (auto it = first_after(spans, from); it != spans.end() && it->start_ns < to; ++it) {
    total += std::min(it->end_ns, to) - std::max(it->start_ns, from);
  }
  return total;
}

// How much of [from, to) two lists of disjoint spans both cover.
TimestampNs overlap_within(const std::vector<Span>& a, const std::vector<Span>& b, TimestampNs from, TimestampNs to) {
  TimestampNs total = 0;
  auto i = first_after(a, from), j = first_after(b, from);
  while (i != a.end() && j != b.end() && i->start_ns < to && j->start_ns < to) {
    const TimestampNs lo = std::max({i->start_ns, j->start_ns, from});
    const TimestampNs hi = std::min({i->end_ns, j->end_ns, to});
    if (hi > lo) total += hi - lo;
    if (i->end_ns < j->end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

void set_shares(TimeBreakdown& b) {
  b.overlap_ratio = b.communication_ms > 0 ? b.overlapped_ms / b.communication_ms : 0;
  b.exposed_share = b.window_ms > 0 ? b.exposed_ms / b.window_ms : 0;
}

TimeBreakdown breakdown_of(const std::vector<Span>& compute, const std::vector<Span>& communication, TimestampNs from,
                           TimestampNs to) {
  const TimestampNs c = length_within(compute, from, to), m = length_within(communication, from, to);
  const TimestampNs o = overlap_within(compute, communication, from, to);
  TimeBreakdown b;
  b.window_ms = ms(to - from);
  b.compute_ms = ms(c);
  b.communication_ms = ms(m);
  b.overlapped_ms = ms(o);
  b.exposed_ms = ms(m - o);
  b.idle_ms = ms((to - from) - (c + m - o));
  set_shares(b);
  return b;
}

// Where a job's steps begin: at instances first, first + period, … (period 0: no steps).
struct StepPattern {
  std::size_t period = 0, first = 0;
};

// The steps of a job from its matched collectives. First the smallest period at which their
// operations repeat, other collectives allowed within one period of either end (a broadcast of
// the weights first, a barrier last). Then the arrivals: a data-parallel step all-reduces its
// gradient buckets close together and then leaves a longer gap (optimizer, next forward pass),
// so a multiple of the period, at the phase whose gaps before it are all longer than twice the
// others (10th against 90th percentile), is the step; else one period, beginning where the
// gaps before it are longest.
StepPattern find_steps(const std::vector<CollectiveInstance>& instances, const std::vector<TimestampNs>& first) {
  const std::size_t n = instances.size();
  std::size_t p = 0;
  for (std::size_t q = 1; q <= kMaxStepCollectives && 4 * q <= n && p == 0; ++q) {
    bool repeats = true;
    for (std::size_t k = q; k + 2 * q <= n && repeats; ++k) repeats = instances[k].op == instances[k + q].op;
    if (repeats) p = q;
  }
  if (p == 0) return {};
  // gap[k]: from instance k − 1's first arrival to instance k's (interior instances only, so
  // that the odd collectives at the ends do not decide).
  std::vector<double> gap(n, 0);
  for (std::size_t k = 1; k < n; ++k) gap[k] = ms(first[k] - first[k - 1]);
  auto split = [&](std::size_t q, std::size_t phase, std::vector<double>& at, std::vector<double>& inside) {
    at.clear();
    inside.clear();
    for (std::size_t k = std::max<std::size_t>(p, 1); k + p < n; ++k) ((k % q) == phase ? at : inside).push_back(gap[k]);
  };
  std::vector<double> at, inside;
  for (std::size_t m = 2; m * p <= kMaxStepCollectives && 3 * m * p <= n; ++m) {
    const std::size_t q = m * p;
    double best = 0;
    std::size_t best_phase = 0;
    for (std::size_t phase = 0; phase < q; ++phase) {
      split(q, phase, at, inside);
      if (at.empty() || inside.empty()) continue;
      const double ratio = nearest_rank(at, 10) / std::max(nearest_rank(inside, 90), 1e-9);
      if (ratio > best) {
        best = ratio;
        best_phase = phase;
      }
    }
    if (best > 2) return {q, best_phase};
  }
  std::size_t phase = 0;
  double longest = -1;
  for (std::size_t f = 0; f < p && p > 1; ++f) {
    split(p, f, at, inside);
    if (!at.empty() && nearest_rank(at, 50) > longest) {
      longest = nearest_rank(at, 50);
      phase = f;
    }
  }
  return {p, phase};
}

std::vector<RankSpans> spans_of(const std::vector<RankCollectives>& ranks) {
  std::vector<RankSpans> out;
  for (const RankCollectives& r : ranks) {
    std::vector<Span> comm;
    for (const auto& e : r.executions) comm.push_back({e.start_ns, e.end_ns});
    out.push_back({merged(r.compute), merged(std::move(comm))});
  }
  return out;
}

// Per instance and member, the exposed transfer: from the last member's arrival (or its own,
// if later) to its kernel's end, less the time its own compute ran beside it.
std::vector<std::vector<double>> exposed_transfers(const std::vector<RankSpans>& spans,
                                                   const std::vector<CollectiveInstance>& instances) {
  std::vector<std::vector<double>> out;
  for (const CollectiveInstance& inst : instances) {
    const TimestampNs last = *std::max_element(inst.start_ns.begin(), inst.start_ns.end());
    auto& row = out.emplace_back();
    for (std::size_t m = 0; m < inst.ranks.size(); ++m) {
      const TimestampNs from = std::max(inst.start_ns[m], last), to = std::max(inst.end_ns[m], from);
      row.push_back(ms((to - from) - length_within(spans[inst.ranks[m]].compute, from, to)));
    }
  }
  return out;
}

// Each rank's breakdown over the window (the first kernel of any rank to the last one's end)
// and, where steps are found, per step. `first`: each instance's first arrival.
void add_breakdowns(const std::vector<RankSpans>& spans, const std::vector<CollectiveInstance>& instances,
                    const std::vector<TimestampNs>& first, CollectiveAnalysis& out) {
  TimestampNs from = INT64_MAX, to = INT64_MIN;
  for (const RankSpans& r : spans) {
    for (const auto* list : {&r.compute, &r.communication}) {
      if (list->empty()) continue;
      from = std::min(from, list->front().start_ns);
      to = std::max(to, list->back().end_ns);
    }
  }
  if (from >= to) return;
  const std::vector<std::vector<double>> transfers = exposed_transfers(spans, instances);
  for (std::size_t i = 0; i < spans.size(); ++i) out.ranks[i].breakdown = breakdown_of(spans[i].compute, spans[i].communication, from, to);
  for (std::size_t k = 0; k < instances.size(); ++k) {
    for (std::size_t m = 0; m < instances[k].ranks.size(); ++m) out.ranks[instances[k].ranks[m]].breakdown.exposed_transfer_ms += transfers[k][m];
  }

  const StepPattern pattern = find_steps(instances, first);
  std::vector<TimestampNs> bounds;
  std::vector<std::size_t> bound_instance;
  for (std::size_t k = pattern.first; pattern.period > 0 && k < instances.size(); k += pattern.period) {
    bounds.push_back(first[k]);
    bound_instance.push_back(k);
  }
  if (bounds.size() < 2) return;
  out.step_collectives = pattern.period;
  out.steps = bounds.size() - 1;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    std::vector<double> window, comp, comm, overlapped, exposed, idle, transfer;
    for (std::size_t j = 0; j + 1 < bounds.size(); ++j) {
      const TimeBreakdown b = breakdown_of(spans[i].compute, spans[i].communication, bounds[j], bounds[j + 1]);
      window.push_back(b.window_ms);
      comp.push_back(b.compute_ms);
      comm.push_back(b.communication_ms);
      overlapped.push_back(b.overlapped_ms);
      exposed.push_back(b.exposed_ms);
      idle.push_back(b.idle_ms);
      double t = 0;  // the step's instances this rank took part in
      for (std::size_t k = bound_instance[j]; k < bound_instance[j + 1]; ++k) {
        const auto& members = instances[k].ranks;
        const auto at = std::find(members.begin(), members.end(), i);
        if (at != members.end()) t += transfers[k][static_cast<std::size_t>(at - members.begin())];
      }
      transfer.push_back(t);
    }
    TimeBreakdown step;
    step.window_ms = nearest_rank(window, 50);
    step.compute_ms = nearest_rank(comp, 50);
    step.communication_ms = nearest_rank(comm, 50);
    step.overlapped_ms = nearest_rank(overlapped, 50);
    step.exposed_ms = nearest_rank(exposed, 50);
    step.idle_ms = nearest_rank(idle, 50);
    step.exposed_transfer_ms = nearest_rank(transfer, 50);
    set_shares(step);
    out.ranks[i].per_step = step;
  }
}

}  // namespace collective_detail

TimeBreakdown time_breakdown(std::vector<RankCollectives::Span> compute, std::vector<RankCollectives::Span> communication,
                             TimestampNs from, TimestampNs to) {
  return from < to ? collective_detail::breakdown_of(collective_detail::merged(std::move(compute)), collective_detail::merged(std::move(communication)), from, to) : TimeBreakdown{};
}

}  // namespace perfscope::analysis
