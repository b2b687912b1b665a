// The identity and description of a time series, in Prometheus terms: a metric family
// (name, unit, type, help) and a series within it (the family name plus labels).
// Value types; safe to copy between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/clock.hpp"
#include "engine/base/status.hpp"

namespace perfscope {

enum class MetricType { kGauge, kCounter, kHistogram };

std::string_view to_string(MetricType type);

// A metric family as collectors declare it. The name follows Prometheus conventions without
// the exporter prefix: base unit as a suffix, `_ratio` for fractions, `_total` for counters.
struct MetricFamily {
  std::string name;
  std::string unit;  // "ratio", "bytes", "seconds", "" for plain numbers
  MetricType type = MetricType::kGauge;
  std::string help;
};

// Label pairs, kept sorted by label name so that equal label sets compare equal.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct SeriesKey {
  std::string name;
  Labels labels;

  SeriesKey() = default;
  SeriesKey(std::string series_name, Labels series_labels);

  // `name{a="x",b="y"}` with Prometheus escaping; `name` alone when there are no labels.
  // Unique per series: used as the map key in memory and in the database.
  std::string canonical() const;
  const std::string* label(std::string_view label_name) const;

  friend bool operator==(const SeriesKey&, const SeriesKey&) = default;
};

// `a="x",b="y"` (sorted, escaped): the text form labels are stored in.
std::string format_labels(const Labels& labels);
// Inverse of format_labels; rejects malformed text.
Result<Labels> parse_labels(std::string_view text);
void sort_labels(Labels& labels);

// Prometheus' metric and label name rules: [a-zA-Z_:][a-zA-Z0-9_:]* (labels without ':').
bool is_valid_metric_name(std::string_view name);
bool is_valid_label_name(std::string_view name);

struct Sample {
  TimestampNs ts_ns = 0;
  double value = 0;
};

// A subscription or query pattern: `*` and `?` globs. A pattern containing '{' is matched
// against the series' canonical key, any other against the family name only.
class SeriesPattern {
 public:
  explicit SeriesPattern(std::string pattern);
  bool matches(const SeriesKey& key, const std::string& canonical) const;
  const std::string& text() const { return pattern_; }

 private:
  std::string pattern_;
  bool match_canonical_;
};

bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace perfscope
