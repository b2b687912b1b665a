#include "db/sample_writer.hpp"

#include "db/schema.hpp"

namespace perfscope::db {

Result<std::unique_ptr<SampleWriter>> SampleWriter::open(const std::string& path, const SeriesStore& store,
                                                         WriterOptions options) {
  auto conn = Connection::open(path);
  if (!conn.ok()) return conn.status();
  if (Status s = migrate(*conn); !s.ok()) return s;
  auto insert_series = conn->prepare(
      "INSERT INTO series(name, labels, unit, type, help) VALUES(?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT(name, labels) DO UPDATE SET unit = excluded.unit, type = excluded.type, help = excluded.help");
  if (!insert_series.ok()) return insert_series.status();
  auto select_series = conn->prepare("SELECT id FROM series WHERE name = ?1 AND labels = ?2");
  if (!select_series.ok()) return select_series.status();
  auto insert_sample = conn->prepare("INSERT OR REPLACE INTO samples(series_id, ts_ns, value) VALUES(?1, ?2, ?3)");
  if (!insert_sample.ok()) return insert_sample.status();
  return std::unique_ptr<SampleWriter>(new SampleWriter(std::move(*conn), std::move(*insert_series),
                                                        std::move(*select_series), std::move(*insert_sample),
                                                        store, options));
}

SampleWriter::SampleWriter(Connection conn, Statement insert_series, Statement select_series,
                           Statement insert_sample, const SeriesStore& store, WriterOptions options)
    : conn_(std::move(conn)),
      insert_series_(std::move(insert_series)),
      select_series_(std::move(select_series)),
      insert_sample_(std::move(insert_sample)),
      store_(store),
      options_(options) {
  thread_ = std::thread([this] { run(); });
}

SampleWriter::~SampleWriter() { stop(); }

void SampleWriter::enqueue(std::shared_ptr<const SampleBatch> batch) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (queue_.size() >= options_.max_queued_batches) {
      queued_rows_ -= queue_.front()->values.size();
      queue_.pop_front();
      ++stats_.batches_dropped;
      ++written_;  // the dropped pass will never be written; keep flush() from waiting on it
    }
    queued_rows_ += batch->values.size();
    queue_.push_back(std::move(batch));
    ++enqueued_;
    if (queued_rows_ < options_.batch_rows) return;
  }
  wake_.notify_one();
}

void SampleWriter::flush() {
  std::unique_lock lock(mu_);
  std::uint64_t target = enqueued_;
  flush_requested_ = true;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return written_ >= target || !thread_.joinable(); });
}

void SampleWriter::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  flushed_.notify_all();
}

WriterStats SampleWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void SampleWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, options_.commit_interval,
                   [&] { return stopping_ || flush_requested_ || queued_rows_ >= options_.batch_rows; });
    flush_requested_ = false;
    std::deque<std::shared_ptr<const SampleBatch>> work;
    work.swap(queue_);
    std::size_t rows = queued_rows_;
    queued_rows_ = 0;
    std::uint64_t taken = enqueued_;
    bool stop_now = stopping_;
    lock.unlock();

    Status s = work.empty() ? Status() : write(work);
    if (!s.ok()) db_ids_.clear();  // rolled back: series rows inserted in that transaction are gone

    lock.lock();
    if (!work.empty()) {
      if (s.ok()) {
        stats_.rows_written += rows;
        ++stats_.commits;
      } else {
        ++stats_.write_errors;
        stats_.last_error = s.message();
      }
    }
    written_ = taken;
    flushed_.notify_all();
    if (stop_now) return;
  }
}

Result<std::int64_t> SampleWriter::db_series_id(SeriesId id) {
  if (auto it = db_ids_.find(id); it != db_ids_.end()) return it->second;
  auto snap = store_.snapshot(id);
  if (!snap) return Status::internal("unknown series id");
  std::string labels = format_labels(snap->key.labels);
  auto family = store_.family(snap->key.name).value_or(MetricFamily{snap->key.name, "", MetricType::kGauge, ""});
  if (Status s = insert_series_.bind(1, snap->key.name).bind(2, labels).bind(3, family.unit)
                     .bind(4, to_string(family.type)).bind(5, family.help).run();
      !s.ok()) {
    return s;
  }
  select_series_.bind(1, snap->key.name).bind(2, labels);
  auto row = select_series_.step();
  std::int64_t db_id = row.ok() && *row ? select_series_.column_int64(0) : -1;
  select_series_.reset();
  if (db_id < 0) return Status::internal("series row missing after insert");
  db_ids_.emplace(id, db_id);
  return db_id;
}

Status SampleWriter::write(const std::deque<std::shared_ptr<const SampleBatch>>& batches) {
  Transaction tx(conn_);
  if (!tx.begin_status().ok()) return tx.begin_status();
  for (const auto& batch : batches) {
    for (const auto& [id, value] : batch->values) {
      auto db_id = db_series_id(id);
      if (!db_id.ok()) return db_id.status();
      if (Status s = insert_sample_.bind(1, *db_id).bind(2, batch->ts_ns).bind(3, value).run(); !s.ok()) return s;
    }
  }
  return tx.commit();
}

}  // namespace perfscope::db
