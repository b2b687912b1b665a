// The GPU collector inside the real server, pointed at the scripted stand-in NVML with the
// same option a user would use (--nvml-library).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "support/live_server.hpp"

namespace perfscope::server {
namespace {

using namespace perfscope::testing;

class GpuApiTest : public ServerTest {
 protected:
  void SetUp() override {
    script_ = dir_.file("nvml.txt");
    std::ofstream(script_) << "count 1\n0.name NVIDIA H100 80GB HBM3\n0.uuid GPU-aaaa\n0.util_gpu 97\n"
                              "0.mem_total 85520809984\n0.mem_used 80000000000\n0.mem_reserved 0\n"
                              "0.max_clock_mem 2619\n0.bus_width 5120\n0.limit_mw 700000\n0.power_mw 690000\n"
                              "0.reasons 0x20\n0.temp 88\n0.slowdown 87\n0.shutdown 100\n"
                              "0.gpm 1\n0.gpm.10 35\n0.gpm.2 95\n";
    ::setenv("PERFSCOPE_FAKE_NVML_SCRIPT", script_.c_str(), 1);
    config_.engine.nvml_library = PERFSCOPE_FAKE_NVML;
    config_.engine.power_target_watts = 600;
    ServerTest::SetUp();
  }
  void TearDown() override {
    ServerTest::TearDown();
    ::unsetenv("PERFSCOPE_FAKE_NVML_SCRIPT");
  }
  std::string script_;
};

TEST_F(GpuApiTest, DevicesSeriesAndTheGpuBottleneckRules) {
  json d = get("/api/v1/devices").body_json();
  EXPECT_TRUE(d["nvml"]["available"].get<bool>());
  ASSERT_EQ(d["gpus"].size(), 1u);
  EXPECT_EQ(d["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d["gpus"][0]["uuid"], "GPU-aaaa");
  EXPECT_TRUE(d["gpus"][0]["gpm"].get<bool>());
  EXPECT_DOUBLE_EQ(d["gpus"][0]["peak_dram_bandwidth_bytes_per_second"].get<double>(), 2619e6 * 5120 / 8 * 2);

  wait_for_passes(6);  // GPM readings need two samples 100 ms apart
  json q = get("/api/v1/series/query?name=gpu_utilization_ratio&from=now-1m").body_json();
  ASSERT_EQ(q["series"].size(), 1u);
  EXPECT_EQ(q["series"][0]["labels"]["uuid"], "GPU-aaaa");
  EXPECT_DOUBLE_EQ(q["series"][0]["points"].back()[1].get<double>(), 0.97);

  json info = get("/api/v1/info").body_json();
  bool listed = false;
  for (const json& c : info["collectors"]) listed |= c["name"] == "nvidia";
  EXPECT_TRUE(listed);

  // With GPU data the GPU rules evaluate: 97% busy at 35% DRAM bandwidth is compute bound,
  // memory 94% used is high, a software thermal slowdown throttles.
  wait_for_passes(4);
  json a = get("/api/v1/analysis?window=1m").body_json();
  std::map<std::string, json> f;
  for (const json& x : a["bottlenecks"]) f[x["id"]] = x;
  EXPECT_EQ(f["gpu_compute_bound"]["status"], "fired");
  EXPECT_EQ(f["high_memory_usage"]["status"], "fired");
  EXPECT_EQ(f["low_gpu_utilization"]["status"], "ok");
  EXPECT_EQ(f["memory_bandwidth_bound"]["status"], "ok");
  EXPECT_EQ(f["thermal_throttling"]["status"], "fired");
  EXPECT_EQ(f["power_capping"]["status"], "ok");

  // 690 W against a 600 W target, and a software thermal slowdown: one alert each.
  json alerts = get("/api/v1/alerts").body_json();
  EXPECT_EQ(alerts["power_target_watts"], 600);
  std::map<std::string, int> kinds;
  for (const json& x : alerts["alerts"]) ++kinds[x["kind"]];
  EXPECT_EQ(kinds["power_target"], 1);
  EXPECT_EQ(kinds["thermal_throttling"], 1);
}

}  // namespace
}  // namespace perfscope::server
