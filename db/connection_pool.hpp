// ConnectionPool: read-only connections to one database file, handed out one per caller and
// returned when the lease ends, so concurrent queries do not serialize on one connection.
// Thread-safety: lease() is safe from any thread; a Lease belongs to one thread.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/sqlite.hpp"

namespace perfscope::db {

class ConnectionPool {
 public:
  class Lease {
   public:
    Lease(const ConnectionPool& owner, Connection conn) : owner_(&owner), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), conn_(std::move(other.conn_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() { return *conn_; }
    Connection* operator->() { return &*conn_; }

   private:
    const ConnectionPool* owner_;
    std::optional<Connection> conn_;
  };

  explicit ConnectionPool(std::string path) : path_(std::move(path)) {}
  Result<Lease> lease() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  mutable std::mutex mu_;
  mutable std::vector<Connection> idle_;  // guarded by mu_
};

}  // namespace perfscope::db
