// The GPU collector inside the real server, pointed at the scripted stand-in NVML with the
// same option a user would use (--nvml-library).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

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
                              "0.reasons 0x20\n0.temp 88\n0.slowdown 87\n0.shutdown 100\n0.xids 94\n"
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

// Four GPUs: 0 and 1 joined by 18 NVLink links directly, 2 and 3 by 18 and 12 links to
// NVSwitches (as on an HGX board), in NUMA nodes as a dual-socket host has them.
class GpuTopologyTest : public ServerTest {
 protected:
  void SetUp() override {
    script_ = dir_.file("nvml.txt");
    std::ofstream(script_) << "count 4\n0.nvlink 1:18\n1.nvlink 0:18\n2.nvlink switch:18\n3.nvlink switch:12\n"
                              "topo.0.1 40\ntopo.0.2 50\ntopo.0.3 50\ntopo.1.2 50\ntopo.1.3 50\ntopo.2.3 10\n";
    ::setenv("PERFSCOPE_FAKE_NVML_SCRIPT", script_.c_str(), 1);
    config_.engine.nvml_library = PERFSCOPE_FAKE_NVML;
    ServerTest::SetUp();
  }
  void TearDown() override {
    ServerTest::TearDown();
    ::unsetenv("PERFSCOPE_FAKE_NVML_SCRIPT");
  }
  std::string script_;
};

TEST_F(GpuTopologyTest, EveryPairOfGpusIsLabelledAsTopoShowsIt) {
  json d = get("/api/v1/devices").body_json();
  std::map<std::string, std::string> label;
  std::map<std::string, unsigned> nvlinks;
  for (const json& l : d["topology"]) {
    const std::string pair = l["a"].get<std::string>() + "-" + l["b"].get<std::string>();
    label[pair] = l["link"];
    nvlinks[pair] = l["nvlinks"];
  }
  ASSERT_EQ(label.size(), 6u) << d["topology"].dump();
  EXPECT_EQ(label["0-1"], "NV18");
  EXPECT_EQ(nvlinks["0-1"], 18u);
  EXPECT_EQ(label["0-2"], "SYS");  // GPU 0's links lead to GPU 1, not to the switches
  EXPECT_EQ(label["1-3"], "SYS");
  EXPECT_EQ(label["2-3"], "NV12");  // through the switches: the less connected GPU's links
  EXPECT_EQ(nvlinks["2-3"], 12u);
  for (const json& l : d["topology"]) {
    EXPECT_EQ(l["via_nvswitch"].get<bool>(), l["a"] == "2" && l["b"] == "3") << l.dump();
  }
  for (const json& l : d["topology"]) {
    if (l["a"] == "0" && l["b"] == "1") {
      EXPECT_EQ(l["pcie"], "NODE");
    }
  }
}

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

  // 690 W against a 600 W target, a software thermal slowdown and an Xid 94: one alert each.
  json alerts = get("/api/v1/alerts").body_json();
  EXPECT_EQ(alerts["power_target_watts"], 600);
  std::map<std::string, int> kinds;
  for (const json& x : alerts["alerts"]) ++kinds[x["kind"]];
  EXPECT_EQ(kinds["power_target"], 1);
  EXPECT_EQ(kinds["thermal_throttling"], 1);
  EXPECT_EQ(kinds["xid"], 1);
  for (const json& x : alerts["alerts"]) {
    if (x["kind"] == "xid") {
      EXPECT_EQ(x["message"], "GPU 0 reported Xid 94: contained ECC error (the affected application must restart)");
    }
  }
}

// Kernels that report their work, placed on the H100's roofline, and the GPU against targets
// given as a user would (--device-target, --gpu-peak), every figure worked out by hand.
class DeviceTargetTest : public GpuApiTest {
 protected:
  void SetUp() override {
    config_.engine.device_targets.push_back({"h100", 600.0, 800.0, 1000.0, 2000.0, 70e9, 650.0});
    config_.engine.device_targets.push_back({"*", 1.0, {}, {}, {}, {}, {}});  // never reached: first match wins
    config_.engine.gpu_peaks.push_back({"H100", "", {{"fp8", 2000.0}}, 0});
    GpuApiTest::SetUp();
  }
  Reply post_events(const std::string& ndjson) {
    return request(http::verb::post, "/api/v1/events", {{"Content-Type", "application/x-ndjson"}}, ndjson);
  }
};

TEST_F(DeviceTargetTest, KernelsOnTheRooflineAndTheGpuAgainstItsTargets) {
  const std::int64_t t = now_ns() - 10'000'000'000;
  auto kernel = [&](const char* name, int i, const std::string& work) {
    return R"({"type":"kernel","name":")" + std::string(name) + R"(","device":"0","start_ns":)" +
           std::to_string(t + i * 10'000'000) + R"(,"end_ns":)" + std::to_string(t + i * 10'000'000 + 1'000'000) + work + "}\n";
  };
  // 1 ms each: a GEMM of 500 GFLOP over 1 GB in bf16 (500 TFLOP/s at 500 FLOP/B), a copy of
  // 2 GB with a token 1 MFLOP (2000 GB/s), an fp8 kernel, and one with no dtype.
  Reply r = post_events(kernel("gemm", 0, R"(,"flops":5e11,"bytes":1e9,"dtype":"bf16")") +
                        kernel("copy", 1, R"(,"flops":1e6,"bytes":2e9,"dtype":"bf16")") +
                        kernel("fp8_gemm", 2, R"(,"flops":1e12,"bytes":1e9,"dtype":"fp8")") +
                        kernel("untyped", 3, R"(,"flops":1e9,"bytes":1e9)"));
  ASSERT_EQ(r.status, 200) << r.body;
  // Executions of no measurable duration that report their work: no rate and no place, no crash.
  r = post_events(R"({"type":"kernel","name":"instant","device":"0","start_ns":)" + std::to_string(t) + R"(,"end_ns":)" +
                  std::to_string(t) + R"(,"flops":1e9,"bytes":1e6,"dtype":"bf16"})" + "\n");
  ASSERT_EQ(r.status, 200) << r.body;
  Reply bad = post_events(kernel("k", 4, R"(,"flops":1,"dtype":"fp4")"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body_json()["error"]["field"], "dtype") << bad.body;

  json d = get("/api/v1/devices").body_json();
  ASSERT_EQ(d["gpus"].size(), 1u) << d;
  EXPECT_EQ(d["gpus"][0]["peak"]["tflops"]["fp8"], 2000.0);  // --gpu-peak over the table's 1978.9
  EXPECT_EQ(d["gpus"][0]["peak"]["tflops"]["bf16"], 989.4);

  const double dram = 2619e6 * 5120 / 8 * 2;  // NVML: max memory clock × bus width, double data rate
  std::map<std::string, json> k;
  const json kernels = get("/api/v1/kernels?window=1m").body_json();
  for (const json& row : kernels["kernels"]) k[row["name"]] = row;
  ASSERT_EQ(k.size(), 5u) << kernels;
  EXPECT_TRUE(k["instant"]["achieved_tflops"].is_null());
  EXPECT_TRUE(k["instant"]["roofline"].empty());  // no work of measurable duration: no roofline entry
  const json& gemm = k["gemm"]["roofline"][0];
  EXPECT_EQ(gemm["device"], "0");
  EXPECT_EQ(gemm["dtype"], "bf16");
  EXPECT_EQ(gemm["peak_source"]["dram"], "nvml");
  EXPECT_DOUBLE_EQ(gemm["ridge_flops_per_byte"].get<double>(), 989.4e12 / dram);
  EXPECT_DOUBLE_EQ(gemm["arithmetic_intensity"].get<double>(), 500.0);
  EXPECT_EQ(gemm["bound"], "compute");
  EXPECT_NEAR(gemm["achieved_tflops"].get<double>(), 500.0, 1e-9);
  EXPECT_NEAR(gemm["fraction_of_attainable"].get<double>(), 500.0 / 989.4, 1e-12);
  const json& copy = k["copy"]["roofline"][0];
  EXPECT_EQ(copy["bound"], "memory");
  EXPECT_NEAR(copy["attainable_tflops"].get<double>(), 5e-4 * dram / 1e12, 1e-15);
  EXPECT_NEAR(copy["fraction_of_peak_bandwidth"].get<double>(), 2e12 / dram, 1e-12);
  const json& fp8 = k["fp8_gemm"]["roofline"][0];
  EXPECT_EQ(fp8["peak_tflops"], 2000.0);
  EXPECT_EQ(fp8["peak_source"]["compute"], "datasheet, config");
  EXPECT_EQ(k["untyped"]["roofline"][0]["unavailable"], "no dtype reported with the flops: the compute ceiling depends on it");
  EXPECT_EQ(k["untyped"]["dtypes"], json::array());

  // The device: work over the time of the executions that reported it (4 ms).
  wait_for_passes(4);
  json a = get("/api/v1/analysis?window=1m").body_json();
  ASSERT_EQ(a["devices"].size(), 1u);
  const json& dev = a["devices"][0];
  EXPECT_EQ(dev["target"]["match"], "h100");
  const double flops = 5e11 + 1e6 + 1e12 + 1e9, bytes = 1e9 + 2e9 + 1e9 + 1e9;
  EXPECT_NEAR(dev["achieved"]["tflops"]["value"].get<double>(), flops / 4e-3 / 1e12, 1e-9);
  EXPECT_EQ(dev["achieved"]["tflops"]["source"], "kernels");
  std::map<std::string, json> c;
  for (const json& x : dev["checks"]) c[x["figure"]] = x;
  ASSERT_EQ(c.size(), 4u);
  // 375.25 TFLOP/s: 0.63 of the 600 minimum, under 0.8 of it.
  EXPECT_NEAR(c["tflops"]["of_minimum"].get<double>(), flops / 4e-3 / 1e12 / 600, 1e-12);
  EXPECT_NEAR(c["tflops"]["efficiency"].get<double>(), flops / 4e-3 / 1e12 / 800, 1e-12);
  EXPECT_EQ(c["tflops"]["status"], "below_minimum");
  EXPECT_TRUE(c["tflops"]["recommendation"].is_string());
  // 1250 GB/s: above the 1000 minimum, below the 2000 target.
  EXPECT_NEAR(c["gb_per_second"]["achieved"]["value"].get<double>(), bytes / 4e-3 / 1e9, 1e-9);
  EXPECT_EQ(c["gb_per_second"]["status"], "below_target");
  EXPECT_TRUE(c["gb_per_second"]["recommendation"].is_null());
  // 80 GB used of a 70 GB budget, 690 W of 650 W.
  EXPECT_NEAR(c["memory_bytes"]["of_budget"].get<double>(), 80e9 / 70e9, 1e-12);
  EXPECT_EQ(c["memory_bytes"]["status"], "over_budget");
  EXPECT_NEAR(c["power_watts"]["of_budget"].get<double>(), 690.0 / 650, 1e-9);
  EXPECT_EQ(c["power_watts"]["status"], "over_budget");
  std::map<std::string, json> f;
  for (const json& x : a["bottlenecks"]) f[x["id"]] = x;
  EXPECT_EQ(f["device_below_minimum"]["status"], "fired");
  EXPECT_NEAR(f["device_below_minimum"]["evidence"]["device_target_of_minimum_worst"].get<double>(), flops / 4e-3 / 1e12 / 600, 1e-12);

  // The report: the kernels' work columns and the device checks with their recommendations.
  const std::string md = get("/api/v1/report?format=md&window=1m").body;
  EXPECT_NE(md.find("| Kernel | Count | Total | Average | Min | Max | Share | TFLOP/s | GB/s | Roofline |"), std::string::npos) << md;
  EXPECT_NE(md.find("compute-bound, 51% of attainable"), std::string::npos) << md;
  EXPECT_NE(md.find("## Device targets"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | TFLOP/s | 375.3 TFLOP/s (kernels) | min 600 TFLOP/s · target 800 TFLOP/s | 46.9% of target | below minimum |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("- GPU 0: Achieved 375.3 TFLOP/s is below 480 TFLOP/s"), std::string::npos) << md;
  const std::string text = get("/api/v1/report?format=terminal&window=1m").body;
  EXPECT_NE(text.find("=== Device Targets ==="), std::string::npos) << text;
}

}  // namespace
}  // namespace perfscope::server
