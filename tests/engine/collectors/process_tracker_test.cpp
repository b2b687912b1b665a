// ProcessTracker: lifetime records of GPU processes, energy split by SM share (adding up to the
// board's energy while any process computes), pid reuse, records merged across a restart.
#include "engine/collectors/process_tracker.hpp"

#include <gtest/gtest.h>

namespace perfscope {
namespace {

constexpr TimestampNs kS = 1'000'000'000;

GpuProcessReading proc(int pid, std::uint64_t start, double memory, std::optional<double> sm, double cpu = 0) {
  GpuProcessReading r;
  r.identity.pid = pid;
  r.identity.start_ticks = start;
  r.identity.command = "python3";
  r.memory_bytes = memory;
  r.sm_ratio = sm;
  r.cpu_seconds = cpu;
  r.rss_bytes = 1000;
  return r;
}

TEST(ProcessTracker, RecordsOutliveTheirProcessesAndEnergyAddsUp) {
  ProcessTracker t;
  // One observation a second, the board's energy since the previous one given (400 J: 400 W).
  // 0 s: A alone; 1–3 s: A (75 %) and B (25 %) at 400 W; 4 s: both idle at 100 W; 5 s: B gone.
  t.observe(0, "GPU-a", "0", 300.0, {proc(10, 100, 1e9, 0.5, 1.0)});
  t.observe(1 * kS, "GPU-a", "0", 400.0, {proc(10, 100, 2e9, 0.75, 1.5), proc(11, 200, 4e9, 0.25)});
  t.observe(2 * kS, "GPU-a", "0", 400.0, {proc(10, 100, 2e9, 0.75, 2.5), proc(11, 200, 4e9, 0.25)});
  t.observe(3 * kS, "GPU-a", "0", 400.0, {proc(10, 100, 2e9, 0.75, 3.0), proc(11, 200, 4e9, 0.25)});
  t.observe(4 * kS, "GPU-a", "0", 100.0, {proc(10, 100, 2e9, 0.0, 3.0), proc(11, 200, 4e9, 0.0)});
  EXPECT_TRUE(t.take_finished().empty());
  t.observe(5 * kS, "GPU-a", "0", 300.0, {proc(10, 100, 2e9, 1.0, 3.2)});
  auto finished = t.take_finished();
  ASSERT_EQ(finished.size(), 1u);
  const GpuProcessRecord& b = finished[0];
  EXPECT_EQ(b.key, "11-200");
  EXPECT_FALSE(b.running);
  EXPECT_EQ(b.first_seen_ns, 1 * kS);
  EXPECT_EQ(b.last_seen_ns, 4 * kS);
  EXPECT_DOUBLE_EQ(b.peak_memory_bytes, 4e9);
  EXPECT_DOUBLE_EQ(b.gpu_seconds, 0.75);  // 0.25 over three one-second intervals
  EXPECT_DOUBLE_EQ(b.max_sm_ratio, 0.25);
  EXPECT_DOUBLE_EQ(b.energy_joules, 3 * 400 * 0.25);
  EXPECT_TRUE(t.take_finished().empty());  // each once

  auto running = t.running();
  ASSERT_EQ(running.size(), 1u);
  const GpuProcessRecord& a = running[0];
  EXPECT_TRUE(a.running);
  EXPECT_DOUBLE_EQ(a.energy_joules, 3 * 400 * 0.75 + 300);  // and the last second alone
  EXPECT_DOUBLE_EQ(a.cpu_seconds, 2.2);
  EXPECT_DOUBLE_EQ(a.observed_seconds, 5);
  EXPECT_DOUBLE_EQ(*a.mean_memory_bytes(), 2e9);
  // Every joule of the intervals with any SM share is someone's; the idle second is nobody's.
  EXPECT_DOUBLE_EQ(a.energy_joules + b.energy_joules, 3 * 400 + 300);
  EXPECT_DOUBLE_EQ(t.unattributed_joules().at("GPU-a"), 100);
}

TEST(ProcessTracker, AReusedPidIsANewProcessAndAGapIsNotObservedTime) {
  ProcessTracker t;
  t.observe(0, "GPU-a", "0", 100.0, {proc(10, 100, 1e9, 0.5)});
  t.observe(1 * kS, "GPU-a", "0", 100.0, {proc(10, 555, 1e9, 0.5)});  // pid 10 again, started later
  auto finished = t.take_finished();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].key, "10-100");
  t.observe(200 * kS, "GPU-a", "0", 100.0, {proc(10, 555, 1e9, 0.5)});  // minutes without passes
  EXPECT_DOUBLE_EQ(t.running()[0].observed_seconds, 1 + ProcessTracker::kMaxIntervalNs / 1e9);
}

TEST(ProcessTracker, RecordsOfOneProcessMergeExactly) {
  GpuProcessRecord before, after;
  before.first_seen_ns = 10;
  before.last_seen_ns = 20;
  before.observed_seconds = 10;
  before.memory_byte_seconds = 10e9;
  before.peak_memory_bytes = 3e9;
  before.gpu_seconds = 4;
  before.sm_observed_seconds = 10;
  before.energy_joules = 100;
  after.first_seen_ns = 30;
  after.last_seen_ns = 40;
  after.running = true;
  after.observed_seconds = 10;
  after.memory_byte_seconds = 30e9;
  after.peak_memory_bytes = 2e9;
  after.gpu_seconds = 6;
  after.sm_observed_seconds = 10;
  after.energy_joules = 50;
  before.merge(after);
  EXPECT_EQ(before.first_seen_ns, 10);
  EXPECT_EQ(before.last_seen_ns, 40);
  EXPECT_TRUE(before.running);
  EXPECT_DOUBLE_EQ(*before.mean_memory_bytes(), 2e9);
  EXPECT_DOUBLE_EQ(before.peak_memory_bytes, 3e9);
  EXPECT_DOUBLE_EQ(*before.mean_sm_ratio(), 0.5);
  EXPECT_DOUBLE_EQ(before.energy_joules, 150);
}

// The kubelet's names, once known, stay with the process: a reading without them (the kubelet
// not yet asked after a restart) is the same pod; a reading of another pod UID is not.
TEST(ProcessTracker, KubernetesNamesStayOnceKnown) {
  ProcessTracker t;
  GpuProcessReading named = proc(10, 100, 1e9, 0.5);
  named.identity.container = {"containerd", "abc", "uid-1", "burstable", "/kubepods", "serving", "llm-0", "vllm"};
  GpuProcessReading unnamed = named;
  unnamed.identity.container.pod_namespace = unnamed.identity.container.pod_name = unnamed.identity.container.name = "";
  t.observe(0, "GPU-a", "0", 0.0, {named});
  t.observe(1 * kS, "GPU-a", "0", 0.0, {unnamed});
  auto running = t.running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].identity.container.pod_name, "llm-0");
  EXPECT_EQ(running[0].identity.container.name, "vllm");

  GpuProcessRecord restarted = running[0];
  restarted.identity.container = unnamed.identity.container;
  restarted.last_seen_ns = 2 * kS;
  running[0].merge(restarted);
  EXPECT_EQ(running[0].identity.container.pod_namespace, "serving");

  unnamed.identity.container.pod_uid = "uid-2";
  t.observe(2 * kS, "GPU-a", "0", 0.0, {unnamed});
  EXPECT_EQ(t.running()[0].identity.container.pod_name, "");
}

}  // namespace
}  // namespace perfscope
