// Rollup: what a time bucket keeps of a latency (or gauge) distribution once its raw values
// are retired — exact count, sum, minimum, maximum and sum of squared deviations (M2, merged
// with Chan's parallel formula, so the standard deviation stays exact), plus a LogHistogram
// for percentiles within its 0.05 % bound. Buckets merge into longer ones and into answers
// over any window; raw values still kept are added to the same object.
//
// A value type; not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "engine/analysis/log_histogram.hpp"
#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {

struct Rollup {
  std::uint64_t count = 0;
  double sum = 0;
  double m2 = 0;  // Σ (x − mean)²
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  LogHistogram histogram;

  void add(double value);
  void merge(const Rollup& other);
  bool empty() const { return count == 0; }

  Moments moments() const;
  // Percentiles from the histogram under convention c (linear interpolates between the
  // values of neighbouring ranks). Each value is its bucket's midpoint, clamped into the exact
  // [min, max]; the lowest and highest ranks read as the exact min and max, and the bottom
  // bucket (zero, negatives and values under 2^-20) reads as the exact min.
  std::vector<double> percentiles(std::span<const double> qs, PercentileConvention c) const;
  // Violations are values in buckets above the target's bucket: exact except for values
  // within 0.05 % of the target, which count as compliant.
  SlaCompliance sla(double target) const;

 private:
  double value_at_rank(std::uint64_t k) const;  // 0-based
};

}  // namespace perfscope::analysis
