// The serving figures of scraped inference servers (vLLM, SGLang, TGI, Triton) as the REST
// views answer them: JSON rows shaped like those of reported requests, each saying where it
// came from and how it was computed, with the percentiles and SLA shares a histogram's buckets
// give (service/scraped_figures.hpp estimates them). Internal to server/api/.
#pragma once

#include <nlohmann/json.hpp>

#include "server/service/report.hpp"
#include "server/service/scraped_figures.hpp"

namespace perfscope::server {

// Percentiles of scraped figures into `values` (keyed as percentile_key writes them, null
// where there is none) and, for a histogram, each one's bucket into `bounds` as [lower, upper]
// (null: unbounded).
void scraped_percentiles_json(const service::ScrapedFigures& f, nlohmann::json& values, nlohmann::json& bounds);
// The SLA share of a scraped histogram ({target_ms, violations, compliance_rate,
// compliance_bounds}).
nlohmann::json scraped_sla_json(const service::ScrapedShare& s);
// Figures as a latency summary ({count, mean, p50, p90, p99, max: null, method, metric,
// bounds}); null for none.
nlohmann::json scraped_distribution_json(const std::optional<service::ScrapedFigures>& f);

// A row of the inference (serving) section: the reported rows' fields, and `source`, `server`,
// `targets`, `queue_share`, gauges, notes, and SLO compliance per field with its bounds.
nlohmann::json scraped_inference_row(const service::ScrapedModel& m);

// A row of the report's latency section ({model, count, mean_ms, max_ms: null, percentiles_ms,
// bounds_ms, method, metric, warnings, sla}).
nlohmann::json scraped_latency_row(const service::ScrapedLatencyFigures& l);

}  // namespace perfscope::server
