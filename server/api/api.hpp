// Api: the REST handlers, as the transport's RequestHandler — the routes (routes.cpp), health
// and info (api.cpp), event ingest, the live views (series, devices, alerts, /metrics) and, in
// QueryEndpoints, every read of stored data: events, percentiles, A/B results, the analysis
// document, reports, CSV, the trace and the timeline (one *_api.cpp file each, named in the
// classes below). Request → response functions over the engine and db; no sockets. They may
// block on SQLite, so the HTTP session calls them on a worker thread. Ingest completes
// asynchronously, after the database commit.
//
// Thread-safety: handle() and handle_async() are safe from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "db/abtest_store.hpp"
#include "engine/analysis/run_compare.hpp"
#include "engine/analysis/scraped_serving.hpp"
#include "server/http/access.hpp"
#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "db/writer.hpp"
#include "engine/analysis/anomaly_monitor.hpp"
#include "engine/events/event_metrics.hpp"
#include "engine/analysis/gpu_alerts.hpp"
#include "engine/collectors/gpu_collector.hpp"
#include "engine/events/memory_tracker.hpp"
#include "engine/series/sampler.hpp"
#include "server/http/message.hpp"
#include "server/http/request_handler.hpp"
#include "server/api/app_config.hpp"
#include "server/api/route_table.hpp"
#include "server/service/ab_tests.hpp"
#include "server/service/analysis_service.hpp"
#include "server/service/runs.hpp"
#include "server/service/scoped_reads.hpp"

namespace perfscope::server {

// A collector of the server's table (server/cli/collectors.hpp) as /api/v1/info lists it.
struct CollectorSwitch {
  std::string name;
  std::string option;  // the serve option that turns it on or off
  bool enabled = false;
};

struct ApiContext {
  const AppConfig* config = nullptr;
  std::vector<CollectorSwitch> collectors;  // every collector the server knows, on or off
  const Sampler* sampler = nullptr;          // null when no collector is enabled
  const db::SeriesHistory* history = nullptr;
  const db::EventReader* events = nullptr;
  const MemoryTracker* memory = nullptr;
  const db::AbTestReader* abtests = nullptr;  // null: the A/B endpoints answer 503
  const AnomalyMonitor* anomalies = nullptr;   // null: no sampler, no anomalies
  const GpuCollector* gpus = nullptr;          // null: the GPU collector is disabled
  const ProcessTracker* processes = nullptr;   // null: no GPU collector, only stored processes
  const PodDirectory* pods = nullptr;          // null: the kubelet is not asked (--pod-resources-socket)
  const GpuAlerts* gpu_alerts = nullptr;
  const SeriesStore* store = nullptr;         // latest readings for /metrics
  const EventMetrics* event_metrics = nullptr;  // histograms and counters for /metrics
  const AccessControl* access = nullptr;  // for /api/v1/info
  db::Writer* writer = nullptr;  // null: ingest answers 503
  CardinalityGuard* cardinality = nullptr;  // null: ingest caps nothing
  std::function<void()> on_events_committed;  // after every successful ingest commit
  // Live figures of the running server (database writer, WebSocket clients) for /api/v1/info.
  std::function<nlohmann::json()> runtime_status;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  TimestampNs started_ns = now_ns();
};

// A report as the command line asks for one (`perfscope report --db`, --profile-output): the
// same document and renderings GET /api/v1/report gives, without HTTP.
struct ReportQuery {
  service::AnalysisQuery analysis;  // scope, window, SLO and now
  std::string format = "json";      // json, md, html, terminal or csv
  bool color = false;               // terminal: ANSI colours
  std::string table;                // csv: samples, kernels, inference, memory or abtests
  bool gzip = false;                // csv: gzip-compressed
};

// One CSV table's rows over a range and scope (`series`: the samples table's family glob).
struct CsvQuery {
  std::string table;
  db::TimeRange range;
  db::EventScope scope;
  std::string series;
};

// What the endpoints over stored data read: the service's sources and where large answers
// spool (the data directory).
struct QueryContext {
  service::Sources sources;
  std::string spool_dir;
};

// A stored A/B test as a report lists it: evaluated now, unless the report's time for A/B tests
// was spent or its definition no longer reads.
struct ListedAbTest {
  db::AbTestRecord record;
  nlohmann::json stored;                            // the definition as stored
  std::optional<service::AbDefinition> definition;  // read, when evaluated
  std::optional<service::AbEvaluation> evaluation;
  std::string not_evaluated;  // why there is no evaluation
};

// The endpoints over stored data — events, runs, processes, percentiles, A/B results, the
// analysis, reports, CSV, the trace and the timeline: they parse a request, ask the service
// and render its answer. They receive the readers alone: no writer, sampler or live collector
// but those the service's sources name.
class QueryEndpoints {
 public:
  explicit QueryEndpoints(QueryContext context);

  // The report `query` asks for, rendered; errors as the endpoint gives them.
  Result<std::string> report_text(const ReportQuery& query) const;
  // events_api.cpp
  // The memory tracker a scope reads (server/service/scoped_reads.hpp).
  Result<service::ScopedMemory> scoped_memory(const db::EventScope& scope) const;
  HttpResponse kernels(const HttpRequest& request) const;
  HttpResponse kernel_records(const HttpRequest& request, const std::string& name) const;
  HttpResponse memory(const HttpRequest& request) const;
  HttpResponse inference(const HttpRequest& request) const;
  HttpResponse operators(const HttpRequest& request) const;
  // runs_api.cpp
  HttpResponse runs(const HttpRequest& request) const;
  HttpResponse run(const std::string& name) const;
  HttpResponse compare_runs(const HttpRequest& request) const;
  // Run a against run b; `request` gives alpha and min_effect.
  Result<nlohmann::json> compare_runs_json(const std::string& a, const std::string& b, const HttpRequest& request) const;
  // A run as the runs endpoints list it.
  static nlohmann::json run_json(const service::RunFigures& figures);
  // The document part that says how a duty-cycled run was sampled.
  static nlohmann::json sampling_json(const RunEvent& run, const analysis::TracedWindows& traced);
  // percentiles_api.cpp
  HttpResponse percentiles(const HttpRequest& request) const;
  // processes_api.cpp
  HttpResponse processes(const HttpRequest& request) const;
  HttpResponse process(const HttpRequest& request, const std::string& key) const;
  // abtest_api.cpp
  HttpResponse abtests() const;
  HttpResponse abtest(const std::string& id) const;
  // analysis_api.cpp
  HttpResponse analysis(const HttpRequest& request) const;
  Result<nlohmann::json> analysis_json(const HttpRequest& request) const;
  // The scope, window, SLO and leak age a request asks the analysis for.
  Result<service::AnalysisQuery> analysis_query(const HttpRequest& request) const;
  static nlohmann::json analysis_document_json(const service::AnalysisDocument& doc);
  HttpResponse regressions(const HttpRequest& request) const;
  // report_api.cpp
  HttpResponse report(const HttpRequest& request) const;
  Result<nlohmann::json> report_json(const HttpRequest& request) const;
  // The report's document for a query (what report_json adds to the request: nothing but the
  // default window and compare=).
  Result<nlohmann::json> report_document(const service::AnalysisQuery& query) const;
  // Every A/B test's current result, newest first, within the report's time for them; and as
  // the report's JSON.
  Result<std::vector<ListedAbTest>> report_abtests() const;
  Result<nlohmann::json> report_abtests_json() const;
  // csv_export.cpp
  HttpResponse csv_table(const HttpRequest& request) const;
  Status write_csv_table(const CsvQuery& query, SpooledBody& body) const;
  // trace_api.cpp
  HttpResponse trace(const HttpRequest& request) const;
  // timeline_api.cpp
  HttpResponse timeline(const HttpRequest& request) const;
  // collectives_api.cpp
  HttpResponse collectives(const HttpRequest& request) const;

 private:
  service::Sources sources_;
  std::string spool_dir_;
  service::AnalysisService analysis_;
};

class Api final : public RequestHandler {
 public:
  // The report `query` asks for, rendered (QueryEndpoints::report_text).
  Result<std::string> report_text(const ReportQuery& query) const { return query_.report_text(query); }

  explicit Api(ApiContext context);

  // /healthz, /metrics and /api/…: ours; /healthz inline, the rest on the worker pool.
  Dispatch dispatch(const std::string& path) const override;
  // Answers through `done`, which may run on another thread (the database writer's).
  void handle_async(HttpRequest request, std::function<void(HttpResponse)> done) const override;
  // Synchronous answer for every endpoint but ingest.
  HttpResponse handle(const HttpRequest& request) const override;

 private:
  // Every endpoint: method, path, where it is answered and by which member (routes.cpp).
  struct Endpoint;
  static const RouteTable<Endpoint>& routes();
  // The synchronous answer of a request to what it found in the table (405, 404, run= checked).
  HttpResponse answer(const HttpRequest& request, const RouteTable<Endpoint>::Match& found) const;
  // The 404 for a run= that names no run (the same on every endpoint); nullopt otherwise.
  std::optional<HttpResponse> unknown_run(const HttpRequest& request) const;
  HttpResponse info() const;
  // ingest_api.cpp
  void ingest(const HttpRequest& request, std::function<void(HttpResponse)> done) const;
  // series_api.cpp
  HttpResponse series() const;
  HttpResponse devices() const;
  HttpResponse series_query(const HttpRequest& request) const;
  // abtest_api.cpp
  void create_abtest(const HttpRequest& request, std::function<void(HttpResponse)> done) const;
  // analysis_api.cpp: the live engine's findings
  HttpResponse anomalies(const HttpRequest& request) const;
  HttpResponse alerts(const HttpRequest& request) const;
  // metrics_api.cpp
  HttpResponse metrics(const HttpRequest& request) const;

  ApiContext ctx_;
  QueryEndpoints query_;  // every read of stored data, through the service
};

// An A/B test definition (as posted or stored) read, naming the field it gets wrong.
Result<service::AbDefinition> parse_abtest_definition(const nlohmann::json& body, TimestampNs now);
// An A/B test's evaluation as GET /api/v1/abtests/{id} answers it.
nlohmann::json abtest_evaluation_json(const service::AbDefinition& definition, const service::AbEvaluation& evaluation);
nlohmann::json config_to_json(const AppConfig& config);
nlohmann::json memory_counters_json(const MemoryCounters& counters);
nlohmann::json live_allocation_json(const LiveAllocation& allocation);
unsigned http_status_for(const Status& status);

}  // namespace perfscope::server
