#include "engine/analysis/timeline_view.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace perfscope::analysis {

GapCause gap_cause(const TraceKernel& k, TimestampNs gap_ns, TimestampNs kernel_wait_max_ns) {
  // The GPU waited for the host when the launch call began after the earlier work ended.
  if (k.launch_start_ns != kNoLaunch && k.launch_start_ns > k.start_ns - gap_ns) return GapCause::kHostWait;
  if (gap_ns <= kernel_wait_max_ns) return GapCause::kKernelWait;
  return GapCause::kOther;
}

namespace {

// Adds the part of [from, to) inside the window to the buckets it covers.
class BucketAdder {
 public:
  BucketAdder(TimestampNs origin, TimestampNs bucket_ns, std::size_t buckets)
      : origin_(origin), bucket_ns_(bucket_ns), buckets_(buckets) {}

  template <typename Fn>  // fn(bucket, nanoseconds in it)
  void spread(TimestampNs from, TimestampNs to, Fn&& fn) const {
    from = std::max(from, origin_);
    to = std::min(to, origin_ + bucket_ns_ * static_cast<TimestampNs>(buckets_));
    if (to <= from) return;
    std::size_t b = bucket_of(from);
    while (from < to) {
      const TimestampNs bucket_end = origin_ + bucket_ns_ * static_cast<TimestampNs>(b + 1);
      const TimestampNs part_end = std::min(to, bucket_end);
      fn(b, part_end - from);
      from = part_end;
      ++b;
    }
  }
  std::size_t bucket_of(TimestampNs t) const {
    const TimestampNs off = std::max<TimestampNs>(0, t - origin_);
    return std::min(buckets_ - 1, static_cast<std::size_t>(off / bucket_ns_));
  }

 private:
  TimestampNs origin_, bucket_ns_;
  std::size_t buckets_;
};

// Of [a, b), the length inside [lo, hi).
TimestampNs clipped(TimestampNs a, TimestampNs b, TimestampNs lo, TimestampNs hi) {
  return std::max<TimestampNs>(0, std::min(b, hi) - std::max(a, lo));
}

}  // namespace

TimelineView timeline_view(const KernelTrace& trace, const TimelineViewOptions& o) {
  TimelineView view;
  const TimestampNs from = o.from_ns, to = std::max(o.to_ns, o.from_ns + 1);
  // Each (device, stream)'s executions in start order (equal starts in trace order).
  const std::size_t n_streams = std::max<std::size_t>(1, trace.streams.size());
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> by_queue;
  for (std::uint32_t i = 0; i < trace.kernels.size(); ++i) {
    const TraceKernel& k = trace.kernels[i];
    by_queue[static_cast<std::size_t>(k.device) * n_streams + k.stream].push_back(i);
  }
  std::vector<std::size_t> queues;
  for (auto& [q, idx] : by_queue) {
    auto earlier = [&](std::uint32_t a, std::uint32_t b) {
      return trace.kernels[a].start_ns < trace.kernels[b].start_ns ||
             (trace.kernels[a].start_ns == trace.kernels[b].start_ns && a < b);
    };
    if (!std::is_sorted(idx.begin(), idx.end(), earlier)) std::sort(idx.begin(), idx.end(), earlier);
    queues.push_back(q);
  }
  std::sort(queues.begin(), queues.end(), [&](std::size_t a, std::size_t b) {
    const auto& da = trace.devices[a / n_streams];
    const auto& db = trace.devices[b / n_streams];
    if (da != db) return da < db;
    return trace.streams[a % n_streams] < trace.streams[b % n_streams];
  });

  // How many overlap the window decides raw or aggregated.
  auto overlaps = [&](const TraceKernel& k) { return k.end_ns >= from && k.start_ns <= to; };
  for (const TraceKernel& k : trace.kernels) view.events += overlaps(k);
  view.raw = view.events <= o.max_raw;
  const std::size_t n_buckets = std::max<std::size_t>(1, o.buckets);
  view.bucket_ns = view.raw ? 0 : std::max<TimestampNs>(1, (to - from + static_cast<TimestampNs>(n_buckets) - 1) /
                                                                static_cast<TimestampNs>(n_buckets));
  const BucketAdder adder(from, std::max<TimestampNs>(1, view.bucket_ns), n_buckets);

  for (std::size_t q : queues) {
    const std::vector<std::uint32_t>& idx = by_queue[q];
    TimelineTrack track;
    track.device = static_cast<std::uint32_t>(q / n_streams);
    track.stream = static_cast<std::uint32_t>(q % n_streams);
    TimelineBuckets& b = track.buckets;
    std::unordered_map<std::uint64_t, TimestampNs> time_by_bucket_name;
    if (!view.raw) {
      for (auto* v : {&b.busy_ns, &b.host_wait_ns, &b.other_idle_ns, &b.launch_ns}) v->assign(n_buckets, 0);
      b.count.assign(n_buckets, 0);
      b.top.assign(n_buckets, -1);
    }
    bool any = false;
    TimestampNs last_end = 0;  // of the work before, on this stream
    for (std::uint32_t i : idx) {
      const TraceKernel& k = trace.kernels[i];
      TimestampNs gap = 0;
      GapCause cause = GapCause::kNone;
      if (any && k.start_ns > last_end) {
        gap = k.start_ns - last_end;
        cause = gap_cause(k, gap, o.kernel_wait_max_ns);
      }
      const TimestampNs gap_from = k.start_ns - gap;
      last_end = any ? std::max(last_end, k.end_ns) : k.end_ns;
      any = true;
      const TimestampNs gap_in = clipped(gap_from, k.start_ns, from, to);
      (cause == GapCause::kHostWait ? track.host_wait_ns : track.other_idle_ns) += gap_in;
      if (!view.raw && gap_in > 0) {  // a gap may reach into the window from a kernel after it
        auto& idle = cause == GapCause::kHostWait ? b.host_wait_ns : b.other_idle_ns;
        adder.spread(gap_from, k.start_ns, [&](std::size_t bucket, TimestampNs ns) { idle[bucket] += ns; });
      }
      if (!overlaps(k)) continue;
      ++track.count;
      // Kernels of one stream follow one another, so their time within the window is at most the
      // window: held there as it is summed (overlapping records, which a producer can send, would
      // otherwise sum past it, and thousands of week-long ones past 64 bits).
      track.busy_ns = std::min(track.busy_ns + clipped(k.start_ns, k.end_ns, from, to), to - from);
      if (view.raw) {
        track.events.push_back({k.start_ns, k.end_ns, k.launch_start_ns, k.launch_end_ns, gap, k.name, cause});
        continue;
      }
      ++b.count[adder.bucket_of(k.start_ns)];
      adder.spread(k.start_ns, k.end_ns, [&](std::size_t bucket, TimestampNs ns) {
        b.busy_ns[bucket] = std::min(b.busy_ns[bucket] + ns, view.bucket_ns);  // as the track's, per bucket
        time_by_bucket_name[(static_cast<std::uint64_t>(bucket) << 32) | k.name] += ns;
      });
      if (k.launch_start_ns != kNoLaunch && k.launch_end_ns != kNoLaunch) {
        adder.spread(k.launch_start_ns, k.launch_end_ns,
                     [&](std::size_t bucket, TimestampNs ns) { b.launch_ns[bucket] += ns; });
      }
    }
    if (track.count == 0) continue;
    if (!view.raw) {
      std::vector<TimestampNs> top_time(n_buckets, 0);
      for (const auto& [key, ns] : time_by_bucket_name) {
        const std::size_t bucket = key >> 32;
        const auto name = static_cast<std::int64_t>(key & 0xffffffffu);
        // The most time, ties to the lower name index, so the answer never depends on hashing.
        if (ns > top_time[bucket] || (ns == top_time[bucket] && name < b.top[bucket])) {
          top_time[bucket] = ns;
          b.top[bucket] = name;
        }
      }
      // Executions of one stream do not overlap, but reported ones may: never over the bucket.
      for (auto& ns : b.busy_ns) ns = std::min(ns, view.bucket_ns);
    }
    view.tracks.push_back(std::move(track));
  }
  return view;
}

OperatorTrack operator_track(std::span<const OperatorExecution> operators, const TimelineViewOptions& o) {
  OperatorTrack track;
  const TimestampNs from = o.from_ns, to = std::max(o.to_ns, o.from_ns + 1);
  std::vector<OperatorSlice> slices;
  std::unordered_map<std::string, std::uint32_t> names, providers;
  auto index = [](std::unordered_map<std::string, std::uint32_t>& ids, std::vector<std::string>& list,
                  const std::string& text) {
    auto [it, fresh] = ids.try_emplace(text, static_cast<std::uint32_t>(list.size()));
    if (fresh) list.push_back(text);
    return it->second;
  };
  for (const OperatorExecution& op : operators) {
    const TimestampNs start = operator_start_ns(op);
    if (op.ts_ns < from || start > to) continue;
    slices.push_back({start, op.ts_ns, index(names, track.names, op.op_type.empty() ? op.name : op.op_type),
                      index(providers, track.providers, op.provider)});
  }
  std::sort(slices.begin(), slices.end(), [](const OperatorSlice& a, const OperatorSlice& b) {
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns > b.end_ns);
  });
  track.count = slices.size();
  track.raw = slices.size() <= o.max_raw;
  if (track.raw) {
    track.slices = std::move(slices);
    return track;
  }
  const std::size_t n_buckets = std::max<std::size_t>(1, o.buckets);
  track.bucket_ns = std::max<TimestampNs>(1, (to - from + static_cast<TimestampNs>(n_buckets) - 1) /
                                                 static_cast<TimestampNs>(n_buckets));
  const BucketAdder adder(from, track.bucket_ns, n_buckets);
  track.busy_ns.assign(n_buckets, 0);
  track.started.assign(n_buckets, 0);
  for (const OperatorSlice& s : slices) {
    adder.spread(s.start_ns, s.end_ns, [&](std::size_t b, TimestampNs ns) { track.busy_ns[b] += ns; });
    if (s.start_ns >= from) ++track.started[adder.bucket_of(s.start_ns)];
  }
  return track;
}

}  // namespace perfscope::analysis
