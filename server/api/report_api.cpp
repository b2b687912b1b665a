// GET /api/v1/report: the analysis document of a window plus what a report reader wants at
// the top — a summary (GPU utilization and memory bandwidth average and peak, kernel time),
// latency percentiles per model against the SLA, chart series, and every A/B test's result —
// in the format asked for (json, md, html, terminal), or one table as CSV.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "engine/analysis/stats.hpp"
#include "engine/base/cancellation.hpp"
#include "server/wire/event_codec.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"
#include "server/http/compression.hpp"
#include "server/api/report_format.hpp"
#include "server/api/version.hpp"
#include "web/embedded_assets.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

constexpr std::size_t kChartPoints = 600;
// A/B tests a report lists at most (newest first), and the time it spends evaluating them.
constexpr std::size_t kReportAbTests = 200;
constexpr std::chrono::seconds kReportAbBudget{3};

// Average over GPUs of each GPU's average, and the highest peak of any: the figures the
// summary shows for a family with one series per GPU.
json gauge_summary(const json& gauges, std::string_view name, const Labels& must = {}) {
  double sum = 0, peak = -INFINITY;
  std::size_t n = 0;
  json per = json::array();
  for (const json& g : gauges) {
    if (g["name"] != name) continue;
    bool match = true;
    for (const auto& [k, v] : must) match = match && g["labels"].value(k, "") == v;
    if (!match || !g["avg"].is_number() || !g["peak"].is_number()) continue;
    if (!std::isfinite(g["avg"].get<double>()) || !std::isfinite(g["peak"].get<double>())) continue;
    sum += g["avg"].get<double>();
    peak = std::max(peak, g["peak"].get<double>());
    ++n;
    per.push_back({{"labels", g["labels"]}, {"avg", g["avg"]}, {"peak", g["peak"]}});
  }
  if (n == 0) return nullptr;
  return {{"avg", sum / static_cast<double>(n)}, {"peak", peak}, {"series", per}};
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

Result<json> Api::report_json(const HttpRequest& request) const {
  HttpRequest r = request;
  if (param(r, "window").empty() && param(r, "from").empty() && param(r, "to").empty() && param(r, "run").empty()) {
    r.query["window"] = kDefaultReportWindow;
  }
  std::vector<an::ScrapedServing> scraped;
  auto doc_result = analysis_json(r, &scraped);
  if (!doc_result.ok()) return doc_result.status();
  json doc = std::move(*doc_result);
  const TimestampNs now = doc["generated_ns"].get<TimestampNs>();
  auto w = window_or(r, kDefaultReportWindow, now);
  if (!w.ok()) return w.status();
  const db::TimeRange range{w->all ? 0 : w->from_ns, std::min(w->to_ns, now)};

  doc["report"] = {{"title", "perfscope report"}, {"host", hostname()}, {"version", version()}};
  const json& gauges = doc["gauges"];
  json summary;
  // A figure without data is null, and `missing` says why (renderings print "—").
  json missing = json::object();
  for (auto [key, series] : {std::pair{"gpu_utilization", metric_names::kGpuUtilization},
                             std::pair{"memory_bandwidth", metric_names::kGpuDramBandwidth},
                             std::pair{"gpu_power", metric_names::kGpuPower},
                             std::pair{"gpu_temperature", metric_names::kGpuTemperature},
                             std::pair{"gpu_memory_used", metric_names::kGpuMemoryUsed},
                             std::pair{"host_cpu_utilization", metric_names::kHostCpu}}) {
    const Labels must = std::string_view(key) == "host_cpu_utilization" ? Labels{{"cpu", "total"}} : Labels{};
    summary[key] = gauge_summary(gauges, series, must);
    if (summary[key].is_null()) missing[key] = std::string("no samples of ") + series + " in the window";
  }
  summary["missing"] = missing;
  // Every kernel, not only the top ten the document lists.
  std::uint64_t executions = 0;
  auto scope = scope_of(r);
  if (!scope.ok()) return scope.status();
  auto all = ctx_.events->kernel_summaries(range, *scope);
  if (!all.ok()) return all.status();
  for (const auto& k : *all) executions += k.count;
  const double kernel_total = doc["kernels"]["total_ms"].get<double>();
  summary["kernel_time"] = {{"total_ms", kernel_total}, {"executions", executions},
                            {"avg_ms", executions ? json(kernel_total / static_cast<double>(executions)) : json(nullptr)}};
  doc["summary"] = summary;

  // Latency percentiles per model, exact, with the SLA when one is given.
  std::optional<double> sla;
  if (doc["slo"].contains("latency_ms")) sla = doc["slo"]["latency_ms"].get<double>();
  json latency = json::array();
  std::set<std::string> models;
  for (const json& m : doc["inference"]) models.insert(m["model"].get<std::string>());
  for (const std::string& model : models) {
    const db::InferenceSelector selector{model, "", scope->wanted_tags()};
    auto values = ctx_.events->inference_values_ms(selector, db::InferenceField::kLatency, range);
    if (!values.ok()) return values.status();
    if (values->empty()) continue;
    const an::Moments mo = an::moments(*values);
    const double qs[] = {50, 90, 95, 99, 99.9};
    json row = {{"model", model}, {"count", values->size()}, {"mean_ms", mo.mean}, {"max_ms", mo.max}};
    if (sla) {
      const an::SlaCompliance c = an::sla_compliance(*values, *sla);
      row["sla"] = {{"target_ms", c.target}, {"violations", c.violations}, {"compliance_rate", c.compliance_rate}};
    }
    auto p = an::percentiles(*values, qs, an::PercentileConvention::kNearestRank);
    json ps = json::object();
    json warnings = json::array();
    for (std::size_t i = 0; i < p.size(); ++i) {
      ps[an::percentile_key(qs[i])] = p[i];
      const std::size_t need = an::min_samples_for_percentile(qs[i]);
      if (values->size() < need) {
        warnings.push_back(an::percentile_key(qs[i]) + " rests on " + std::to_string(values->size()) +
                           " samples; " + std::to_string(need) + " are needed for it to be trusted");
      }
    }
    row["percentiles_ms"] = ps;
    row["warnings"] = warnings;
    latency.push_back(std::move(row));
  }
  // Scraped servers' models (the document's own reading of them): from their histograms'
  // buckets over the window, bounds given.
  for (const an::ScrapedServing& m : scraped) {
    if (auto row = scraped_latency_row(m, sla)) latency.push_back(std::move(*row));
  }
  doc["latency"] = latency;

  // Chart series: the key gauges, downsampled to at most kChartPoints points each.
  json charts = json::array();
  for (const char* family : {metric_names::kGpuUtilization, metric_names::kGpuDramBandwidth, metric_names::kGpuMemoryUsed,
                             metric_names::kGpuPower, metric_names::kGpuTemperature, metric_names::kHostCpu,
                             metric_names::kHostMemoryUsed}) {
    db::HistoryQuery q;
    q.name = family;
    if (std::string_view(family) == metric_names::kHostCpu) q.matchers = {{"cpu", "total"}};
    q.from_ns = range.from_ns;
    q.to_ns = range.to_ns;
    q.max_points = kChartPoints;
    auto data = ctx_.history->query(q);
    if (!data.ok()) return data.status();
    for (const auto& d : *data) {
      json points = json::array();
      if (d.downsampled) {
        for (const Bucket& b : d.buckets) points.push_back({b.start_ns / 1'000'000, b.avg()});
      } else {
        for (const Sample& s : d.samples) points.push_back({s.ts_ns / 1'000'000, s.value});
      }
      if (points.empty()) continue;
      charts.push_back({{"series", d.info.key.canonical()}, {"name", d.info.key.name},
                        {"labels", labels_to_json(d.info.key.labels)}, {"unit", d.info.family.unit},
                        {"columns", {"ts_ms", "value"}}, {"points", points}});
    }
  }
  doc["charts"] = charts;

  // A/B tests: their current results, not just links — newest first, each evaluated afresh
  // until the report's share of time for them is spent (one evaluation over hundreds of
  // thousands of samples takes most of a second; dozens would hold a worker for a minute).
  // The rest are listed with their definitions and say where their result is.
  json ab = json::array();
  if (ctx_.abtests) {
    auto tests = ctx_.abtests->list(kReportAbTests);
    if (!tests.ok()) return tests.status();
    const auto deadline = std::chrono::steady_clock::now() + kReportAbBudget;
    for (const auto& t : *tests) {
      json definition = json::parse(t.definition, nullptr, false);
      json e;
      if (std::chrono::steady_clock::now() < deadline) {
        auto evaluated = evaluate_abtest(sources_, definition);
        if (cancellation_requested()) return cancelled_status();
        if (evaluated.ok()) {
          e = std::move(*evaluated);
        } else {
          e = {{"definition", definition}, {"not_evaluated", evaluated.status().message()}};
        }
      } else {
        e = {{"definition", definition},
             {"not_evaluated", "the report's " + std::to_string(kReportAbBudget.count()) +
                                   " s for A/B tests was spent; GET /api/v1/abtests/" + std::to_string(t.id) +
                                   " evaluates it"}};
      }
      if (!e.contains("window")) e["window"] = definition.is_object() ? definition.value("window", json()) : json();
      e["id"] = t.id;
      e["name"] = t.name;
      ab.push_back(std::move(e));
    }
  }
  doc["abtests"] = ab;

  // compare=a,b: run against run, as GET /api/v1/runs/compare answers it.
  if (std::string pair = param(r, "compare"); !pair.empty()) {
    const std::size_t comma = pair.find(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == pair.size()) {
      return Status::invalid_argument("'compare' names two runs: compare=a,b", "compare");
    }
    auto c = compare_runs_json(pair.substr(0, comma), pair.substr(comma + 1), r);
    if (!c.ok()) return c.status().with_field("compare");
    doc["compare"] = std::move(*c);
  }
  return doc;
}

HttpResponse Api::report(const HttpRequest& request) const {
  const std::string format = param(request, "format").empty() ? "json" : param(request, "format");
  if (format == "csv") return csv_table(request);
  if (format != "json" && format != "md" && format != "html" && format != "terminal") {
    return error_response(400, "invalid_argument", "'format' must be json, csv, md, html or terminal", "format");
  }
  HtmlReportOptions html;
  if (format == "html") {
    const std::string refresh = param(request, "auto_refresh");
    if (!refresh.empty() && refresh != "true" && refresh != "false") {
      return error_response(400, "invalid_argument", "'auto_refresh' must be true or false", "auto_refresh");
    }
    html.auto_refresh = refresh == "true";
    auto interval = size_param(request, "refresh_interval_ms", 5000, 1000, 3'600'000);
    if (!interval.ok()) return status_response(interval.status());
    html.refresh_interval_ms = *interval;
  }
  auto doc = report_json(request);
  if (!doc.ok()) return status_response(doc.status());
  HttpResponse out;
  if (format == "json") return json_response(200, *doc);
  if (format == "md") {
    out.content_type = "text/markdown; charset=utf-8";
    out.body = render_markdown(*doc);
  } else if (format == "terminal") {
    out.content_type = "text/plain; charset=utf-8";
    out.body = render_terminal(*doc, false);
  } else {
    out.content_type = "text/html; charset=utf-8";
    out.body = render_html(*doc, html);
    // Self-contained: its own inline scripts and styles run; it reaches nothing else, so even a
    // script smuggled into it could send nothing anywhere.
    out.headers.emplace_back("Content-Security-Policy",
                             "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                             "img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  }
  return out;
}

}  // namespace perfscope::server
