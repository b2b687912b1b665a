// The views over producers' events: kernels (and one kernel's records), memory, inference,
// operators, and the energy of serving.
#include "server/api/api.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "db/series_history.hpp"
#include "engine/analysis/energy.hpp"
#include "engine/analysis/stats.hpp"
#include "server/api/api_helpers.hpp"
#include "server/service/models.hpp"
#include "server/api/scraped.hpp"
#include "server/wire/event_codec.hpp"

namespace perfscope::server {

using nlohmann::json;

HttpResponse QueryEndpoints::kernels(const HttpRequest& request) const {
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  auto table = service::kernel_table(sources_, {w->from_ns, w->to_ns}, *scope);
  if (!table.ok()) return status_response(table.status());
  json out = json::array();
  for (const service::KernelRow& r : table->rows) {
    const db::KernelSummary& k = r.summary;
    json configs = json::array();
    for (const auto& c : k.launch_configs) {
      json cfg = {{"grid", c.grid}, {"block", c.block}, {"count", c.count}};
      cfg["shared_mem_bytes"] = c.shared_mem_bytes ? json(*c.shared_mem_bytes) : json(nullptr);
      cfg["registers_per_thread"] = c.registers_per_thread ? json(*c.registers_per_thread) : json(nullptr);
      configs.push_back(std::move(cfg));
    }
    json row = {{"name", k.name}, {"count", k.count}, {"total_ms", k.total_ms}, {"avg_ms", k.avg_ms()},
                {"min_ms", k.min_ms}, {"max_ms", k.max_ms},
                {"share", r.share}, {"variants", k.variants},
                {"devices", k.devices}, {"launch_configs", configs}, {"dtypes", k.dtypes}};
    add_kernel_work(row, r);  // achieved rates over the executions that reported their work
    out.push_back(std::move(row));
  }
  return json_response(200, {{"window", window_json(*w)}, {"total_kernel_ms", table->total_ms}, {"kernels", out}});
}

HttpResponse QueryEndpoints::kernel_records(const HttpRequest& request, const std::string& name) const {
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto limit = size_param(request, "limit", 100, 1, 10000);
  if (!limit.ok()) return status_response(limit.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  auto rows = sources_.events->kernel_records(name, {w->from_ns, w->to_ns}, *limit, *scope);
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

Result<service::ScopedMemory> QueryEndpoints::scoped_memory(const db::EventScope& scope) const {
  return service::scoped_memory(*sources_.events, sources_.memory, scope);
}

json memory_counters_json(const MemoryCounters& c) {
  return json{{"current_allocated_bytes", c.current_bytes}, {"peak_allocated_bytes", c.peak_bytes},
              {"total_allocated_bytes", c.total_allocated_bytes}, {"allocation_count", c.allocation_count},
              {"free_count", c.free_count}};
}

json live_allocation_json(const LiveAllocation& a) {
  json j = {{"device", a.device}, {"address", a.address}, {"size_bytes", a.size_bytes},
            {"kind", to_string(a.kind)}, {"tag", a.tag}, {"ts_ns", a.ts_ns}};
  if (!a.process.empty()) j["pid"] = a.process;
  if (!a.run.empty()) j["run"] = a.run;
  return j;
}

HttpResponse QueryEndpoints::memory(const HttpRequest& request) const {
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  const std::string& device = scope->device;
  const std::string& run = scope->run;
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now_ns());
  if (!w.ok()) return status_response(w.status());
  auto max_points = size_param(request, "max_points", 500, 1, kMaxMaxPoints);
  if (!max_points.ok()) return status_response(max_points.status());
  auto memory = scoped_memory(*scope);
  if (!memory.ok()) return status_response(memory.status());
  const MemoryStatistics stats = memory->tracker->statistics(device);
  json out = memory_counters_json(stats.all);
  json by_kind = json::object();
  for (const auto& [kind, c] : stats.by_kind) by_kind[kind] = memory_counters_json(c);
  out["by_kind"] = by_kind;
  out["live_allocations"] = stats.live_allocations;
  out["unmatched_frees"] = stats.unmatched_frees;
  // CUDA module statics: held while a module is loaded, never counted as allocations.
  out["module_statics"] = {{"current_bytes", stats.module_statics.current_bytes},
                           {"peak_bytes", stats.module_statics.peak_bytes},
                           {"count", stats.module_statics.allocation_count}};
  out["device"] = device.empty() ? json("all") : json(device);
  if (!run.empty()) out["run"] = run;
  json largest = json::array();
  for (const LiveAllocation& a : memory->tracker->largest(10, device)) largest.push_back(live_allocation_json(a));
  out["largest_live_allocations"] = largest;
  auto timeline = sources_.events->allocated_timeline({w->from_ns, w->to_ns}, *scope, *max_points);
  if (!timeline.ok()) return status_response(timeline.status());
  json points = json::array();
  for (const auto& p : *timeline) points.push_back({p.ts_ns, p.bytes});
  out["timeline"] = {{"columns", {"ts_ns", "allocated_bytes"}}, {"points", points}};
  out["window"] = window_json(*w);
  return json_response(200, out);
}

HttpResponse QueryEndpoints::inference(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = parse_window(param(request, "window"), param(request, "from"), param(request, "to"), now);
  if (!w.ok()) return status_response(w.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  // latency=true: each model's latency, TTFT and TPOT percentiles and its SLO share too, from
  // every request read back (the summaries alone are one aggregate query).
  const std::string latency = param(request, "latency");
  if (!latency.empty() && latency != "true" && latency != "false") {
    return error_response(400, "invalid_argument", "'latency' must be true or false", "latency");
  }
  auto slo = serving_slo_of(request);
  if (!slo.ok()) return status_response(slo.status());
  // model= and version=: one model's rows (the operators view and the CLI ask for one).
  const service::ModelFilter only{param(request, "model"), param(request, "version")};
  auto serving = service::models_serving(sources_, *w, *scope, *slo, latency == "true", now, only);
  if (!serving.ok()) return status_response(serving.status());
  json models = json::array();
  for (const service::ModelServing& r : serving->reported) {
    const db::InferenceSummary& m = r.summary;
    models.push_back({{"model", m.model}, {"version", m.version}, {"requests", m.requests}, {"errors", m.errors},
                      {"error_rate", r.error_rate}, {"inferences", m.inferences}, {"input_tokens", m.input_tokens},
                      {"output_tokens", m.output_tokens}, {"mean_latency_ms", m.mean_latency_ms},
                      {"requests_per_second", optional_json(r.requests_per_second)},
                      {"inferences_per_second", optional_json(r.inferences_per_second)},
                      {"output_tokens_per_second", optional_json(r.output_tokens_per_second)},
                      {"span_seconds", r.span_s}, {"first_ns", m.first_ns}, {"last_ns", m.last_ns},
                      {"source", "events"}});
    if (!r.latency) continue;  // not asked for, or committed between the two reads
    json row_serving = serving_row_json(*r.latency);
    json& row = models.back();
    for (const char* field : {"latency_ms", "ttft_ms", "tpot_ms", "queue_ms", "compute_ms", "itl_ms"}) row[field] = row_serving[field];
    if (row_serving.contains("goodput_ratio")) row["goodput_ratio"] = row_serving["goodput_ratio"];
  }
  // Scraped servers (no tags of their own): their counters' increase over the window.
  for (const service::ScrapedModel& scraped : serving->scraped) {
    const analysis::ScrapedServing& m = scraped.serving;
    json row = scraped_inference_row(scraped);
    models.push_back({{"model", m.model}, {"version", m.version}, {"requests", row["requests"]},
                      {"errors", row["errors"]}, {"error_rate", row["error_rate"]},
                      {"input_tokens", row["input_tokens"]}, {"output_tokens", row["output_tokens"]},
                      {"mean_latency_ms", row["mean_latency_ms"]},
                      {"requests_per_second", row["requests_per_second"]},
                      {"inferences_per_second", row["inferences_per_second"]},
                      {"output_tokens_per_second", row["output_tokens_per_second"]}, {"span_seconds", m.window_s},
                      {"source", "scrape"}, {"server", m.server}, {"targets", m.targets},
                      {"queue_share", row["queue_share"]}, {"running", row["running"]}, {"waiting", row["waiting"]},
                      {"kv_cache_usage", row["kv_cache_usage"]}});
    if (latency != "true") continue;
    // From the server's histograms (bounded within a bucket) or its own quantiles.
    for (const char* field : {"latency_ms", "ttft_ms", "tpot_ms", "queue_ms", "compute_ms", "itl_ms"}) {
      models.back()[field] = row[field];
    }
    if (row.contains("slo_compliance")) models.back()["slo_compliance"] = row["slo_compliance"];
  }
  json out = {{"window", window_json(*w)}, {"models", models}};
  if (slo->any()) {
    json targets = json::object();
    if (slo->latency_ms) targets["latency_ms"] = *slo->latency_ms;
    if (slo->ttft_ms) targets["ttft_ms"] = *slo->ttft_ms;
    if (slo->tpot_ms) targets["tpot_ms"] = *slo->tpot_ms;
    out["slo"] = targets;
  }
  return json_response(200, out);
}

// GET /api/v1/operators: per model, op type and node — count, total, mean, exact percentiles
// (`q`, `method` as /api/v1/percentiles), share of the model's operator time, providers and
// input shapes — and each model's CPU-fallback share.
HttpResponse QueryEndpoints::operators(const HttpRequest& request) const {
  namespace an = analysis;
  const TimestampNs now = now_ns();
  auto w = window_or(request, "15m", now);
  if (!w.ok()) return status_response(w.status());
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  auto qs = parse_quantiles(param(request, "q"), {50, 90, 99});
  if (!qs.ok()) return status_response(qs.status());
  auto convention = an::convention_from(param(request, "method").empty() ? "nearest_rank" : param(request, "method"));
  if (!convention) return error_response(400, "invalid_argument", "'method' must be nearest_rank or linear", "method");
  const std::string model = param(request, "model"), provider = param(request, "provider");
  for (const auto& [name, value] : {std::pair{"model", &model}, std::pair{"provider", &provider}}) {
    if (value->size() > kMaxEventText) return error_response(400, "invalid_argument", std::string("'") + name + "' is too long", name);
  }
  auto summary = service::operators(sources_, *scope, {w->from_ns, w->to_ns}, model, provider, *qs, *convention);
  if (!summary.ok()) return status_response(summary.status());
  json doc = operators_json(*summary, 0);
  doc["window"] = window_json(*w);
  return json_response(200, doc);
}

json operators_json(const analysis::OperatorSummary& summary, std::size_t limit) {
  namespace an = analysis;
  auto row_json = [&](const an::OperatorRow& r, bool node) {
    json pct = json::object();
    for (std::size_t i = 0; i < summary.percentiles.size(); ++i) pct[an::percentile_key(summary.percentiles[i])] = r.percentiles_ms[i];
    json j = {{"model", r.model}, {node ? "name" : "op_type", r.key}, {"count", r.count}, {"total_ms", r.total_ms},
              {"mean_ms", r.mean_ms}, {"percentiles_ms", pct}, {"share_of_model_time", r.share_of_model},
              {"providers", r.providers}, {"input_shapes", r.input_shapes}, {"input_shapes_left_out", r.shapes_left_out}};
    if (node) j["op_type"] = r.op_type;
    return j;
  };
  auto rows_json = [&](const std::vector<an::OperatorRow>& rows, bool node) {
    json out = json::array();
    for (std::size_t i = 0; i < rows.size() && (limit == 0 || i < limit); ++i) out.push_back(row_json(rows[i], node));
    return out;
  };
  json models = json::array();
  for (const auto& m : summary.models) {
    models.push_back({{"model", m.model}, {"executions", m.executions}, {"total_ms", m.total_ms},
                      {"cpu_fallback_share", m.cpu_fallback_share ? json(*m.cpu_fallback_share) : json(nullptr)},
                      {"cpu_fallback_executions", m.cpu_fallback_executions}});
  }
  return {{"method", an::to_string(summary.convention)}, {"models", models}, {"op_types", rows_json(summary.by_type, false)},
          {"nodes", rows_json(summary.by_node, true)},
          {"methods", {{"share_of_model_time", "the row's operator time over all of its model's operator time in the window"},
                       {"cpu_fallback_share", "operator time on CPU providers over the model's operator time, when some of "
                                              "its operators ran on another provider; null for a model that ran on the CPU "
                                              "alone"}}}};
}

const char* const kEnergyPerModelMethod =
    "a GPU's energy is its energy counter's increase over the window, idle time between requests "
    "included; one model serving gets all of it, several share it in proportion to their requests' "
    "compute time (latency where a model reports none), else it is not attributable; per inference: "
    "the model's energy over its batch-weighted inferences, failed requests included; per second per "
    "watt = per joule; host_joules: the CPU packages' RAPL counters (where readable) shared the "
    "same way, DRAM and the rest of the platform not counted; avg/peak_watts: every power reading of the window, "
    "…_during_requests: the readings taken while some request was in flight (between its completion "
    "minus its latency and its completion), null when none was";

json energy_json(const service::EnergyFigures& energy) {
  namespace an = analysis;
  const std::vector<an::GpuEnergy>& gpus = energy.gpus;
  const std::vector<std::string>& unknown_joules = energy.unknown_joules;
  const an::EnergyReport& report = energy.report;
  json g = json::array(), models = json::array();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const an::GpuEnergy& e = gpus[i];
    json row = {{"gpu", e.gpu}, {"uuid", e.uuid}, {"joules", optional_json(e.joules)}, {"avg_watts", optional_json(e.avg_watts)},
                {"peak_watts", optional_json(e.peak_watts)}, {"avg_watts_during_requests", optional_json(e.request_avg_watts)},
                {"peak_watts_during_requests", optional_json(e.request_peak_watts)}};
    if (!unknown_joules[i].empty()) row["unknown"] = {{"joules", unknown_joules[i]}};
    g.push_back(std::move(row));
  }
  for (const auto& m : report.models) {
    models.push_back({{"model", m.model}, {"version", m.version}, {"attribution", m.attribution}, {"share", optional_json(m.share)},
                      {"joules", optional_json(m.joules)}, {"joules_per_inference", optional_json(m.joules_per_inference)},
                      {"joules_per_output_token", optional_json(m.joules_per_output_token)},
                      {"inferences_per_second_per_watt", optional_json(m.inferences_per_joule)},
                      {"output_tokens_per_second_per_watt", optional_json(m.output_tokens_per_joule)},
                      {"host_joules", optional_json(m.host_joules)}, {"host_joules_per_inference", optional_json(m.host_joules_per_inference)}});
  }
  return {{"gpus", g}, {"total_joules", optional_json(report.total_joules)}, {"host_joules", optional_json(report.host_joules)},
          {"models", models},
          {"method", kEnergyPerModelMethod}};
}

}  // namespace perfscope::server
