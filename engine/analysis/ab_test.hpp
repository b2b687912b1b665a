// Comparing two samples of latencies (kernel variants, model versions): the tests and effect
// sizes perfscope reports, each matching a reference implementation so that its numbers can
// be checked against one.
// - Mann–Whitney U as scipy.stats.mannwhitneyu(a, b) computes it by default: U of sample a,
//   two-sided; the exact null distribution when either sample has at most 8 values and there
//   are no ties, else the normal approximation with tie and continuity corrections.
// - Welch's t-test as scipy.stats.ttest_ind(a, b, equal_var=False).
// - Speedup mean(a) / mean(b) (> 1: b is faster) with a percentile-bootstrap 95% interval,
//   seeded so the same data give the same interval.
// - Hodges–Lehmann shift: the median of all pairwise differences b − a (negative: b faster),
//   found by selection, not by listing n·m differences.
// - Benjamini–Hochberg adjusted p-values for A/B/n comparisons.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace perfscope::analysis {

struct MannWhitney {
  double u = 0;        // U statistic of the first sample
  double p_value = 1;  // two-sided
  std::string method;  // "exact" or "asymptotic"
};
enum class MwuMethod { kAuto, kAsymptotic, kExact };
// kExact falls back to the approximation where the exact counts would not fit in 128 bits.
MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b, MwuMethod method = MwuMethod::kAuto);

struct Welch {
  double t = 0;
  double df = 0;
  double p_value = 1;  // two-sided; NaN statistics (no variance at all) give p = 1
};
Welch welch_t_test(std::span<const double> a, std::span<const double> b);

struct Interval {
  double low = 0;
  double high = 0;
};
// Percentile bootstrap of mean(a) / mean(b): `resamples` draws with replacement of each
// sample, 2.5th and 97.5th percentiles of the ratio. Deterministic for a given seed.
Interval bootstrap_speedup_ci(std::span<const double> a, std::span<const double> b, std::size_t resamples,
                              std::uint64_t seed);

double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b);

// Benjamini–Hochberg step-up adjusted p-values, in the input order.
std::vector<double> benjamini_hochberg(std::span<const double> p_values);

// The smallest two-sided p-value Mann–Whitney can reach with samples of these sizes
// (2 / C(n1+n2, n1)): below alpha, no data can ever be significant.
double min_attainable_p(std::size_t n1, std::size_t n2);

enum class Verdict { kBFaster, kAFaster, kNoSignificantDifference, kInsufficientSamples };
std::string_view to_string(Verdict v);

struct SampleSummary {
  std::size_t n = 0;
  double mean_ms = 0, median_ms = 0, std_ms = 0, p99_ms = 0;
};

// The most draws one bootstrap may take (resamples × samples of both sides, about a
// nanosecond each): an evaluation of 500,000 executions a side with 100,000 resamples would
// otherwise run for minutes and hold a worker. Up to 50,000 samples in all, 10,000 resamples
// fit; beyond, the resamples shrink to fit, never below kMinBootstrapResamples.
inline constexpr double kBootstrapDrawBudget = 5e8;
inline constexpr std::size_t kMinBootstrapResamples = 1000;

struct AbOptions {
  double alpha = 0.05;
  double min_effect = 0.02;  // smallest relative change in the mean worth reporting
  std::size_t bootstrap_resamples = 10'000;
  std::uint64_t seed = 0x5eed;
};

struct AbResult {
  SampleSummary a, b;
  double speedup = 0;
  Interval speedup_ci95;
  // Resamples the interval took: the asked-for count, or fewer where the samples are so many
  // that it would pass the work bound (kBootstrapDrawBudget).
  std::size_t bootstrap_resamples_used = 0;
  MannWhitney mann_whitney;
  Welch welch;
  double hodges_lehmann_shift_ms = 0;
  double p_value_used = 1;  // Mann–Whitney's, or its Benjamini–Hochberg adjustment in A/B/n
  Verdict verdict = Verdict::kInsufficientSamples;
  std::size_t min_samples_needed = 0;  // per side, for min_effect at 80% power
  std::string recommendation;
};

// Everything above for samples a and b (milliseconds). `adjusted_p`, when given, replaces
// Mann–Whitney's p in the verdict (A/B/n with Benjamini–Hochberg).
AbResult compare(std::span<const double> a, std::span<const double> b, const AbOptions& options,
                 std::optional<double> adjusted_p = std::nullopt);
// Re-decides the verdict and recommendation of a result for a new p-value.
void decide(AbResult& r, const AbOptions& options, double p_value);

}  // namespace perfscope::analysis
