// GET /api/v1/analysis: every analysis of a window in one document — gauges with trends,
// kernel timeline per device and stream, command queues, inference serving metrics, memory
// with growth and leak suspects, and the bottleneck rules over all of it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <future>
#include <map>
#include <span>

#include "engine/analysis/bottlenecks.hpp"
#include "engine/analysis/change_points.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/stats.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/analysis/trend.hpp"
#include "server/wire/event_codec.hpp"
#include "server/api/api.hpp"
#include "server/service/regressions.hpp"
#include "server/api/collectives_api.hpp"
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

json trend_json(const an::Trend& t) {
  return {{"slope_per_second", t.slope_per_second}, {"r_squared", t.r_squared}, {"p_value", t.p_value},
          {"significant", t.significant()}};
}

json distribution_json(const an::Distribution& d) {
  if (d.count == 0) return nullptr;
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95}, {"max", d.max}};
}

json findings_json(const std::vector<an::Finding>& findings) {
  const std::map<std::string, std::string>& evidence_series = service::evidence_series();
  json b = json::array();
  for (const auto& f : findings) {
    json series = json::object();
    for (const auto& [input, value] : f.evidence) {
      if (auto it = evidence_series.find(input); it != evidence_series.end()) series[input] = it->second;
    }
    json row = {{"id", f.id}, {"title", f.title}, {"status", f.status},
                {"severity", f.severity ? json(an::to_string(*f.severity)) : json(nullptr)},
                {"evidence", f.evidence}, {"evidence_series", series}, {"thresholds", f.thresholds},
                {"recommendations", f.recommendations}};
    if (!f.reason.empty()) row["reason"] = f.reason;
    if (!f.subject.empty()) row["subject"] = f.subject;
    if (!f.subject_device.empty()) row["subject_device"] = f.subject_device;
    b.push_back(std::move(row));
  }
  return b;
}

json methods_json() {
  json methods = {
      {"percentiles", "exact over raw samples; nearest rank (value at rank ceil(p/100*n))"},
      {"std", "sample (n-1)"},
      {"trend", "least-squares slope per second, two-sided t-test of slope = 0 (alpha 0.05)"},
      {"timeline", "per run (the run tag; kernels of no run together), each over its own span: busy = union of "
                   "kernel intervals / span; idle gaps: host_wait when the launch call began after "
                   "the previous work ended, kernel_wait when <= 1 us, else other; launch delay = start - launch "
                   "call end; launch efficiency = union of compute kernels / span"},
      {"collectives", "multi-GPU jobs as GET /api/v1/collectives gives them (its method), without the matched "
                      "instances"},
      {"sampling", "duty-cycled runs (perfscope run --duty-cycle) are traced in windows: sampled_fraction = time "
                   "in their windows / their span in the window; kernels' count and total_ms are observed / "
                   "sampled_fraction (estimates), durations and percentiles as observed; their timeline is over "
                   "the windows (time between two windows is neither idle nor a gap)"},
      {"serving", "TPOT = (latency - ttft)/(output_tokens - 1) for requests with > 1 token; ITL pooled over "
                  "token gaps; goodput = successful requests meeting every SLO per second; rows with source "
                  "scrape: increases of a scraped server's counters and histogram buckets over the window (the "
                  "scrape before it as baseline, restarts counted whole), percentiles interpolated inside a bucket "
                  "as histogram_quantile does with the bucket's bounds as the error bound, summaries' quantiles as "
                  "the server computed them; no goodput (it needs every request's figures together)"},
      {"devices", "achieved TFLOP/s and GB/s: the work kernels reported (flops, bytes) over the time of those "
                  "executions; without it, GPM's tensor-activity estimate and DRAM bandwidth, means over the window "
                  "idle time included; memory: NVML's peak used; power: NVML's mean. Roofline: attainable = min(peak "
                  "of the kernel's dtype, intensity x peak DRAM bandwidth), peaks from the datasheet table or "
                  "--gpu-peak, DRAM from NVML (max memory clock x bus width) unless configured. Checks against "
                  "--device-target: efficiency = achieved / target; below_minimum under 0.8 of the minimum"},
      {"memory", "allocated bytes trend over the window; leak suspects = allocations live longer than leak_age_s "
                 "while the trend is significantly positive; a run's allocations are released when it ends; CUDA "
                 "module statics are counted apart, never as allocations"}};
  return methods;
}

json timeline_json(const service::AnalysisDocument& doc) {
  json tl = json::array();
  for (const service::RunTimeline& rt : doc.timelines) {
    for (const auto& q : rt.queues) {
      json top = json::array();
      for (const auto& t : q.top_kernels) top.push_back({{"name", t.name}, {"count", t.count}, {"total_ms", t.total_ms}});
      tl.push_back({{"run", rt.run.empty() ? json(nullptr) : json(rt.run)},
                    {"sampled_fraction", rt.traced ? json(rt.traced->fraction) : json(nullptr)},
                    {"device", q.device}, {"stream", q.stream.empty() ? json(nullptr) : json(q.stream)},
                    {"kernel_count", q.kernel_count}, {"span_ms", q.span_ms}, {"busy_ms", q.busy_ms},
                    {"busy_ratio", q.busy_ratio}, {"idle_ms", q.idle_ms},
                    {"idle_breakdown_ms", {{"host_wait", q.idle_host_wait_ms}, {"kernel_wait", q.idle_kernel_wait_ms},
                                           {"other", q.idle_other_ms}}},
                    {"gaps", q.gaps}, {"avg_gap_ms", q.avg_gap_ms}, {"launch_efficiency", q.launch_efficiency},
                    {"launch_efficiency_target", an::kLaunchEfficiencyTarget},
                    {"short_kernels", q.short_kernels}, {"short_kernel_share", q.with_launch_info ? json(q.short_kernel_share) : json(nullptr)},
                    {"launch_delay_ms", distribution_json(q.launch_delay_ms)},
                    {"launch_overhead_ms", distribution_json(q.launch_overhead_ms)},
                    {"kernel_ms", distribution_json(q.kernel_ms)}, {"top_kernels", top}});
    }
  }
  return tl;
}

json memory_json(const service::AnalysisDocument& doc) {
  const MemoryStatistics& mem = doc.memory.statistics;
  json leak_suspects = json::array();
  for (const service::LeakSuspect& l : doc.memory.leak_suspects) {
    json suspect = live_allocation_json(l.allocation);
    suspect["age_s"] = l.age_s;
    leak_suspects.push_back(std::move(suspect));
  }
  json by_kind = json::object();
  for (const auto& [kind, c] : mem.by_kind) by_kind[kind] = {{"current_allocated_bytes", c.current_bytes}, {"peak_allocated_bytes", c.peak_bytes}};
  return {{"current_allocated_bytes", mem.all.current_bytes},
                   {"peak_allocated_bytes", mem.all.peak_bytes},
                   {"total_allocated_bytes", mem.all.total_allocated_bytes},
                   {"allocation_count", mem.all.allocation_count},
                   {"free_count", mem.all.free_count},
                   {"by_kind", by_kind},
                   {"module_statics", {{"current_bytes", mem.module_statics.current_bytes},
                                       {"count", mem.module_statics.allocation_count}}},
                   {"growth", trend_json(doc.memory.growth)},
                   {"leak_age_s", doc.memory.leak_age_s},
                   {"leak_suspects", leak_suspects}};
}

}  // namespace

Result<service::AnalysisQuery> QueryEndpoints::analysis_query(const HttpRequest& request) const {
  service::AnalysisQuery query;
  query.now = now_ns();
  auto scope = scope_of(request);
  if (!scope.ok()) return scope.status();
  query.scope = std::move(*scope);
  auto w = window_or(request, "5m", query.now);
  if (!w.ok()) return w.status();
  query.window = *w;
  auto slo = serving_slo_of(request);
  if (!slo.ok()) return slo.status();
  query.slo = *slo;
  auto leak_age = size_param(request, "leak_age_s", 60, 1, 86400 * 30);
  if (!leak_age.ok()) return leak_age.status();
  query.leak_age_s = *leak_age;
  return query;
}

json QueryEndpoints::analysis_document_json(const service::AnalysisDocument& doc) {
  const std::string& device = doc.device;
  const std::string& run = doc.run;
  const an::ServingSlo& slo_ = doc.slo;

  json out = {{"schema_version", 1}, {"generated_ns", doc.generated_ns}, {"window", window_json(doc.window)},
              {"device", device.empty() ? json("all") : json(device)}};
  out["methods"] = methods_json();
  json g = json::array();
  for (const auto& s : doc.gauges) {
    g.push_back({{"series", s.key.canonical()}, {"name", s.key.name}, {"labels", labels_to_json(s.key.labels)},
                 {"unit", s.unit}, {"count", s.count}, {"avg", s.avg}, {"min", s.min}, {"peak", s.peak},
                 {"p95", s.p95}, {"last", s.last}, {"trend", trend_json(s.trend)}});
  }
  out["gauges"] = g;
  json k = json::array();
  const double kernel_total = doc.kernel_total_ms;
  for (const service::KernelRow& r : doc.top_kernels) {
    const db::KernelSummary& s = r.summary;
    json row = {{"name", s.name}, {"count", s.count}, {"total_ms", s.total_ms}, {"avg_ms", s.avg_ms()},
                {"min_ms", s.min_ms}, {"max_ms", s.max_ms}, {"share", r.share}};
    // Where the kernel reported its work: its rates and its place on the roofline.
    if (!s.work.empty()) add_kernel_work(row, r);
    k.push_back(std::move(row));
  }
  out["kernels"] = {{"total_ms", kernel_total}, {"distinct", doc.kernels.size()}, {"top", k}};
  out["operators"] = operators_json(doc.operators, 10);
  out["devices"] = devices_efficiency_json(doc.devices);
  json sampling = nullptr;
  if (doc.sampled_fraction) {
    json sampled_runs = json::array();
    for (const service::RunTimeline& rt : doc.timelines) {
      if (rt.traced && rt.report) sampled_runs.push_back(sampling_json(*rt.report, *rt.traced));
    }
    sampling = {{"sampled_fraction", *doc.sampled_fraction}, {"runs", sampled_runs}};
  }
  out["sampling"] = sampling;
  out["timeline"] = timeline_json(doc);
  json jobs = json::array();
  for (const service::JobCollectives& job : doc.collectives) jobs.push_back(collective_job_json(job, false));
  out["collectives"] = jobs;
  json cq = json::array();
  for (const auto& q : doc.command_queues) {
    cq.push_back({{"device", q.device}, {"queue", q.queue}, {"count", q.count},
                  {"submit_to_complete_ms", distribution_json(q.submit_to_complete_ms)},
                  {"queue_wait_ms", distribution_json(q.queue_wait_ms)}, {"utilization", q.utilization}});
  }
  out["command_queues"] = cq;
  json inf = json::array();
  for (const auto& m : doc.serving) inf.push_back(serving_row_json(m));
  for (const auto& m : doc.scraped) inf.push_back(scraped_inference_row(m));
  out["inference"] = inf;
  out["energy"] = energy_json(doc.energy);
  json slo_json = json::object();
  if (slo_.latency_ms) slo_json["latency_ms"] = *slo_.latency_ms;
  if (slo_.ttft_ms) slo_json["ttft_ms"] = *slo_.ttft_ms;
  if (slo_.tpot_ms) slo_json["tpot_ms"] = *slo_.tpot_ms;
  out["slo"] = slo_json;
  out["memory"] = memory_json(doc);
  out["bottlenecks"] = findings_json(doc.findings);
  if (!doc.run_findings.empty()) {
    json per_run = json::array();
    for (const auto& [name, f] : doc.run_findings) {
      per_run.push_back({{"run", name.empty() ? json(nullptr) : json(name)}, {"bottlenecks", findings_json(f)}});
    }
    out["runs"] = per_run;
  }
  if (!run.empty()) out["run"] = run;
  json ab = json::array();
  for (const service::AbTestRef& t : doc.abtests) {
    ab.push_back({{"id", t.id}, {"name", t.name}, {"url", "/api/v1/abtests/" + std::to_string(t.id)}});
  }
  out["abtests"] = ab;
  return out;
}

Result<json> QueryEndpoints::analysis_json(const HttpRequest& request) const {
  auto query = analysis_query(request);
  if (!query.ok()) return query.status();
  auto doc = analysis_.analyze(*query);
  if (!doc.ok()) return doc.status();
  return analysis_document_json(*doc);
}

HttpResponse QueryEndpoints::analysis(const HttpRequest& request) const {
  auto doc = analysis_json(request);
  if (!doc.ok()) return status_response(doc.status());
  return json_response(200, *doc);
}

HttpResponse QueryEndpoints::regressions(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "1h", now);
  if (!w.ok()) return status_response(w.status());
  auto interval = parse_duration_ns(param(request, "interval").empty() ? "10s" : param(request, "interval"), "interval");
  if (!interval.ok()) return status_response(interval.status());
  if (*interval < 1'000'000) return error_response(400, "invalid_argument", "'interval' must be at least 1ms", "interval");
  an::ChangePointOptions o;
  if (std::string v = param(request, "min_change"); !v.empty()) {
    double d = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc() || end != v.data() + v.size() || !(d > 0) || d > 10) {
      return error_response(400, "invalid_argument", "'min_change' must be a fraction above 0 (0.05 = 5%)", "min_change");
    }
    o.min_change = d;
  }
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  const service::RegressionQuery query{std::move(*scope), *w, *interval, o, param(request, "kernel"), param(request, "model")};
  auto regressions = service::find_regressions(sources_, query, now);
  if (!regressions.ok()) return status_response(regressions.status());
  json found = json::array();
  for (const service::Regression& r : regressions->found) {
    const an::ChangePoint& c = r.change;
    found.push_back({{r.kind, r.subject}, {"statistic", r.statistic}, {"unit", "ms"}, {"at_ns", r.at_ns},
                     {"before", c.before}, {"after", c.after}, {"change", c.change}, {"p_value", c.p_value},
                     {"direction", r.slower() ? "regression" : "improvement"}});
  }
  const std::size_t examined = regressions->subjects;
  return json_response(200, {{"window", window_json(*w)}, {"interval_ns", *interval}, {"subjects", examined},
                             {"method", "E-divisive means over windows of 50 intervals, Welch t-test p <= 0.001, "
                                        "change of at least min_change of the earlier mean"},
                             {"min_change", o.min_change}, {"regressions", found}});
}

HttpResponse Api::alerts(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "15m", now);
  if (!w.ok()) return status_response(w.status());
  json out = json::array();
  if (ctx_.gpu_alerts) {
    for (const GpuAlert& a : ctx_.gpu_alerts->recent(w->from_ns, w->to_ns)) {
      out.push_back({{"ts_ns", a.ts_ns}, {"kind", a.kind}, {"series", a.series.canonical()}, {"value", a.value},
                     {"threshold", a.threshold}, {"message", a.message}});
    }
  }
  json target = ctx_.gpu_alerts && ctx_.gpu_alerts->power_target_watts() ? json(*ctx_.gpu_alerts->power_target_watts())
                                                                          : json(nullptr);
  return json_response(200, {{"window", window_json(*w)}, {"power_target_watts", target}, {"alerts", out}});
}

HttpResponse Api::anomalies(const HttpRequest& request) const {
  const TimestampNs now = now_ns();
  auto w = window_or(request, "15m", now);
  if (!w.ok()) return status_response(w.status());
  json out = json::array();
  if (ctx_.anomalies) {
    for (const Anomaly& a : ctx_.anomalies->recent(w->from_ns, w->to_ns)) {
      out.push_back({{"ts_ns", a.ts_ns}, {"series", a.key.canonical()}, {"name", a.key.name},
                     {"labels", labels_to_json(a.key.labels)}, {"value", a.value}, {"score", a.score},
                     {"center", a.center}});
    }
  }
  return json_response(200, {{"window", window_json(*w)},
                             {"method", "robust z-score |x - median| / scale, median and MAD tracked per series in "
                                        "O(1) per sample, the scale 1.4826 MAD floored by the unit's smallest change "
                                        "that matters; after 100 samples, an anomaly moves at least 10% of the series' "
                                        "magnitude and its unit's floor and past its learnt extremes (99.9th percentile "
                                        "of its deviations) and scores above 6 for 3 samples in a row, or above 20 and "
                                        "3 times its extremes at once; then the series is quiet for 300 samples"},
                             {"anomalies", out}});
}

}  // namespace perfscope::server
