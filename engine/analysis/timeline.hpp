// Kernel timeline and command-queue analysis over a window of executions, per device and per
// stream (Holistic Trace Analysis definitions):
// - busy = length of the union of kernel intervals; span = last end − first start;
//   busy_ratio = busy / span; idle = span − busy.
// - idle breakdown: each gap before a kernel is host_wait when that kernel's launch call
//   began after the previous work ended (the GPU waited for the host), kernel_wait when the
//   gap is at most `kernel_wait_max_ns` (back-to-back launches), other otherwise.
// - launch delay = kernel start − launch call end, clipped at 0; launch overhead = the launch
//   call's duration; a short kernel runs for less time than its launch call took.
// - launch efficiency = union of compute-kernel intervals / span (communication kernels,
//   names starting "nccl", and memcpy/memset are not compute); target > 0.7.
// - duty-cycled tracing (windows given): the span is the time traced, so the gap between two
//   kernels of different windows is untraced time, neither idle nor a gap.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/events/events.hpp"

namespace perfscope::analysis {

// A launch time that was not recorded (a plain value, not std::optional: a busy window holds
// hundreds of thousands of these, and 48 bytes each instead of 64 is less to walk).
inline constexpr TimestampNs kNoLaunch = INT64_MIN;

struct TraceKernel {
  TimestampNs start_ns = 0;
  TimestampNs end_ns = 0;
  TimestampNs launch_start_ns = kNoLaunch;
  TimestampNs launch_end_ns = kNoLaunch;
  std::uint32_t name = 0;    // index into KernelTrace::names
  std::uint32_t device = 0;  // index into KernelTrace::devices
  std::uint32_t stream = 0;  // index into KernelTrace::streams
};

// Executions in any order. Fastest when each stream's come in few long stretches of
// ascending start, as the database returns them (series by series): those are merged, not
// sorted. Executions on one device with equal starts are taken in trace order.
struct KernelTrace {
  std::vector<std::string> names, devices, streams;
  std::vector<TraceKernel> kernels;
};

struct TimeInterval {
  TimestampNs from_ns = 0;
  TimestampNs to_ns = 0;
};

// A duty-cycled trace's windows, merged and clipped to [from, to], and the share of
// [from, to] they cover (1 when [from, to] is empty).
struct TracedWindows {
  std::vector<TimeInterval> windows;
  TimestampNs traced_ns = 0;
  TimestampNs span_ns = 0;  // to − from
  double fraction = 1;
};
TracedWindows traced_windows(std::vector<TimeInterval> windows, TimestampNs from, TimestampNs to);

struct TimelineOptions {
  TimestampNs kernel_wait_max_ns = 1'000;  // gaps up to 1 µs count as back-to-back
  std::size_t top_kernels = 5;
  std::span<const TimeInterval> windows;   // sorted, disjoint; empty: traced throughout
};

struct Distribution {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0;  // ms; nearest rank
};

struct TopKernel {
  std::string name;
  std::size_t count = 0;
  double total_ms = 0;
};

// The launch efficiency (busy time over span) a queue should reach: below it, the GPU waits on
// launches more than it computes (the launch-bound rule's busy ratio).
inline constexpr double kLaunchEfficiencyTarget = 0.7;

struct QueueTimeline {
  std::string device;
  std::string stream;  // empty: the whole device
  std::size_t kernel_count = 0;
  double span_ms = 0, busy_ms = 0, busy_ratio = 0, idle_ms = 0;
  double idle_host_wait_ms = 0, idle_kernel_wait_ms = 0, idle_other_ms = 0;
  std::size_t gaps = 0;
  double avg_gap_ms = 0;
  double launch_efficiency = 0;
  std::size_t short_kernels = 0;   // among kernels with a known launch call
  std::size_t with_launch_info = 0;
  double short_kernel_share = 0;
  Distribution launch_delay_ms, launch_overhead_ms, kernel_ms;
  std::vector<TopKernel> top_kernels;
  std::string longest_kernel;  // the name of the longest execution (kernel_ms.max)
};

// One entry per device (stream empty), then one per (device, stream); devices in name order.
std::vector<QueueTimeline> analyze_timeline(const KernelTrace& trace, const TimelineOptions& options = {});

struct CommandQueueStats {
  std::string device, queue;
  std::size_t count = 0;
  Distribution submit_to_complete_ms;  // end − submit
  Distribution queue_wait_ms;          // start − submit
  double utilization = 0;              // union of [start, end] / span
};
std::vector<CommandQueueStats> analyze_command_queues(const std::vector<CommandBufferEvent>& buffers);

bool is_compute_kernel(std::string_view name);

}  // namespace perfscope::analysis
