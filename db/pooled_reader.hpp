// What every subject reader of EventReader (kernels, inference, memory, command queues, runs,
// stored GPU processes) shares: the pool of read connections it leases one from per query.
// Subject readers are parts of EventReader (event_reader.hpp), built over its pool.
//
// Thread-safety: as the pool's, safe from any thread.
#pragma once

#include <memory>
#include <utility>

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

class PooledReader {
 protected:
  explicit PooledReader(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}
  ~PooledReader() = default;

  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
