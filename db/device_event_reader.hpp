// MemoryEventReader and CommandQueueReader: what producers reported of device memory and of
// command queues — memory events for exports and the allocated-bytes timeline; command buffers
// for the analysis, and their submit-to-complete latencies and rolled-up tiers for percentiles.
// Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite: call from worker
// threads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/event_scope.hpp"
#include "db/pooled_reader.hpp"
#include "db/rollup_answer.hpp"
#include "db/time_range.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

struct AllocatedPoint {
  TimestampNs ts_ns = 0;
  double bytes = 0;
};

class MemoryEventReader : protected PooledReader {
 public:
  MemoryEventReader(const MemoryEventReader&) = delete;
  MemoryEventReader& operator=(const MemoryEventReader&) = delete;

  // Memory events in the range, in arrival order (frees carry the size of their allocation
  // only in the live tracker; here a free's size is 0). For exports.
  Status for_each_memory_event(const TimeRange& range, const std::function<void(const MemoryEvent&)>& fn,
                               const EventScope& scope = {}) const;
  // Bytes allocated after each memory event in the range (running sum from the start of
  // the record), at most max_points points keeping each bucket's maximum.
  Result<std::vector<AllocatedPoint>> allocated_timeline(const TimeRange& range, const EventScope& scope,
                                                         std::size_t max_points) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~MemoryEventReader() = default;

};

class CommandQueueReader : protected PooledReader {
 public:
  CommandQueueReader(const CommandQueueReader&) = delete;
  CommandQueueReader& operator=(const CommandQueueReader&) = delete;

  // Whole command buffers in the range (by end time), for the analysis document.
  Result<std::vector<CommandBufferEvent>> command_buffers(const TimeRange& range, const EventScope& scope) const;
  // Submit → complete (end_ns − submit_ns) of command buffers on a queue (all queues if empty),
  // in milliseconds, and the rolled-up part of the same distribution.
  Result<std::vector<double>> command_buffer_latencies_ms(const std::string& queue, const std::string& device,
                                                          const TimeRange& range) const;
  Result<std::optional<RollupAnswer>> command_buffer_rollup(const std::string& queue, const std::string& device,
                                                            const TimeRange& range) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~CommandQueueReader() = default;

};

}  // namespace perfscope::db
