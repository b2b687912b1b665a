// RunReader: runs as the database holds them (one row per name, merged from its reports by the
// writer; db/internal/run_store.hpp). Pooled read connections.
//
// Thread-safety: every method is safe from any thread. Blocks on SQLite.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/pooled_reader.hpp"
#include "engine/events/events.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

class RunReader : protected PooledReader {
 public:
  RunReader(const RunReader&) = delete;
  RunReader& operator=(const RunReader&) = delete;

  // Newest first by start, at most `limit`; one by name.
  Result<std::vector<RunEvent>> runs(std::size_t limit) const;
  Result<std::optional<RunEvent>> run(const std::string& name) const;

 protected:
  using PooledReader::PooledReader;  // a part of EventReader, over its pool
  ~RunReader() = default;

};

}  // namespace perfscope::db
