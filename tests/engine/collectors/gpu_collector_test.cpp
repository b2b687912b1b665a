// The NVIDIA collector through the same dlopen path users take, against a scripted stand-in
// library (tests/fake_nvml) — and against no library at all.
#include "engine/collectors/gpu_collector.hpp"

#include <gtest/gtest.h>
#include <chrono>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "support/temp_dir.hpp"

namespace perfscope {
namespace {

using perfscope::testing::TempDir;

class GpuCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("PERFSCOPE_FAKE_NVML_SCRIPT", script_.c_str(), 1); }
  void TearDown() override { ::unsetenv("PERFSCOPE_FAKE_NVML_SCRIPT"); }

  void write(const std::string& text) {
    std::ofstream out(script_);
    out << text;
  }
  static GpuCollectorOptions options() {
    GpuCollectorOptions o;
    o.library_path = PERFSCOPE_FAKE_NVML;
    o.proc_root = std::string(PERFSCOPE_FIXTURES) + "/gpu_proc";
    o.process_interval = std::chrono::milliseconds(0);  // processes read every pass
    return o;
  }
  // One pass as canonical key → value.
  static std::map<std::string, double> pass(GpuCollector& c, TimestampNs now) {
    std::vector<Reading> out;
    c.collect(now, out);
    std::map<std::string, double> m;
    for (const auto& r : out) m[r.key.canonical()] = r.value;
    return m;
  }

  TempDir dir_;
  std::string script_ = dir_.file("nvml.txt");
};

constexpr const char* kH100 =
    "count 2\n"
    "driver 580.159.01\n"
    "nvml 13.580.159.01\n"
    "0.name NVIDIA H100 80GB HBM3\n"
    "0.uuid GPU-aaaa\n"
    "0.pci 00000000:18:00.0\n"
    "0.util_gpu 55\n0.util_mem 40\n"
    "0.mem_total 85520809984\n0.mem_used 1073741824\n0.mem_reserved 675282944\n"
    "0.power_mw 250500\n0.limit_mw 700000\n0.energy_mj 1234567\n0.power_instant_mw 312000\n"
    "0.temp 61\n0.mem_temp 70\n0.slowdown 87\n0.shutdown 92\n"
    "0.clock_sm 1980\n0.clock_mem 2619\n0.clock_gfx 1980\n0.max_clock_sm 1980\n0.max_clock_mem 2619\n"
    "0.bus_width 5120\n0.reasons 0x1\n"
    "0.procs 1234:1048576,4321:2048\n"
    "0.gpm 1\n0.gpm.2 91\n0.gpm.3 47.5\n0.gpm.10 83\n0.gpm.20 1024\n"
    "1.name NVIDIA H100 80GB HBM3\n1.uuid GPU-bbbb\n1.util_gpu 0\n1.mem_total 85520809984\n1.mem_used 0\n";

TEST_F(GpuCollectorTest, ReadsEveryGpuWithUnitsConverted) {
  write(kH100);
  GpuCollector c(options());
  const std::vector<GpuDeviceInfo> devices = c.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(c.driver_version(), "580.159.01");
  const GpuDeviceInfo& d0 = devices[0];
  EXPECT_EQ(d0.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d0.uuid, "GPU-aaaa");
  EXPECT_EQ(d0.pci_bus_id, "00000000:18:00.0");
  EXPECT_DOUBLE_EQ(d0.power_limit_watts, 700);
  EXPECT_DOUBLE_EQ(d0.peak_dram_bandwidth_bytes_per_second, 2619e6 * 5120 / 8 * 2);
  EXPECT_TRUE(d0.gpm);
  EXPECT_FALSE(devices[1].gpm);

  auto m = pass(c, 1'000'000'000);
  const std::string g0 = R"({gpu="0",uuid="GPU-aaaa"})";
  EXPECT_DOUBLE_EQ(m["gpu_utilization_ratio" + g0], 0.55);
  EXPECT_DOUBLE_EQ(m["gpu_memory_busy_ratio" + g0], 0.40);
  EXPECT_DOUBLE_EQ(m["gpu_memory_used_bytes" + g0], 1073741824);      // v2: reserved not counted
  EXPECT_DOUBLE_EQ(m["gpu_memory_reserved_bytes" + g0], 675282944);
  EXPECT_DOUBLE_EQ(m["gpu_memory_total_bytes" + g0], 85520809984);
  EXPECT_DOUBLE_EQ(m["gpu_power_watts" + g0], 250.5);
  EXPECT_DOUBLE_EQ(m["gpu_power_instant_watts" + g0], 312);
  EXPECT_DOUBLE_EQ(m["gpu_power_limit_watts" + g0], 700);
  EXPECT_DOUBLE_EQ(m["gpu_energy_joules_total" + g0], 1234.567);
  EXPECT_DOUBLE_EQ(m["gpu_temperature_celsius" + g0], 61);
  EXPECT_DOUBLE_EQ(m["gpu_memory_temperature_celsius" + g0], 70);
  EXPECT_DOUBLE_EQ(m[R"(gpu_clock_hertz{clock="memory",gpu="0",uuid="GPU-aaaa"})"], 2619e6);
  EXPECT_DOUBLE_EQ(m[R"(gpu_throttle_active{gpu="0",reason="gpu_idle",uuid="GPU-aaaa"})"], 1);
  EXPECT_DOUBLE_EQ(m["gpu_thermal_state" + g0], 0);
  EXPECT_DOUBLE_EQ(m["gpu_up" + g0], 1);
  EXPECT_DOUBLE_EQ(m[R"(gpu_info{driver_version="580.159.01",gpu="0",name="NVIDIA H100 80GB HBM3",nvml_version="13.580.159.01",pci_bus_id="00000000:18:00.0",uuid="GPU-aaaa"})"], 1);
  // Processes with the host's PIDs; a name where /proc has one.
  // The process's container (its cgroup) labels it; a pid procfs does not show is said to be so.
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_memory_bytes{command="python3",container="3f5b2a9c1d7e",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 1048576);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_memory_bytes{command="[not visible]",gpu="0",pid="4321",uuid="GPU-aaaa"})"], 2048);
  EXPECT_DOUBLE_EQ(m[R"(gpu_utilization_ratio{gpu="1",uuid="GPU-bbbb"})"], 0);
}

// Xids arrive as NVML events on the watcher's thread and are counted per GPU and number.
TEST_F(GpuCollectorTest, XidErrorsAreCountedPerGpuAndNumber) {
  write(std::string(kH100) + "1.xids 79,13,79\n");
  GpuCollector c(options());
  std::map<std::string, double> m;
  for (int i = 0; i < 100 && m["gpu_xid_errors_total{gpu=\"1\",uuid=\"GPU-bbbb\",xid=\"13\"}"] < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m = pass(c, 1'000'000'000 + i);
  }
  EXPECT_EQ(m["gpu_xid_errors_total{gpu=\"1\",uuid=\"GPU-bbbb\",xid=\"79\"}"], 2);
  EXPECT_EQ(m["gpu_xid_errors_total{gpu=\"1\",uuid=\"GPU-bbbb\",xid=\"13\"}"], 1);
  const double last = m["gpu_xid_last_timestamp_seconds{gpu=\"1\",uuid=\"GPU-bbbb\",xid=\"79\"}"];
  EXPECT_NEAR(last, static_cast<double>(now_ns()) / 1e9, 60);
  for (const auto& [key, v] : m) EXPECT_EQ(key.find("gpu_xid_errors_total{gpu=\"0\""), std::string::npos) << key;
  bool found = false;
  for (const SourceStatus& s : c.sources()) {
    if (s.name == "xid") {
      found = true;
      EXPECT_TRUE(s.available);
      EXPECT_EQ(s.detail, "2 GPUs");
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(GpuCollectorTest, GpusWithoutXidEventsAreSaidSo) {
  write(std::string(kH100) + "0.xid_events 0\n1.xid_events 0\n");
  GpuCollector c(options());
  for (const SourceStatus& s : c.sources()) {
    if (s.name == "xid") {
      EXPECT_FALSE(s.available);
      EXPECT_EQ(s.detail, "no GPU reports Xid events");
    }
  }
}

// A GPU with every engine idle: each process's share is 0 without the driver's per-process call
// (the costly one). Here that call would fail, which would make the shares unknown instead.
TEST_F(GpuCollectorTest, OnAnIdleGpuTheSharesAreZeroWithoutThePerProcessCall) {
  std::string idle = kH100;
  for (const char* busy : {"0.util_gpu 55\n", "0.util_mem 40\n"}) idle.erase(idle.find(busy), std::string(busy).size());
  write(idle + "0.util_gpu 0\n0.util_mem 0\n0.process_utilization_rc 999\n0.proc_util 1234:87:40:3:0@900000\n");
  GpuCollector c(options());
  auto m = pass(c, 1'000'000'000);
  const std::string p = R"(command="python3",container="3f5b2a9c1d7e",)";
  EXPECT_EQ(m.count(R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"), 1u);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0);
  for (const auto& d : c.devices()) {
    for (const auto& u : d.unsupported) EXPECT_NE(u, "process_utilization");
  }
  // A video engine at work is not idle: the call is made (and here refused).
  write(idle + "0.util_gpu 0\n0.util_mem 0\n0.util_enc 12\n0.process_utilization_rc 999\n");
  GpuCollector busy(options());
  pass(busy, 1'000'000'000);
  bool refused = false;
  for (const auto& d : busy.devices()) {
    for (const auto& u : d.unsupported) refused |= u == "process_utilization";
  }
  EXPECT_TRUE(refused);
}

TEST_F(GpuCollectorTest, ProcessesGetTheirGpuShareAndHostCost) {
  // The newest period (0.9 s) lists 1234, 4321 and a pid not running; an older period (0.5 s)
  // is not read. Later passes find no newer period: held while it is recent, 0 after 2 s.
  write(std::string(kH100) +
        "0.proc_util 1234:87:40:3:0@900000,4321:5:1:0:0@880000,999:50:50:0:0@900000,4321:99:9:0:0@500000\n");
  GpuCollector c(options());
  auto m = pass(c, 1'000'000'000);
  const std::string p = R"(command="python3",container="3f5b2a9c1d7e",)";
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.87);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_utilization_ratio{)" + p + R"(engine="memory",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.40);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_utilization_ratio{)" + p + R"(engine="encoder",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.03);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_utilization_ratio{command="[not visible]",engine="sm",gpu="0",pid="4321",uuid="GPU-aaaa"})"], 0.05);
  // A sample of a pid that is not among the running processes makes no series.
  for (const auto& [key, value] : m) EXPECT_EQ(key.find(R"(pid="999")"), std::string::npos) << key;
  // The host side: CPU seconds (user + system ticks) and resident bytes from stat.
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_cpu_seconds_total{)" + p + R"(gpu="0",pid="1234",uuid="GPU-aaaa"})"], 400 / ticks);
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_resident_memory_bytes{)" + p + R"(gpu="0",pid="1234",uuid="GPU-aaaa"})"],
                   2560.0 * static_cast<double>(::sysconf(_SC_PAGESIZE)));
  // Sums per container (1234 runs in a Docker container; 4321 is not visible: in none we know).
  EXPECT_DOUBLE_EQ(m[R"(gpu_container_memory_bytes{container="3f5b2a9c1d7e",gpu="0",runtime="docker",uuid="GPU-aaaa"})"], 1048576);
  EXPECT_DOUBLE_EQ(m[R"(gpu_container_sm_utilization_ratio{container="3f5b2a9c1d7e",gpu="0",runtime="docker",uuid="GPU-aaaa"})"], 0.87);
  EXPECT_DOUBLE_EQ(m[R"(gpu_container_processes{container="3f5b2a9c1d7e",gpu="0",runtime="docker",uuid="GPU-aaaa"})"], 1);
  auto held = pass(c, 1'500'000'000);
  EXPECT_DOUBLE_EQ(held[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.87);
  // A newer period without 4321: it was idle then. The driver is asked at most once a second
  // (its per-process call is costly): a pass 0.8 s after the first read still holds the shares.
  write(std::string(kH100) + "0.proc_util 1234:60:20:0:0@1700000\n");
  EXPECT_DOUBLE_EQ(pass(c, 1'800'000'000)[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.87);
  auto next = pass(c, 2'000'000'000);
  EXPECT_DOUBLE_EQ(next[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0.60);
  EXPECT_DOUBLE_EQ(next[R"(gpu_process_utilization_ratio{command="[not visible]",engine="sm",gpu="0",pid="4321",uuid="GPU-aaaa"})"], 0);
  auto later = pass(c, 5'000'000'000);
  EXPECT_DOUBLE_EQ(later[R"(gpu_process_utilization_ratio{)" + p + R"(engine="sm",gpu="0",pid="1234",uuid="GPU-aaaa"})"], 0);
}

TEST_F(GpuCollectorTest, ListsLongerThanTheKeptBufferAreReadWhole) {
  // 40 processes and 40 utilization samples: more than the first read's buffer holds, so the
  // driver's "insufficient size" grows it; the next read, with more processes, fits or grows again.
  auto script = [](int processes, unsigned long long at_us) {
    std::string procs, util;
    for (int i = 0; i < processes; ++i) {
      procs += (i ? "," : "") + std::to_string(20000 + i) + ":" + std::to_string((i + 1) * 1024);
      util += (i ? "," : "") + std::to_string(20000 + i) + ":" + std::to_string(i % 100) + ":1:0:0@" + std::to_string(at_us);
    }
    std::string s = std::string(kH100) + "0.proc_util " + util + "\n";
    s.replace(s.find("0.procs 1234:1048576,4321:2048"), 30, "0.procs " + procs);
    return s;
  };
  auto count_and_check = [](const std::map<std::string, double>& m, int processes) {
    int memory = 0, sm = 0;
    for (const auto& [key, value] : m) {
      if (key.starts_with("gpu_process_memory_bytes{")) ++memory;
      if (key.starts_with("gpu_process_utilization_ratio{") && key.find(R"(engine="sm")") != std::string::npos) {
        const auto at = key.find(R"(pid=")") + 5;
        EXPECT_DOUBLE_EQ(value, (std::stoi(key.substr(at)) - 20000) % 100 / 100.0) << key;
        ++sm;
      }
    }
    EXPECT_EQ(memory, processes);
    EXPECT_EQ(sm, processes);
  };
  write(script(40, 900000));
  GpuCollectorOptions o = options();
  o.process_series_limit = 1000;
  GpuCollector c(o);
  count_and_check(pass(c, 1'000'000'000), 40);
  write(script(60, 1900000));
  count_and_check(pass(c, 2'000'000'000), 60);
}

TEST_F(GpuCollectorTest, AccountingStatisticsWhereTheDriverKeepsThem) {
  const std::string p = R"(command="python3",container="3f5b2a9c1d7e",gpu="0",pid="1234",uuid="GPU-aaaa"})";
  // Off (the default): no accounting series.
  write(kH100);
  {
    GpuCollector c(options());
    for (const auto& [key, value] : pass(c, 1'000'000'000)) EXPECT_EQ(key.find("accounting"), std::string::npos) << key;
  }
  // On: the driver's lifetime figures for the processes it has them for.
  write(std::string(kH100) + "0.accounting 1\n0.acct 1234:35:12:2147483648:60000\n");
  GpuCollector c(options());
  auto m = pass(c, 1'000'000'000);
  EXPECT_DOUBLE_EQ(m["gpu_process_accounting_utilization_ratio{" + p], 0.35);
  EXPECT_DOUBLE_EQ(m["gpu_process_accounting_max_memory_bytes{" + p], 2147483648.0);
  int accounted = 0;
  for (const auto& [key, value] : m) accounted += key.starts_with("gpu_process_accounting_utilization_ratio{");
  EXPECT_EQ(accounted, 1);  // 4321 has no statistics
}

TEST_F(GpuCollectorTest, MigInstancesAreDevicesWithTheirOwnMemoryAndProcesses) {
  // GPU 0 in MIG mode with two instances (slots 0 and 3 of 7), as NVML describes them: an
  // instance answers its name, uuid, memory and processes, nothing else; the board's power,
  // temperature and clocks stay the parent's. The parent lists every process of every instance.
  write(std::string(kH100) + "0.mig_mode 1\n0.mig_max 7\n" +
        "0/0.uuid MIG-aaaa-1\n0/0.name NVIDIA H100 80GB HBM3 MIG 3g.40gb\n0/0.gi 1\n0/0.ci 0\n"
        "0/0.mem_total 42949672960\n0/0.mem_used 1073741824\n0/0.mem_reserved 0\n0/0.procs 1234:1048576\n"
        "0/3.uuid MIG-aaaa-2\n0/3.name NVIDIA H100 80GB HBM3 MIG 1g.10gb\n0/3.gi 9\n0/3.ci 0\n"
        "0/3.mem_total 10737418240\n0/3.mem_used 2048\n0/3.mem_reserved 0\n0/3.procs 4321:2048\n");
  ProcessTracker tracker;
  GpuCollectorOptions o = options();
  o.tracker = &tracker;
  GpuCollector c(o);
  const std::vector<GpuDeviceInfo> devices = c.devices();
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_TRUE(devices[0].mig_mode);
  EXPECT_EQ(devices[0].uuid, "GPU-aaaa");
  const GpuDeviceInfo& big = devices[1];
  EXPECT_EQ(big.uuid, "MIG-aaaa-1");
  EXPECT_EQ(big.name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  EXPECT_EQ(big.parent_uuid, "GPU-aaaa");
  EXPECT_EQ(big.gpu_instance_id, 1);
  EXPECT_EQ(big.compute_instance_id, 0);
  EXPECT_EQ(big.pci_bus_id, devices[0].pci_bus_id);
  EXPECT_NE(std::find(big.unsupported.begin(), big.unsupported.end(), "utilization"), big.unsupported.end());
  EXPECT_EQ(devices[2].uuid, "MIG-aaaa-2");
  EXPECT_EQ(devices[2].gpu_instance_id, 9);
  EXPECT_EQ(devices[3].uuid, "GPU-bbbb");
  EXPECT_FALSE(devices[3].mig_mode);

  auto m = pass(c, 1'000'000'000);
  const std::string i1 = R"(compute_instance="0",gpu="0",gpu_instance="1",)";
  EXPECT_DOUBLE_EQ(m[R"(gpu_memory_total_bytes{)" + i1 + R"(uuid="MIG-aaaa-1"})"], 42949672960);
  EXPECT_DOUBLE_EQ(m[R"(gpu_memory_used_bytes{compute_instance="0",gpu="0",gpu_instance="9",uuid="MIG-aaaa-2"})"], 2048);
  EXPECT_DOUBLE_EQ(m[R"(gpu_up{)" + i1 + R"(uuid="MIG-aaaa-1"})"], 1);
  // The board's figures stay with the GPU.
  EXPECT_DOUBLE_EQ(m[R"(gpu_power_watts{gpu="0",uuid="GPU-aaaa"})"], 250.5);
  for (const auto& [key, value] : m) {
    if (key.find(R"(uuid="MIG-)") != std::string::npos) {
      EXPECT_EQ(key.find("gpu_power"), std::string::npos) << key;
    }
  }
  // Processes belong to their instance, once each: not to the parent as well.
  EXPECT_DOUBLE_EQ(m[R"(gpu_process_memory_bytes{command="python3",compute_instance="0",container="3f5b2a9c1d7e",)"
                     R"(gpu="0",gpu_instance="1",pid="1234",uuid="MIG-aaaa-1"})"],
                   1048576);
  int process_series = 0;
  for (const auto& [key, value] : m) {
    if (!key.starts_with("gpu_process_memory_bytes{")) continue;
    ++process_series;
    EXPECT_EQ(key.find(R"(uuid="GPU-aaaa")"), std::string::npos) << key;
  }
  EXPECT_EQ(process_series, 2);
  std::map<int, std::string> instance_of;
  for (const auto& r : tracker.running()) instance_of[r.identity.pid] = r.gpu_uuid;
  EXPECT_EQ(instance_of[1234], "MIG-aaaa-1");
  EXPECT_EQ(instance_of[4321], "MIG-aaaa-2");
}

TEST_F(GpuCollectorTest, TheTrackerKeepsEveryProcessPastItsEnd) {
  write(std::string(kH100) + "0.proc_util 1234:80:10:0:0@900000,4321:20:5:0:0@900000\n");
  ProcessTracker tracker;
  GpuCollectorOptions o = options();
  o.tracker = &tracker;
  GpuCollector c(o);
  pass(c, 1'000'000'000);
  pass(c, 2'000'000'000);
  EXPECT_EQ(tracker.running().size(), 2u);
  // 4321 ends.
  std::string script = std::string(kH100) + "0.proc_util 1234:80:10:0:0@2900000\n";
  script.replace(script.find("0.procs 1234:1048576,4321:2048"), 30, "0.procs 1234:1048576");
  write(script);
  pass(c, 3'000'000'000);
  auto finished = tracker.take_finished();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].key, "4321-?");  // procfs does not show it: no start time to key it by
  EXPECT_FALSE(finished[0].visible);
  EXPECT_EQ(finished[0].gpu_uuid, "GPU-aaaa");
  EXPECT_DOUBLE_EQ(finished[0].peak_memory_bytes, 2048);
  // 1 s at 250.5 W split 80:20 between the two.
  EXPECT_NEAR(finished[0].energy_joules, 250.5 * 0.2, 1e-9);
  auto running = tracker.running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].key, "1234-555000");
  EXPECT_EQ(running[0].identity.container.runtime, "docker");
  EXPECT_NEAR(running[0].energy_joules, 250.5 * 0.8 + 250.5, 1e-9);
}

TEST_F(GpuCollectorTest, AnEndedProcessesSeriesAreRetiredForTheStoreToFree) {
  write(std::string(kH100) + "0.proc_util 1234:80:10:0:0@900000,4321:20:5:0:0@900000\n");
  GpuCollector c(options());
  pass(c, 1'000'000'000);
  std::vector<SeriesKey> retired;
  c.take_retired(retired);
  EXPECT_TRUE(retired.empty());
  std::string script = std::string(kH100) + "0.proc_util 1234:80:10:0:0@1900000\n";
  script.replace(script.find("0.procs 1234:1048576,4321:2048"), 30, "0.procs 1234:1048576");
  write(script);
  auto m = pass(c, 2'000'000'000);
  c.take_retired(retired);
  // Every series 4321 had (memory, the four engines' shares, and the accounting and host ones it
  // might have had), none of 1234's, which still reads.
  std::set<std::string> keys;
  for (const SeriesKey& k : retired) keys.insert(k.canonical());
  const std::string l = R"(command="[not visible]",gpu="0",pid="4321",uuid="GPU-aaaa")";
  EXPECT_TRUE(keys.contains("gpu_process_memory_bytes{" + l + "}"));
  EXPECT_TRUE(keys.contains(R"(gpu_process_utilization_ratio{command="[not visible]",engine="sm",gpu="0",pid="4321",uuid="GPU-aaaa"})"));
  for (const std::string& k : keys) EXPECT_EQ(k.find("1234"), std::string::npos) << k;
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_FALSE(m.contains("gpu_process_memory_bytes{" + l + "}"));
  c.take_retired(retired = {});
  EXPECT_TRUE(retired.empty());  // taken once
}

// The server's way: the processes read on the collector's own thread, a later pass emitting them.
TEST_F(GpuCollectorTest, ProcessesReadOnTheirOwnThreadReachALaterPass) {
  write(std::string(kH100) + "0.proc_util 1234:80:10:0:0@900000,4321:20:5:0:0@900000\n");
  ProcessTracker tracker;
  GpuCollectorOptions o = options();
  o.tracker = &tracker;
  o.process_thread = true;
  GpuCollector c(o);
  std::map<std::string, double> seen;
  for (int i = 1; i <= 200 && !seen.contains(R"(gpu_process_memory_bytes{command="[not visible]",gpu="0",pid="4321",uuid="GPU-aaaa"})"); ++i) {
    for (const auto& [k, v] : pass(c, i * 100'000'000LL)) seen[k] = v;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_DOUBLE_EQ(seen[R"(gpu_process_memory_bytes{command="[not visible]",gpu="0",pid="4321",uuid="GPU-aaaa"})"], 2048);
  EXPECT_DOUBLE_EQ(seen[R"(gpu_process_utilization_ratio{command="[not visible]",engine="sm",gpu="0",pid="4321",uuid="GPU-aaaa"})"], 0.20);
  EXPECT_TRUE(seen.contains("gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-aaaa\"}"));
  EXPECT_EQ(tracker.running().size(), 2u);
}

TEST_F(GpuCollectorTest, ProcessesAreReadOnceAnIntervalAndTheEnergyBetweenAddsUp) {
  write(std::string(kH100) + "0.proc_util 1234:100:10:0:0@900000\n");
  ProcessTracker tracker;
  GpuCollectorOptions o = options();
  o.tracker = &tracker;
  o.process_interval = std::chrono::milliseconds(1000);
  GpuCollector c(o);
  auto has_processes = [](const std::map<std::string, double>& m) {
    return std::any_of(m.begin(), m.end(), [](const auto& kv) { return kv.first.starts_with("gpu_process_memory_bytes{"); });
  };
  EXPECT_TRUE(has_processes(pass(c, 1'000'000'000)));
  for (TimestampNs t = 1'100'000'000; t < 2'000'000'000; t += 100'000'000) EXPECT_FALSE(has_processes(pass(c, t))) << t;
  write(std::string(kH100) + "0.proc_util 1234:100:10:0:0@1900000\n");
  EXPECT_TRUE(has_processes(pass(c, 2'000'000'000)));
  // The board's energy of every pass in that second (250.5 W) went to the one process computing
  // (4321 is listed without an SM share: idle).
  double energy = -1;
  for (const auto& r : tracker.running()) {
    if (r.identity.pid == 1234) energy = r.energy_joules;
  }
  EXPECT_NEAR(energy, 250.5, 1e-6);
}

TEST_F(GpuCollectorTest, ProcessesPastTheSeriesLimitKeepOnlyTheirRecords) {
  write(std::string(kH100) + "0.proc_util 1234:80:10:0:0@900000,4321:20:5:0:0@900000\n");
  ProcessTracker tracker;
  GpuCollectorOptions o = options();
  o.tracker = &tracker;
  o.process_series_limit = 1;
  GpuCollector c(o);
  auto m = pass(c, 1'000'000'000);
  std::size_t memory_series = 0;
  for (const auto& [key, value] : m) memory_series += key.starts_with("gpu_process_memory_bytes{");
  EXPECT_EQ(memory_series, 1u);
  EXPECT_EQ(tracker.running().size(), 2u);  // both recorded, with their SM shares
  for (const auto& r : tracker.running()) EXPECT_GT(r.max_sm_ratio, 0) << r.key;
  auto sources = c.sources();
  auto it = std::find_if(sources.begin(), sources.end(), [](const SourceStatus& s) { return s.name == "processes"; });
  ASSERT_NE(it, sources.end());
  EXPECT_NE(it->detail.find("limit of 1 processes"), std::string::npos) << it->detail;
}

TEST_F(GpuCollectorTest, GpmNeedsTwoSamplesAHundredMillisecondsApart) {
  write(std::string(kH100) + "0.gpm.5 40\n");
  GpuCollector c(options());
  const std::string g0 = R"({gpu="0",uuid="GPU-aaaa"})";
  auto first = pass(c, 1'000'000'000);
  EXPECT_FALSE(first.count("gpu_dram_bandwidth_utilization_ratio" + g0));  // one sample only
  auto soon = pass(c, 1'050'000'000);                                     // 50 ms later: too soon
  EXPECT_FALSE(soon.count("gpu_dram_bandwidth_utilization_ratio" + g0));
  auto later = pass(c, 1'150'000'000);
  EXPECT_DOUBLE_EQ(later["gpu_dram_bandwidth_utilization_ratio" + g0], 0.83);
  // 0.83 of the H100's 3,352.32 GB/s, to the GB/s.
  EXPECT_EQ(later["gpu_dram_bandwidth_bytes_per_second" + g0], 2782e9);
  EXPECT_DOUBLE_EQ(later["gpu_sm_utilization_ratio" + g0], 0.91);
  // GPU 0 is an H100 SXM by its name: tensor activity × its 989.4 TFLOP/s BF16 peak, an estimate.
  EXPECT_DOUBLE_EQ(later["gpu_tensor_activity_ratio" + g0], 0.40);
  EXPECT_EQ(later["gpu_tensor_estimated_flops_per_second" + g0], 396e12);  // 395.76, to the TFLOP/s
  EXPECT_DOUBLE_EQ(later["gpu_sm_occupancy_ratio" + g0], 0.475);
  EXPECT_EQ(later["gpu_pcie_tx_bytes_per_second" + g0], 1074e6);  // 1024 MiB/s, to the MB/s
  EXPECT_FALSE(later.count("gpu_nvlink_rx_bytes_per_second" + g0));  // this GPU gave none
  EXPECT_FALSE(later.count(R"(gpu_dram_bandwidth_utilization_ratio{gpu="1",uuid="GPU-bbbb"})"));
  // Held at 1386 of its 1980 MHz (its power limit): the peak scales with the SM clock.
  write(std::string(kH100) + "0.gpm.5 40\n0.clock_sm 1386\n");
  auto slower = pass(c, 1'300'000'000);
  EXPECT_EQ(slower["gpu_tensor_estimated_flops_per_second" + g0], 277e12);  // 0.40 × 989.4 × 1386 / 1980
}

// Each active NVLink link's traffic, labelled with the GPU at its other end (or nvswitch), and
// the traffic of each pair of GPUs wired directly: the sum of the links between them.
TEST_F(GpuCollectorTest, NvLinkTrafficPerLinkAndPerDirectlyWiredPair) {
  write(std::string(kH100) + "0.nvlink 1:2,switch:1\n1.nvlink 0:2\n"
                             "0.gpm.62 100\n0.gpm.63 50\n0.gpm.64 200\n0.gpm.65 25\n0.gpm.66 10\n0.gpm.67 5\n");
  GpuCollector c(options());
  pass(c, 1'000'000'000);
  auto m = pass(c, 1'150'000'000);
  auto link = [&](const char* dir, int n, const char* peer) {
    return m[std::string("gpu_nvlink_link_") + dir + R"(_bytes_per_second{gpu="0",link=")" + std::to_string(n) +
             R"(",peer=")" + peer + R"(",uuid="GPU-aaaa"})"];
  };
  EXPECT_EQ(link("rx", 0, "1"), 105e6);  // 100 MiB/s, to the MB/s
  EXPECT_EQ(link("tx", 1, "1"), 26e6);
  EXPECT_EQ(link("rx", 2, "nvswitch"), 10e6);
  EXPECT_EQ(m[R"(gpu_nvlink_peer_rx_bytes_per_second{gpu="0",peer="1",uuid="GPU-aaaa"})"], 105e6 + 210e6);
  EXPECT_EQ(m[R"(gpu_nvlink_peer_tx_bytes_per_second{gpu="0",peer="1",uuid="GPU-aaaa"})"], 52e6 + 26e6);
  EXPECT_FALSE(m.count(R"(gpu_nvlink_peer_rx_bytes_per_second{gpu="0",peer="nvswitch",uuid="GPU-aaaa"})"));  // any GPU
  // GPU 1 gives no GPM here: its links have no series, and that is all.
  for (const auto& [key, v] : m) EXPECT_EQ(key.find(R"(gpu_nvlink_link_rx_bytes_per_second{gpu="1")"), std::string::npos) << key;
}

// A GPU's link peak: its active links at the speed NVML gives per link (what recent drivers
// answer), else the common speed of older ones; none without NVLink.
TEST_F(GpuCollectorTest, LinkPeakIsActiveLinksTimesNvmlsPerLinkSpeed) {
  write(std::string(kH100) + "0.nvlink 1:2,switch:1\n1.nvlink 0:2\n0.nvlink_link_mbps 26562\n0.nvlink_mbps 25000\n"
                             "1.nvlink_mbps 25000\n");
  GpuCollector c(options());
  const auto devices = c.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].nvlinks, 3u);
  EXPECT_EQ(devices[0].link_peak_bytes_per_second(), 3 * 26562e6) << "the per-link field first";
  EXPECT_EQ(devices[1].link_peak_bytes_per_second(), 2 * 25000e6) << "the common speed where it is all there is";
  write(std::string(kH100));
  GpuCollector none(options());
  EXPECT_EQ(none.devices()[0].link_peak_bytes_per_second(), 0);
}

// NVML's GPM doubles carry noise in every digit; they are recorded on a fixed grid, exactly as
// the store's scaled coding decodes them (so they go to disk as small integers).
TEST_F(GpuCollectorTest, GpmValuesAreRecordedOnTheirGrid) {
  write(std::string(kH100) + "0.gpm.2 95.547583111573209\n0.gpm.12 0.0049999\n0.gpm.21 12.3456789\n");
  GpuCollector c(options());
  const std::string g0 = R"({gpu="0",uuid="GPU-aaaa"})";
  pass(c, 1'000'000'000);
  auto m = pass(c, 1'200'000'000);
  EXPECT_EQ(m["gpu_sm_utilization_ratio" + g0], 9555.0 / 1e4);
  EXPECT_EQ(m["gpu_fp32_activity_ratio" + g0], 0.0);  // 0.00005 %: below the grid
  EXPECT_EQ(m["gpu_pcie_rx_bytes_per_second" + g0], 13e6);  // 12.35 MiB/s = 12.95 MB/s
}

TEST_F(GpuCollectorTest, ThrottleTimeAccumulatesPerReasonAndSetsTheThermalState) {
  write(std::string(kH100) + "0.reasons 0x44\n");  // sw power cap + hw thermal slowdown
  GpuCollector c(options());
  pass(c, 1'000'000'000);
  auto m = pass(c, 3'000'000'000);
  EXPECT_DOUBLE_EQ(m[R"(gpu_throttle_seconds_total{gpu="0",reason="sw_power_cap",uuid="GPU-aaaa"})"], 2);
  EXPECT_DOUBLE_EQ(m[R"(gpu_throttle_seconds_total{gpu="0",reason="hw_thermal_slowdown",uuid="GPU-aaaa"})"], 2);
  EXPECT_DOUBLE_EQ(m[R"(gpu_throttle_seconds_total{gpu="0",reason="gpu_idle",uuid="GPU-aaaa"})"], 0);
  EXPECT_DOUBLE_EQ(m[R"(gpu_thermal_state{gpu="0",uuid="GPU-aaaa"})"], 2);  // serious
  write(std::string(kH100) + "0.reasons 0\n0.temp 89\n");
  m = pass(c, 4'000'000'000);
  EXPECT_DOUBLE_EQ(m[R"(gpu_throttle_seconds_total{gpu="0",reason="sw_power_cap",uuid="GPU-aaaa"})"], 3);
  EXPECT_DOUBLE_EQ(m[R"(gpu_thermal_state{gpu="0",uuid="GPU-aaaa"})"], 3);  // within 5 °C of shutdown
  write(std::string(kH100) + "0.reasons 0\n0.temp 80\n");
  EXPECT_DOUBLE_EQ(pass(c, 5'000'000'000)[R"(gpu_thermal_state{gpu="0",uuid="GPU-aaaa"})"], 1);  // fair
}

TEST_F(GpuCollectorTest, MemoryFallsBackToVersionOneAndUnsupportedMetricsAreListed) {
  write(std::string(kH100) + "0.memory_v2_rc 13\n0.power_rc 3\n");
  GpuCollector c(options());
  auto m = pass(c, 1'000'000'000);
  const std::string g0 = R"({gpu="0",uuid="GPU-aaaa"})";
  EXPECT_DOUBLE_EQ(m["gpu_memory_used_bytes" + g0], 1073741824.0 + 675282944.0);  // v1 counts reserved
  EXPECT_FALSE(m.count("gpu_memory_reserved_bytes" + g0));
  EXPECT_FALSE(m.count("gpu_power_watts" + g0));
  auto unsupported = c.devices()[0].unsupported;
  EXPECT_NE(std::find(unsupported.begin(), unsupported.end(), "power"), unsupported.end());
  bool listed = false;
  for (const auto& s : c.sources()) listed |= s.name == "gpu0" && s.detail.find("power") != std::string::npos;
  EXPECT_TRUE(listed);
}

TEST_F(GpuCollectorTest, ALostGpuIsMarkedAndRecovered) {
  write(kH100);
  GpuCollector c(options());
  const std::string g0 = R"({gpu="0",uuid="GPU-aaaa"})";
  EXPECT_DOUBLE_EQ(pass(c, 1'000'000'000)["gpu_up" + g0], 1);
  write(std::string(kH100) + "0.lost 1\n");
  auto lost = pass(c, 2'000'000'000);
  EXPECT_DOUBLE_EQ(lost["gpu_up" + g0], 0);
  EXPECT_FALSE(lost.count("gpu_power_watts" + g0));
  EXPECT_DOUBLE_EQ(lost[R"(gpu_up{gpu="1",uuid="GPU-bbbb"})"], 1);  // the other GPU goes on
  EXPECT_TRUE(c.devices()[0].lost);
  write(kH100);
  EXPECT_DOUBLE_EQ(pass(c, 3'000'000'000)["gpu_up" + g0], 0);  // retried only after 5 s
  EXPECT_DOUBLE_EQ(pass(c, 8'000'000'000)["gpu_up" + g0], 1);
}

TEST_F(GpuCollectorTest, EnergyIsReadEveryTenSecondsAndRepeatedBetween) {
  write(kH100);
  GpuCollector c(options());
  const std::string key = R"(gpu_energy_joules_total{gpu="0",uuid="GPU-aaaa"})";
  EXPECT_DOUBLE_EQ(pass(c, 1'000'000'000)[key], 1234.567);
  write(std::string(kH100) + "0.energy_mj 2000000\n");
  EXPECT_DOUBLE_EQ(pass(c, 5'000'000'000)[key], 1234.567);  // not re-read yet: the last value
  EXPECT_DOUBLE_EQ(pass(c, 12'000'000'000)[key], 2000);
}

TEST_F(GpuCollectorTest, NoLibraryMeansNoGpuAndNoError) {
  GpuCollectorOptions o;
  o.library_path = dir_.file("libnvidia-ml-missing.so");
  GpuCollector c(o);
  ASSERT_EQ(c.sources().size(), 1u);
  EXPECT_FALSE(c.sources()[0].available);
  EXPECT_NE(c.sources()[0].detail.find("NVML is not available"), std::string::npos);
  EXPECT_TRUE(c.devices().empty());
  std::vector<Reading> out;
  c.collect(1, out);
  EXPECT_TRUE(out.empty());
  write("count 0\n");
  GpuCollector none(options());
  EXPECT_TRUE(none.devices().empty());
  write("init_rc 9\n");  // driver not loaded
  GpuCollector failed(options());
  EXPECT_FALSE(failed.sources()[0].available);
  EXPECT_NE(failed.sources()[0].detail.find("nvmlInit failed"), std::string::npos);
}

}  // namespace
}  // namespace perfscope
