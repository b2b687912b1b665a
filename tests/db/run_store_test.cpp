#include "db/internal/run_store.hpp"

#include <gtest/gtest.h>

#include "db/event_reader.hpp"
#include "db/writer.hpp"
#include "support/commit_events.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

RunEvent started(const std::string& name, TimestampNs start) {
  RunEvent r;
  r.name = name;
  r.command = {"python", "gen.py", "--tokens", "48", "a b:c"};
  r.host = "gpu-host";
  r.pids = {4242};
  r.start_ns = start;
  r.kinds = "kernel,memory";
  return r;
}

MemoryEvent memory(MemoryOp op, const char* address, std::uint64_t size, TimestampNs ts, const char* pid,
                   const char* run, const char* tag = "device") {
  MemoryEvent e;
  e.op = op;
  e.address = address;
  e.size_bytes = size;
  e.tag = tag;
  e.ts_ns = ts;
  e.tags = {{"pid", pid}, {"run", run}};
  return e;
}

TEST(RunStore, ReportsOfOneNameMergeAndReadBackExactly) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker tracker;
  auto w = Writer::open(dir.file("p.db"), store, tracker);
  ASSERT_TRUE(w.ok());
  RunEvent end = started("decode", 2'000);
  end.command.clear();  // the end report need not repeat what the start said
  end.pids = {4243};
  end.end_ns = 9'000;
  end.exit_status = 3;
  end.records = 50;
  end.dropped = 1;
  RunEvent sampled = started("decode", 1'000);
  sampled.trace_window_ns = 200'000'000;
  sampled.trace_every_ns = 4'000'000'000;
  testing::commit(**w, {sampled, started("other", 5'000)});
  testing::commit(**w, {end});
  EventReader reader(dir.file("p.db"));
  auto runs = reader.runs(10);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "other") << "newest first";
  auto r = reader.run("decode");
  ASSERT_TRUE(r.ok() && r->has_value());
  const RunEvent& got = **r;
  EXPECT_EQ(got.start_ns, 1'000) << "the earliest start";
  EXPECT_EQ(got.end_ns, 9'000);
  EXPECT_EQ(got.exit_status, 3);
  EXPECT_EQ(run_status(got), "failed");
  EXPECT_EQ(got.command, started("x", 0).command) << "lists read back exactly, spaces and colons too";
  EXPECT_EQ(got.pids, (std::vector<std::int64_t>{4242, 4243}));
  EXPECT_EQ(got.records, 50u);
  EXPECT_EQ(got.dropped, 1u);
  EXPECT_EQ(got.trace_window_ns, 200'000'000) << "the start's duty cycle kept through the end report";
  EXPECT_EQ(got.trace_every_ns, 4'000'000'000);
  EXPECT_FALSE(reader.run("other")->value_or(RunEvent{}).trace_every_ns);
  EXPECT_EQ(run_status(reader.run("other")->value_or(RunEvent{})), "running");
  EXPECT_FALSE(reader.run("absent")->has_value());
}

TEST(RunStore, ARunsEndReleasesWhatItsProcessesStillHeld) {
  TempDir dir;
  SeriesStore store(10);
  const std::string path = dir.file("p.db");
  {
    MemoryTracker tracker;
    auto w = Writer::open(path, store, tracker);
    ASSERT_TRUE(w.ok());
    RunEvent end = started("gen", 100);
    end.end_ns = 5'000;
    end.exit_status = 0;
    testing::commit(**w, {started("gen", 100), memory(MemoryOp::kAlloc, "0x1", 1 << 20, 200, "4242", "gen"),
                          memory(MemoryOp::kAlloc, "0x2", 4, 210, "4242", "gen", "device_static"),
                          memory(MemoryOp::kAlloc, "0x1", 512, 220, "77", "live"),
                          memory(MemoryOp::kAlloc, "0x3", 2 << 20, 300, "4242", "gen")});
    EXPECT_EQ(tracker.statistics().all.current_bytes, (3u << 20) + 512);
    testing::commit(**w, {end});
    MemoryStatistics s = tracker.statistics();
    EXPECT_EQ(s.all.current_bytes, 512u) << "only the process still running holds memory";
    EXPECT_EQ(s.module_statics.current_bytes, 0u) << "its module statics went with it";
    EXPECT_EQ(s.all.peak_bytes, (3u << 20) + 512);
    ASSERT_EQ(tracker.oldest(10).size(), 1u);
    EXPECT_EQ(tracker.oldest(10)[0].process, "77");
  }
  // The releases are stored as frees at the run's end: a reopen rebuilds the same state, and
  // the allocated-bytes timeline falls back at that moment.
  MemoryTracker again;
  auto w = Writer::open(path, store, again);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(again.statistics().all.current_bytes, 512u);
  EventReader reader(path);
  auto timeline = reader.allocated_timeline({0, INT64_MAX}, EventScope{}, 0);
  ASSERT_TRUE(timeline.ok());
  ASSERT_FALSE(timeline->empty());
  EXPECT_EQ(timeline->back().ts_ns, 5'000);
  EXPECT_EQ(timeline->back().bytes, 512.0);
  auto of_run = reader.allocated_timeline({0, INT64_MAX}, EventScope{"", "gen"}, 0);
  ASSERT_TRUE(of_run.ok());
  EXPECT_EQ(of_run->back().bytes, 0.0) << "one run's timeline ends at nothing held";
  std::size_t released = 0;
  ASSERT_TRUE(reader.for_each_memory_event({0, INT64_MAX}, [&](const MemoryEvent& e) {
    if (tag_value(e.tags, "released") == "process_exit") {
      ++released;
      EXPECT_EQ(e.ts_ns, 5'000);
      EXPECT_EQ(tag_value(e.tags, "pid"), "4242");
    }
  }, EventScope{"", "gen"}).ok());
  EXPECT_EQ(released, 3u) << "two allocations and one module static";
}

}  // namespace
}  // namespace perfscope::db
