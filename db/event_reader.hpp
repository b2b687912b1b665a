// EventReader: every reader of producers' events over one pool of read connections — kernels
// (kernel_reader.hpp), inference requests and operators (inference_reader.hpp), memory events
// and command queues (device_event_reader.hpp), runs (run_reader.hpp) and stored GPU processes
// (gpu_process_store.hpp) — plus the rolled-up tiers of sampled series and the tables' sizes.
// The server holds one; a part that reads one subject may take that subject's reader alone.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite: call from worker
// threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/device_event_reader.hpp"
#include "db/event_scope.hpp"
#include "db/gpu_process_store.hpp"
#include "db/inference_reader.hpp"
#include "db/kernel_reader.hpp"
#include "db/rollup_answer.hpp"
#include "db/run_reader.hpp"
#include "db/time_range.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

class EventReader : public KernelReader,
                    public InferenceReader,
                    public MemoryEventReader,
                    public CommandQueueReader,
                    public RunReader,
                    public GpuProcessStoreReader {
 public:
  explicit EventReader(std::string path);
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // The rolled-up tiers of the samples of the given stored series (their database ids), for
  // percentiles over sampled series (the raw samples come from the series history).
  Result<std::optional<RollupAnswer>> series_rollup(const std::vector<std::int64_t>& series_ids,
                                                    const TimeRange& range) const;
  // How many rows each event table holds (for info and tests).
  Result<std::vector<std::pair<std::string, std::int64_t>>> table_counts() const;

 private:
  explicit EventReader(std::shared_ptr<ConnectionPool> pool);

  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
