// The analysis endpoints of Api: percentiles with SLA, and A/B tests (create, list, evaluate).
#include <charconv>
#include <cmath>

#include "engine/analysis/ab_test.hpp"
#include "engine/analysis/rollup.hpp"
#include "engine/analysis/stats.hpp"
#include "server/wire/event_codec.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "db/abtest_store.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

constexpr double kDefaultQs[] = {50, 90, 95, 99, 99.9};

Result<double> parse_number(std::string_view text, const char* field) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return Status::invalid_argument(std::string("'") + field + "' must be a number", field);
  }
  return v;
}

Result<std::vector<double>> parse_quantiles(const std::string& text) {
  if (text.empty()) return std::vector<double>(std::begin(kDefaultQs), std::end(kDefaultQs));
  std::vector<double> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view part(text.data() + start, (comma == std::string::npos ? text.size() : comma) - start);
    auto v = parse_number(part, "q");
    if (!v.ok() || *v < 0 || *v > 100) {
      return Status::invalid_argument("'q' must be a comma-separated list of percentiles from 0 to 100", "q");
    }
    out.push_back(*v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > 32) return Status::invalid_argument("'q' takes at most 32 percentiles", "q");
  return out;
}

std::optional<db::InferenceField> inference_field(std::string_view name) {
  if (name.empty()) return db::InferenceField::kLatency;
  return db::inference_field_from(name);
}

// One side of a comparison or the subject of a percentile query, as JSON names it:
// {"kernel":…, "variant", "device", "stream", "tags"} or {"model":…, "version", "field"}
// or {"command_queue":…, "device"}.
struct Selector {
  enum class Kind { kKernel, kModel, kCommandQueue, kSeries } kind = Kind::kKernel;
  db::KernelSelector kernel;
  db::InferenceSelector model;
  db::InferenceField field = db::InferenceField::kLatency;
  std::string field_name = "latency_ms";
  std::string queue, device, series;

  json to_json() const {
    json j;
    switch (kind) {
      case Kind::kKernel:
        j["kernel"] = kernel.name;
        if (!kernel.variant.empty()) j["variant"] = kernel.variant;
        if (!kernel.device.empty()) j["device"] = kernel.device;
        if (!kernel.stream.empty()) j["stream"] = kernel.stream;
        if (!kernel.tags.empty()) j["tags"] = labels_to_json(kernel.tags);
        break;
      case Kind::kModel:
        j["model"] = model.model;
        if (!model.version.empty()) j["version"] = model.version;
        j["field"] = field_name;
        break;
      case Kind::kCommandQueue:
        j["command_queue"] = queue;
        if (!device.empty()) j["device"] = device;
        break;
      case Kind::kSeries: j["series"] = series; break;
    }
    return j;
  }
};

// From a JSON object (A/B definitions). `where` prefixes field names in errors ("a", "variants[2]").
Result<Selector> selector_from_json(const json& j, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& message) {
    return Status::invalid_argument(where + "." + field + ": " + message, where + "." + field);
  };
  if (!j.is_object()) return Status::invalid_argument(where + ": must be an object", where);
  auto text = [&](const char* name, std::string& out) -> Status {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return Status();
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) return bad(name, "must be a non-empty string");
    out = it->get<std::string>();
    return Status();
  };
  Selector s;
  const bool has_kernel = j.contains("kernel"), has_model = j.contains("model");
  if (has_kernel == has_model) return Status::invalid_argument(where + ": give exactly one of kernel or model", where);
  if (has_kernel) {
    s.kind = Selector::Kind::kKernel;
    for (auto [name, out] : {std::pair{"kernel", &s.kernel.name}, std::pair{"variant", &s.kernel.variant},
                             std::pair{"device", &s.kernel.device}, std::pair{"stream", &s.kernel.stream}}) {
      if (Status st = text(name, *out); !st.ok()) return st;
    }
    if (auto it = j.find("tags"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) return bad("tags", "must be an object of strings");
      for (const auto& [k, v] : it->items()) {
        if (!v.is_string()) return bad("tags." + k, "must be a string");
        s.kernel.tags.emplace_back(k, v.get<std::string>());
      }
      sort_labels(s.kernel.tags);
    }
  } else {
    s.kind = Selector::Kind::kModel;
    if (Status st = text("model", s.model.model); !st.ok()) return st;
    if (Status st = text("version", s.model.version); !st.ok()) return st;
    std::string field;
    if (Status st = text("field", field); !st.ok()) return st;
    auto f = inference_field(field);
    if (!f) return bad("field", "must be latency_ms, ttft_ms, tpot_ms, queue_ms or compute_ms");
    s.field = *f;
    if (!field.empty()) s.field_name = field;
  }
  return s;
}

// What a selector names in a window: the raw values still kept (in its unit: ms for events,
// a series' own unit) and, where retention rolled older ones up, the merged histogram tiers.
struct Distribution {
  std::vector<double> raw;
  std::optional<db::RollupAnswer> rolled;
  std::string unit = "ms";
};

Result<Distribution> load_distribution(const ApiContext& ctx, const Selector& s, const db::TimeRange& range,
                                       bool with_rollups) {
  Distribution d;
  auto take = [&](Result<std::vector<double>> raw, auto rollup) -> Status {
    if (!raw.ok()) return raw.status();
    d.raw = std::move(*raw);
    if (!with_rollups) return Status();
    Result<std::optional<db::RollupAnswer>> r = rollup();
    if (!r.ok()) return r.status();
    d.rolled = std::move(*r);
    return Status();
  };
  Status st;
  switch (s.kind) {
    case Selector::Kind::kKernel:
      st = take(ctx.events->kernel_durations_ms(s.kernel, range), [&] { return ctx.events->kernel_rollup(s.kernel, range); });
      break;
    case Selector::Kind::kModel:
      st = take(ctx.events->inference_values_ms(s.model, s.field, range),
                [&] { return ctx.events->inference_rollup(s.model, s.field, range); });
      break;
    case Selector::Kind::kCommandQueue:
      st = take(ctx.events->command_buffer_latencies_ms(s.queue, s.device, range),
                [&] { return ctx.events->command_buffer_rollup(s.queue, s.device, range); });
      break;
    case Selector::Kind::kSeries: {
      db::HistoryQuery q;
      std::string_view text = s.series;
      if (auto brace = text.find('{'); brace != std::string_view::npos && text.back() == '}') {
        auto labels = parse_labels(text.substr(brace + 1, text.size() - brace - 2));
        if (!labels.ok()) return Status::invalid_argument("'series' has malformed labels", "series");
        q.matchers = std::move(*labels);
        text = text.substr(0, brace);
      }
      q.name = std::string(text);
      q.from_ns = range.from_ns;
      q.to_ns = std::min(range.to_ns, now_ns());
      q.max_points = SIZE_MAX;  // raw samples: percentiles over buckets would be wrong
      auto data = ctx.history->query(q);
      if (!data.ok()) return data.status();
      std::vector<std::int64_t> ids;
      for (const auto& series : *data) {
        d.unit = series.info.family.unit;
        if (series.db_id) ids.push_back(*series.db_id);
      }
      if (with_rollups && !ids.empty()) {
        auto r = ctx.events->series_rollup(ids, range);
        if (!r.ok()) return r.status();
        d.rolled = std::move(*r);
      }
      for (const auto& series : *data) {
        for (const Sample& p : series.samples) {
          // Samples memory still holds from before the retention cutoff are in the rollups.
          if (!d.rolled || p.ts_ns >= d.rolled->raw_before_ns) d.raw.push_back(p.value);
        }
      }
      break;
    }
  }
  if (!st.ok()) return st;
  return d;
}

Result<std::vector<double>> load_values(const ApiContext& ctx, const Selector& s, const db::TimeRange& range) {
  auto d = load_distribution(ctx, s, range, /*with_rollups=*/false);
  if (!d.ok()) return d.status();
  return std::move(d->raw);
}

}  // namespace

HttpResponse Api::percentiles(const HttpRequest& request) const {
  Selector sel;
  int given = 0;
  if (std::string v = param(request, "kernel"); !v.empty()) {
    ++given;
    sel.kind = Selector::Kind::kKernel;
    sel.kernel.name = v;
    sel.kernel.variant = param(request, "variant");
    sel.kernel.device = param(request, "device");
    sel.kernel.stream = param(request, "stream");
  }
  if (std::string v = param(request, "model"); !v.empty()) {
    ++given;
    sel.kind = Selector::Kind::kModel;
    sel.model.model = v;
    sel.model.version = param(request, "version");
    auto f = inference_field(param(request, "field"));
    if (!f) return error_response(400, "invalid_argument", "'field' must be latency_ms, ttft_ms, tpot_ms, queue_ms or compute_ms", "field");
    sel.field = *f;
    if (!param(request, "field").empty()) sel.field_name = param(request, "field");
  }
  if (std::string v = param(request, "command_queue"); !v.empty()) {
    ++given;
    sel.kind = Selector::Kind::kCommandQueue;
    sel.queue = v;
    sel.device = param(request, "device");
  }
  if (std::string v = param(request, "series"); !v.empty()) {
    ++given;
    sel.kind = Selector::Kind::kSeries;
    sel.series = v;
  }
  if (given != 1) {
    return error_response(400, "invalid_argument", "give exactly one of kernel, model, command_queue or series", "kernel");
  }
  if (sel.kind != Selector::Kind::kModel && !param(request, "field").empty()) {
    return error_response(400, "invalid_argument", "'field' applies to model only", "field");
  }
  auto qs = parse_quantiles(param(request, "q"));
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

  auto dist = load_distribution(ctx_, sel, {w->from_ns, w->to_ns}, /*with_rollups=*/true);
  if (!dist.ok()) return status_response(dist.status());
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
  out["warnings"] = warnings;
  return json_response(200, out);
}

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
      auto s = selector_from_json(*it, side);
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
      auto s = selector_from_json(v[i], "variants[" + std::to_string(i) + "]");
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

}  // namespace

// The current result of a stored definition.
Result<json> evaluate_abtest(const ApiContext& ctx, const json& definition) {
  auto d = parse_definition(definition, now_ns());
  if (!d.ok()) return d.status();
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
  if (!d->multi) {
    an::AbResult r = an::compare(samples[0], samples[1], d->options);
    out.update(result_json(r));
    return out;
  }
  // A/B/n: every variant against the first, p-values adjusted together (Benjamini–Hochberg).
  std::vector<an::AbResult> results;
  std::vector<double> p;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    results.push_back(an::compare(samples[0], samples[i], d->options));
    p.push_back(results.back().mann_whitney.p_value);
  }
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

namespace {

}  // namespace

void Api::create_abtest(const HttpRequest& request, std::function<void(HttpResponse)> done) const {
  if (!request.content_type.empty() && request.content_type != "application/json") {
    return done(error_response(415, "unsupported_media_type", "Content-Type must be application/json"));
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
