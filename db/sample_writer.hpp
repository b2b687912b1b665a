// SampleWriter: the single writer of the database. Sampling passes are queued from any
// thread and written by one background thread on its own connection, with cached prepared
// statements, in one transaction per wake-up (every `commit_interval` or `batch_rows` rows).
// stop() writes and commits everything still queued: nothing accepted is left behind.
//
// Thread-safety: enqueue() and stats() from any thread; stop() from the owner only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "db/sqlite.hpp"
#include "engine/series_store.hpp"

namespace perfscope::db {

struct WriterOptions {
  std::size_t batch_rows = 1000;
  std::chrono::milliseconds commit_interval{1000};
  // Passes queued at most; beyond it the oldest pass is dropped and counted.
  std::size_t max_queued_batches = 100000;
};

struct WriterStats {
  std::uint64_t rows_written = 0;
  std::uint64_t commits = 0;
  std::uint64_t batches_dropped = 0;
  std::uint64_t write_errors = 0;
  std::string last_error;
};

class SampleWriter {
 public:
  // Opens or creates the database at path and migrates it; the store supplies series keys.
  static Result<std::unique_ptr<SampleWriter>> open(const std::string& path, const SeriesStore& store,
                                                    WriterOptions options = {});
  ~SampleWriter();
  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;

  void enqueue(std::shared_ptr<const SampleBatch> batch);
  // Blocks until everything enqueued so far is committed (tests, shutdown).
  void flush();
  void stop();
  WriterStats stats() const;

 private:
  SampleWriter(Connection conn, Statement insert_series, Statement select_series, Statement insert_sample,
               const SeriesStore& store, WriterOptions options);
  void run();
  Status write(const std::deque<std::shared_ptr<const SampleBatch>>& batches);
  Result<std::int64_t> db_series_id(SeriesId id);

  Connection conn_;
  Statement insert_series_, select_series_, insert_sample_;
  const SeriesStore& store_;
  const WriterOptions options_;
  std::unordered_map<SeriesId, std::int64_t> db_ids_;  // writer thread only

  mutable std::mutex mu_;
  std::condition_variable wake_, flushed_;
  std::deque<std::shared_ptr<const SampleBatch>> queue_;  // guarded by mu_
  std::size_t queued_rows_ = 0;                            // guarded by mu_
  std::uint64_t enqueued_ = 0, written_ = 0;               // guarded by mu_ (batch sequence numbers)
  bool stopping_ = false;                                   // guarded by mu_
  bool flush_requested_ = false;                            // guarded by mu_
  WriterStats stats_;                                       // guarded by mu_
  std::thread thread_;
};

}  // namespace perfscope::db
