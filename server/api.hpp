// Api: the REST handlers — health, info, series and their history, event ingest, and the
// kernel, memory and inference views, percentiles and A/B tests (analysis_api.cpp). Request → response functions over the engine and db;
// no sockets. They may block on SQLite, so the HTTP session calls them on a worker thread.
// Ingest completes asynchronously, after the database commit.
//
// Thread-safety: handle() and handle_async() are safe from any thread.
#pragma once

#include <chrono>
#include <functional>

#include <nlohmann/json.hpp>

#include "db/abtest_store.hpp"
#include "server/access.hpp"
#include "db/event_reader.hpp"
#include "db/series_history.hpp"
#include "db/writer.hpp"
#include "engine/anomaly_monitor.hpp"
#include "engine/event_metrics.hpp"
#include "engine/gpu_alerts.hpp"
#include "engine/gpu_collector.hpp"
#include "engine/memory_tracker.hpp"
#include "engine/sampler.hpp"
#include "server/api_types.hpp"
#include "server/config.hpp"

namespace perfscope::server {

struct ApiContext {
  const AppConfig* config = nullptr;
  const Sampler* sampler = nullptr;          // null when no collector is enabled
  const db::SeriesHistory* history = nullptr;
  const db::EventReader* events = nullptr;
  const MemoryTracker* memory = nullptr;
  const db::AbTestReader* abtests = nullptr;  // null: the A/B endpoints answer 503
  const AnomalyMonitor* anomalies = nullptr;   // null: no sampler, no anomalies
  const GpuCollector* gpus = nullptr;          // null: the GPU collector is disabled
  const GpuAlerts* gpu_alerts = nullptr;
  const SeriesStore* store = nullptr;         // latest readings for /metrics
  const EventMetrics* event_metrics = nullptr;  // histograms and counters for /metrics
  const AccessControl* access = nullptr;  // for /api/v1/info
  db::Writer* writer = nullptr;  // null: ingest answers 503
  std::function<void()> on_events_committed;  // after every successful ingest commit
  // Live figures of the running server (database writer, WebSocket clients) for /api/v1/info.
  std::function<nlohmann::json()> runtime_status;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  TimestampNs started_ns = now_ns();
};

class Api {
 public:
  explicit Api(ApiContext context) : ctx_(std::move(context)) {}

  // True for paths this class answers (the rest are static assets or 404).
  static bool owns(const std::string& path);
  // Answers through `done`, which may run on another thread (the database writer's).
  void handle_async(ApiRequest request, std::function<void(ApiResponse)> done) const;
  // Synchronous answer for every endpoint but ingest.
  ApiResponse handle(const ApiRequest& request) const;

 private:
  void ingest(const ApiRequest& request, std::function<void(ApiResponse)> done) const;
  ApiResponse kernels(const ApiRequest& request) const;
  ApiResponse kernel_records(const ApiRequest& request, const std::string& name) const;
  ApiResponse memory(const ApiRequest& request) const;
  ApiResponse inference(const ApiRequest& request) const;
  ApiResponse info() const;
  ApiResponse series() const;
  ApiResponse devices() const;
  ApiResponse series_query(const ApiRequest& request) const;
  // analysis_api.cpp
  ApiResponse percentiles(const ApiRequest& request) const;
  void create_abtest(const ApiRequest& request, std::function<void(ApiResponse)> done) const;
  ApiResponse abtests() const;
  ApiResponse abtest(const std::string& id) const;
  // analysis_document.cpp
  ApiResponse analysis(const ApiRequest& request) const;
  Result<nlohmann::json> analysis_json(const ApiRequest& request) const;
  ApiResponse regressions(const ApiRequest& request) const;
  ApiResponse anomalies(const ApiRequest& request) const;
  ApiResponse alerts(const ApiRequest& request) const;
  // report_api.cpp
  ApiResponse report(const ApiRequest& request) const;
  Result<nlohmann::json> report_json(const ApiRequest& request) const;
  // csv_export.cpp
  ApiResponse csv_table(const ApiRequest& request) const;
  // trace_api.cpp
  ApiResponse trace(const ApiRequest& request) const;
  // metrics_api.cpp
  ApiResponse metrics(const ApiRequest& request) const;

  ApiContext ctx_;
};

// An A/B test definition (as stored) evaluated on the data in its window now.
Result<nlohmann::json> evaluate_abtest(const ApiContext& ctx, const nlohmann::json& definition);
nlohmann::json config_to_json(const AppConfig& config);
nlohmann::json labels_to_json(const Labels& labels);
unsigned http_status_for(const Status& status);

}  // namespace perfscope::server
