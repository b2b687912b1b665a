#include "engine/analysis/timeline.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "engine/analysis/stats.hpp"

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

// The same figures from integer nanoseconds (the timeline's own unit), with exact nearest-rank
// percentiles by integer_order_statistics: three of these per queue over every execution were
// most of a busy window's timeline time as doubles through nth_element.
Distribution distribution_ns(const std::vector<TimestampNs>& v) {
  Distribution d;
  if (v.empty()) return d;
  double sum = 0;
  TimestampNs max = v.front();
  for (TimestampNs x : v) {
    sum += static_cast<double>(x);
    max = std::max(max, x);
  }
  const std::size_t ranks[] = {nearest_rank_index(50, v.size()), nearest_rank_index(95, v.size())};
  const auto p = integer_order_statistics(v, ranks);
  d.count = v.size();
  d.mean = sum / static_cast<double>(v.size()) / kMs;
  d.p50 = static_cast<double>(p[0]) / kMs;
  d.p95 = static_cast<double>(p[1]) / kMs;
  d.max = static_cast<double>(max) / kMs;
  return d;
}

// Fills the timeline figures of one queue from its kernels, already sorted by start.
// compute[name]: whether kernels of that name count as compute.
void fill(QueueTimeline& q, const KernelTrace& trace, const std::vector<bool>& compute,
          const std::vector<const TraceKernel*>& ks, const TimelineOptions& o) {
  q.kernel_count = ks.size();
  if (ks.empty()) return;
  TimestampNs first = ks.front()->start_ns, last = 0;
  TimestampNs busy = 0, compute_busy = 0;
  TimestampNs group_start = ks.front()->start_ns, group_end = ks.front()->end_ns;
  TimestampNs cgroup_start = -1, cgroup_end = -1;
  TimestampNs host_wait = 0, kernel_wait = 0, other = 0;
  std::vector<TimestampNs> delays, overheads, durations;
  durations.reserve(ks.size());
  std::vector<TopKernel> by_name(trace.names.size());
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const TraceKernel& k = *ks[i];
    last = std::max(last, k.end_ns);
    if (i > 0) {
      if (k.start_ns > group_end) {  // a gap: the previous busy group has ended
        busy += group_end - group_start;
        const TimestampNs gap = k.start_ns - group_end;
        if (k.launch_start_ns != kNoLaunch && k.launch_start_ns > group_end) {
          host_wait += gap;
        } else if (gap <= o.kernel_wait_max_ns) {
          kernel_wait += gap;
        } else {
          other += gap;
        }
        ++q.gaps;
        group_start = k.start_ns;
        group_end = k.end_ns;
      } else {
        group_end = std::max(group_end, k.end_ns);
      }
    }
    if (compute[k.name]) {
      if (cgroup_end < 0 || k.start_ns > cgroup_end) {
        if (cgroup_end >= 0) compute_busy += cgroup_end - cgroup_start;
        cgroup_start = k.start_ns;
        cgroup_end = k.end_ns;
      } else {
        cgroup_end = std::max(cgroup_end, k.end_ns);
      }
    }
    const TimestampNs duration = k.end_ns - k.start_ns;
    durations.push_back(duration);
    if (k.launch_end_ns != kNoLaunch) delays.push_back(std::max<TimestampNs>(0, k.start_ns - k.launch_end_ns));
    if (k.launch_start_ns != kNoLaunch && k.launch_end_ns != kNoLaunch) {
      const TimestampNs call = k.launch_end_ns - k.launch_start_ns;
      overheads.push_back(call);
      ++q.with_launch_info;
      if (duration < call) ++q.short_kernels;
    }
    TopKernel& t = by_name[k.name];
    ++t.count;
    t.total_ms += static_cast<double>(duration) / kMs;
  }
  busy += group_end - group_start;
  if (cgroup_end >= 0) compute_busy += cgroup_end - cgroup_start;
  const TimestampNs span = last - first;
  q.span_ms = static_cast<double>(span) / kMs;
  q.busy_ms = static_cast<double>(busy) / kMs;
  q.idle_ms = static_cast<double>(span - busy) / kMs;
  q.busy_ratio = span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 1.0;
  q.launch_efficiency = span > 0 ? static_cast<double>(compute_busy) / static_cast<double>(span) : 1.0;
  q.idle_host_wait_ms = static_cast<double>(host_wait) / kMs;
  q.idle_kernel_wait_ms = static_cast<double>(kernel_wait) / kMs;
  q.idle_other_ms = static_cast<double>(other) / kMs;
  q.avg_gap_ms = q.gaps ? q.idle_ms / static_cast<double>(q.gaps) : 0;
  q.short_kernel_share = q.with_launch_info ? static_cast<double>(q.short_kernels) / static_cast<double>(q.with_launch_info) : 0;
  q.launch_delay_ms = distribution_ns(delays);
  q.launch_overhead_ms = distribution_ns(overheads);
  q.kernel_ms = distribution_ns(durations);
  for (std::size_t name = 0; name < by_name.size(); ++name) {
    if (by_name[name].count == 0) continue;
    by_name[name].name = trace.names[name];
    q.top_kernels.push_back(std::move(by_name[name]));
  }
  std::sort(q.top_kernels.begin(), q.top_kernels.end(),
            [](const TopKernel& a, const TopKernel& b) { return a.total_ms > b.total_ms; });
  if (q.top_kernels.size() > o.top_kernels) q.top_kernels.resize(o.top_kernels);
}

}  // namespace

bool is_compute_kernel(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  return !starts("nccl") && !starts("memcpy") && !starts("memset") && !starts("Memcpy") && !starts("Memset");
}

namespace {

// Executions in start order, per stream and per device.
struct Ordered {
  std::vector<std::vector<const TraceKernel*>> by_device;  // by device index
  std::vector<std::vector<const TraceKernel*>> by_stream;  // by device index × streams + stream index
};

// Start keys relative to the trace's earliest start, with the execution's index.
struct StartKey {
  std::uint64_t key;
  std::size_t index;
};

// A stable LSD radix sort, 11 bits a pass over only the bits the keys span (3–4 passes for
// minutes of nanoseconds): linear, where a comparison sort of a few hundred thousand
// executions was a tenth of the analysis document's time.
void radix_sort(std::vector<StartKey>& items, std::vector<StartKey>& scratch) {
  std::uint64_t span = 0;
  for (const StartKey& it : items) span |= it.key;
  constexpr int kBits = 11;
  constexpr std::uint64_t kMask = (std::uint64_t{1} << kBits) - 1;
  std::vector<std::size_t> count(kMask + 2);
  scratch.resize(items.size());
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (const StartKey& it : items) ++count[((it.key >> shift) & kMask) + 1];
    for (std::size_t d = 1; d < count.size(); ++d) count[d] += count[d - 1];
    for (const StartKey& it : items) scratch[count[(it.key >> shift) & kMask]++] = it;
    items.swap(scratch);
  }
}

// Sorts each stream on its own (a stream's keys fit in cache where the whole trace's do not),
// then merges a device's streams; a device with one stream takes its order as is. Equal
// starts keep the trace's order within a stream.
Ordered order_by_start(const KernelTrace& trace) {
  const std::size_t n_streams = trace.streams.size();
  Ordered out;
  out.by_device.resize(trace.devices.size());
  out.by_stream.resize(trace.devices.size() * n_streams);
  if (trace.kernels.empty()) return out;
  // One pass for the earliest start and each stream's size (the trace is read from memory,
  // not cache: passes over it are what this costs).
  TimestampNs lo = trace.kernels.front().start_ns;
  std::vector<std::vector<StartKey>> groups(out.by_stream.size());
  {
    std::vector<std::size_t> sizes(groups.size(), 0);
    for (const TraceKernel& k : trace.kernels) {
      lo = std::min(lo, k.start_ns);
      ++sizes[static_cast<std::size_t>(k.device) * n_streams + k.stream];
    }
    for (std::size_t g = 0; g < groups.size(); ++g) groups[g].reserve(sizes[g]);
  }
  for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
    const TraceKernel& k = trace.kernels[i];
    groups[static_cast<std::size_t>(k.device) * n_streams + k.stream].push_back(
        {static_cast<std::uint64_t>(k.start_ns) - static_cast<std::uint64_t>(lo), i});
  }
  std::vector<StartKey> scratch;
  for (std::size_t d = 0; d < trace.devices.size(); ++d) {
    std::vector<StartKey> merged;
    std::size_t streams_used = 0, single = 0;
    for (std::size_t st = 0; st < n_streams; ++st) {
      const std::size_t g = d * n_streams + st;
      if (groups[g].empty()) continue;
      radix_sort(groups[g], scratch);
      auto& list = out.by_stream[g];
      list.reserve(groups[g].size());
      for (const StartKey& it : groups[g]) list.push_back(&trace.kernels[it.index]);
      ++streams_used;
      single = g;
    }
    if (streams_used == 1) {
      out.by_device[d] = out.by_stream[single];
      continue;
    }
    for (std::size_t st = 0; st < n_streams; ++st) {
      const auto& g = groups[d * n_streams + st];
      if (g.empty()) continue;
      scratch.clear();
      std::merge(merged.begin(), merged.end(), g.begin(), g.end(), std::back_inserter(scratch),
                 [](const StartKey& a, const StartKey& b) { return a.key < b.key; });
      merged.swap(scratch);
    }
    out.by_device[d].reserve(merged.size());
    for (const StartKey& it : merged) out.by_device[d].push_back(&trace.kernels[it.index]);
  }
  return out;
}

}  // namespace

std::vector<QueueTimeline> analyze_timeline(const KernelTrace& trace, const TimelineOptions& o) {
  // Every queue takes its kernels in start order; kernels are grouped by index, not by name.
  const std::size_t n_streams = trace.streams.size();
  const Ordered ordered = order_by_start(trace);
  const auto& by_device = ordered.by_device;
  const auto& by_stream = ordered.by_stream;
  std::vector<bool> compute(trace.names.size());
  for (std::size_t i = 0; i < trace.names.size(); ++i) compute[i] = is_compute_kernel(trace.names[i]);
  // Devices and streams in name order.
  auto by_name = [](const std::vector<std::string>& names) {
    std::vector<std::uint32_t> idx(names.size());
    for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return names[a] < names[b]; });
    return idx;
  };
  const auto devices = by_name(trace.devices), streams = by_name(trace.streams);
  std::vector<QueueTimeline> out;
  for (std::uint32_t d : devices) {
    if (by_device[d].empty()) continue;
    QueueTimeline q;
    q.device = trace.devices[d];
    fill(q, trace, compute, by_device[d], o);
    out.push_back(std::move(q));
  }
  for (std::uint32_t d : devices) {
    for (std::uint32_t st : streams) {
      const auto& ks = by_stream[static_cast<std::size_t>(d) * n_streams + st];
      if (ks.empty()) continue;
      QueueTimeline q;
      q.device = trace.devices[d];
      q.stream = trace.streams[st].empty() ? "default" : trace.streams[st];
      fill(q, trace, compute, ks, o);
      out.push_back(std::move(q));
    }
  }
  return out;
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
    TimestampNs first = bs.front()->submit_ns, last = 0, busy = 0;
    TimestampNs gs = bs.front()->start_ns, ge = bs.front()->end_ns;
    for (const CommandBufferEvent* b : bs) {
      latency.push_back(static_cast<double>(b->end_ns - b->submit_ns) / kMs);
      wait.push_back(static_cast<double>(b->start_ns - b->submit_ns) / kMs);
      first = std::min(first, b->submit_ns);
      last = std::max(last, b->end_ns);
      if (b->start_ns > ge) {
        busy += ge - gs;
        gs = b->start_ns;
        ge = b->end_ns;
      } else {
        ge = std::max(ge, b->end_ns);
      }
    }
    busy += ge - gs;
    s.submit_to_complete_ms = distribution(std::move(latency));
    s.queue_wait_ms = distribution(std::move(wait));
    s.utilization = last > first ? static_cast<double>(busy) / static_cast<double>(last - first) : 1.0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace perfscope::analysis
