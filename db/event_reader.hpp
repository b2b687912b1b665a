// EventReader: read-only queries over producers' events — per-kernel summaries and records,
// per-model inference summaries, the kernel trace, the allocated-bytes timeline
// (event_reader.cpp); the distributions percentiles and A/B tests read, raw and rolled up
// (event_distributions.cpp). Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite: call from worker
// threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/operators.hpp"
#include "engine/analysis/roofline.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/events/events.hpp"
#include "engine/collectors/process_tracker.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

struct LaunchConfig {
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  std::optional<std::uint64_t> shared_mem_bytes;
  std::optional<std::uint32_t> registers_per_thread;
  std::uint64_t count = 0;
};

struct KernelSummary {
  std::string name;
  std::uint64_t count = 0;
  double total_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  std::vector<std::string> variants;
  std::vector<std::string> devices;
  std::vector<LaunchConfig> launch_configs;
  // Work reported with the executions (KernelEvent::flops/bytes/dtype): over all, per device,
  // and the data types its FLOPs were counted in.
  analysis::KernelWork work;
  std::map<std::string, analysis::KernelWork> work_by_device;
  std::vector<std::string> dtypes;
  double avg_ms() const { return count ? total_ms / static_cast<double>(count) : 0; }
};

struct InferenceSummary {
  std::string model;
  std::string version;
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t inferences = 0;  // requests weighted by batch size
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double mean_latency_ms = 0;
  TimestampNs first_ns = 0;
  TimestampNs last_ns = 0;
};

// Which events a read covers: one device (all when empty), one run (every run, and events of
// none, when empty; events carry their run as the tag run=NAME) and tags every event must
// carry (`tag.KEY=VALUE` in the API).
struct EventScope {
  EventScope() = default;
  explicit EventScope(std::string device_name) : device(std::move(device_name)) {}
  EventScope(std::string device_name, std::string run_name, Tags wanted = {})
      : device(std::move(device_name)), run(std::move(run_name)), tags(std::move(wanted)) {}
  std::string device;
  std::string run;
  Tags tags;
  bool by_tags() const { return !run.empty() || !tags.empty(); }
  // Every tag an event must carry: `tags` and, when set, run=NAME; sorted.
  Tags wanted_tags() const;
};

// One run's kernel executions (run empty: those of no run).
struct RunKernelTrace {
  std::string run;
  analysis::KernelTrace trace;
};

struct AllocatedPoint {
  TimestampNs ts_ns = 0;
  double bytes = 0;
};

// Which kernel executions a question is about. Empty fields match anything; `tags` must all
// be present on the execution.
struct KernelSelector {
  std::string name;
  std::string variant;
  std::string device;
  std::string stream;
  Tags tags;
};

// Which operator executions: an op type or a node name (`op`), of one model and provider;
// empty fields match anything; `tags` (run included) must all be present.
struct OperatorSelector {
  std::string op;
  std::string model;
  std::string provider;
  Tags tags;
};

struct InferenceSelector {
  std::string model;
  std::string version;  // empty: every version
  Tags tags = {};  // tags every request must carry (run included); with any, no rollups: tiers know no tags
};

// The per-request latencies of inference events. TPOT is derived per request:
// (latency − ttft) / (output_tokens − 1), requests with ≤ 1 output token or no ttft left out.
enum class InferenceField { kLatency, kTtft, kTpot, kQueue, kCompute };
// The API's names of the fields ("latency_ms", "ttft_ms", …), which the rollups use too.
std::string_view to_string(InferenceField field);
std::optional<InferenceField> inference_field_from(std::string_view name);

class EventReader {
 public:
  explicit EventReader(std::string path);
  ~EventReader();
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // One row per kernel name in the range (by end time), longest total time first.
  Result<std::vector<KernelSummary>> kernel_summaries(const TimeRange& range, const EventScope& scope) const;
  // The newest records of one kernel, newest first.
  Result<std::vector<KernelEvent>> kernel_records(const std::string& name, const TimeRange& range, std::size_t limit,
                                                  const EventScope& scope = {}) const;
  Result<std::vector<InferenceSummary>> inference_summaries(const TimeRange& range, const EventScope& scope = {}) const;

  // Every kernel execution ending in the range, for the timeline: all together, or one trace
  // per run (in run name order, those of no run first), so no run's span holds another's.
  Result<analysis::KernelTrace> kernel_trace(const TimeRange& range, const EventScope& scope) const;
  Result<std::vector<RunKernelTrace>> kernel_traces_by_run(const TimeRange& range, const EventScope& scope) const;
  // Every kernel execution ending in the range with its series' attributes (variant, launch
  // configuration, tags), chunk by chunk — not in time order. For exports.
  Status for_each_kernel(const TimeRange& range, const EventScope& scope,
                         const std::function<void(const KernelEvent&)>& fn) const;
  // Memory events in the range, in arrival order (frees carry the size of their allocation
  // only in the live tracker; here a free's size is 0). For exports.
  Status for_each_memory_event(const TimeRange& range, const std::function<void(const MemoryEvent&)>& fn,
                               const EventScope& scope = {}) const;
  // Whole events in the range (by end time or completion time), for the analysis document.
  Result<std::vector<CommandBufferEvent>> command_buffers(const TimeRange& range, const EventScope& scope) const;
  Result<std::vector<InferenceEvent>> inference_events(const TimeRange& range, const EventScope& scope = {}) const;
  // Operator executions in the range (by their time) that `which` names.
  Result<std::vector<analysis::OperatorExecution>> operator_executions(const OperatorSelector& which,
                                                                      const TimeRange& range) const;
  // Bytes allocated after each memory event in the range (running sum from the start of
  // the record), at most max_points points keeping each bucket's maximum.
  Result<std::vector<AllocatedPoint>> allocated_timeline(const TimeRange& range, const EventScope& scope,
                                                         std::size_t max_points) const;

  // Distributions (event_distributions.cpp).
  // Raw values for percentiles and comparisons, in milliseconds, in no particular order.
  Result<std::vector<double>> kernel_durations_ms(const KernelSelector& selector, const TimeRange& range) const;
  Result<std::vector<double>> inference_values_ms(const InferenceSelector& selector, InferenceField field,
                                                  const TimeRange& range) const;
  // Submit → complete (end_ns − submit_ns) of command buffers on a queue (all queues if empty).
  Result<std::vector<double>> command_buffer_latencies_ms(const std::string& queue, const std::string& device,
                                                          const TimeRange& range) const;
  // The rolled-up part of the same distributions, from the histogram tiers that retention
  // writes (rollups.hpp): whole tier buckets overlapping the range merged; nullopt when none
  // does. Add the raw values above to it for the answer over the whole range.
  Result<std::optional<RollupAnswer>> kernel_rollup(const KernelSelector& selector, const TimeRange& range) const;
  Result<std::optional<RollupAnswer>> inference_rollup(const InferenceSelector& selector, InferenceField field,
                                                       const TimeRange& range) const;
  Result<std::optional<RollupAnswer>> command_buffer_rollup(const std::string& queue, const std::string& device,
                                                            const TimeRange& range) const;
  // Of the samples of the given stored series (their database ids).
  Result<std::optional<RollupAnswer>> series_rollup(const std::vector<std::int64_t>& series_ids,
                                                    const TimeRange& range) const;

  // Runs (run_store.cpp): newest first by start, at most `limit`; one by name.
  Result<std::vector<RunEvent>> runs(std::size_t limit) const;
  Result<std::optional<RunEvent>> run(const std::string& name) const;
  // Stored lifetime records of GPU processes overlapping a window (gpu_process_store.cpp).
  // `key` non-empty: only that process's records (one per GPU it ran on).
  Result<std::vector<GpuProcessRecord>> gpu_processes(TimestampNs from_ns, TimestampNs to_ns, std::size_t limit,
                                                      const std::string& key = {}) const;

  // How many rows each event table holds (for info and tests).
  Result<std::vector<std::pair<std::string, std::int64_t>>> table_counts() const;

 private:
  Result<std::vector<RunKernelTrace>> kernel_traces(const TimeRange& range, const EventScope& scope, bool by_run) const;

  std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
