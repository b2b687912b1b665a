// The serving figures of scraped inference servers (vLLM, SGLang, TGI, Triton) as the REST
// views answer them: JSON rows shaped like those of reported requests, each saying where it
// came from and how it was computed, with the percentiles and SLA shares a histogram's buckets
// give (engine/analysis/scraped_serving.hpp estimates them; service/scoped_reads.hpp loads the
// window's figures). Internal to server/api/.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/time_range.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/base/status.hpp"

namespace perfscope::server {

// Percentiles (0..100) of a scraped distribution into `values` (keyed as percentile_key writes
// them, null where it has none) and, for a histogram, each one's bucket into `bounds` as
// [lower, upper] (null: unbounded).
void scraped_percentiles_json(const analysis::ScrapedDistribution& d, std::span<const double> qs, nlohmann::json& values,
                              nlohmann::json& bounds);
// The SLA share of a scraped histogram ({target_ms, violations, compliance_rate,
// compliance_bounds}); none for a summary, which cannot say it.
std::optional<nlohmann::json> scraped_sla_json(const analysis::ScrapedDistribution& d, double target_ms);
// The same from the share already estimated.
nlohmann::json scraped_sla_json(const analysis::ScrapedDistribution& d, double target_ms,
                                const BucketEstimate& share);
// A distribution as a latency summary ({count, mean, p50, p90, p99, max: null, method,
// metric, bounds}); null when it holds no observation.
nlohmann::json scraped_distribution_json(const analysis::ScrapedDistribution& d);

// One field of one scraped model as a latency summary ({count, mean, p50, p90, p99, max: null,
// method, metric, bounds}); null when absent or empty.
nlohmann::json scraped_latency_json(const analysis::ScrapedServing& m, const std::string& field);

// A row of the inference (serving) section: the reported rows' fields, and `source`, `server`,
// `targets`, `queue_share`, gauges, notes, and SLO compliance per field with its bounds.
nlohmann::json scraped_inference_row(const analysis::ScrapedServing& m, const analysis::ServingSlo& slo);

// A row of the report's latency section ({model, count, mean_ms, max_ms: null, percentiles_ms,
// bounds_ms, method, metric, warnings, sla}); none without a latency distribution with data.
std::optional<nlohmann::json> scraped_latency_row(const analysis::ScrapedServing& m, std::optional<double> sla_ms);


}  // namespace perfscope::server
