#include "server/api/scraped.hpp"

#include <cmath>

#include "engine/analysis/stats.hpp"
#include "server/api/api_helpers.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
const char* method_of(const service::ScrapedFigures& f) { return f.summary ? "prometheus_summary" : "prometheus_histogram"; }

}  // namespace

void scraped_percentiles_json(const service::ScrapedFigures& f, json& values, json& bounds) {
  for (const service::ScrapedQuantile& p : f.percentiles) {
    const std::string key = an::percentile_key(p.q);
    values[key] = p.estimate ? finite_or_null(p.estimate->value) : json(nullptr);
    if (p.estimate && !f.summary) bounds[key] = {finite_or_null(p.estimate->lower), finite_or_null(p.estimate->upper)};
  }
}

json scraped_sla_json(const service::ScrapedShare& s) {
  return json{{"target_ms", s.target_ms}, {"violations", s.violations}, {"compliance_rate", s.share.value},
              {"compliance_bounds", {s.share.lower, s.share.upper}}};
}

json scraped_distribution_json(const std::optional<service::ScrapedFigures>& f) {
  if (!f) return nullptr;
  json out = {{"count", std::llround(f->count)}, {"mean", optional_json(f->mean_ms)}, {"max", nullptr},
              {"method", method_of(*f)}, {"metric", f->metric}};
  json bounds = json::object();
  scraped_percentiles_json(*f, out, bounds);
  if (!f->summary) out["bounds"] = bounds;
  return out;
}

json scraped_latency_row(const service::ScrapedLatencyFigures& l) {
  const service::ScrapedFigures& f = l.figures;
  json pct = json::object(), bounds = json::object();
  scraped_percentiles_json(f, pct, bounds);
  json warnings = {f.summary ? "from " + f.metric + ": the quantiles " + l.server + " computed itself at the newest scrape"
                             : "from " + f.metric + "'s buckets over the window: each percentile lies within its bucket (bounds_ms)"};
  json row = {{"model", l.model}, {"count", std::llround(f.count)}, {"mean_ms", optional_json(f.mean_ms)},
              {"max_ms", nullptr}, {"percentiles_ms", pct}, {"method", method_of(f)}, {"metric", f.metric},
              {"source", "scrape"}, {"warnings", warnings}};
  if (!f.summary) row["bounds_ms"] = bounds;
  if (f.sla) row["sla"] = scraped_sla_json(*f.sla);
  return row;
}

json scraped_inference_row(const service::ScrapedModel& model) {
  const an::ScrapedServing& m = model.serving;
  auto count = [](const std::optional<double>& v) { return v ? std::llround(std::max(0.0, *v)) : 0LL; };
  auto or_zero = [](const std::optional<double>& v) { return v ? *v : 0.0; };
  json row = {{"model", m.model}, {"version", m.version}, {"source", "scrape"}, {"server", m.server},
              {"targets", m.targets}, {"requests", count(m.requests)},
              {"errors", m.errors ? json(count(m.errors)) : json(nullptr)},
              {"error_rate", optional_json(m.error_rate)}, {"window_s", m.window_s},
              {"requests_per_second", or_zero(m.requests_per_second)},
              {"inferences_per_second", or_zero(model.inferences_per_second)},
              {"output_tokens_per_second", or_zero(m.output_tokens_per_second)},
              {"input_tokens", count(m.input_tokens)}, {"output_tokens", count(m.output_tokens)},
              {"mean_latency_ms", optional_json(m.mean_latency_ms)}, {"queue_share", optional_json(m.queue_share)}, {"average_batch_size", optional_json(m.average_batch_size)},
              {"running", optional_json(m.running)}, {"waiting", optional_json(m.waiting)},
              {"kv_cache_usage", optional_json(m.kv_cache_usage)}, {"counter_resets", m.resets}, {"notes", m.notes}};
  auto figures = [&](const char* field) {
    auto it = model.fields.find(field);
    return it == model.fields.end() ? std::optional<service::ScrapedFigures>() : std::optional(it->second);
  };
  for (const char* field : {"latency_ms", "ttft_ms", "tpot_ms", "queue_ms", "compute_ms"}) {
    row[field] = scraped_distribution_json(figures(field));
  }
  // The pooled mean gap between tokens, as the reported rows' itl_ms.
  auto itl = figures("itl_ms");
  row["itl_ms"] = itl ? optional_json(itl->mean_ms) : json(nullptr);
  json compliance = json::object();
  for (const auto& [field, s] : model.compliance) {
    compliance[field] = {{"target_ms", s.target_ms}, {"compliance_rate", s.share.value},
                         {"bounds", {s.share.lower, s.share.upper}}};
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
