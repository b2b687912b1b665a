// The kernel timeline as the dashboard draws it: per device and stream, the executions of a
// window, with the idle gap before each and its cause — raw, one by one, when the window holds
// few enough to draw, else summed into equal time buckets (the level of detail a pixel column
// can show: busy time, executions, the kernel that took most of it, idle time waiting for the
// host and other idle time, launch-call time). Zooming in asks again and gets raw executions.
//
// Gap causes follow the timeline analysis (timeline.hpp): a gap before a kernel is host_wait
// when its launch call began after the earlier work ended, kernel_wait when it is at most
// `kernel_wait_max_ns`, other otherwise. Here gaps are per stream, the track drawn.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/analysis/operators.hpp"
#include "engine/analysis/timeline.hpp"

namespace perfscope::analysis {

enum class GapCause : std::uint8_t { kNone = 0, kHostWait = 1, kKernelWait = 2, kOther = 3 };

// The cause of an idle gap of `gap_ns` (> 0) that ends where kernel `k` starts.
GapCause gap_cause(const TraceKernel& k, TimestampNs gap_ns, TimestampNs kernel_wait_max_ns);

struct TimelineViewOptions {
  TimestampNs from_ns = 0;
  TimestampNs to_ns = 0;          // > from_ns
  std::size_t buckets = 1000;     // when aggregated: the window in this many equal buckets
  std::size_t max_raw = 20'000;   // raw when the window holds at most this many executions
  TimestampNs kernel_wait_max_ns = 1'000;
};

// One execution drawn, with the gap on its stream before it (0 and kNone for the first).
struct TimelineEvent {
  TimestampNs start_ns = 0, end_ns = 0;
  TimestampNs launch_start_ns = kNoLaunch, launch_end_ns = kNoLaunch;
  TimestampNs gap_ns = 0;
  std::uint32_t name = 0;  // into KernelTrace::names
  GapCause gap = GapCause::kNone;
};

// A track summed into buckets of the view's bucket_ns from from_ns: times clipped to each
// bucket; `count` counts executions by the bucket they start in; `top` is the name with the
// most time in the bucket (-1 where none ran).
struct TimelineBuckets {
  std::vector<TimestampNs> busy_ns, host_wait_ns, other_idle_ns, launch_ns;
  std::vector<std::uint32_t> count;
  std::vector<std::int64_t> top;
};

struct TimelineTrack {
  std::uint32_t device = 0, stream = 0;  // into KernelTrace::devices / streams
  std::size_t count = 0;                 // executions overlapping the window
  TimestampNs busy_ns = 0, host_wait_ns = 0, other_idle_ns = 0;  // within the window
  std::vector<TimelineEvent> events;     // raw: in start order
  TimelineBuckets buckets;               // aggregated
};

struct TimelineView {
  bool raw = true;
  TimestampNs bucket_ns = 0;  // aggregated only
  std::size_t events = 0;     // executions overlapping the window, every track
  std::vector<TimelineTrack> tracks;  // devices, then streams, in name order
};

// The executions of `trace` that overlap [from_ns, to_ns].
TimelineView timeline_view(const KernelTrace& trace, const TimelineViewOptions& options);

// The host's operators (an imported trace's CPU ops, ONNX Runtime's nodes) as one track beside
// the kernels: each execution is [ts_ns − duration, ts_ns] (an operator's time is its
// completion). Raw when at most max_raw overlap the window, else summed into the same buckets
// as the kernels: busy time clipped to each bucket (overlapping operators count once per
// nanosecond they overlap, so nested ops can exceed the bucket; the drawing caps it) and how
// many start in it.
struct OperatorSlice {
  TimestampNs start_ns = 0, end_ns = 0;
  std::uint32_t name = 0;      // into OperatorTrack::names ("op_type" or the node's name)
  std::uint32_t provider = 0;  // into OperatorTrack::providers
};
struct OperatorTrack {
  bool raw = true;
  TimestampNs bucket_ns = 0;  // aggregated only
  std::size_t count = 0;      // operators overlapping the window
  std::vector<std::string> names, providers;
  std::vector<OperatorSlice> slices;  // raw: in start order
  std::vector<TimestampNs> busy_ns;   // aggregated
  std::vector<std::uint32_t> started;
};
OperatorTrack operator_track(std::span<const OperatorExecution> operators, const TimelineViewOptions& options);

}  // namespace perfscope::analysis
