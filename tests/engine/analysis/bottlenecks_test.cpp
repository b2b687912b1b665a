// The bottleneck rules on crafted inputs: each fires, stays quiet when idle, names what its
// evidence is about and says in words why it could not be evaluated.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/analysis/bottlenecks.hpp"

namespace perfscope::analysis {
namespace {

const Finding& find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.id == id) return f;
  }
  throw std::runtime_error("no finding " + id);
}

TEST(Bottlenecks, EveryRuleFiresOnCraftedInputAndStaysQuietWhenIdle) {
  const Inputs busy = {{"gpu_utilization_avg", 0.97},        {"gpu_dram_bandwidth_utilization_avg", 0.2},
                       {"gpu_memory_used_ratio_peak", 0.98}, {"gpu_thermal_throttle_seconds", 3},
                       {"gpu_power_cap_throttle_seconds", 1}, {"host_cpu_utilization_avg", 0.95},
                       {"kernel_count", 5000},               {"kernel_max_ms", 250},
                       {"kernel_busy_ratio", 0.3},           {"kernel_avg_gap_ms", 0.05},
                       {"kernel_short_share", 0.8},          {"kernel_host_wait_share", 0.7},
                       {"latency_p99_ms", 120},              {"sla_target_ms", 100},
                       {"operator_cpu_fallback_share", 0.4},  {"device_target_of_minimum_worst", 0.5},
                       {"collective_matched", 70},           {"collective_straggler_extra_share", 0.4},
                       {"collective_straggler_rank", 1},      {"collective_straggler_extra_ms", 1.6},
                       {"collective_exposed_transfer_share", 0.45}, {"collective_exposed_rank", 0},
                       {"collective_large_busbw_share_of_peak", 0.3}, {"collective_large_bytes", 64 << 20}};
  auto fired = detect_bottlenecks(busy);
  for (const char* id : {"gpu_compute_bound", "high_memory_usage", "long_kernel_execution", "launch_overhead_bound",
                         "host_bound_input_pipeline", "thermal_throttling", "power_capping", "sla_at_risk",
                         "operators_cpu_fallback", "device_below_minimum", "straggler", "communication_bound",
                         "low_bus_bandwidth"}) {
    const Finding& f = find(fired, id);
    EXPECT_EQ(f.status, "fired") << id;
    EXPECT_FALSE(f.recommendations.empty()) << id;
    EXPECT_FALSE(f.evidence.empty()) << id;
  }
  EXPECT_EQ(find(fired, "high_memory_usage").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "sla_at_risk").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "launch_overhead_bound").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "operators_cpu_fallback").severity, Severity::kCritical);
  // The straggler's rank and extra time ride along as evidence; a tenth of a step is a note.
  EXPECT_EQ(find(fired, "straggler").severity, Severity::kWarning);
  EXPECT_EQ(find(fired, "straggler").evidence.at("collective_straggler_rank"), 1);
  EXPECT_EQ(find(fired, "straggler").evidence.at("collective_straggler_extra_ms"), 1.6);
  EXPECT_EQ(find(detect_bottlenecks({{"collective_matched", 70}, {"collective_straggler_extra_share", 0.1}}), "straggler")
                .severity,
            Severity::kInfo);
  // Exposed communication: a note from a fifth of the window, a warning from two fifths.
  EXPECT_EQ(find(fired, "communication_bound").severity, Severity::kWarning);
  EXPECT_EQ(find(fired, "communication_bound").evidence.at("collective_exposed_rank"), 0);
  EXPECT_EQ(find(detect_bottlenecks({{"collective_matched", 70}, {"collective_exposed_transfer_share", 0.25}}), "communication_bound")
                .severity,
            Severity::kInfo);
  EXPECT_EQ(find(detect_bottlenecks({{"collective_matched", 70}, {"collective_exposed_transfer_share", 0.1}}), "communication_bound")
                .status,
            "ok");
  // Gaps with the next kernel already launched (a multi-GPU job's collectives and their
  // dependencies) are no launch overhead; short kernels still are.
  const Inputs waiting = {{"kernel_count", 5000}, {"kernel_busy_ratio", 0.23}, {"kernel_avg_gap_ms", 0.29},
                          {"kernel_short_share", 0.005}, {"kernel_host_wait_share", 0.1}};
  EXPECT_EQ(find(detect_bottlenecks(waiting), "launch_overhead_bound").status, "ok");
  Inputs host_paced = waiting;
  host_paced["kernel_host_wait_share"] = 0.8;
  EXPECT_EQ(find(detect_bottlenecks(host_paced), "launch_overhead_bound").severity, Severity::kWarning);
  Inputs tiny = waiting;
  tiny["kernel_short_share"] = 0.8;
  EXPECT_EQ(find(detect_bottlenecks(tiny), "launch_overhead_bound").severity, Severity::kWarning);
  // Large collectives below half the links' peak: a warning, the size riding along.
  EXPECT_EQ(find(fired, "low_bus_bandwidth").severity, Severity::kWarning);
  EXPECT_EQ(find(fired, "low_bus_bandwidth").evidence.at("collective_large_bytes"), 64 << 20);
  EXPECT_EQ(find(detect_bottlenecks({{"collective_matched", 70}, {"collective_large_busbw_share_of_peak", 0.5}}), "low_bus_bandwidth")
                .status,
            "ok");
  // Collectives without sizes: not evaluated, and the reason says what is missing.
  const Finding sizeless = find(detect_bottlenecks({{"collective_matched", 70}}), "low_bus_bandwidth");
  EXPECT_EQ(sizeless.status, "not_evaluated");
  EXPECT_NE(sizeless.reason.find("with their sizes"), std::string::npos) << sizeless.reason;
  EXPECT_EQ(find(detect_bottlenecks({{"operator_cpu_fallback_share", 0.15}}), "operators_cpu_fallback").severity,
            Severity::kWarning);
  EXPECT_EQ(fired.front().severity, Severity::kCritical);  // most severe first
  // The other two GPU rules, each on its own input.
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_dram_bandwidth_utilization_avg", 0.85}}), "memory_bandwidth_bound").severity,
            Severity::kWarning);
  // Saturation: bandwidth stayed at 90% of peak or more.
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_dram_bandwidth_utilization_avg", 0.93}}), "memory_bandwidth_bound").severity,
            Severity::kCritical);
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_utilization_avg", 0.1}}), "low_gpu_utilization").status, "fired");

  // An idle machine with a GPU: measured, nothing fires.
  const Inputs idle = {{"gpu_utilization_avg", 0.5},         {"gpu_dram_bandwidth_utilization_avg", 0.1},
                       {"gpu_memory_used_ratio_peak", 0.05}, {"gpu_thermal_throttle_seconds", 0},
                       {"gpu_power_cap_throttle_seconds", 0}, {"host_cpu_utilization_avg", 0.02},
                       {"kernel_count", 10},                 {"kernel_max_ms", 1},
                       {"kernel_busy_ratio", 0.1},           {"kernel_avg_gap_ms", 100},
                       {"kernel_short_share", 0},            {"kernel_host_wait_share", 0.1},
                       {"latency_p99_ms", 10},               {"sla_target_ms", 100},
                       {"operator_cpu_fallback_share", 0.02}, {"device_target_of_minimum_worst", 0.9},
                       {"collective_matched", 70},           {"collective_straggler_extra_share", 0},
                       {"collective_exposed_transfer_share", 0.05}, {"collective_large_busbw_share_of_peak", 0.66}};
  for (const auto& f : detect_bottlenecks(idle)) EXPECT_EQ(f.status, "ok") << f.id;

  // Nothing measured: every rule says what it lacks.
  for (const auto& f : detect_bottlenecks({})) {
    EXPECT_EQ(f.status, "not_evaluated") << f.id;
    EXPECT_NE(f.reason.find("; not measured here: "), std::string::npos);
  }
}

// Advice names what its evidence is about and fits the device it ran on; long idle gaps are a
// program not submitting work, not launch overhead.
TEST(Bottlenecks, AdviceNamesTheKernelAndFitsTheDevice) {
  const Inputs sparse = {{"kernel_count", 278}, {"kernel_max_ms", 800}, {"kernel_busy_ratio", 0.001},
                         {"kernel_avg_gap_ms", 8800}};
  const Subjects on_cpu = {{"kernel_longest", "preprocess"}, {"kernel_longest_device", "cpu0"},
                           {"kernel_gappiest_device", "cpu0"}};
  auto findings = detect_bottlenecks(sparse, on_cpu);
  EXPECT_EQ(find(findings, "launch_overhead_bound").status, "ok");  // 8.8 s gaps: idle, not launch cost
  const Finding& cpu_long = find(findings, "long_kernel_execution");
  ASSERT_EQ(cpu_long.status, "fired");
  EXPECT_EQ(cpu_long.subject, "preprocess");
  EXPECT_EQ(cpu_long.subject_device, "cpu0");
  for (const std::string& rec : cpu_long.recommendations) {
    EXPECT_NE(rec.find("preprocess"), std::string::npos) << rec;
    EXPECT_EQ(rec.find("block"), std::string::npos) << rec;  // no GPU advice for CPU work
  }

  const Subjects on_gpu = {{"kernel_longest", "flash_fwd"}, {"kernel_longest_device", "0"},
                           {"kernel_gappiest_device", "1"}};
  const Inputs gappy = {{"kernel_count", 5000}, {"kernel_max_ms", 80}, {"kernel_busy_ratio", 0.3},
                        {"kernel_avg_gap_ms", 0.05}};
  findings = detect_bottlenecks(gappy, on_gpu);
  const Finding& gpu_long = find(findings, "long_kernel_execution");
  EXPECT_NE(gpu_long.recommendations.at(2).find("flash_fwd parallelises across blocks"), std::string::npos);
  const Finding& launch = find(findings, "launch_overhead_bound");
  ASSERT_EQ(launch.status, "fired");
  EXPECT_EQ(launch.subject, "1");
  EXPECT_NE(launch.recommendations.at(0).find("GPU 1"), std::string::npos) << launch.recommendations.at(0);
  EXPECT_NE(launch.recommendations.at(0).find("CUDA graph"), std::string::npos);
  // Without subjects the advice still reads.
  EXPECT_NE(find(detect_bottlenecks(gappy), "long_kernel_execution").recommendations.at(0).find("Split the kernel"),
            std::string::npos);
}

TEST(Bottlenecks, NotEvaluatedSaysWhyInWords) {
  auto findings = detect_bottlenecks({{"gpu_utilization_avg", 0.5}});
  EXPECT_EQ(find(findings, "long_kernel_execution").reason.rfind("no kernels in this range", 0), 0u);
  EXPECT_EQ(find(findings, "sla_at_risk").reason.rfind("no inference requests in this range", 0), 0u);
  EXPECT_EQ(find(findings, "memory_bandwidth_bound").reason.rfind("no GPU DRAM bandwidth", 0), 0u);
  EXPECT_EQ(find(findings, "high_memory_usage").reason.rfind("no GPU metrics", 0), 0u);
  EXPECT_EQ(find(findings, "power_capping").reason.rfind("no GPU throttle counters", 0), 0u);
  EXPECT_NE(find(findings, "sla_at_risk").reason.find("not measured here: latency_p99_ms, sla_target_ms"),
            std::string::npos);
  findings = detect_bottlenecks({{"latency_p99_ms", 90}});
  EXPECT_EQ(find(findings, "sla_at_risk").reason.rfind("no latency objective set (sla_ms)", 0), 0u);
}

}  // namespace
}  // namespace perfscope::analysis
