#include "server/service/models.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "server/service/scoped_reads.hpp"

namespace perfscope::service {

Result<ModelsServing> models_serving(const Sources& sources, const server::TimeWindow& w, const db::EventScope& scope,
                                     const analysis::ServingSlo& slo, bool with_latency, TimestampNs now,
                                     const ModelFilter& only) {
  auto rows = sources.events->inference_summaries({w.from_ns, w.to_ns}, scope);
  if (!rows.ok()) return rows.status();
  std::map<std::pair<std::string, std::string>, analysis::ServingMetrics> latencies;
  if (with_latency) {
    auto requests = sources.events->inference_events({w.from_ns, std::min(w.to_ns, now)}, scope);
    if (!requests.ok()) return requests.status();
    std::erase_if(*requests, [&](const InferenceEvent& e) { return !only.keeps(e.model, e.version); });
    for (auto& m : analysis::serving_metrics(*requests, 0, slo)) latencies[{m.model, m.version}] = std::move(m);
  }
  ModelsServing out;
  for (const db::InferenceSummary& m : *rows) {
    if (!only.keeps(m.model, m.version)) continue;
    ModelServing row;
    row.summary = m;
    row.error_rate = m.requests ? static_cast<double>(m.errors) / static_cast<double>(m.requests) : 0.0;
    const TimestampNs end = std::min(w.to_ns, now);
    const TimestampNs start = m.requests >= 2 ? std::max(w.from_ns, m.first_ns) : w.from_ns;
    row.span_s = w.all ? static_cast<double>(m.last_ns - m.first_ns) / 1e9 : static_cast<double>(end - start) / 1e9;
    auto rate = [&](double n) { return row.span_s > 0 ? std::optional(n / row.span_s) : std::nullopt; };
    row.requests_per_second = rate(static_cast<double>(m.requests));
    row.inferences_per_second = rate(static_cast<double>(m.inferences));
    row.output_tokens_per_second = rate(static_cast<double>(m.output_tokens));
    if (auto it = latencies.find({m.model, m.version}); it != latencies.end()) row.latency = it->second;
    out.reported.push_back(std::move(row));
  }
  if (!scope.by_tags()) {
    auto scraped = load_scraped_serving(*sources.history, {w.from_ns, std::min(w.to_ns, now)});
    if (!scraped.ok()) return scraped.status();
    std::erase_if(*scraped, [&](const analysis::ScrapedServing& m) { return !only.keeps(m.model, m.version); });
    out.scraped = scraped_models(std::move(*scraped), slo);
  }
  return out;
}

Result<analysis::OperatorSummary> operators(const Sources& sources, const db::EventScope& scope, const db::TimeRange& range,
                                            const std::string& model, const std::string& provider,
                                            const std::vector<double>& quantiles, analysis::PercentileConvention convention) {
  auto rows = sources.events->operator_executions({"", model, provider, scope.wanted_tags()}, range);
  if (!rows.ok()) return rows.status();
  return analysis::summarize_operators(*rows, quantiles, convention);
}

}  // namespace perfscope::service
