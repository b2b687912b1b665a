// Kernels' reported work as rates and their place on a roofline, and GPUs against their
// targets: figures worked out by hand.
#include <gtest/gtest.h>

#include "engine/analysis/device_targets.hpp"
#include "engine/analysis/roofline.hpp"

namespace perfscope::analysis {
namespace {

KernelEvent worked(std::optional<double> flops, std::optional<double> bytes) {
  KernelEvent e;
  e.name = "k";
  e.flops = flops;
  e.bytes = bytes;
  return e;
}

TEST(Roofline, WorkBecomesRatesOverTheTimeOfTheExecutionsThatReportedIt) {
  KernelWork w;
  w.add(worked(2e9, 1e8), 10, 20'000'000);            // 10 × (2 GFLOP, 100 MB) in 20 ms
  w.add(worked(1e9, std::nullopt), 5, 10'000'000);    // FLOPs only
  w.add(worked(std::nullopt, std::nullopt), 99, 1e9);  // no work: not counted anywhere
  EXPECT_DOUBLE_EQ(*w.flops_per_second(), (2e10 + 5e9) / 30e-3);
  EXPECT_DOUBLE_EQ(*w.bytes_per_second(), 1e9 / 20e-3);
  EXPECT_DOUBLE_EQ(*w.arithmetic_intensity(), 20.0);  // of the executions with both only
  KernelWork none;
  EXPECT_FALSE(none.flops_per_second());
  EXPECT_FALSE(none.arithmetic_intensity());
  EXPECT_TRUE(none.empty());
  none.merge(w);
  EXPECT_DOUBLE_EQ(*none.flops_per_second(), *w.flops_per_second());
}

TEST(Roofline, BelowTheRidgeAKernelIsMemoryBound) {
  const Ceilings h100{989.4e12, 3.35e12};  // BF16 dense, HBM3
  EXPECT_DOUBLE_EQ(h100.ridge(), 989.4e12 / 3.35e12);
  KernelWork gemv;  // 1 ms moving 3 GB at 1 FLOP/B: bandwidth-limited
  gemv.add(worked(3e9, 3e9), 1, 1'000'000);
  const RooflinePoint p = *place_on_roofline(gemv, h100);
  EXPECT_TRUE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.attainable_flops_per_second, 3.35e12);
  EXPECT_DOUBLE_EQ(p.achieved_flops_per_second, 3e12);
  EXPECT_DOUBLE_EQ(p.fraction_of_attainable, 3e12 / 3.35e12);
  EXPECT_DOUBLE_EQ(p.fraction_of_peak_bandwidth, 3e12 / 3.35e12);
  KernelWork gemm;  // 1 ms of 600 GFLOP over 1 GB: above the ridge
  gemm.add(worked(6e11, 1e9), 1, 1'000'000);
  const RooflinePoint q = *place_on_roofline(gemm, h100);
  EXPECT_FALSE(q.memory_bound);
  EXPECT_DOUBLE_EQ(q.attainable_flops_per_second, 989.4e12);
  EXPECT_DOUBLE_EQ(q.fraction_of_attainable, 600e12 / 989.4e12);
  EXPECT_FALSE(place_on_roofline(gemm, Ceilings{0, 3.35e12}));
  KernelWork flops_only;
  flops_only.add(worked(1e9, std::nullopt), 1, 1'000'000);
  EXPECT_FALSE(place_on_roofline(flops_only, h100));
  KernelWork instant;  // executions of no measurable duration (start = end): no rate, no place
  instant.add(worked(1e9, 1e6), 3, 0);
  EXPECT_TRUE(instant.empty());
  EXPECT_FALSE(instant.arithmetic_intensity());
  EXPECT_FALSE(instant.flops_per_second());
  EXPECT_FALSE(place_on_roofline(instant, h100));
}

TEST(DeviceTargets, TheFirstTargetThatSelectsTheGpuApplies) {
  const std::vector<DeviceTarget> targets = {{"1", 1.0, {}, {}, {}, {}, {}},
                                             {"GPU-abc", 2.0, {}, {}, {}, {}, {}},
                                             {"h100", 3.0, {}, {}, {}, {}, {}},
                                             {"*", 4.0, {}, {}, {}, {}, {}}};
  EXPECT_EQ(target_for(targets, "1", "GPU-x", "NVIDIA H100 80GB HBM3")->min_tflops, 1.0);
  EXPECT_EQ(target_for(targets, "0", "GPU-abc", "NVIDIA H100 80GB HBM3")->min_tflops, 2.0);
  EXPECT_EQ(target_for(targets, "0", "GPU-x", "NVIDIA H100 80GB HBM3")->min_tflops, 3.0);
  EXPECT_EQ(target_for(targets, "10", "GPU-x", "NVIDIA L4")->min_tflops, 4.0);  // "1" is not a part of "10"
  EXPECT_EQ(target_for({targets[0]}, "0", "GPU-x", "NVIDIA L4"), nullptr);
}

TEST(DeviceTargets, RatesAgainstMinimumAndTargetBudgetsAgainstTheirLimit) {
  DeviceTarget t{"*", 400.0, 600.0, 2000.0, 3000.0, 60.0 * (1 << 30), 500.0};
  DeviceAchieved a;
  a.tflops = Achieved{300, "kernels", ""};      // 0.75 of the minimum: under 0.8 of it
  a.gb_per_second = Achieved{1700, "gpm", ""};  // 0.85 of the minimum: below target, no recommendation
  a.memory_peak_bytes = Achieved{30.0 * (1 << 30), "nvml", ""};
  // power: not measured
  const std::vector<TargetCheck> c = check_targets(t, a);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].figure, "tflops");
  EXPECT_EQ(c[0].status, "below_minimum");
  EXPECT_DOUBLE_EQ(*c[0].efficiency, 0.5);
  EXPECT_DOUBLE_EQ(*c[0].of_minimum, 0.75);
  EXPECT_NE(c[0].recommendation.find("Achieved 300 TFLOP/s is below 320 TFLOP/s (0.8 of the minimum 400 TFLOP/s)"),
            std::string::npos) << c[0].recommendation;
  EXPECT_EQ(c[1].status, "below_target");
  EXPECT_TRUE(c[1].recommendation.empty());
  EXPECT_EQ(c[2].figure, "memory_bytes");
  EXPECT_EQ(c[2].status, "within_budget");
  EXPECT_DOUBLE_EQ(*c[2].of_budget, 0.5);
  EXPECT_EQ(c[3].status, "not_measured");
  a.tflops->value = 650;
  a.power_avg_watts = Achieved{550, "nvml", ""};
  const std::vector<TargetCheck> d = check_targets(t, a);
  EXPECT_EQ(d[0].status, "meets_target");
  EXPECT_EQ(d[3].status, "over_budget");
  EXPECT_NE(d[3].recommendation.find("550 W is over the budget of 500 W"), std::string::npos) << d[3].recommendation;
  // Only the figures a target names are checked.
  EXPECT_EQ(check_targets(DeviceTarget{"*", {}, {}, {}, {}, {}, 300.0}, a).size(), 1u);
}

}  // namespace
}  // namespace perfscope::analysis
