// Quantiles and shares from cumulative buckets against Prometheus' own test vectors
// (promql/promqltest/testdata/histograms.test: histogram_quantile and histogram_fraction over
// classic buckets), plus the normalization a scrape taken mid-update needs. A window's
// increase, restarts included, is scraped_serving's counter_increase, tested there.
#include "engine/analysis/bucket_quantile.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace perfscope {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<CumulativeBucket> positive() { return normalize_buckets({{0.1, 50}, {0.2, 70}, {1.0, 110}, {kInf, 120}}); }
std::vector<CumulativeBucket> negative() { return normalize_buckets({{-0.2, 10}, {-0.1, 20}, {0.3, 20}, {kInf, 30}}); }
std::vector<CumulativeBucket> middles() { return normalize_buckets({{0, 0}, {2, 1}, {4, 2}, {6, 3}, {kInf, 3}}); }
std::vector<CumulativeBucket> positive3() { return normalize_buckets({{0, 0}, {0.1, 5}, {0.2, 7}, {1.0, 11}, {kInf, 11}}); }
std::vector<CumulativeBucket> negative3() { return normalize_buckets({{-0.25, 0}, {-0.2, 1}, {-0.1, 2}, {0.3, 2}, {kInf, 2}}); }

double q(double quantile, const std::vector<CumulativeBucket>& b) { return bucket_quantile(quantile, b).value().value; }

TEST(BucketQuantile, MatchesHistogramQuantile) {
  const std::pair<double, double> pos[] = {{0, 0}, {0.2, 0.048}, {0.5, 0.15}, {0.8, 0.72}, {1, 1}};
  for (auto [quantile, expected] : pos) EXPECT_NEAR(q(quantile, positive()), expected, 1e-12) << quantile;
  const std::pair<double, double> neg[] = {{0, -0.2}, {0.2, -0.2}, {0.5, -0.15}, {0.8, 0.3}, {1, 0.3}};
  for (auto [quantile, expected] : neg) EXPECT_NEAR(q(quantile, negative()), expected, 1e-12) << quantile;
  EXPECT_NEAR(q(1.0 / 6, middles()), 1, 1e-12);
  EXPECT_NEAR(q(0.5, middles()), 3, 1e-12);
  EXPECT_NEAR(q(5.0 / 6, middles()), 5, 1e-12);
  const std::pair<double, double> pos3[] = {{0, 0}, {0.25, 0.055}, {0.5, 0.125}, {0.75, 0.45}, {1, 1}};
  for (auto [quantile, expected] : pos3) EXPECT_NEAR(q(quantile, positive3()), expected, 1e-12) << quantile;
  const std::pair<double, double> neg3[] = {{0, -0.25}, {0.25, -0.225}, {0.5, -0.2}, {0.75, -0.15}, {1, -0.1}};
  for (auto [quantile, expected] : neg3) EXPECT_NEAR(q(quantile, negative3()), expected, 1e-12) << quantile;
}

TEST(BucketQuantile, TheBucketBoundsTheAnswer) {
  auto in_first = bucket_quantile(0.2, positive()).value();
  EXPECT_EQ(in_first.lower, 0.0);
  EXPECT_EQ(in_first.upper, 0.1);
  auto in_inf = bucket_quantile(0.99, positive()).value();  // rank 118.8 > 110: the +Inf bucket
  EXPECT_EQ(in_inf.value, 1.0);
  EXPECT_EQ(in_inf.lower, 1.0);
  EXPECT_TRUE(std::isinf(in_inf.upper));
  auto middle = bucket_quantile(0.5, positive()).value();
  EXPECT_EQ(middle.lower, 0.1);
  EXPECT_EQ(middle.upper, 0.2);
}

TEST(BucketQuantile, SharesMatchHistogramFraction) {
  EXPECT_NEAR(bucket_share_at_most(4, middles()).value().value, 2.0 / 3, 1e-12);
  EXPECT_NEAR(bucket_share_at_most(6, middles()).value().value, 1.0, 1e-12);
  EXPECT_NEAR(bucket_share_at_most(3.5, middles()).value().value, 0.5833333333333334, 1e-12);
  EXPECT_NEAR(bucket_share_at_most(0.2, positive3()).value().value, 0.6363636363636364, 1e-12);
  auto between = bucket_share_at_most(3.5, middles()).value();
  EXPECT_NEAR(between.lower, 1.0 / 3, 1e-12);  // the bucket (2, 4] holds the threshold
  EXPECT_NEAR(between.upper, 2.0 / 3, 1e-12);
  // Beyond the highest finite bound: known only as at least what the finite buckets hold.
  auto beyond = bucket_share_at_most(5, positive()).value();
  EXPECT_NEAR(beyond.value, 110.0 / 120, 1e-12);
  EXPECT_EQ(beyond.upper, 1.0);
}

TEST(BucketQuantile, EmptyOrIncompleteBucketsHaveNoAnswer) {
  EXPECT_FALSE(bucket_quantile(0.5, normalize_buckets({{0.1, 0}, {kInf, 0}})).has_value());
  EXPECT_TRUE(normalize_buckets({{0.1, 3}, {0.2, 4}}).empty());  // no +Inf bucket
  EXPECT_FALSE(bucket_quantile(0.5, {}).has_value());
  EXPECT_FALSE(bucket_share_at_most(1, {}).has_value());
  EXPECT_FALSE(bucket_quantile(std::nan(""), positive()).has_value());
}

TEST(BucketQuantile, NormalizationSortsMergesAndMakesCountsMonotonic) {
  auto b = normalize_buckets({{kInf, 10}, {0.2, 4}, {0.1, 5}, {0.1, 1}});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].le, 0.1);
  EXPECT_EQ(b[0].count, 6);  // the bound written twice adds up
  EXPECT_EQ(b[1].count, 6);  // 4 < 6: raised (a scrape taken mid-update)
  EXPECT_EQ(b[2].count, 10);
}

}  // namespace
}  // namespace perfscope
