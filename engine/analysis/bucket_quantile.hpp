// Quantiles and SLA shares from cumulative histogram buckets, as Prometheus' histogram_quantile
// computes them: the data of servers that export latency histograms (vLLM, Triton, TGI) rather
// than single observations. The caller gives bucket counts over a window (the difference of two
// scrapes); the answer carries the bucket it fell in, so a report can state the error bound:
// any value in [lower, upper] fits the buckets equally well.
//
// Pure functions.
#pragma once

#include <optional>
#include <vector>

namespace perfscope {

struct CumulativeBucket {
  double le = 0;     // upper bound, inclusive; +Inf for the last
  double count = 0;  // cumulative: observations <= le
};

struct BucketEstimate {
  double value = 0;  // linear interpolation inside the bucket (histogram_quantile's rule)
  double lower = 0;  // the bucket's bounds: the true value lies within them
  double upper = 0;
};

// Buckets sorted by le, deduplicated, counts made monotonic (a count below its predecessor,
// from scrapes taken mid-update, is raised to it, as Prometheus does). Empty when there is no
// +Inf bucket (the histogram is incomplete).
std::vector<CumulativeBucket> normalize_buckets(std::vector<CumulativeBucket> buckets);

// The q-quantile (0 <= q <= 1) of normalized buckets; nullopt when they hold no observation.
// In the +Inf bucket the answer is the highest finite bound (lower = that bound, upper = +Inf);
// in the first bucket the lower bound is 0 when its upper bound is positive.
std::optional<BucketEstimate> bucket_quantile(double q, const std::vector<CumulativeBucket>& buckets);

// The share of observations at or below `threshold` (an SLA), interpolated as bucket_quantile
// interpolates; lower/upper bound the share by the whole buckets around the threshold.
// nullopt when the buckets hold no observation.
std::optional<BucketEstimate> bucket_share_at_most(double threshold, const std::vector<CumulativeBucket>& buckets);

}  // namespace perfscope
