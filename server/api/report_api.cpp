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
#include "server/http/spooled_body.hpp"
#include "server/api/report_format.hpp"
#include "server/api/version.hpp"
#include "server/service/report.hpp"
#include "web/embedded_assets.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

// A/B tests a report lists at most (newest first), and the time it spends evaluating them.
constexpr std::size_t kReportAbTests = 200;
constexpr std::chrono::seconds kReportAbBudget{3};

json latency_json(const service::LatencyFigures& l, std::optional<double> sla) {
  json row = {{"model", l.model}, {"count", l.moments.n}, {"mean_ms", l.moments.mean}, {"max_ms", l.moments.max}};
  if (sla && l.sla) {
    row["sla"] = {{"target_ms", l.sla->target}, {"violations", l.sla->violations},
                  {"compliance_rate", l.sla->compliance_rate}};
  }
  json ps = json::object();
  for (std::size_t i = 0; i < std::size(service::kReportQuantiles); ++i) {
    ps[an::percentile_key(service::kReportQuantiles[i])] = l.percentiles[i];
  }
  row["percentiles_ms"] = ps;
  row["warnings"] = l.warnings;
  return row;
}

// The figures a report adds to the analysis document: summary, latency, charts.
void add_report_figures(json& doc, const service::ReportFigures& figures, const service::AnalysisDocument& analysis) {
  json summary;
  // A figure without data is null, and `missing` says why (renderings print "—").
  json missing = json::object();
  for (const service::SummaryFigure& f : figures.summary) {
    if (!f.figures) {
      summary[f.key] = nullptr;
      missing[f.key] = std::string("no samples of ") + f.family + " in the window";
      continue;
    }
    json per = json::array();
    for (const service::SeriesSummary* g : f.figures->series) {
      per.push_back({{"labels", labels_to_json(g->key.labels)}, {"avg", g->avg}, {"peak", g->peak}});
    }
    summary[f.key] = {{"avg", f.figures->avg}, {"peak", f.figures->peak}, {"series", per}};
  }
  summary["missing"] = missing;
  summary["kernel_time"] = {{"total_ms", analysis.kernel_total_ms}, {"executions", figures.kernel_executions},
                            {"avg_ms", figures.kernel_avg_ms ? json(*figures.kernel_avg_ms) : json(nullptr)}};
  doc["summary"] = summary;
  // Latency percentiles per model, exact, with the SLA when one is given; then scraped
  // servers' models, from their histograms' buckets over the window, bounds given.
  const std::optional<double> sla = analysis.slo.latency_ms;
  json latency = json::array();
  for (const service::LatencyFigures& l : figures.latency) latency.push_back(latency_json(l, sla));
  for (const service::ScrapedLatencyFigures& l : figures.scraped_latency) latency.push_back(scraped_latency_row(l));
  doc["latency"] = latency;
  json charts = json::array();
  for (const service::ChartSeries& c : figures.charts) {
    json points = json::array();
    for (const auto& [ms, v] : c.points) points.push_back({ms, v});
    charts.push_back({{"series", c.info.key.canonical()}, {"name", c.info.key.name},
                      {"labels", labels_to_json(c.info.key.labels)}, {"unit", c.info.family.unit},
                      {"columns", {"ts_ms", "value"}}, {"points", points}});
  }
  doc["charts"] = charts;
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

Result<std::vector<ListedAbTest>> QueryEndpoints::report_abtests() const {
  // Newest first, each evaluated afresh until the report's share of time for them is spent (one
  // evaluation over hundreds of thousands of samples takes most of a second; dozens would hold a
  // worker for a minute). The rest are listed with their definitions and say where their result is.
  std::vector<ListedAbTest> out;
  if (!sources_.abtests) return out;
  auto tests = sources_.abtests->list(kReportAbTests);
  if (!tests.ok()) return tests.status();
  const auto deadline = std::chrono::steady_clock::now() + kReportAbBudget;
  for (db::AbTestRecord& t : *tests) {
    ListedAbTest& l = out.emplace_back();
    l.stored = json::parse(t.definition, nullptr, false);
    l.record = std::move(t);
    if (std::chrono::steady_clock::now() >= deadline) {
      l.not_evaluated = "the report's " + std::to_string(kReportAbBudget.count()) + " s for A/B tests was spent; " +
                        "GET /api/v1/abtests/" + std::to_string(l.record.id) + " evaluates it";
      continue;
    }
    const TimestampNs now = now_ns();
    auto d = parse_abtest_definition(l.stored, now);
    auto e = d.ok() ? service::evaluate_abtest(sources_, *d, now) : Result<service::AbEvaluation>(d.status());
    if (cancellation_requested()) return cancelled_status();
    if (!e.ok()) {
      l.not_evaluated = e.status().message();
      continue;
    }
    l.definition = std::move(*d);
    l.evaluation = std::move(*e);
  }
  return out;
}

Result<json> QueryEndpoints::report_abtests_json() const {
  auto tests = report_abtests();
  if (!tests.ok()) return tests.status();
  json ab = json::array();
  for (const ListedAbTest& t : *tests) {
    json e = t.evaluation ? abtest_evaluation_json(*t.definition, *t.evaluation)
                          : json{{"definition", t.stored}, {"not_evaluated", t.not_evaluated}};
    if (!e.contains("window")) e["window"] = t.stored.is_object() ? t.stored.value("window", json()) : json();
    e["id"] = t.record.id;
    e["name"] = t.record.name;
    ab.push_back(std::move(e));
  }
  return ab;
}

Result<json> QueryEndpoints::report_document(const service::AnalysisQuery& query) const {
  auto analysis = analysis_.analyze(query);
  if (!analysis.ok()) return analysis.status();
  json doc = analysis_document_json(*analysis);
  const TimestampNs now = analysis->generated_ns;
  const db::TimeRange range{query.window.all ? 0 : query.window.from_ns, std::min(query.window.to_ns, now)};
  doc["report"] = {{"title", "perfscope report"}, {"host", hostname()}, {"version", version()}};
  auto figures = service::report_figures(sources_, *analysis, query.scope, range);
  if (!figures.ok()) return figures.status();
  add_report_figures(doc, *figures, *analysis);
  auto ab = report_abtests_json();
  if (!ab.ok()) return ab.status();
  doc["abtests"] = std::move(*ab);
  return doc;
}

Result<json> QueryEndpoints::report_json(const HttpRequest& request) const {
  HttpRequest r = request;
  if (param(r, "window").empty() && param(r, "from").empty() && param(r, "to").empty() && param(r, "run").empty()) {
    r.query["window"] = kDefaultReportWindow;
  }
  auto query = analysis_query(r);
  if (!query.ok()) return query.status();
  auto d = report_document(*query);
  if (!d.ok()) return d.status();
  json doc = std::move(*d);
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

Result<std::string> QueryEndpoints::report_text(const ReportQuery& query) const {
  if (query.format == "csv") {
    CsvQuery csv;
    csv.table = query.table;
    csv.scope = query.analysis.scope;
    const TimeWindow& w = query.analysis.window;
    csv.range = {w.all ? 0 : w.from_ns, std::min(w.to_ns, query.analysis.now)};
    auto body = spool_body(spool_dir_, query.gzip);
    if (!body.ok()) return body.status();
    if (Status s = write_csv_table(csv, **body); !s.ok()) return s;
    return (*body)->read_all();
  }
  auto doc = report_document(query.analysis);
  if (!doc.ok()) return doc.status();
  if (query.format == "md") return render_markdown(*doc);
  if (query.format == "terminal") return render_terminal(*doc, query.color);
  if (query.format == "html") return render_html(*doc, {});
  return doc->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse QueryEndpoints::report(const HttpRequest& request) const {
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
