// KernelReader: kernel executions as the database holds them — per-name summaries, one
// kernel's newest records, the trace of a window for the timeline (all together or per run),
// every execution for exports, and the durations and rolled-up tiers percentiles and A/B tests
// read. Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite: call from worker
// threads.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/event_scope.hpp"
#include "db/pooled_reader.hpp"
#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/analysis/roofline.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/events/events.hpp"

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

// One run's kernel executions (run empty: those of no run).
struct RunKernelTrace {
  std::string run;
  analysis::KernelTrace trace;
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

class KernelReader : protected PooledReader {
 public:
  KernelReader(const KernelReader&) = delete;
  KernelReader& operator=(const KernelReader&) = delete;

  // One row per kernel name in the range (by end time), longest total time first.
  Result<std::vector<KernelSummary>> kernel_summaries(const TimeRange& range, const EventScope& scope) const;
  // The newest records of one kernel, newest first.
  Result<std::vector<KernelEvent>> kernel_records(const std::string& name, const TimeRange& range, std::size_t limit,
                                                  const EventScope& scope = {}) const;
  // Every kernel execution ending in the range, for the timeline: all together, or one trace
  // per run (in run name order, those of no run first), so no run's span holds another's.
  Result<analysis::KernelTrace> kernel_trace(const TimeRange& range, const EventScope& scope) const;
  Result<std::vector<RunKernelTrace>> kernel_traces_by_run(const TimeRange& range, const EventScope& scope) const;
  // Every kernel execution ending in the range with its series' attributes (variant, launch
  // configuration, tags), chunk by chunk — not in time order. For exports.
  Status for_each_kernel(const TimeRange& range, const EventScope& scope,
                         const std::function<void(const KernelEvent&)>& fn) const;
  // Durations in milliseconds for percentiles and comparisons, in no particular order, and the
  // rolled-up part of the same distribution (whole tier buckets overlapping the range merged;
  // nullopt when none does): add the raw values to it for the answer over the whole range.
  Result<std::vector<double>> kernel_durations_ms(const KernelSelector& selector, const TimeRange& range) const;
  Result<std::optional<RollupAnswer>> kernel_rollup(const KernelSelector& selector, const TimeRange& range) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~KernelReader() = default;

 private:
  Result<std::vector<RunKernelTrace>> kernel_traces(const TimeRange& range, const EventScope& scope, bool by_run) const;
};

}  // namespace perfscope::db
