#include "engine/analysis/collectives.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "engine/analysis/collective_breakdown.hpp"

namespace perfscope::analysis {

namespace {

using namespace collective_detail;

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

// Milliseconds for people: three significant digits ("0.00985", "1.63", "0.100").
std::string ms_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v != 0 && std::abs(v) < 100 ? "%#.3g" : "%.0f", v);
  return buf;
}

bool is_point_to_point(std::string_view op) { return op == "SendRecv" || op == "Send" || op == "Recv"; }

bool needs_every_rank(std::string_view op) {
  return op == "AllReduce" || op == "AllGather" || op == "ReduceScatter" || op == "AllToAll" || op == "AlltoAll";
}

// One communicator's collectives on its members (indices into the job's ranks, each list in
// start order), matched k-th with k-th. Appends the instances; counts what it skipped; says
// where operations first differed (empty: nowhere).
struct Matching {
  std::vector<CollectiveInstance> instances;
  std::size_t skipped = 0;
  std::string mismatch;
};
void match_communicator(const std::vector<RankCollectives>& ranks, const std::vector<std::size_t>& members,
                        const std::vector<std::vector<const RankCollectives::Execution*>>& lists,
                        const CollectiveOptions& options, Matching& out) {
  const std::size_t n = members.size();
  std::vector<std::size_t> next(n, 0);
  auto exhausted = [&] {
    for (std::size_t m = 0; m < n; ++m) {
      if (next[m] >= lists[m].size()) return true;
    }
    return false;
  };
  std::size_t k = 0;
  while (!exhausted()) {
    const RankCollectives::Execution& head = *lists[0][next[0]];
    std::size_t differs = n;
    for (std::size_t m = 1; m < n && differs == n; ++m) {
      if (lists[m][next[m]]->op != head.op) differs = m;
    }
    if (differs != n) {
      out.mismatch = "instance " + std::to_string(k) + (head.comm.empty() ? "" : " of communicator " + head.comm) +
                     " is " + head.op + " on rank " + ranks[members[0]].rank + " but " + lists[differs][next[differs]]->op +
                     " on rank " + ranks[members[differs]].rank +
                     (head.comm.empty() ? " (several communicators, or kernels lost)" : " (kernels lost)") +
                     ": matching stopped there";
      return;
    }
    TimestampNs last_start = INT64_MIN;
    std::size_t earliest_end = 0;
    for (std::size_t m = 0; m < n; ++m) {
      last_start = std::max(last_start, lists[m][next[m]]->start_ns);
      if (lists[m][next[m]]->end_ns < lists[earliest_end][next[earliest_end]]->end_ns) earliest_end = m;
    }
    // Only where no rank can finish before every rank arrived: a broadcast's root, a reduce's
    // leaves or a send may push their data into the peers' buffers and leave.
    if (needs_every_rank(head.op) &&
        lists[earliest_end][next[earliest_end]]->end_ns + options.overlap_tolerance_ns < last_start) {
      ++next[earliest_end];
      ++out.skipped;
      continue;
    }
    CollectiveInstance inst;
    inst.op = head.op;
    inst.comm = head.comm;
    inst.comm_ranks = head.comm_ranks;
    inst.comm_nodes = head.comm_nodes;
    inst.algorithm = head.algorithm;
    inst.protocol = head.protocol;
    inst.bytes = head.bytes;
    inst.ranks = members;
    for (std::size_t m = 0; m < n; ++m) {
      inst.start_ns.push_back(lists[m][next[m]]->start_ns);
      inst.end_ns.push_back(lists[m][next[m]]->end_ns);
      ++next[m];
    }
    const TimestampNs last = *std::max_element(inst.start_ns.begin(), inst.start_ns.end());
    const TimestampNs end = *std::max_element(inst.end_ns.begin(), inst.end_ns.end());
    // Every rank of the communicator here, all of one size: else the time or the bytes are not
    // the instance's (a rank on another host untraced, a lost kernel paired with the next one).
    bool whole = head.comm_ranks == static_cast<int>(n);
    for (std::size_t m = 0; m < n && whole; ++m) whole = lists[m][next[m] - 1]->bytes == head.bytes;
    if (!whole) inst.bytes = 0;
    if (inst.bytes > 0 && end > last) {
      inst.algbw_gb_per_second = inst.bytes / static_cast<double>(end - last);  // bytes per ns = GB/s
      inst.busbw_gb_per_second = inst.algbw_gb_per_second * bus_bandwidth_factor(inst.op, head.comm_ranks);
    }
    out.instances.push_back(std::move(inst));
    ++k;
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

double bus_bandwidth_factor(std::string_view op, int n) {
  if (n < 2) return 1;
  const double r = static_cast<double>(n - 1) / n;
  if (op == "AllReduce") return 2 * r;
  if (op == "AllGather" || op == "ReduceScatter" || op == "AllToAll" || op == "AlltoAll") return r;
  return 1;
}

namespace {

// Ranks with executions, numeric ranks in numeric order, each rank's executions in start order;
// their summaries begun in `out`. Returns the executions in all.
std::size_t order_ranks(std::vector<RankCollectives>& ranks, CollectiveAnalysis& out) {
  std::erase_if(ranks, [](const RankCollectives& r) { return r.executions.empty(); });
  std::sort(ranks.begin(), ranks.end(), [](const RankCollectives& a, const RankCollectives& b) {
    if (a.rank.size() != b.rank.size()) return a.rank.size() < b.rank.size();
    return a.rank < b.rank;
  });
  std::size_t executions = 0;
  for (auto& r : ranks) {
    std::sort(r.executions.begin(), r.executions.end(),
              [](const RankCollectives::Execution& a, const RankCollectives::Execution& b) { return a.start_ns < b.start_ns; });
    executions += r.executions.size();
    RankCollectiveSummary summary;
    summary.rank = r.rank;
    summary.device = r.device;
    out.ranks.push_back(std::move(summary));
  }
  return executions;
}

TimestampNs first_arrival(const CollectiveInstance& inst) { return *std::min_element(inst.start_ns.begin(), inst.start_ns.end()); }

// Each communicator (empty: kernels NCCL did not describe) matched among the ranks it has;
// the instances of every communicator on one clock, in the order their first member arrived.
std::vector<CollectiveInstance> match_all(const std::vector<RankCollectives>& ranks, const CollectiveOptions& options,
                                          CollectiveAnalysis& out) {
  std::set<std::string> described;
  for (const auto& r : ranks) {
    for (const auto& e : r.executions) {
      if (!e.comm.empty()) described.insert(e.comm);
    }
  }
  // Undescribed kernels join the one communicator NCCL described, if it described one.
  const std::string undescribed = described.size() == 1 ? *described.begin() : std::string();
  std::map<std::string, std::vector<std::vector<const RankCollectives::Execution*>>> by_comm;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    for (const auto& e : ranks[i].executions) {
      if (is_point_to_point(e.op)) continue;
      auto& lists = by_comm[e.comm.empty() ? undescribed : e.comm];
      lists.resize(ranks.size());
      lists[i].push_back(&e);  // in start order: each rank's executions are sorted
    }
  }
  Matching matching;
  for (auto& [comm, lists] : by_comm) {
    if (!comm.empty()) ++out.communicators;
    std::vector<std::size_t> members;
    std::vector<std::vector<const RankCollectives::Execution*>> member_lists;
    for (std::size_t i = 0; i < lists.size(); ++i) {
      if (lists[i].empty()) continue;
      members.push_back(i);
      member_lists.push_back(std::move(lists[i]));
    }
    if (members.size() < 2) continue;
    std::string mismatch;
    std::swap(mismatch, matching.mismatch);
    match_communicator(ranks, members, member_lists, options, matching);
    if (!mismatch.empty()) matching.mismatch = mismatch;  // the first one said
  }
  std::vector<CollectiveInstance> instances = std::move(matching.instances);
  out.skipped = matching.skipped;
  out.mismatch = matching.mismatch;
  std::stable_sort(instances.begin(), instances.end(), [](const CollectiveInstance& a, const CollectiveInstance& b) {
    return first_arrival(a) < first_arrival(b);
  });
  return instances;
}

struct OpKey {  // an 8-rank tensor-parallel all-reduce is no 2-rank data-parallel one of the same size
  std::string op;
  double bytes;
  int comm_ranks;
  auto operator<=>(const OpKey&) const = default;
};
struct OpFigures {
  std::size_t instances = 0;
  std::vector<double> durations, transfers, algbw, busbw;
  double wait = 0, time = 0;
  std::map<std::pair<std::string, std::string>, std::size_t> choices;  // (algorithm, protocol) → count
  int comm_ranks = 0, comm_nodes = 1;
};

// What the walk over the instances gathers per operation and per rank.
struct InstanceFigures {
  std::map<OpKey, OpFigures> by_op;
  std::vector<std::vector<double>> lateness_when_last;
  // What a late rank costs the others, per instance it was last in: their wait for it with no
  // compute of theirs beside it (a wait hidden behind compute costs nothing), the mean over
  // the other members.
  std::vector<std::vector<double>> caused;
  std::vector<double> offset_sum;
  // Per rank and instance after its first: its time between leaving its previous instance and
  // entering this one (its compute in the step, on its own GPU's clock) beyond the other members' mean.
  std::vector<std::vector<double>> extra_gaps;
  std::vector<std::optional<TimestampNs>> previous_end;

  explicit InstanceFigures(std::size_t n)
      : lateness_when_last(n), caused(n), offset_sum(n, 0), extra_gaps(n), previous_end(n) {}
};

double exposed_wait_caused(const CollectiveInstance& inst, std::size_t last_member, const std::vector<RankSpans>& spans) {
  const TimestampNs last = inst.start_ns[last_member];
  double sum = 0;
  for (std::size_t m = 0; m < inst.ranks.size(); ++m) {
    if (m == last_member) continue;
    const TimestampNs from = inst.start_ns[m];
    const TimestampNs to = std::min(last, std::max(inst.end_ns[m], from));
    if (to > from) sum += ms((to - from) - length_within(spans[inst.ranks[m]].compute, from, to));
  }
  return sum / static_cast<double>(inst.ranks.size() - 1);
}

void add_to_op(OpFigures& figures, const CollectiveInstance& inst) {
  ++figures.instances;
  if (inst.busbw_gb_per_second > 0) {
    figures.algbw.push_back(inst.algbw_gb_per_second);
    figures.busbw.push_back(inst.busbw_gb_per_second);
  }
  if (!inst.comm.empty()) {
    ++figures.choices[{inst.algorithm, inst.protocol}];
    figures.comm_ranks = inst.comm_ranks;
    figures.comm_nodes = std::max(figures.comm_nodes, inst.comm_nodes);
  }
}

// One instance: its sequence, last rank and skew; each member's time, wait and transfer;
// each member's gap since its previous instance; what the last rank cost the others.
void walk_instance(CollectiveInstance& inst, const std::vector<RankSpans>& spans, InstanceFigures& f,
                   CollectiveAnalysis& out) {
  const std::size_t members = inst.ranks.size();
  const auto last = std::max_element(inst.start_ns.begin(), inst.start_ns.end());
  const auto first = std::min_element(inst.start_ns.begin(), inst.start_ns.end());
  const std::size_t last_member = static_cast<std::size_t>(last - inst.start_ns.begin());
  inst.last_rank = inst.ranks[last_member];
  inst.skew_ms = ms(*last - *first);
  TimestampNs next_latest = INT64_MIN;
  for (std::size_t m = 0; m < members; ++m) {
    if (m != last_member) next_latest = std::max(next_latest, inst.start_ns[m]);
  }
  double start_sum = 0;
  for (TimestampNs t : inst.start_ns) start_sum += static_cast<double>(t);
  OpFigures& figures = f.by_op[{inst.op, inst.bytes, inst.comm.empty() ? 0 : inst.comm_ranks}];
  add_to_op(figures, inst);
  for (std::size_t m = 0; m < members; ++m) {
    const std::size_t i = inst.ranks[m];
    const TimestampNs start = inst.start_ns[m], end = std::max(inst.end_ns[m], start);
    const double duration = ms(end - start);
    const double wait = std::min(duration, ms(std::max<TimestampNs>(0, *last - start)));
    const double transfer = ms(std::max<TimestampNs>(0, end - std::max(start, *last)));
    RankCollectiveSummary& s = out.ranks[i];
    ++s.instances;
    s.total_ms += duration;
    s.wait_ms += wait;
    s.transfer_ms += transfer;
    const double others_mean = (start_sum - static_cast<double>(start)) / static_cast<double>(members - 1);
    f.offset_sum[i] += (static_cast<double>(start) - others_mean) / 1e6;
    figures.durations.push_back(duration);
    figures.transfers.push_back(transfer);
    figures.wait += wait;
    figures.time += duration;
  }
  // Gaps since each member's previous instance, where at least two members had one.
  std::vector<std::pair<std::size_t, double>> gaps;
  double gap_sum = 0;
  for (std::size_t m = 0; m < members; ++m) {
    const std::size_t i = inst.ranks[m];
    if (f.previous_end[i]) {
      gaps.emplace_back(i, ms(inst.start_ns[m] - *f.previous_end[i]));
      gap_sum += gaps.back().second;
    }
    f.previous_end[i] = inst.end_ns[m];
  }
  if (gaps.size() >= 2) {
    for (const auto& [i, gap] : gaps) f.extra_gaps[i].push_back(gap - (gap_sum - gap) / static_cast<double>(gaps.size() - 1));
  }
  if (std::count(inst.start_ns.begin(), inst.start_ns.end(), *last) == 1) {
    ++out.ranks[inst.last_rank].last_arrivals;
    f.lateness_when_last[inst.last_rank].push_back(ms(*last - next_latest));
    f.caused[inst.last_rank].push_back(exposed_wait_caused(inst, last_member, spans));
  }
}

// One row per operation, size and communicator size; the most common first.
std::vector<CollectiveOpSummary> op_summaries(const std::map<OpKey, OpFigures>& by_op, const CollectiveOptions& options) {
  std::vector<CollectiveOpSummary> ops;
  for (const auto& [key, f] : by_op) {
    CollectiveOpSummary s;
    s.op = key.op;
    s.bytes = key.bytes;
    s.comm_ranks = f.comm_ranks;
    s.comm_nodes = f.comm_nodes;
    if (!f.choices.empty()) {
      const auto most = std::max_element(f.choices.begin(), f.choices.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      s.algorithm = most->first.first;
      s.protocol = most->first.second;
    }
    s.instances = f.instances;
    s.duration_p50_ms = nearest_rank(f.durations, 50);
    s.duration_p99_ms = nearest_rank(f.durations, 99);
    s.transfer_p50_ms = nearest_rank(f.transfers, 50);
    s.wait_share = f.time > 0 ? f.wait / f.time : 0;
    s.algbw_p50_gb_per_second = nearest_rank(f.algbw, 50);
    s.busbw_p50_gb_per_second = nearest_rank(f.busbw, 50);
    if (options.link_peak_bytes_per_second > 0 && s.busbw_p50_gb_per_second > 0 && s.comm_nodes <= 1) {
      s.busbw_share_of_peak = s.busbw_p50_gb_per_second * 1e9 / options.link_peak_bytes_per_second;
    }
    ops.push_back(std::move(s));
  }
  std::sort(ops.begin(), ops.end(), [](const CollectiveOpSummary& a, const CollectiveOpSummary& b) {
    if (a.instances != b.instances) return a.instances > b.instances;
    return a.op != b.op ? a.op < b.op : a.bytes < b.bytes;
  });
  return ops;
}

// The straggler: last in the largest share of the instances it took part in (of ranks in
// enough of them), by a margin that matters; else why there is none.
void pick_straggler(InstanceFigures& f, const CollectiveOptions& options, CollectiveAnalysis& out) {
  auto share_of = [&](const RankCollectiveSummary& r) {
    return r.instances >= options.min_instances ? static_cast<double>(r.last_arrivals) / static_cast<double>(r.instances) : 0.0;
  };
  const auto most = std::max_element(out.ranks.begin(), out.ranks.end(), [&](const auto& a, const auto& b) {
    return share_of(a) < share_of(b) || (share_of(a) == share_of(b) && a.last_arrivals < b.last_arrivals);
  });
  const std::size_t who = static_cast<std::size_t>(most - out.ranks.begin());
  const double share = share_of(*most);
  const double lateness = nearest_rank(f.lateness_when_last[who], 50);
  const double needed = std::max(options.min_lateness_ms, options.min_lateness_of_step * out.step_median_ms);
  auto percent = [](double v) { return std::to_string(static_cast<int>(v * 100 + 0.5)) + "%"; };  // as the dashboard writes shares
  if (out.matched < options.min_instances) {
    out.no_straggler = std::to_string(out.matched) + " matched collectives; at least " +
                       std::to_string(options.min_instances) + " are needed";
  } else if (share < options.min_last_share) {
    out.no_straggler = "no rank arrived last in at least " + percent(options.min_last_share) + " of " +
                       std::to_string(out.matched) + " collectives (most: rank " + most->rank + ", " + percent(share) + ")";
  } else if (const double extra = nearest_rank(f.extra_gaps[who], 50); lateness < needed || extra < needed) {
    const char* under = lateness < needed && extra < needed ? "both under" : lateness < needed ? "the lateness under" : "the extra compute under";
    out.no_straggler = "rank " + most->rank + " arrived last in " + percent(share) + " of the collectives, late by a median " +
                       ms_text(lateness) + " ms with " + ms_text(extra) + " ms more compute per step: " + under + " the " +
                       ms_text(needed) + " ms that matter";
  } else if (const double cost = nearest_rank(f.caused[who], 50); cost < needed) {
    out.no_straggler = "rank " + most->rank + " arrived last in " + percent(share) + " of the collectives, by a median " +
                       ms_text(lateness) + " ms, but the other ranks waited for it beside their own compute: " +
                       ms_text(cost) + " ms of exposed wait per collective, under the " + ms_text(needed) +
                       " ms that matter";
  } else {
    out.straggler = Straggler{most->rank, share, lateness, nearest_rank(f.extra_gaps[who], 50), out.step_median_ms, cost};
  }
}

}  // namespace

CollectiveAnalysis analyze_collectives(std::vector<RankCollectives> ranks, const CollectiveOptions& options) {
  CollectiveAnalysis out;
  const std::size_t executions = order_ranks(ranks, out);
  const std::vector<RankSpans> spans = spans_of(ranks);
  if (ranks.size() < 2) {
    add_breakdowns(spans, {}, {}, out);
    out.unmatched = executions;
    out.no_straggler = ranks.empty() ? "no collective kernels in the window" : "collectives of one rank only";
    return out;
  }
  std::vector<CollectiveInstance> instances = match_all(ranks, options, out);
  const std::size_t n = ranks.size();
  InstanceFigures figures(n);
  for (std::size_t k = 0; k < instances.size(); ++k) {
    instances[k].sequence = k;
    walk_instance(instances[k], spans, figures, out);
  }
  out.matched = instances.size();
  std::vector<TimestampNs> first;  // each instance's first arrival
  for (const CollectiveInstance& inst : instances) first.push_back(first_arrival(inst));
  add_breakdowns(spans, instances, first, out);
  std::size_t matched_executions = 0;
  for (const CollectiveInstance& inst : instances) matched_executions += inst.ranks.size();
  out.unmatched = executions - matched_executions;  // the skipped among them
  for (std::size_t i = 0; i < n; ++i) {
    RankCollectiveSummary& s = out.ranks[i];
    s.wait_share = s.total_ms > 0 ? s.wait_ms / s.total_ms : 0;
    s.mean_arrival_offset_ms = s.instances ? figures.offset_sum[i] / static_cast<double>(s.instances) : 0;
  }
  out.ops = op_summaries(figures.by_op, options);
  // The step: the median time between successive instances' first arrivals.
  std::vector<double> steps;
  for (std::size_t k = 1; k < first.size(); ++k) steps.push_back(ms(first[k] - first[k - 1]));
  out.step_median_ms = nearest_rank(steps, 50);
  pick_straggler(figures, options, out);
  const std::size_t keep = std::min(instances.size(), options.max_instances_listed);
  out.instances.assign(std::make_move_iterator(instances.end() - static_cast<std::ptrdiff_t>(keep)),
                       std::make_move_iterator(instances.end()));
  return out;
}

}  // namespace perfscope::analysis
