// GPU processes on disk: one row per (GPU UUID, process key) holding the tracker's sums
// (schema step 7). store_gpu_processes() merges records into their rows on the writer's
// thread, so the parts of one process written before and after a restart add up;
// GpuProcessStoreReader reads the rows a window overlaps (pooled read connections).
//
// Thread-safety: store_gpu_processes() from any thread, `done` running on the writer's thread;
// the reader's methods from any thread (they block on SQLite).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "db/writer.hpp"
#include "db/pooled_reader.hpp"
#include "engine/collectors/process_tracker.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

// Queues the records' merge as one transaction of the writer; `done` gets its status.
void store_gpu_processes(Writer& writer, std::vector<GpuProcessRecord> records, Writer::Completion done);

class GpuProcessStoreReader : protected PooledReader {
 public:
  GpuProcessStoreReader(const GpuProcessStoreReader&) = delete;
  GpuProcessStoreReader& operator=(const GpuProcessStoreReader&) = delete;

  // Stored lifetime records of GPU processes overlapping a window, newest last seen first.
  // `key` non-empty: only that process's records (one per GPU it ran on).
  Result<std::vector<GpuProcessRecord>> gpu_processes(TimestampNs from_ns, TimestampNs to_ns, std::size_t limit,
                                                      const std::string& key = {}) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~GpuProcessStoreReader() = default;

};

}  // namespace perfscope::db
