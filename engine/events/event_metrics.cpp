#include "engine/events/event_metrics.hpp"

#include <algorithm>
#include <variant>

namespace perfscope {

const std::vector<double>& kernel_duration_buckets() {
  static const std::vector<double> b = {1e-6,   2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                        5e-3,   1e-2,   2.5e-2, 5e-2, 0.1,  0.25, 0.5,  1,      2.5,  5,    10};
  return b;
}

const std::vector<double>& request_latency_buckets() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                        1,     2.5,    5,     10,   20,    30,   60,  120};
  return b;
}

const std::vector<double>& token_latency_buckets() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04,
                                        0.05,  0.075,  0.1,   0.15, 0.2,   0.3,  0.5,   1,    2.5};
  return b;
}

namespace {
constexpr const char* kOther = "__other__";
}  // namespace

EventMetrics::EventMetrics(EventMetricsOptions options) : options_(options) {
  kernel_duration_.bounds = &kernel_duration_buckets();
  command_buffer_latency_.bounds = &kernel_duration_buckets();
  request_duration_.bounds = &request_latency_buckets();
  ttft_.bounds = &request_latency_buckets();
  tpot_.bounds = &token_latency_buckets();
}

template <typename Value>
Value& EventMetrics::slot(Family<Value>& f, std::initializer_list<const char*> names,
                          std::initializer_list<std::string_view> values, const char* bounded_label) {
  key_.clear();
  for (std::string_view v : values) {
    key_ += v;
    key_ += '\x1f';  // unit separator: label values rarely hold it, and then only collide harmlessly
  }
  if (auto it = f.index.find(key_); it != f.index.end()) return f.series[it->second].second;
  Labels labels;
  auto v = values.begin();
  for (const char* n : names) labels.emplace_back(n, std::string(*v++));
  if (f.series.size() >= options_.max_series_per_family) {
    ++overflowed_;
    key_.clear();
    for (auto& [k, value] : labels) {
      if (k == bounded_label) value = kOther;
      key_ += value;
      key_ += '\x1f';
    }
    if (auto it = f.index.find(key_); it != f.index.end()) return f.series[it->second].second;
  }
  f.index.emplace(key_, f.series.size());
  f.series.emplace_back(std::move(labels), Value{});
  return f.series.back().second;
}

void EventMetrics::observe_histogram(HistogramFamily& f, Histogram& h, double seconds) {
  if (h.buckets.empty()) h.buckets.assign(f.bounds->size() + 1, 0);
  // Prometheus buckets are upper-inclusive: the first bound >= the value.
  auto it = std::lower_bound(f.bounds->begin(), f.bounds->end(), seconds);
  ++h.buckets[static_cast<std::size_t>(it - f.bounds->begin())];
  h.sum += seconds;
  ++h.count;
}

void EventMetrics::observe(const std::vector<Event>& events) {
  std::lock_guard lock(mu_);
  for (const Event& event : events) {
    ++events_by_type_[event.index()];
    if (const auto* k = std::get_if<KernelEvent>(&event)) {
      Histogram& h = slot(kernel_duration_, {"device", "kernel", "variant"}, {k->device, k->name, k->variant}, "kernel");
      observe_histogram(kernel_duration_, h, static_cast<double>(k->end_ns - k->start_ns) / 1e9);
    } else if (const auto* r = std::get_if<InferenceEvent>(&event)) {
      // The model's label value as the requests family holds it (possibly "__other__").
      slot(requests_, {"model", "status"}, {r->model, "ok"}, "model");
      const std::string model = requests_.series[requests_.index.at(key_)].first[0].second;
      slot(requests_, {"model", "status"}, {model, r->ok ? "ok" : "error"}, "model") += 1;
      observe_histogram(request_duration_, slot(request_duration_, {"model"}, {model}, "model"), r->latency_ms / 1e3);
      if (r->ttft_ms) observe_histogram(ttft_, slot(ttft_, {"model"}, {model}, "model"), *r->ttft_ms / 1e3);
      if (r->input_tokens) slot(input_tokens_, {"model"}, {model}, "model") += static_cast<double>(*r->input_tokens);
      if (r->output_tokens) {
        slot(output_tokens_, {"model"}, {model}, "model") += static_cast<double>(*r->output_tokens);
        // TPOT as the analysis defines it: requests with one token or none have no TPOT.
        if (r->ttft_ms && *r->output_tokens > 1) {
          observe_histogram(tpot_, slot(tpot_, {"model"}, {model}, "model"),
                            (r->latency_ms - *r->ttft_ms) / 1e3 / static_cast<double>(*r->output_tokens - 1));
        }
      }
    } else if (const auto* c = std::get_if<CommandBufferEvent>(&event)) {
      Histogram& h = slot(command_buffer_latency_, {"device", "queue"}, {c->device, c->queue}, "queue");
      const TimestampNs from = c->submit_ns ? c->submit_ns : c->start_ns;
      observe_histogram(command_buffer_latency_, h, static_cast<double>(c->end_ns - from) / 1e9);
    }
  }
}

std::uint64_t EventMetrics::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

std::vector<EventMetricFamily> EventMetrics::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<EventMetricFamily> out;
  auto by_labels = [](const auto& a, const auto& b) { return a.labels < b.labels; };
  auto histogram = [&](const HistogramFamily& f, MetricFamily family) {
    EventMetricFamily e{std::move(family), *f.bounds, {}, {}};
    for (const auto& [labels, h] : f.series) {
      HistogramSnapshot s{labels, {}, h.sum, h.count};
      std::uint64_t running = 0;
      for (std::uint64_t b : h.buckets) s.cumulative.push_back(running += b);
      e.histograms.push_back(std::move(s));
    }
    std::sort(e.histograms.begin(), e.histograms.end(), by_labels);
    out.push_back(std::move(e));
  };
  auto counter = [&](const CounterFamily& f, MetricFamily family) {
    EventMetricFamily e{std::move(family), {}, {}, {}};
    for (const auto& [labels, v] : f.series) {
      if (v > 0) e.counters.push_back({labels, v});  // a model seen only with errors has no "ok" row
    }
    std::sort(e.counters.begin(), e.counters.end(), by_labels);
    out.push_back(std::move(e));
  };
  using T = MetricType;
  histogram(kernel_duration_, {"kernel_duration_seconds", "seconds", T::kHistogram, "Kernel execution time, start to end on the device"});
  EventMetricFamily executions{{"kernel_executions_total", "", T::kCounter, "Kernel executions recorded"}, {}, {}, {}};
  for (const auto& [labels, h] : kernel_duration_.series) executions.counters.push_back({labels, static_cast<double>(h.count)});
  std::sort(executions.counters.begin(), executions.counters.end(), by_labels);
  out.push_back(std::move(executions));
  histogram(command_buffer_latency_, {"command_buffer_latency_seconds", "seconds", T::kHistogram,
                                      "Command buffer (stream submission) latency, submit to complete"});
  histogram(request_duration_, {"inference_request_duration_seconds", "seconds", T::kHistogram,
                                 "Inference request latency, end to end"});
  histogram(ttft_, {"inference_time_to_first_token_seconds", "seconds", T::kHistogram, "Time to first token"});
  histogram(tpot_, {"inference_time_per_output_token_seconds", "seconds", T::kHistogram,
                    "Time per output token after the first: (latency - ttft) / (output_tokens - 1)"});
  counter(requests_, {"inference_requests_total", "", T::kCounter, "Inference requests by outcome"});
  counter(input_tokens_, {"inference_input_tokens_total", "", T::kCounter, "Prompt tokens of inference requests"});
  counter(output_tokens_, {"inference_output_tokens_total", "", T::kCounter, "Generated tokens of inference requests"});
  EventMetricFamily ingested{{"events_ingested_total", "", T::kCounter, "Events committed to the database, by type"}, {}, {}, {}};
  for (std::size_t i = 0; i < events_by_type_.size(); ++i) {
    if (events_by_type_[i]) {
      ingested.counters.push_back({{{"type", std::string(event_type_name(i))}}, static_cast<double>(events_by_type_[i])});
    }
  }
  std::sort(ingested.counters.begin(), ingested.counters.end(), by_labels);
  out.push_back(std::move(ingested));
  return out;
}

}  // namespace perfscope
