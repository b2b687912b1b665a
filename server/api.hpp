// Api: the REST handlers (/healthz, /api/v1/info, /api/v1/series, /api/v1/series/query).
// Pure request → response functions over the engine and db; no sockets. handle() may block
// on SQLite, so the HTTP session calls it on a worker thread.
//
// Thread-safety: handle() is safe from any thread; everything it reads is thread-safe.
#pragma once

#include <chrono>
#include <functional>

#include <nlohmann/json.hpp>

#include "db/series_history.hpp"
#include "engine/sampler.hpp"
#include "server/api_types.hpp"
#include "server/config.hpp"

namespace perfscope::server {

struct ApiContext {
  const AppConfig* config = nullptr;
  const Sampler* sampler = nullptr;          // null when no collector is enabled
  const db::SeriesHistory* history = nullptr;
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
  ApiResponse handle(const ApiRequest& request) const;

 private:
  ApiResponse info() const;
  ApiResponse series() const;
  ApiResponse series_query(const ApiRequest& request) const;

  ApiContext ctx_;
};

nlohmann::json config_to_json(const AppConfig& config);
nlohmann::json labels_to_json(const Labels& labels);
unsigned http_status_for(const Status& status);

}  // namespace perfscope::server
