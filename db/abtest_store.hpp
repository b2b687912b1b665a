// A/B test definitions: what two (or more) selections of samples to compare, kept so that a
// test can be re-evaluated as data arrives. The definition is opaque text here (the server
// stores its JSON); results are computed on demand, never stored.
//
// create_abtest() writes through the Writer's thread; AbTestReader is safe from any thread
// (pooled read connections) and blocks on SQLite.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/writer.hpp"

namespace perfscope::db {

class ConnectionPool;  // db/internal/connection_pool.hpp

struct AbTestRecord {
  std::int64_t id = 0;
  std::string name;
  std::string definition;
  TimestampNs created_ns = 0;
};

// Inserts a definition; `done` receives the new id once committed (on the writer thread).
void create_abtest(Writer& writer, std::string name, std::string definition, TimestampNs created_ns,
                   std::function<void(Result<std::int64_t>)> done);

class AbTestReader {
 public:
  explicit AbTestReader(std::string path);
  ~AbTestReader();
  AbTestReader(const AbTestReader&) = delete;
  AbTestReader& operator=(const AbTestReader&) = delete;
  // Newest first.
  Result<std::vector<AbTestRecord>> list(std::size_t limit) const;
  Result<std::optional<AbTestRecord>> get(std::int64_t id) const;

 private:
  std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace perfscope::db
