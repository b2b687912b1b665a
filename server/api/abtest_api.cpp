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

// A validated, normalized A/B definition.
struct AbDefinition {
  std::string name;
  std::vector<Selector> sides;  // a, b — or the variants of A/B/n, the first being the control
  bool multi = false;
  an::AbOptions options;
  TimeWindow window;
  std::string window_text = "all";
  json to_json() const {
    json j = {{"name", name}, {"alpha", options.alpha}, {"min_effect", options.min_effect},
              {"window", window_text}, {"seed", options.seed}, {"bootstrap_resamples", options.bootstrap_resamples}};
    if (multi) {
      json v = json::array();
      for (const auto& s : sides) v.push_back(s.to_json());
      j["variants"] = v;
    } else {
      j["a"] = sides[0].to_json();
      j["b"] = sides[1].to_json();
    }
    return j;
  }
};

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

Result<AbDefinition> parse_definition(const json& body, TimestampNs now) {
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

constexpr const char* kScrapedOnly =
    "A side exists only as a scraped server's histograms, which keep counts per bucket, not observations: "
    "the tests could not run. Report the requests themselves (the Python client's request()) to compare "
    "them; the scraped percentiles are given for reading, with their bucket bounds.";

// Model sides without reported requests, read from the scraped servers instead: what they
// show (descriptive percentiles with bounds) and which tests could not run on them and why.
// Null when every side has its observations, or none has scraped data either.
Result<json> scraped_sides(const ApiContext& ctx, const std::vector<Selector>& sides,
                           const std::vector<std::vector<double>>& samples, const TimeWindow& w) {
  std::optional<std::vector<an::ScrapedServing>> all;
  json found = json::array();
  for (std::size_t i = 0; i < sides.size(); ++i) {
    const Selector& s = sides[i];
    if (!samples[i].empty() || s.kind != Selector::Kind::kModel || !s.model.tags.empty()) continue;
    if (!all) {
      auto loaded = service::load_scraped_serving(*ctx.history, {w.from_ns, std::min(w.to_ns, now_ns())});
      if (!loaded.ok()) return loaded.status();
      all = std::move(*loaded);
    }
    auto selected = select_scraped(*all, s.model.model, s.model.version, s.field_name);
    if (!selected.ok()) return selected.status();
    if (!*selected) continue;
    json side = scraped_distribution_json((*selected)->distribution);
    if (side.is_null()) side = {{"count", 0}};
    side["side"] = i;
    side["servers"] = (*selected)->servers;
    found.push_back(std::move(side));
  }
  if (found.empty()) return json(nullptr);
  return json{{"sides", found},
              {"tests_not_run",
               {{{"test", "mann_whitney"}, {"why", "ranks every observation; a histogram keeps only counts per bucket"}},
                {{"test", "welch"}, {"why", "needs each side's variance; the server exports only counts, sums and buckets"}},
                {{"test", "bootstrap_speedup_ci"}, {"why", "resamples observations, which the server does not export"}},
                {{"test", "hodges_lehmann"}, {"why", "takes the median of every pairwise difference of observations"}}}}};
}

}  // namespace

// Energy per inference beside latency when every side is a model: each side's row of the
// window's energy per model (engine/analysis/energy.hpp), a side naming no version summing its
// model's versions. Null when some side is not a model.
Result<json> energy_of_sides(const ApiContext& ctx, const std::vector<Selector>& sides, const TimeWindow& w) {
  for (const Selector& s : sides) {
    if (s.kind != Selector::Kind::kModel) return json(nullptr);
  }
  const db::TimeRange range{w.from_ns, std::min(w.to_ns, now_ns())};
  auto requests = ctx.events->inference_events(range);
  if (!requests.ok()) return requests.status();
  TimestampNs lo = range.to_ns, hi = range.from_ns;
  for (const auto& r : *requests) {
    lo = std::min(lo, r.ts_ns);
    hi = std::max(hi, r.ts_ns);
  }
  const double window_s = w.all ? (hi > lo ? static_cast<double>(hi - lo) / 1e9 : 0)
                                : static_cast<double>(range.to_ns - range.from_ns) / 1e9;
  const auto serving = an::serving_metrics(*requests, window_s, {});
  std::vector<RequestPower> during;
  auto series = service::read_energy_series(*ctx.history, range, *requests, &during);
  if (!series.ok()) return series.status();
  const json energy = energy_json(service::energy_figures(*series, serving, during));
  json out = json::array();
  for (const Selector& s : sides) {
    double joules = 0, inferences = 0, tokens = 0;
    bool known = false;
    std::set<std::string> attribution;
    for (const json& row : energy["models"]) {
      if (row["model"] != s.model.model || (!s.model.version.empty() && row["version"] != s.model.version)) continue;
      const auto m = std::find_if(serving.begin(), serving.end(), [&](const an::ServingMetrics& x) {
        return x.model == row["model"] && x.version == row["version"];
      });
      if (m == serving.end()) continue;
      attribution.insert(row["attribution"].get<std::string>());
      inferences += m->inferences_per_second * m->window_s;
      tokens += static_cast<double>(m->output_tokens);
      if (!row["joules"].is_null()) {
        joules += row["joules"].get<double>();
        known = true;
      }
    }
    json side = {{"model", s.model.model}, {"version", s.model.version}, {"attribution", attribution}};
    side["joules"] = known ? json(joules) : json(nullptr);
    side["joules_per_inference"] = known && inferences > 0 ? json(joules / inferences) : json(nullptr);
    side["joules_per_output_token"] = known && tokens > 0 ? json(joules / tokens) : json(nullptr);
    out.push_back(std::move(side));
  }
  return json{{"sides", out}, {"method", energy["method"]}};
}

// One meaning of run= (Api::unknown_run): a side's "run" names a run perfscope knows, or the
// evaluation is refused with the same message as every endpoint's; tags.run selects events
// by their tag alone.
Status check_runs(const ApiContext& ctx, const AbDefinition& d) {
  if (!ctx.events) return Status();
  for (std::size_t i = 0; i < d.sides.size(); ++i) {
    const std::string& run = d.sides[i].run;
    if (run.empty()) continue;
    auto found = ctx.events->run(run);
    if (!found.ok()) return found.status();
    const std::string where = d.multi ? "variants[" + std::to_string(i) + "]" : i == 0 ? "a" : "b";
    if (!*found) return Status::not_found(no_run_message(run), where + ".run");
  }
  return Status();
}

// The current result of a stored definition.
Result<json> evaluate_abtest(const ApiContext& ctx, const json& definition) {
  auto d = parse_definition(definition, now_ns());
  if (!d.ok()) return d.status();
  if (Status runs = check_runs(ctx, *d); !runs.ok()) return runs;
  // A duration window is relative to the time of evaluation: "the last 5 minutes".
  auto w = parse_window(d->window_text, "", "", now_ns());
  if (!w.ok()) return w.status();
  std::vector<std::vector<double>> samples;
  for (const Selector& s : d->sides) {
    auto v = load_values(ctx, s, {w->from_ns, w->to_ns});
    if (!v.ok()) return v.status();
    samples.push_back(std::move(*v));
  }
  json out = {{"definition", d->to_json()}, {"window", window_json(*w)}};
  auto energy = energy_of_sides(ctx, d->sides, *w);
  if (!energy.ok()) return energy.status();
  if (!energy->is_null()) out["energy"] = std::move(*energy);
  auto scraped = scraped_sides(ctx, d->sides, samples, *w);
  if (!scraped.ok()) return scraped.status();
  if (!d->multi) {
    an::AbResult r = an::compare(samples[0], samples[1], d->options);
    if (cancellation_requested()) return cancelled_status();  // the interval was cut short
    out.update(result_json(r));
    if (!scraped->is_null()) {
      out["scraped"] = *scraped;
      out["recommendation"] = kScrapedOnly;
    }
    return out;
  }
  if (!scraped->is_null()) out["scraped"] = *scraped;
  // A/B/n: every variant against the first, p-values adjusted together (Benjamini–Hochberg).
  std::vector<an::AbResult> results;
  std::vector<double> p;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    if (cancellation_requested()) return cancelled_status();
    results.push_back(an::compare(samples[0], samples[i], d->options));
    p.push_back(results.back().mann_whitney.p_value);
  }
  if (cancellation_requested()) return cancelled_status();
  auto adjusted = an::benjamini_hochberg(p);
  json comparisons = json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    an::decide(results[i], d->options, adjusted[i]);
    json c = result_json(results[i]);
    c["control"] = 0;
    c["variant"] = i + 1;
    c["p_value_adjusted"] = adjusted[i];
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
  auto d = parse_definition(body, now_ns());
  if (!d.ok()) return done(status_response(d.status()));
  if (!ctx_.writer || !ctx_.abtests) return done(error_response(503, "unavailable", "no database is open"));
  json definition = d->to_json();
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

HttpResponse Api::abtests() const {
  if (!ctx_.abtests) return error_response(503, "unavailable", "no database is open");
  auto rows = ctx_.abtests->list(1000);
  if (!rows.ok()) return status_response(rows.status());
  json out = json::array();
  for (const auto& r : *rows) {
    out.push_back({{"id", r.id}, {"name", r.name}, {"created_ns", r.created_ns},
                   {"definition", json::parse(r.definition, nullptr, false)},
                   {"url", "/api/v1/abtests/" + std::to_string(r.id)}});
  }
  return json_response(200, {{"abtests", out}});
}

HttpResponse Api::abtest(const std::string& id_text) const {
  if (!ctx_.abtests) return error_response(503, "unavailable", "no database is open");
  std::int64_t id = 0;
  auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (ec != std::errc() || end != id_text.data() + id_text.size() || id < 1) {
    return error_response(404, "not_found", "no A/B test " + id_text);
  }
  auto row = ctx_.abtests->get(id);
  if (!row.ok()) return status_response(row.status());
  if (!*row) return error_response(404, "not_found", "no A/B test " + id_text);
  json definition = json::parse((*row)->definition, nullptr, false);
  auto evaluated = evaluate_abtest(ctx_, definition);
  if (!evaluated.ok()) return status_response(evaluated.status());
  json out = *evaluated;
  out["id"] = id;
  out["created_ns"] = (*row)->created_ns;
  return json_response(200, out);
}

}  // namespace perfscope::server
