#include "engine/analysis/bucket_quantile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace perfscope {

std::vector<CumulativeBucket> normalize_buckets(std::vector<CumulativeBucket> buckets) {
  std::erase_if(buckets, [](const CumulativeBucket& b) { return std::isnan(b.le) || std::isnan(b.count); });
  std::sort(buckets.begin(), buckets.end(), [](const CumulativeBucket& a, const CumulativeBucket& b) { return a.le < b.le; });
  if (buckets.empty() || !std::isinf(buckets.back().le) || buckets.back().le < 0) return {};
  std::vector<CumulativeBucket> out;
  for (const CumulativeBucket& b : buckets) {
    if (!out.empty() && out.back().le == b.le) {
      out.back().count += b.count;  // one bound written twice: its counts add up
    } else {
      out.push_back(b);
    }
  }
  double highest = 0;
  for (CumulativeBucket& b : out) {
    b.count = std::max({b.count, highest, 0.0});
    highest = b.count;
  }
  return out;
}

std::optional<BucketEstimate> bucket_quantile(double q, const std::vector<CumulativeBucket>& buckets) {
  if (buckets.size() < 2 || std::isnan(q)) return std::nullopt;
  const double total = buckets.back().count;
  if (!(total > 0)) return std::nullopt;
  q = std::clamp(q, 0.0, 1.0);
  double rank = q * total;
  // The first bucket whose cumulative count reaches the rank (the +Inf bucket excluded).
  std::size_t b = 0;
  while (b < buckets.size() - 1 && buckets[b].count < rank) ++b;
  const std::size_t last_finite = buckets.size() - 2;
  if (b == buckets.size() - 1) {
    const double highest = buckets[last_finite].le;
    return BucketEstimate{highest, highest, std::numeric_limits<double>::infinity()};
  }
  if (b == 0 && buckets[0].le <= 0) {
    return BucketEstimate{buckets[0].le, -std::numeric_limits<double>::infinity(), buckets[0].le};
  }
  const double start = b > 0 ? buckets[b - 1].le : 0.0;
  const double end = buckets[b].le;
  double count = buckets[b].count;
  if (b > 0) {
    count -= buckets[b - 1].count;
    rank -= buckets[b - 1].count;
  }
  const double value = count > 0 ? start + (end - start) * (rank / count) : end;
  return BucketEstimate{value, start, end};
}

std::optional<BucketEstimate> bucket_share_at_most(double threshold, const std::vector<CumulativeBucket>& buckets) {
  if (buckets.size() < 2 || std::isnan(threshold)) return std::nullopt;
  const double total = buckets.back().count;
  if (!(total > 0)) return std::nullopt;
  const std::size_t last_finite = buckets.size() - 2;
  if (threshold >= buckets[last_finite].le) {
    // Above every finite bound: what lies in the +Inf bucket may or may not be within it.
    const double known = buckets[last_finite].count / total;
    return BucketEstimate{known, known, 1.0};
  }
  std::size_t i = 0;
  while (buckets[i].le < threshold) ++i;  // stops at last_finite at the latest
  const double below = i > 0 ? buckets[i - 1].count : 0.0;
  const double start = i > 0 ? buckets[i - 1].le : (buckets[0].le > 0 ? 0.0 : -std::numeric_limits<double>::infinity());
  const double lower = below / total;
  const double upper = buckets[i].count / total;
  if (buckets[i].le == threshold) return BucketEstimate{upper, upper, upper};
  if (std::isinf(start) || threshold <= start) return BucketEstimate{lower, lower, upper};
  const double fraction = (threshold - start) / (buckets[i].le - start);
  return BucketEstimate{(below + (buckets[i].count - below) * fraction) / total, lower, upper};
}

}  // namespace perfscope
