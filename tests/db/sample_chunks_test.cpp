#include "db/internal/sample_chunks.hpp"

#include <bit>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "db/internal/retention_steps.hpp"
#include "db/internal/rollups.hpp"
#include "db/sample_reader.hpp"
#include "db/internal/migrations.hpp"
#include "db/writer.hpp"
#include "engine/collectors/host_collector.hpp"
#include "engine/series/sampler.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;
constexpr TimestampNs kBase = 1'790'000'000'000'000'000;

struct Db {
  TempDir dir;
  std::string path = dir.file("s.db");
  Connection conn;
  Db() : conn(open_migrated(path)) {
    EXPECT_TRUE(
        conn.exec("INSERT INTO series(id, name, labels) VALUES (1, 'a', ''), (2, 'b', ''), (3, 'c', ''), (4, 'd', '')").ok());
  }
  static Connection open_migrated(const std::string& path) {
    auto c = Connection::open(path);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(migrate(*c).ok());
    return std::move(*c);
  }
  std::unique_ptr<SampleChunkWriter> writer(SampleChunkLimits limits = {}) {
    auto w = SampleChunkWriter::prepare(conn, limits);
    EXPECT_TRUE(w.ok()) << w.status().message();
    return std::move(*w);
  }
  std::vector<Sample> read(std::int64_t series, TimeRange range = {INT64_MIN, INT64_MAX}) {
    // Through the reader the API uses, on a connection of its own.
    auto r = SampleReader::open(path);
    EXPECT_TRUE(r.ok());
    auto rows = (*r)->read(series, range.from_ns, range.to_ns);
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    return rows.ok() ? *rows : std::vector<Sample>{};
  }
  std::int64_t scalar(const std::string& sql) {
    auto st = conn.prepare(sql.c_str());
    EXPECT_TRUE(st.ok());
    auto row = st->step();
    EXPECT_TRUE(row.ok() && *row);
    return st->column_int64(0);
  }
  // No two chunks of a series overlap, none is empty, each starts where its row says.
  void expect_chunks_well_formed() {
    auto st = conn.prepare("SELECT series_id, start_ns, count, data FROM sample_chunks ORDER BY series_id, start_ns");
    ASSERT_TRUE(st.ok());
    std::int64_t prev_series = -1;
    TimestampNs prev_end = 0;
    SampleChunkReader reader(conn);
    ASSERT_TRUE(st->for_each_row([&](Statement& r) {
      const std::int64_t series = r.column_int64(0);
      EXPECT_GE(r.column_int64(2), 1);
      std::vector<Sample> samples;
      ASSERT_TRUE(reader.decode(r.column_int64(1), r.column_int64(2), r.column_blob(3), samples).ok());
      if (series == prev_series) {
        EXPECT_GT(r.column_int64(1), prev_end) << "chunks overlap in series " << series;
      }
      prev_series = series;
      prev_end = samples.back().ts_ns;
    }).ok());
  }
};

void expect_bits_equal(const std::vector<Sample>& got, const std::vector<Sample>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].ts_ns, want[i].ts_ns) << i;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(got[i].value), std::bit_cast<std::uint64_t>(want[i].value)) << i;
  }
}

TEST(SampleChunks, PassesAreStoredOnceAndEverySampleComesBackAfterEachCommit) {
  Db db;
  auto w = db.writer();
  std::mt19937_64 rng(1);
  std::map<std::int64_t, std::vector<Sample>> want;
  TimestampNs t = kBase;
  for (int pass = 0; pass < 1000; ++pass) {
    t += 100'000'000 + static_cast<TimestampNs>(rng() % 50'000);
    ASSERT_TRUE(w->begin_pass(t).ok());
    for (std::int64_t s = 1; s <= 4; ++s) {
      if (s == 3 && pass % 10 == 4) continue;  // a series missing now and then
      const double v = s == 1 ? static_cast<double>(pass % 7) : s == 4 ? 64e9 : std::bit_cast<double>(rng() >> 2);
      ASSERT_TRUE(w->add_pass_sample(s, v).ok());
      want[s].push_back({t, v});
    }
    if (pass % 10 == 9) {
      // A commit: everything so far is in the database (a crash loses at most what follows).
      ASSERT_TRUE(w->flush().ok());
      for (std::int64_t s = 1; s <= 4; ++s) ASSERT_EQ(db.read(s).size(), want[s].size()) << pass;
    }
  }
  ASSERT_TRUE(w->flush().ok());
  for (std::int64_t s = 1; s <= 4; ++s) expect_bits_equal(db.read(s), want[s]);
  db.expect_chunks_well_formed();
  // Chunks of at most 120 samples, but for one of a single value; 100 s of passes in one
  // pass chunk (up to 2 minutes).
  EXPECT_EQ(db.scalar("SELECT MAX(count) FROM sample_chunks WHERE series_id <> 4"), 120);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM sample_chunks WHERE series_id = 4"), 1);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM sample_passes"), 1);
  EXPECT_EQ(db.scalar("SELECT SUM(count) FROM sample_passes"), 1000);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM sample_chunks WHERE series_id = 1"), 9);
  // A window cut through chunks.
  const TimeRange mid{want[2][150].ts_ns, want[2][480].ts_ns};
  expect_bits_equal(db.read(2, mid), std::vector<Sample>(want[2].begin() + 150, want[2].begin() + 481));
  auto reader = SampleReader::open(db.path);
  EXPECT_EQ(*(*reader)->count(3, mid.from_ns, mid.to_ns), 331 - 33);
  auto listed = (*reader)->list_series(true);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)[1].latest->ts_ns, want[2].back().ts_ns);
}

TEST(SampleChunks, LateAndOutOfOrderSamplesJoinTheirChunks) {
  Db db;
  auto w = db.writer({.max_samples = 16, .max_span_ns = 1'000'000'000'000});
  std::mt19937_64 rng(2);
  std::map<TimestampNs, double> want;
  // A live series on passes, then samples of the same series from a producer at any time:
  // inside stored chunks, between them, before all of them, after, and the same time twice.
  TimestampNs t = kBase;
  for (int pass = 0; pass < 100; ++pass) {
    t += 1000;
    ASSERT_TRUE(w->begin_pass(t).ok());
    ASSERT_TRUE(w->add_pass_sample(1, pass).ok());
    want[t] = pass;
    if (pass % 16 == 5) {
      ASSERT_TRUE(w->flush().ok());
    }
  }
  ASSERT_TRUE(w->flush().ok());
  for (int i = 0; i < 400; ++i) {
    const TimestampNs ts = kBase - 50'000 + static_cast<TimestampNs>(rng() % 250'000);
    const double v = static_cast<double>(rng() % 1000) / 8;
    ASSERT_TRUE(w->add_sample(1, ts, v).ok());
    want[ts] = v;
    if (i % 37 == 0) {
      ASSERT_TRUE(w->flush().ok());
    }
  }
  ASSERT_TRUE(w->flush().ok());
  std::vector<Sample> expected;
  for (auto [ts, v] : want) expected.push_back({ts, v});
  expect_bits_equal(db.read(1), expected);
  db.expect_chunks_well_formed();
  EXPECT_GT(w->stats().chunks_rewritten, 0u);
  // Chunks stay bounded: merged ones split beyond twice the limit.
  EXPECT_LE(db.scalar("SELECT MAX(count) FROM sample_chunks"), 2 * 16 + 1);
}

TEST(SampleChunks, AClockSteppedBackAndAReopenedWriterKeepPassesApart) {
  Db db;
  std::vector<Sample> want;
  {
    auto w = db.writer();
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(w->begin_pass(kBase + i * 1000).ok());
      ASSERT_TRUE(w->add_pass_sample(1, i).ok());
      want.push_back({kBase + i * 1000, static_cast<double>(i)});
    }
    ASSERT_TRUE(w->flush().ok());
  }
  // A new process whose clock reads earlier than the last stored pass.
  auto w = db.writer();
  for (int i = 0; i < 30; ++i) {
    const TimestampNs ts = kBase + 20'500 + i * 1000;
    ASSERT_TRUE(w->begin_pass(ts).ok());
    ASSERT_TRUE(w->add_pass_sample(1, 1000 + i).ok());
    want.push_back({ts, 1000.0 + i});
  }
  ASSERT_TRUE(w->flush().ok());
  std::sort(want.begin(), want.end(), [](const Sample& a, const Sample& b) { return a.ts_ns < b.ts_ns; });
  expect_bits_equal(db.read(1), want);
  db.expect_chunks_well_formed();
  // Pass chunks never overlap.
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM sample_passes a JOIN sample_passes b ON a.start_ns < b.start_ns "
                      "AND b.start_ns <= a.end_ns"),
            0);
}

TEST(SampleChunks, RetentionRollsUpWhatIsBeforeTheCutoffAndKeepsTheRestOfAChunk) {
  Db db;
  auto w = db.writer();
  std::vector<Sample> want;
  for (int i = 0; i < 300; ++i) {
    const TimestampNs ts = kBase + static_cast<TimestampNs>(i) * 1'000'000'000;  // 1 s apart: 120 s chunks
    ASSERT_TRUE(w->begin_pass(ts).ok());
    ASSERT_TRUE(w->add_pass_sample(1, i * 0.5).ok());
    want.push_back({ts, i * 0.5});
  }
  ASSERT_TRUE(w->flush().ok());
  const TimestampNs cutoff = kBase + 150'000'000'000;  // inside the second chunk
  RetentionResult r;
  ASSERT_TRUE(retire_raw_before(db.conn, cutoff, r).ok());
  EXPECT_EQ(r.values_rolled_up, 150u);
  expect_bits_equal(db.read(1), std::vector<Sample>(want.begin() + 150, want.end()));
  db.expect_chunks_well_formed();
  // The pass chunk wholly before the cutoff went; the one the rest lies on stayed.
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM sample_passes"), 2);
  EXPECT_EQ(db.scalar("SELECT SUM(count) FROM rollups WHERE source = 'series' AND tier = 60"), 150);
}

// What the host collector reads, through the sampler and the database writer, read back to
// the bit: collectors' derived values (rates, ratios) are what the codings exploit.
TEST(SampleChunks, HostSeriesReadBackBitForBit) {
  TempDir dir;
  const std::string path = dir.file("host.db");
  SeriesStore store(100000);
  MemoryTracker memory;
  Sampler sampler(store, std::chrono::milliseconds(10));
  sampler.add_collector(std::make_unique<HostCollector>());
  std::vector<std::shared_ptr<const SampleBatch>> passes;
  {
    auto writer = Writer::open(path, store, memory);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    for (int i = 0; i < 300; ++i) {
      auto b = sampler.sample_once();
      passes.push_back(b);
      (*writer)->enqueue(b);
      if (i % 50 == 0) (*writer)->flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    (*writer)->stop();
  }
  std::map<SeriesId, std::vector<Sample>> want;
  for (const auto& b : passes) {
    for (const auto& [id, v] : b->values) {
      if (std::isfinite(v)) want[id].push_back({b->ts_ns, v});
    }
  }
  auto reader = SampleReader::open(path);
  ASSERT_TRUE(reader.ok());
  auto listed = (*reader)->list_series(false);
  ASSERT_TRUE(listed.ok());
  std::size_t compared = 0;
  for (const StoredSeries& s : *listed) {
    auto id = store.find(s.key.canonical());
    ASSERT_TRUE(id.has_value()) << s.key.canonical();
    auto rows = (*reader)->read(s.db_id, INT64_MIN, INT64_MAX);
    ASSERT_TRUE(rows.ok());
    SCOPED_TRACE(s.key.canonical());
    expect_bits_equal(*rows, want[*id]);
    compared += rows->size();
  }
  // CPU (total and per core) and memory at every pass; the slow files once a second.
  EXPECT_GT(compared, 300u * 8);
}

}  // namespace
}  // namespace perfscope::db

namespace perfscope::db {
namespace {

// A database of version 1 (sample rows), 250,000 rows over three series: more than one of
// the conversion's transactions.
TEST(SampleChunks, MigrationMovesSampleRowsIntoChunks) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  std::map<std::int64_t, std::vector<Sample>> want;
  {
    auto conn = Connection::open(path);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(conn->exec(R"sql(
      PRAGMA user_version = 1;
      CREATE TABLE series (id INTEGER PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL, unit TEXT NOT NULL DEFAULT '',
        type TEXT NOT NULL DEFAULT 'gauge', help TEXT NOT NULL DEFAULT '', UNIQUE (name, labels));
      CREATE TABLE samples (series_id INTEGER NOT NULL REFERENCES series(id), ts_ns INTEGER NOT NULL, value REAL NOT NULL,
        PRIMARY KEY (series_id, ts_ns)) WITHOUT ROWID;
      INSERT INTO series(id, name, labels) VALUES (1, 'a', ''), (2, 'b', ''), (5, 'c', 'x="1"');
    )sql").ok());
    Transaction tx(*conn);
    ASSERT_TRUE(tx.begin_status().ok());
    auto insert = conn->prepare("INSERT INTO samples VALUES (?1, ?2, ?3)");
    ASSERT_TRUE(insert.ok());
    std::mt19937_64 rng(4);
    for (std::int64_t id : {1, 2, 5}) {
      TimestampNs t = kBase;
      for (int i = 0; i < 83'334; ++i) {
        t += 100'000'000 + static_cast<TimestampNs>(rng() % 100'000);
        const double v = id == 2 ? std::bit_cast<double>(rng() >> 2) : static_cast<double>(i % 50) / 4;
        ASSERT_TRUE(insert->bind(1, id).bind(2, t).bind(3, v).run().ok());
        want[id].push_back({t, v});
      }
    }
    ASSERT_TRUE(tx.commit().ok());
    ASSERT_TRUE(migrate(*conn).ok());
    auto gone = conn->prepare("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'samples'");
    ASSERT_TRUE(gone.ok() && *gone->step());
    EXPECT_EQ(gone->column_int64(0), 0);
  }
  auto reader = SampleReader::open(path);
  ASSERT_TRUE(reader.ok());
  for (const auto& [id, samples] : want) {
    auto rows = (*reader)->read(id, INT64_MIN, INT64_MAX);
    ASSERT_TRUE(rows.ok());
    expect_bits_equal(*rows, samples);
  }
}

// A conversion cut short: some rows already in chunks, the rest still rows. Migration resumes.
TEST(SampleChunks, AnInterruptedMigrationResumes) {
  TempDir dir;
  const std::string path = dir.file("half.db");
  std::vector<Sample> want;
  {
    auto conn = Connection::open(path);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(migrate(*conn, 11).ok());  // the file as step 11 left it: chunks and rows both
    ASSERT_TRUE(conn->exec("INSERT INTO series(id, name, labels) VALUES (1, 'a', '')").ok());
    auto w = SampleChunkWriter::prepare(*conn);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 500; ++i) {
      ASSERT_TRUE((*w)->add_sample(1, kBase + i * 1000, i).ok());
      want.push_back({kBase + i * 1000, static_cast<double>(i)});
    }
    ASSERT_TRUE((*w)->flush().ok());
    auto insert = conn->prepare("INSERT INTO samples VALUES (1, ?1, ?2)");
    for (int i = 500; i < 800; ++i) {
      ASSERT_TRUE(insert->bind(1, kBase + i * 1000).bind(2, i * 2.5).run().ok());
      want.push_back({kBase + i * 1000, i * 2.5});
    }
    ASSERT_TRUE(migrate(*conn).ok());
  }
  auto reader = SampleReader::open(path);
  auto rows = (*reader)->read(1, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(rows.ok());
  expect_bits_equal(*rows, want);
}

}  // namespace
}  // namespace perfscope::db
