#include "engine/event_metrics.hpp"

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

Labels labels_of(std::initializer_list<std::pair<const char*, const std::string*>> pairs) {
  Labels l;
  for (const auto& [k, v] : pairs) l.emplace_back(k, *v);
  sort_labels(l);
  return l;
}
}  // namespace

EventMetrics::EventMetrics(EventMetricsOptions options) : options_(options) {
  kernel_duration_.bounds = &kernel_duration_buckets();
  command_buffer_latency_.bounds = &kernel_duration_buckets();
  request_duration_.bounds = &request_latency_buckets();
  ttft_.bounds = &request_latency_buckets();
  tpot_.bounds = &token_latency_buckets();
}

template <typename Map>
Labels EventMetrics::bounded(const Map& family, Labels labels, const char* bounded_label) {
  if (family.size() < options_.max_series_per_family || family.count(labels)) return labels;
  ++overflowed_;
  for (auto& [k, v] : labels) {
    if (k == bounded_label) v = kOther;
  }
  return labels;
}

void EventMetrics::add(HistogramFamily& f, Labels labels, double seconds) {
  Histogram& h = f.series[std::move(labels)];
  if (h.buckets.empty()) h.buckets.assign(f.bounds->size() + 1, 0);
  // Prometheus buckets are upper-inclusive: the first bound >= the value.
  auto it = std::lower_bound(f.bounds->begin(), f.bounds->end(), seconds);
  ++h.buckets[static_cast<std::size_t>(it - f.bounds->begin())];
  h.sum += seconds;
  ++h.count;
}

void EventMetrics::add(std::map<Labels, double>& f, Labels labels, double amount) { f[std::move(labels)] += amount; }

void EventMetrics::observe(const std::vector<Event>& events) {
  std::lock_guard lock(mu_);
  static const std::string kOk = "ok", kError = "error";
  for (const Event& event : events) {
    const std::string type(event_type(event));
    add(events_, labels_of({{"type", &type}}), 1);
    if (const auto* k = std::get_if<KernelEvent>(&event)) {
      Labels l = bounded(kernel_duration_.series, labels_of({{"device", &k->device}, {"kernel", &k->name}, {"variant", &k->variant}}),
                         "kernel");
      add(kernel_duration_, std::move(l), static_cast<double>(k->end_ns - k->start_ns) / 1e9);
    } else if (const auto* r = std::get_if<InferenceEvent>(&event)) {
      Labels model = bounded(requests_, labels_of({{"model", &r->model}, {"status", &kOk}}), "model");
      const std::string model_name = model[0].second;  // "model" sorts before "status"
      model[1].second = r->ok ? kOk : kError;
      add(requests_, std::move(model), 1);
      Labels by_model = labels_of({{"model", &model_name}});
      add(request_duration_, by_model, r->latency_ms / 1e3);
      if (r->ttft_ms) add(ttft_, by_model, *r->ttft_ms / 1e3);
      if (r->input_tokens) add(input_tokens_, by_model, static_cast<double>(*r->input_tokens));
      if (r->output_tokens) {
        add(output_tokens_, by_model, static_cast<double>(*r->output_tokens));
        // TPOT as the analysis defines it: requests with one token or none have no TPOT.
        if (r->ttft_ms && *r->output_tokens > 1) {
          add(tpot_, by_model, (r->latency_ms - *r->ttft_ms) / 1e3 / static_cast<double>(*r->output_tokens - 1));
        }
      }
    } else if (const auto* c = std::get_if<CommandBufferEvent>(&event)) {
      Labels l = bounded(command_buffer_latency_.series, labels_of({{"device", &c->device}, {"queue", &c->queue}}), "queue");
      const TimestampNs from = c->submit_ns ? c->submit_ns : c->start_ns;
      add(command_buffer_latency_, std::move(l), static_cast<double>(c->end_ns - from) / 1e9);
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
  auto histogram = [&](const HistogramFamily& f, MetricFamily family) {
    EventMetricFamily e{std::move(family), *f.bounds, {}, {}};
    for (const auto& [labels, h] : f.series) {
      HistogramSnapshot s{labels, {}, h.sum, h.count};
      std::uint64_t running = 0;
      for (std::uint64_t b : h.buckets) s.cumulative.push_back(running += b);
      e.histograms.push_back(std::move(s));
    }
    out.push_back(std::move(e));
  };
  auto counter = [&](const std::map<Labels, double>& f, MetricFamily family) {
    EventMetricFamily e{std::move(family), {}, {}, {}};
    for (const auto& [labels, v] : f) e.counters.push_back({labels, v});
    out.push_back(std::move(e));
  };
  using T = MetricType;
  histogram(kernel_duration_, {"kernel_duration_seconds", "seconds", T::kHistogram, "Kernel execution time, start to end on the device"});
  EventMetricFamily executions{{"kernel_executions_total", "", T::kCounter, "Kernel executions recorded"}, {}, {}, {}};
  for (const auto& [labels, h] : kernel_duration_.series) executions.counters.push_back({labels, static_cast<double>(h.count)});
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
  counter(events_, {"events_ingested_total", "", T::kCounter, "Events committed to the database, by type"});
  return out;
}

}  // namespace perfscope
