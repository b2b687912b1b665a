#include "server/service/scraped_figures.hpp"

#include <cmath>

namespace perfscope::service {

namespace an = perfscope::analysis;

std::optional<ScrapedShare> scraped_share(const an::ScrapedDistribution& d, double target_ms) {
  auto share = an::scraped_share_at_most(d, target_ms);
  if (!share) return std::nullopt;
  return ScrapedShare{target_ms, *share, std::llround(d.count * (1 - share->value))};
}

ScrapedFigures scraped_figures(const an::ScrapedDistribution& d, std::span<const double> quantiles,
                               std::optional<double> sla_ms) {
  ScrapedFigures out{d.metric, d.summary, d.count, d.mean_ms(), {}, std::nullopt};
  for (double q : quantiles) out.percentiles.push_back({q, an::scraped_quantile(d, q / 100)});
  if (sla_ms) out.sla = scraped_share(d, *sla_ms);
  return out;
}

std::vector<ScrapedModel> scraped_models(std::vector<an::ScrapedServing> serving, const an::ServingSlo& slo) {
  std::vector<ScrapedModel> out;
  for (an::ScrapedServing& m : serving) {
    ScrapedModel model;
    for (const auto& [field, d] : m.fields) {
      if (d.count > 0) model.fields.emplace(field, scraped_figures(d, kScrapedSummaryQuantiles));
    }
    for (auto [field, target] : {std::pair{"latency_ms", slo.latency_ms}, std::pair{"ttft_ms", slo.ttft_ms},
                                 std::pair{"tpot_ms", slo.tpot_ms}}) {
      auto it = m.fields.find(field);
      if (!target || it == m.fields.end()) continue;
      if (auto share = scraped_share(it->second, *target)) model.compliance.emplace(field, *share);
    }
    model.inferences_per_second = m.inferences_per_second ? m.inferences_per_second : m.requests_per_second;
    model.serving = std::move(m);
    out.push_back(std::move(model));
  }
  return out;
}

}  // namespace perfscope::service
