#include "server/service/percentiles.hpp"

#include <algorithm>
#include <cmath>

#include "engine/analysis/rollup.hpp"
#include "server/service/scoped_reads.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {

std::string too_few_samples(double q, std::size_t need, std::size_t have) {
  return an::percentile_key(q) + " needs at least " + std::to_string(need) +
         " samples to be trusted (99% confidence); the window holds " + std::to_string(have);
}

// nullopt when no scraped server exports the field and the query did not insist on them.
Result<std::optional<ScrapedPercentiles>> scraped(const Sources& sources, const PercentileQuery& query,
                                                  TimestampNs now) {
  const Selector& sel = query.selector;
  const server::TimeWindow& w = query.window;
  auto all = load_scraped_serving(*sources.history, {w.from_ns, std::min(w.to_ns, now)});
  if (!all.ok()) return all.status();
  PERFSCOPE_ASSIGN_OR_RETURN(auto selected, select_scraped(*all, sel.model.model, sel.model.version, sel.field_name));
  if (!selected) {
    if (query.source != PercentileSource::kScrape) return std::optional<ScrapedPercentiles>();
    return Status::not_found("no scraped server exports " + sel.field_name + " of model '" + sel.model.model +
                                 "' in the window", "model");
  }
  ScrapedPercentiles out;
  out.selection = std::move(*selected);
  const an::ScrapedDistribution& d = out.selection.distribution;
  const auto count = std::llround(d.count);
  out.figures = scraped_figures(d, query.quantiles, query.sla_ms);
  for (const auto& [q, e] : out.figures.percentiles) {
    const std::size_t need = an::min_samples_for_percentile(q);
    if (count > 0 && static_cast<std::size_t>(count) < need) {
      out.warnings.push_back(too_few_samples(q, need, static_cast<std::size_t>(count)));
    }
    if (e && !d.summary && !std::isfinite(e->upper)) {
      out.warnings.push_back(an::percentile_key(q) + " lies above the highest finite bucket bound; only its lower bound is known");
    }
  }
  if (d.summary) {
    std::string exported;
    for (const auto& [q, v] : d.quantiles) exported += (exported.empty() ? "" : ", ") + an::percentile_key(q * 100);
    out.warnings.push_back("quantiles as the server computed them over its own recent observations at the newest "
                           "scrape, not over this window; exported: " + (exported.empty() ? "none" : exported));
  }
  if (count == 0) out.warnings.push_back("no observations in the window");
  if (query.sla_ms && !out.figures.sla && d.summary) {
    out.warnings.push_back("SLA compliance needs histogram buckets; a summary gives only its quantiles");
  }
  return std::optional(std::move(out));
}

// The window in slices of the step, each answered from its own raw values.
Result<std::vector<PercentileSlice>> over_time(const Sources& sources, const PercentileQuery& query) {
  std::vector<PercentileSlice> slices;
  const server::TimeWindow& w = query.window;
  const TimestampNs step = *query.step_ns;
  for (TimestampNs from = w.from_ns; from <= w.to_ns; from += step) {
    const TimestampNs to = std::min(w.to_ns, from + step - 1);
    auto part = load_values(sources, query.selector, {from, to});
    if (!part.ok()) return part.status();
    PercentileSlice slice{from, to, part->size(), std::nullopt, {}};
    if (query.sla_ms && !part->empty()) slice.sla_compliance_rate = an::sla_compliance(*part, *query.sla_ms).compliance_rate;
    if (!part->empty()) slice.percentiles = an::percentiles(*part, query.quantiles, query.convention);
    slices.push_back(std::move(slice));
    if (to == w.to_ns) break;
  }
  return slices;
}

}  // namespace

Result<PercentileAnswer> percentiles(const Sources& sources, const PercentileQuery& query, TimestampNs now) {
  const Selector& sel = query.selector;
  std::optional<Distribution> reported;
  if (query.source != PercentileSource::kScrape) {
    auto dist = load_distribution(sources, sel, {query.window.from_ns, query.window.to_ns}, /*with_rollups=*/true);
    if (!dist.ok()) return dist.status();
    reported = std::move(*dist);
  }
  if (sel.kind == Selector::Kind::kModel && query.source != PercentileSource::kEvents && !query.tagged &&
      (!reported || (reported->raw.empty() && !reported->rolled))) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto s, scraped(sources, query, now));
    if (s) return PercentileAnswer(std::move(*s));
  }
  ReportedPercentiles out;
  std::vector<double>& values = reported->raw;
  out.unit = reported->unit;
  out.raw_count = values.size();
  out.rolled = std::move(reported->rolled);
  if (out.rolled) {
    // Raw values older than the retention cutoff exist only as tiers: merge the raw values
    // still kept into them and answer from the histogram (within its relative error).
    an::Rollup all = out.rolled->rollup;
    for (double v : values) all.add(v);
    out.moments = all.moments();
    out.percentiles = all.percentiles(query.quantiles, query.convention);
    if (query.sla_ms) out.sla = all.sla(*query.sla_ms);
    out.warnings.push_back("the window reaches back before the raw data kept (retention): older values come from "
                           "histogram tiers, whole buckets from " + std::to_string(out.rolled->from_ns) + " to " +
                           std::to_string(out.rolled->to_ns) + " ns");
  } else {
    out.moments = an::moments(values);
    if (query.sla_ms) out.sla = an::sla_compliance(values, *query.sla_ms);  // before selection reorders the values
    out.percentiles = an::percentiles(values, query.quantiles, query.convention);
  }
  const std::size_t n = out.moments.n;
  for (double q : query.quantiles) {
    const std::size_t need = an::min_samples_for_percentile(q);
    if (n > 0 && n < need) out.warnings.push_back(too_few_samples(q, need, n));
  }
  if (n == 0) out.warnings.push_back("no samples in the window");
  if (query.step_ns) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto slices, over_time(sources, query));
    out.over_time = std::move(slices);
  }
  return PercentileAnswer(std::move(out));
}

}  // namespace perfscope::service
