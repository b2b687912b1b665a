#include "server/api.hpp"

#include <sqlite3.h>

#include <boost/version.hpp>

#include "db/schema.hpp"
#include "server/api_helpers.hpp"
#include "server/compression.hpp"
#include "server/event_codec.hpp"
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

ApiResponse status_response(const Status& s) {
  const char* code = s.code() == StatusCode::kInvalidArgument ? "invalid_argument"
                     : s.code() == StatusCode::kNotFound      ? "not_found"
                     : s.code() == StatusCode::kUnavailable   ? "unavailable"
                                                              : "internal";
  return error_response(http_status_for(s), code, s.message(), s.field());
}

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
      {"enable_gpu_collector", c.engine.enable_gpu_collector},
      {"nvml_library", c.engine.nvml_library},
      {"power_target_watts", c.engine.power_target_watts},
      {"io_threads", c.server.io_threads},
      {"worker_threads", c.server.worker_threads},
      {"max_body_bytes", c.server.max_body_bytes},
      {"max_header_bytes", c.server.max_header_bytes},
      {"request_timeout_ms", c.server.request_timeout.count()},
      {"header_timeout_ms", c.server.header_timeout.count()},
      {"max_connections", c.server.max_connections},
      {"max_requests_per_connection", c.server.max_requests_per_connection},
      {"max_pending_requests", c.server.max_pending_requests},
      {"ws_max_message_bytes", c.server.ws_max_message_bytes},
      {"ws_send_queue", c.server.ws_send_queue_max},
      {"db_commit_interval_ms", c.storage.commit_interval.count()},
      {"shutdown_timeout_ms", c.server.shutdown_timeout.count()},
      {"token_file", c.server.token_file},
      {"insecure_no_auth", c.server.insecure_no_auth},
      {"cors_allow_origin", c.server.cors_origins},
  };
}

bool Api::owns(const std::string& path) {
  return path == "/healthz" || path == "/metrics" || path.rfind("/api/", 0) == 0;
}

namespace {
constexpr std::string_view kEventsPath = "/api/v1/events";
constexpr std::string_view kKernelsPath = "/api/v1/kernels";
constexpr std::string_view kAbTestsPath = "/api/v1/abtests";
constexpr std::string_view kRecordsSuffix = "/records";

ApiResponse method_not_allowed(const ApiRequest& request, const char* allow) {
  ApiResponse r = error_response(405, "method_not_allowed", request.method + " is not allowed on " + request.path);
  r.headers.emplace_back("Allow", allow);
  return r;
}

}  // namespace

std::string param(const ApiRequest& request, const char* name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

// Parses an optional integer parameter within [lo, hi].
Result<std::size_t> size_param(const ApiRequest& request, const char* name, std::size_t fallback, std::size_t lo,
                               std::size_t hi) {
  auto it = request.query.find(name);
  if (it == request.query.end()) return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < lo || v > hi) {
    return Status::invalid_argument("'" + std::string(name) + "' must be an integer from " + std::to_string(lo) +
                                        " to " + std::to_string(hi),
                                    name);
  }
  return static_cast<std::size_t>(v);
}

Result<TimeWindow> window_or(const ApiRequest& request, const char* fallback, TimestampNs now) {
  std::string window = param(request, "window");
  const bool explicit_range = !param(request, "from").empty() || !param(request, "to").empty();
  return parse_window(window.empty() && !explicit_range ? fallback : window, param(request, "from"), param(request, "to"),
                      now);
}

json window_json(const TimeWindow& w) {
  if (w.all) return "all";
  return {{"from_ns", w.from_ns}, {"to_ns", w.to_ns}};
}

void Api::handle_async(ApiRequest request, std::function<void(ApiResponse)> done) const {
  if (request.path == kEventsPath) {
    if (request.method != "POST") return done(method_not_allowed(request, "POST"));
    return ingest(request, std::move(done));
  }
  if (request.path == kAbTestsPath && request.method == "POST") return create_abtest(request, std::move(done));
  done(handle(request));
}

ApiResponse Api::handle(const ApiRequest& request) const {
  if (request.path == kEventsPath) return method_not_allowed(request, "POST");
  if (request.path == kAbTestsPath && request.method != "GET" && request.method != "HEAD") {
    return method_not_allowed(request, "GET, HEAD, POST");
  }
  if (request.method != "GET" && request.method != "HEAD") return method_not_allowed(request, "GET, HEAD");
  if (request.path == "/healthz") return json_response(200, {{"status", "ok"}});
  if (request.path == "/metrics") return metrics(request);
  if (request.path == "/api/v1/info") return info();
  if (request.path == "/api/v1/series") return series();
  if (request.path == "/api/v1/devices") return devices();
  if (request.path == "/api/v1/series/query") return series_query(request);
  if (request.path == kKernelsPath) return kernels(request);
  const std::string& p = request.path;
  if (p.size() > kKernelsPath.size() + 1 + kRecordsSuffix.size() && p.rfind(std::string(kKernelsPath) + "/", 0) == 0 &&
      p.compare(p.size() - kRecordsSuffix.size(), kRecordsSuffix.size(), kRecordsSuffix) == 0) {
    // The name may itself hold '/' (C++ templates, file paths): everything in between.
    std::string name = p.substr(kKernelsPath.size() + 1, p.size() - kKernelsPath.size() - 1 - kRecordsSuffix.size());
    return kernel_records(request, name);
  }
  if (request.path == "/api/v1/memory") return memory(request);
  if (request.path == "/api/v1/inference") return inference(request);
  if (request.path == "/api/v1/percentiles") return percentiles(request);
  if (request.path == "/api/v1/analysis") return analysis(request);
  if (request.path == "/api/v1/report") return report(request);
  if (request.path == "/api/v1/trace") return trace(request);
  if (request.path == "/api/v1/regressions") return regressions(request);
  if (request.path == "/api/v1/anomalies") return anomalies(request);
  if (request.path == "/api/v1/alerts") return alerts(request);
  if (request.path == kAbTestsPath) return abtests();
  if (p.rfind(std::string(kAbTestsPath) + "/", 0) == 0) return abtest(p.substr(kAbTestsPath.size() + 1));
  return error_response(404, "not_found", "no such endpoint: " + request.path);
}

void Api::ingest(const ApiRequest& request, std::function<void(ApiResponse)> done) const {
  std::string inflated;
  std::string_view body = request.body;
  const std::size_t limit = ctx_.config->server.max_body_bytes;
  if (request.content_encoding == "gzip") {
    switch (gzip_decompress(request.body, limit, inflated)) {
      case InflateError::kNone: body = inflated; break;
      case InflateError::kTooLarge:
        return done(error_response(413, "payload_too_large",
                                   "the decompressed body exceeds " + std::to_string(limit) + " bytes"));
      case InflateError::kMalformed:
        return done(error_response(400, "bad_request", "the body is not valid gzip"));
    }
  } else if (!request.content_encoding.empty() && request.content_encoding != "identity") {
    return done(error_response(415, "unsupported_media_type",
                               "Content-Encoding must be gzip or absent, got " + request.content_encoding));
  }

  DecodeResult decoded;
  const TimestampNs now = now_ns();
  if (request.content_type == "application/x-ndjson" || request.content_type == "application/jsonl") {
    decoded = decode_ndjson_events(body, now);
  } else if (request.content_type.empty() || request.content_type == "application/json") {
    decoded = decode_json_events(body, now);
  } else {
    return done(error_response(415, "unsupported_media_type",
                               "Content-Type must be application/json or application/x-ndjson, got " +
                                   request.content_type));
  }
  if (decoded.error) {
    json err = {{"code", "invalid_event"}, {"message", decoded.error->message}};
    err["index"] = decoded.error->index ? json(*decoded.error->index) : json(nullptr);
    if (!decoded.error->field.empty()) err["field"] = decoded.error->field;
    return done(json_response(400, {{"error", err}}));
  }
  const std::size_t n = decoded.events.size();
  if (n == 0) return done(json_response(200, {{"accepted", 0}}));
  if (!ctx_.writer) return done(error_response(503, "unavailable", "no database is open"));
  ctx_.writer->submit(std::move(decoded.events), [this, n, done = std::move(done)](const Status& s) {
    if (s.ok()) {
      if (ctx_.on_events_committed) ctx_.on_events_committed();
      return done(json_response(200, {{"accepted", n}}));
    }
    const bool later = s.code() == StatusCode::kUnavailable;  // busy, disk full, read-only: may pass
    ApiResponse r = error_response(later ? 503 : 500, later ? "unavailable" : "internal",
                                   "no event was stored: " + s.message());
    if (later) r.headers.emplace_back("Retry-After", "5");
    done(std::move(r));
  });
}

ApiResponse Api::kernels(const ApiRequest& request) const {
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto rows = ctx_.events->kernel_summaries({w->from_ns, w->to_ns}, param(request, "device"));
  if (!rows.ok()) return status_response(rows.status());
  double total_ms = 0;
  for (const auto& k : *rows) total_ms += k.total_ms;
  json out = json::array();
  for (const auto& k : *rows) {
    json configs = json::array();
    for (const auto& c : k.launch_configs) {
      json cfg = {{"grid", c.grid}, {"block", c.block}, {"count", c.count}};
      cfg["shared_mem_bytes"] = c.shared_mem_bytes ? json(*c.shared_mem_bytes) : json(nullptr);
      cfg["registers_per_thread"] = c.registers_per_thread ? json(*c.registers_per_thread) : json(nullptr);
      configs.push_back(std::move(cfg));
    }
    out.push_back({{"name", k.name}, {"count", k.count}, {"total_ms", k.total_ms}, {"avg_ms", k.avg_ms()},
                   {"min_ms", k.min_ms}, {"max_ms", k.max_ms},
                   {"share", total_ms > 0 ? k.total_ms / total_ms : 0.0}, {"variants", k.variants},
                   {"devices", k.devices}, {"launch_configs", configs}});
  }
  return json_response(200, {{"window", window_json(*w)}, {"total_kernel_ms", total_ms}, {"kernels", out}});
}

ApiResponse Api::kernel_records(const ApiRequest& request, const std::string& name) const {
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto limit = size_param(request, "limit", 100, 1, 10000);
  if (!limit.ok()) return status_response(limit.status());
  auto rows = ctx_.events->kernel_records(name, {w->from_ns, w->to_ns}, *limit);
  if (!rows.ok()) return status_response(rows.status());
  json out = json::array();
  for (const KernelEvent& e : *rows) {
    // The wire form producers send, plus the duration: a record reads like what was posted.
    json r = encode_event(e);
    r.erase("type");
    r["duration_ms"] = e.duration_ms();
    out.push_back(std::move(r));
  }
  return json_response(200, {{"name", name}, {"window", window_json(*w)}, {"records", out}});
}

ApiResponse Api::memory(const ApiRequest& request) const {
  const std::string device = param(request, "device");
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto max_points = size_param(request, "max_points", 500, 1, kMaxMaxPoints);
  if (!max_points.ok()) return status_response(max_points.status());
  auto counters = [](const MemoryCounters& c) {
    return json{{"current_allocated_bytes", c.current_bytes}, {"peak_allocated_bytes", c.peak_bytes},
                {"total_allocated_bytes", c.total_allocated_bytes}, {"allocation_count", c.allocation_count},
                {"free_count", c.free_count}};
  };
  MemoryStatistics stats = ctx_.memory->statistics(device);
  json out = counters(stats.all);
  json by_kind = json::object();
  for (const auto& [kind, c] : stats.by_kind) by_kind[kind] = counters(c);
  out["by_kind"] = by_kind;
  out["live_allocations"] = stats.live_allocations;
  out["unmatched_frees"] = stats.unmatched_frees;
  out["device"] = device.empty() ? json("all") : json(device);
  json largest = json::array();
  for (const LiveAllocation& a : ctx_.memory->largest(10, device)) {
    largest.push_back({{"device", a.device}, {"address", a.address}, {"size_bytes", a.size_bytes},
                       {"kind", to_string(a.kind)}, {"tag", a.tag}, {"ts_ns", a.ts_ns}});
  }
  out["largest_live_allocations"] = largest;
  auto timeline = ctx_.events->allocated_timeline({w->from_ns, w->to_ns}, device, *max_points);
  if (!timeline.ok()) return status_response(timeline.status());
  json points = json::array();
  for (const auto& p : *timeline) points.push_back({p.ts_ns, p.bytes});
  out["timeline"] = {{"columns", {"ts_ns", "allocated_bytes"}}, {"points", points}};
  out["window"] = window_json(*w);
  return json_response(200, out);
}

ApiResponse Api::inference(const ApiRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now);
  if (!w.ok()) return status_response(w.status());
  auto rows = ctx_.events->inference_summaries({w->from_ns, w->to_ns});
  if (!rows.ok()) return status_response(rows.status());
  json models = json::array();
  for (const auto& m : *rows) {
    // Rates over the window asked for; over the model's own first..last span for "all".
    double span_s = w->all ? static_cast<double>(m.last_ns - m.first_ns) / 1e9
                           : static_cast<double>(std::min(w->to_ns, now) - w->from_ns) / 1e9;
    auto rate = [&](double n) { return span_s > 0 ? json(n / span_s) : json(nullptr); };
    models.push_back({{"model", m.model}, {"version", m.version}, {"requests", m.requests}, {"errors", m.errors},
                      {"error_rate", m.requests ? static_cast<double>(m.errors) / static_cast<double>(m.requests) : 0.0},
                      {"inferences", m.inferences}, {"input_tokens", m.input_tokens},
                      {"output_tokens", m.output_tokens}, {"mean_latency_ms", m.mean_latency_ms},
                      {"requests_per_second", rate(static_cast<double>(m.requests))},
                      {"inferences_per_second", rate(static_cast<double>(m.inferences))},
                      {"output_tokens_per_second", rate(static_cast<double>(m.output_tokens))},
                      {"span_seconds", span_s}, {"first_ns", m.first_ns}, {"last_ns", m.last_ns}});
  }
  return json_response(200, {{"window", window_json(*w)}, {"models", models}});
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
  if (!ctx_.config->engine.enable_gpu_collector) {
    collectors.push_back({{"name", "nvidia"}, {"enabled", false}, {"sources", json::array()}});
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
  {
    const bool tokens = ctx_.access && ctx_.access->enabled();
    json security = {{"auth", tokens ? "bearer_tokens" : "none"},
                     {"tokens", tokens ? ctx_.access->token_count() : 0},
                     {"loopback_only", is_loopback_host(ctx_.config->server.listen_host)}};
    if (!tokens && !is_loopback_host(ctx_.config->server.listen_host)) {
      security["warning"] = "listening on " + ctx_.config->server.listen_host +
                            " without authentication (--insecure-no-auth): anyone who can reach it can read and write";
    }
    body["security"] = security;
  }
  return json_response(200, body);
}

ApiResponse Api::devices() const {
  json gpus = json::array();
  json nvml = {{"available", false}};
  if (ctx_.gpus) {
    for (const SourceStatus& s : ctx_.gpus->sources()) {
      if (s.name == "nvml") nvml = {{"available", s.available}, {"detail", s.detail}};
    }
    if (nvml["available"]) {
      nvml["driver_version"] = ctx_.gpus->driver_version();
      nvml["nvml_version"] = ctx_.gpus->nvml_version();
    }
    for (const GpuDeviceInfo& d : ctx_.gpus->devices()) {
      gpus.push_back({{"gpu", d.index}, {"uuid", d.uuid}, {"name", d.name}, {"pci_bus_id", d.pci_bus_id},
                      {"memory_total_bytes", d.memory_total_bytes}, {"power_limit_watts", d.power_limit_watts},
                      {"max_sm_clock_hertz", d.max_sm_clock_hertz}, {"max_memory_clock_hertz", d.max_memory_clock_hertz},
                      {"memory_bus_width_bits", d.memory_bus_width_bits},
                      {"peak_dram_bandwidth_bytes_per_second", d.peak_dram_bandwidth_bytes_per_second},
                      {"gpm", d.gpm}, {"lost", d.lost}, {"unsupported", d.unsupported},
                      {"labels", {{"gpu", d.index}, {"uuid", d.uuid}}}});
    }
  } else {
    nvml["detail"] = "the GPU collector is disabled (--enable-gpu-collector false)";
  }
  return json_response(200, {{"nvml", nvml}, {"gpus", gpus},
                              {"note", "per-process GPU memory lists host PIDs; inside a container they may not match"}});
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

  auto max_points = size_param(request, "max_points", kDefaultMaxPoints, 1, kMaxMaxPoints);
  if (!max_points.ok()) return status_response(max_points.status());
  q.max_points = *max_points;
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
