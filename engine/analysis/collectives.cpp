#include "engine/analysis/collectives.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {

namespace {

constexpr std::array<std::string_view, 7> kOps = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                  "Reduce",    "SendRecv",  "AllToAll"};
constexpr std::array<std::string_view, 6> kReductions = {"Sum", "Prod", "Min", "Max", "PreMulSum", "SumPostDiv"};
constexpr std::array<std::string_view, 3> kProtocols = {"LL", "LL128", "SIMPLE"};
// Longest first, so that NVLS_TREE is not read as NVLS.
constexpr std::array<std::string_view, 8> kAlgorithms = {"COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "COLLNET",
                                                         "RING",           "TREE",          "NVLS",      "PAT"};

template <std::size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

double ms(TimestampNs ns) { return static_cast<double>(ns) / 1e6; }

double nearest_rank(std::vector<double> v, double q) {
  return v.empty() ? 0.0 : percentile(v, q, PercentileConvention::kNearestRank);
}

using Span = RankCollectives::Span;

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

// Each rank's compute and communication as disjoint spans.
struct RankSpans {
  std::vector<Span> compute, communication;
};
std::vector<RankSpans> spans_of(const std::vector<RankCollectives>& ranks) {
  std::vector<RankSpans> out;
  for (const RankCollectives& r : ranks) {
    std::vector<Span> comm;
    for (const auto& e : r.executions) comm.push_back({e.start_ns, e.end_ns});
    out.push_back({merged(r.compute), merged(std::move(comm))});
  }
  return out;
}

// Per rank and matched instance, the exposed transfer: from the last rank's arrival (or its own,
// if later) to its kernel's end, less the time its own compute ran beside it.
std::vector<std::vector<double>> exposed_transfers(const std::vector<RankSpans>& spans,
                                                   const std::vector<CollectiveInstance>& instances) {
  std::vector<std::vector<double>> out(spans.size());
  for (const CollectiveInstance& inst : instances) {
    const TimestampNs last = *std::max_element(inst.start_ns.begin(), inst.start_ns.end());
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const TimestampNs from = std::max(inst.start_ns[i], last), to = std::max(inst.end_ns[i], from);
      out[i].push_back(ms((to - from) - length_within(spans[i].compute, from, to)));
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
  for (std::size_t i = 0; i < spans.size(); ++i) {
    out.ranks[i].breakdown = breakdown_of(spans[i].compute, spans[i].communication, from, to);
    for (double t : transfers[i]) out.ranks[i].breakdown.exposed_transfer_ms += t;
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
      double t = 0;  // the step's instances
      for (std::size_t k = bound_instance[j]; k < bound_instance[j + 1]; ++k) t += transfers[i][k];
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

}  // namespace

std::optional<CollectiveKernel> parse_collective_kernel(std::string_view name) {
  for (std::string_view prefix : {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_")}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    name = name.substr(0, name.find('('));
    std::vector<std::string_view> parts;
    for (std::size_t at = 0; at <= name.size();) {
      const std::size_t end = std::min(name.find('_', at), name.size());
      parts.push_back(name.substr(at, end - at));
      at = end + 1;
    }
    if (parts.empty() || !one_of(parts[0], kOps)) return std::nullopt;
    CollectiveKernel k;
    k.op = std::string(parts[0]);
    std::vector<std::string_view> rest;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      // Two-part algorithm names first.
      if (i + 1 < parts.size()) {
        std::string joined = std::string(parts[i]) + "_" + std::string(parts[i + 1]);
        if (one_of(std::string_view(joined), kAlgorithms)) {
          k.algorithm = joined;
          ++i;
          continue;
        }
      }
      if (one_of(parts[i], kAlgorithms)) {
        k.algorithm = std::string(parts[i]);
      } else if (one_of(parts[i], kProtocols)) {
        k.protocol = std::string(parts[i]);
      } else if (one_of(parts[i], kReductions)) {
        k.reduction = std::string(parts[i]);
      } else {
        rest.push_back(parts[i]);
      }
    }
    for (std::string_view r : rest) k.dtype += (k.dtype.empty() ? "" : "_") + std::string(r);  // "int8_t"
    return k;
  }
  return std::nullopt;
}

TimeBreakdown time_breakdown(std::vector<RankCollectives::Span> compute, std::vector<RankCollectives::Span> communication,
                             TimestampNs from, TimestampNs to) {
  return from < to ? breakdown_of(merged(std::move(compute)), merged(std::move(communication)), from, to) : TimeBreakdown{};
}

CollectiveAnalysis analyze_collectives(std::vector<RankCollectives> ranks, const CollectiveOptions& options) {
  CollectiveAnalysis out;
  std::erase_if(ranks, [](const RankCollectives& r) { return r.executions.empty(); });
  std::sort(ranks.begin(), ranks.end(), [](const RankCollectives& a, const RankCollectives& b) {
    // Numeric ranks in numeric order.
    if (a.rank.size() != b.rank.size()) return a.rank.size() < b.rank.size();
    return a.rank < b.rank;
  });
  for (auto& r : ranks) {
    std::sort(r.executions.begin(), r.executions.end(),
              [](const RankCollectives::Execution& a, const RankCollectives::Execution& b) { return a.start_ns < b.start_ns; });
    RankCollectiveSummary summary;
    summary.rank = r.rank;
    summary.device = r.device;
    out.ranks.push_back(std::move(summary));
  }
  const std::vector<RankSpans> spans = spans_of(ranks);
  if (ranks.size() < 2) {
    add_breakdowns(spans, {}, {}, out);
    for (const auto& r : ranks) out.unmatched += r.executions.size();
    out.no_straggler = ranks.empty() ? "no collective kernels in the window" : "collectives of one rank only";
    return out;
  }

  // Match instance k across ranks while every rank has one and their operations agree.
  const std::size_t n = ranks.size();
  std::vector<CollectiveInstance> instances;
  std::map<std::string, std::vector<double>> op_durations, op_transfers;
  std::map<std::string, std::pair<double, double>> op_wait_total;  // op → (wait, time in it)
  std::vector<std::vector<double>> lateness_when_last(n);
  // What a late rank costs the others, per instance it was last in: their wait for it with no
  // compute of theirs beside it (a wait hidden behind compute costs nothing), the mean over
  // the other ranks.
  std::vector<std::vector<double>> caused(n);
  auto exposed_wait_caused = [&](const CollectiveInstance& inst) {
    const TimestampNs last = inst.start_ns[inst.last_rank];
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == inst.last_rank) continue;
      const TimestampNs from = inst.start_ns[i];
      const TimestampNs to = std::min(last, std::max(inst.end_ns[i], from));
      if (to > from) sum += ms((to - from) - length_within(spans[i].compute, from, to));
    }
    return sum / static_cast<double>(n - 1);
  };
  std::vector<double> offset_sum(n, 0);
  // Per rank and instance after the first: its time between leaving the previous instance and
  // entering this one (its compute in the step, on its own GPU's clock) beyond the other ranks' mean.
  std::vector<std::vector<double>> extra_gaps(n);
  // Each rank's next execution. A matched instance's kernels overlap: none can end before the
  // last rank arrived. Where one does, that rank's kernel has no partner (a lost record, or a
  // window that began between the ranks' kernels): it is skipped and matching goes on.
  std::vector<std::size_t> next(n, 0);
  auto exhausted = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      if (next[i] >= ranks[i].executions.size()) return true;
    }
    return false;
  };
  while (!exhausted()) {
    const std::size_t k = instances.size();
    const std::string& op = ranks[0].executions[next[0]].op;
    std::size_t differs = n;
    for (std::size_t i = 1; i < n && differs == n; ++i) {
      if (ranks[i].executions[next[i]].op != op) differs = i;
    }
    if (differs != n) {
      out.mismatch = "instance " + std::to_string(k) + " is " + op + " on rank " + ranks[0].rank + " but " +
                     ranks[differs].executions[next[differs]].op + " on rank " + ranks[differs].rank +
                     " (several communicators, or kernels lost): matching stopped there";
      break;
    }
    TimestampNs last_start = INT64_MIN;
    std::size_t earliest_end = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = ranks[i].executions[next[i]];
      last_start = std::max(last_start, e.start_ns);
      if (e.end_ns < ranks[earliest_end].executions[next[earliest_end]].end_ns) earliest_end = i;
    }
    if (ranks[earliest_end].executions[next[earliest_end]].end_ns + options.overlap_tolerance_ns < last_start) {
      ++next[earliest_end];
      ++out.skipped;
      continue;
    }
    CollectiveInstance inst;
    inst.sequence = k;
    inst.op = op;
    for (std::size_t i = 0; i < n; ++i) {
      inst.start_ns.push_back(ranks[i].executions[next[i]].start_ns);
      inst.end_ns.push_back(ranks[i].executions[next[i]].end_ns);
      ++next[i];
    }
    const auto last = std::max_element(inst.start_ns.begin(), inst.start_ns.end());
    const auto first = std::min_element(inst.start_ns.begin(), inst.start_ns.end());
    inst.last_rank = static_cast<std::size_t>(last - inst.start_ns.begin());
    inst.skew_ms = ms(*last - *first);
    TimestampNs next_latest = INT64_MIN;
    for (std::size_t i = 0; i < n; ++i) {
      if (i != inst.last_rank) next_latest = std::max(next_latest, inst.start_ns[i]);
    }
    double start_sum = 0;
    for (std::size_t i = 0; i < n; ++i) start_sum += static_cast<double>(inst.start_ns[i]);
    for (std::size_t i = 0; i < n; ++i) {
      const TimestampNs start = inst.start_ns[i], end = std::max(inst.end_ns[i], start);
      const double duration = ms(end - start);
      const double wait = std::min(duration, ms(std::max<TimestampNs>(0, *last - start)));
      const double transfer = ms(std::max<TimestampNs>(0, end - std::max(start, *last)));
      RankCollectiveSummary& s = out.ranks[i];
      ++s.instances;
      s.total_ms += duration;
      s.wait_ms += wait;
      s.transfer_ms += transfer;
      const double others_mean = (start_sum - static_cast<double>(start)) / static_cast<double>(n - 1);
      offset_sum[i] += (static_cast<double>(start) - others_mean) / 1e6;
      op_durations[op].push_back(duration);
      op_transfers[op].push_back(transfer);
      op_wait_total[op].first += wait;
      op_wait_total[op].second += duration;
    }
    if (!instances.empty()) {
      const CollectiveInstance& before = instances.back();
      double gap_sum = 0;
      for (std::size_t i = 0; i < n; ++i) gap_sum += ms(inst.start_ns[i] - before.end_ns[i]);
      for (std::size_t i = 0; i < n; ++i) {
        const double gap = ms(inst.start_ns[i] - before.end_ns[i]);
        extra_gaps[i].push_back(gap - (gap_sum - gap) / static_cast<double>(n - 1));
      }
    }
    if (std::count(inst.start_ns.begin(), inst.start_ns.end(), *last) == 1) {
      ++out.ranks[inst.last_rank].last_arrivals;
      lateness_when_last[inst.last_rank].push_back(ms(*last - next_latest));
      caused[inst.last_rank].push_back(exposed_wait_caused(inst));
    }
    instances.push_back(std::move(inst));
  }
  out.matched = instances.size();
  std::vector<TimestampNs> first;  // each instance's first arrival
  for (const CollectiveInstance& inst : instances) first.push_back(*std::min_element(inst.start_ns.begin(), inst.start_ns.end()));
  add_breakdowns(spans, instances, first, out);
  for (const auto& r : ranks) out.unmatched += r.executions.size() - out.matched;  // the skipped among them
  for (std::size_t i = 0; i < n; ++i) {
    RankCollectiveSummary& s = out.ranks[i];
    s.wait_share = s.total_ms > 0 ? s.wait_ms / s.total_ms : 0;
    s.mean_arrival_offset_ms = out.matched ? offset_sum[i] / static_cast<double>(out.matched) : 0;
  }
  for (const auto& [op, durations] : op_durations) {
    CollectiveOpSummary s;
    s.op = op;
    s.instances = durations.size() / n;
    s.duration_p50_ms = nearest_rank(durations, 50);
    s.duration_p99_ms = nearest_rank(durations, 99);
    s.transfer_p50_ms = nearest_rank(op_transfers[op], 50);
    const auto [wait, time] = op_wait_total[op];
    s.wait_share = time > 0 ? wait / time : 0;
    out.ops.push_back(std::move(s));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const CollectiveOpSummary& a, const CollectiveOpSummary& b) {
    return a.instances > b.instances || (a.instances == b.instances && a.op < b.op);
  });

  // The step: the median time between successive instances' first arrivals.
  std::vector<double> steps;
  for (std::size_t k = 1; k < first.size(); ++k) steps.push_back(ms(first[k] - first[k - 1]));
  out.step_median_ms = nearest_rank(steps, 50);

  // The straggler: last most often, by a margin that matters.
  const auto most = std::max_element(out.ranks.begin(), out.ranks.end(), [](const auto& a, const auto& b) {
    return a.last_arrivals < b.last_arrivals;
  });
  const std::size_t who = static_cast<std::size_t>(most - out.ranks.begin());
  const double share = out.matched ? static_cast<double>(most->last_arrivals) / static_cast<double>(out.matched) : 0;
  const double lateness = nearest_rank(lateness_when_last[who], 50);
  const double needed = std::max(options.min_lateness_ms, options.min_lateness_of_step * out.step_median_ms);
  auto percent = [](double v) { return std::to_string(static_cast<int>(v * 100 + 0.5)) + " %"; };
  if (out.matched < options.min_instances) {
    out.no_straggler = std::to_string(out.matched) + " matched collectives; at least " +
                       std::to_string(options.min_instances) + " are needed";
  } else if (share < options.min_last_share) {
    out.no_straggler = "no rank arrived last in at least " + percent(options.min_last_share) + " of " +
                       std::to_string(out.matched) + " collectives (most: rank " + most->rank + ", " + percent(share) + ")";
  } else if (lateness < needed || nearest_rank(extra_gaps[who], 50) < needed) {
    out.no_straggler = "rank " + most->rank + " arrived last in " + percent(share) + " of the collectives, but by a median " +
                       std::to_string(lateness) + " ms with " + std::to_string(nearest_rank(extra_gaps[who], 50)) +
                       " ms more compute per step, one of them under the " + std::to_string(needed) + " ms that matter";
  } else if (const double cost = nearest_rank(caused[who], 50); cost < needed) {
    out.no_straggler = "rank " + most->rank + " arrived last in " + percent(share) + " of the collectives, by a median " +
                       std::to_string(lateness) + " ms, but the other ranks waited for it beside their own compute: " +
                       std::to_string(cost) + " ms of exposed wait per collective, under the " + std::to_string(needed) +
                       " ms that matter";
  } else {
    out.straggler = Straggler{most->rank, share, lateness, nearest_rank(extra_gaps[who], 50), out.step_median_ms, cost};
  }
  const std::size_t keep = std::min(instances.size(), options.max_instances_listed);
  out.instances.assign(std::make_move_iterator(instances.end() - static_cast<std::ptrdiff_t>(keep)),
                       std::make_move_iterator(instances.end()));
  return out;
}

}  // namespace perfscope::analysis
