// Percentiles of what a selector names over a window (GET /api/v1/percentiles): exact over the
// raw values, from the histogram tiers where retention rolled older values up (within their
// relative error), or, for a model without reported requests, from the scraped servers'
// histograms or summaries; with SLA compliance, the warnings a reader needs (too few samples
// for a percentile, a percentile above the highest bucket) and, with a step, the same over
// slices of the window.
//
// A function over the sources; thread-safe as the readers are.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "db/rollup_answer.hpp"
#include "engine/analysis/stats.hpp"
#include "server/service/query_time.hpp"
#include "server/service/scraped_figures.hpp"
#include "server/service/selection.hpp"

namespace perfscope::service {

// Where a model's values come from: reported requests, else (when there are none and no run
// or tag narrows it) the scraped servers; or one of them alone.
enum class PercentileSource { kAny, kEvents, kScrape };

struct PercentileQuery {
  Selector selector;  // narrowed by the scope's run and tags already
  bool tagged = false;  // a run or tags narrow it: scraped servers carry neither
  std::vector<double> quantiles;  // in [0, 100]
  analysis::PercentileConvention convention = analysis::PercentileConvention::kNearestRank;
  std::optional<double> sla_ms;
  server::TimeWindow window;
  std::optional<TimestampNs> step_ns;  // percentiles of each slice too (the caller bounds the count)
  PercentileSource source = PercentileSource::kAny;
};

// One slice of the window, answered from its own raw values.
struct PercentileSlice {
  TimestampNs from_ns = 0, to_ns = 0;
  std::size_t count = 0;
  std::optional<double> sla_compliance_rate;  // with an SLA, where the slice holds values
  std::vector<double> percentiles;            // in the query's order; empty: no values
};

// Reported values: exact, or from the histogram tiers when `rolled`.
struct ReportedPercentiles {
  std::string unit;
  analysis::Moments moments;
  std::vector<double> percentiles;  // in the query's order; empty: no values
  std::optional<analysis::SlaCompliance> sla;
  std::optional<db::RollupAnswer> rolled;  // the tiers merged in (the raw values kept: raw_count)
  std::size_t raw_count = 0;
  std::vector<PercentileSlice> over_time;  // with a step
  std::vector<std::string> warnings;
};

// A model's field as the scraped servers export it. The percentiles and their bucket bounds
// come from the distribution (analysis::scraped_quantile), over the window.
struct ScrapedPercentiles {
  ScrapedSelection selection;
  ScrapedFigures figures;  // at the query's quantiles; the share within the SLA, for a histogram
  std::vector<std::string> warnings;
};

using PercentileAnswer = std::variant<ReportedPercentiles, ScrapedPercentiles>;

Result<PercentileAnswer> percentiles(const Sources& sources, const PercentileQuery& query, TimestampNs now);

}  // namespace perfscope::service
