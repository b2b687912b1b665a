// LogHistogram: a log-linear histogram of positive values (HdrHistogram's idea) with 1024
// linear sub-buckets per power of two, so a value read back from its bucket (the bucket's
// midpoint) is within 1/2048 ≈ 0.05 % of any value that fell in it — inside the 0.1 % the
// percentile API promises when it answers from histograms. Range 2^-20 to 2^24 of the unit
// (with milliseconds: about 1 ns to 4.6 hours); values outside are clamped and counted.
// Sparse (only non-empty buckets are held), mergeable and subtractable (same layout
// everywhere), so sliding windows are "add the newest interval, subtract the oldest", and
// serializable to a few bytes per non-empty bucket for time-bucket tiers.
//
// A value type; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope::analysis {

class LogHistogram {
 public:
  static constexpr int kSubBuckets = 1024;
  static constexpr int kMinExponent = -19;  // frexp exponent of 2^-20
  static constexpr int kMaxExponent = 25;   // values below 2^24
  static constexpr double kMaxRelativeError = 1.0 / 2048;

  void add(double value, std::uint64_t count = 1);
  void merge(const LogHistogram& other);
  // Removes what `other` added; false (and unchanged) when other holds counts this does not.
  bool subtract(const LogHistogram& other);

  std::uint64_t count() const { return total_; }
  std::uint64_t clamped() const { return clamped_; }
  bool empty() const { return total_ == 0; }
  // Nearest-rank percentile (rank ⌈q/100·n⌉), as the bucket's midpoint.
  std::optional<double> percentile(double q) const;
  // The bucket holding the value of 0-based rank k in sorted order (k < count()).
  std::uint32_t bucket_at_rank(std::uint64_t k) const;
  // Values in buckets above the one `value` falls in (the bucket holding it is not counted).
  std::uint64_t count_above(double value) const;
  std::optional<double> min() const;
  std::optional<double> max() const;
  double sum() const { return sum_; }

  std::string serialize() const;
  static std::optional<LogHistogram> deserialize(std::string_view bytes);

  static std::uint32_t bucket_of(double value);
  static double midpoint(std::uint32_t bucket);

 private:
  struct Bin {
    std::uint32_t bucket;
    std::uint64_t count;
  };
  std::vector<Bin> bins_;  // sorted by bucket, no zero counts
  std::uint64_t total_ = 0, clamped_ = 0;
  double sum_ = 0;
};

}  // namespace perfscope::analysis
