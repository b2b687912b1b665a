#include "db/internal/retention_steps.hpp"
#include "engine/base/thread_name.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "db/event_reader.hpp"
#include "db/internal/kernel_chunks.hpp"
#include "db/internal/rollups.hpp"
#include "db/internal/sample_chunks.hpp"
#include "db/writer.hpp"
#include "db/internal/writer_tasks.hpp"

namespace perfscope::db {
namespace {

constexpr std::int64_t kDayNs = 86'400'000'000'000;

Result<std::optional<std::int64_t>> single_value(Connection& conn, const char* sql, std::optional<std::int64_t> bind = {}) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto stmt, conn.prepare(sql));
  if (bind) stmt.bind(1, *bind);
  PERFSCOPE_ASSIGN_OR_RETURN(auto row, stmt.step());
  if (!row || stmt.column_is_null(0)) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(stmt.column_int64(0));
}

// The oldest raw time that retention could retire (memory events follow the others).
Result<std::optional<TimestampNs>> oldest_raw(Connection& conn) {
  return single_value(conn,
                      "SELECT MIN(t) FROM ("
                      " SELECT MIN(last_end_ns) AS t FROM kernel_chunks"
                      " UNION ALL SELECT MIN(ts_ns) FROM inference"
                      " UNION ALL SELECT MIN(end_ns) FROM command_buffers"
                      " UNION ALL SELECT MIN(ts_ns) FROM operators"
                      " UNION ALL SELECT MIN((SELECT MIN(start_ns) FROM sample_chunks WHERE series_id = series.id)) FROM series)");
}

// Runs a prepared DELETE; returns the rows it removed.
Result<std::uint64_t> delete_rows(Connection& conn, Statement& stmt) {
  if (Status s = stmt.run(); !s.ok()) return s;
  return static_cast<std::uint64_t>(sqlite3_changes(conn.handle()));
}

// Calls fn(row) for every row of `sql`, its ?1 bound to the cutoff.
template <typename Fn>
Status select_before(Connection& conn, const char* sql, TimestampNs cutoff, Fn&& fn) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto rows, conn.prepare(sql));
  rows.bind(1, cutoff);
  return rows.for_each_row(std::forward<Fn>(fn));
}

// Runs the DELETE `sql`, its ?1 bound to the cutoff, and adds the rows it removed to `deleted`.
Status delete_before(Connection& conn, const char* sql, TimestampNs cutoff, std::uint64_t& deleted) {
  PERFSCOPE_ASSIGN_OR_RETURN(auto del, conn.prepare(sql));
  del.bind(1, cutoff);
  PERFSCOPE_ASSIGN_OR_RETURN(auto n, delete_rows(conn, del));
  deleted += n;
  return Status();
}

Status retire_kernels(Connection& conn, TimestampNs cutoff, RollupAccumulator& acc, RetentionResult& r) {
  bool corrupt = false;
  Status s = select_before(conn, "SELECT series_id, count, data FROM kernel_chunks WHERE last_end_ns < ?1", cutoff,
                           [&](Statement& row) {
    const std::string key = std::to_string(row.column_int64(0));
    corrupt |= !unpack_kernel_chunk(row.column_blob(2), row.column_int64(1), [&](const KernelTiming& t) {
      acc.add(rollup_source::kKernel, key, "", t.end_ns, static_cast<double>(t.end_ns - t.start_ns) / 1e6);
      ++r.values_rolled_up;
    });
  });
  if (!s.ok()) return s;
  // A corrupt chunk is not deleted: nothing is dropped that was not rolled up.
  if (corrupt) return Status::internal("a kernel chunk in the database is corrupt; retention stopped before it");
  return delete_before(conn, "DELETE FROM kernel_chunks WHERE last_end_ns < ?1", cutoff, r.raw_rows_deleted);
}

Status retire_inference(Connection& conn, TimestampNs cutoff, RollupAccumulator& acc, RetentionResult& r) {
  const char* select =
      "SELECT model, version, ts_ns, latency_ms, ttft_ms, queue_ms, compute_ms, output_tokens FROM inference "
      "WHERE ts_ns < ?1";
  Status s = select_before(conn, select, cutoff, [&](Statement& row) {
    const std::string key = rollup_key(row.column_text(0), row.column_text(1));
    const TimestampNs ts = row.column_int64(2);
    auto add = [&](std::string_view field, double v) {
      acc.add(rollup_source::kInference, key, field, ts, v);
      ++r.values_rolled_up;
    };
    auto optional = [&](int col) {
      return row.column_is_null(col) ? std::nullopt : std::optional<double>(row.column_double(col));
    };
    InferenceEvent e;
    e.latency_ms = row.column_double(3);
    e.ttft_ms = optional(4);
    e.queue_ms = optional(5);
    e.compute_ms = optional(6);
    if (!row.column_is_null(7)) e.output_tokens = static_cast<std::uint64_t>(row.column_int64(7));
    add(to_string(InferenceField::kLatency), e.latency_ms);
    for (auto [field, value] : {std::pair{InferenceField::kTtft, e.ttft_ms}, std::pair{InferenceField::kTpot, e.tpot_ms()},
                                std::pair{InferenceField::kQueue, e.queue_ms}, std::pair{InferenceField::kCompute, e.compute_ms}}) {
      if (value) add(to_string(field), *value);
    }
  });
  if (!s.ok()) return s;
  return delete_before(conn, "DELETE FROM inference WHERE ts_ns < ?1", cutoff, r.raw_rows_deleted);
}

Status retire_command_buffers(Connection& conn, TimestampNs cutoff, RollupAccumulator& acc, RetentionResult& r) {
  const char* select = "SELECT queue, device, end_ns, end_ns - submit_ns FROM command_buffers WHERE end_ns < ?1";
  Status s = select_before(conn, select, cutoff, [&](Statement& row) {
    acc.add(rollup_source::kCommandBuffer, rollup_key(row.column_text(0), row.column_text(1)), "", row.column_int64(2),
            static_cast<double>(row.column_int64(3)) / 1e6);
    ++r.values_rolled_up;
  });
  if (!s.ok()) return s;
  return delete_before(conn, "DELETE FROM command_buffers WHERE end_ns < ?1", cutoff, r.raw_rows_deleted);
}

// Chunks that start before the cutoff: their samples before it rolled up, the chunk deleted,
// and what it held from the cutoff on stored again as a chunk of its own.
Status retire_samples(Connection& conn, TimestampNs cutoff, RollupAccumulator& acc, RetentionResult& r) {
  // Each series, and whether its retired values are rolled up. The buckets of a scraped
  // histogram (counters named *_bucket with an `le` label) are not: a distribution of a
  // cumulative count's values answers nothing, percentiles of a scraped histogram read its
  // buckets' increases from raw samples, and a server's histograms are most of its series (a
  // vLLM has hundreds of buckets), so their rollup rows were most of what a scrape target
  // added to the database each day. Their old samples go, and their charts end at the cutoff.
  std::vector<std::pair<std::int64_t, bool>> ids;  // (id, rolled up)
  {
    auto series = conn.prepare(
        "SELECT id, NOT (type = 'counter' AND name LIKE '%\\_bucket' ESCAPE '\\' "
        "AND (labels LIKE 'le=\"%' OR labels LIKE '%,le=\"%')) FROM series");
    if (!series.ok()) return series.status();
    if (Status s = series->for_each_row([&](Statement& row) { ids.emplace_back(row.column_int64(0), row.column_int64(1) != 0); });
        !s.ok()) {
      return s;
    }
  }
  auto del = conn.prepare("DELETE FROM sample_chunks WHERE series_id = ?1 AND start_ns < ?2");
  auto insert = conn.prepare("INSERT INTO sample_chunks(series_id, start_ns, count, data) VALUES(?1, ?2, ?3, ?4)");
  if (!del.ok()) return del.status();
  if (!insert.ok()) return insert.status();
  SampleChunkReader chunks(conn);
  std::vector<Sample> samples, rest;
  for (const auto& entry : ids) {
    const std::int64_t id = entry.first;
    const bool rolled_up = entry.second;  // a named copy: lambdas cannot capture a structured binding
    const std::string key = std::to_string(id);
    rest.clear();
    std::uint64_t retired = 0;
    Status s = chunks.for_each_chunk(id, TimeRange{INT64_MIN, cutoff - 1}, [&](const SampleChunkReader::ChunkRow& c) {
      samples.clear();
      if (Status d = chunks.decode(c.start_ns, c.count, c.data, samples); !d.ok()) return d;
      for (const Sample& x : samples) {
        if (x.ts_ns < cutoff) {
          if (rolled_up) acc.add(rollup_source::kSeries, key, "", x.ts_ns, x.value);
          ++retired;
        } else {
          rest.push_back(x);
        }
      }
      return Status();
    });
    // A corrupt chunk stops retention before anything is deleted: nothing goes unrolled.
    if (!s.ok()) return s;
    if (retired == 0) continue;
    if (rolled_up) r.values_rolled_up += retired;
    del->bind(1, id).bind(2, cutoff);
    PERFSCOPE_RETURN_IF_ERROR(delete_rows(conn, *del).status());
    r.raw_rows_deleted += retired;
    if (!rest.empty()) {
      const std::string data = encode_samples(rest, nullptr, {}).data;
      Status w = insert->bind(1, id).bind(2, rest.front().ts_ns).bind(3, static_cast<std::int64_t>(rest.size()))
                     .bind_blob(4, data).run();
      if (!w.ok()) return w;
    }
  }
  // Pass chunks wholly before the cutoff: every chunk on them has gone.
  std::uint64_t passes_deleted = 0;
  return delete_before(conn, "DELETE FROM sample_passes WHERE end_ns < ?1", cutoff, passes_deleted);
}

// Freed allocations and their frees, both older than the cutoff; live allocations stay.
Status retire_memory_events(Connection& conn, TimestampNs cutoff, RetentionResult& r) {
  std::map<std::pair<std::string, std::string>, std::int64_t> live;  // (device, address) → alloc id
  std::vector<std::int64_t> gone;
  const char* select = "SELECT id, op, address, device FROM memory_events WHERE ts_ns < ?1 ORDER BY ts_ns, id";
  Status s = select_before(conn, select, cutoff, [&](Statement& row) {
    const std::int64_t id = row.column_int64(0);
    auto where = std::make_pair(row.column_text(3), row.column_text(2));
    if (row.column_text(1) == "alloc") {
      live[std::move(where)] = id;
      return;
    }
    gone.push_back(id);
    if (auto it = live.find(where); it != live.end()) {
      gone.push_back(it->second);
      live.erase(it);
    }
  });
  if (!s.ok()) return s;
  PERFSCOPE_ASSIGN_OR_RETURN(auto del, conn.prepare("DELETE FROM memory_events WHERE id = ?1"));
  for (std::int64_t id : gone) {
    del.bind(1, id);
    PERFSCOPE_ASSIGN_OR_RETURN(auto n, delete_rows(conn, del));
    r.raw_rows_deleted += n;
  }
  return Status();
}

Status record_state(Connection& conn, const RetentionResult& r) {
  auto stmt = conn.prepare(
      "UPDATE retention SET raw_before_ns = MAX(raw_before_ns, ?1), rollups_before_ns = MAX(rollups_before_ns, ?2) "
      "WHERE id = 1");
  if (!stmt.ok()) return stmt.status();
  stmt->bind(1, r.raw_before_ns).bind(2, r.rollups_before_ns);
  return stmt->run();
}

}  // namespace

Result<std::uint64_t> database_bytes_used(Connection& conn) {
  auto pages = single_value(conn, "SELECT (SELECT page_count FROM pragma_page_count()) - "
                                  "(SELECT freelist_count FROM pragma_freelist_count())");
  auto size = single_value(conn, "SELECT page_size FROM pragma_page_size()");
  if (!pages.ok()) return pages.status();
  if (!size.ok()) return size.status();
  return static_cast<std::uint64_t>(pages->value_or(0) * size->value_or(0));
}

Status retire_raw_before(Connection& conn, TimestampNs cutoff, RetentionResult& result) {
  RollupAccumulator acc;
  for (auto retire : {retire_kernels, retire_inference, retire_command_buffers, retire_samples}) {
    if (Status s = retire(conn, cutoff, acc, result); !s.ok()) return s;
  }
  if (Status s = retire_memory_events(conn, cutoff, result); !s.ok()) return s;
  if (Status s = delete_before(conn, "DELETE FROM operators WHERE ts_ns < ?1", cutoff, result.raw_rows_deleted); !s.ok()) {
    return s;
  }
  PERFSCOPE_ASSIGN_OR_RETURN(auto written, acc.write(conn));
  result.rollup_rows_written += written;
  result.raw_before_ns = std::max(result.raw_before_ns, cutoff);
  return Status();
}

Result<RetentionResult> retention_step(Connection& conn, const RetentionPolicy& policy, TimestampNs now) {
  RetentionResult r;
  PERFSCOPE_ASSIGN_OR_RETURN(auto used, database_bytes_used(conn));
  const bool over = policy.max_bytes > 0 && used > policy.max_bytes;
  PERFSCOPE_ASSIGN_OR_RETURN(auto oldest, oldest_raw(conn));

  // Raw rows: by age, and the oldest step beyond that while over the size limit.
  TimestampNs cutoff = 0;
  if (policy.raw_max_age_ns > 0) cutoff = floor_to(now - policy.raw_max_age_ns, kRollupMinuteNs);
  const TimestampNs newest_size_may_take = floor_to(now - policy.keep_raw_ns, kRollupMinuteNs);
  const bool raw_retirable_for_size = oldest && *oldest < newest_size_may_take;
  if (over && raw_retirable_for_size) {
    cutoff = std::max(cutoff, std::min(floor_to(*oldest, kRollupMinuteNs) + policy.step_ns, newest_size_may_take));
  }
  if (oldest && *oldest < cutoff) {
    const TimestampNs limited = std::min(cutoff, floor_to(*oldest, kRollupMinuteNs) + policy.step_ns);
    if (Status s = retire_raw_before(conn, limited, r); !s.ok()) return s;
    r.more = limited < cutoff || over;
  }

  // Rollups: by age, each row once its bucket lies wholly before the cutoff — minutes first,
  // then hours, then days — so the tiers stay flat from minute to minute instead of growing
  // through a day (a day or hour row still standing answers only for windows that cover it
  // whole); and the oldest day while over the size limit with no raw rows left that may go.
  TimestampNs rollup_cutoff =
      policy.rollup_max_age_ns > 0 ? floor_to(now - policy.rollup_max_age_ns, kRollupMinuteNs) : 0;
  if (over && !raw_retirable_for_size) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto first_day, single_value(conn, "SELECT MIN(start_ns) FROM rollups WHERE tier = 86400"));
    // Never today's rows: those are what the newest retired raw data became.
    if (first_day && *first_day + kDayNs <= floor_to(now, kDayNs)) {
      rollup_cutoff = std::max(rollup_cutoff, *first_day + kDayNs);
      r.more = true;
    }
  }
  if (rollup_cutoff > 0) {
    // (`tier` is the bucket's width in seconds.)
    if (Status s = delete_before(conn, "DELETE FROM rollups WHERE start_ns + tier * 1000000000 <= ?1", rollup_cutoff,
                                 r.rollup_rows_deleted);
        !s.ok()) {
      return s;
    }
    // GPU processes' lifetime records are summaries too: they age with the rollups.
    if (Status s = delete_before(conn, "DELETE FROM gpu_processes WHERE last_seen_ns < ?1", rollup_cutoff,
                                 r.rollup_rows_deleted);
        !s.ok()) {
      return s;
    }
    r.rollups_before_ns = rollup_cutoff;
  }
  if (r.raw_rows_deleted + r.rollup_rows_deleted > 0) {
    if (Status s = conn.exec("PRAGMA incremental_vacuum"); !s.ok()) return s;
    if (Status s = record_state(conn, r); !s.ok()) return s;
  } else {
    r.more = false;  // nothing could go: no busy loop
  }
  PERFSCOPE_ASSIGN_OR_RETURN(auto after, database_bytes_used(conn));
  r.bytes_used = after;
  r.over_size = policy.max_bytes > 0 && r.bytes_used > policy.max_bytes && !r.more;
  return r;
}

RetentionTask::RetentionTask(Writer& writer, RetentionPolicy policy, std::chrono::milliseconds interval)
    : writer_(writer), policy_(policy), interval_(interval) {}

RetentionTask::~RetentionTask() { stop(); }

void RetentionTask::start() {
  if (thread_.joinable() || !policy_.enabled()) return;
  thread_ = std::thread([this] { run(); });
}

void RetentionTask::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

RetentionStats RetentionTask::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void RetentionTask::run() {
  name_this_thread("ps-retention");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    // Back to back while a step has more to do, bounded so a stop is never far away.
    for (int i = 0; i < 1000 && step(); ++i) {
      std::lock_guard check(mu_);
      if (stopping_) break;
    }
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

bool RetentionTask::step() {
  auto result = std::make_shared<RetentionResult>();
  std::promise<Status> done;
  auto finished = done.get_future();
  WriterTasks::run(writer_, 
      [this, result](Connection& conn) {
        PERFSCOPE_ASSIGN_OR_RETURN(auto r, retention_step(conn, policy_, now_ns()));
        if (r.raw_rows_deleted > 0) WriterTasks::reopen_sample_chunks(writer_);
        *result = r;
        return Status();
      },
      [&done](const Status& s) { done.set_value(s); });
  const Status s = finished.get();
  std::lock_guard lock(mu_);
  stats_.last_run_ns = now_ns();
  if (!s.ok()) {
    ++stats_.errors;
    stats_.last_error = s.message();
    return false;
  }
  ++stats_.runs;
  stats_.last = *result;
  return result->more;
}

}  // namespace perfscope::db
