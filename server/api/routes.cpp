// The REST API's routes: every endpoint in one table (method, path, where it is answered and
// which Api member answers it), and the RequestHandler functions that look requests up in it.
// An endpoint is a line here and a member in its *_api.cpp.
#include <nlohmann/json.hpp>

#include "db/wal_index.hpp"
#include "server/api/api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/collectives_api.hpp"
#include "server/api/route_table.hpp"

namespace perfscope::server {

using nlohmann::json;

// What a route does. Captureless lambdas in routes() below: they see Api's private members.
struct Api::Endpoint {
  using Answer = HttpResponse (*)(const Api&, const HttpRequest&, const std::string& name);
  using AsyncAnswer = void (*)(const Api&, const HttpRequest&, std::function<void(HttpResponse)>);
  enum class Where {
    kWorker,  // may block on SQLite or an analysis pass: the worker pool
    kInline,  // cheap, and must answer while the workers are busy: the connection's thread
    kAsync,   // answers after the database commit, on the writer's thread
  };

  Where where = Where::kWorker;
  // run= must name a run perfscope knows (unknown_run) before the answer runs.
  bool checks_run = true;
  Answer answer = nullptr;
  AsyncAnswer answer_async = nullptr;

  static Endpoint worker(Answer a) { return Endpoint{Where::kWorker, true, a, nullptr}; }
  static Endpoint probe(Answer a) { return Endpoint{Where::kInline, false, a, nullptr}; }
  static Endpoint async(AsyncAnswer a) { return Endpoint{Where::kAsync, false, nullptr, a}; }
};

namespace {

// GET /readyz, beside /healthz (alive: the process answers): ready to take work — the
// database can take a commit now and the collectors have made their first pass. 503 with
// each failing check's reason otherwise, so a load balancer or Kubernetes stops sending
// events that would be refused. Checks that do not apply (no database, no collector) pass.
HttpResponse readiness(const ApiContext& ctx) {
  json checks = json::object();
  bool ready = true;
  if (ctx.writer && ctx.config) {
    const Status db = db::check_database_writable(ctx.config->storage.database_path());
    checks["database"] = db.ok() ? "ok" : db.message();
    ready = ready && db.ok();
  }
  if (ctx.sampler) {
    const bool sampled = ctx.sampler->passes() > 0;
    checks["collectors"] = sampled ? "ok" : "the collectors have not completed their first pass";
    ready = ready && sampled;
  }
  return json_response(ready ? 200 : 503, {{"status", ready ? "ready" : "not_ready"}, {"checks", checks}});
}

HttpResponse method_not_allowed(const HttpRequest& request, const std::string& allow) {
  HttpResponse r = error_response(405, "method_not_allowed", request.method + " is not allowed on " + request.path);
  r.headers.emplace_back("Allow", allow);
  return r;
}

}  // namespace

const RouteTable<Api::Endpoint>& Api::routes() {
  using E = Endpoint;
  using R = const HttpRequest&;
  using N = const std::string&;
  using D = std::function<void(HttpResponse)>;
  static const RouteTable<Endpoint> table{
      {"GET", "/healthz", E::probe([](const Api&, R, N) { return json_response(200, {{"status", "ok"}}); })},
      {"GET", "/readyz", E::probe([](const Api& a, R, N) { return readiness(a.ctx_); })},
      {"GET", "/metrics", E::worker([](const Api& a, R r, N) { return a.metrics(r); })},
      {"GET", "/api/v1/info", E::worker([](const Api& a, R, N) { return a.info(); })},
      {"POST", kIngestPath, E::async([](const Api& a, R r, D done) { a.ingest(r, std::move(done)); })},
      {"GET", "/api/v1/series", E::worker([](const Api& a, R, N) { return a.series(); })},
      {"GET", "/api/v1/devices", E::worker([](const Api& a, R, N) { return a.devices(); })},
      {"GET", "/api/v1/series/query", E::worker([](const Api& a, R r, N) { return a.series_query(r); })},
      {"GET", "/api/v1/kernels", E::worker([](const Api& a, R r, N) { return a.query_.kernels(r); })},
      {"GET", "/api/v1/kernels/{name}/records", E::worker([](const Api& a, R r, N n) { return a.query_.kernel_records(r, n); })},
      {"GET", "/api/v1/memory", E::worker([](const Api& a, R r, N) { return a.query_.memory(r); })},
      {"GET", "/api/v1/inference", E::worker([](const Api& a, R r, N) { return a.query_.inference(r); })},
      {"GET", "/api/v1/operators", E::worker([](const Api& a, R r, N) { return a.query_.operators(r); })},
      {"GET", "/api/v1/percentiles", E::worker([](const Api& a, R r, N) { return a.query_.percentiles(r); })},
      {"GET", "/api/v1/analysis", E::worker([](const Api& a, R r, N) { return a.query_.analysis(r); })},
      {"GET", "/api/v1/report", E::worker([](const Api& a, R r, N) { return a.query_.report(r); })},
      {"GET", "/api/v1/trace", E::worker([](const Api& a, R r, N) { return a.query_.trace(r); })},
      {"GET", "/api/v1/timeline", E::worker([](const Api& a, R r, N) { return a.query_.timeline(r); })},
      {"GET", "/api/v1/regressions", E::worker([](const Api& a, R r, N) { return a.query_.regressions(r); })},
      {"GET", "/api/v1/anomalies", E::worker([](const Api& a, R r, N) { return a.anomalies(r); })},
      {"GET", "/api/v1/alerts", E::worker([](const Api& a, R r, N) { return a.alerts(r); })},
      {"GET", "/api/v1/collectives", E::worker([](const Api& a, R r, N) { return a.query_.collectives(r); })},
      {"GET", "/api/v1/abtests", E::worker([](const Api& a, R, N) { return a.query_.abtests(); })},
      {"POST", "/api/v1/abtests", E::async([](const Api& a, R r, D done) { a.create_abtest(r, std::move(done)); })},
      {"GET", "/api/v1/abtests/{id}", E::worker([](const Api& a, R, N id) { return a.query_.abtest(id); })},
      {"GET", "/api/v1/processes", E::worker([](const Api& a, R r, N) { return a.query_.processes(r); })},
      {"GET", "/api/v1/processes/{key}", E::worker([](const Api& a, R r, N key) { return a.query_.process(r, key); })},
      {"GET", "/api/v1/runs", E::worker([](const Api& a, R r, N) { return a.query_.runs(r); })},
      {"GET", "/api/v1/runs/compare", E::worker([](const Api& a, R r, N) { return a.query_.compare_runs(r); })},
      {"GET", "/api/v1/runs/{name}", E::worker([](const Api& a, R, N name) { return a.query_.run(name); })},
  };
  return table;
}

RequestHandler::Dispatch Api::dispatch(const std::string& path) const {
  const auto found = routes().find("GET", path);
  if (found.handler && found.handler->where == Endpoint::Where::kInline) return Dispatch::kInline;
  // Everything under /api/ is ours (unknown endpoints get our 404); the rest is static assets.
  return found.path_known || path.starts_with("/api/") ? Dispatch::kWorker : Dispatch::kNotMine;
}

void Api::handle_async(HttpRequest request, std::function<void(HttpResponse)> done) const {
  const auto found = routes().find(request.method, request.path);
  if (found.handler && found.handler->answer_async) return found.handler->answer_async(*this, request, std::move(done));
  done(answer(request, found));
}

HttpResponse Api::handle(const HttpRequest& request) const { return answer(request, routes().find(request.method, request.path)); }

HttpResponse Api::answer(const HttpRequest& request, const RouteTable<Endpoint>::Match& found) const {
  // An asynchronous answer (ingest, a new A/B test) comes only through handle_async.
  if (found.path_known && (!found.handler || found.handler->answer_async)) {
    return method_not_allowed(request, found.allow);
  }
  if (!found.handler) return error_response(404, "not_found", "no such endpoint: " + request.path);
  if (found.handler->checks_run) {
    if (auto refused = unknown_run(request)) return *refused;
  }
  return found.handler->answer(*this, request, found.name);
}

}  // namespace perfscope::server
