// RunReader: runs as the database holds them (one row per name, merged from its reports by the
// writer; db/internal/run_store.hpp). Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/events/events.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

class RunReader {
 public:
  explicit RunReader(std::shared_ptr<ConnectionPool> pool);

  // Newest first by start, at most `limit`; one by name.
  Result<std::vector<RunEvent>> runs(std::size_t limit) const;
  Result<std::optional<RunEvent>> run(const std::string& name) const;

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
