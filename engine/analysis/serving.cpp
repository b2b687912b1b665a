#include "engine/analysis/serving.hpp"

#include <map>

#include "engine/analysis/stats.hpp"

namespace perfscope::analysis {

LatencySummary summarize_latencies(std::vector<double> v) {
  LatencySummary s;
  if (v.empty()) return s;
  Moments m = moments(v);
  const double qs[] = {50, 90, 99};
  auto p = percentiles(v, qs, PercentileConvention::kNearestRank);
  s.count = m.n;
  s.mean = m.mean;
  s.p50 = p[0];
  s.p90 = p[1];
  s.p99 = p[2];
  s.max = m.max;
  return s;
}

std::vector<ServingMetrics> serving_metrics(const std::vector<InferenceEvent>& requests, double window_s,
                                            const ServingSlo& slo) {
  std::map<std::pair<std::string, std::string>, std::vector<const InferenceEvent*>> by_model;
  for (const auto& r : requests) by_model[{r.model, r.version}].push_back(&r);
  std::vector<ServingMetrics> out;
  for (const auto& [key, rs] : by_model) {
    ServingMetrics m;
    m.model = key.first;
    m.version = key.second;
    m.window_s = window_s;
    std::vector<double> latency, ttft, tpot, queue, compute;
    double itl_time = 0, itl_gaps = 0, inferences = 0;
    std::size_t good = 0;
    for (const InferenceEvent* r : rs) {
      ++m.requests;
      if (!r->ok) ++m.errors;
      inferences += r->batch_size;
      latency.push_back(r->latency_ms);
      if (r->ttft_ms) ttft.push_back(*r->ttft_ms);
      if (r->queue_ms) queue.push_back(*r->queue_ms);
      if (r->compute_ms) compute.push_back(*r->compute_ms);
      if (r->input_tokens) m.input_tokens += *r->input_tokens;
      if (r->output_tokens) m.output_tokens += *r->output_tokens;
      const std::optional<double> request_tpot = r->tpot_ms();
      if (request_tpot) {
        tpot.push_back(*request_tpot);
        itl_time += r->latency_ms - *r->ttft_ms;
        itl_gaps += static_cast<double>(*r->output_tokens - 1);
      }
      // A request meets the SLOs when it succeeded and every SLO it can be judged by holds;
      // a TTFT or TPOT objective cannot be met by a request that does not report it.
      bool meets = r->ok;
      if (slo.latency_ms) meets = meets && r->latency_ms <= *slo.latency_ms;
      if (slo.ttft_ms) meets = meets && r->ttft_ms && *r->ttft_ms <= *slo.ttft_ms;
      if (slo.tpot_ms) meets = meets && (!r->output_tokens || *r->output_tokens <= 1 || (request_tpot && *request_tpot <= *slo.tpot_ms));
      if (meets) ++good;
    }
    m.error_rate = m.requests ? static_cast<double>(m.errors) / static_cast<double>(m.requests) : 0;
    if (window_s > 0) {
      m.requests_per_second = static_cast<double>(m.requests) / window_s;
      m.inferences_per_second = inferences / window_s;
      m.output_tokens_per_second = static_cast<double>(m.output_tokens) / window_s;
    }
    m.latency_ms = summarize_latencies(std::move(latency));
    m.ttft_ms = summarize_latencies(std::move(ttft));
    m.tpot_ms = summarize_latencies(std::move(tpot));
    m.queue_ms = summarize_latencies(std::move(queue));
    m.compute_ms = summarize_latencies(std::move(compute));
    if (itl_gaps > 0) m.itl_ms = itl_time / itl_gaps;
    if (slo.any()) {
      m.goodput_ratio = m.requests ? static_cast<double>(good) / static_cast<double>(m.requests) : 0;
      if (window_s > 0) m.goodput_per_second = static_cast<double>(good) / window_s;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace perfscope::analysis
