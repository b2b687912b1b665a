// EventMetrics: cumulative Prometheus-style counters and histograms over every committed
// event — kernel durations and executions, inference latency, time to first token, time per
// output token, request and token counts, command-buffer latency, events by type. Histograms
// (not summaries) so that quantiles aggregate across instances with histogram_quantile().
// Values count from the start of the process, as Prometheus counters do; the database keeps
// the history.
//
// Label sets are bounded: once a family holds `max_series_per_family` label sets, new kernel
// names, models or queues are counted under the value "__other__" (and in overflowed()), so a
// program that names every kernel differently cannot blow up a scrape.
//
// Thread-safety: every method is safe from any thread (one internal mutex).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <mutex>
#include <string>
#include <vector>

#include "engine/events/events.hpp"
#include "engine/series/series.hpp"

namespace perfscope {

// Upper bounds (seconds) of the histogram buckets; +Inf is implied.
const std::vector<double>& kernel_duration_buckets();
const std::vector<double>& request_latency_buckets();
const std::vector<double>& token_latency_buckets();

struct HistogramSnapshot {
  Labels labels;
  std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf (== count)
  double sum = 0;
  std::uint64_t count = 0;
};

struct CounterSnapshot {
  Labels labels;
  double value = 0;
};

// One family, named without the exporter prefix (counters end in _total).
struct EventMetricFamily {
  MetricFamily family;
  std::vector<double> bounds;              // histograms only
  std::vector<HistogramSnapshot> histograms;  // histograms only, sorted by labels
  std::vector<CounterSnapshot> counters;      // counters only, sorted by labels
};

struct EventMetricsOptions {
  std::size_t max_series_per_family = 1000;
};

class EventMetrics {
 public:
  explicit EventMetrics(EventMetricsOptions options = {});

  void observe(const std::vector<Event>& events);
  std::vector<EventMetricFamily> snapshot() const;
  std::uint64_t overflowed() const;

 private:
  struct Histogram {
    std::vector<std::uint64_t> buckets;  // not cumulative; last is +Inf
    double sum = 0;
    std::uint64_t count = 0;
  };
  // Series found by a joined key of their label values (no Labels built on the hot path);
  // labels are made once, when a series first appears.
  template <typename Value>
  struct Family {
    std::unordered_map<std::string, std::size_t> index;  // joined label values → slot
    std::vector<std::pair<Labels, Value>> series;
  };
  struct HistogramFamily : Family<Histogram> {
    const std::vector<double>* bounds = nullptr;
  };
  using CounterFamily = Family<double>;

  // The series of `values` (label values in `names` order, names sorted), created on first
  // use; once the family is full, new series go to `bounded_label` = "__other__".
  template <typename Value>
  Value& slot(Family<Value>& f, std::initializer_list<const char*> names, std::initializer_list<std::string_view> values,
              const char* bounded_label);
  void observe_histogram(HistogramFamily& f, Histogram& h, double seconds);

  const EventMetricsOptions options_;
  mutable std::mutex mu_;
  std::string key_;  // scratch, guarded by mu_
  HistogramFamily kernel_duration_, request_duration_, ttft_, tpot_, command_buffer_latency_;
  CounterFamily requests_, input_tokens_, output_tokens_;
  std::array<std::uint64_t, std::variant_size_v<Event>> events_by_type_{};
  std::uint64_t overflowed_ = 0;
};

}  // namespace perfscope
