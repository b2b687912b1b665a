// ConnectionPool: read-only connections to one database file, handed out one per caller and
// returned when the lease ends, so concurrent queries do not serialize on one connection.
// Memory: each connection keeps a page cache of at most 16 MiB (db/sqlite.cpp). The pool
// opens as many connections as callers read at once and keeps at most kMaxIdle of them
// between leases; the rest close as they come back. What the open connections hold is
// counted for /api/v1/info (db/page_cache.hpp), measured as each lease ends.
// Thread-safety: lease() is safe from any thread; a Lease belongs to one thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/internal/sqlite.hpp"

namespace perfscope::db {

class ConnectionPool {
 public:
  // Two request workers and the scrape and rollup threads read at once in a busy server.
  static constexpr std::size_t kMaxIdle = 4;

  class Lease {
   public:
    Lease(const ConnectionPool& owner, Connection conn, std::uint64_t memory_bytes)
        : owner_(&owner), conn_(std::move(conn)), memory_bytes_(memory_bytes) {}
    Lease(Lease&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), conn_(std::move(other.conn_)), memory_bytes_(other.memory_bytes_) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() { return *conn_; }
    Connection* operator->() { return &*conn_; }

   private:
    const ConnectionPool* owner_;
    std::optional<Connection> conn_;
    std::uint64_t memory_bytes_;  // what the connection held when it was last returned
  };

  explicit ConnectionPool(std::string path) : path_(std::move(path)) {}
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;
  ~ConnectionPool();
  Result<Lease> lease() const;
  const std::string& path() const { return path_; }

 private:
  struct Idle {
    Connection conn;
    std::uint64_t memory_bytes;
  };
  void give_back(Connection conn, std::uint64_t memory_bytes_before) const;

  std::string path_;
  mutable std::mutex mu_;
  mutable std::vector<Idle> idle_;  // guarded by mu_
};

}  // namespace perfscope::db
