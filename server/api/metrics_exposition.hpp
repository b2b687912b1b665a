// The Prometheus text exposition format (0.0.4) and OpenMetrics 1.0 text, from metric
// families gathered by the /metrics handler. Pure formatting: no I/O, no locks.
//
// Names are given without the exporter prefix; `prefix` is prepended. Counter names end in
// `_total` (OpenMetrics' TYPE and UNIT lines name the family without it). Floats are printed
// shortest round-trip, NaN and ±Inf spelled as both formats require.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/series/series.hpp"

namespace perfscope::server {

enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

struct ExpositionSample {
  Labels labels;
  double value = 0;
};

struct ExpositionHistogram {
  Labels labels;
  std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
  double sum = 0;
  std::uint64_t count = 0;
};

struct ExpositionFamily {
  MetricFamily family;
  std::vector<ExpositionSample> samples;        // gauges and counters
  std::vector<double> bounds;                   // histograms
  std::vector<ExpositionHistogram> histograms;  // histograms
};

// The format a scraper asked for through its Accept header.
ExpositionFormat negotiate_exposition(std::string_view accept);
std::string_view exposition_content_type(ExpositionFormat format);

// Families with no samples are left out; families must have distinct names.
std::string render_exposition(const std::vector<ExpositionFamily>& families, ExpositionFormat format,
                              std::string_view prefix = "perfscope_");

// Shortest round-trip decimal; "NaN", "+Inf", "-Inf".
std::string format_metric_value(double v);

}  // namespace perfscope::server
