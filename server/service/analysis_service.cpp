#include "server/service/analysis_service.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <future>
#include <map>
#include <span>

#include "engine/analysis/collectives.hpp"
#include "engine/analysis/stats.hpp"
#include "server/service/collectives.hpp"
#include "server/service/run_window.hpp"
#include "server/service/scoped_reads.hpp"
#include "engine/series/metric_names.hpp"

namespace perfscope::service {

namespace an = perfscope::analysis;

namespace {

using namespace perfscope::metric_names;

// The bottleneck rules' timeline inputs from the device rows of the given runs, and what they
// are about: the longest kernel and the device of the worst busy ratio.
void add_timeline_inputs(std::span<const RunTimeline> runs, an::Inputs& inputs, an::Subjects& subjects) {
  std::size_t count = 0, with_launch = 0, short_kernels = 0;
  double max_ms = 0, idle = 0, host_wait = 0;
  const an::QueueTimeline* worst = nullptr;
  const an::QueueTimeline* longest = nullptr;
  for (const RunTimeline& rt : runs) {
    for (const auto& q : rt.queues) {
      if (!q.stream.empty()) continue;  // device rows
      count += q.kernel_count;
      if (!longest || q.kernel_ms.max > max_ms) longest = &q;
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
  subjects["kernel_longest"] = longest->longest_kernel;
  subjects["kernel_longest_device"] = longest->device;
  subjects["kernel_gappiest_device"] = worst->device;
  if (with_launch > 0) {
    inputs["kernel_short_share"] = static_cast<double>(short_kernels) / static_cast<double>(with_launch);
    inputs["kernel_host_wait_share"] = idle > 0 ? host_wait / idle : 0;
  }
}

// The mean of the window's averages of every series of `family` carrying all of `must`.
std::optional<double> average_of(const std::vector<SeriesSummary>& gauges, const char* family, const Labels& must) {
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
}

}  // namespace

const std::map<std::string, std::string>& evidence_series() {
  static const std::map<std::string, std::string> series = {
      {"gpu_utilization_avg", kGpuUtilization},
      {"gpu_dram_bandwidth_utilization_avg", kGpuDramUtilization},
      {"host_cpu_utilization_avg", std::string(kHostCpu) + R"({cpu="total"})"},
      {"gpu_memory_used_ratio_peak", kGpuMemoryUsed},
      {"gpu_thermal_throttle_seconds", kGpuThrottle},
      {"gpu_power_cap_throttle_seconds", kGpuThrottle}};
  return series;
}

namespace {

// The bottleneck rules' inputs from the gauges: only what was measured (evidence_series() says
// which series each is read from).
void add_gauge_inputs(const std::vector<SeriesSummary>& gauges, an::Inputs& inputs) {
  if (auto v = average_of(gauges, kGpuUtilization, {})) inputs["gpu_utilization_avg"] = *v;
  if (auto v = average_of(gauges, kGpuDramUtilization, {})) inputs["gpu_dram_bandwidth_utilization_avg"] = *v;
  if (auto v = average_of(gauges, kHostCpu, {{"cpu", "total"}})) inputs["host_cpu_utilization_avg"] = *v;
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
    const std::string* reason = g.key.label("reason");
    const double increase = std::max(0.0, g.last - g.first);  // a counter: its growth in the window
    if (reason && reason->find("thermal") != std::string::npos) thermal += increase;
    if (reason && reason->find("power") != std::string::npos) power += increase;
  }
  if (throttle_seen) {
    inputs["gpu_thermal_throttle_seconds"] = thermal;
    inputs["gpu_power_cap_throttle_seconds"] = power;
  }
}

// A rank's name as a number, where it is one (else "pid N" for processes without a rank).
void set_rank_input(const std::string& rank, const char* key, an::Inputs& inputs) {
  if (double number = 0; std::from_chars(rank.data(), rank.data() + rank.size(), number).ec == std::errc()) {
    inputs[key] = number;
  }
}

// The straggler and communication rules' inputs from a run's collectives (none when its GPUs
// met in none); over several runs, the worst straggler's and the most exposed rank's.
// The bus-bandwidth rule looks at messages this large: smaller ones are latency-bound.
constexpr double kLargeCollectiveBytes = 16.0 * 1024 * 1024;

void add_collective_inputs(const an::CollectiveAnalysis& c, an::Inputs& inputs) {
  if (c.matched == 0) return;
  inputs["collective_matched"] += static_cast<double>(c.matched);
  // Communication the GPU waits for while it moves data: a step's (the window's where no steps
  // were found) exposed transfer, its share of the step; waiting for other ranks is the
  // straggler rule's.
  double& exposed = inputs["collective_exposed_transfer_share"];
  for (const an::RankCollectiveSummary& r : c.ranks) {
    const an::TimeBreakdown& b = r.per_step ? *r.per_step : r.breakdown;
    const double transfer_share = b.window_ms > 0 ? b.exposed_transfer_ms / b.window_ms : 0;
    if (transfer_share <= exposed) continue;
    exposed = transfer_share;
    inputs["collective_exposed_share"] = b.exposed_share;
    inputs["collective_exposed_ms"] = b.exposed_ms;
    inputs["collective_overlap_ratio"] = b.overlap_ratio;
    inputs["collective_wait_share"] = r.wait_share;
    set_rank_input(r.rank, "collective_exposed_rank", inputs);
  }
  // Large collectives against the links' peak: the lowest share of any operation and size.
  for (const an::CollectiveOpSummary& o : c.ops) {
    if (o.bytes < kLargeCollectiveBytes || !(o.busbw_share_of_peak > 0)) continue;
    auto it = inputs.find("collective_large_busbw_share_of_peak");
    if (it != inputs.end() && it->second <= o.busbw_share_of_peak) continue;
    inputs["collective_large_busbw_share_of_peak"] = o.busbw_share_of_peak;
    inputs["collective_large_busbw_gb_per_second"] = o.busbw_p50_gb_per_second;
    inputs["collective_large_link_peak_gb_per_second"] = o.busbw_p50_gb_per_second / o.busbw_share_of_peak;
    inputs["collective_large_bytes"] = o.bytes;
  }
  double& worst = inputs["collective_straggler_extra_share"];
  if (!c.straggler || !(c.straggler->step_median_ms > 0)) return;
  const double share = c.straggler->extra_per_step_ms / c.straggler->step_median_ms;
  if (share <= worst) return;
  worst = share;
  inputs["collective_straggler_extra_ms"] = c.straggler->extra_per_step_ms;
  inputs["collective_straggler_last_share"] = c.straggler->last_share;
  set_rank_input(c.straggler->rank, "collective_straggler_rank", inputs);
}

// The window's gauges into `doc`: every series, raw samples in the window, in one query (one per
// family listed every series again for each: quadratic in the series a GPU host has), family by
// family. Returns the GPUs' power readings, for the power while requests were in flight.
Result<std::vector<db::SeriesData>> add_gauges(const db::SeriesHistory& history, const db::TimeRange& range,
                                               AnalysisDocument& doc) {
  db::HistoryQuery q;
  q.name = "*";
  q.from_ns = range.from_ns;
  q.to_ns = range.to_ns;
  q.max_points = SIZE_MAX;
  PERFSCOPE_ASSIGN_OR_RETURN(auto data, history.query(q));
  std::stable_sort(data.begin(), data.end(),
                   [](const db::SeriesData& a, const db::SeriesData& b) { return a.info.key.name < b.info.key.name; });
  // A scraped histogram's buckets are cumulative counts per bound, no gauge to summarize
  // (a vLLM exposition is mostly buckets); their serving figures are in `inference`.
  std::erase_if(data, [](const db::SeriesData& d) { return d.info.key.label("le") != nullptr; });
  doc.gauges = summarize_series(data);
  std::erase_if(data, [](const db::SeriesData& d) { return d.info.key.name != kGpuPower; });
  return data;  // for the power while requests were in flight, once they are read
}

// Duty-cycled runs: their kernels' counts and times in `doc` scaled to the whole of their span
// (observed / sampled fraction); durations, minima and maxima are as observed.
Status scale_duty_cycled_kernels(const db::EventReader& events, const db::TimeRange& range, const db::EventScope& scope,
                                 AnalysisDocument& doc) {
  bool sampled = false;
  TimestampNs traced_ns = 0, span_ns = 0;
  for (const RunTimeline& rt : doc.timelines) {
    if (!rt.traced) continue;
    sampled = true;
    traced_ns += rt.traced->traced_ns;
    span_ns += rt.traced->span_ns;
    const double f = rt.traced->fraction;
    if (!(f > 0) || f >= 1) continue;
    db::EventScope own = scope;
    own.run = rt.run;
    PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<db::KernelSummary> part, events.kernel_summaries(range, own));
    for (const db::KernelSummary& p : part) {
      auto it = std::find_if(doc.kernels.begin(), doc.kernels.end(), [&](const db::KernelSummary& k) { return k.name == p.name; });
      if (it == doc.kernels.end()) continue;
      it->count += static_cast<std::uint64_t>(std::llround(static_cast<double>(p.count) * (1 / f - 1)));
      it->total_ms += p.total_ms * (1 / f - 1);
    }
  }
  if (sampled) {
    std::stable_sort(doc.kernels.begin(), doc.kernels.end(),
                     [](const db::KernelSummary& a, const db::KernelSummary& b) { return a.total_ms > b.total_ms; });
    doc.sampled_fraction = span_ns > 0 ? static_cast<double>(traced_ns) / static_cast<double>(span_ns) : 1.0;
  }
  return Status();
}

// Memory into `doc`: counters now, the growth of allocated bytes over the window, leak suspects
// (only what live processes hold: a run's allocations are released when it ends).
Status add_memory(const db::EventReader& events, const MemoryTracker* live, const AnalysisQuery& query,
                  const db::TimeRange& range, AnalysisDocument& doc) {
  const db::EventScope& scope = query.scope;
  const TimestampNs now = query.now;
  PERFSCOPE_ASSIGN_OR_RETURN(auto memory, scoped_memory(events, live, scope));
  doc.memory.statistics = memory.tracker->statistics(scope.device);
  doc.memory.leak_age_s = query.leak_age_s;
  PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<db::AllocatedPoint> mem_timeline,
                             events.allocated_timeline(range, scope, 10'000));
  {
    std::vector<double> t, y;
    for (const auto& p : mem_timeline) {
      t.push_back(static_cast<double>(p.ts_ns - mem_timeline.front().ts_ns) / 1e9);
      y.push_back(p.bytes);
    }
    doc.memory.growth = an::linear_trend(t, y);
  }
  if (doc.memory.growth.significant() && doc.memory.growth.slope_per_second > 0) {
    const TimestampNs cutoff = now - static_cast<TimestampNs>(query.leak_age_s) * 1'000'000'000;
    for (const LiveAllocation& a : memory.tracker->oldest(20, scope.device)) {
      if (a.ts_ns > cutoff) break;
      doc.memory.leak_suspects.push_back({a, static_cast<double>(now - a.ts_ns) / 1e9});
    }
  }
  return Status();
}

}  // namespace

namespace {

// The kernel timeline per run, each over its own span (the idle time between two processes is
// nobody's); a duty-cycled run's over the windows it traced. `nccl`: some run's kernels hold
// NCCL collectives.
Result<std::vector<RunTimeline>> run_timelines(const Sources& sources, const db::TimeRange& range,
                                               const db::EventScope& scope, TimestampNs now, bool& nccl) {
  const db::EventReader& events = *sources.events;
  PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<db::RunKernelTrace> traces, events.kernel_traces_by_run(range, scope));
  std::vector<RunTimeline> out;
  for (const db::RunKernelTrace& t : traces) {
    RunTimeline rt{t.run, {}, {}, {}};
    if (!t.run.empty()) {
      PERFSCOPE_ASSIGN_OR_RETURN(const std::optional<RunEvent> report, events.run(t.run));
      if (report && report->trace_every_ns) {
        PERFSCOPE_ASSIGN_OR_RETURN(rt.traced, run_windows(*sources.history, *report, range.from_ns, range.to_ns, now));
        if (rt.traced) rt.report = *report;
      }
    }
    an::TimelineOptions options;
    if (rt.traced) options.windows = rt.traced->windows;
    rt.queues = an::analyze_timeline(t.trace, options);
    nccl = nccl || std::any_of(t.trace.names.begin(), t.trace.names.end(),
                               [](const std::string& name) { return name.starts_with("nccl"); });
    out.push_back(std::move(rt));
  }
  return out;
}

// The serving metrics of the reported requests (`requests` gets them); for "all", rates over
// the span the requests cover.
Result<std::vector<an::ServingMetrics>> reported_serving(const db::EventReader& events, const db::TimeRange& range,
                                                         const db::EventScope& scope, bool all, const an::ServingSlo& slo,
                                                         std::vector<InferenceEvent>& requests) {
  PERFSCOPE_ASSIGN_OR_RETURN(requests, events.inference_events(range, scope));
  double window_s = static_cast<double>(range.to_ns - range.from_ns) / 1e9;
  if (all) {
    TimestampNs lo = INT64_MAX, hi = 0;
    for (const auto& r : requests) {
      lo = std::min(lo, r.ts_ns);
      hi = std::max(hi, r.ts_ns);
    }
    window_s = hi > lo ? static_cast<double>(hi - lo) / 1e9 : 0;
  }
  return an::serving_metrics(requests, window_s, slo);
}

// Operators (ONNX Runtime nodes and the like) with the worst model's CPU fallback, and each GPU
// against its peaks and targets (reads the kernels' reported work and the gauges).
Status add_operators_and_devices(const Sources& sources, const db::TimeRange& range, const db::EventScope& scope,
                                 AnalysisDocument& doc, an::Inputs& inputs) {
  const db::OperatorSelector every_operator{"", "", "", scope.wanted_tags()};
  PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<an::OperatorExecution> operator_rows,
                             sources.events->operator_executions(every_operator, range));
  doc.operators = an::summarize_operators(operator_rows, {50, 90, 99}, an::PercentileConvention::kNearestRank);
  for (const auto& m : doc.operators.models) {
    if (!m.cpu_fallback_share) continue;
    auto [it, fresh] = inputs.try_emplace("operator_cpu_fallback_share", *m.cpu_fallback_share);
    if (!fresh) it->second = std::max(it->second, *m.cpu_fallback_share);
  }
  if (sources.gpus) doc.gpus = sources.gpus->devices();
  static const std::vector<an::DeviceTarget> kNoTargets;
  std::optional<double> worst_of_minimum;
  doc.devices = device_efficiency(doc.gpus, sources.device_targets ? *sources.device_targets : kNoTargets, doc.gauges,
                                  doc.kernels, worst_of_minimum);
  if (worst_of_minimum) inputs["device_target_of_minimum_worst"] = *worst_of_minimum;
  return Status();
}

// The window's rules read the timeline over every run together (each figure computed within
// one run's span; the worst device row of any run decides the busy ratio and gaps). With
// several runs, each run's rules too: its own timeline, the window's gauges. Multi-GPU jobs:
// their collectives by rank, read again with the ranks' tags (only where some run holds NCCL
// kernels), as GET /api/v1/collectives gives them.
Status add_findings(const db::EventReader& events, const db::TimeRange& range, const db::EventScope& scope, bool nccl,
                    AnalysisDocument& doc, an::Inputs& inputs) {
  std::map<std::string, an::CollectiveAnalysis> collectives;
  if (nccl) {
    an::CollectiveOptions options;
    options.link_peak_bytes_per_second = link_peak_bytes_per_second(doc.gpus);
    PERFSCOPE_ASSIGN_OR_RETURN(doc.collectives, read_collectives(events, range, scope, options));
    for (const JobCollectives& job : doc.collectives) collectives.emplace(job.run, job.analysis);
  }
  if (doc.timelines.size() > 1) {
    for (const RunTimeline& rt : doc.timelines) {
      an::Inputs own = inputs;
      an::Subjects own_subjects;
      add_timeline_inputs(std::span(&rt, 1), own, own_subjects);
      if (auto it = collectives.find(rt.run); it != collectives.end()) add_collective_inputs(it->second, own);
      doc.run_findings.emplace_back(rt.run, an::detect_bottlenecks(own, own_subjects));
    }
  }
  an::Subjects subjects;
  add_timeline_inputs(doc.timelines, inputs, subjects);
  for (const auto& [run, c] : collectives) add_collective_inputs(c, inputs);
  doc.findings = an::detect_bottlenecks(inputs, subjects);
  return Status();
}

}  // namespace

Result<AnalysisDocument> AnalysisService::analyze(const AnalysisQuery& query) const {
  const db::EventReader& events = *sources_.events;
  const TimestampNs now = query.now;
  const db::EventScope& scope = query.scope;
  AnalysisDocument doc;
  doc.generated_ns = now;
  doc.device = scope.device;
  doc.run = scope.run;
  doc.slo = query.slo;
  doc.window = query.window;
  server::TimeWindow& w = doc.window;
  // One run without a window: its own span (gauges included).
  PERFSCOPE_RETURN_IF_ERROR(resolve_run_window(events, scope.run, w, now));
  const db::TimeRange range{w.from_ns, std::min(w.to_ns, now)};

  // The two largest parts of a busy window run on threads of their own while the rest is
  // gathered here: the kernel timeline (every execution unpacked and walked in start order)
  // and the serving metrics (every request read back).
  bool nccl = false;  // written by timeline_part
  auto timeline_part = std::async(std::launch::async, [&] { return run_timelines(sources_, range, scope, now, nccl); });
  std::vector<InferenceEvent> requests;  // written by serving_part, read after it is done
  auto serving_part = std::async(std::launch::async, [&] {
    return reported_serving(events, range, scope, w.all, query.slo, requests);
  });

  PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<db::SeriesData> power_readings,
                             add_gauges(*sources_.history, range, doc));
  // Servers perfscope scrapes (vLLM, Triton…) have no requests of their own here: their
  // histograms and counters over the window serve instead. Tags and runs are the reporters'.
  if (!scope.by_tags()) {
    PERFSCOPE_ASSIGN_OR_RETURN(auto scraped, load_scraped_serving(*sources_.history, range));
    doc.scraped = scraped_models(std::move(scraped), query.slo);
  }
  PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<CommandBufferEvent> buffers, events.command_buffers(range, scope));
  doc.command_queues = an::analyze_command_queues(buffers);
  PERFSCOPE_ASSIGN_OR_RETURN(doc.kernels, events.kernel_summaries(range, scope));

  PERFSCOPE_ASSIGN_OR_RETURN(doc.timelines, timeline_part.get());
  PERFSCOPE_RETURN_IF_ERROR(scale_duty_cycled_kernels(events, range, scope, doc));
  for (const auto& s : doc.kernels) doc.kernel_total_ms += s.total_ms;
  PERFSCOPE_ASSIGN_OR_RETURN(doc.serving, serving_part.get());
  PERFSCOPE_RETURN_IF_ERROR(add_memory(events, sources_.memory, query, range, doc));

  an::Inputs inputs;
  add_gauge_inputs(doc.gauges, inputs);
  double worst_p99 = -1;
  for (const auto& m : doc.serving) worst_p99 = std::max(worst_p99, m.latency_ms.p99);
  for (const auto& m : doc.scraped) worst_p99 = std::max(worst_p99, an::scraped_latency_p99(m.serving).value_or(-1));
  if (worst_p99 >= 0) inputs["latency_p99_ms"] = worst_p99;
  if (query.slo.latency_ms) inputs["sla_target_ms"] = *query.slo.latency_ms;
  PERFSCOPE_RETURN_IF_ERROR(add_operators_and_devices(sources_, range, scope, doc, inputs));
  PERFSCOPE_RETURN_IF_ERROR(add_findings(events, range, scope, nccl, doc, inputs));

  doc.top_kernels = kernel_rows(doc.kernels, doc.kernel_total_ms, doc.gpus, 10);
  doc.energy = energy_figures(doc.gauges, doc.serving, request_power(power_readings, requests));
  if (sources_.abtests) {
    PERFSCOPE_ASSIGN_OR_RETURN(const std::vector<db::AbTestRecord> tests, sources_.abtests->list(100));
    for (const auto& t : tests) doc.abtests.push_back({t.id, t.name});
  }
  return doc;
}

}  // namespace perfscope::service
