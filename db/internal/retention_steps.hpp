// Retention's steps on a connection, inside the caller's transaction (the writer's thread):
// what RetentionTask (db/retention.hpp) runs, and what tests and benchmarks call directly.
#pragma once

#include <cstdint>

#include "db/internal/sqlite.hpp"
#include "db/retention.hpp"

namespace perfscope::db {

// Pages in use × page size: what the file shrinks to after incremental vacuum.
Result<std::uint64_t> database_bytes_used(Connection& conn);
// Rolls up and deletes every raw row older than cutoff (see above); adds to `result`.
Status retire_raw_before(Connection& conn, TimestampNs cutoff, RetentionResult& result);
// One bounded step of the policy at time `now`, inside the caller's transaction.
Result<RetentionResult> retention_step(Connection& conn, const RetentionPolicy& policy, TimestampNs now);

}  // namespace perfscope::db
