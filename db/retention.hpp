// Retention: raw rows older than a maximum age — or the oldest ones, while the database is
// over its maximum size — are rolled up into the histogram tiers (internal/rollups.hpp) and deleted in
// the same transaction, so every value is either raw or rolled up, never lost half-way; old
// tier rows are dropped once their bucket has aged; freed pages go back to the filesystem by
// incremental vacuum. What is retired:
//  - kernel chunks wholly older than the cutoff, samples, inference requests, command buffers:
//    into rollups, then deleted (the samples of scraped histograms' buckets: deleted only);
//  - operator events: deleted (no percentile reads them);
//  - memory events: an allocation and its free once both are older than the cutoff (a free
//    with no allocation too). Live allocations stay, so current memory and leak suspects
//    still add up after retention.
// By age, each tier row goes once its bucket is wholly past the cutoff (for size: whole days),
// and GPU processes' lifetime records that ended before the same cutoff with them.
//
// retention_step() (db/internal/retention_steps.hpp) runs inside the caller's transaction (the
// writer's thread). RetentionTask schedules it on the writer: start()/stop()/stats() from any
// thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "engine/base/status.hpp"
#include "engine/base/clock.hpp"

namespace perfscope::db {

class Writer;

struct RetentionPolicy {
  std::int64_t raw_max_age_ns = 0;     // 0: raw rows kept (unless the size limit needs room)
  std::int64_t rollup_max_age_ns = 0;  // 0: rollups kept (unless the size limit needs room)
  std::uint64_t max_bytes = 0;         // 0: no size limit; else pages in use × page size
  std::int64_t step_ns = 600'000'000'000;     // the most raw time one transaction retires
  std::int64_t keep_raw_ns = 600'000'000'000;  // the size limit never retires newer raw rows
  bool enabled() const { return raw_max_age_ns > 0 || rollup_max_age_ns > 0 || max_bytes > 0; }
};

struct RetentionResult {
  TimestampNs raw_before_ns = 0;      // raw rows older than this are retired (0: none yet)
  TimestampNs rollups_before_ns = 0;  // rollups older than this are dropped (0: none yet)
  std::uint64_t values_rolled_up = 0;
  std::uint64_t raw_rows_deleted = 0;
  std::uint64_t rollup_rows_written = 0;
  std::uint64_t rollup_rows_deleted = 0;
  std::uint64_t bytes_used = 0;  // after the step
  bool more = false;             // another step has work now
  bool over_size = false;        // over the size limit with nothing left that may go
};

struct RetentionStats {
  std::uint64_t runs = 0;    // steps committed
  std::uint64_t errors = 0;
  std::string last_error;
  RetentionResult last;      // of the last committed step
  TimestampNs last_run_ns = 0;
};

// Runs retention_step on the writer every `interval` (steps back to back while one reports
// more work). Stop it before the writer.
class RetentionTask {
 public:
  RetentionTask(Writer& writer, RetentionPolicy policy, std::chrono::milliseconds interval);
  ~RetentionTask();
  RetentionTask(const RetentionTask&) = delete;
  RetentionTask& operator=(const RetentionTask&) = delete;

  void start();
  void stop();
  RetentionStats stats() const;
  const RetentionPolicy& policy() const { return policy_; }

 private:
  void run();
  bool step();  // true when another step should follow at once

  Writer& writer_;
  const RetentionPolicy policy_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  RetentionStats stats_;   // guarded by mu_
  std::thread thread_;
};

}  // namespace perfscope::db
