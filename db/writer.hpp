// Writer: the single writer of the database. Two kinds of work arrive from any thread:
//  - sampling passes (enqueue): fire and forget, committed every `commit_interval` or
//    `batch_rows` rows; when the queue is full the stalest pass is dropped and counted;
//  - event batches from producers (submit): each batch is written whole or not at all, and
//    its completion runs only after the COMMIT, so an acknowledged batch survives a crash of
//    the process. Batches that arrive while a commit runs share the next one (group commit).
// One background thread, one connection, cached prepared statements. stop() writes and
// commits everything still queued.
//
// Thread-safety: enqueue(), submit(), flush() and stats() from any thread; stop() from the
// owner only. Completions run on the writer thread and must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>

#include "engine/events/events.hpp"
#include "engine/events/memory_tracker.hpp"
#include "engine/series/series_store.hpp"

namespace perfscope::db {

class Connection;  // db/internal/sqlite.hpp

struct WriterOptions {
  std::size_t batch_rows = 1000;
  std::chrono::milliseconds commit_interval{1000};
  // Sampling passes queued at most; beyond it the oldest pass is dropped and counted.
  std::size_t max_queued_batches = 100000;
  // Events waiting for a commit at most; beyond it submit() refuses (back-pressure).
  std::size_t max_pending_events = 1'000'000;
  // Runs on the writer thread with each event batch once it is committed (before the
  // batch's completion): live aggregates that must count only what the database holds.
  std::function<void(const std::vector<Event>&)> on_committed;
};

struct WriterStats {
  std::uint64_t rows_written = 0;
  std::uint64_t events_written = 0;
  std::uint64_t commits = 0;
  std::uint64_t batches_dropped = 0;
  std::uint64_t write_errors = 0;
  std::string last_error;
};

class Writer {
 public:
  using Completion = std::function<void(const Status&)>;

  // Opens or creates the database at path and migrates it. The store supplies series keys
  // (and receives custom samples); the tracker is rebuilt from the stored memory events and
  // then kept current with every committed memory event.
  static Result<std::unique_ptr<Writer>> open(const std::string& path, SeriesStore& store, MemoryTracker& memory,
                                              WriterOptions options = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void enqueue(std::shared_ptr<const SampleBatch> batch);
  // Queues validated events; `done` runs once they are committed (ok) or rejected.
  void submit(std::vector<Event> events, Completion done);
  // Blocks until everything queued so far is committed (tests, shutdown).
  void flush();
  void stop();
  WriterStats stats() const;

 private:
  friend struct WriterTasks;  // db/internal/writer_tasks.hpp: run_task for db's own stores
  // Runs `task` on the writer thread in a transaction of its own (after the batch queued
  // with it commits); `done` gets its status after the commit or rollback. For rare writes
  // other than events (A/B test definitions, retention, GPU process records). db/'s own stores
  // write through it (db/internal/writer_tasks.hpp); callers use their functions.
  using Task = std::function<Status(Connection&)>;
  void run_task(Task task, Completion done);
  // From inside a task that changed stored sample chunks (retention): the open chunks the
  // writer holds start anew once the task is done, so none is written over what it changed.
  void reopen_sample_chunks() { reopen_samples_ = true; }
  struct EventBatch {
    std::vector<Event> events;
    Completion done;
  };
  struct TaskItem {
    Task task;
    Completion done;
  };
  using Item = std::variant<std::shared_ptr<const SampleBatch>, EventBatch, TaskItem>;
  struct Statements;

  Writer(std::unique_ptr<Connection> conn, std::unique_ptr<Statements> statements, SeriesStore& store, MemoryTracker& memory,
         WriterOptions options);
  void run();
  Status write(std::deque<Item>& items);
  void run_tasks(std::deque<Item>& items);
  // Frees, stamped at the run's end, of every allocation its processes still held.
  Status release_run_memory(const std::string& run, TimestampNs end_ns);
  Status write_event(Event& event);
  Result<std::int64_t> db_series_id(SeriesId id);
  Status rebuild_memory();

  std::unique_ptr<Connection> conn_;  // outlives st_, whose statements it prepared
  std::unique_ptr<Statements> st_;
  SeriesStore& store_;
  MemoryTracker& memory_;
  const WriterOptions options_;
  std::unordered_map<SeriesId, std::int64_t> db_ids_;  // writer thread only
  bool reopen_samples_ = false;                        // writer thread only

  mutable std::mutex mu_;
  std::condition_variable wake_, flushed_;
  std::deque<Item> queue_;           // guarded by mu_
  std::size_t queued_passes_ = 0;    // guarded by mu_
  std::size_t queued_rows_ = 0;      // guarded by mu_
  std::size_t pending_events_ = 0;   // guarded by mu_
  std::uint64_t enqueued_ = 0, written_ = 0;  // guarded by mu_ (item sequence numbers)
  bool stopping_ = false;            // guarded by mu_
  bool urgent_ = false;              // guarded by mu_: a flush or an event batch is waiting
  bool finished_ = false;            // guarded by mu_: the writer thread has returned
  WriterStats stats_;                // guarded by mu_
  std::thread thread_;
};

}  // namespace perfscope::db
