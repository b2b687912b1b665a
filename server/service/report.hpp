// What a report adds to the analysis document of its window (GET /api/v1/report, `perfscope
// report`): a summary of the key gauges (average over GPUs of each GPU's average, the highest
// peak of any), every kernel's executions, latency percentiles per model against the SLA
// (exact, nearest rank, with a warning where too few samples back a percentile), and the key
// series downsampled for charts.
//
// A function over the sources and the document; thread-safe as the readers are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/series_history.hpp"
#include "engine/analysis/stats.hpp"
#include "server/service/analysis_service.hpp"

namespace perfscope::service {

// One family's figures over the window; none where no series of it had finite readings.
struct GaugeFigures {
  double avg = 0, peak = 0;
  std::vector<const SeriesSummary*> series;  // into the document's gauges
};

struct SummaryFigure {
  const char* key;     // "gpu_utilization", "memory_bandwidth", …
  const char* family;  // the metric family it summarizes
  std::optional<GaugeFigures> figures;
};

// A model's reported request latencies over the window.
struct LatencyFigures {
  std::string model;
  analysis::Moments moments;
  std::optional<analysis::SlaCompliance> sla;
  std::vector<double> percentiles;  // at kReportQuantiles
  std::vector<std::string> warnings;
};

// A scraped model's request latency, from its server's histogram or summary over the window.
struct ScrapedLatencyFigures {
  std::string model, server;
  ScrapedFigures figures;  // at kReportQuantiles, with the share within the SLA
};

struct ChartSeries {
  db::SeriesInfo info;
  std::vector<std::pair<std::int64_t, double>> points;  // (ms, value): samples or bucket averages
};

struct ReportFigures {
  std::vector<SummaryFigure> summary;
  std::uint64_t kernel_executions = 0;  // every kernel, not only the document's top ten
  std::optional<double> kernel_avg_ms;  // the document's kernel time per execution; none without any
  std::vector<LatencyFigures> latency;  // reported models
  std::vector<ScrapedLatencyFigures> scraped_latency;  // scraped models with observations
  std::vector<ChartSeries> charts;
};

inline constexpr double kReportQuantiles[] = {50, 90, 95, 99, 99.9};
inline constexpr std::size_t kChartPoints = 600;  // the most points of a chart series

// `scope` and `range` as the document was made for; the SLA is the document's latency SLO.
Result<ReportFigures> report_figures(const Sources& sources, const AnalysisDocument& doc, const db::EventScope& scope,
                                     const db::TimeRange& range);

}  // namespace perfscope::service
