// Prometheus text exposition (format 0.0.4) and OpenMetrics 1.0 text, parsed: what a scrape
// of another server's /metrics (vLLM, Triton, TGI, SGLang, perfscope itself) reads.
//
// All or nothing, as Prometheus scrapes are: a malformed line fails the whole exposition with
// an error naming its line number, so a half-read scrape never becomes half a histogram.
// Samples are grouped into the family their TYPE line (or their name without the _bucket,
// _sum, _count, _total, _created, _info suffix) gives; label sets are sorted. Exemplars are
// skipped. OpenMetrics timestamps (seconds) and text-format ones (milliseconds) both come out
// in nanoseconds.
//
// Pure functions, no I/O: safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/series/series.hpp"
#include "engine/base/status.hpp"

namespace perfscope::server {

enum class ExpositionType { kUntyped, kCounter, kGauge, kHistogram, kSummary, kInfo, kStateSet, kGaugeHistogram };
std::string_view to_string(ExpositionType type);

struct ScrapedSample {
  std::string name;  // as written: foo_bucket, foo_sum, foo_total…
  Labels labels;     // sorted by name
  double value = 0;
  std::optional<std::int64_t> ts_ns;  // when the exposition gives one
};

struct ScrapedFamily {
  std::string name;  // without suffixes: the TYPE line's name
  ExpositionType type = ExpositionType::kUntyped;
  std::string help;
  std::string unit;  // OpenMetrics UNIT
  std::vector<ScrapedSample> samples;
};

struct Exposition {
  std::vector<ScrapedFamily> families;  // in order of first appearance
  std::size_t sample_count = 0;
};

struct ExpositionLimits {
  std::size_t max_samples = 1'000'000;
  std::size_t max_labels_per_sample = 64;
  std::size_t max_name_bytes = 1024;  // metric and label names, and label values
};

// `openmetrics`: parse as OpenMetrics (a `# EOF` line is required, timestamps are seconds);
// otherwise as the Prometheus text format. Content types: see exposition_is_openmetrics().
Result<Exposition> parse_exposition(std::string_view text, bool openmetrics, const ExpositionLimits& limits = {});

// Whether a scrape's Content-Type announces OpenMetrics (application/openmetrics-text).
bool exposition_is_openmetrics(std::string_view content_type);

}  // namespace perfscope::server
