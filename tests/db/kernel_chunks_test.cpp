#include "db/internal/kernel_chunks.hpp"

#include <map>

#include <gtest/gtest.h>

#include <future>

#include "db/event_reader.hpp"
#include "db/internal/migrations.hpp"
#include "db/writer.hpp"
#include "support/commit_events.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

std::vector<KernelTiming> unpack(const KernelChunk& c) {
  std::vector<KernelTiming> out;
  EXPECT_TRUE(unpack_kernel_chunk(c.data(), static_cast<std::int64_t>(c.count()),
                                  [&](const KernelTiming& t) { out.push_back(t); }));
  return out;
}

TEST(KernelChunk, PacksAndUnpacksExecutionsInAnyOrder) {
  const TimestampNs base = 1'700'000'000'000'000'000;
  std::vector<KernelTiming> in = {
      {base + 5000, base + 5850, std::nullopt, std::nullopt},
      {base + 1000, base + 1000, base + 400, base + 700},  // earlier start, zero duration
      {base + 9000, base + 2'000'000'000, std::nullopt, base + 8990},
      {0, 1, 0, std::nullopt},
  };
  KernelChunk c;
  for (const auto& t : in) c.add(t);
  EXPECT_EQ(c.count(), 4u);
  EXPECT_EQ(c.min_ns(), 0);
  EXPECT_EQ(c.max_ns(), 2'000'000'000 - 9000);
  EXPECT_EQ(c.total_ns(), 850 + 0 + (2'000'000'000 - 9000) + 1);
  EXPECT_EQ(c.first_end_ns(), 1);
  EXPECT_EQ(c.last_end_ns(), base + 2'000'000'000);
  auto out = unpack(c);
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].start_ns, in[i].start_ns) << i;
    EXPECT_EQ(out[i].end_ns, in[i].end_ns) << i;
    EXPECT_EQ(out[i].launch_start_ns, in[i].launch_start_ns) << i;
    EXPECT_EQ(out[i].launch_end_ns, in[i].launch_end_ns) << i;
  }
  // Steady executions cost a few bytes each.
  KernelChunk steady;
  for (int i = 0; i < 1000; ++i) steady.add({base + i * 1000LL, base + i * 1000LL + 850, std::nullopt, std::nullopt});
  EXPECT_LT(steady.data().size(), 5u * 1000u + 16u);
}

TEST(KernelChunk, CorruptDataIsReportedNotReadPastItsEnd) {
  KernelChunk c;
  c.add({100, 200, std::nullopt, std::nullopt});
  c.add({300, 400, 250, 260});
  std::string data(c.data());
  auto count = [&](std::string_view d, std::int64_t n) {
    std::size_t seen = 0;
    bool ok = unpack_kernel_chunk(d, n, [&](const KernelTiming&) { ++seen; });
    return std::make_pair(ok, seen);
  };
  EXPECT_EQ(count(data, 2), std::make_pair(true, std::size_t{2}));
  EXPECT_FALSE(count(data.substr(0, data.size() - 1), 2).first);  // truncated
  EXPECT_FALSE(count(data, 3).first);                             // more claimed than held
  EXPECT_FALSE(count(data, 1).first);                             // bytes left over
  EXPECT_FALSE(count(std::string(12, '\xff'), 1).first);          // a varint that never ends
}

KernelEvent kernel(std::string name, TimestampNs start, TimestampNs end, std::string variant = "") {
  KernelEvent e;
  e.name = std::move(name);
  e.start_ns = start;
  e.end_ns = end;
  e.variant = std::move(variant);
  return e;
}

using perfscope::testing::commit;

TEST(KernelChunks, TheWorkOfAnExecutionIsPartOfItsSeries) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker memory;
  auto w = Writer::open(dir.file("k.db"), store, memory);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // The same GEMM at two sizes (same launch configuration), the large one in two data types, and
  // a kernel that reports no work.
  KernelEvent small = kernel("gemm", 100, 200), large = kernel("gemm", 300, 500), plain = kernel("gemm", 600, 700);
  small.flops = 2.0 * 64 * 64 * 64;
  small.bytes = 3 * 64 * 64 * 2;
  large.flops = 2.0 * 128 * 128 * 128;
  large.bytes = 3 * 128 * 128 * 2;
  large.dtype = "bf16";
  KernelEvent large_fp8 = large;
  large_fp8.start_ns = 800;
  large_fp8.end_ns = 900;
  large_fp8.dtype = "fp8";
  commit(**w, {small, large, plain, large_fp8});
  EventReader reader(dir.file("k.db"));
  auto records = reader.kernel_records("gemm", {0, INT64_MAX}, 10);
  ASSERT_TRUE(records.ok()) << records.status().message();
  ASSERT_EQ(records->size(), 4u);
  std::map<TimestampNs, KernelEvent> by_start;
  for (const KernelEvent& e : *records) by_start[e.start_ns] = e;
  EXPECT_EQ(by_start[100].flops, small.flops);
  EXPECT_EQ(by_start[100].bytes, small.bytes);
  EXPECT_EQ(by_start[100].dtype, "");
  EXPECT_EQ(by_start[300].flops, large.flops);
  EXPECT_EQ(by_start[300].dtype, "bf16");
  EXPECT_EQ(by_start[800].dtype, "fp8");
  EXPECT_FALSE(by_start[600].flops);
  EXPECT_FALSE(by_start[600].bytes);
  auto conn = Connection::open(dir.file("k.db"), true);
  ASSERT_TRUE(conn.ok());
  auto n = conn->prepare("SELECT COUNT(*) FROM kernel_series WHERE name = 'gemm'");
  ASSERT_TRUE(n.ok() && n->step().ok());
  EXPECT_EQ(n->column_int64(0), 4);  // four series: the work and its data type tell them apart
}

TEST(KernelChunks, WindowEdgesCountOnlyExecutionsInside) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker memory;
  auto w = Writer::open(dir.file("k.db"), store, memory);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // One chunk of 10 executions ending at 100, 200, … 1000 (durations 10 … 100 ns), and a
  // second chunk in another commit.
  std::vector<Event> first;
  for (int i = 1; i <= 10; ++i) first.emplace_back(kernel("k", i * 100 - i * 10, i * 100, "a"));
  commit(**w, std::move(first));
  commit(**w, {kernel("k", 1500, 1600, "b"), kernel("other", 10, 20)});

  EventReader reader(dir.file("k.db"));
  auto all = reader.kernel_summaries({0, INT64_MAX}, EventScope{});
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "k");
  EXPECT_EQ((*all)[0].count, 11u);
  EXPECT_EQ((*all)[0].variants, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ((*all)[0].total_ms, (550 + 100) / 1e6);

  // [250, 650] cuts the first chunk: executions ending 300, 400, 500, 600.
  auto part = reader.kernel_summaries({250, 650}, EventScope{});
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->size(), 1u);
  EXPECT_EQ((*part)[0].count, 4u);
  EXPECT_DOUBLE_EQ((*part)[0].min_ms, 30 / 1e6);
  EXPECT_DOUBLE_EQ((*part)[0].max_ms, 60 / 1e6);
  EXPECT_DOUBLE_EQ((*part)[0].total_ms, 180 / 1e6);

  // Newest first, limited, across chunks.
  auto records = reader.kernel_records("k", {0, INT64_MAX}, 3);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].end_ns, 1600);
  EXPECT_EQ((*records)[0].variant, "b");
  EXPECT_EQ((*records)[1].end_ns, 1000);
  EXPECT_EQ((*records)[2].end_ns, 900);
  auto inside = reader.kernel_records("k", {250, 650}, 100);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(inside->size(), 4u);
  EXPECT_EQ(reader.kernel_records("none", {0, INT64_MAX}, 10)->size(), 0u);
  (*w)->stop();
}

TEST(KernelChunks, LargeBatchesSplitIntoBoundedChunks) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker memory;
  auto w = Writer::open(dir.file("k.db"), store, memory);
  ASSERT_TRUE(w.ok());
  const std::size_t n = KernelChunkWriter::kMaxChunk * 2 + 7;
  std::vector<Event> events;
  for (std::size_t i = 0; i < n; ++i) {
    auto t = static_cast<TimestampNs>(i) * 10;
    events.emplace_back(kernel("k", t, t + 5));
  }
  commit(**w, std::move(events));
  (*w)->stop();
  auto conn = Connection::open(dir.file("k.db"));
  ASSERT_TRUE(conn.ok());
  auto rows = conn->prepare("SELECT COUNT(*), SUM(count), MAX(count) FROM kernel_chunks");
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(*rows->step());
  EXPECT_EQ(rows->column_int64(0), 3);
  EXPECT_EQ(rows->column_int64(1), static_cast<std::int64_t>(n));
  EXPECT_EQ(rows->column_int64(2), static_cast<std::int64_t>(KernelChunkWriter::kMaxChunk));
}

TEST(KernelChunks, MigrationMovesVersionTwoKernelRowsIntoChunks) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    // A database as schema version 2 left it, with kernel rows in the old table.
    auto conn = Connection::open(path);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(conn->exec(R"sql(
      CREATE TABLE kernels (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL, device TEXT NOT NULL, variant TEXT NOT NULL, stream TEXT NOT NULL,
        start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
        grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
        shared_mem_bytes INTEGER, registers_per_thread INTEGER,
        launch_start_ns INTEGER, launch_end_ns INTEGER,
        tags TEXT NOT NULL);
      INSERT INTO kernels VALUES (NULL, 'gemm', '0', 'tiled', '7', 100, 150, 128, 64, 1, 256, 1, 1, 4096, 32, 90, 95, 'run="a"');
      INSERT INTO kernels VALUES (NULL, 'gemm', '0', 'tiled', '7', 200, 260, 128, 64, 1, 256, 1, 1, 4096, 32, NULL, NULL, 'run="a"');
      INSERT INTO kernels VALUES (NULL, 'copy', '1', '', '', 300, 301, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '');
    )sql").ok());
    // The rest of version 2, so that migration starts from step 3.
    ASSERT_TRUE(conn->exec("PRAGMA user_version = 2").ok());
    ASSERT_TRUE(conn->exec(R"sql(
      CREATE TABLE series (id INTEGER PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL, unit TEXT NOT NULL DEFAULT '',
        type TEXT NOT NULL DEFAULT 'gauge', help TEXT NOT NULL DEFAULT '', UNIQUE (name, labels));
      CREATE TABLE samples (series_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL, value REAL NOT NULL,
        PRIMARY KEY (series_id, ts_ns)) WITHOUT ROWID;
      CREATE TABLE memory_events (id INTEGER PRIMARY KEY, op TEXT NOT NULL, address TEXT NOT NULL, size_bytes INTEGER NOT NULL,
        kind TEXT NOT NULL, tag TEXT NOT NULL, device TEXT NOT NULL, ts_ns INTEGER NOT NULL, tags TEXT NOT NULL);
      CREATE TABLE command_buffers (id INTEGER PRIMARY KEY, buffer_id TEXT NOT NULL, queue TEXT NOT NULL, device TEXT NOT NULL,
        enqueue_ns INTEGER NOT NULL, submit_ns INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, tags TEXT NOT NULL);
      CREATE TABLE inference (id INTEGER PRIMARY KEY, model TEXT NOT NULL, version TEXT NOT NULL, ts_ns INTEGER NOT NULL,
        latency_ms REAL NOT NULL, queue_ms REAL, compute_ms REAL, batch_size INTEGER NOT NULL, ok INTEGER NOT NULL,
        ttft_ms REAL, input_tokens INTEGER, output_tokens INTEGER, tags TEXT NOT NULL);
      CREATE TABLE operators (id INTEGER PRIMARY KEY, op_type TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL,
        duration_ms REAL NOT NULL, model TEXT NOT NULL, input_shapes TEXT NOT NULL, ts_ns INTEGER NOT NULL, tags TEXT NOT NULL);
    )sql").ok());
    ASSERT_TRUE(migrate(*conn).ok());
    auto gone = conn->prepare("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'kernels'");
    ASSERT_TRUE(gone.ok());
    ASSERT_TRUE(*gone->step());
    EXPECT_EQ(gone->column_int64(0), 0);
  }
  EventReader reader(path);
  auto counts = reader.table_counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ((*counts)[0], (std::pair<std::string, std::int64_t>{"kernels", 3}));
  auto gemm = reader.kernel_records("gemm", {0, INT64_MAX}, 10);
  ASSERT_TRUE(gemm.ok()) << gemm.status().message();
  ASSERT_EQ(gemm->size(), 2u);
  const KernelEvent& newest = (*gemm)[0];
  EXPECT_EQ(newest.start_ns, 200);
  EXPECT_EQ(newest.end_ns, 260);
  EXPECT_FALSE(newest.launch_start_ns);
  const KernelEvent& oldest = (*gemm)[1];
  EXPECT_EQ(oldest.launch_start_ns, std::optional<TimestampNs>(90));
  EXPECT_EQ(oldest.launch_end_ns, std::optional<TimestampNs>(95));
  EXPECT_EQ(oldest.grid, (std::optional<std::array<std::uint32_t, 3>>{{128, 64, 1}}));
  EXPECT_EQ(oldest.block, (std::optional<std::array<std::uint32_t, 3>>{{256, 1, 1}}));
  EXPECT_EQ(oldest.shared_mem_bytes, std::optional<std::uint64_t>(4096));
  EXPECT_EQ(oldest.registers_per_thread, std::optional<std::uint32_t>(32));
  EXPECT_EQ(oldest.stream, "7");
  EXPECT_EQ(format_labels(oldest.tags), R"(run="a")");
  auto copy = reader.kernel_records("copy", {0, INT64_MAX}, 10);
  ASSERT_EQ(copy->size(), 1u);
  EXPECT_FALSE((*copy)[0].grid);
  EXPECT_FALSE((*copy)[0].shared_mem_bytes);
  EXPECT_EQ((*copy)[0].device, "1");
}

}  // namespace
}  // namespace perfscope::db
