// Inference serving metrics per model over a window, as the common serving benchmarks define
// them (reference/stats.md):
// - throughput: completed requests / window; inferences (batch-aware) / window; output
//   tokens / window; error rate = errors / requests.
// - TTFT as reported; TPOT per request = (latency − TTFT) / (output_tokens − 1), requests
//   with ≤ 1 output token left out; inter-token latency (ITL) pooled over every token gap of
//   every request: Σ(latency − TTFT) / Σ(output_tokens − 1) (token-weighted, unlike the mean
//   of TPOT, which weighs requests equally).
// - goodput: successful requests meeting every configured SLO, per second.
//
// Pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/analysis/timeline.hpp"
#include "engine/events/events.hpp"

namespace perfscope::analysis {

struct ServingSlo {
  std::optional<double> latency_ms, ttft_ms, tpot_ms;
  bool any() const { return latency_ms || ttft_ms || tpot_ms; }
};

struct LatencySummary {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;  // ms; nearest rank
};

struct ServingMetrics {
  std::string model, version;
  std::size_t requests = 0, errors = 0;
  double error_rate = 0;
  double window_s = 0;
  double requests_per_second = 0, inferences_per_second = 0, output_tokens_per_second = 0;
  std::uint64_t input_tokens = 0, output_tokens = 0;
  LatencySummary latency_ms, ttft_ms, tpot_ms, queue_ms, compute_ms;
  std::optional<double> itl_ms;  // none without LLM token counts
  std::optional<double> goodput_per_second, goodput_ratio;  // with SLOs only
};

// One entry per (model, version), in name order. `window_s` is the span rates are over.
std::vector<ServingMetrics> serving_metrics(const std::vector<InferenceEvent>& requests, double window_s,
                                            const ServingSlo& slo);

LatencySummary summarize_latencies(std::vector<double> values);

}  // namespace perfscope::analysis
