// Descriptive statistics over latency samples: percentiles under a named convention,
// moments, SLA compliance, and how many samples a tail percentile needs before it means
// anything. Conventions and reference values: nearest rank is the value at 1-based rank
// ⌈p/100·n⌉ (HdrHistogram's, conservative for SLAs); linear is numpy's default (Hyndman–Fan
// type 7). Standard deviations are sample (n−1) deviations.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace perfscope::analysis {

enum class PercentileConvention { kNearestRank, kLinear };
std::string_view to_string(PercentileConvention c);
std::optional<PercentileConvention> convention_from(std::string_view text);

// The percentiles `qs` (each in [0, 100]) of `values`, in the order asked. Reorders `values`
// by selection (no full sort) below kBucketSelectionFrom values. Empty values give an empty
// result.
std::vector<double> percentiles(std::vector<double>& values, std::span<const double> qs, PercentileConvention c);
double percentile(std::vector<double>& values, double q, PercentileConvention c);
// 0-based index of the nearest-rank percentile of n values: rank ⌈q/100·n⌉ in exact integer
// arithmetic on q in thousandths, so that 99.9 % of 1000 is rank 999, not 1000 by rounding.
std::size_t nearest_rank_index(double q, std::size_t n);

// The values at the 0-based sorted-order `ranks` of integers, exactly and in linear time:
// one pass finds the range, one histograms the top 16 bits of each value above the minimum,
// a third collects the values of the buckets holding the ranks, which are selected among
// (for a few hundred thousand durations, a few times faster than nth_element on doubles).
// Every rank must be below values.size().
std::vector<std::int64_t> integer_order_statistics(std::span<const std::int64_t> values,
                                                   std::span<const std::size_t> ranks);
// The same where the caller already knows the least (lo) and greatest (hi) value: no pass to
// find them.
std::vector<std::int64_t> integer_order_statistics(std::span<const std::int64_t> values,
                                                   std::span<const std::size_t> ranks, std::int64_t lo,
                                                   std::int64_t hi);

// The order statistics of doubles at `ranks` (0-based, each below values.size()), exact, by
// the same bucket selection over order-preserving keys of the IEEE 754 bits. percentiles()
// takes this path from kBucketSelectionFrom values up, nth_element below it.
std::vector<double> order_statistics(std::span<const double> values, std::span<const std::size_t> ranks);
inline constexpr std::size_t kBucketSelectionFrom = 16384;

struct Moments {
  std::size_t n = 0;
  double mean = 0;
  double std = 0;  // sample standard deviation (n − 1); 0 below two samples
  double min = 0;
  double max = 0;
  double sum = 0;
};
Moments moments(std::span<const double> values);

struct SlaCompliance {
  double target = 0;
  std::size_t violations = 0;  // samples above the target
  double compliance_rate = 0;  // share at or under it (1 when there are no samples)
};
SlaCompliance sla_compliance(std::span<const double> values, double target);

// Samples needed before percentile q can be trusted (MLPerf LoadGen's early-stopping counts
// at 99% confidence: 64 for p90, 662 for p99, 6636 for p99.9); 0 below p90.
std::size_t min_samples_for_percentile(double q);

// "p50", "p99.9": the key a percentile is reported under.
std::string percentile_key(double q);

}  // namespace perfscope::analysis
