// Change points in a sequence of per-interval statistics (a kernel's p50 per 10 s, a model's
// p99 per minute), the way Apache Otava finds them: E-divisive means — the split that
// maximizes the energy distance between the two sides — searched in windows and split
// recursively, each candidate kept only when Welch's t-test between its sides gives
// p ≤ max_p_value and the means differ by at least min_change (relative).
// AnomalyDetector: streaming, O(1) per point — a robust center and spread (median and MAD
// tracked by stochastic approximation, points beyond the threshold clipped before they
// update) and a score |x − center| / scale, the scale 1.4826·MAD floored (a flat series has a
// MAD of zero: its scale is at least a thousandth of its magnitude and min_absolute_deviation ÷
// threshold, so no score divides by nothing). An anomaly also needs a deviation of at least
// min_relative_deviation of the series' typical magnitude and at least min_absolute_deviation
// (its unit's smallest change that matters), and must pass the series' own recent extremes (the
// 99.9th percentile of |x − center|, tracked as the center is: a series that bursts every
// second or swings between idle and saturated learns that its bursts are normal), and must last
// `persistence` points (a one-sample blip of a rate is not an excursion, as an alert's `for:`
// clause says) — unless it scores spike_threshold or more and passes spike_extremes times those
// extremes, which is reported at once; after one the series stays quiet for `cooldown` points
// (one alert per excursion).
//
// Pure functions and a value type; a detector is single-threaded.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace perfscope::analysis {

struct ChangePointOptions {
  std::size_t window = 50;     // points per search window
  std::size_t min_segment = 5; // fewest points on either side of a change
  double max_p_value = 0.001;
  double min_change = 0.05;    // |after − before| / |before|
};

struct ChangePoint {
  std::size_t index = 0;  // first point after the change
  double before = 0, after = 0;  // means of the segments on either side
  double change = 0;             // (after − before) / |before|
  double p_value = 1;
};

std::vector<ChangePoint> find_change_points(std::span<const double> values, const ChangePointOptions& options = {});

class AnomalyDetector {
 public:
  struct Options {
    std::size_t warmup = 100;  // points before any score (seeds center and spread exactly)
    double threshold = 6.0;    // robust z-score that counts as an anomaly
    double rate = 0.05;        // adaptation per point, in units of the spread
    // The deviation must also be this large relative to the series' typical magnitude, so
    // that a series idling near zero does not alert on every wobble.
    double min_relative_deviation = 0.1;
    // The smallest deviation that matters in the series' unit (2 percentage points of a ratio,
    // 1 MiB of memory …; 0: none), which also floors the scale.
    double min_absolute_deviation = 0;
    double spike_threshold = 20.0;  // a score this high is an anomaly at its first point …
    double spike_extremes = 3.0;    // … when also this many times the series' recent extremes
    std::size_t cooldown = 300;  // points after an anomaly before the next one is reported
    std::size_t persistence = 3; // consecutive anomalous points before one is reported
  };
  AnomalyDetector() : AnomalyDetector(Options{}) {}
  explicit AnomalyDetector(Options options) : o_(options) { warm_.reserve(o_.warmup); }

  // The robust z-score of x when it is an anomaly, else nothing. Updates the state.
  std::optional<double> observe(double x);
  double center() const { return center_; }
  double mad() const { return mad_; }

 private:
  double scale() const;
  Options o_;
  std::vector<double> warm_;
  bool ready_ = false;
  double center_ = 0, mad_ = 0;
  double magnitude_ = 0;  // EWMA of |x|
  double extreme_ = 0;    // the 99.9th percentile of |x − center|, tracked
  std::size_t quiet_ = 0;  // points left in the cooldown
  std::size_t run_ = 0;    // consecutive anomalous points so far
};

}  // namespace perfscope::analysis
