// The A/B test endpoints: create (validated, stored), list, and evaluate a stored definition on
// the data in its window now (A/B and A/B/n).
#include <algorithm>
#include <charconv>
#include <set>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/stats.hpp"
#include "engine/base/cancellation.hpp"
#include "db/abtest_store.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"
#include "server/api/selector.hpp"
#include "server/service/ab_tests.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

json side_json(const an::SampleSummary& s) {
  return {{"n", s.n}, {"mean_ms", s.mean_ms}, {"median_ms", s.median_ms}, {"std_ms", s.std_ms}, {"p99_ms", s.p99_ms}};
}

json result_json(const an::AbResult& r) {
  auto finite = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"a", side_json(r.a)},
          {"b", side_json(r.b)},
          {"speedup", finite(r.speedup)},
          {"speedup_ci95", {finite(r.speedup_ci95.low), finite(r.speedup_ci95.high)}},
          {"bootstrap_resamples_used", r.bootstrap_resamples_used},
          {"mann_whitney", {{"u", r.mann_whitney.u}, {"p_value", r.mann_whitney.p_value}, {"method", r.mann_whitney.method}}},
          {"welch", {{"t", r.welch.t}, {"df", r.welch.df}, {"p_value", r.welch.p_value}}},
          {"hodges_lehmann_shift_ms", r.hodges_lehmann_shift_ms},
          {"p_value_used", r.p_value_used},
          {"verdict", an::to_string(r.verdict)},
          {"min_samples_needed", r.min_samples_needed},
          {"recommendation", r.recommendation}};
}

using service::AbDefinition;

json definition_json(const AbDefinition& d) {
  json j = {{"name", d.name}, {"alpha", d.options.alpha}, {"min_effect", d.options.min_effect},
            {"window", d.window_text}, {"seed", d.options.seed}, {"bootstrap_resamples", d.options.bootstrap_resamples}};
  if (d.multi) {
    json v = json::array();
    for (const auto& s : d.sides) v.push_back(selector_json(s));
    j["variants"] = v;
  } else {
    j["a"] = selector_json(d.sides[0]);
    j["b"] = selector_json(d.sides[1]);
  }
  return j;
}

// A side: a selector of durations or latencies in ms, which the tests and their effect sizes
// are read in; a series keeps its own unit (its percentiles: /api/v1/percentiles?series=).
Result<Selector> side_from_json(const json& j, const std::string& where) {
  auto s = selector_from_json(j, where);
  if (s.ok() && s->kind == Selector::Kind::kSeries) {
    return Status::invalid_argument(where + ".series: A/B tests compare durations and latencies (ms); a series has "
                                    "a unit of its own", where + ".series");
  }
  return s;
}

}  // namespace

Result<AbDefinition> parse_abtest_definition(const json& body, TimestampNs now) {
  if (!body.is_object()) return Status::invalid_argument("the body must be a JSON object", "");
  AbDefinition d;
  auto name = body.find("name");
  if (name == body.end() || !name->is_string() || name->get_ref<const std::string&>().empty() ||
      name->get_ref<const std::string&>().size() > 256) {
    return Status::invalid_argument("name: a non-empty string of at most 256 bytes is required", "name");
  }
  d.name = name->get<std::string>();
  const bool pair = body.contains("a") || body.contains("b");
  const bool multi = body.contains("variants");
  if (pair == multi) return Status::invalid_argument("give either \"a\" and \"b\", or \"variants\"", pair ? "variants" : "a");
  if (pair) {
    for (const char* side : {"a", "b"}) {
      auto it = body.find(side);
      if (it == body.end()) return Status::invalid_argument(std::string(side) + ": is required", side);
      auto s = side_from_json(*it, side);
      if (!s.ok()) return s.status();
      d.sides.push_back(std::move(*s));
    }
  } else {
    const json& v = body["variants"];
    if (!v.is_array() || v.size() < 2 || v.size() > 20) {
      return Status::invalid_argument("variants: an array of 2 to 20 selectors is required", "variants");
    }
    d.multi = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto s = side_from_json(v[i], "variants[" + std::to_string(i) + "]");
      if (!s.ok()) return s.status();
      d.sides.push_back(std::move(*s));
    }
  }
  auto number = [&](const char* field, double lo, double hi, double& out) -> Status {
    auto it = body.find(field);
    if (it == body.end() || it->is_null()) return Status();
    if (!it->is_number() || !(it->get<double>() > lo) || !(it->get<double>() < hi)) {
      return Status::invalid_argument(std::string(field) + ": must be a number between " + std::to_string(lo) +
                                          " and " + std::to_string(hi) + " (exclusive)",
                                      field);
    }
    out = it->get<double>();
    return Status();
  };
  if (Status s = number("alpha", 0, 1, d.options.alpha); !s.ok()) return s;
  double min_effect = d.options.min_effect;
  if (Status s = number("min_effect", -1e-300, 10, min_effect); !s.ok()) return s;
  d.options.min_effect = min_effect;
  if (auto it = body.find("seed"); it != body.end() && !it->is_null()) {
    if (!it->is_number_unsigned()) return Status::invalid_argument("seed: must be a non-negative integer", "seed");
    d.options.seed = it->get<std::uint64_t>();
  }
  if (auto it = body.find("bootstrap_resamples"); it != body.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() < 100 || it->get<std::uint64_t>() > 100'000) {
      return Status::invalid_argument("bootstrap_resamples: must be an integer from 100 to 100000", "bootstrap_resamples");
    }
    d.options.bootstrap_resamples = it->get<std::size_t>();
  }
  if (auto it = body.find("window"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return Status::invalid_argument("window: must be \"all\" or a duration such as \"5m\"", "window");
    auto w = parse_window(it->get<std::string>(), "", "", now);
    if (!w.ok()) return w.status();
    d.window_text = it->get<std::string>();
  }
  return d;
}

namespace {

constexpr const char* kScrapedOnly =
    "A side exists only as a scraped server's histograms, which keep counts per bucket, not observations: "
    "the tests could not run. Report the requests themselves (the Python client's request()) to compare "
    "them; the scraped percentiles are given for reading, with their bucket bounds.";

json scraped_sides_json(const std::vector<service::ScrapedSide>& sides) {
  json found = json::array();
  for (const service::ScrapedSide& s : sides) {
    json side = scraped_distribution_json(s.figures);
    if (side.is_null()) side = {{"count", 0}};
    side["side"] = s.side;
    side["servers"] = s.selection.servers;
    found.push_back(std::move(side));
  }
  json not_run = json::array();
  for (const service::TestNotRun& t : service::kTestsNotRunOnHistograms) not_run.push_back({{"test", t.test}, {"why", t.why}});
  return {{"sides", found}, {"tests_not_run", not_run}};
}

json energy_of_sides_json(const std::vector<service::SideEnergy>& sides) {
  json out = json::array();
  for (const service::SideEnergy& s : sides) {
    out.push_back({{"model", s.model}, {"version", s.version}, {"attribution", s.attribution},
                   {"joules", optional_json(s.joules)}, {"joules_per_inference", optional_json(s.joules_per_inference)},
                   {"joules_per_output_token", optional_json(s.joules_per_output_token)}});
  }
  return json{{"sides", out}, {"method", kEnergyPerModelMethod}};
}

}  // namespace

json abtest_evaluation_json(const AbDefinition& d, const service::AbEvaluation& e) {
  json out = {{"definition", definition_json(d)}, {"window", window_json(e.window)}};
  if (e.energy) out["energy"] = energy_of_sides_json(*e.energy);
  if (!d.multi) {
    out.update(result_json(e.results[0]));
    if (!e.scraped.empty()) {
      out["scraped"] = scraped_sides_json(e.scraped);
      out["recommendation"] = kScrapedOnly;
    }
    return out;
  }
  if (!e.scraped.empty()) out["scraped"] = scraped_sides_json(e.scraped);
  json comparisons = json::array();
  for (std::size_t i = 0; i < e.results.size(); ++i) {
    json c = result_json(e.results[i]);
    c["control"] = 0;
    c["variant"] = i + 1;
    c["p_value_adjusted"] = e.p_values_adjusted[i];
    comparisons.push_back(std::move(c));
  }
  out["correction"] = "benjamini_hochberg";
  out["comparisons"] = comparisons;
  return out;
}

void Api::create_abtest(const HttpRequest& request, std::function<void(HttpResponse)> done) const {
  if (request.content_type != "application/json") {
    return done(error_response(415, "unsupported_media_type", "Content-Type must be application/json", "Content-Type"));
  }
  json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return done(error_response(400, "invalid_argument", "the body is not valid JSON"));
  auto d = parse_abtest_definition(body, now_ns());
  if (!d.ok()) return done(status_response(d.status()));
  if (!ctx_.writer || !ctx_.abtests) return done(error_response(503, "unavailable", "no database is open"));
  json definition = definition_json(*d);
  // Answered once committed, without results: this callback runs on the database writer's
  // thread, which must not spend time reading; GET on the Location evaluates.
  db::create_abtest(*ctx_.writer, d->name, definition.dump(), now_ns(),
                    [definition, done = std::move(done)](Result<std::int64_t> id) {
                      if (!id.ok()) return done(status_response(id.status()));
                      const std::string url = "/api/v1/abtests/" + std::to_string(*id);
                      HttpResponse r = json_response(201, {{"id", *id}, {"definition", definition}, {"url", url}});
                      r.headers.emplace_back("Location", url);
                      done(std::move(r));
                    });
}

HttpResponse QueryEndpoints::abtests() const {
  if (!sources_.abtests) return error_response(503, "unavailable", "no database is open");
  auto rows = sources_.abtests->list(1000);
  if (!rows.ok()) return status_response(rows.status());
  json out = json::array();
  for (const auto& r : *rows) {
    out.push_back({{"id", r.id}, {"name", r.name}, {"created_ns", r.created_ns},
                   {"definition", json::parse(r.definition, nullptr, false)},
                   {"url", "/api/v1/abtests/" + std::to_string(r.id)}});
  }
  return json_response(200, {{"abtests", out}});
}

HttpResponse QueryEndpoints::abtest(const std::string& id_text) const {
  if (!sources_.abtests) return error_response(503, "unavailable", "no database is open");
  std::int64_t id = 0;
  auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (ec != std::errc() || end != id_text.data() + id_text.size() || id < 1) {
    return error_response(404, "not_found", "no A/B test " + id_text);
  }
  auto row = sources_.abtests->get(id);
  if (!row.ok()) return status_response(row.status());
  if (!*row) return error_response(404, "not_found", "no A/B test " + id_text);
  const TimestampNs now = now_ns();
  auto d = parse_abtest_definition(json::parse((*row)->definition, nullptr, false), now);
  if (!d.ok()) return status_response(d.status());
  auto e = service::evaluate_abtest(sources_, *d, now);
  if (!e.ok()) return status_response(e.status());
  json out = abtest_evaluation_json(*d, *e);
  out["id"] = id;
  out["created_ns"] = (*row)->created_ns;
  return json_response(200, out);
}

}  // namespace perfscope::server
