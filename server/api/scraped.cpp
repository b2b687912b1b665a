#include "server/api/scraped.hpp"

#include <cmath>

#include "db/series_history.hpp"
#include "engine/analysis/stats.hpp"
#include "server/api/api.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

constexpr double kSummaryQs[] = {50, 90, 99};  // the latency summaries' percentiles

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json optional_json(const std::optional<double>& v) { return v ? finite_or_null(*v) : json(nullptr); }

}  // namespace

void scraped_percentiles_json(const an::ScrapedDistribution& d, std::span<const double> qs, json& values,
                              json& bounds) {
  for (double q : qs) {
    const std::string key = an::percentile_key(q);
    auto e = an::scraped_quantile(d, q / 100);
    values[key] = e ? finite_or_null(e->value) : json(nullptr);
    if (e && !d.summary) bounds[key] = {finite_or_null(e->lower), finite_or_null(e->upper)};
  }
}

json scraped_sla_json(const an::ScrapedDistribution& d, double target_ms, const BucketEstimate& share) {
  return json{{"target_ms", target_ms}, {"violations", std::llround(d.count * (1 - share.value))},
              {"compliance_rate", share.value}, {"compliance_bounds", {share.lower, share.upper}}};
}

std::optional<json> scraped_sla_json(const an::ScrapedDistribution& d, double target_ms) {
  auto share = an::scraped_share_at_most(d, target_ms);
  if (!share) return std::nullopt;
  return scraped_sla_json(d, target_ms, *share);
}

json scraped_distribution_json(const an::ScrapedDistribution& d) {
  if (d.count <= 0) return nullptr;
  json out = {{"count", std::llround(d.count)}, {"mean", optional_json(d.mean_ms())}, {"max", nullptr},
              {"method", d.summary ? "prometheus_summary" : "prometheus_histogram"}, {"metric", d.metric}};
  json bounds = json::object();
  scraped_percentiles_json(d, kSummaryQs, out, bounds);
  if (!d.summary) out["bounds"] = bounds;
  return out;
}

json scraped_latency_json(const an::ScrapedServing& m, const std::string& field) {
  auto it = m.fields.find(field);
  return it == m.fields.end() ? json(nullptr) : scraped_distribution_json(it->second);
}

std::optional<json> scraped_latency_row(const an::ScrapedServing& m, std::optional<double> sla_ms) {
  auto it = m.fields.find("latency_ms");
  if (it == m.fields.end() || it->second.count <= 0) return std::nullopt;
  const an::ScrapedDistribution& d = it->second;
  static constexpr double kReportQs[] = {50, 90, 95, 99, 99.9};
  json pct = json::object(), bounds = json::object();
  scraped_percentiles_json(d, kReportQs, pct, bounds);
  json warnings = {d.summary ? "from " + d.metric + ": the quantiles " + m.server + " computed itself at the newest scrape"
                             : "from " + d.metric + "'s buckets over the window: each percentile lies within its bucket (bounds_ms)"};
  json row = {{"model", m.model}, {"count", std::llround(d.count)}, {"mean_ms", optional_json(d.mean_ms())},
              {"max_ms", nullptr}, {"percentiles_ms", pct},
              {"method", d.summary ? "prometheus_summary" : "prometheus_histogram"}, {"metric", d.metric},
              {"source", "scrape"}, {"warnings", warnings}};
  if (!d.summary) row["bounds_ms"] = bounds;
  if (sla_ms) {
    if (auto sla = scraped_sla_json(d, *sla_ms)) row["sla"] = std::move(*sla);
  }
  return row;
}

json scraped_inference_row(const an::ScrapedServing& m, const an::ServingSlo& slo) {
  auto count = [](const std::optional<double>& v) { return v ? std::llround(std::max(0.0, *v)) : 0LL; };
  auto or_zero = [](const std::optional<double>& v) { return v ? *v : 0.0; };
  json row = {{"model", m.model}, {"version", m.version}, {"source", "scrape"}, {"server", m.server},
              {"targets", m.targets}, {"requests", count(m.requests)},
              {"errors", m.errors ? json(count(m.errors)) : json(nullptr)},
              {"error_rate", optional_json(m.error_rate)}, {"window_s", m.window_s},
              {"requests_per_second", or_zero(m.requests_per_second)},
              // One inference per request unless the server counts batched inferences (Triton).
              {"inferences_per_second", or_zero(m.inferences_per_second ? m.inferences_per_second : m.requests_per_second)},
              {"output_tokens_per_second", or_zero(m.output_tokens_per_second)},
              {"input_tokens", count(m.input_tokens)}, {"output_tokens", count(m.output_tokens)},
              {"mean_latency_ms", optional_json(m.mean_latency_ms)}, {"queue_share", optional_json(m.queue_share)}, {"average_batch_size", optional_json(m.average_batch_size)},
              {"running", optional_json(m.running)}, {"waiting", optional_json(m.waiting)},
              {"kv_cache_usage", optional_json(m.kv_cache_usage)}, {"counter_resets", m.resets}, {"notes", m.notes}};
  for (const char* field : {"latency_ms", "ttft_ms", "tpot_ms", "queue_ms", "compute_ms"}) {
    row[field] = scraped_latency_json(m, field);
  }
  // The pooled mean gap between tokens, as the reported rows' itl_ms.
  auto itl = m.fields.find("itl_ms");
  row["itl_ms"] = itl != m.fields.end() ? optional_json(itl->second.mean_ms()) : json(nullptr);
  json compliance = json::object();
  for (auto [field, target] : {std::pair{"latency_ms", slo.latency_ms}, std::pair{"ttft_ms", slo.ttft_ms},
                               std::pair{"tpot_ms", slo.tpot_ms}}) {
    auto it = m.fields.find(field);
    if (!target || it == m.fields.end()) continue;
    auto share = an::scraped_share_at_most(it->second, *target);
    if (!share) continue;
    compliance[field] = {{"target_ms", *target}, {"compliance_rate", share->value},
                         {"bounds", {share->lower, share->upper}}};
  }
  if (!compliance.empty()) row["slo_compliance"] = compliance;
  // Unknown is not zero: a figure whose inputs the server does not export is null, and says why.
  json unknown = json::object();
  if (!m.errors) {
    const std::string why = m.server + " exports no error or failure counter that perfscope reads";
    unknown["errors"] = why;
    unknown["error_rate"] = why;
  } else if (!m.error_rate) {
    unknown["error_rate"] = "no requests in the window";
  }
  if (!unknown.empty()) row["unknown"] = std::move(unknown);
  return row;
}

}  // namespace perfscope::server
