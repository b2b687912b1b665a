#include "engine/analysis/log_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/analysis/rollup.hpp"
#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace {

TEST(LogHistogram, PercentilesWithinTheRelativeErrorBound) {
  std::mt19937_64 rng(8);
  std::lognormal_distribution<double> latency(std::log(3.0), 1.2);  // ms, wide spread
  std::vector<double> values(200'000);
  LogHistogram h;
  for (double& v : values) {
    v = latency(rng);
    h.add(v);
  }
  EXPECT_EQ(h.count(), values.size());
  for (double q : {0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0}) {
    std::vector<double> work = values;
    const double exact = percentile(work, q, PercentileConvention::kNearestRank);
    const double approx = *h.percentile(q);
    EXPECT_LE(std::fabs(approx - exact) / exact, 0.001) << "q=" << q;
    EXPECT_LE(std::fabs(approx - exact) / exact, LogHistogram::kMaxRelativeError * 1.0001) << "q=" << q;
  }
}

TEST(LogHistogram, EveryBucketHoldsItsValuesWithinTheBound) {
  for (double v = 1e-6; v < 1e7; v *= 1.0137) {
    const double mid = LogHistogram::midpoint(LogHistogram::bucket_of(v));
    EXPECT_LE(std::fabs(mid - v) / v, LogHistogram::kMaxRelativeError * 1.0001) << v;
  }
}

TEST(LogHistogram, MergeAndSubtractMakeSlidingWindows) {
  LogHistogram a, b, both;
  for (int i = 1; i <= 1000; ++i) {
    a.add(i * 0.01);
    both.add(i * 0.01);
  }
  for (int i = 1; i <= 500; ++i) {
    b.add(i * 0.5);
    both.add(i * 0.5);
  }
  LogHistogram merged = a;
  merged.merge(b);
  EXPECT_EQ(merged.count(), both.count());
  EXPECT_EQ(merged.serialize(), both.serialize());
  ASSERT_TRUE(merged.subtract(a));
  EXPECT_EQ(merged.serialize(), b.serialize());
  // What was never added cannot be taken away; the histogram is left as it was.
  LogHistogram other;
  other.add(12345.0);
  const std::string before = merged.serialize();
  EXPECT_FALSE(merged.subtract(other));
  EXPECT_EQ(merged.serialize(), before);
}

TEST(LogHistogram, SerializesCompactlyAndRejectsCorruptBytes) {
  LogHistogram h;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> d(2.0, 0.1);
  for (int i = 0; i < 100'000; ++i) h.add(d(rng));
  h.add(0);      // clamped
  h.add(1e30);   // clamped
  const std::string bytes = h.serialize();
  EXPECT_LT(bytes.size(), 3000u);  // a few hundred non-empty buckets
  auto back = LogHistogram::deserialize(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->count(), h.count());
  EXPECT_EQ(back->clamped(), 2u);
  EXPECT_EQ(back->percentile(50), h.percentile(50));
  EXPECT_FALSE(LogHistogram::deserialize(bytes.substr(0, bytes.size() - 1)));
  EXPECT_FALSE(LogHistogram::deserialize(""));
  EXPECT_FALSE(LogHistogram::deserialize(std::string("\x02") + bytes.substr(1)));
  EXPECT_FALSE(LogHistogram().percentile(50));
}

TEST(Rollup, MergedBucketsGiveExactMomentsAndBoundedPercentilesInBothConventions) {
  std::mt19937_64 rng(21);
  std::lognormal_distribution<double> latency(std::log(5.0), 0.8);
  std::vector<double> values(50'000);
  Rollup whole;
  std::vector<Rollup> parts(37);  // uneven buckets, merged in a different order
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = latency(rng);
    parts[(i * 7919) % parts.size()].add(values[i]);
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) whole.merge(*it);
  const Moments exact = moments(values);
  const Moments got = whole.moments();
  EXPECT_EQ(got.n, exact.n);
  EXPECT_NEAR(got.mean, exact.mean, 1e-12 * exact.mean);
  EXPECT_NEAR(got.std, exact.std, 1e-9 * exact.std);
  EXPECT_EQ(got.min, exact.min);
  EXPECT_EQ(got.max, exact.max);
  const std::vector<double> qs = {0, 1, 50, 90, 99, 99.9, 100};
  for (auto c : {PercentileConvention::kNearestRank, PercentileConvention::kLinear}) {
    std::vector<double> work = values;
    const auto want = percentiles(work, qs, c);
    const auto have = whole.percentiles(qs, c);
    for (std::size_t i = 0; i < qs.size(); ++i) {
      EXPECT_LE(std::fabs(have[i] - want[i]) / want[i], LogHistogram::kMaxRelativeError * 1.0001)
          << to_string(c) << " q=" << qs[i];
    }
    EXPECT_EQ(have.front(), exact.min);  // the extremes are exact
    EXPECT_EQ(have.back(), exact.max);
  }
  // SLA: violations differ from the exact count only by values within the target's bucket.
  for (double target : {2.0, 5.0, 20.0}) {
    const SlaCompliance want = sla_compliance(values, target);
    const SlaCompliance have = whole.sla(target);
    const auto near = static_cast<std::size_t>(std::count_if(values.begin(), values.end(), [&](double v) {
      return v > target && LogHistogram::bucket_of(v) == LogHistogram::bucket_of(target);
    }));
    EXPECT_EQ(have.violations + near, want.violations) << target;
  }
}

TEST(Rollup, ZerosAndNegativesReadAsTheExactMinimum) {
  Rollup r;
  for (int i = 0; i < 90; ++i) r.add(0.0);
  for (int i = 1; i <= 10; ++i) r.add(i * 10.0);
  r.add(std::nan(""));  // ignored, like everywhere else
  EXPECT_EQ(r.count, 100u);
  const std::vector<double> qs = {50, 90, 95};
  auto p = r.percentiles(qs, PercentileConvention::kNearestRank);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_EQ(p[1], 0.0);
  EXPECT_NEAR(p[2], 50.0, 50.0 * LogHistogram::kMaxRelativeError);
  Rollup negative;
  negative.add(-3.0);
  negative.add(-1.0);
  negative.add(4.0);
  EXPECT_EQ(negative.percentiles(std::vector<double>{0}, PercentileConvention::kNearestRank)[0], -3.0);
  EXPECT_EQ(negative.moments().mean, 0.0);
  EXPECT_TRUE(Rollup().percentiles(qs, PercentileConvention::kLinear).empty());
}

}  // namespace
}  // namespace perfscope::analysis
