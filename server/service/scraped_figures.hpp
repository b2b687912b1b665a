// What the views show of a scraped server's distributions: percentiles estimated from a
// histogram's buckets (each within its bucket's bounds) or a summary's own quantiles, the share
// within an SLA target, and for each scraped model the latency fields' summaries and its
// compliance with the serving SLO. engine/analysis/scraped_serving.hpp estimates; this picks
// what each view estimates, so the API only renders.
//
// Value types and pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/analysis/scraped_serving.hpp"
#include "engine/analysis/serving.hpp"

namespace perfscope::service {

// A latency field's summary: its median, p90 and p99.
inline constexpr double kScrapedSummaryQuantiles[] = {50, 90, 99};

struct ScrapedQuantile {
  double q = 0;                                    // 0..100
  std::optional<BucketEstimate> estimate;  // none where the distribution gives none
};

// The share of observations within a target, and the violations it implies.
struct ScrapedShare {
  double target_ms = 0;
  BucketEstimate share;
  long long violations = 0;
};

struct ScrapedFigures {
  std::string metric;    // the exposed family
  bool summary = false;  // a summary: the server's own quantiles, no bucket bounds
  double count = 0;
  std::optional<double> mean_ms;
  std::vector<ScrapedQuantile> percentiles;  // in the order asked
  std::optional<ScrapedShare> sla;           // asked for, and a histogram
};

ScrapedFigures scraped_figures(const analysis::ScrapedDistribution& d, std::span<const double> quantiles,
                               std::optional<double> sla_ms = std::nullopt);
std::optional<ScrapedShare> scraped_share(const analysis::ScrapedDistribution& d, double target_ms);

// A scraped model as the serving views show it.
struct ScrapedModel {
  analysis::ScrapedServing serving;
  std::map<std::string, ScrapedFigures> fields;  // each field with observations, at kScrapedSummaryQuantiles
  std::map<std::string, ScrapedShare> compliance;  // latency_ms, ttft_ms, tpot_ms against the SLO's targets
  // One inference per request unless the server counts batched inferences (Triton).
  std::optional<double> inferences_per_second;
};

std::vector<ScrapedModel> scraped_models(std::vector<analysis::ScrapedServing> serving, const analysis::ServingSlo& slo);

}  // namespace perfscope::service
