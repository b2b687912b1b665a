// GPU process records on disk: written through the writer's task queue, merged with the part of
// the same process written before a restart, read back exactly by the window they overlap.
#include "db/gpu_process_store.hpp"
#include "db/internal/gpu_process_rows.hpp"

#include <gtest/gtest.h>

#include <future>

#include "db/event_reader.hpp"
#include "db/writer.hpp"
#include "db/internal/writer_tasks.hpp"
#include "support/temp_dir.hpp"

namespace perfscope::db {
namespace {

using perfscope::testing::TempDir;

GpuProcessRecord record(const std::string& key, TimestampNs first, TimestampNs last, double energy) {
  GpuProcessRecord r;
  r.gpu_uuid = "GPU-aaaa";
  r.gpu = "0";
  r.key = key;
  r.identity.pid = 4242;
  r.identity.start_ticks = 555;
  r.identity.command = "python3";
  r.identity.cmdline = "python3 serve.py --model 'a b'";
  r.identity.uid = 1000;
  r.identity.container = {"containerd", "3f5b2a9c1d7e", "8d2c6a1e-4b7f", "burstable", "/kubepods.slice/x", "serving", "llm-0", "vllm"};
  r.first_seen_ns = first;
  r.last_seen_ns = last;
  r.observed_seconds = static_cast<double>(last - first) / 1e9;
  r.memory_byte_seconds = 2e9 * r.observed_seconds;
  r.peak_memory_bytes = 3e9;
  r.sm_observed_seconds = r.observed_seconds;
  r.gpu_seconds = 0.5 * r.observed_seconds;
  r.max_sm_ratio = 0.9;
  r.energy_joules = energy;
  r.cpu_seconds = 7;
  r.peak_rss_bytes = 1e8;
  return r;
}

Status write(Writer& w, std::vector<GpuProcessRecord> records) {
  std::promise<Status> done;
  WriterTasks::run(w, [records = std::move(records)](Connection& c) { return write_gpu_processes(c, records); },
             [&](const Status& s) { done.set_value(s); });
  return done.get_future().get();
}

TEST(GpuProcessStore, RecordsMergeAcrossARestartAndReadBackByWindow) {
  TempDir dir;
  SeriesStore store(10);
  MemoryTracker tracker;
  auto w = Writer::open(dir.file("p.db"), store, tracker);
  ASSERT_TRUE(w.ok());
  // The part written at a clean stop, then the rest once the process ended after a restart.
  GpuProcessRecord before = record("4242-555", 10'000'000'000, 20'000'000'000, 100);
  before.running = true;
  ASSERT_TRUE(write(**w, {before, record("77-1", 1'000'000'000, 2'000'000'000, 5)}).ok());
  ASSERT_TRUE(write(**w, {record("4242-555", 30'000'000'000, 40'000'000'000, 50)}).ok());
  EventReader reader(dir.file("p.db"));
  auto all = reader.gpu_processes(0, INT64_MAX, 100);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  const GpuProcessRecord& p = (*all)[0];  // newest last seen first
  EXPECT_EQ(p.key, "4242-555");
  EXPECT_FALSE(p.running);
  EXPECT_EQ(p.first_seen_ns, 10'000'000'000);
  EXPECT_EQ(p.last_seen_ns, 40'000'000'000);
  EXPECT_DOUBLE_EQ(p.energy_joules, 150);
  EXPECT_DOUBLE_EQ(p.observed_seconds, 20);
  EXPECT_DOUBLE_EQ(*p.mean_memory_bytes(), 2e9);
  EXPECT_DOUBLE_EQ(p.cpu_seconds, 14);
  EXPECT_EQ(p.identity.cmdline, "python3 serve.py --model 'a b'");
  EXPECT_EQ(p.identity.uid, 1000u);
  EXPECT_EQ(p.identity.container.pod_uid, "8d2c6a1e-4b7f");
  EXPECT_EQ(p.identity.container.qos_class, "burstable");
  EXPECT_EQ(p.identity.container.pod_namespace, "serving");  // the kubelet's names, stored
  EXPECT_EQ(p.identity.container.pod_name, "llm-0");
  EXPECT_EQ(p.identity.container.name, "vllm");
  // A window that only the older process overlaps.
  auto early = reader.gpu_processes(0, 5'000'000'000, 100);
  ASSERT_TRUE(early.ok());
  ASSERT_EQ(early->size(), 1u);
  EXPECT_EQ((*early)[0].key, "77-1");
}

}  // namespace
}  // namespace perfscope::db
