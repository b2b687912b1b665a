#include "db/page_cache.hpp"
#include "db/writer.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "db/internal/connection_pool.hpp"
#include "db/sample_reader.hpp"
#include "db/internal/migrations.hpp"
#include "db/internal/writer_tasks.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

std::shared_ptr<const SampleBatch> batch(TimestampNs ts, std::vector<std::pair<SeriesId, double>> values) {
  return std::make_shared<const SampleBatch>(SampleBatch{ts, std::move(values)});
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Writer, RefusesCorruptAndForeignFilesWithoutChangingThem) {
  perfscope::testing::TempDir dir;
  SeriesStore store(10);
  MemoryTracker memory;
  {
    std::ofstream(dir.file("garbage.db"), std::ios::binary) << std::string(8192, '\x5a');
  }
  {
    auto foreign = Connection::open(dir.file("foreign.db"));
    ASSERT_TRUE(foreign.ok());
    ASSERT_TRUE(foreign->exec("PRAGMA journal_mode=DELETE; CREATE TABLE users(id INTEGER); INSERT INTO users VALUES (7)").ok());
  }
  for (const char* name : {"garbage.db", "foreign.db"}) {
    const std::string path = dir.file(name), before = file_bytes(path);
    auto w = Writer::open(path, store, memory);
    ASSERT_FALSE(w.ok()) << name;
    EXPECT_NE(w.status().message().find(path), std::string::npos) << w.status().message();
    EXPECT_EQ(file_bytes(path), before) << name << " was changed";
    EXPECT_FALSE(std::filesystem::exists(path + "-wal")) << name;
  }
  EXPECT_NE(check_database_file(dir.file("foreign.db")).message().find("users"), std::string::npos);
  // A perfscope database, an empty file and no file at all are fine.
  EXPECT_TRUE(check_database_file(dir.file("absent.db")).ok());
  { std::ofstream(dir.file("empty.db")); }
  EXPECT_TRUE(check_database_file(dir.file("empty.db")).ok());
  ASSERT_TRUE(Writer::open(dir.file("ours.db"), store, memory).ok());
  EXPECT_TRUE(check_database_file(dir.file("ours.db")).ok());
}

// A new database gets small pages (every table costs one at least); a file made with 4 KiB
// pages by an older perfscope keeps them and opens as before.
TEST(Writer, NewFilesTakeTwoKibPagesOldOnesKeepTheirs) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker memory;
  auto page_size = [](const std::string& path) {
    auto c = Connection::open(path, /*read_only=*/true);
    EXPECT_TRUE(c.ok());
    auto q = c->prepare("PRAGMA page_size");
    EXPECT_TRUE(q.ok());
    auto row = q->step();
    EXPECT_TRUE(row.ok() && *row);
    return q->column_int64(0);
  };
  ASSERT_TRUE(Writer::open(dir.file("new.db"), store, memory).ok());
  EXPECT_EQ(page_size(dir.file("new.db")), 2048);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file("old.db").c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; PRAGMA auto_vacuum=INCREMENTAL", nullptr,
                           nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
    auto conn = Connection::open(dir.file("old.db"));  // the file exists: its size is fixed by now
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(migrate(*conn).ok());
  }
  auto w = Writer::open(dir.file("old.db"), store, memory);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(page_size(dir.file("old.db")), 4096);
}

TEST(Writer, RoundTripThroughAFileAndAReopen) {
  TempDir dir;
  const std::string path = dir.file("p.db");
  MemoryTracker memory;
  SeriesStore store(100);
  store.declare({"cpu_ratio", "ratio", MetricType::kGauge, "help text"});
  SeriesId a = store.intern(SeriesKey("cpu_ratio", {{"cpu", "0"}}));
  SeriesId b = store.intern(SeriesKey("cpu_ratio", {{"cpu", "1"}}));
  {
    auto writer = Writer::open(path, store, memory);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    for (int i = 0; i < 50; ++i) (*writer)->enqueue(batch(1000 + i, {{a, i * 0.01}, {b, 1 - i * 0.01}}));
    (*writer)->stop();
    EXPECT_EQ((*writer)->stats().rows_written, 100u);
    EXPECT_EQ((*writer)->stats().write_errors, 0u);
  }
  // A new process: nothing but the file.
  auto reader = SampleReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto series = (*reader)->list_series(true);
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->size(), 2u);
  const StoredSeries& s0 = (*series)[0];
  EXPECT_EQ(s0.key.canonical(), R"(cpu_ratio{cpu="0"})");
  EXPECT_EQ(s0.family.unit, "ratio");
  EXPECT_EQ(s0.family.help, "help text");
  ASSERT_TRUE(s0.latest.has_value());
  EXPECT_EQ(s0.latest->ts_ns, 1049);
  EXPECT_DOUBLE_EQ(s0.latest->value, 0.49);

  auto rows = (*reader)->read(s0.db_id, 1010, 1019);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 10u);
  EXPECT_EQ(rows->front().ts_ns, 1010);
  EXPECT_DOUBLE_EQ(rows->back().value, 0.19);
  EXPECT_EQ(*(*reader)->count(s0.db_id, 0, 5000), 50);

  auto buckets = (*reader)->read_buckets(s0.db_id, 1000, 1049, 10);
  ASSERT_TRUE(buckets.ok());
  ASSERT_EQ(buckets->size(), 5u);
  EXPECT_EQ((*buckets)[1].count, 10u);
  EXPECT_DOUBLE_EQ((*buckets)[1].min, 0.10);
  EXPECT_DOUBLE_EQ((*buckets)[1].max, 0.19);
}

TEST(Writer, FlushMakesEverythingVisibleToReaders) {
  TempDir dir;
  MemoryTracker memory;
  SeriesStore store(10);
  SeriesId a = store.intern(SeriesKey("m", {}));
  auto writer = Writer::open(dir.file("p.db"), store, memory, WriterOptions{1000000, std::chrono::hours(1), 1000, 1000, {}});
  ASSERT_TRUE(writer.ok());
  auto reader = SampleReader::open(dir.file("p.db"));
  ASSERT_TRUE(reader.ok());
  (*writer)->enqueue(batch(1, {{a, 1}}));
  (*writer)->enqueue(batch(2, {{a, 2}}));
  (*writer)->flush();  // no commit interval or row threshold reached: flush alone commits
  auto series = (*reader)->list_series(false);
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ(*(*reader)->count((*series)[0].db_id, 0, 10), 2);
}

TEST(Writer, AReadingThatIsNotANumberCostsNothingElseInTheCommit) {
  TempDir dir;
  MemoryTracker memory;
  SeriesStore store(10);
  SeriesId a = store.intern(SeriesKey("m", {}));
  SeriesId b = store.intern(SeriesKey("n", {}));
  auto writer = Writer::open(dir.file("p.db"), store, memory);
  ASSERT_TRUE(writer.ok());
  (*writer)->enqueue(batch(1, {{a, std::nan("")}, {b, 2}}));
  (*writer)->flush();
  EXPECT_EQ((*writer)->stats().write_errors, 0u);
  auto reader = SampleReader::open(dir.file("p.db"));
  ASSERT_TRUE(reader.ok());
  auto series = (*reader)->list_series(false);
  ASSERT_TRUE(series.ok());
  std::int64_t rows = 0;
  for (const StoredSeries& s : *series) rows += *(*reader)->count(s.db_id, 0, 10);
  EXPECT_EQ(rows, 1);  // the NaN is skipped; the reading beside it is kept
}

TEST(Writer, AReadOnlyDatabaseRefusesABatchWholeAndSaysWhy) {
  TempDir dir;
  MemoryTracker memory;
  SeriesStore store(10);
  auto writer = Writer::open(dir.file("p.db"), store, memory);
  ASSERT_TRUE(writer.ok());
  auto submit = [&](const std::string& name) {
    InferenceEvent e;
    e.model = name;
    e.ts_ns = 100;
    e.latency_ms = 1;
    std::vector<Event> events(3, Event(e));
    std::promise<Status> done;
    (*writer)->submit(std::move(events), [&](const Status& s) { done.set_value(s); });
    return done.get_future().get();
  };
  ASSERT_TRUE(submit("before").ok());
  // The SQLITE_READONLY a read-only file gives, on the writer's own connection. (Recovery when
  // the file is writable again: tests/faults/disk_full.test.mjs, with the real file made
  // immutable and back.)
  std::promise<Status> set;
  WriterTasks::run(**writer, [](Connection& c) { return c.exec("PRAGMA query_only = ON"); },
                      [&](const Status& s) { set.set_value(s); });
  ASSERT_TRUE(set.get_future().get().ok());
  Status refused = submit("during");
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("read-only"), std::string::npos) << refused.message();
  (*writer)->stop();
  auto c = Connection::open(dir.file("p.db"), true);
  auto rows = c->prepare("SELECT model, COUNT(*) FROM inference GROUP BY model ORDER BY model");
  std::vector<std::pair<std::string, std::int64_t>> got;
  ASSERT_TRUE(rows->for_each_row([&](Statement& r) { got.emplace_back(r.column_text(0), r.column_int64(1)); }).ok());
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::int64_t>>{{"before", 3}}));  // nothing half-written
}

TEST(Writer, BoundedQueueDropsTheOldestPassAndCountsIt) {
  TempDir dir;
  MemoryTracker memory;
  SeriesStore store(10);
  SeriesId a = store.intern(SeriesKey("m", {}));
  // Nothing commits on its own: the queue fills.
  auto writer = Writer::open(dir.file("p.db"), store, memory, WriterOptions{1000000, std::chrono::hours(1), 3, 1000, {}});
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 5; ++i) (*writer)->enqueue(batch(i, {{a, static_cast<double>(i)}}));
  (*writer)->stop();
  EXPECT_EQ((*writer)->stats().batches_dropped, 2u);
  EXPECT_EQ((*writer)->stats().rows_written, 3u);
  auto reader = SampleReader::open(dir.file("p.db"));
  auto rows = (*reader)->read((*(*reader)->list_series(false))[0].db_id, 0, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ(rows->front().ts_ns, 2);  // passes 0 and 1 were the stalest
}

TEST(Schema, MigrationIsIdempotentAndRefusesNewerFiles) {
  TempDir dir;
  auto conn = Connection::open(dir.file("s.db"));
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(migrate(*conn).ok());
  ASSERT_TRUE(migrate(*conn).ok());
  auto v = conn->prepare("PRAGMA user_version");
  ASSERT_TRUE(v.ok() && *v->step());
  EXPECT_EQ(v->column_int64(0), schema_version());
  ASSERT_TRUE(conn->exec("PRAGMA user_version = 999").ok());
  Status s = migrate(*conn);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("newer"), std::string::npos);
}

TEST(Connection, UsesWalAndReportsOpenErrors) {
  TempDir dir;
  auto conn = Connection::open(dir.file("w.db"));
  ASSERT_TRUE(conn.ok());
  auto mode = conn->prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok() && *mode->step());
  EXPECT_EQ(mode->column_text(0), "wal");
  auto bad = Connection::open(dir.file("no/such/dir/x.db"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kIoError);
}

// The writer's page cache as its newest commit left it: it holds the pages written, within
// its bound (the soak judges the heap less it).
TEST(Connection, ACommitReportsTheWritersPageCache) {
  TempDir dir;
  auto writer = Connection::open(dir.file("c.db"));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->exec("CREATE TABLE t(v BLOB)").ok());
  auto insert = [&](int rows) {
    Transaction tx(*writer);
    auto stmt = writer->prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(stmt.ok());
    const std::string row(1000, 'x');
    for (int i = 0; i < rows; ++i) {
      stmt->bind_blob(1, row);
      ASSERT_TRUE(stmt->run().ok());
    }
    ASSERT_TRUE(tx.commit().ok());
  };
  insert(10);
  const std::uint64_t small = writer_page_cache_bytes();
  insert(4000);  // ~4 MB of pages
  EXPECT_GT(writer_page_cache_bytes(), small + (2u << 20));
  EXPECT_LE(writer_page_cache_bytes(), writer_page_cache_limit_bytes());
  EXPECT_EQ(writer_page_cache_limit_bytes(), 64u << 20);
}

// A pool opens a connection for every caller reading at once but keeps only kMaxIdle of them
// between leases; what the open ones hold is counted as each lease ends, and forgotten with
// the pool (the soak judges the heap less it).
TEST(ConnectionPool, KeepsAFewConnectionsAndCountsWhatTheyHold) {
  TempDir dir;
  const std::string path = dir.file("p.db");
  auto writer = Connection::open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->exec("CREATE TABLE t(v BLOB); CREATE INDEX t_v ON t(v)").ok());
  {
    Transaction tx(*writer);
    auto stmt = writer->prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(stmt.ok());
    for (int i = 0; i < 3000; ++i) {
      const std::string row = std::to_string(i) + std::string(500, 'x');
      stmt->bind_blob(1, row);
      ASSERT_TRUE(stmt->run().ok());
    }
    ASSERT_TRUE(tx.commit().ok());
  }
  const std::uint64_t readers_before = reader_connections();
  const std::uint64_t bytes_before = reader_memory_bytes();
  {
    ConnectionPool pool(path);
    {
      std::vector<ConnectionPool::Lease> leases;
      for (std::size_t i = 0; i < ConnectionPool::kMaxIdle + 2; ++i) {
        auto lease = pool.lease();
        ASSERT_TRUE(lease.ok());
        auto count = (*lease)->prepare("SELECT count(*), sum(length(v)) FROM t");
        ASSERT_TRUE(count.ok());
        ASSERT_TRUE(count->step().ok());
        EXPECT_EQ(count->column_int64(0), 3000);
        leases.push_back(std::move(*lease));
      }
      EXPECT_EQ(reader_connections(), readers_before + ConnectionPool::kMaxIdle + 2);
      EXPECT_EQ(reader_memory_bytes(), bytes_before);  // nothing returned yet
    }
    EXPECT_EQ(reader_connections(), readers_before + ConnectionPool::kMaxIdle);  // two closed
    const std::uint64_t held = reader_memory_bytes() - bytes_before;
    EXPECT_GT(held, ConnectionPool::kMaxIdle * 1024);  // at least each one's schema
    EXPECT_LE(held, reader_page_cache_limit_bytes());
    EXPECT_EQ(reader_page_cache_limit_bytes(), reader_connections() * (16u << 20));
    {
      auto again = pool.lease();  // an idle one is reused, not a fifth opened
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(reader_connections(), readers_before + ConnectionPool::kMaxIdle);
    }
    EXPECT_EQ(reader_connections(), readers_before + ConnectionPool::kMaxIdle);
  }
  EXPECT_EQ(reader_connections(), readers_before);
  EXPECT_EQ(reader_memory_bytes(), bytes_before);
}

TEST(Connection, TheWalFileShrinksBackOnceACheckpointRestartsIt) {
  TempDir dir;
  const std::string path = dir.file("w.db");
  auto writer = Connection::open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->exec("CREATE TABLE t(v BLOB)").ok());
  const std::string row(4000, 'x');
  auto insert = [&](int rows) {
    Transaction tx(*writer);
    auto stmt = writer->prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(stmt.ok());
    for (int i = 0; i < rows; ++i) {
      stmt->bind_blob(1, row);
      ASSERT_TRUE(stmt->run().ok());
    }
    ASSERT_TRUE(tx.commit().ok());
  };
  const auto wal_bytes = [&] { return std::filesystem::file_size(path + "-wal"); };
  {
    // A reader holding its snapshot keeps the checkpoints from restarting the WAL: it grows.
    auto reader = Connection::open(path, /*read_only=*/true);
    ASSERT_TRUE(reader.ok());
    ASSERT_TRUE(reader->exec("BEGIN").ok());
    auto first = reader->prepare("SELECT COUNT(*) FROM t");
    ASSERT_TRUE(first.ok() && *first->step());
    for (int i = 0; i < 10; ++i) insert(400);  // ~16 MB of pages
    EXPECT_GT(wal_bytes(), 12u << 20);
    ASSERT_TRUE(reader->exec("COMMIT").ok());
  }
  // The snapshot gone, a checkpoint copies everything back and the next writes restart the
  // WAL from its start, truncating the file to the limit (4 MiB) rather than keeping its peak.
  insert(400);
  insert(10);
  EXPECT_LE(wal_bytes(), 4u << 20);
}

}  // namespace
}  // namespace perfscope::db
