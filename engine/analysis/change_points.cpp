#include "engine/analysis/change_points.hpp"

#include <algorithm>
#include <cmath>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {
namespace {

double mean_of(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The split of x maximizing the E-divisive statistic (α = 1), or nothing when x is too short.
std::optional<std::size_t> best_split(std::span<const double> x, std::size_t min_segment) {
  const std::size_t n = x.size();
  if (n < 2 * min_segment) return std::nullopt;
  // Pairwise |xi − xj| once; prefix sums make each candidate O(n).
  std::vector<double> d(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) d[i * n + j] = std::fabs(x[i] - x[j]);
  }
  double best = -1;
  std::optional<std::size_t> at;
  for (std::size_t tau = min_segment; tau + min_segment <= n; ++tau) {
    const double m = static_cast<double>(tau), k = static_cast<double>(n - tau);
    double between = 0, left = 0, right = 0;
    for (std::size_t i = 0; i < tau; ++i) {
      for (std::size_t j = tau; j < n; ++j) between += d[i * n + j];
      for (std::size_t j = i + 1; j < tau; ++j) left += d[i * n + j];
    }
    for (std::size_t i = tau; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) right += d[i * n + j];
    }
    const double e = 2 * between / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2);
    const double q = m * k / (m + k) * e;
    if (q > best) {
      best = q;
      at = tau;
    }
  }
  return at;
}

void search(std::span<const double> all, std::size_t from, std::size_t to, const ChangePointOptions& o,
            std::vector<ChangePoint>& out) {
  if (to - from < 2 * o.min_segment) return;
  auto split = best_split(all.subspan(from, to - from), o.min_segment);
  if (!split) return;
  const std::size_t at = from + *split;
  auto left = all.subspan(from, at - from), right = all.subspan(at, to - at);
  Welch w = welch_t_test(left, right);
  const double before = mean_of(left), after = mean_of(right);
  const double change = before != 0 ? (after - before) / std::fabs(before) : 0;
  // Both sides flat and different: a step that no noise explains.
  const bool step = moments(left).std == 0 && moments(right).std == 0 && before != after;
  if ((w.p_value <= o.max_p_value || step) && std::fabs(change) >= o.min_change) {
    out.push_back({at, before, after, change, step ? 0.0 : w.p_value});
    search(all, from, at, o, out);
    search(all, at, to, o, out);
  }
}

}  // namespace

std::vector<ChangePoint> find_change_points(std::span<const double> values, const ChangePointOptions& o) {
  std::vector<ChangePoint> out;
  const std::size_t n = values.size();
  if (n == 0) return out;
  // Windows overlapping by half, so that a change near a window's edge is central in the next.
  const std::size_t window = std::max(o.window, 2 * o.min_segment);
  const std::size_t step = std::max<std::size_t>(1, window / 2);
  for (std::size_t from = 0;; from += step) {
    const std::size_t to = std::min(n, from + window);
    std::vector<ChangePoint> found;
    search(values, from, to, o, found);
    for (const ChangePoint& c : found) {
      bool duplicate = std::any_of(out.begin(), out.end(), [&](const ChangePoint& e) {
        return (e.index > c.index ? e.index - c.index : c.index - e.index) < o.min_segment;
      });
      if (!duplicate) out.push_back(c);
    }
    if (to == n) break;
  }
  std::sort(out.begin(), out.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return out;
}

double AnomalyDetector::scale() const {
  // A floor keeps a flat series from scoring infinity on its first wobble: a thousandth of its
  // magnitude, and the unit's smallest change that matters as a deviation of `threshold` scales.
  const double magnitude = std::max(std::fabs(center_), magnitude_);
  const double unit_floor = o_.threshold > 0 ? o_.min_absolute_deviation / o_.threshold : 0;
  return std::max({1.4826 * mad_, 1e-3 * magnitude, unit_floor, 1e-12});
}

std::optional<double> AnomalyDetector::observe(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  if (!ready_) {
    warm_.push_back(x);
    if (warm_.size() < o_.warmup) return std::nullopt;
    std::vector<double> v = warm_;
    center_ = percentile(v, 50, PercentileConvention::kLinear);
    for (double& d : v) d = std::fabs(d - center_);
    mad_ = percentile(v, 50, PercentileConvention::kLinear);
    extreme_ = percentile(v, 99.9, PercentileConvention::kLinear);
    for (double w : warm_) magnitude_ += std::fabs(w);
    magnitude_ /= static_cast<double>(warm_.size());
    ready_ = true;
    warm_.clear();
    warm_.shrink_to_fit();
    return std::nullopt;
  }
  const double s = scale();
  const double deviation = std::fabs(x - center_);
  const double score = deviation / s;
  const bool large = deviation >= o_.min_relative_deviation * std::max(std::fabs(center_), magnitude_) &&
                     deviation >= o_.min_absolute_deviation;
  // Judged against the extremes before this point; then they learn from it (Robbins–Monro
  // quantile steps, scaled by the extremes themselves: a wider regime is learnt in ~100 points,
  // and a learnt range halves only after ~14,000 points within it — 23 minutes at 10 Hz — so
  // a host that swings between saturated and idle every few minutes stays learnt).
  const double extreme = std::max(extreme_, s);
  const bool beyond = deviation > extreme;
  const bool far_beyond = deviation >= o_.spike_extremes * extreme;
  const double q_step = o_.rate * extreme;
  constexpr double kQuantile = 0.999;
  extreme_ = std::max(0.0, extreme_ + (beyond ? q_step * kQuantile : -q_step * (1 - kQuantile)));
  // Clip before updating so one outlier moves the estimates no more than a large normal point.
  const double clipped = std::clamp(x, center_ - o_.threshold * s, center_ + o_.threshold * s);
  const double step = o_.rate * s;
  center_ += clipped > center_ ? step : clipped < center_ ? -step : 0;
  const double dev = std::fabs(clipped - center_);
  const double mad_step = o_.rate * std::max(mad_, 1e-12);
  mad_ = std::max(0.0, mad_ + (dev > mad_ ? mad_step : dev < mad_ ? -mad_step : 0));
  magnitude_ += 0.01 * (std::fabs(clipped) - magnitude_);
  if (quiet_ > 0) {
    --quiet_;
    return std::nullopt;
  }
  if (!(score > o_.threshold && large && beyond)) {
    run_ = 0;
    return std::nullopt;
  }
  const bool spike = score >= o_.spike_threshold && far_beyond;
  if (++run_ < std::max<std::size_t>(1, o_.persistence) && !spike) return std::nullopt;
  run_ = 0;
  quiet_ = o_.cooldown;
  return score;
}

}  // namespace perfscope::analysis
