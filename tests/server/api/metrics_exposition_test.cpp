#include "server/api/metrics_exposition.hpp"

#include "server/wire/exposition_parse.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace perfscope::server {
namespace {

std::vector<ExpositionFamily> sample_families() {
  std::vector<ExpositionFamily> f(3);
  f[0].family = {"gpu_energy_joules_total", "joules", MetricType::kCounter, "Energy"};
  f[0].samples = {{{{"gpu", "0"}}, 1234.5}};
  f[1].family = {"kernel_duration_seconds", "seconds", MetricType::kHistogram, "Kernel \"time\"\nsecond line \\"};
  f[1].bounds = {0.0001, 0.5};
  f[1].histograms = {{{{"kernel", "a\"b\\c\nd"}}, {1, 3, 4}, 1.25, 4}};
  f[2].family = {"empty_ratio", "ratio", MetricType::kGauge, "no samples: left out"};
  return f;
}

TEST(MetricsExposition, PrometheusTextGolden) {
  EXPECT_EQ(render_exposition(sample_families(), ExpositionFormat::kPrometheusText),
            "# HELP perfscope_gpu_energy_joules_total Energy\n"
            "# TYPE perfscope_gpu_energy_joules_total counter\n"
            "perfscope_gpu_energy_joules_total{gpu=\"0\"} 1234.5\n"
            "# HELP perfscope_kernel_duration_seconds Kernel \"time\"\\nsecond line \\\\\n"
            "# TYPE perfscope_kernel_duration_seconds histogram\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"0.0001\"} 1\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"0.5\"} 3\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 4\n"
            "perfscope_kernel_duration_seconds_sum{kernel=\"a\\\"b\\\\c\\nd\"} 1.25\n"
            "perfscope_kernel_duration_seconds_count{kernel=\"a\\\"b\\\\c\\nd\"} 4\n");
}

TEST(MetricsExposition, OpenMetricsGolden) {
  EXPECT_EQ(render_exposition(sample_families(), ExpositionFormat::kOpenMetrics),
            "# HELP perfscope_gpu_energy_joules Energy\n"
            "# TYPE perfscope_gpu_energy_joules counter\n"
            "# UNIT perfscope_gpu_energy_joules joules\n"
            "perfscope_gpu_energy_joules_total{gpu=\"0\"} 1234.5\n"
            "# HELP perfscope_kernel_duration_seconds Kernel \\\"time\\\"\\nsecond line \\\\\n"
            "# TYPE perfscope_kernel_duration_seconds histogram\n"
            "# UNIT perfscope_kernel_duration_seconds seconds\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"0.0001\"} 1\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"0.5\"} 3\n"
            "perfscope_kernel_duration_seconds_bucket{kernel=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 4\n"
            "perfscope_kernel_duration_seconds_sum{kernel=\"a\\\"b\\\\c\\nd\"} 1.25\n"
            "perfscope_kernel_duration_seconds_count{kernel=\"a\\\"b\\\\c\\nd\"} 4\n"
            "# EOF\n");
}

TEST(MetricsExposition, UnitLineOnlyWhenTheNameEndsInIt) {
  std::vector<ExpositionFamily> f(1);
  f[0].family = {"host_load1", "load", MetricType::kGauge, "x"};
  f[0].samples = {{{}, 1}};
  EXPECT_EQ(render_exposition(f, ExpositionFormat::kOpenMetrics).find("# UNIT"), std::string::npos);
}

TEST(MetricsExposition, ValuesRoundTripAndSpellSpecials) {
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1e-6), "1e-06");
  EXPECT_EQ(format_metric_value(0.0001), "0.0001");
  EXPECT_EQ(format_metric_value(3), "3");
  EXPECT_EQ(std::stod(format_metric_value(0.1 + 0.2)), 0.1 + 0.2);
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(MetricsExposition, NegotiatesOpenMetricsFromAccept) {
  EXPECT_EQ(negotiate_exposition(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_exposition("text/plain;version=0.0.4"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_exposition("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            ExpositionFormat::kOpenMetrics);
}

// What perfscope writes, a scrape of perfscope reads back: names, types, units, help and
// escaped label values, in both formats.
TEST(MetricsExposition, WhatIsWrittenParsesBack) {
  for (bool openmetrics : {false, true}) {
    const std::string text = render_exposition(
        sample_families(), openmetrics ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kPrometheusText);
    auto parsed = parse_exposition(text, openmetrics);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    ASSERT_EQ(parsed->families.size(), 2u);
    const ScrapedFamily& energy = parsed->families[0];
    EXPECT_EQ(energy.type, ExpositionType::kCounter);
    EXPECT_EQ(energy.samples.at(0).name, "perfscope_gpu_energy_joules_total");
    EXPECT_EQ(energy.samples.at(0).value, 1234.5);
    EXPECT_EQ(energy.help, "Energy");
    const ScrapedFamily& kernels = parsed->families[1];
    EXPECT_EQ(kernels.name, "perfscope_kernel_duration_seconds");
    EXPECT_EQ(kernels.type, ExpositionType::kHistogram);
    EXPECT_EQ(kernels.help, "Kernel \"time\"\nsecond line \\");
    EXPECT_EQ(kernels.unit, openmetrics ? "seconds" : "");
    ASSERT_EQ(kernels.samples.size(), 5u);
    EXPECT_EQ(kernels.samples[0].labels, (Labels{{"kernel", "a\"b\\c\nd"}, {"le", "0.0001"}}));
    EXPECT_EQ(kernels.samples[4].value, 4.0);
  }
}

}  // namespace
}  // namespace perfscope::server
