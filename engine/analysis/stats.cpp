#include "engine/analysis/stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

namespace perfscope::analysis {

std::string_view to_string(PercentileConvention c) {
  return c == PercentileConvention::kLinear ? "linear" : "nearest_rank";
}

std::optional<PercentileConvention> convention_from(std::string_view text) {
  if (text == "nearest_rank") return PercentileConvention::kNearestRank;
  if (text == "linear") return PercentileConvention::kLinear;
  return std::nullopt;
}

std::size_t nearest_rank_index(double q, std::size_t n) {
  const auto milli = static_cast<unsigned long long>(std::llround(q * 1000.0));
  const unsigned long long scaled = milli * n;  // q ≤ 100 → ≤ 1e5 · n
  unsigned long long rank = (scaled + 99'999) / 100'000;
  rank = std::clamp<unsigned long long>(rank, 1, n);
  return static_cast<std::size_t>(rank - 1);
}

std::vector<double> percentiles(std::vector<double>& values, std::span<const double> qs, PercentileConvention c) {
  std::vector<double> out(qs.size());
  const std::size_t n = values.size();
  if (n == 0) return {};
  // Each order statistic needed, selected in ascending order so that every selection only
  // works on what lies above the previous one.
  struct Need {
    std::size_t index;
    std::size_t query;
    double weight;  // linear: the fraction towards index + 1
  };
  std::vector<Need> needs;
  needs.reserve(qs.size());
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const double q = std::clamp(qs[i], 0.0, 100.0);
    if (c == PercentileConvention::kNearestRank) {
      needs.push_back({nearest_rank_index(q, n), i, 0});
    } else {
      const double h = (q / 100.0) * static_cast<double>(n - 1);  // numpy: quantile · (n − 1)
      const double lo = std::floor(h);
      needs.push_back({static_cast<std::size_t>(lo), i, h - lo});
    }
  }
  auto interpolate = [&](const Need& need, double a, double b) {
    // numpy's lerp: from the nearer end, exact at both.
    const double t = need.weight;
    return t >= 0.5 ? b - (b - a) * (1 - t) : a + (b - a) * t;
  };
  if (n >= kBucketSelectionFrom) {
    // Every rank at once by bucket selection: three linear passes however many quantiles.
    std::vector<std::size_t> ranks;
    for (const Need& need : needs) {
      ranks.push_back(need.index);
      ranks.push_back(std::min(need.index + 1, n - 1));
    }
    const auto at = order_statistics(values, ranks);
    for (std::size_t i = 0; i < needs.size(); ++i) {
      const Need& need = needs[i];
      const bool lerp = c == PercentileConvention::kLinear && need.weight > 0 && need.index + 1 < n;
      out[need.query] = lerp ? interpolate(need, at[2 * i], at[2 * i + 1]) : at[2 * i];
    }
    return out;
  }
  std::sort(needs.begin(), needs.end(), [](const Need& a, const Need& b) { return a.index < b.index; });
  auto from = values.begin();
  for (const Need& need : needs) {
    auto nth = values.begin() + static_cast<std::ptrdiff_t>(need.index);
    if (nth >= from) {
      std::nth_element(from, nth, values.end());
      from = nth;  // everything before is ≤ *nth; later selections start here
    }
    const double a = *nth;
    double v = a;
    if (c == PercentileConvention::kLinear && need.weight > 0 && need.index + 1 < n) {
      v = interpolate(need, a, *std::min_element(nth + 1, values.end()));
    }
    out[need.query] = v;
  }
  return out;
}

namespace {

// Order-preserving maps to unsigned 64-bit keys: a < b exactly when key(a) < key(b).
std::uint64_t order_key(std::int64_t v) { return static_cast<std::uint64_t>(v) ^ (std::uint64_t{1} << 63); }
// IEEE 754: flip every bit of a negative, only the sign bit of a positive. (-0.0 sorts just
// below +0.0; they compare equal as doubles, so either is the right answer.)
std::uint64_t order_key(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}

// The order statistics at `ranks`, by one pass counting the values per bucket of the keys'
// top 16 significant bits, one collecting the members of the buckets that hold a rank, and
// a selection among those members. A crowded bucket (values bunched under an outlier) goes
// one level further.
template <typename T>
std::vector<T> keyed_order_statistics(std::span<const T> values, std::span<const std::size_t> ranks,
                                      std::uint64_t lo, std::uint64_t hi) {
  std::vector<T> out(ranks.size());
  if (values.empty()) return out;
  const std::uint64_t span = hi - lo;
  if (span == 0) {  // all equal (a launch call that always takes the same time)
    T any{};
    for (const T& v : values) {
      if (order_key(v) == lo) {
        any = v;
        break;
      }
    }
    std::fill(out.begin(), out.end(), any);
    return out;
  }
  constexpr int kDigitBits = 16;
  const int bits = std::bit_width(span);
  const int shift = std::max(0, bits - kDigitBits);
  auto digit = [&](const T& v) { return static_cast<std::size_t>((order_key(v) - lo) >> shift); };
  std::vector<std::uint32_t> count((span >> shift) + 1, 0);
  for (const T& v : values) ++count[digit(v)];
  // Each rank's bucket and its rank inside the bucket.
  struct Want {
    std::size_t bucket, rank_in_bucket;
  };
  std::vector<Want> wants(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::size_t seen = 0, b = 0;
    while (seen + count[b] <= ranks[i]) seen += count[b++];
    wants[i] = {b, ranks[i] - seen};
  }
  std::vector<std::size_t> buckets;
  for (const Want& w : wants) buckets.push_back(w.bucket);
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  std::vector<std::vector<T>> members(buckets.size());
  for (std::size_t j = 0; j < buckets.size(); ++j) members[j].reserve(count[buckets[j]]);
  // count[] becomes a slot map: 0 for buckets not wanted, else 1 + the member list's index.
  std::fill(count.begin(), count.end(), 0);
  for (std::size_t j = 0; j < buckets.size(); ++j) count[buckets[j]] = static_cast<std::uint32_t>(j + 1);
  for (const T& v : values) {
    if (const std::uint32_t slot = count[digit(v)]) members[slot - 1].push_back(v);
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    auto& m = members[static_cast<std::size_t>(std::lower_bound(buckets.begin(), buckets.end(), wants[i].bucket) - buckets.begin())];
    if (m.size() > 4096) {
      const std::size_t rank[] = {wants[i].rank_in_bucket};
      std::uint64_t mlo = order_key(m.front()), mhi = mlo;
      for (const T& v : m) {
        mlo = std::min(mlo, order_key(v));
        mhi = std::max(mhi, order_key(v));
      }
      out[i] = keyed_order_statistics<T>(m, rank, mlo, mhi)[0];
      continue;
    }
    auto nth = m.begin() + static_cast<std::ptrdiff_t>(wants[i].rank_in_bucket);
    std::nth_element(m.begin(), nth, m.end());
    out[i] = *nth;
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> integer_order_statistics(std::span<const std::int64_t> values,
                                                   std::span<const std::size_t> ranks) {
  if (values.empty()) return std::vector<std::int64_t>(ranks.size());
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return integer_order_statistics(values, ranks, *lo, *hi);
}

std::vector<std::int64_t> integer_order_statistics(std::span<const std::int64_t> values,
                                                   std::span<const std::size_t> ranks, std::int64_t lo,
                                                   std::int64_t hi) {
  return keyed_order_statistics(values, ranks, order_key(lo), order_key(hi));
}

std::vector<double> order_statistics(std::span<const double> values, std::span<const std::size_t> ranks) {
  if (values.empty()) return std::vector<double>(ranks.size());
  std::uint64_t lo = order_key(values[0]), hi = lo;
  for (double v : values) {
    const std::uint64_t k = order_key(v);
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  return keyed_order_statistics(values, ranks, lo, hi);
}

double percentile(std::vector<double>& values, double q, PercentileConvention c) {
  const double qs[] = {q};
  auto out = percentiles(values, qs, c);
  return out.empty() ? 0 : out[0];
}

Moments moments(std::span<const double> values) {
  Moments m;
  m.n = values.size();
  if (m.n == 0) return m;
  // Two passes: the mean first, then squared deviations from it (no catastrophic
  // cancellation on large, tightly clustered values such as nanosecond timestamps).
  m.sum = std::accumulate(values.begin(), values.end(), 0.0);
  m.mean = m.sum / static_cast<double>(m.n);
  double ss = 0, comp = 0;
  m.min = m.max = values[0];
  for (double v : values) {
    const double d = v - m.mean;
    ss += d * d;
    comp += d;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  if (m.n > 1) {
    // Corrected two-pass formula (Chan, Golub & LeVeque): removes the mean's rounding error.
    const double var = (ss - comp * comp / static_cast<double>(m.n)) / static_cast<double>(m.n - 1);
    m.std = std::sqrt(std::max(var, 0.0));
  }
  return m;
}

SlaCompliance sla_compliance(std::span<const double> values, double target) {
  SlaCompliance s;
  s.target = target;
  s.violations = static_cast<std::size_t>(std::count_if(values.begin(), values.end(), [&](double v) { return v > target; }));
  s.compliance_rate = values.empty() ? 1.0 : 1.0 - static_cast<double>(s.violations) / static_cast<double>(values.size());
  return s;
}

std::size_t min_samples_for_percentile(double q) {
  if (q >= 99.9) return 6636;
  if (q >= 99) return 662;
  if (q >= 90) return 64;
  return 0;
}

std::string percentile_key(double q) {
  std::string s = std::to_string(q);  // "99.900000"
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return "p" + s;
}

}  // namespace perfscope::analysis
