#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace {

constexpr double kTol = 1e-9;

// Brute force: a full sort and the definitions, for comparison with the selection code.
double sorted_nearest_rank(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size()) - 1e-9));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}
double sorted_linear(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double h = q / 100.0 * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

TEST(Percentiles, ReferenceTableOnOneToTen) {
  std::vector<double> v = {7, 1, 10, 3, 5, 2, 9, 4, 8, 6};
  const double qs[] = {50, 90, 99};
  auto nr = percentiles(v, qs, PercentileConvention::kNearestRank);
  EXPECT_EQ(nr, (std::vector<double>{5, 9, 10}));
  auto lin = percentiles(v, qs, PercentileConvention::kLinear);
  EXPECT_NEAR(lin[0], 5.5, kTol);
  EXPECT_NEAR(lin[1], 9.1, kTol);
  EXPECT_NEAR(lin[2], 9.91, kTol);
}

TEST(Percentiles, NearestRankIsExactAtDecimalPercentiles) {
  std::vector<double> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  EXPECT_EQ(percentile(v, 99.9, PercentileConvention::kNearestRank), 999);  // rank 999, not 1000
  EXPECT_EQ(percentile(v, 0, PercentileConvention::kNearestRank), 1);
  EXPECT_EQ(percentile(v, 100, PercentileConvention::kNearestRank), 1000);
  std::vector<double> one = {42};
  EXPECT_EQ(percentile(one, 99, PercentileConvention::kLinear), 42);
  std::vector<double> none;
  EXPECT_TRUE(percentiles(none, std::vector<double>{50}, PercentileConvention::kLinear).empty());
}

TEST(Percentiles, SelectionMatchesAFullSortOnRandomData) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(0.0, 0.8);
  const std::vector<double> qs = {99.9, 50, 0, 90, 95, 99, 100, 12.5, 99.99};
  for (std::size_t n : {1u, 2u, 3u, 10u, 101u, 1000u, 12345u}) {
    std::vector<double> data(n);
    for (double& d : data) d = std::round(latency(rng) * 100) / 100;  // with ties
    for (auto c : {PercentileConvention::kNearestRank, PercentileConvention::kLinear}) {
      std::vector<double> work = data;
      auto got = percentiles(work, qs, c);
      for (std::size_t i = 0; i < qs.size(); ++i) {
        double want = c == PercentileConvention::kLinear ? sorted_linear(data, qs[i]) : sorted_nearest_rank(data, qs[i]);
        EXPECT_NEAR(got[i], want, 1e-12 * std::max(1.0, std::fabs(want))) << "n=" << n << " q=" << qs[i];
      }
    }
  }
}

TEST(Percentiles, IntegerOrderStatisticsMatchAFullSort) {
  std::mt19937_64 rng(17);
  auto check = [&](std::vector<std::int64_t> v, const char* what) {
    std::vector<std::int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::size_t> ranks = {0, v.size() / 2, v.size() * 95 / 100, v.size() - 1};
    for (int i = 0; i < 20; ++i) ranks.push_back(static_cast<std::size_t>(rng() % v.size()));
    const auto got = integer_order_statistics(v, ranks);
    for (std::size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(got[i], sorted[ranks[i]]) << what << " rank " << ranks[i];
  };
  std::vector<std::int64_t> spread(100'000);
  for (auto& x : spread) x = static_cast<std::int64_t>(rng() % 900'000) + 20'000;
  check(spread, "uniform");
  check(std::vector<std::int64_t>(50'000, 4'000), "all equal");
  // Bunched values under one huge outlier: the bucket holding them is split again.
  std::vector<std::int64_t> bunched(60'000);
  for (auto& x : bunched) x = 3'000 + static_cast<std::int64_t>(rng() % 50);
  bunched.push_back(INT64_MAX / 2);
  bunched.push_back(-5);
  check(bunched, "bunched");
  std::vector<std::int64_t> wide = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MAX, INT64_MIN + 1};
  check(wide, "extremes");
  check({42}, "one");
}

TEST(Stats, OrderStatisticsOfDoublesEqualASort) {
  std::mt19937_64 rng(11);
  auto check = [&](std::vector<double> v, const char* what) {
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::size_t> ranks = {0, v.size() / 2, v.size() * 99 / 100, v.size() - 1};
    for (int i = 0; i < 20; ++i) ranks.push_back(static_cast<std::size_t>(rng() % v.size()));
    const auto got = order_statistics(v, ranks);
    for (std::size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(got[i], sorted[ranks[i]]) << what << " rank " << ranks[i];
  };
  std::lognormal_distribution<double> latency(std::log(2.0), 0.35);
  std::vector<double> lognormal(200'000);
  for (double& x : lognormal) x = latency(rng);
  check(lognormal, "lognormal");
  std::normal_distribution<double> centred(0, 1e3);
  std::vector<double> signs(100'000);
  for (double& x : signs) x = centred(rng);
  check(signs, "negative and positive");
  check(std::vector<double>(50'000, 4.25), "all equal");
  std::vector<double> bunched(60'000);  // 50 distinct values under two far outliers
  for (double& x : bunched) x = 3.0 + static_cast<double>(rng() % 50) * 1e-9;
  bunched.push_back(1e300);
  bunched.push_back(-1e-300);
  check(bunched, "bunched");
  const double inf = std::numeric_limits<double>::infinity();
  check({-inf, inf, 0.0, -0.0, 1e-310, -1e-310, std::numeric_limits<double>::max(), 1.0}, "extremes");
  check({42.5}, "one");
}

TEST(Stats, PercentilesByBucketSelectionEqualASort) {
  // Above kBucketSelectionFrom the percentiles come from order_statistics; both conventions
  // must give exactly what the definitions give on the sorted values.
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> latency(std::log(2.0), 0.6);
  std::vector<double> v(kBucketSelectionFrom * 4 + 3);
  for (double& x : v) x = latency(rng);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const double qs[] = {0, 1, 50, 90, 95, 99, 99.9, 99.99, 100};
  for (auto c : {PercentileConvention::kNearestRank, PercentileConvention::kLinear}) {
    auto work = v;
    const auto got = percentiles(work, qs, c);
    for (std::size_t i = 0; i < std::size(qs); ++i) {
      double want;
      if (c == PercentileConvention::kNearestRank) {
        want = sorted[nearest_rank_index(qs[i], sorted.size())];
      } else {
        const double h = qs[i] / 100.0 * static_cast<double>(sorted.size() - 1);
        const auto lo = static_cast<std::size_t>(std::floor(h));
        const double t = h - std::floor(h), a = sorted[lo], b = sorted[std::min(lo + 1, sorted.size() - 1)];
        want = t >= 0.5 ? b - (b - a) * (1 - t) : a + (b - a) * t;
      }
      EXPECT_EQ(got[i], want) << to_string(c) << " q=" << qs[i];
    }
  }
}

TEST(Moments, NistNumAcc4) {
  // NIST StRD NumAcc4: 10000000.2, then 10000000.1 and 10000000.3 alternating, 1001 values;
  // certified mean 10000000.2 and standard deviation 0.1.
  std::vector<double> v = {10000000.2};
  for (int i = 0; i < 500; ++i) {
    v.push_back(10000000.1);
    v.push_back(10000000.3);
  }
  Moments m = moments(v);
  EXPECT_NEAR(m.mean, 10000000.2, 1e-9 * 10000000.2);
  EXPECT_NEAR(m.std, 0.1, 1e-9);
  EXPECT_EQ(m.n, 1001u);
}

TEST(Sla, CountsViolationsAboveTheTarget) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  SlaCompliance s = sla_compliance(v, 8);
  EXPECT_EQ(s.violations, 2u);
  EXPECT_NEAR(s.compliance_rate, 0.8, kTol);
  EXPECT_EQ(min_samples_for_percentile(99), 662u);
  EXPECT_EQ(min_samples_for_percentile(99.9), 6636u);
  EXPECT_EQ(min_samples_for_percentile(90), 64u);
  EXPECT_EQ(percentile_key(99.9), "p99.9");
  EXPECT_EQ(percentile_key(50), "p50");
}

const std::vector<double> kMwuX = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
const std::vector<double> kMwuY = {1.15, 0.88, 0.90, 0.74, 1.21};

TEST(MannWhitney, ScipyReferenceVectors) {
  MannWhitney r = mann_whitney_u(kMwuX, kMwuY);  // 5 values in y, no ties: exact
  EXPECT_EQ(r.method, "exact");
  EXPECT_NEAR(r.u, 35, kTol);
  EXPECT_NEAR(r.p_value, 0.2544122544123, kTol);
  MannWhitney asym = mann_whitney_u(kMwuX, kMwuY, MwuMethod::kAsymptotic);
  EXPECT_NEAR(asym.u, 35, kTol);
  EXPECT_NEAR(asym.p_value, 0.244623605127, kTol);

  std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  MannWhitney s = mann_whitney_u(males, females);
  EXPECT_EQ(s.method, "exact");
  EXPECT_NEAR(s.u, 17, kTol);
  EXPECT_NEAR(s.p_value, 0.1111111111111111, kTol);
  EXPECT_NEAR(mann_whitney_u(males, females, MwuMethod::kAsymptotic).p_value, 0.11134688653314041, kTol);
}

TEST(MannWhitney, TiesUseTheCorrectedApproximation) {
  std::vector<double> a = {1, 2, 2, 3}, b = {2, 3, 3, 4, 5};
  MannWhitney r = mann_whitney_u(a, b);
  EXPECT_EQ(r.method, "asymptotic");
  // Ranks of the pooled sample: 1, 3, 3, 3 | 3, 6, 6, 6... computed by hand: R1 = 1+3+3+6 = 13,
  // U1 = 13 − 10 = 3; tie groups {2,2,2} and {3,3,3}: Σ(t³−t) = 48; n = 9.
  EXPECT_NEAR(r.u, 3, kTol);
  const double s = std::sqrt(4.0 * 5 / 12 * (10 - 48.0 / 72));
  const double z = (17 - 10 - 0.5) / s;
  EXPECT_NEAR(r.p_value, std::erfc(z / std::sqrt(2.0)), kTol);
  std::vector<double> same = {1, 1, 1};
  EXPECT_EQ(mann_whitney_u(same, same).p_value, 1);
}

TEST(MannWhitney, ExactDistributionMatchesEnumeration) {
  // Every split of 1..9 into 4 and 5: P(U >= u) by brute force against the q-binomial counts.
  std::vector<int> counts(21, 0);
  int total = 0;
  for (int mask = 0; mask < (1 << 9); ++mask) {
    if (__builtin_popcount(static_cast<unsigned>(mask)) != 4) continue;
    int r1 = 0;
    for (int i = 0; i < 9; ++i) {
      if (mask & (1 << i)) r1 += i + 1;
    }
    ++counts[static_cast<std::size_t>(r1 - 10)];
    ++total;
  }
  std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8, 9};  // U1 = 0, the most extreme split
  MannWhitney r = mann_whitney_u(a, b);
  EXPECT_NEAR(r.p_value, 2.0 * counts[20] / total, kTol);
  std::vector<double> c = {1, 3, 6, 8}, d = {2, 4, 5, 7, 9};  // R1 = 18, U1 = 8 → U = 12
  int tail = 0;
  for (int u = 12; u <= 20; ++u) tail += counts[static_cast<std::size_t>(u)];
  EXPECT_NEAR(mann_whitney_u(c, d).p_value, std::min(1.0, 2.0 * tail / total), kTol);
}

TEST(Welch, ScipyReferenceVectors) {
  std::vector<double> a = {1, 2, 3}, b = {1.1, 2.9, 4.2};
  Welch w = welch_t_test(a, b);
  EXPECT_NEAR(w.t, -0.68649512735572582, kTol);
  EXPECT_NEAR(w.p_value, 0.53619490753126731, kTol);
  std::vector<double> a4 = {1, 2, 3, 4};
  Welch w4 = welch_t_test(a4, b);
  EXPECT_NEAR(w4.t, -0.2108663315950719, kTol);
  EXPECT_NEAR(w4.p_value, 0.84354139131608286, kTol);
}

TEST(BenjaminiHochberg, AdjustsInInputOrder) {
  std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  auto adj = benjamini_hochberg(p);
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_NEAR(adj[0], 0.02, kTol);
  EXPECT_NEAR(adj[1], 0.04, kTol);
  EXPECT_NEAR(adj[2], 0.04, kTol);
  EXPECT_NEAR(adj[3], 0.02, kTol);
}

TEST(HodgesLehmann, MatchesTheMedianOfAllPairwiseDifferences) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(10, 2);
  for (std::size_t n : {1u, 2u, 7u, 30u}) {
    for (std::size_t m : {1u, 4u, 31u}) {
      std::vector<double> a(n), b(m), diffs;
      for (double& x : a) x = noise(rng);
      for (double& x : b) x = std::round(noise(rng));
      for (double x : a) {
        for (double y : b) diffs.push_back(y - x);
      }
      std::sort(diffs.begin(), diffs.end());
      const std::size_t t = diffs.size();
      double want = t % 2 ? diffs[t / 2] : (diffs[t / 2 - 1] + diffs[t / 2]) / 2;
      EXPECT_DOUBLE_EQ(hodges_lehmann_shift(a, b), want) << n << "x" << m;
    }
  }
}

TEST(Bootstrap, IsReproducibleAndCoversTheRatio) {
  std::vector<double> a(200), b(200);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> na(10, 1), nb(5, 0.5);
  for (double& x : a) x = na(rng);
  for (double& x : b) x = nb(rng);
  Interval one = bootstrap_speedup_ci(a, b, 2000, 42), two = bootstrap_speedup_ci(a, b, 2000, 42);
  EXPECT_EQ(one.low, two.low);
  EXPECT_EQ(one.high, two.high);
  const double ratio = moments(a).mean / moments(b).mean;
  EXPECT_LT(one.low, ratio);
  EXPECT_GT(one.high, ratio);
  EXPECT_GT(one.low, 1.9);
  EXPECT_LT(one.high, 2.1);
  std::vector<double> four(50, 4.0), two_ms(60, 2.0);
  Interval exact = bootstrap_speedup_ci(four, two_ms, 500, 1);
  EXPECT_DOUBLE_EQ(exact.low, 2.0);
  EXPECT_DOUBLE_EQ(exact.high, 2.0);
}

TEST(AbVerdict, ClearNullAndTinySamples) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> slow(10, 1), fast(8, 1), same(10, 1);
  std::vector<double> a(300), b(300), c(300);
  for (double& x : a) x = slow(rng);
  for (double& x : b) x = fast(rng);
  for (double& x : c) x = same(rng);
  AbOptions o;
  o.bootstrap_resamples = 1000;
  AbResult clear = compare(a, b, o);
  EXPECT_EQ(clear.verdict, Verdict::kBFaster);
  EXPECT_GT(clear.speedup, 1.2);
  EXPECT_LT(clear.hodges_lehmann_shift_ms, -1.5);
  EXPECT_LT(clear.mann_whitney.p_value, 1e-10);
  EXPECT_NE(clear.recommendation.find("Prefer B"), std::string::npos);
  EXPECT_EQ(compare(b, a, o).verdict, Verdict::kAFaster);

  AbResult null = compare(a, c, o);
  // Same distribution: whatever p says (here 0.04 by chance), a change under min_effect is
  // never called a win.
  EXPECT_EQ(null.verdict, Verdict::kNoSignificantDifference) << null.recommendation;
  EXPECT_LT(std::fabs(null.speedup - 1), o.min_effect);

  std::vector<double> t1 = {1, 2, 3}, t2 = {4, 5, 6};
  AbResult tiny = compare(t1, t2, o);
  EXPECT_EQ(tiny.verdict, Verdict::kInsufficientSamples);  // 3 vs 3 can never reach p < 0.05
  EXPECT_NEAR(min_attainable_p(3, 3), 0.1, kTol);
  EXPECT_GE(tiny.min_samples_needed, 4u);
}

}  // namespace
}  // namespace perfscope::analysis
