// GET /api/v1/percentiles: exact percentiles (or from histogram tiers where retention rolled raw
// values up) of what a selector names, with SLA compliance.
#include <charconv>
#include <cmath>

#include "engine/analysis/stats.hpp"
#include "server/api/api.hpp"
#include "server/service/query_time.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"
#include "server/api/selector.hpp"
#include "server/service/percentiles.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

json scraped_percentiles_answer(const service::ScrapedPercentiles& s, const Selector& sel, const TimeWindow& w) {
  const an::ScrapedDistribution& d = s.selection.distribution;
  json out = {{"selector", selector_json(sel)}, {"window", window_json(w)}, {"count", std::llround(d.count)},
              {"unit", "ms"}, {"method", d.summary ? "prometheus_summary" : "prometheus_histogram"},
              {"convention", d.summary ? "server_summary" : "histogram_quantile"},
              {"source", {{"servers", s.selection.servers}, {"metric", d.metric}, {"targets", s.selection.targets}}},
              {"std_kind", "sample"}};
  json pct = json::object(), bounds = json::object();
  scraped_percentiles_json(s.figures, pct, bounds);
  out["percentiles"] = pct;
  if (!d.summary) out["bounds"] = bounds;
  out["mean"] = d.mean_ms() ? json(*d.mean_ms()) : json(nullptr);
  out["std"] = nullptr;
  out["min"] = nullptr;
  out["max"] = nullptr;
  if (s.figures.sla) out["sla"] = scraped_sla_json(*s.figures.sla);
  out["warnings"] = s.warnings;
  return out;
}

json reported_percentiles_answer(const service::ReportedPercentiles& r, const service::PercentileQuery& query) {
  const an::Moments& m = r.moments;
  const std::vector<double>& qs = query.quantiles;
  json out = {{"selector", selector_json(query.selector)}, {"window", window_json(query.window)}, {"count", m.n},
              {"unit", r.unit}, {"method", r.rolled ? "histogram" : "exact"},
              {"convention", an::to_string(query.convention)}, {"std_kind", "sample"}};
  if (r.rolled) {
    out["max_relative_error"] = 0.001;
    out["histogram"] = {{"rolled_up_count", r.rolled->rollup.count}, {"raw_count", r.raw_count},
                        {"buckets", r.rolled->rows}, {"from_ns", r.rolled->from_ns}, {"to_ns", r.rolled->to_ns}};
  }
  auto keyed = [&](const std::vector<double>& p) {
    json pct = json::object();
    for (std::size_t i = 0; i < qs.size(); ++i) pct[an::percentile_key(qs[i])] = p.empty() ? json(nullptr) : json(p[i]);
    return pct;
  };
  out["percentiles"] = keyed(r.percentiles);
  auto or_null = [&](double v) { return m.n ? json(v) : json(nullptr); };
  out["mean"] = or_null(m.mean);
  out["std"] = m.n > 1 ? json(m.std) : json(nullptr);
  out["min"] = or_null(m.min);
  out["max"] = or_null(m.max);
  if (r.sla) {
    out["sla"] = {{"target_ms", r.sla->target}, {"violations", r.sla->violations},
                  {"compliance_rate", r.sla->compliance_rate}};
  }
  if (query.step_ns) {
    json slices = json::array();
    for (const service::PercentileSlice& s : r.over_time) {
      json slice = {{"from_ns", s.from_ns}, {"to_ns", s.to_ns}, {"count", s.count}};
      if (query.sla_ms) slice["sla_compliance_rate"] = s.sla_compliance_rate ? json(*s.sla_compliance_rate) : json(nullptr);
      slice["percentiles"] = keyed(s.percentiles);
      slices.push_back(std::move(slice));
    }
    out["step_ns"] = *query.step_ns;
    out["over_time"] = std::move(slices);
  }
  out["warnings"] = r.warnings;
  return out;
}

}  // namespace

HttpResponse QueryEndpoints::percentiles(const HttpRequest& request) const {
  auto parsed = selector_from_query(request);
  if (!parsed.ok()) return status_response(parsed.status());
  Selector sel = std::move(*parsed);
  // run= and tag.KEY= narrow kernel and model selections to the events that carry those tags.
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  if (scope->by_tags()) {
    if (sel.kind == Selector::Kind::kKernel) {
      sel.kernel.tags = scope->wanted_tags();
    } else if (sel.kind == Selector::Kind::kModel) {
      sel.model.tags = scope->wanted_tags();
    } else if (sel.kind == Selector::Kind::kOperator) {
      sel.op.tags = scope->wanted_tags();
    } else {
      return error_response(400, "invalid_argument", "'run' and tag filters apply to kernel, model and operator percentiles",
                            scope->run.empty() ? "tag" : "run");
    }
  }
  auto qs = parse_quantiles(param(request, "q"), {50, 90, 95, 99, 99.9});
  if (!qs.ok()) return status_response(qs.status());
  auto convention = an::convention_from(param(request, "method").empty() ? "nearest_rank" : param(request, "method"));
  if (!convention) return error_response(400, "invalid_argument", "'method' must be nearest_rank or linear", "method");
  std::optional<double> sla;
  if (std::string v = param(request, "sla_ms"); !v.empty()) {
    auto n = parse_number(v, "sla_ms");
    if (!n.ok() || *n <= 0) return error_response(400, "invalid_argument", "'sla_ms' must be a positive number", "sla_ms");
    sla = *n;
  }
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  // step=DURATION: percentiles of each slice of the window as well (at most 1,000 slices).
  const std::string step_text = param(request, "step");
  std::optional<TimestampNs> step;
  if (!step_text.empty()) {
    auto ns = parse_duration_ns(step_text, "step");
    if (!ns.ok()) return status_response(ns.status());
    if (*ns <= 0) return error_response(400, "invalid_argument", "'step' must be a positive duration", "step");
    if ((w->to_ns - w->from_ns) / *ns >= 1000) {
      return error_response(400, "invalid_argument", "'step' would cut the window into more than 1,000 slices", "step");
    }
    step = *ns;
  }

  // Models: reported requests, else a scraped server's histograms (source=events|scrape picks one).
  const std::string source = param(request, "source");
  if (!source.empty() && source != "events" && source != "scrape") {
    return error_response(400, "invalid_argument", "'source' must be events or scrape", "source");
  }
  if (!source.empty() && sel.kind != Selector::Kind::kModel) {
    return error_response(400, "invalid_argument", "'source' applies to model only", "source");
  }
  const bool scrape_only = source == "scrape" || sel.field_name == "itl_ms";
  if (scrape_only && source == "events") {
    return error_response(400, "invalid_argument", "itl_ms comes from scraped servers only", "field");
  }
  if (scrape_only && scope->by_tags()) {
    return error_response(400, "invalid_argument", "scraped servers carry no run or tags", scope->run.empty() ? "tag" : "run");
  }
  service::PercentileQuery query{sel, scope->by_tags(), std::move(*qs), *convention, sla, *w, step,
                                  scrape_only ? service::PercentileSource::kScrape
                                  : source == "events" ? service::PercentileSource::kEvents
                                                       : service::PercentileSource::kAny};
  auto answer = service::percentiles(sources_, query, now_ns());
  if (!answer.ok()) return status_response(answer.status());
  if (const auto* s = std::get_if<service::ScrapedPercentiles>(&*answer)) {
    return json_response(200, scraped_percentiles_answer(*s, query.selector, query.window));
  }
  return json_response(200, reported_percentiles_answer(std::get<service::ReportedPercentiles>(*answer), query));
}

}  // namespace perfscope::server
