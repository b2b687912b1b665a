#include "engine/analysis/run_compare.hpp"

#include <gtest/gtest.h>

namespace perfscope::analysis {
namespace {

std::vector<double> series(std::size_t n, double base, double spread) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(base + spread * static_cast<double>((i * 7) % 11) / 10.0);
  return v;
}

RunTotals totals_of(const std::vector<KernelDiff>& diffs) {
  RunTotals t;
  for (const KernelDiff& d : diffs) {
    t.kernel_ms_a += d.total_a_ms;
    t.kernel_ms_b += d.total_b_ms;
  }
  return t;
}

// A significant move too small for the run is no verdict on it; wall time decides alone when
// the kernels did not move, and against them the answer is "mixed".
TEST(RunCompare, TheRunVerdictNeedsAMaterialChangeAndHearsTheWallTime) {
  KernelDiff tiny;
  tiny.name = "tiny";
  tiny.total_a_ms = 1.0;
  tiny.total_b_ms = 1.155;
  tiny.verdict = "slower";
  RunTotals t{6278.0, 6278.155, 10.0, 10.1};
  RunVerdict v = overall_verdict({tiny}, t);
  EXPECT_EQ(v.verdict, "unchanged") << v.reason;
  EXPECT_NE(v.reason.find("material from 1.00%"), std::string::npos) << v.reason;
  t.wall_s_b = 165.2;  // +1,552 %
  v = overall_verdict({tiny}, t);
  EXPECT_EQ(v.verdict, "slower") << v.reason;
  KernelDiff big = tiny;
  big.total_b_ms = 1.0 - 500;  // 500 ms faster
  t.kernel_ms_b = t.kernel_ms_a - 500;
  v = overall_verdict({big}, t);
  EXPECT_EQ(v.verdict, "mixed") << v.reason;
  t.wall_s_b = 10.2;  // +2 %: start-up noise
  EXPECT_EQ(overall_verdict({big}, t).verdict, "faster");
  t.wall_s_a.reset();
  v = overall_verdict({big}, t);
  EXPECT_EQ(v.verdict, "faster");
  EXPECT_NE(v.reason.find("not known for both runs"), std::string::npos) << v.reason;
}

TEST(RunCompare, TheSameRunTwiceChangesNothing) {
  KernelDurations a{{"gemm", series(40, 1.0, 0.2)}, {"softmax", series(40, 0.1, 0.01)}};
  auto diffs = compare_kernels(a, a);
  ASSERT_EQ(diffs.size(), 2u);
  for (const auto& d : diffs) {
    EXPECT_EQ(d.verdict, "unchanged") << d.name;
    EXPECT_DOUBLE_EQ(*d.mean_change, 0.0);
    EXPECT_GT(*d.p_adjusted, 0.5);
  }
  EXPECT_EQ(overall_verdict(diffs, totals_of(diffs)).verdict, "unchanged");
}

TEST(RunCompare, ASlowedKernelComesFirstWithItsVerdict) {
  KernelDurations a{{"gemm", series(40, 1.0, 0.2)}, {"softmax", series(40, 0.1, 0.01)}, {"norm", series(40, 0.2, 0.02)}};
  KernelDurations b = a;
  for (double& x : b["softmax"]) x *= 1.5;
  auto diffs = compare_kernels(a, b);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_EQ(diffs[0].name, "softmax") << "ordered by the time moved";
  EXPECT_EQ(diffs[0].verdict, "slower");
  EXPECT_LT(*diffs[0].p_adjusted, 0.001);
  EXPECT_NEAR(*diffs[0].mean_change, 0.5, 1e-9);
  EXPECT_GE(*diffs[0].p_adjusted, *diffs[0].p_value) << "Benjamini-Hochberg never lowers a p-value";
  EXPECT_EQ(diffs[1].verdict, "unchanged");
  EXPECT_EQ(overall_verdict(diffs, totals_of(diffs)).verdict, "slower");
  std::swap(a, b);
  const auto swapped = compare_kernels(a, b);
  EXPECT_EQ(overall_verdict(swapped, totals_of(swapped)).verdict, "faster");
}

TEST(RunCompare, SmallChangesAndFewSamplesAreNoVerdict) {
  KernelDurations a{{"k", series(200, 1.0, 0.001)}, {"rare", {1.0, 1.1}}};
  KernelDurations b{{"k", series(200, 1.01, 0.001)}, {"rare", {5.0, 5.5}}};
  auto diffs = compare_kernels(a, b);
  for (const auto& d : diffs) {
    if (d.name == "k") {
      EXPECT_LT(*d.p_adjusted, 0.05) << "significant";
      EXPECT_EQ(d.verdict, "unchanged") << "but below min_effect";
    } else {
      EXPECT_EQ(d.verdict, "insufficient_samples");
      EXPECT_FALSE(d.p_value.has_value());
    }
  }
}

TEST(RunCompare, KernelsOfOneRunOnly) {
  KernelDurations a{{"old", {1, 1, 1}}, {"both", series(10, 1, 0.1)}};
  KernelDurations b{{"new", {2, 2.5}}, {"both", series(10, 1, 0.1)}};
  auto diffs = compare_kernels(a, b);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_EQ(diffs[0].name, "new");
  EXPECT_EQ(diffs[0].verdict, "only_in_b");
  EXPECT_DOUBLE_EQ(diffs[0].moved_ms(), 4.5);
  EXPECT_EQ(diffs[0].count_a, 0u);
  EXPECT_FALSE(diffs[0].mean_a_ms.has_value());
  EXPECT_EQ(diffs[1].name, "old");
  EXPECT_EQ(diffs[1].verdict, "only_in_a");
  EXPECT_DOUBLE_EQ(diffs[1].moved_ms(), -3.0);
  EXPECT_EQ(diffs[2].verdict, "unchanged");
}

}  // namespace
}  // namespace perfscope::analysis
