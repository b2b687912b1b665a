#include "engine/analysis/timeline.hpp"
#include "engine/analysis/timeline_view.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>

#include "engine/analysis/stats.hpp"
#include "engine/base/saturating.hpp"

namespace perfscope::analysis {
namespace {

constexpr double kMs = 1e6;

Distribution distribution(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  Moments m = moments(v);
  const double qs[] = {50, 95};
  auto p = percentiles(v, qs, PercentileConvention::kNearestRank);
  d.count = m.n;
  d.mean = m.mean;
  d.p50 = p[0];
  d.p95 = p[1];
  d.max = m.max;
  return d;
}

// Sum, least and greatest of a queue's values, kept as they are laid out: the distributions
// then need no pass of their own for them.
struct ValueSummary {
  double sum = 0;
  TimestampNs min = INT64_MAX, max = INT64_MIN;
  void add(TimestampNs v) {
    sum += static_cast<double>(v);
    min = std::min(min, v);
    max = std::max(max, v);
  }
  void add(const ValueSummary& o) {
    sum += o.sum;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
};

// The same figures from integer nanoseconds (the timeline's own unit), with exact nearest-rank
// percentiles by integer_order_statistics: three of these per queue over every execution were
// most of a busy window's timeline time as doubles through nth_element.
Distribution distribution_ns(std::span<const TimestampNs> v, const ValueSummary& summary) {
  Distribution d;
  if (v.empty()) return d;
  const std::size_t ranks[] = {nearest_rank_index(50, v.size()), nearest_rank_index(95, v.size())};
  const auto p = integer_order_statistics(v, ranks, summary.min, summary.max);
  d.count = v.size();
  d.mean = summary.sum / static_cast<double>(v.size()) / kMs;
  d.p50 = static_cast<double>(p[0]) / kMs;
  d.p95 = static_cast<double>(p[1]) / kMs;
  d.max = static_cast<double>(summary.max) / kMs;
  return d;
}

// The values a kernel gives the distributions: its duration, its launch delay (start − call
// end, clipped at 0) and its launch call's duration; kNoLaunch where no call was recorded.
struct KernelValues {
  TimestampNs duration, delay, call;
  explicit KernelValues(const TraceKernel& k)
      : duration(k.end_ns - k.start_ns),
        delay(k.launch_end_ns != kNoLaunch ? std::max<TimestampNs>(0, k.start_ns - k.launch_end_ns) : kNoLaunch),
        call(k.launch_start_ns != kNoLaunch && k.launch_end_ns != kNoLaunch ? k.launch_end_ns - k.launch_start_ns
                                                                            : kNoLaunch) {}
};

// A queue's launch delays, launch-call durations and kernel durations (any order).
struct QueueValues {
  std::span<const TimestampNs> durations, delays, overheads;
};

// The union of intervals fed in start order: its length, and the gap each interval opens
// after the stretch before it.
class IntervalUnion {
 public:
  // The gap between the current stretch and [start, end], 0 when it joins that stretch (or
  // is the first).
  TimestampNs add(TimestampNs start, TimestampNs end) {
    if (!open_) {
      open_ = true;
      from_ = start;
      to_ = end;
      return 0;
    }
    if (start <= to_) {
      to_ = std::max(to_, end);
      return 0;
    }
    const TimestampNs gap = start - to_;
    closed_ += to_ - from_;
    from_ = start;
    to_ = end;
    return gap;
  }
  TimestampNs length() const { return open_ ? closed_ + (to_ - from_) : 0; }

 private:
  bool open_ = false;
  TimestampNs from_ = 0, to_ = 0, closed_ = 0;
};

// A queue's busy time as the union of its kernels' intervals (all, and compute only) and
// the idle gaps between, fed its kernels in start order.
class BusyUnion {
 public:
  void add(const TraceKernel& k, bool compute, const TimelineOptions& o) {
    const std::size_t window = window_of(k.start_ns, o.windows);
    if (count_++ == 0) first_ = k.start_ns;
    last_ = std::max(last_, k.end_ns);
    const bool same_window = window == window_;
    window_ = window;
    if (const TimestampNs gap = all_.add(k.start_ns, k.end_ns); gap > 0 && !same_window) {
      untraced_ += gap;  // between two windows: nobody watched
    } else if (gap > 0) {
      switch (gap_cause(k, gap, o.kernel_wait_max_ns)) {
        case GapCause::kHostWait: host_wait_ += gap; break;
        case GapCause::kKernelWait: kernel_wait_ += gap; break;
        default: other_ += gap; break;
      }
      ++gaps_;
    }
    if (compute) compute_.add(k.start_ns, k.end_ns);
  }

  void finish(QueueTimeline& q) const {
    const TimestampNs busy = all_.length();
    const TimestampNs span = last_ - first_ - untraced_;
    q.span_ms = static_cast<double>(span) / kMs;
    q.busy_ms = static_cast<double>(busy) / kMs;
    q.idle_ms = static_cast<double>(span - busy) / kMs;
    q.busy_ratio = span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 1.0;
    q.launch_efficiency = span > 0 ? static_cast<double>(compute_.length()) / static_cast<double>(span) : 1.0;
    q.idle_host_wait_ms = static_cast<double>(host_wait_) / kMs;
    q.idle_kernel_wait_ms = static_cast<double>(kernel_wait_) / kMs;
    q.idle_other_ms = static_cast<double>(other_) / kMs;
    q.gaps = gaps_;
    q.avg_gap_ms = gaps_ ? q.idle_ms / static_cast<double>(gaps_) : 0;
  }

 private:
  // The window a kernel started in: the last one opened by then (kernels come in start order).
  std::size_t window_of(TimestampNs start, std::span<const TimeInterval> windows) {
    while (cursor_ + 1 < windows.size() && windows[cursor_ + 1].from_ns <= start) ++cursor_;
    return cursor_;
  }

  std::size_t count_ = 0, gaps_ = 0;
  std::size_t cursor_ = 0, window_ = 0;
  TimestampNs first_ = 0, last_ = 0, untraced_ = 0;
  IntervalUnion all_, compute_;
  TimestampNs host_wait_ = 0, kernel_wait_ = 0, other_ = 0;
};

// What a queue's kernels add up to, in any order: counts, launch-call figures, time per
// kernel name. A device's tally is the sum of its streams'.
struct Tally {
  explicit Tally(std::size_t names) : by_name(names) {}

  void add(const TraceKernel& k, const KernelValues& v) {
    ++count;
    durations.add(v.duration);
    if (v.delay != kNoLaunch) delays.add(v.delay);
    if (v.call != kNoLaunch) {
      ++with_launch_info;
      short_kernels += v.duration < v.call;
      calls.add(v.call);
    }
    Name& n = by_name[k.name];
    ++n.count;
    n.total_ns = saturating_add(n.total_ns, v.duration);
    n.max_ns = std::max(n.max_ns, v.duration);
  }
  void add(const Tally& other) {
    count += other.count;
    with_launch_info += other.with_launch_info;
    short_kernels += other.short_kernels;
    durations.add(other.durations);
    delays.add(other.delays);
    calls.add(other.calls);
    for (std::size_t i = 0; i < by_name.size(); ++i) {
      by_name[i].count += other.by_name[i].count;
      by_name[i].total_ns = saturating_add(by_name[i].total_ns, other.by_name[i].total_ns);
      by_name[i].max_ns = std::max(by_name[i].max_ns, other.by_name[i].max_ns);
    }
  }

  void finish(QueueTimeline& q, const KernelTrace& trace, const TimelineOptions& o) const {
    q.kernel_count = count;
    q.with_launch_info = with_launch_info;
    q.short_kernels = short_kernels;
    q.short_kernel_share =
        with_launch_info ? static_cast<double>(short_kernels) / static_cast<double>(with_launch_info) : 0;
    std::size_t longest = by_name.size();
    for (std::size_t name = 0; name < by_name.size(); ++name) {
      if (by_name[name].count == 0) continue;
      if (longest == by_name.size() || by_name[name].max_ns > by_name[longest].max_ns) longest = name;
      q.top_kernels.push_back({trace.names[name], by_name[name].count, static_cast<double>(by_name[name].total_ns) / kMs});
    }
    std::sort(q.top_kernels.begin(), q.top_kernels.end(),
              [](const TopKernel& a, const TopKernel& b) { return a.total_ms > b.total_ms; });
    if (q.top_kernels.size() > o.top_kernels) q.top_kernels.resize(o.top_kernels);
    if (longest < by_name.size()) q.longest_kernel = trace.names[longest];
  }

  std::size_t count = 0, with_launch_info = 0, short_kernels = 0;
  ValueSummary durations, delays, calls;
  struct Name {
    std::size_t count = 0;
    TimestampNs total_ns = 0, max_ns = 0;
  };
  std::vector<Name> by_name;
};

// A queue's figures from its union, tally and values.
void finish_queue(QueueTimeline& q, const BusyUnion& busy, const Tally& tally, const QueueValues& values,
                  const KernelTrace& trace, const TimelineOptions& o) {
  tally.finish(q, trace, o);
  busy.finish(q);
  q.launch_delay_ms = distribution_ns(values.delays, tally.delays);
  q.launch_overhead_ms = distribution_ns(values.overheads, tally.calls);
  q.kernel_ms = distribution_ns(values.durations, tally.durations);
}

}  // namespace

TracedWindows traced_windows(std::vector<TimeInterval> windows, TimestampNs from, TimestampNs to) {
  TracedWindows out;
  std::sort(windows.begin(), windows.end(), [](const TimeInterval& a, const TimeInterval& b) { return a.from_ns < b.from_ns; });
  for (TimeInterval w : windows) {
    w.from_ns = std::max(w.from_ns, from);
    w.to_ns = std::min(w.to_ns, to);
    if (w.to_ns <= w.from_ns) continue;
    if (!out.windows.empty() && w.from_ns <= out.windows.back().to_ns) {
      out.windows.back().to_ns = std::max(out.windows.back().to_ns, w.to_ns);
    } else {
      out.windows.push_back(w);
    }
  }
  for (const TimeInterval& w : out.windows) out.traced_ns += w.to_ns - w.from_ns;
  out.span_ns = std::max<TimestampNs>(0, to - from);
  if (out.span_ns > 0) out.fraction = static_cast<double>(out.traced_ns) / static_cast<double>(out.span_ns);
  return out;
}

bool is_compute_kernel(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  return !starts("nccl") && !starts("memcpy") && !starts("memset") && !starts("Memcpy") && !starts("Memset");
}

namespace {

// A stretch of the trace on one device and stream whose starts ascend: [begin, end) of
// trace.kernels. The database returns a stream's executions series by series, each in
// start order, so a device's kernels are a few such runs to merge rather than to sort.
struct Run {
  std::size_t begin = 0, end = 0;
};

// A device's runs are merged when they are few or long on average, else its start keys are
// sorted. Measured (bench/analysis_bench, 300,000 kernels): merging 64 to 4,688 runs of 64 or
// more took 18–32 ms against 26–41 ms sorted; shuffled, runs of about two, both ~38 ms.
constexpr std::size_t kMaxMergedRuns = 64;
constexpr std::size_t kMinMergedRunLength = 16;

constexpr std::size_t kPrefetchAhead = 8;

// Calls fn(kernel index) for the kernels of `runs` in start order by a k-way merge; equal
// starts in trace order (runs are in trace order and do not overlap in it).
template <typename Fn>
void merge_runs(const KernelTrace& trace, const std::vector<Run>& runs, Fn&& fn) {
  struct Head {
    TimestampNs start;
    std::uint32_t run;
    bool operator<(const Head& o) const { return start < o.start || (start == o.start && run < o.run); }
  };
  std::vector<std::size_t> next(runs.size());
  std::vector<Head> heap;  // a binary min-heap on (start, run)
  heap.reserve(runs.size());
  for (std::uint32_t r = 0; r < runs.size(); ++r) {
    next[r] = runs[r].begin;
    heap.push_back({trace.kernels[runs[r].begin].start_ns, r});
  }
  std::make_heap(heap.begin(), heap.end(), [](const Head& a, const Head& b) { return b < a; });
  while (!heap.empty()) {
    const std::uint32_t r = heap.front().run;
    fn(next[r]++);
    // Each run is read in order but the runs in turn, more streams of reads than the
    // hardware follows: ask for this run's lines a few kernels ahead.
    __builtin_prefetch(&trace.kernels[std::min(next[r] + kPrefetchAhead, runs[r].end - 1)]);
    if (next[r] == runs[r].end) {  // the run is spent: the last leaf takes its place
      heap.front() = heap.back();
      heap.pop_back();
      if (heap.empty()) break;
    } else {
      heap.front().start = trace.kernels[next[r]].start_ns;
    }
    // Sift the root down.
    std::size_t i = 0;
    const Head moving = heap[0];
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= heap.size()) break;
      if (c + 1 < heap.size() && heap[c + 1] < heap[c]) ++c;
      if (!(heap[c] < moving)) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = moving;
  }
}

// Start keys relative to the device's earliest start, with the execution's index.
struct StartKey {
  std::uint64_t key;
  std::size_t index;
};

// A stable LSD radix sort, 11 bits a pass over only the bits the keys span (3–4 passes for
// minutes of nanoseconds): for a device whose kernels come in too many short runs to merge.
void radix_sort(std::vector<StartKey>& items) {
  std::uint64_t span = 0;
  for (const StartKey& it : items) span |= it.key;
  constexpr int kBits = 11;
  constexpr std::uint64_t kMask = (std::uint64_t{1} << kBits) - 1;
  std::vector<std::size_t> count(kMask + 2);
  std::vector<StartKey> scratch(items.size());
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (const StartKey& it : items) ++count[((it.key >> shift) & kMask) + 1];
    for (std::size_t d = 1; d < count.size(); ++d) count[d] += count[d - 1];
    for (const StartKey& it : items) scratch[count[(it.key >> shift) & kMask]++] = it;
    items.swap(scratch);
  }
}

// Calls fn(kernel index) for every kernel of `runs` in start order, equal starts in trace order.
template <typename Fn>
void for_each_in_start_order(const KernelTrace& trace, const std::vector<Run>& runs, Fn&& fn) {
  TimestampNs lo = trace.kernels[runs.front().begin].start_ns;
  std::size_t n = 0;
  for (const Run& r : runs) {
    lo = std::min(lo, trace.kernels[r.begin].start_ns);  // a run's first start is its least
    n += r.end - r.begin;
  }
  if (runs.size() <= kMaxMergedRuns || n / runs.size() >= kMinMergedRunLength) return merge_runs(trace, runs, fn);
  std::vector<StartKey> keys;
  keys.reserve(n);
  for (const Run& r : runs) {
    for (std::size_t i = r.begin; i < r.end; ++i) {
      keys.push_back({static_cast<std::uint64_t>(trace.kernels[i].start_ns) - static_cast<std::uint64_t>(lo), i});
    }
  }
  radix_sort(keys);
  for (std::size_t j = 0; j < keys.size(); ++j) {
    __builtin_prefetch(&trace.kernels[keys[std::min(j + kPrefetchAhead, keys.size() - 1)].index]);
    fn(keys[j].index);
  }
}

}  // namespace

std::vector<QueueTimeline> analyze_timeline(const KernelTrace& trace, const TimelineOptions& o) {
  const std::size_t n_devices = trace.devices.size(), n_streams = trace.streams.size();
  std::vector<bool> compute(trace.names.size());
  for (std::size_t i = 0; i < trace.names.size(); ++i) compute[i] = is_compute_kernel(trace.names[i]);

  // One pass over the trace: each device's runs, and how many values each queue (device ×
  // stream) will give each distribution, so that they can be laid out without growing.
  std::vector<std::vector<Run>> runs(n_devices);
  struct ValueCounts {
    std::size_t durations = 0, delays = 0, overheads = 0;
    void add(const KernelValues& v) {
      ++durations;
      delays += v.delay != kNoLaunch;
      overheads += v.call != kNoLaunch;
    }
  };
  std::vector<ValueCounts> counts(n_devices * n_streams);
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
    const TraceKernel& k = trace.kernels[i];
    std::vector<Run>& mine = runs[k.device];
    const TraceKernel* prev = i > 0 ? &trace.kernels[i - 1] : nullptr;
    if (!mine.empty() && mine.back().end == i && prev->stream == k.stream && prev->start_ns <= k.start_ns) {
      ++mine.back().end;
    } else {
      mine.push_back({i, i + 1});
    }
    counts[static_cast<std::size_t>(k.device) * n_streams + k.stream].add(KernelValues(k));
  }

  // Devices and streams in name order.
  auto by_name = [](const std::vector<std::string>& names) {
    std::vector<std::uint32_t> idx(names.size());
    for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return names[a] < names[b]; });
    return idx;
  };
  const auto devices = by_name(trace.devices), streams = by_name(trace.streams);
  std::vector<QueueTimeline> device_rows, stream_rows;
  for (std::uint32_t d : devices) {
    if (runs[d].empty()) continue;
    // A device's values, stream after stream: a stream's distribution reads its part, the
    // device's the whole.
    std::vector<ValueCounts> begin(n_streams), at(n_streams);  // each stream's first and next slot
    ValueCounts total;
    for (std::size_t st = 0; st < n_streams; ++st) {
      const ValueCounts& c = counts[d * n_streams + st];
      begin[st] = at[st] = total;
      total.durations += c.durations;
      total.delays += c.delays;
      total.overheads += c.overheads;
    }
    std::vector<TimestampNs> durations(total.durations), delays(total.delays), overheads(total.overheads);

    // One walk in start order feeds the device's union and the kernel's stream's (a stream's
    // kernels in the device's start order are in its own); tallies are per stream.
    BusyUnion device;
    std::vector<BusyUnion> stream_busy(n_streams);
    std::vector<std::optional<Tally>> tallies(n_streams);
    for_each_in_start_order(trace, runs[d], [&](std::size_t i) {
      const TraceKernel& k = trace.kernels[i];
      const bool is_compute = compute[k.name];
      device.add(k, is_compute, o);
      stream_busy[k.stream].add(k, is_compute, o);
      auto& tally = tallies[k.stream];
      if (!tally) tally.emplace(trace.names.size());
      const KernelValues v(k);
      tally->add(k, v);
      ValueCounts& p = at[k.stream];
      durations[p.durations++] = v.duration;
      if (v.delay != kNoLaunch) delays[p.delays++] = v.delay;
      if (v.call != kNoLaunch) overheads[p.overheads++] = v.call;
    });

    Tally device_tally(trace.names.size());
    for (const auto& t : tallies) {
      if (t) device_tally.add(*t);
    }
    QueueTimeline q;
    q.device = trace.devices[d];
    finish_queue(q, device, device_tally, {durations, delays, overheads}, trace, o);
    device_rows.push_back(std::move(q));
    for (std::uint32_t st : streams) {
      if (!tallies[st]) continue;
      const ValueCounts& b = begin[st];
      const ValueCounts& e = at[st];
      auto part = [](const std::vector<TimestampNs>& v, std::size_t from, std::size_t to) {
        return std::span<const TimestampNs>(v.data() + from, to - from);
      };
      QueueTimeline s;
      s.device = trace.devices[d];
      s.stream = trace.streams[st].empty() ? "default" : trace.streams[st];
      finish_queue(s, stream_busy[st], *tallies[st],
                   {part(durations, b.durations, e.durations), part(delays, b.delays, e.delays),
                    part(overheads, b.overheads, e.overheads)},
                   trace, o);
      stream_rows.push_back(std::move(s));
    }
  }
  // One entry per device, then one per (device, stream).
  for (QueueTimeline& s : stream_rows) device_rows.push_back(std::move(s));
  return device_rows;
}

std::vector<CommandQueueStats> analyze_command_queues(const std::vector<CommandBufferEvent>& buffers) {
  std::map<std::pair<std::string, std::string>, std::vector<const CommandBufferEvent*>> by_queue;
  for (const auto& b : buffers) by_queue[{b.device, b.queue}].push_back(&b);
  std::vector<CommandQueueStats> out;
  for (auto& [key, bs] : by_queue) {
    CommandQueueStats s;
    s.device = key.first;
    s.queue = key.second;
    s.count = bs.size();
    std::sort(bs.begin(), bs.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    std::vector<double> latency, wait;
    TimestampNs first = bs.front()->submit_ns, last = 0;
    IntervalUnion busy;
    for (const CommandBufferEvent* b : bs) {
      latency.push_back(static_cast<double>(b->end_ns - b->submit_ns) / kMs);
      wait.push_back(static_cast<double>(b->start_ns - b->submit_ns) / kMs);
      first = std::min(first, b->submit_ns);
      last = std::max(last, b->end_ns);
      busy.add(b->start_ns, b->end_ns);
    }
    s.submit_to_complete_ms = distribution(std::move(latency));
    s.queue_wait_ms = distribution(std::move(wait));
    s.utilization = last > first ? static_cast<double>(busy.length()) / static_cast<double>(last - first) : 1.0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace perfscope::analysis
