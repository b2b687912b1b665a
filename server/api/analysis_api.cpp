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
#include "server/api/api_helpers.hpp"
#include "server/api/scraped.hpp"

namespace perfscope::server {

using nlohmann::json;
namespace an = perfscope::analysis;

namespace {

// Series the bottleneck rules read, by the names the GPU collector publishes.
constexpr const char* kGpuUtilization = "gpu_utilization_ratio";
constexpr const char* kGpuDramUtilization = "gpu_dram_bandwidth_utilization_ratio";
constexpr const char* kGpuMemoryUsed = "gpu_memory_used_bytes";
constexpr const char* kGpuMemoryTotal = "gpu_memory_total_bytes";
constexpr const char* kGpuThrottle = "gpu_throttle_seconds_total";
constexpr const char* kHostCpu = "host_cpu_utilization_ratio";

json trend_json(const an::Trend& t) {
  return {{"slope_per_second", t.slope_per_second}, {"r_squared", t.r_squared}, {"p_value", t.p_value},
          {"significant", t.significant()}};
}

json distribution_json(const an::Distribution& d) {
  if (d.count == 0) return nullptr;
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95}, {"max", d.max}};
}

// One run's timeline rows (run empty: kernels of no run).
struct RunTimeline {
  std::string run;
  std::vector<an::QueueTimeline> queues;
  std::optional<an::TracedWindows> traced;  // a duty-cycled run's windows in the window
  json sampling;                            // and how it was sampled (sampling_json)
};

// The bottleneck rules' timeline inputs from the device rows of the given runs.
void add_timeline_inputs(std::span<const RunTimeline> runs, an::Inputs& inputs) {
  std::size_t count = 0, with_launch = 0, short_kernels = 0;
  double max_ms = 0, idle = 0, host_wait = 0;
  const an::QueueTimeline* worst = nullptr;
  for (const RunTimeline& rt : runs) {
    for (const auto& q : rt.queues) {
      if (!q.stream.empty()) continue;  // device rows
      count += q.kernel_count;
      max_ms = std::max(max_ms, q.kernel_ms.max);
      with_launch += q.with_launch_info;
      short_kernels += q.short_kernels;
      idle += q.idle_ms;
      host_wait += q.idle_host_wait_ms;
      if (!worst || q.busy_ratio < worst->busy_ratio) worst = &q;
    }
  }
  if (count == 0) return;
  inputs["kernel_count"] = static_cast<double>(count);
  inputs["kernel_max_ms"] = max_ms;
  inputs["kernel_busy_ratio"] = worst->busy_ratio;
  inputs["kernel_avg_gap_ms"] = worst->avg_gap_ms;
  if (with_launch > 0) {
    inputs["kernel_short_share"] = static_cast<double>(short_kernels) / static_cast<double>(with_launch);
    inputs["kernel_host_wait_share"] = idle > 0 ? host_wait / idle : 0;
  }
}

// The series a rule's input is read from, as a /api/v1/series/query selector: where the
// dashboard's drill-down finds a finding's evidence over time.
const std::map<std::string, std::string>& evidence_series() {
  static const std::map<std::string, std::string> m = {
      {"gpu_utilization_avg", kGpuUtilization},
      {"gpu_dram_bandwidth_utilization_avg", kGpuDramUtilization},
      {"host_cpu_utilization_avg", std::string(kHostCpu) + R"({cpu="total"})"},
      {"gpu_memory_used_ratio_peak", kGpuMemoryUsed},
      {"gpu_thermal_throttle_seconds", kGpuThrottle},
      {"gpu_power_cap_throttle_seconds", kGpuThrottle},
  };
  return m;
}

json findings_json(const std::vector<an::Finding>& findings) {
  json b = json::array();
  for (const auto& f : findings) {
    json series = json::object();
    for (const auto& [input, value] : f.evidence) {
      if (auto it = evidence_series().find(input); it != evidence_series().end()) series[input] = it->second;
    }
    json row = {{"id", f.id}, {"title", f.title}, {"status", f.status},
                {"severity", f.severity ? json(an::to_string(*f.severity)) : json(nullptr)},
                {"evidence", f.evidence}, {"evidence_series", series}, {"thresholds", f.thresholds},
                {"recommendations", f.recommendations}};
    if (!f.reason.empty()) row["reason"] = f.reason;
    b.push_back(std::move(row));
  }
  return b;
}

}  // namespace

Result<json> Api::analysis_json(const HttpRequest& request, std::vector<an::ScrapedServing>* scraped_out) const {
  const TimestampNs now = now_ns();
  auto scope_result = scope_of(request);
  if (!scope_result.ok()) return scope_result.status();
  const db::EventScope& scope = *scope_result;
  const std::string& device = scope.device;
  const std::string& run = scope.run;
  auto w = window_or(request, "5m", now);
  if (!w.ok()) return w.status();
  if (!run.empty() && w->all) {
    // One run without a window: its own span (gauges included), from start to end (or now).
    auto r = ctx_.events->run(run);
    if (!r.ok()) return r.status();
    if (!*r) return Status::not_found(no_run_message(run), "run");
    w->from_ns = (*r)->start_ns;
    w->to_ns = (*r)->end_ns.value_or(now);
    w->all = false;
  }
  auto slo_result = serving_slo_of(request);
  if (!slo_result.ok()) return slo_result.status();
  const an::ServingSlo slo = *slo_result;
  auto leak_age = size_param(request, "leak_age_s", 60, 1, 86400 * 30);
  if (!leak_age.ok()) return leak_age.status();
  const db::TimeRange range{w->from_ns, std::min(w->to_ns, now)};

  // The two largest parts of a busy window run on threads of their own while the rest is
  // gathered here: the kernel timeline (every execution unpacked and walked in start order)
  // and the serving metrics (every request read back). The timeline is per run, each over
  // its own span: the idle time between two processes is nobody's.
  auto timeline_part = std::async(std::launch::async, [&]() -> Result<std::vector<RunTimeline>> {
    auto traces = ctx_.events->kernel_traces_by_run(range, scope);
    if (!traces.ok()) return traces.status();
    std::vector<RunTimeline> out;
    for (const db::RunKernelTrace& t : *traces) {
      RunTimeline rt{t.run, {}, {}, {}};
      if (!t.run.empty()) {
        // A duty-cycled run's timeline is over the windows it traced.
        auto report = ctx_.events->run(t.run);
        if (!report.ok()) return report.status();
        if (*report && (*report)->trace_every_ns) {
          auto traced = run_windows(**report, range.from_ns, range.to_ns, now);
          if (!traced.ok()) return traced.status();
          rt.traced = std::move(*traced);
          rt.sampling = sampling_json(**report, *rt.traced);
        }
      }
      an::TimelineOptions options;
      if (rt.traced) options.windows = rt.traced->windows;
      rt.queues = an::analyze_timeline(t.trace, options);
      out.push_back(std::move(rt));
    }
    return out;
  });
  std::vector<InferenceEvent> requests;  // written by serving_part, read after it is done
  auto serving_part = std::async(std::launch::async, [&]() -> Result<std::vector<an::ServingMetrics>> {
    auto read = ctx_.events->inference_events(range, scope);
    if (!read.ok()) return read.status();
    requests = std::move(*read);
    double window_s = static_cast<double>(range.to_ns - range.from_ns) / 1e9;
    if (w->all) {  // "all": rates over the span the requests cover
      TimestampNs lo = INT64_MAX, hi = 0;
      for (const auto& r : requests) {
        lo = std::min(lo, r.ts_ns);
        hi = std::max(hi, r.ts_ns);
      }
      window_s = hi > lo ? static_cast<double>(hi - lo) / 1e9 : 0;
    }
    return an::serving_metrics(requests, window_s, slo);
  });

  // Gauges: every series, raw samples in the window, in one query (one per family listed
  // every series again for each: quadratic in the series a GPU host has), family by family.
  std::vector<SeriesSummary> gauges;
  std::vector<db::SeriesData> power_readings;
  {
    db::HistoryQuery q;
    q.name = "*";
    q.from_ns = range.from_ns;
    q.to_ns = range.to_ns;
    q.max_points = SIZE_MAX;
    auto data = ctx_.history->query(q);
    if (!data.ok()) return data.status();
    std::stable_sort(data->begin(), data->end(),
                     [](const db::SeriesData& a, const db::SeriesData& b) { return a.info.key.name < b.info.key.name; });
    // A scraped histogram's buckets are cumulative counts per bound, no gauge to summarize
    // (a vLLM exposition is mostly buckets); their serving figures are in `inference`.
    std::erase_if(*data, [](const db::SeriesData& d) { return d.info.key.label("le") != nullptr; });
    gauges = summarize_series(*data);
    std::erase_if(*data, [](const db::SeriesData& d) { return d.info.key.name != "gpu_power_watts"; });
    power_readings = std::move(*data);  // for the power while requests were in flight, once they are read
  }

  // Servers perfscope scrapes (vLLM, Triton…) have no requests of their own here: their
  // histograms and counters over the window serve instead. Tags and runs are the reporters'.
  std::vector<an::ScrapedServing> scraped;
  if (!scope.by_tags()) {
    auto s = load_scraped_serving(ctx_, range);
    if (!s.ok()) return s.status();
    scraped = std::move(*s);
  }

  auto buffers = ctx_.events->command_buffers(range, scope);
  if (!buffers.ok()) return buffers.status();
  auto queues = an::analyze_command_queues(*buffers);
  auto kernels = ctx_.events->kernel_summaries(range, scope);
  if (!kernels.ok()) return kernels.status();

  auto timeline_result = timeline_part.get();
  if (!timeline_result.ok()) return timeline_result.status();
  const std::vector<RunTimeline>& run_timelines = *timeline_result;
  // Duty-cycled runs: their kernels' counts and times scaled to the whole of their span
  // (observed / sampled fraction); durations, minima and maxima are as observed.
  json sampling = nullptr;
  {
    json sampled_runs = json::array();
    TimestampNs traced_ns = 0, span_ns = 0;
    for (const RunTimeline& rt : run_timelines) {
      if (!rt.traced) continue;
      sampled_runs.push_back(rt.sampling);
      traced_ns += rt.traced->traced_ns;
      span_ns += rt.traced->span_ns;
      const double f = rt.traced->fraction;
      if (!(f > 0) || f >= 1) continue;
      db::EventScope own = scope;
      own.run = rt.run;
      auto part = ctx_.events->kernel_summaries(range, own);
      if (!part.ok()) return part.status();
      for (const db::KernelSummary& p : *part) {
        auto it = std::find_if(kernels->begin(), kernels->end(), [&](const db::KernelSummary& k) { return k.name == p.name; });
        if (it == kernels->end()) continue;
        it->count += static_cast<std::uint64_t>(std::llround(static_cast<double>(p.count) * (1 / f - 1)));
        it->total_ms += p.total_ms * (1 / f - 1);
      }
    }
    if (!sampled_runs.empty()) {
      std::stable_sort(kernels->begin(), kernels->end(),
                       [](const db::KernelSummary& a, const db::KernelSummary& b) { return a.total_ms > b.total_ms; });
      sampling = {{"sampled_fraction", span_ns > 0 ? static_cast<double>(traced_ns) / static_cast<double>(span_ns) : 1.0},
                  {"runs", sampled_runs}};
    }
  }
  auto serving_result = serving_part.get();
  if (!serving_result.ok()) return serving_result.status();
  const std::vector<an::ServingMetrics>& serving = *serving_result;

  // Memory: counters now, the growth of allocated bytes over the window, leak suspects (only
  // what live processes hold: a run's allocations are released when it ends).
  auto memory = scoped_memory(scope);
  if (!memory.ok()) return memory.status();
  const MemoryStatistics mem = memory->tracker->statistics(device);
  auto mem_timeline = ctx_.events->allocated_timeline(range, scope, 10'000);
  if (!mem_timeline.ok()) return mem_timeline.status();
  an::Trend mem_trend;
  {
    std::vector<double> t, y;
    for (const auto& p : *mem_timeline) {
      t.push_back(static_cast<double>(p.ts_ns - mem_timeline->front().ts_ns) / 1e9);
      y.push_back(p.bytes);
    }
    mem_trend = an::linear_trend(t, y);
  }
  json leak_suspects = json::array();
  const bool growing = mem_trend.significant() && mem_trend.slope_per_second > 0;
  if (growing) {
    const TimestampNs cutoff = now - static_cast<TimestampNs>(*leak_age) * 1'000'000'000;
    for (const LiveAllocation& a : memory->tracker->oldest(20, device)) {
      if (a.ts_ns > cutoff) break;
      json suspect = live_allocation_json(a);
      suspect["age_s"] = static_cast<double>(now - a.ts_ns) / 1e9;
      leak_suspects.push_back(std::move(suspect));
    }
  }

  // Bottleneck inputs: only what was measured.
  an::Inputs inputs;
  auto average_of = [&](const char* family, const Labels& must) -> std::optional<double> {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& g : gauges) {
      if (g.key.name != family) continue;
      bool match = true;
      for (const auto& l : must) match = match && std::find(g.key.labels.begin(), g.key.labels.end(), l) != g.key.labels.end();
      if (!match) continue;
      sum += g.avg;
      ++n;
    }
    return n ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
  };
  if (auto v = average_of(kGpuUtilization, {})) inputs["gpu_utilization_avg"] = *v;
  if (auto v = average_of(kGpuDramUtilization, {})) inputs["gpu_dram_bandwidth_utilization_avg"] = *v;
  if (auto v = average_of(kHostCpu, {{"cpu", "total"}})) inputs["host_cpu_utilization_avg"] = *v;
  {
    std::map<Labels, double> used, total;
    for (const auto& g : gauges) {
      if (g.key.name == kGpuMemoryUsed) used[g.key.labels] = g.peak;
      if (g.key.name == kGpuMemoryTotal) total[g.key.labels] = g.peak;
    }
    double worst = -1;
    for (const auto& [labels, u] : used) {
      if (auto it = total.find(labels); it != total.end() && it->second > 0) worst = std::max(worst, u / it->second);
    }
    if (worst >= 0) inputs["gpu_memory_used_ratio_peak"] = worst;
    bool throttle_seen = false;
    double thermal = 0, power = 0;
    for (const auto& g : gauges) {
      if (g.key.name != kGpuThrottle) continue;
      throttle_seen = true;
      std::string reason;
      for (const auto& [k, v] : g.key.labels) {
        if (k == "reason") reason = v;
      }
      const double increase = std::max(0.0, g.last - g.first);  // a counter: its growth in the window
      if (reason.find("thermal") != std::string::npos) thermal += increase;
      if (reason.find("power") != std::string::npos) power += increase;
    }
    if (throttle_seen) {
      inputs["gpu_thermal_throttle_seconds"] = thermal;
      inputs["gpu_power_cap_throttle_seconds"] = power;
    }
  }
  double worst_p99 = -1;
  for (const auto& m : serving) worst_p99 = std::max(worst_p99, m.latency_ms.p99);
  for (const auto& m : scraped) worst_p99 = std::max(worst_p99, scraped_latency_p99(m).value_or(-1));
  if (worst_p99 >= 0) inputs["latency_p99_ms"] = worst_p99;
  if (slo.latency_ms) inputs["sla_target_ms"] = *slo.latency_ms;
  // Operators (ONNX Runtime nodes and the like): the worst model's CPU fallback.
  auto operator_rows = ctx_.events->operator_executions({"", "", "", scope.wanted_tags()}, range);
  if (!operator_rows.ok()) return operator_rows.status();
  const an::OperatorSummary operators = an::summarize_operators(*operator_rows, {50, 90, 99}, an::PercentileConvention::kNearestRank);
  for (const auto& m : operators.models) {
    if (!m.cpu_fallback_share) continue;
    auto [it, fresh] = inputs.try_emplace("operator_cpu_fallback_share", *m.cpu_fallback_share);
    if (!fresh) it->second = std::max(it->second, *m.cpu_fallback_share);
  }
  // Each GPU against its peaks and targets (reads the kernels' reported work and the gauges).
  const std::vector<GpuDeviceInfo> gpus = ctx_.gpus ? ctx_.gpus->devices() : std::vector<GpuDeviceInfo>{};
  static const std::vector<an::DeviceTarget> kNoTargets;
  const json devices =
      devices_efficiency_json(gpus, ctx_.config ? ctx_.config->engine.device_targets : kNoTargets, gauges, *kernels, inputs);
  // The window's rules read the timeline over every run together (each figure computed within
  // one run's span; the worst device row of any run decides the busy ratio and gaps). With
  // several runs, each run's rules too: its own timeline, the window's gauges.
  std::vector<std::pair<std::string, std::vector<an::Finding>>> run_findings;
  if (run_timelines.size() > 1) {
    for (const RunTimeline& rt : run_timelines) {
      an::Inputs own = inputs;
      add_timeline_inputs(std::span(&rt, 1), own);
      run_findings.emplace_back(rt.run, an::detect_bottlenecks(own));
    }
  }
  add_timeline_inputs(run_timelines, inputs);
  auto findings = an::detect_bottlenecks(inputs);

  // The document.
  json out = {{"schema_version", 1}, {"generated_ns", now}, {"window", window_json(*w)},
              {"device", device.empty() ? json("all") : json(device)}};
  out["methods"] = {
      {"percentiles", "exact over raw samples; nearest rank (value at rank ceil(p/100*n))"},
      {"std", "sample (n-1)"},
      {"trend", "least-squares slope per second, two-sided t-test of slope = 0 (alpha 0.05)"},
      {"timeline", "per run (the run tag; kernels of no run together), each over its own span: busy = union of "
                   "kernel intervals / span; idle gaps: host_wait when the launch call began after "
                   "the previous work ended, kernel_wait when <= 1 us, else other; launch delay = start - launch "
                   "call end; launch efficiency = union of compute kernels / span"},
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
  json g = json::array();
  for (const auto& s : gauges) {
    g.push_back({{"series", s.key.canonical()}, {"name", s.key.name}, {"labels", labels_to_json(s.key.labels)},
                 {"unit", s.unit}, {"count", s.count}, {"avg", s.avg}, {"min", s.min}, {"peak", s.peak},
                 {"p95", s.p95}, {"last", s.last}, {"trend", trend_json(s.trend)}});
  }
  out["gauges"] = g;
  json k = json::array();
  double kernel_total = 0;
  for (const auto& s : *kernels) kernel_total += s.total_ms;
  for (std::size_t i = 0; i < kernels->size() && i < 10; ++i) {
    const auto& s = (*kernels)[i];
    json row = {{"name", s.name}, {"count", s.count}, {"total_ms", s.total_ms}, {"avg_ms", s.avg_ms()},
                {"min_ms", s.min_ms}, {"max_ms", s.max_ms}, {"share", kernel_total > 0 ? s.total_ms / kernel_total : 0.0}};
    // Where the kernel reported its work: its rates and its place on the roofline.
    if (!s.work.empty()) add_kernel_work(row, s, gpus);
    k.push_back(std::move(row));
  }
  out["kernels"] = {{"total_ms", kernel_total}, {"distinct", kernels->size()}, {"top", k}};
  out["operators"] = operators_json(operators, 10);
  out["devices"] = devices;
  out["sampling"] = sampling;
  json tl = json::array();
  for (const RunTimeline& rt : run_timelines) {
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
                    {"launch_efficiency_target", 0.7},
                    {"short_kernels", q.short_kernels}, {"short_kernel_share", q.with_launch_info ? json(q.short_kernel_share) : json(nullptr)},
                    {"launch_delay_ms", distribution_json(q.launch_delay_ms)},
                    {"launch_overhead_ms", distribution_json(q.launch_overhead_ms)},
                    {"kernel_ms", distribution_json(q.kernel_ms)}, {"top_kernels", top}});
    }
  }
  out["timeline"] = tl;
  json cq = json::array();
  for (const auto& q : queues) {
    cq.push_back({{"device", q.device}, {"queue", q.queue}, {"count", q.count},
                  {"submit_to_complete_ms", distribution_json(q.submit_to_complete_ms)},
                  {"queue_wait_ms", distribution_json(q.queue_wait_ms)}, {"utilization", q.utilization}});
  }
  out["command_queues"] = cq;
  json inf = json::array();
  for (const auto& m : serving) inf.push_back(serving_row_json(m));
  for (const auto& m : scraped) inf.push_back(scraped_inference_row(m, slo));
  out["inference"] = inf;
  out["energy"] = energy_json(gauges, serving, request_power(power_readings, requests));
  if (scraped_out) *scraped_out = std::move(scraped);
  json slo_json = json::object();
  if (slo.latency_ms) slo_json["latency_ms"] = *slo.latency_ms;
  if (slo.ttft_ms) slo_json["ttft_ms"] = *slo.ttft_ms;
  if (slo.tpot_ms) slo_json["tpot_ms"] = *slo.tpot_ms;
  out["slo"] = slo_json;
  json by_kind = json::object();
  for (const auto& [kind, c] : mem.by_kind) by_kind[kind] = {{"current_allocated_bytes", c.current_bytes}, {"peak_allocated_bytes", c.peak_bytes}};
  out["memory"] = {{"current_allocated_bytes", mem.all.current_bytes},
                   {"peak_allocated_bytes", mem.all.peak_bytes},
                   {"total_allocated_bytes", mem.all.total_allocated_bytes},
                   {"allocation_count", mem.all.allocation_count},
                   {"free_count", mem.all.free_count},
                   {"by_kind", by_kind},
                   {"module_statics", {{"current_bytes", mem.module_statics.current_bytes},
                                       {"count", mem.module_statics.allocation_count}}},
                   {"growth", trend_json(mem_trend)},
                   {"leak_age_s", *leak_age},
                   {"leak_suspects", leak_suspects}};
  out["bottlenecks"] = findings_json(findings);
  if (!run_findings.empty()) {
    json per_run = json::array();
    for (const auto& [name, f] : run_findings) {
      per_run.push_back({{"run", name.empty() ? json(nullptr) : json(name)}, {"bottlenecks", findings_json(f)}});
    }
    out["runs"] = per_run;
  }
  if (!run.empty()) out["run"] = run;
  json ab = json::array();
  if (ctx_.abtests) {
    auto tests = ctx_.abtests->list(100);
    if (!tests.ok()) return tests.status();
    for (const auto& t : *tests) ab.push_back({{"id", t.id}, {"name", t.name}, {"url", "/api/v1/abtests/" + std::to_string(t.id)}});
  }
  out["abtests"] = ab;
  return out;
}

HttpResponse Api::analysis(const HttpRequest& request) const {
  auto doc = analysis_json(request);
  if (!doc.ok()) return status_response(doc.status());
  return json_response(200, *doc);
}

namespace {

// Per-interval p50 and p99 (nearest rank) of (time, value) points; intervals with fewer than
// `min_count` points are left out.
struct IntervalStats {
  std::vector<TimestampNs> start_ns;
  std::vector<double> p50, p99;
};
IntervalStats per_interval(std::vector<std::pair<TimestampNs, double>> points, TimestampNs interval_ns,
                           std::size_t min_count) {
  IntervalStats out;
  std::sort(points.begin(), points.end());
  std::size_t i = 0;
  while (i < points.size()) {
    const TimestampNs bucket = points[i].first / interval_ns * interval_ns;
    std::vector<double> v;
    while (i < points.size() && points[i].first / interval_ns * interval_ns == bucket) v.push_back(points[i++].second);
    if (v.size() < min_count) continue;
    const double qs[] = {50, 99};
    auto p = an::percentiles(v, qs, an::PercentileConvention::kNearestRank);
    out.start_ns.push_back(bucket);
    out.p50.push_back(p[0]);
    out.p99.push_back(p[1]);
  }
  return out;
}

}  // namespace

HttpResponse Api::regressions(const HttpRequest& request) const {
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
  const db::TimeRange range{w->from_ns, std::min(w->to_ns, now)};
  // Subjects: every kernel name (durations) and every model/version (latency); or only the
  // kernel or model asked for (a drill-down's chart), the other kind not read at all.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<TimestampNs, double>>> subjects;
  auto scope = scope_of(request);
  if (!scope.ok()) return status_response(scope.status());
  const std::string only_kernel = param(request, "kernel"), only_model = param(request, "model");
  const bool every_subject = only_kernel.empty() && only_model.empty();
  if (every_subject || !only_kernel.empty()) {
    auto trace = ctx_.events->kernel_trace(range, *scope);
    if (!trace.ok()) return status_response(trace.status());
    for (const auto& k : trace->kernels) {
      const std::string& name = trace->names[k.name];
      if (!only_kernel.empty() && name != only_kernel) continue;
      subjects[{"kernel", name}].emplace_back(k.end_ns, static_cast<double>(k.end_ns - k.start_ns) / 1e6);
    }
  }
  if (every_subject || !only_model.empty()) {
    auto requests = ctx_.events->inference_events(range, *scope);
    if (!requests.ok()) return status_response(requests.status());
    for (const auto& r : *requests) {
      if (!only_model.empty() && r.model != only_model) continue;
      subjects[{"model", r.version.empty() ? r.model : r.model + "@" + r.version}].emplace_back(r.ts_ns, r.latency_ms);
    }
  }
  json found = json::array();
  std::size_t examined = 0;
  for (auto& [subject, points] : subjects) {
    IntervalStats s = per_interval(std::move(points), *interval, 3);
    ++examined;
    for (auto [stat, values] : {std::pair{"p50", &s.p50}, std::pair{"p99", &s.p99}}) {
      for (const an::ChangePoint& c : an::find_change_points(*values, o)) {
        found.push_back({{subject.first, subject.second}, {"statistic", stat}, {"unit", "ms"},
                         {"at_ns", s.start_ns[c.index]}, {"before", c.before}, {"after", c.after},
                         {"change", c.change}, {"p_value", c.p_value},
                         {"direction", c.change > 0 ? "regression" : "improvement"}});
      }
    }
  }
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
                             {"method", "robust z-score |x - median| / (1.4826 MAD), median and MAD tracked per "
                                        "series in O(1) per sample; anomaly above 6 after 30 samples"},
                             {"anomalies", out}});
}

}  // namespace perfscope::server
