#include "engine/analysis/rollup.hpp"

#include <algorithm>
#include <cmath>

namespace perfscope::analysis {

void Rollup::add(double value) {
  if (!std::isfinite(value)) return;
  // Welford's update: stable where Σx² − (Σx)²/n would cancel.
  ++count;
  const double delta = value - (count > 1 ? sum / static_cast<double>(count - 1) : 0.0);
  sum += value;
  m2 += count > 1 ? delta * (value - sum / static_cast<double>(count)) : 0.0;
  min = std::min(min, value);
  max = std::max(max, value);
  histogram.add(value);
}

void Rollup::merge(const Rollup& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  const double na = static_cast<double>(count), nb = static_cast<double>(o.count);
  const double delta = o.sum / nb - sum / na;
  m2 += o.m2 + delta * delta * na * nb / (na + nb);
  count += o.count;
  sum += o.sum;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  histogram.merge(o.histogram);
}

Moments Rollup::moments() const {
  Moments m;
  m.n = static_cast<std::size_t>(count);
  if (count == 0) return m;
  m.sum = sum;
  m.mean = sum / static_cast<double>(count);
  m.std = count > 1 ? std::sqrt(std::max(0.0, m2) / static_cast<double>(count - 1)) : 0.0;
  m.min = min;
  m.max = max;
  return m;
}

double Rollup::value_at_rank(std::uint64_t k) const {
  if (k == 0) return min;
  if (k + 1 >= count) return max;
  const std::uint32_t bucket = histogram.bucket_at_rank(k);
  if (bucket == 0) return min;
  return std::clamp(LogHistogram::midpoint(bucket), min, max);
}

std::vector<double> Rollup::percentiles(std::span<const double> qs, PercentileConvention c) const {
  std::vector<double> out;
  if (count == 0 || histogram.count() != count) return out;
  out.reserve(qs.size());
  for (double q : qs) {
    q = std::clamp(q, 0.0, 100.0);
    if (c == PercentileConvention::kNearestRank) {
      out.push_back(value_at_rank(nearest_rank_index(q, static_cast<std::size_t>(count))));
    } else {
      const double h = (static_cast<double>(count) - 1) * q / 100.0;
      const auto lo = static_cast<std::uint64_t>(std::floor(h));
      const double frac = h - static_cast<double>(lo);
      const double a = value_at_rank(lo);
      out.push_back(frac > 0 ? a + frac * (value_at_rank(lo + 1) - a) : a);
    }
  }
  return out;
}

SlaCompliance Rollup::sla(double target) const {
  SlaCompliance s;
  s.target = target;
  if (count == 0) {
    s.compliance_rate = 1;
    return s;
  }
  s.violations = target < min ? static_cast<std::size_t>(count)
                 : target >= max ? 0
                                 : static_cast<std::size_t>(histogram.count_above(target));
  s.compliance_rate = 1.0 - static_cast<double>(s.violations) / static_cast<double>(count);
  return s;
}

}  // namespace perfscope::analysis
