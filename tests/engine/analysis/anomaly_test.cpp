// Trends, change points, anomaly scores and the GPU alerts on crafted series.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "engine/analysis/anomaly_monitor.hpp"
#include "engine/analysis/change_points.hpp"
#include "engine/analysis/gpu_alerts.hpp"
#include "engine/analysis/trend.hpp"

namespace perfscope::analysis {
namespace {

constexpr double kTol = 1e-9;
TEST(Trend, SlopeAndSignificance) {
  std::vector<double> t, line, noise, ramp;
  std::mt19937_64 rng(2);
  std::normal_distribution<double> n(0, 1);
  for (int i = 0; i < 200; ++i) {
    t.push_back(i * 0.5);
    line.push_back(3 + 2 * i * 0.5);
    noise.push_back(10 + n(rng));
    ramp.push_back(10 + 0.05 * i * 0.5 + n(rng));
  }
  Trend exact = linear_trend(t, line);
  EXPECT_NEAR(exact.slope_per_second, 2, kTol);
  EXPECT_NEAR(exact.intercept, 3, 1e-9);
  EXPECT_EQ(exact.p_value, 0);
  EXPECT_FALSE(linear_trend(t, noise).significant());
  Trend up = linear_trend(t, ramp);
  EXPECT_TRUE(up.significant());
  EXPECT_NEAR(up.slope_per_second, 0.05, 0.02);
  EXPECT_EQ(linear_trend(std::vector<double>{1}, std::vector<double>{1}).p_value, 1);
}

TEST(ChangePoints, FindsAPlantedTenPercentStepAndNothingInNoise) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> noise(0, 0.02);  // 2% noise around 1.0
  std::vector<double> step, flat;
  for (int i = 0; i < 120; ++i) {
    step.push_back((i < 70 ? 1.0 : 1.1) * (1 + noise(rng)));
    flat.push_back(1 + noise(rng));
  }
  auto found = find_change_points(step);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(static_cast<double>(found[0].index), 70, 2);
  EXPECT_NEAR(found[0].change, 0.10, 0.03);
  EXPECT_LT(found[0].p_value, 0.001);
  EXPECT_TRUE(find_change_points(flat).empty());
  // A noiseless step is found too; one under the magnitude floor is not.
  std::vector<double> clean(40, 5.0), tiny(40, 5.0);
  for (int i = 20; i < 40; ++i) {
    clean[static_cast<std::size_t>(i)] = 4.0;
    tiny[static_cast<std::size_t>(i)] = 5.05;
  }
  auto c = find_change_points(clean);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].index, 20u);
  EXPECT_NEAR(c[0].change, -0.2, kTol);
  EXPECT_TRUE(find_change_points(tiny).empty());
}

TEST(Anomalies, ScoresASpikeAndStaysQuietOnNoise) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> noise(50, 2);
  AnomalyDetector d;
  std::size_t false_alarms = 0;
  for (int i = 0; i < 5000; ++i) false_alarms += d.observe(noise(rng)).has_value();
  EXPECT_LE(false_alarms, 2u);
  EXPECT_NEAR(d.center(), 50, 1);
  // A one-sample blip under the spike threshold is not reported; three in a row are, once.
  EXPECT_FALSE(d.observe(70).has_value());
  EXPECT_FALSE(d.observe(51).has_value());
  EXPECT_FALSE(d.observe(70).has_value());
  EXPECT_FALSE(d.observe(71).has_value());
  auto excursion = d.observe(72);
  ASSERT_TRUE(excursion.has_value());
  EXPECT_GT(*excursion, 6);
  EXPECT_LT(*excursion, AnomalyDetector::Options{}.spike_threshold);
  EXPECT_FALSE(d.observe(51).has_value());
  EXPECT_NEAR(d.center(), 50, 1);  // a short excursion barely moves the center
  // A spike far beyond the noise is reported at its one sample.
  AnomalyDetector spiky;
  for (int i = 0; i < 500; ++i) spiky.observe(noise(rng));
  auto spike = spiky.observe(150);
  ASSERT_TRUE(spike.has_value());
  EXPECT_GT(*spike, AnomalyDetector::Options{}.spike_threshold);
  AnomalyDetector flat;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(flat.observe(7.0).has_value());
  // A flat series has no spread: its scale is the floor (a thousandth of 7), so a step of 1 is
  // far past the spike threshold and reported at its first point, with a finite score.
  auto step = flat.observe(8.0);
  ASSERT_TRUE(step.has_value());
  EXPECT_NEAR(*step, 1.0 / 0.007, 1);
  // One excursion, one alert: the next points of it are inside the cooldown.
  EXPECT_FALSE(flat.observe(8.5).has_value());
  // A very steady series: a move of 2% is many MADs but too small to matter; 20% is not.
  AnomalyDetector steady;
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(steady.observe(i % 2 ? 10.01 : 10.0).has_value());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(steady.observe(10.2).has_value());
  EXPECT_TRUE(steady.observe(12.0).has_value());
}

// A steady series with noise: a planted step and a planted one-sample spike are each reported
// within three samples; the noise, however long, is not.
TEST(Anomalies, FindsAPlantedStepAndSpikeWithinThreeSamplesAndStaysQuietOnNoise) {
  AnomalyDetector::Options o;
  o.min_absolute_deviation = anomaly_unit_floor("gpu_utilization_ratio");
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.01);
  auto steady = [&] { return std::clamp(0.6 + noise(rng), 0.0, 1.0); };

  AnomalyDetector quiet(o);
  std::size_t false_alarms = 0;
  for (int i = 0; i < 36000; ++i) false_alarms += quiet.observe(steady()).has_value();  // an hour at 10 Hz
  EXPECT_EQ(false_alarms, 0u);

  AnomalyDetector stepped(o);
  for (int i = 0; i < 600; ++i) ASSERT_FALSE(stepped.observe(steady()).has_value());
  int found_at = -1;
  for (int i = 0; i < 10 && found_at < 0; ++i) {
    if (stepped.observe(0.9 + noise(rng))) found_at = i;
  }
  EXPECT_GE(found_at, 0);
  EXPECT_LT(found_at, 3);

  AnomalyDetector spiked(o);
  for (int i = 0; i < 600; ++i) ASSERT_FALSE(spiked.observe(steady()).has_value());
  auto spike = spiked.observe(1.0);
  ASSERT_TRUE(spike.has_value());
  EXPECT_GT(*spike, o.spike_threshold);
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(spiked.observe(steady()).has_value()) << i;  // one report per excursion
}

// A series flat at zero (swap, an idle counter rate): its MAD is zero, so without a floor any
// wobble would score in the billions. With its unit's floor a sub-MiB wobble is nothing and a
// real change scores a finite, readable figure.
TEST(Anomalies, AFlatSeriesScoresAgainstItsUnitFloor) {
  AnomalyDetector::Options o;
  o.min_absolute_deviation = anomaly_unit_floor("host_swap_used_bytes");
  EXPECT_EQ(o.min_absolute_deviation, 1024.0 * 1024.0);
  AnomalyDetector d(o);
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(d.observe(0).has_value());
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(d.observe(4096).has_value());  // 4 KiB: below the floor
  std::optional<double> score;
  for (int i = 0; i < 5 && !score; ++i) score = d.observe(64.0 * 1024 * 1024);
  ASSERT_TRUE(score.has_value());
  EXPECT_LT(*score, 1e4);  // 64 MiB over a 1 MiB/6 scale: about 384, not 10^15
  EXPECT_EQ(anomaly_unit_floor("gpu_temperature_celsius"), 2);
  EXPECT_EQ(anomaly_unit_floor("requests_per_second"), 0);
}

// Series that are busy by nature stay quiet once they have shown their range: a process whose
// CPU bursts one sample in ten (a writer's flush), and a host that swings between saturated
// and half idle (builds) about once a minute. An hour at 10 Hz of each: one anomaly at most for
// the bursts, two for the swings (while learning them, and once more).
TEST(Anomalies, BurstyAndSwingingSeriesLearnTheirExtremes) {
  AnomalyDetector::Options o;
  o.min_absolute_deviation = anomaly_unit_floor("process_cpu_utilization_ratio");
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0, 0.005);
  std::uniform_real_distribution<double> u(0, 1);
  AnomalyDetector bursty(o), swinging(o);
  std::size_t bursty_alarms = 0, swinging_alarms = 0;
  bool saturated = true;
  for (int i = 0; i < 36000; ++i) {
    const double burst = i % 10 == 0 ? 0.35 + 0.1 * u(rng) : 0.02;
    bursty_alarms += bursty.observe(std::clamp(burst + noise(rng), 0.0, 1.0)).has_value();
    if (u(rng) < 1.0 / 600) saturated = !saturated;  // a regime lasts a minute on average
    const double busy = saturated ? 1.0 - std::fabs(noise(rng)) : 0.5 + 0.3 * (u(rng) - 0.5);
    swinging_alarms += swinging.observe(busy).has_value();
  }
  EXPECT_LE(bursty_alarms, 1u);
  EXPECT_LE(swinging_alarms, 2u);
  // A steady series keeps finding a planted spike: its extremes are its noise.
  AnomalyDetector steady(o);
  for (int i = 0; i < 3000; ++i) steady.observe(0.3 + noise(rng));
  EXPECT_TRUE(steady.observe(0.8).has_value());
}

TEST(AnomalyMonitor, KeepsAnomaliesOfEachSeriesWithTheirKeys) {
  SeriesStore store(100);
  SeriesId steady = store.intern(SeriesKey("queue_depth", {{"q", "a"}}));
  SeriesId other = store.intern(SeriesKey("temp_celsius", {}));
  AnomalyDetector::Options options;
  options.cooldown = 0;  // every anomalous point counts here
  AnomalyMonitor monitor(store, 3, options);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(10, 1);
  for (int i = 0; i < 200; ++i) {
    SampleBatch b{1000 + i, {{steady, noise(rng)}, {other, 40 + noise(rng)}}};
    EXPECT_TRUE(monitor.observe(b).empty()) << i;
  }
  // 8 °C over a 1 °C noise: an excursion (under the spike threshold) once it lasts three samples.
  EXPECT_TRUE(monitor.observe(SampleBatch{4998, {{steady, 10.2}, {other, 58}}}).empty());
  EXPECT_TRUE(monitor.observe(SampleBatch{4999, {{steady, 10.2}, {other, 58}}}).empty());
  auto found = monitor.observe(SampleBatch{5000, {{steady, 10.2}, {other, 58}}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].key.canonical(), "temp_celsius");
  EXPECT_DOUBLE_EQ(found[0].value, 58);
  EXPECT_GT(found[0].score, 6);
  EXPECT_NEAR(found[0].center, 40 + 10, 1.5);
  for (int i = 0; i < 9; ++i) monitor.observe(SampleBatch{6000 + i, {{steady, 1000.0 + i * 1000}}});
  auto kept = monitor.recent(0, 10'000);
  EXPECT_EQ(kept.size(), 3u);  // bounded
  EXPECT_TRUE(monitor.recent(0, 10).empty());

  // Counters are not scored: their every sample is new by construction.
  store.declare({"bytes_total", "bytes", MetricType::kCounter, ""});
  SeriesId counter = store.intern(SeriesKey("bytes_total", {}));
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(monitor.observe(SampleBatch{20'000 + i, {{counter, i < 400 ? i * 1.0 : i * 1000.0}}}).empty());
  }
}

TEST(GpuAlerts, PowerTargetAndThermalThrottlingOncePerExcursion) {
  SeriesStore store(10);
  SeriesId power = store.intern(SeriesKey("gpu_power_watts", {{"gpu", "0"}, {"uuid", "GPU-a"}}));
  SeriesId thermal = store.intern(SeriesKey("gpu_throttle_active", {{"gpu", "0"}, {"reason", "hw_thermal_slowdown"}, {"uuid", "GPU-a"}}));
  SeriesId idle = store.intern(SeriesKey("gpu_throttle_active", {{"gpu", "0"}, {"reason", "gpu_idle"}, {"uuid", "GPU-a"}}));
  GpuAlerts alerts(store, 600.0);
  EXPECT_TRUE(alerts.observe(SampleBatch{1, {{power, 550}, {thermal, 0}, {idle, 1}}}).empty());
  auto up = alerts.observe(SampleBatch{2, {{power, 650}, {thermal, 0}, {idle, 1}}});
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].kind, "power_target");
  EXPECT_DOUBLE_EQ(up[0].threshold, 600);
  EXPECT_EQ(up[0].message, "GPU 0 draws 650 W, above the 600 W power target");
  EXPECT_TRUE(alerts.observe(SampleBatch{3, {{power, 690}}}).empty());  // still above: no repeat
  EXPECT_TRUE(alerts.observe(SampleBatch{4, {{power, 500}}}).empty());
  EXPECT_EQ(alerts.observe(SampleBatch{5, {{power, 610}}}).size(), 1u);  // a new excursion
  auto hot = alerts.observe(SampleBatch{6, {{thermal, 1}}});
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot[0].kind, "thermal_throttling");
  EXPECT_EQ(hot[0].message, "GPU 0 is thermally throttled (hw_thermal_slowdown)");
  EXPECT_EQ(alerts.recent(0, 10).size(), 3u);
  GpuAlerts no_target(store, std::nullopt);
  EXPECT_TRUE(no_target.observe(SampleBatch{1, {{power, 5000}}}).empty());
}

// Every Xid is news: the first reading of a count (its first Xid) and each growth alert, a
// count that stands still does not.
TEST(GpuAlerts, EachXidTheDriverReportsIsAnAlert) {
  SeriesStore store(10);
  SeriesId bus = store.intern(SeriesKey("gpu_xid_errors_total", {{"gpu", "1"}, {"uuid", "GPU-b"}, {"xid", "79"}}));
  SeriesId odd = store.intern(SeriesKey("gpu_xid_errors_total", {{"gpu", "1"}, {"uuid", "GPU-b"}, {"xid", "1234"}}));
  GpuAlerts alerts(store, std::nullopt);
  auto first = alerts.observe(SampleBatch{1, {{bus, 1}}});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, "xid");
  EXPECT_EQ(first[0].message, "GPU 1 reported Xid 79: GPU has fallen off the bus");
  EXPECT_TRUE(alerts.observe(SampleBatch{2, {{bus, 1}}}).empty());
  EXPECT_EQ(alerts.observe(SampleBatch{3, {{bus, 3}}}).size(), 1u);
  auto unknown = alerts.observe(SampleBatch{4, {{odd, 1}}});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].message, "GPU 1 reported Xid 1234");
}

// The drawn timeline: raw executions in start order with the gap before each and its cause.

}  // namespace
}  // namespace perfscope::analysis
