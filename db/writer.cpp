#include "db/writer.hpp"
#include "engine/base/thread_name.hpp"

#include <cmath>

#include "db/internal/kernel_chunks.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/run_store.hpp"
#include "db/internal/sample_chunks.hpp"
#include "db/internal/sqlite.hpp"
#include "db/internal/migrations.hpp"

namespace perfscope::db {

struct Writer::Statements {
  Statement insert_series, select_series;
  Statement memory, command_buffer, inference, op;
  std::unique_ptr<KernelChunkWriter> kernels;
  std::unique_ptr<SampleChunkWriter> samples;
  // Retention's cutoff, read at the start of each write: a custom sample older than it arrives
  // after its stretch was rolled up, so it goes into the rollups at once (late_samples) rather
  // than raw. Readers take samples before the cutoff from the rollups only (memory keeps them
  // too); raw there, it would be counted nowhere until the next retention step.
  Statement retired_before;
  TimestampNs raw_before_ns = 0;
  RollupAccumulator late_samples;
};

Result<std::unique_ptr<Writer>> Writer::open(const std::string& path, SeriesStore& store, MemoryTracker& memory,
                                             WriterOptions options) {
  if (Status s = check_database_file(path); !s.ok()) return s;
  PERFSCOPE_ASSIGN_OR_RETURN(auto conn, Connection::open(path));
  if (Status s = migrate(conn); !s.ok()) return s.with_context(path);
  auto prepare = [&](const char* sql, Statement& out) -> Status {
    auto st = conn.prepare(sql);
    if (!st.ok()) return st.status();
    out = std::move(*st);
    return Status();
  };
  auto st = std::make_unique<Statements>();
  const std::pair<const char*, Statement*> sql[] = {
      {"INSERT INTO series(name, labels, unit, type, help) VALUES(?1, ?2, ?3, ?4, ?5) "
       "ON CONFLICT(name, labels) DO UPDATE SET unit = excluded.unit, type = excluded.type, help = excluded.help",
       &st->insert_series},
      {"SELECT id FROM series WHERE name = ?1 AND labels = ?2", &st->select_series},
      {"SELECT raw_before_ns FROM retention WHERE id = 1", &st->retired_before},
      {"INSERT INTO memory_events(op, address, size_bytes, kind, tag, device, ts_ns, tags) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
       &st->memory},
      {"INSERT INTO command_buffers(buffer_id, queue, device, enqueue_ns, submit_ns, start_ns, end_ns, tags) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
       &st->command_buffer},
      {"INSERT INTO inference(model, version, ts_ns, latency_ms, queue_ms, compute_ms, batch_size, ok, ttft_ms, "
       "input_tokens, output_tokens, tags) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
       &st->inference},
      {"INSERT INTO operators(op_type, name, provider, duration_ms, model, input_shapes, ts_ns, tags) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
       &st->op},
  };
  for (const auto& [text, out] : sql) {
    if (Status s = prepare(text, *out); !s.ok()) return s;
  }
  auto kernels = KernelChunkWriter::prepare(conn);
  if (!kernels.ok()) return kernels.status();
  st->kernels = std::move(*kernels);
  std::unique_ptr<Writer> writer(new Writer(std::make_unique<Connection>(std::move(conn)), std::move(st), store, memory, options));
  // On the writer's own connection: the chunk writer keeps it (to read stored chunks back).
  auto samples = SampleChunkWriter::prepare(*writer->conn_);
  if (!samples.ok()) return samples.status();
  writer->st_->samples = std::move(*samples);
  if (Status s = writer->rebuild_memory(); !s.ok()) return s;
  writer->thread_ = std::thread([w = writer.get()] { w->run(); });
  return writer;
}

Writer::Writer(std::unique_ptr<Connection> conn, std::unique_ptr<Statements> statements, SeriesStore& store, MemoryTracker& memory,
               WriterOptions options)
    : conn_(std::move(conn)), st_(std::move(statements)), store_(store), memory_(memory), options_(options) {}

Writer::~Writer() { stop(); }

Status Writer::rebuild_memory() {
  memory_.clear();
  auto stmt = conn_->prepare((std::string("SELECT ") + kMemoryEventColumns + " FROM memory_events ORDER BY id").c_str());
  if (!stmt.ok()) return stmt.status();
  return stmt->for_each_row([&](Statement& r) {
    MemoryEvent e = read_memory_event(r);
    memory_.apply(e);
  });
}

void Writer::enqueue(std::shared_ptr<const SampleBatch> batch) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (queued_passes_ >= options_.max_queued_batches) {
      // Drop the stalest sampling pass; event batches are never dropped.
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if (auto* pass = std::get_if<std::shared_ptr<const SampleBatch>>(&*it)) {
          queued_rows_ -= (*pass)->values.size();
          queue_.erase(it);
          --queued_passes_;
          ++stats_.batches_dropped;
          ++written_;  // it will never be written; keep flush() from waiting on it
          break;
        }
      }
    }
    queued_rows_ += batch->values.size();
    ++queued_passes_;
    queue_.emplace_back(std::move(batch));
    ++enqueued_;
    if (queued_rows_ < options_.batch_rows) return;
  }
  wake_.notify_one();
}

void Writer::submit(std::vector<Event> events, Completion done) {
  {
    std::unique_lock lock(mu_);
    if (stopping_) {
      lock.unlock();
      done(Status::unavailable("the server is shutting down"));
      return;
    }
    if (pending_events_ + events.size() > options_.max_pending_events) {
      lock.unlock();
      done(Status::unavailable("too many events waiting to be written; retry later"));
      return;
    }
    pending_events_ += events.size();
    queued_rows_ += events.size();
    queue_.emplace_back(EventBatch{std::move(events), std::move(done)});
    ++enqueued_;
    urgent_ = true;  // a producer is waiting for its acknowledgement
  }
  wake_.notify_one();
}

void Writer::run_task(Task task, Completion done) {
  {
    std::unique_lock lock(mu_);
    if (stopping_) {
      lock.unlock();
      done(Status::unavailable("the server is shutting down"));
      return;
    }
    queue_.emplace_back(TaskItem{std::move(task), std::move(done)});
    ++enqueued_;
    urgent_ = true;
  }
  wake_.notify_one();
}

void Writer::run_tasks(std::deque<Item>& items) {
  for (Item& item : items) {
    auto* t = std::get_if<TaskItem>(&item);
    if (!t) continue;
    Transaction tx(*conn_);
    Status s = tx.begin_status();
    if (s.ok()) s = t->task(*conn_);
    if (s.ok()) s = tx.commit();
    if (reopen_samples_) {
      st_->samples->reset();
      reopen_samples_ = false;
    }
    t->done(s);  // a failed task rolls back as the transaction goes out of scope
  }
}

void Writer::flush() {
  std::unique_lock lock(mu_);
  std::uint64_t target = enqueued_;
  urgent_ = true;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return written_ >= target || finished_; });
}

void Writer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  flushed_.notify_all();
}

WriterStats Writer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Writer::run() {
  name_this_thread("ps-db-writer");
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, options_.commit_interval,
                   [&] { return stopping_ || urgent_ || queued_rows_ >= options_.batch_rows; });
    urgent_ = false;
    std::deque<Item> work;
    work.swap(queue_);
    std::size_t rows = queued_rows_;
    std::size_t events = pending_events_;
    queued_rows_ = 0;
    queued_passes_ = 0;
    pending_events_ = 0;
    std::uint64_t taken = enqueued_;
    bool stop_now = stopping_;
    lock.unlock();

    Status s = work.empty() ? Status() : write(work);
    if (!s.ok()) {
      db_ids_.clear();  // rolled back: series rows inserted in that transaction are gone
      st_->kernels->reset();
      st_->samples->reset();
      (void)rebuild_memory();  // and so are its memory events
    }
    for (Item& item : work) {
      auto* batch = std::get_if<EventBatch>(&item);
      if (!batch) continue;
      if (s.ok() && options_.on_committed) options_.on_committed(batch->events);
      batch->done(s);
    }
    run_tasks(work);

    lock.lock();
    if (!work.empty()) {
      if (s.ok()) {
        stats_.rows_written += rows;
        stats_.events_written += events;
        ++stats_.commits;
      } else {
        ++stats_.write_errors;
        stats_.last_error = s.message();
      }
    }
    written_ = taken;
    if (stop_now && queue_.empty()) {
      finished_ = true;  // nothing will be written any more: release flush() callers
      flushed_.notify_all();
      return;
    }
    flushed_.notify_all();
  }
}

Result<std::int64_t> Writer::db_series_id(SeriesId id) {
  if (auto it = db_ids_.find(id); it != db_ids_.end()) return it->second;
  auto snap = store_.snapshot(id);
  if (!snap) return Status::internal("unknown series id");
  std::string labels = format_labels(snap->key.labels);
  auto family = store_.family(snap->key.name).value_or(MetricFamily{snap->key.name, "", MetricType::kGauge, ""});
  if (Status s = st_->insert_series.bind(1, snap->key.name).bind(2, labels).bind(3, family.unit)
                     .bind(4, to_string(family.type)).bind(5, family.help).run();
      !s.ok()) {
    return s;
  }
  st_->select_series.bind(1, snap->key.name).bind(2, labels);
  auto row = st_->select_series.step();
  std::int64_t db_id = row.ok() && *row ? st_->select_series.column_int64(0) : -1;
  st_->select_series.reset();
  if (db_id < 0) return Status::internal("series row missing after insert");
  db_ids_.emplace(id, db_id);
  return db_id;
}

Status Writer::write_event(Event& event) {
  return std::visit(
      [&](auto& e) -> Status {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, KernelEvent>) {
          return st_->kernels->add(e);
        } else if constexpr (std::is_same_v<T, MemoryEvent>) {
          memory_.apply(e);  // resolves a free's size from its allocation
          return st_->memory.bind(1, to_string(e.op)).bind(2, e.address).bind(3, static_cast<std::int64_t>(e.size_bytes))
              .bind(4, to_string(e.kind)).bind(5, e.tag).bind(6, e.device).bind(7, e.ts_ns)
              .bind(8, format_labels(e.tags)).run();
        } else if constexpr (std::is_same_v<T, CommandBufferEvent>) {
          return st_->command_buffer.bind(1, e.id).bind(2, e.queue).bind(3, e.device).bind(4, e.enqueue_ns)
              .bind(5, e.submit_ns).bind(6, e.start_ns).bind(7, e.end_ns).bind(8, format_labels(e.tags)).run();
        } else if constexpr (std::is_same_v<T, InferenceEvent>) {
          Statement& s = st_->inference;
          s.bind(1, e.model).bind(2, e.version).bind(3, e.ts_ns).bind(4, e.latency_ms);
          s.bind_optional(5, e.queue_ms);
          s.bind_optional(6, e.compute_ms);
          s.bind(7, static_cast<std::int64_t>(e.batch_size)).bind(8, static_cast<std::int64_t>(e.ok ? 1 : 0));
          s.bind_optional(9, e.ttft_ms);
          s.bind_optional(10, e.input_tokens);
          s.bind_optional(11, e.output_tokens);
          const std::string tags = format_labels(e.tags);
          s.bind(12, tags);
          return s.run();
        } else if constexpr (std::is_same_v<T, OperatorEvent>) {
          return st_->op.bind(1, e.op_type).bind(2, e.name).bind(3, e.provider).bind(4, e.duration_ms).bind(5, e.model)
              .bind(6, format_shapes(e.input_shapes)).bind(7, e.ts_ns).bind(8, format_labels(e.tags)).run();
        } else if constexpr (std::is_same_v<T, RunEvent>) {
          if (Status s = write_run(*conn_, e); !s.ok()) return s;
          return e.end_ns ? release_run_memory(e.name, *e.end_ns) : Status();
        } else {
          SeriesId id = store_.intern(SeriesKey(e.metric, e.labels));
          store_.append(id, e.ts_ns, e.value);
          PERFSCOPE_ASSIGN_OR_RETURN(auto db_id, db_series_id(id));
          if (e.ts_ns < st_->raw_before_ns) {
            st_->late_samples.add(rollup_source::kSeries, std::to_string(db_id), "", e.ts_ns, e.value);
            return Status();
          }
          return st_->samples->add_sample(db_id, e.ts_ns, e.value);
        }
      },
      event);
}

Status Writer::release_run_memory(const std::string& run, TimestampNs end_ns) {
  // Its processes have exited: what they still held was released then. Written as frees, so
  // the database's timeline, exports and a restart's rebuild all agree with the tracker.
  for (const LiveAllocation& a : memory_.live_of_run(run)) {
    MemoryEvent release{MemoryOp::kFree, a.address, 0, a.kind, a.tag, a.device, std::max(end_ns, a.ts_ns), {}};
    if (!a.process.empty()) release.tags.emplace_back("pid", a.process);  // keeps the tags sorted
    release.tags.emplace_back("released", "process_exit");
    release.tags.emplace_back("run", a.run);
    Event free = std::move(release);
    if (Status s = write_event(free); !s.ok()) return s;
  }
  return Status();
}

Status Writer::write(std::deque<Item>& items) {
  Transaction tx(*conn_);
  if (!tx.begin_status().ok()) return tx.begin_status();
  {
    PERFSCOPE_ASSIGN_OR_RETURN(auto row, st_->retired_before.step());
    st_->raw_before_ns = row ? st_->retired_before.column_int64(0) : 0;
    st_->retired_before.reset();
  }
  st_->late_samples = RollupAccumulator();
  for (Item& item : items) {
    if (auto* pass = std::get_if<std::shared_ptr<const SampleBatch>>(&item)) {
      if (Status s = st_->samples->begin_pass((*pass)->ts_ns); !s.ok()) return s;
      for (const auto& [id, value] : (*pass)->values) {
        // A collector reading that is not a number (a GPU counter before its first interval)
        // is no sample: the series simply has none at this pass.
        if (!std::isfinite(value)) continue;
        PERFSCOPE_ASSIGN_OR_RETURN(auto db_id, db_series_id(id));
        if (Status s = st_->samples->add_pass_sample(db_id, value); !s.ok()) return s;
      }
    } else if (auto* batch = std::get_if<EventBatch>(&item)) {
      for (Event& e : batch->events) {
        if (Status s = write_event(e); !s.ok()) return s;
      }
    }
  }
  if (Status s = st_->kernels->flush(); !s.ok()) return s;
  if (Status s = st_->samples->flush(); !s.ok()) return s;
  if (st_->late_samples.minutes() > 0) {
    if (auto written = st_->late_samples.write(*conn_); !written.ok()) return written.status();
  }
  return tx.commit();
}

}  // namespace perfscope::db
