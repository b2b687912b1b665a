// GET /api/v1/percentiles: exact percentiles (or from histogram tiers where retention rolled raw
// values up) of what a selector names, with SLA compliance.
#include <charconv>
#include <cmath>

#include "engine/analysis/rollup.hpp"
#include "engine/analysis/stats.hpp"
#include "server/api/api.hpp"
#include "server/service/query_time.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"
#include "server/api/selector.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

// A model's field from the servers perfscope scrapes, over the window: percentiles from the
// histogram buckets' increase (the bucket as the error bound) or a summary's own quantiles.
// nullopt when no scraped server exports it and the caller did not insist (`required`).
Result<std::optional<json>> scraped_percentiles(const ApiContext& ctx, const Selector& sel,
                                                const std::vector<double>& qs, std::optional<double> sla,
                                                const TimeWindow& w, bool required) {
  auto all = service::load_scraped_serving(*ctx.history, {w.from_ns, std::min(w.to_ns, now_ns())});
  if (!all.ok()) return all.status();
  auto selected = select_scraped(*all, sel.model.model, sel.model.version, sel.field_name);
  if (!selected.ok()) return selected.status();
  if (!*selected) {
    if (!required) return std::optional<json>();
    return Status::not_found("no scraped server exports " + sel.field_name + " of model '" + sel.model.model +
                                 "' in the window", "model");
  }
  const an::ScrapedDistribution& d = (*selected)->distribution;
  const auto& servers = (*selected)->servers;
  const auto& targets = (*selected)->targets;
  const auto count = std::llround(d.count);
  json out = {{"selector", sel.to_json()}, {"window", window_json(w)}, {"count", count}, {"unit", "ms"},
              {"method", d.summary ? "prometheus_summary" : "prometheus_histogram"},
              {"convention", d.summary ? "server_summary" : "histogram_quantile"},
              {"source", {{"servers", servers}, {"metric", d.metric}, {"targets", targets}}},
              {"std_kind", "sample"}};
  json pct = json::object(), bounds = json::object(), warnings = json::array();
  scraped_percentiles_json(d, qs, pct, bounds);
  for (double q : qs) {
    const std::string key = an::percentile_key(q);
    const std::size_t need = an::min_samples_for_percentile(q);
    if (count > 0 && static_cast<std::size_t>(count) < need) {
      warnings.push_back(key + " needs at least " + std::to_string(need) +
                         " samples to be trusted (99% confidence); the window holds " + std::to_string(count));
    }
    if (bounds.contains(key) && bounds[key][1].is_null()) {
      warnings.push_back(key + " lies above the highest finite bucket bound; only its lower bound is known");
    }
  }
  if (d.summary) {
    std::string exported;
    for (const auto& [q, v] : d.quantiles) exported += (exported.empty() ? "" : ", ") + an::percentile_key(q * 100);
    warnings.push_back("quantiles as the server computed them over its own recent observations at the newest "
                       "scrape, not over this window; exported: " + (exported.empty() ? "none" : exported));
  }
  if (count == 0) warnings.push_back("no observations in the window");
  out["percentiles"] = pct;
  if (!d.summary) out["bounds"] = bounds;
  out["mean"] = d.mean_ms() ? json(*d.mean_ms()) : json(nullptr);
  out["std"] = nullptr;
  out["min"] = nullptr;
  out["max"] = nullptr;
  if (sla) {
    if (auto sla_json = scraped_sla_json(d, *sla)) {
      out["sla"] = std::move(*sla_json);
    } else if (d.summary) {
      warnings.push_back("SLA compliance needs histogram buckets; a summary gives only its quantiles");
    }
  }
  out["warnings"] = warnings;
  return std::optional<json>(std::move(out));
}

}  // namespace

HttpResponse Api::percentiles(const HttpRequest& request) const {
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
  std::optional<Distribution> reported;
  if (!scrape_only) {
    auto dist = load_distribution(ctx_, sel, {w->from_ns, w->to_ns}, /*with_rollups=*/true);
    if (!dist.ok()) return status_response(dist.status());
    reported = std::move(*dist);
  }
  if (sel.kind == Selector::Kind::kModel && source != "events" && !scope->by_tags() &&
      (scrape_only || (reported->raw.empty() && !reported->rolled))) {
    auto scraped = scraped_percentiles(ctx_, sel, *qs, sla, *w, scrape_only);
    if (!scraped.ok()) return status_response(scraped.status());
    if (*scraped) return json_response(200, **scraped);
  }
  Distribution* dist = &*reported;
  std::vector<double>& values = dist->raw;
  const bool from_histogram = dist->rolled.has_value();
  an::Moments m;
  std::vector<double> p;
  std::optional<an::SlaCompliance> compliance;
  if (from_histogram) {
    // Raw values older than the retention cutoff exist only as tiers: merge the raw values
    // still kept into them and answer from the histogram (within its relative error).
    an::Rollup all = dist->rolled->rollup;
    for (double v : values) all.add(v);
    m = all.moments();
    p = all.percentiles(*qs, *convention);
    if (sla) compliance = all.sla(*sla);
  } else {
    m = an::moments(values);
    if (sla) compliance = an::sla_compliance(values, *sla);  // before selection reorders the values
    p = an::percentiles(values, *qs, *convention);
  }
  json out = {{"selector", sel.to_json()}, {"window", window_json(*w)}, {"count", m.n}, {"unit", dist->unit},
              {"method", from_histogram ? "histogram" : "exact"}, {"convention", an::to_string(*convention)},
              {"std_kind", "sample"}};
  json warnings = json::array();
  if (from_histogram) {
    out["max_relative_error"] = 0.001;
    out["histogram"] = {{"rolled_up_count", dist->rolled->rollup.count}, {"raw_count", values.size()},
                        {"buckets", dist->rolled->rows}, {"from_ns", dist->rolled->from_ns},
                        {"to_ns", dist->rolled->to_ns}};
    warnings.push_back("the window reaches back before the raw data kept (retention): older values come from "
                       "histogram tiers, whole buckets from " + std::to_string(dist->rolled->from_ns) + " to " +
                       std::to_string(dist->rolled->to_ns) + " ns");
  }
  json pct = json::object();
  for (std::size_t i = 0; i < qs->size(); ++i) {
    const double q = (*qs)[i];
    pct[an::percentile_key(q)] = p.empty() ? json(nullptr) : json(p[i]);
    const std::size_t need = an::min_samples_for_percentile(q);
    if (m.n > 0 && m.n < need) {
      warnings.push_back(an::percentile_key(q) + " needs at least " + std::to_string(need) +
                         " samples to be trusted (99% confidence); the window holds " + std::to_string(m.n));
    }
  }
  if (m.n == 0) warnings.push_back("no samples in the window");
  out["percentiles"] = pct;
  auto or_null = [&](double v) { return m.n ? json(v) : json(nullptr); };
  out["mean"] = or_null(m.mean);
  out["std"] = m.n > 1 ? json(m.std) : json(nullptr);
  out["min"] = or_null(m.min);
  out["max"] = or_null(m.max);
  if (compliance) {
    out["sla"] = {{"target_ms", compliance->target}, {"violations", compliance->violations},
                  {"compliance_rate", compliance->compliance_rate}};
  }
  // Percentiles over time: the window in slices of `step`, each answered from its own raw values.
  if (!step_text.empty()) {
    json slices = json::array();
    for (TimestampNs from = w->from_ns; from <= w->to_ns; from += *step) {
      const TimestampNs to = std::min(w->to_ns, from + *step - 1);
      auto part = load_distribution(ctx_, sel, {from, to}, /*with_rollups=*/false);
      if (!part.ok()) return status_response(part.status());
      std::vector<double>& v = part->raw;
      json slice = {{"from_ns", from}, {"to_ns", to}, {"count", v.size()}};
      if (sla) {
        const an::SlaCompliance c = an::sla_compliance(v, *sla);
        slice["sla_compliance_rate"] = v.empty() ? json(nullptr) : json(c.compliance_rate);
      }
      const std::vector<double> sp = v.empty() ? std::vector<double>{} : an::percentiles(v, *qs, *convention);
      json sp_json = json::object();
      for (std::size_t i = 0; i < qs->size(); ++i) sp_json[an::percentile_key((*qs)[i])] = sp.empty() ? json(nullptr) : json(sp[i]);
      slice["percentiles"] = std::move(sp_json);
      slices.push_back(std::move(slice));
      if (to == w->to_ns) break;
    }
    out["step_ns"] = *step;
    out["over_time"] = std::move(slices);
  }
  out["warnings"] = warnings;
  return json_response(200, out);
}

}  // namespace perfscope::server
