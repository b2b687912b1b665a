#include "db/internal/connection_pool.hpp"

#include <atomic>

#include "db/page_cache.hpp"

namespace perfscope::db {

namespace {

// Over every pool: the reading connections open, and what they held when last returned.
std::atomic<std::uint64_t> g_readers{0};
std::atomic<std::uint64_t> g_reader_bytes{0};

// What SQLite holds for one connection between queries: its page cache, its parsed schema
// and any statement not yet finalized (none, once a lease ends).
std::uint64_t memory_of(Connection& conn) {
  std::uint64_t total = 0;
  for (int op : {SQLITE_DBSTATUS_CACHE_USED, SQLITE_DBSTATUS_SCHEMA_USED, SQLITE_DBSTATUS_STMT_USED}) {
    int current = 0, highwater = 0;
    if (sqlite3_db_status(conn.handle(), op, &current, &highwater, 0) == SQLITE_OK && current > 0) {
      total += static_cast<std::uint64_t>(current);
    }
  }
  return total;
}

void forget(std::uint64_t memory_bytes) {
  g_readers.fetch_sub(1, std::memory_order_relaxed);
  g_reader_bytes.fetch_sub(memory_bytes, std::memory_order_relaxed);
}

}  // namespace

ConnectionPool::Lease::~Lease() {
  if (owner_) owner_->give_back(std::move(*conn_), memory_bytes_);
}

ConnectionPool::~ConnectionPool() {
  for (const Idle& idle : idle_) forget(idle.memory_bytes);
}

void ConnectionPool::give_back(Connection conn, std::uint64_t memory_bytes_before) const {
  const std::uint64_t now = memory_of(conn);
  {
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdle) {
      g_reader_bytes.fetch_add(now, std::memory_order_relaxed);
      g_reader_bytes.fetch_sub(memory_bytes_before, std::memory_order_relaxed);
      idle_.push_back({std::move(conn), now});
      return;
    }
  }
  forget(memory_bytes_before);  // more callers read at once than the pool keeps: this one closes
}

Result<ConnectionPool::Lease> ConnectionPool::lease() const {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      Idle idle = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(idle.conn), idle.memory_bytes);
    }
  }
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, Connection::open(path_, /*read_only=*/true));
  g_readers.fetch_add(1, std::memory_order_relaxed);
  return Lease(*this, std::move(conn), 0);
}

std::uint64_t reader_connections() { return g_readers.load(std::memory_order_relaxed); }
std::uint64_t reader_memory_bytes() { return g_reader_bytes.load(std::memory_order_relaxed); }
std::uint64_t reader_page_cache_limit_bytes() { return reader_connections() * kReaderPageCacheKiB * 1024; }

}  // namespace perfscope::db
