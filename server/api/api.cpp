#include "server/api/api.hpp"

#include <charconv>
#include <cmath>

#include <boost/version.hpp>

#include "db/schema.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/collectives_api.hpp"
#include "server/http/compression.hpp"
#include "server/http/spooled_body.hpp"
#include "server/wire/event_codec.hpp"
#include "server/service/query_time.hpp"
#include "server/api/version.hpp"

namespace perfscope::server {

using nlohmann::json;

Api::Api(ApiContext context)
    : ctx_(std::move(context)),
      query_(QueryContext{service::Sources{ctx_.events, ctx_.history, ctx_.memory, ctx_.abtests, ctx_.gpus,
                                           ctx_.config ? &ctx_.config->engine.device_targets : nullptr, ctx_.processes},
                          ctx_.config ? ctx_.config->storage.data_dir : std::string()}) {}

QueryEndpoints::QueryEndpoints(QueryContext context)
    : sources_(context.sources), spool_dir_(std::move(context.spool_dir)), analysis_(sources_) {}

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

HttpResponse status_response(const Status& s) {
  const char* code = s.code() == StatusCode::kInvalidArgument ? "invalid_argument"
                     : s.code() == StatusCode::kNotFound      ? "not_found"
                     : s.code() == StatusCode::kUnavailable   ? "unavailable"
                                                              : "internal";
  return error_response(http_status_for(s), code, s.message(), s.field());
}

Result<std::unique_ptr<SpooledBody>> spool_body(const std::string& dir, bool gzip) {
  return SpooledBody::create(dir, gzip);
}

HttpResponse spooled_response(std::unique_ptr<SpooledBody> body, std::string content_type, bool content_encoding_gzip) {
  HttpResponse out;
  out.content_type = std::move(content_type);
  out.spooled = std::move(body);
  out.compressible = false;
  if (content_encoding_gzip) {
    out.headers.emplace_back("Content-Encoding", "gzip");
    out.headers.emplace_back("Vary", "Accept-Encoding");
  }
  return out;
}

namespace {

// The scrape targets as /api/v1/info shows them: never their tokens.
json scrape_to_json(const std::vector<ScrapeTarget>& targets) {
  json out = json::array();
  for (const ScrapeTarget& t : targets) {
    out.push_back({{"url", t.url}, {"job", t.job}, {"interval_ms", t.interval.count()},
                   {"timeout_ms", t.timeout.count()}, {"sample_limit", t.sample_limit}, {"series_limit", t.series_limit},
                   {"body_limit", t.body_limit}, {"token", !t.token.empty()}, {"ca_file", t.ca_file}});
  }
  return out;
}

}  // namespace

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
      {"pod_resources_socket", c.engine.pod_resources_socket},
      {"pod_resources_interval_ms", c.engine.pod_resources_interval.count()},
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
      {"allowed_host", c.server.allowed_hosts},
      {"cardinality_window_s", c.cardinality.window.count()},
      {"scrape", scrape_to_json(c.engine.scrape_targets)},
  };
}

std::string param(const HttpRequest& request, const char* name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

Result<double> parse_number(std::string_view text, const char* field) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return Status::invalid_argument(std::string("'") + field + "' must be a number", field);
  }
  return v;
}

Result<std::vector<double>> parse_quantiles(const std::string& text, std::vector<double> defaults) {
  if (text.empty()) return defaults;
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

// Parses an optional integer parameter within [lo, hi].
Result<std::size_t> size_param(const HttpRequest& request, const char* name, std::size_t fallback, std::size_t lo,
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

Result<db::EventScope> scope_of(const HttpRequest& request) {
  db::EventScope scope{param(request, "device"), param(request, "run")};
  for (const auto& [key, value] : request.query) {
    if (!key.starts_with("tag.")) continue;
    const std::string name = key.substr(4);
    if (!is_valid_label_name(name)) {
      return Status::invalid_argument("'" + key + "': tag names match [a-zA-Z_][a-zA-Z0-9_]*", key);
    }
    if (value.size() > kMaxEventText) return Status::invalid_argument("'" + key + "' is too long", key);
    if (scope.tags.size() == 32) return Status::invalid_argument("at most 32 tag filters", key);
    scope.tags.emplace_back(name, value);
  }
  sort_labels(scope.tags);
  return scope;
}

Result<TimeWindow> window_or(const HttpRequest& request, const char* fallback, TimestampNs now) {
  std::string window = param(request, "window");
  const bool explicit_range = !param(request, "from").empty() || !param(request, "to").empty();
  // A run bounds its own events: without a window, all of them.
  if (window.empty() && !explicit_range && !param(request, "run").empty()) window = "all";
  return parse_window(window.empty() && !explicit_range ? fallback : window, param(request, "from"), param(request, "to"),
                      now);
}

json window_json(const TimeWindow& w) {
  if (w.all) return "all";
  return {{"from_ns", w.from_ns}, {"to_ns", w.to_ns}};
}

// One meaning of run= on every endpoint: it names a run that perfscope knows (a `run` event:
// `perfscope run`, a client's run(), an import). Events that only carry the tag run=NAME are
// not a run (nothing says when it started or ended, what it ran, or whether it failed); every
// endpoint refuses such a name alike and points to tag.run=NAME, which selects them.
std::optional<HttpResponse> Api::unknown_run(const HttpRequest& request) const {
  const std::string name = param(request, "run");
  if (name.empty() || !ctx_.events) return std::nullopt;
  auto found = ctx_.events->run(name);
  if (!found.ok()) return status_response(found.status());
  if (*found) return std::nullopt;
  return error_response(404, "not_found", no_run_message(name), "run");
}

HttpResponse Api::info() const {
  auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx_.started).count();
  // Every collector of the server's table: the running ones with their sources and what their
  // part of each sampling pass costs, the others with the option that turns them on.
  json collectors = json::array();
  const std::vector<CollectorTiming> timings =
      ctx_.sampler ? ctx_.sampler->collector_timings() : std::vector<CollectorTiming>{};
  for (const CollectorSwitch& sw : ctx_.collectors) {
    json row = {{"name", sw.name}, {"enabled", sw.enabled}, {"option", sw.option}, {"sources", json::array()},
                {"last_pass_seconds", nullptr}, {"mean_pass_seconds", nullptr}, {"passes", nullptr}};
    for (std::size_t i = 0; ctx_.sampler && i < ctx_.sampler->collectors().size(); ++i) {
      const Collector& c = *ctx_.sampler->collectors()[i];
      if (c.name() != sw.name) continue;
      for (const SourceStatus& s : c.sources()) {
        row["sources"].push_back({{"name", s.name}, {"available", s.available}, {"detail", s.detail}});
      }
      const CollectorTiming& t = timings[i];
      row["last_pass_seconds"] = t.last_seconds;
      row["mean_pass_seconds"] = t.mean_seconds();
      row["passes"] = t.passes;
    }
    collectors.push_back(std::move(row));
  }
  json body = {
      {"name", "perfscope"},
      {"version", version()},
      {"build", {{"type", build_type()}, {"compiler", compiler()}, {"cxx_standard", __cplusplus},
                 {"boost", BOOST_LIB_VERSION}, {"sqlite", db::sqlite_version()}}},
      {"started_at_ns", ctx_.started_ns},
      {"uptime_seconds", uptime},
      {"sampler", {{"interval_ms", ctx_.config->engine.sampling_interval.count()},
                   {"passes", ctx_.sampler ? ctx_.sampler->passes() : 0}}},
      {"collectors", collectors},
      {"database", {{"path", ctx_.config->storage.database_path()}, {"schema_version", db::schema_version()}}},
      {"config", config_to_json(*ctx_.config)},
  };
  if (ctx_.runtime_status) body["runtime"] = ctx_.runtime_status();
  if (ctx_.cardinality) {
    json caps = json::object();
    for (const DimensionStats& d : ctx_.cardinality->stats()) {
      caps[std::string(dimension_name(d.dimension))] = {
          {"limit", d.limit}, {"distinct", d.distinct}, {"folded", d.folded}, {"refused", d.refused}};
    }
    body["cardinality"] = caps;
  }
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

}  // namespace perfscope::server
