#include "server/service/report.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/series/metric_names.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {

// Average over GPUs of each GPU's average, and the highest peak of any: the figures the
// summary shows for a family with one series per GPU.
std::optional<GaugeFigures> gauge_figures(const std::vector<SeriesSummary>& gauges, std::string_view name,
                                          const Labels& must) {
  GaugeFigures out;
  double sum = 0, peak = -INFINITY;
  for (const SeriesSummary& g : gauges) {
    if (g.key.name != name) continue;
    bool match = true;
    for (const auto& wanted : must) {
      auto it = std::find_if(g.key.labels.begin(), g.key.labels.end(),
                             [&](const auto& l) { return l.first == wanted.first; });
      match = match && it != g.key.labels.end() && it->second == wanted.second;
    }
    if (!match || !std::isfinite(g.avg) || !std::isfinite(g.peak)) continue;
    sum += g.avg;
    peak = std::max(peak, g.peak);
    out.series.push_back(&g);
  }
  if (out.series.empty()) return std::nullopt;
  out.avg = sum / static_cast<double>(out.series.size());
  out.peak = peak;
  return out;
}

Result<std::vector<LatencyFigures>> latency_figures(const Sources& sources, const AnalysisDocument& doc,
                                                    const db::EventScope& scope, const db::TimeRange& range) {
  std::set<std::string> models;
  for (const auto& m : doc.serving) models.insert(m.model);
  for (const auto& m : doc.scraped) models.insert(m.serving.model);
  std::vector<LatencyFigures> out;
  for (const std::string& model : models) {
    const db::InferenceSelector selector{model, "", scope.wanted_tags()};
    PERFSCOPE_ASSIGN_OR_RETURN(auto values, sources.events->inference_values_ms(selector, db::InferenceField::kLatency, range));
    if (values.empty()) continue;
    LatencyFigures row{model, an::moments(values), std::nullopt, {}, {}};
    if (doc.slo.latency_ms) row.sla = an::sla_compliance(values, *doc.slo.latency_ms);
    row.percentiles = an::percentiles(values, kReportQuantiles, an::PercentileConvention::kNearestRank);
    for (double q : kReportQuantiles) {
      const std::size_t need = an::min_samples_for_percentile(q);
      if (values.size() < need) {
        row.warnings.push_back(an::percentile_key(q) + " rests on " + std::to_string(values.size()) + " samples; " +
                               std::to_string(need) + " are needed for it to be trusted");
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

// The key gauges, downsampled to at most kChartPoints points each.
Result<std::vector<ChartSeries>> chart_series(const Sources& sources, const db::TimeRange& range) {
  std::vector<ChartSeries> out;
  for (const char* family : {metric_names::kGpuUtilization, metric_names::kGpuDramBandwidth, metric_names::kGpuMemoryUsed,
                             metric_names::kGpuPower, metric_names::kGpuTemperature, metric_names::kHostCpu,
                             metric_names::kHostMemoryUsed}) {
    db::HistoryQuery q;
    q.name = family;
    if (std::string_view(family) == metric_names::kHostCpu) q.matchers = {{"cpu", "total"}};
    q.from_ns = range.from_ns;
    q.to_ns = range.to_ns;
    q.max_points = kChartPoints;
    PERFSCOPE_ASSIGN_OR_RETURN(auto data, sources.history->query(q));
    for (auto& d : data) {
      ChartSeries c{std::move(d.info), {}};
      if (d.downsampled) {
        for (const Bucket& b : d.buckets) c.points.emplace_back(b.start_ns / 1'000'000, b.avg());
      } else {
        for (const Sample& s : d.samples) c.points.emplace_back(s.ts_ns / 1'000'000, s.value);
      }
      if (!c.points.empty()) out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

Result<ReportFigures> report_figures(const Sources& sources, const AnalysisDocument& doc, const db::EventScope& scope,
                                     const db::TimeRange& range) {
  ReportFigures out;
  for (auto [key, family] : {std::pair{"gpu_utilization", metric_names::kGpuUtilization},
                             std::pair{"memory_bandwidth", metric_names::kGpuDramBandwidth},
                             std::pair{"gpu_power", metric_names::kGpuPower},
                             std::pair{"gpu_temperature", metric_names::kGpuTemperature},
                             std::pair{"gpu_memory_used", metric_names::kGpuMemoryUsed},
                             std::pair{"host_cpu_utilization", metric_names::kHostCpu}}) {
    const Labels must = std::string_view(key) == "host_cpu_utilization" ? Labels{{"cpu", "total"}} : Labels{};
    out.summary.push_back({key, family, gauge_figures(doc.gauges, family, must)});
  }
  PERFSCOPE_ASSIGN_OR_RETURN(auto all, sources.events->kernel_summaries(range, scope));
  for (const auto& k : all) out.kernel_executions += k.count;
  if (out.kernel_executions) out.kernel_avg_ms = doc.kernel_total_ms / static_cast<double>(out.kernel_executions);
  auto latency = latency_figures(sources, doc, scope, range);
  if (!latency.ok()) return latency.status();
  out.latency = std::move(*latency);
  for (const ScrapedModel& m : doc.scraped) {
    auto it = m.serving.fields.find("latency_ms");
    if (it == m.serving.fields.end() || it->second.count <= 0) continue;
    out.scraped_latency.push_back({m.serving.model, m.serving.server,
                                   scraped_figures(it->second, kReportQuantiles, doc.slo.latency_ms)});
  }
  auto charts = chart_series(sources, range);
  if (!charts.ok()) return charts.status();
  out.charts = std::move(*charts);
  return out;
}

}  // namespace perfscope::service
