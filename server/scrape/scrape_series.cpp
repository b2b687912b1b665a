#include "server/scrape/scrape_series.hpp"

#include <cmath>

namespace perfscope::server {

ScrapeSeries::ScrapeSeries(ScrapeTargetLabels target, std::size_t sample_limit, std::size_t series_limit)
    : own_(std::move(target.extra)), sample_limit_(sample_limit), series_limit_(series_limit) {
  own_.emplace_back("job", std::move(target.job));
  own_.emplace_back("instance", std::move(target.instance));
  sort_labels(own_);
}

Labels ScrapeSeries::labels_for(const Labels& exposed) const {
  Labels out;
  out.reserve(exposed.size() + own_.size());
  for (const auto& [name, value] : exposed) {
    bool clash = false;
    for (const auto& o : own_) clash = clash || o.first == name;
    out.emplace_back(clash ? "exported_" + name : name, value);
  }
  out.insert(out.end(), own_.begin(), own_.end());
  sort_labels(out);
  return out;
}

void ScrapeSeries::declare(const std::string& name, MetricType type, const std::string& help, const std::string& unit) {
  if (family_index_.contains(name)) return;
  family_index_.emplace(name, families_.size());
  families_.push_back(MetricFamily{name, unit, type, help});
}

Result<std::vector<Reading>> ScrapeSeries::convert(const Exposition& exposition, TimestampNs ts_ns) {
  if (exposition.sample_count > sample_limit_) {
    return Status::invalid_argument("the scrape has " + std::to_string(exposition.sample_count) +
                                        " samples, more than the target's limit of " + std::to_string(sample_limit_),
                                    "sample_limit");
  }
  std::vector<Reading> out;
  out.reserve(exposition.sample_count * 2);
  dropped_last_ = 0;
  for (const ScrapedFamily& family : exposition.families) {
    const bool counter = family.type == ExpositionType::kCounter;
    const bool cumulative = counter || family.type == ExpositionType::kHistogram || family.type == ExpositionType::kSummary;
    for (const ScrapedSample& s : family.samples) {
      // A stored series holds finite numbers: NaN (a summary without observations) and ±Inf
      // gauges are left out of this scrape.
      if (!std::isfinite(s.value)) continue;
      SeriesKey key(s.name, labels_for(s.labels));
      std::string canonical = key.canonical();
      if (!known_.contains(canonical)) {
        if (known_.size() >= series_limit_) {
          ++dropped_last_;
          continue;
        }
        known_.insert(canonical);
      }
      // Summary quantiles are gauges; buckets, sums and counts of histograms and summaries and
      // counters' samples are cumulative.
      const bool is_quantile = family.type == ExpositionType::kSummary && s.name == family.name;
      declare(s.name, cumulative && !is_quantile ? MetricType::kCounter : MetricType::kGauge, family.help, family.unit);
      if (counter && !s.name.ends_with("_created")) {
        std::string base = s.name.ends_with("_total") ? s.name.substr(0, s.name.size() - 6) : s.name;
        auto [prev, fresh] = counters_.try_emplace(canonical, Previous{ts_ns, s.value});
        if (!fresh && ts_ns > prev->second.ts_ns) {
          const double seconds = static_cast<double>(ts_ns - prev->second.ts_ns) / 1e9;
          const double increase = s.value >= prev->second.value ? s.value - prev->second.value : s.value;
          const std::string rate_name = base + "_per_second";
          declare(rate_name, MetricType::kGauge, family.help + " (per second, between scrapes)", family.unit);
          out.push_back(Reading{SeriesKey(rate_name, key.labels), increase / seconds});
          prev->second = Previous{ts_ns, s.value};
        }
      }
      out.push_back(Reading{std::move(key), s.value});
    }
  }
  dropped_total_ += dropped_last_;
  return out;
}

}  // namespace perfscope::server
