#include "db/connection_pool.hpp"

namespace perfscope::db {

ConnectionPool::Lease::~Lease() {
  if (!owner_) return;
  std::lock_guard lock(owner_->mu_);
  owner_->idle_.push_back(std::move(*conn_));
}

Result<ConnectionPool::Lease> ConnectionPool::lease() const {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      Connection conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(conn));
    }
  }
  auto conn = Connection::open(path_, /*read_only=*/true);
  if (!conn.ok()) return conn.status();
  return Lease(*this, std::move(*conn));
}

}  // namespace perfscope::db
