#include "server/api.hpp"

#include <sqlite3.h>

#include <boost/version.hpp>

#include "db/schema.hpp"
#include "server/query_time.hpp"
#include "server/version.hpp"

namespace perfscope::server {

using nlohmann::json;

namespace {
constexpr std::int64_t kDefaultRangeNs = 15LL * 60 * 1'000'000'000;  // 15 minutes
constexpr std::size_t kDefaultMaxPoints = 1000;
constexpr std::size_t kMaxMaxPoints = 100000;
}  // namespace

unsigned http_status_for(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kIoError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

namespace {
ApiResponse status_response(const Status& s) {
  const char* code = s.code() == StatusCode::kInvalidArgument ? "invalid_argument"
                     : s.code() == StatusCode::kNotFound      ? "not_found"
                     : s.code() == StatusCode::kUnavailable   ? "unavailable"
                                                              : "internal";
  return error_response(http_status_for(s), code, s.message(), s.field());
}
}  // namespace

json labels_to_json(const Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

json config_to_json(const AppConfig& c) {
  return {
      {"listen", c.server.listen_host + ":" + std::to_string(c.server.listen_port)},
      {"data_dir", c.storage.data_dir},
      {"config_file", c.config_file},
      {"sampling_interval_ms", c.engine.sampling_interval.count()},
      {"history_buffer_size", c.engine.history_buffer_size},
      {"enable_host_collector", c.engine.enable_host_collector},
      {"io_threads", c.server.io_threads},
      {"worker_threads", c.server.worker_threads},
      {"max_body_bytes", c.server.max_body_bytes},
      {"max_header_bytes", c.server.max_header_bytes},
      {"request_timeout_ms", c.server.request_timeout.count()},
      {"ws_max_message_bytes", c.server.ws_max_message_bytes},
      {"ws_send_queue", c.server.ws_send_queue_max},
      {"db_commit_interval_ms", c.storage.commit_interval.count()},
      {"shutdown_timeout_ms", c.server.shutdown_timeout.count()},
  };
}

bool Api::owns(const std::string& path) { return path == "/healthz" || path.rfind("/api/", 0) == 0; }

ApiResponse Api::handle(const ApiRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    ApiResponse r = error_response(405, "method_not_allowed", request.method + " is not allowed on " + request.path);
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  if (request.path == "/healthz") return json_response(200, {{"status", "ok"}});
  if (request.path == "/api/v1/info") return info();
  if (request.path == "/api/v1/series") return series();
  if (request.path == "/api/v1/series/query") return series_query(request);
  return error_response(404, "not_found", "no such endpoint: " + request.path);
}

ApiResponse Api::info() const {
  auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx_.started).count();
  json collectors = json::array();
  if (ctx_.sampler) {
    for (const auto& c : ctx_.sampler->collectors()) {
      json sources = json::array();
      for (const SourceStatus& s : c->sources()) {
        sources.push_back({{"name", s.name}, {"available", s.available}, {"detail", s.detail}});
      }
      collectors.push_back({{"name", c->name()}, {"enabled", true}, {"sources", sources}});
    }
  }
  if (!ctx_.config->engine.enable_host_collector) {
    collectors.push_back({{"name", "host"}, {"enabled", false}, {"sources", json::array()}});
  }
  json body = {
      {"name", "perfscope"},
      {"version", version()},
      {"build", {{"type", build_type()}, {"compiler", compiler()}, {"cxx_standard", __cplusplus},
                 {"boost", BOOST_LIB_VERSION}, {"sqlite", sqlite3_libversion()}}},
      {"started_at_ns", ctx_.started_ns},
      {"uptime_seconds", uptime},
      {"sampler", {{"interval_ms", ctx_.config->engine.sampling_interval.count()},
                   {"passes", ctx_.sampler ? ctx_.sampler->passes() : 0}}},
      {"collectors", collectors},
      {"database", {{"path", ctx_.config->storage.database_path()}, {"schema_version", db::schema_version()}}},
      {"config", config_to_json(*ctx_.config)},
  };
  if (ctx_.runtime_status) body["runtime"] = ctx_.runtime_status();
  return json_response(200, body);
}

ApiResponse Api::series() const {
  auto list = ctx_.history->list();
  if (!list.ok()) return status_response(list.status());
  json out = json::array();
  for (const db::SeriesInfo& s : *list) {
    json latest = nullptr;
    if (s.latest) latest = {{"ts_ns", s.latest->ts_ns}, {"value", s.latest->value}};
    out.push_back({{"name", s.key.name}, {"labels", labels_to_json(s.key.labels)}, {"unit", s.family.unit},
                   {"type", to_string(s.family.type)}, {"help", s.family.help}, {"live", s.live},
                   {"latest", latest}});
  }
  return json_response(200, {{"series", out}});
}

ApiResponse Api::series_query(const ApiRequest& request) const {
  static const char* kReserved[] = {"name", "from", "to", "max_points"};
  db::HistoryQuery q;
  auto name = request.query.find("name");
  if (name == request.query.end() || name->second.empty()) {
    return error_response(400, "invalid_argument", "the 'name' parameter is required", "name");
  }
  q.name = name->second;

  TimestampNs now = now_ns();
  q.to_ns = now;
  if (auto it = request.query.find("to"); it != request.query.end()) {
    auto t = parse_time_ns(it->second, now, "to");
    if (!t.ok()) return status_response(t.status());
    q.to_ns = *t;
  }
  q.from_ns = q.to_ns - kDefaultRangeNs;
  if (auto it = request.query.find("from"); it != request.query.end()) {
    auto t = parse_time_ns(it->second, now, "from");
    if (!t.ok()) return status_response(t.status());
    q.from_ns = *t;
  }
  if (q.from_ns > q.to_ns) return error_response(400, "invalid_argument", "'from' is after 'to'", "from");

  q.max_points = kDefaultMaxPoints;
  if (auto it = request.query.find("max_points"); it != request.query.end()) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < 1 || v > kMaxMaxPoints) {
      return error_response(400, "invalid_argument",
                            "'max_points' must be an integer from 1 to " + std::to_string(kMaxMaxPoints), "max_points");
    }
    q.max_points = static_cast<std::size_t>(v);
  }
  for (const auto& [k, v] : request.query) {
    if (std::find(std::begin(kReserved), std::end(kReserved), k) != std::end(kReserved)) continue;
    if (!is_valid_label_name(k)) {
      return error_response(400, "invalid_argument", "'" + k + "' is neither a known parameter nor a label name", k);
    }
    q.matchers.emplace_back(k, v);
  }

  auto result = ctx_.history->query(q);
  if (!result.ok()) return status_response(result.status());
  json series = json::array();
  for (const db::SeriesData& d : *result) {
    json points = json::array();
    json columns;
    if (d.downsampled) {
      columns = {"ts_ns", "min", "max", "avg", "count"};
      for (const Bucket& b : d.buckets) points.push_back({b.start_ns, b.min, b.max, b.avg(), b.count});
    } else {
      columns = {"ts_ns", "value"};
      for (const Sample& s : d.samples) points.push_back({s.ts_ns, s.value});
    }
    series.push_back({{"name", d.info.key.name}, {"labels", labels_to_json(d.info.key.labels)},
                      {"unit", d.info.family.unit}, {"type", to_string(d.info.family.type)},
                      {"downsampled", d.downsampled}, {"bucket_ns", d.bucket_ns}, {"columns", columns},
                      {"points", points},
                      {"sources", {{"memory", d.from_memory}, {"database", d.from_database}}}});
  }
  return json_response(200, {{"from_ns", q.from_ns}, {"to_ns", q.to_ns}, {"max_points", q.max_points}, {"series", series}});
}

}  // namespace perfscope::server
