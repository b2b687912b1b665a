// Kernel timeline, serving metrics, trends and bottleneck rules on crafted inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "engine/analysis/bottlenecks.hpp"
#include "engine/analysis/change_points.hpp"
#include "engine/analysis/serving.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/analysis/timeline_view.hpp"
#include "engine/analysis/trend.hpp"
#include "engine/analysis/anomaly_monitor.hpp"
#include "engine/analysis/gpu_alerts.hpp"

namespace perfscope::analysis {
namespace {

constexpr double kTol = 1e-9;

TEST(Timeline, TracedWindowsMergeClipAndGiveTheirShare) {
  auto t = traced_windows({{500, 700}, {0, 100}, {90, 150}, {900, 2000}}, 50, 1000);
  ASSERT_EQ(t.windows.size(), 3u);
  EXPECT_EQ(t.windows[0].from_ns, 50);  // clipped to the range
  EXPECT_EQ(t.windows[0].to_ns, 150);   // [0,100] and [90,150] merged
  EXPECT_EQ(t.windows[2].to_ns, 1000);
  EXPECT_EQ(t.traced_ns, 100 + 200 + 100);
  EXPECT_EQ(t.span_ns, 950);
  EXPECT_NEAR(t.fraction, 400.0 / 950, kTol);
  EXPECT_EQ(traced_windows({}, 10, 10).fraction, 1.0);
}

TEST(Timeline, DutyCycledTraceCountsNoIdleBetweenWindows) {
  KernelTrace t;
  t.names = {"gemm"};
  t.devices = {"0"};
  t.streams = {"7"};
  // Window [0,1000): kernels [100,200] [300,400]; window [10000,11000): [10100,10200].
  t.kernels = {{100, 200, kNoLaunch, kNoLaunch, 0, 0, 0},
               {300, 400, kNoLaunch, kNoLaunch, 0, 0, 0},
               {10100, 10200, kNoLaunch, kNoLaunch, 0, 0, 0}};
  const TimeInterval windows[] = {{0, 1000}, {10000, 11000}};
  TimelineOptions o;
  o.windows = windows;
  const QueueTimeline dev = analyze_timeline(t, o)[0];
  // Span: 100 → 10200 less the untraced 400 → 10100.
  EXPECT_NEAR(dev.span_ms, 400e-6, kTol);
  EXPECT_NEAR(dev.busy_ms, 300e-6, kTol);
  EXPECT_NEAR(dev.busy_ratio, 0.75, kTol);
  EXPECT_EQ(dev.gaps, 1u);  // only the one inside the first window
  EXPECT_NEAR(dev.idle_ms, 100e-6, kTol);
  // Without windows the same trace is mostly idle.
  EXPECT_NEAR(analyze_timeline(t)[0].busy_ratio, 300.0 / 10100, kTol);
}

TEST(Timeline, BusyUnionGapsAndLaunchFigures) {
  KernelTrace t;
  t.names = {"gemm", "memcpy_h2d"};
  t.devices = {"0"};
  t.streams = {"7", "9"};
  // Stream 7: [0,100] [101,200] (a 1 ns gap: back to back), then [1000,1100] launched at
  // 900–950 after the previous work ended at 400 (host wait). Stream 9: a copy [150,400].
  t.kernels = {
      {0, 100, -50, -10, 0, 0, 0},
      {101, 200, 50, 60, 0, 0, 0},
      {1000, 1100, 900, 950, 0, 0, 0},
      {150, 400, kNoLaunch, kNoLaunch, 1, 0, 1},
  };
  TimelineOptions o;
  o.kernel_wait_max_ns = 1;
  auto rows = analyze_timeline(t, o);
  ASSERT_EQ(rows.size(), 3u);  // device 0, then streams 7 and 9
  const QueueTimeline& dev = rows[0];
  EXPECT_EQ(dev.stream, "");
  EXPECT_EQ(dev.kernel_count, 4u);
  EXPECT_NEAR(dev.span_ms, 1100e-6, kTol);
  // Union: [0,100] + [101,400] + [1000,1100] = 100 + 299 + 100.
  EXPECT_NEAR(dev.busy_ms, 499e-6, kTol);
  EXPECT_NEAR(dev.busy_ratio, 499.0 / 1100, kTol);
  EXPECT_EQ(dev.gaps, 2u);
  EXPECT_NEAR(dev.idle_kernel_wait_ms, 1e-6, kTol);   // 100 → 101
  EXPECT_NEAR(dev.idle_host_wait_ms, 600e-6, kTol);   // 400 → 1000, launched at 900 > 400
  EXPECT_NEAR(dev.idle_other_ms, 0, kTol);
  // Compute excludes the copy: [0,100] [101,200] [1000,1100] = 299.
  EXPECT_NEAR(dev.launch_efficiency, 299.0 / 1100, kTol);
  // Launch delay = start − call end, clipped at 0: 10, 41, 50.
  EXPECT_EQ(dev.launch_delay_ms.count, 3u);
  EXPECT_NEAR(dev.launch_delay_ms.max, 50e-6, kTol);
  EXPECT_NEAR(dev.launch_delay_ms.mean, (10 + 41 + 50) / 3.0 * 1e-6, kTol);
  // Short kernels: shorter than their 40, 10, 50 ns calls → none is shorter than the call.
  EXPECT_EQ(dev.with_launch_info, 3u);
  EXPECT_EQ(dev.short_kernels, 0u);
  ASSERT_FALSE(dev.top_kernels.empty());
  EXPECT_EQ(dev.top_kernels[0].name, "gemm");
  EXPECT_EQ(rows[1].stream, "7");
  EXPECT_EQ(rows[1].kernel_count, 3u);
  EXPECT_NEAR(rows[1].idle_other_ms, 0, kTol);
  EXPECT_NEAR(rows[1].idle_host_wait_ms, 800e-6, kTol);  // 200 → 1000 on its own stream
  EXPECT_EQ(rows[2].stream, "9");
  EXPECT_NEAR(rows[2].launch_efficiency, 0, kTol);
}

TEST(Timeline, ShortKernelsAndOtherGaps) {
  KernelTrace t;
  t.names = {"tiny"};
  t.devices = {"0"};
  t.streams = {""};
  for (int i = 0; i < 10; ++i) {
    TimestampNs s = i * 10'000;
    t.kernels.push_back({s, s + 2'000, s - 8'000, s - 3'000, 0, 0, 0});  // 2 µs kernel, 5 µs call
  }
  auto rows = analyze_timeline(t);
  EXPECT_EQ(rows[0].short_kernels, 10u);
  EXPECT_NEAR(rows[0].short_kernel_share, 1.0, kTol);
  EXPECT_NEAR(rows[0].idle_other_ms, 9 * 8e-3, kTol);  // launched before the gap: not host wait
  EXPECT_EQ(rows[1].stream, "default");
}

// The timeline the plain way, for comparison: each queue's kernels stably sorted by start,
// walked once; distributions by a full sort.
QueueTimeline reference_queue(const KernelTrace& t, std::vector<const TraceKernel*> ks, const TimelineOptions& o) {
  std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  QueueTimeline q;
  q.kernel_count = ks.size();
  auto dist = [](std::vector<TimestampNs> v) {
    Distribution d;
    if (v.empty()) return d;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (TimestampNs x : v) sum += static_cast<double>(x);
    auto rank = [&](double p) { return v[static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size()))) - 1]; };
    d.count = v.size();
    d.mean = sum / static_cast<double>(v.size()) / 1e6;
    d.p50 = static_cast<double>(rank(50)) / 1e6;
    d.p95 = static_cast<double>(rank(95)) / 1e6;
    d.max = static_cast<double>(v.back()) / 1e6;
    return d;
  };
  // Union of intervals, and of compute intervals, with the gaps between busy stretches.
  TimestampNs first = ks.front()->start_ns, last = 0, busy = 0, compute_busy = 0;
  TimestampNs gs = ks.front()->start_ns, ge = ks.front()->end_ns, cs = -1, ce = -1;
  TimestampNs host = 0, kwait = 0, other = 0;
  std::vector<TimestampNs> durations, delays, overheads;
  std::map<std::string, TopKernel> tops;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const TraceKernel& k = *ks[i];
    last = std::max(last, k.end_ns);
    if (i > 0 && k.start_ns > ge) {
      busy += ge - gs;
      const TimestampNs gap = k.start_ns - ge;
      if (k.launch_start_ns != kNoLaunch && k.launch_start_ns > ge) {
        host += gap;
      } else if (gap <= o.kernel_wait_max_ns) {
        kwait += gap;
      } else {
        other += gap;
      }
      ++q.gaps;
      gs = k.start_ns;
      ge = k.end_ns;
    } else {
      ge = std::max(ge, k.end_ns);
    }
    if (is_compute_kernel(t.names[k.name])) {
      if (ce < 0 || k.start_ns > ce) {
        if (ce >= 0) compute_busy += ce - cs;
        cs = k.start_ns;
        ce = k.end_ns;
      } else {
        ce = std::max(ce, k.end_ns);
      }
    }
    durations.push_back(k.end_ns - k.start_ns);
    if (k.launch_end_ns != kNoLaunch) delays.push_back(std::max<TimestampNs>(0, k.start_ns - k.launch_end_ns));
    if (k.launch_start_ns != kNoLaunch && k.launch_end_ns != kNoLaunch) {
      overheads.push_back(k.launch_end_ns - k.launch_start_ns);
      ++q.with_launch_info;
      q.short_kernels += k.end_ns - k.start_ns < k.launch_end_ns - k.launch_start_ns;
    }
    TopKernel& top = tops[t.names[k.name]];
    top.name = t.names[k.name];
    ++top.count;
    top.total_ms += static_cast<double>(k.end_ns - k.start_ns) / 1e6;
  }
  busy += ge - gs;
  if (ce >= 0) compute_busy += ce - cs;
  const TimestampNs span = last - first;
  q.span_ms = static_cast<double>(span) / 1e6;
  q.busy_ms = static_cast<double>(busy) / 1e6;
  q.idle_ms = static_cast<double>(span - busy) / 1e6;
  q.busy_ratio = span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 1.0;
  q.launch_efficiency = span > 0 ? static_cast<double>(compute_busy) / static_cast<double>(span) : 1.0;
  q.idle_host_wait_ms = static_cast<double>(host) / 1e6;
  q.idle_kernel_wait_ms = static_cast<double>(kwait) / 1e6;
  q.idle_other_ms = static_cast<double>(other) / 1e6;
  q.launch_delay_ms = dist(delays);
  q.launch_overhead_ms = dist(overheads);
  q.kernel_ms = dist(durations);
  for (auto& [name, top] : tops) q.top_kernels.push_back(top);
  std::stable_sort(q.top_kernels.begin(), q.top_kernels.end(),
                   [](const TopKernel& a, const TopKernel& b) { return a.total_ms > b.total_ms; });
  return q;
}

void expect_same_distribution(const Distribution& got, const Distribution& want, const std::string& what) {
  EXPECT_EQ(got.count, want.count) << what;
  EXPECT_NEAR(got.mean, want.mean, 1e-9) << what;
  EXPECT_EQ(got.p50, want.p50) << what;
  EXPECT_EQ(got.p95, want.p95) << what;
  EXPECT_EQ(got.max, want.max) << what;
}

// A random trace on 2 devices × 3 streams, 7 kernel names (one a copy), some without launch
// calls, many equal starts (coarse times); `runs` true: series by series in start order, as
// the database returns them (merged); false: shuffled (too many runs: sorted).
KernelTrace random_trace(std::mt19937_64& rng, std::size_t n, bool runs) {
  KernelTrace t;
  t.names = {"gemm", "attn", "norm", "memcpy_d2h", "rope", "softmax", "ncclAllReduce"};
  t.devices = {"1", "0"};
  t.streams = {"", "9", "3"};
  std::uniform_int_distribution<int> pick(0, 1'000'000);
  for (std::size_t i = 0; i < n; ++i) {
    TraceKernel k;
    k.start_ns = pick(rng) / 1000 * 1000;  // equal starts are common
    k.end_ns = k.start_ns + pick(rng) % 5'000;
    if (pick(rng) % 5 != 0) {
      k.launch_start_ns = k.start_ns - pick(rng) % 9'000;
      k.launch_end_ns = k.launch_start_ns + pick(rng) % 6'000;
    } else if (pick(rng) % 2 == 0) {
      k.launch_end_ns = k.start_ns - pick(rng) % 3'000;  // only the call's end
    }
    k.name = static_cast<std::uint32_t>(pick(rng) % t.names.size());
    k.device = static_cast<std::uint32_t>(pick(rng) % 2);
    k.stream = static_cast<std::uint32_t>(pick(rng) % 3);
    t.kernels.push_back(k);
  }
  if (runs) {
    std::stable_sort(t.kernels.begin(), t.kernels.end(), [](const TraceKernel& a, const TraceKernel& b) {
      return std::tuple(a.name, a.device, a.stream, a.start_ns) < std::tuple(b.name, b.device, b.stream, b.start_ns);
    });
  }
  return t;
}

TEST(Timeline, MatchesThePlainComputationWhetherMergedOrSorted) {
  std::mt19937_64 rng(11);
  for (bool runs : {true, false}) {
    for (std::size_t n : {1, 2, 50, 5000}) {
      const KernelTrace t = random_trace(rng, n, runs);
      TimelineOptions o;
      o.kernel_wait_max_ns = 500;
      o.top_kernels = 3;
      const auto rows = analyze_timeline(t, o);
      // Expected rows: devices "0" then "1" (name order), then their streams "" (as
      // "default"), "3", "9".
      std::vector<std::pair<std::string, std::vector<const TraceKernel*>>> queues;
      for (std::uint32_t d : {1u, 0u}) {
        std::vector<const TraceKernel*> ks;
        for (const auto& k : t.kernels) if (k.device == d) ks.push_back(&k);
        if (!ks.empty()) queues.emplace_back(t.devices[d], ks);
      }
      for (std::uint32_t d : {1u, 0u}) {
        for (std::uint32_t st : {0u, 2u, 1u}) {
          std::vector<const TraceKernel*> ks;
          for (const auto& k : t.kernels) if (k.device == d && k.stream == st) ks.push_back(&k);
          if (!ks.empty()) queues.emplace_back(t.devices[d] + "/" + t.streams[st], ks);
        }
      }
      ASSERT_EQ(rows.size(), queues.size()) << n;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string what = queues[i].first + (runs ? " merged, n=" : " sorted, n=") + std::to_string(n);
        const QueueTimeline want = reference_queue(t, queues[i].second, o);
        const QueueTimeline& got = rows[i];
        EXPECT_EQ(got.kernel_count, want.kernel_count) << what;
        EXPECT_EQ(got.gaps, want.gaps) << what;
        EXPECT_NEAR(got.span_ms, want.span_ms, 1e-12) << what;
        EXPECT_NEAR(got.busy_ms, want.busy_ms, 1e-12) << what;
        EXPECT_NEAR(got.busy_ratio, want.busy_ratio, 1e-12) << what;
        EXPECT_NEAR(got.launch_efficiency, want.launch_efficiency, 1e-12) << what;
        EXPECT_NEAR(got.idle_host_wait_ms, want.idle_host_wait_ms, 1e-12) << what;
        EXPECT_NEAR(got.idle_kernel_wait_ms, want.idle_kernel_wait_ms, 1e-12) << what;
        EXPECT_NEAR(got.idle_other_ms, want.idle_other_ms, 1e-12) << what;
        EXPECT_EQ(got.with_launch_info, want.with_launch_info) << what;
        EXPECT_EQ(got.short_kernels, want.short_kernels) << what;
        expect_same_distribution(got.launch_delay_ms, want.launch_delay_ms, what + " delay");
        expect_same_distribution(got.launch_overhead_ms, want.launch_overhead_ms, what + " overhead");
        expect_same_distribution(got.kernel_ms, want.kernel_ms, what + " duration");
        ASSERT_EQ(got.top_kernels.size(), std::min<std::size_t>(3, want.top_kernels.size())) << what;
        for (std::size_t j = 0; j < got.top_kernels.size(); ++j) {
          EXPECT_EQ(got.top_kernels[j].count, want.top_kernels[j].count) << what;
          EXPECT_NEAR(got.top_kernels[j].total_ms, want.top_kernels[j].total_ms, 1e-9) << what;
        }
      }
    }
  }
}

TEST(CommandQueues, LatencyWaitAndUtilization) {
  std::vector<CommandBufferEvent> b(2);
  b[0].queue = b[1].queue = "q";
  b[0].enqueue_ns = 0, b[0].submit_ns = 10, b[0].start_ns = 20, b[0].end_ns = 60;
  b[1].enqueue_ns = 50, b[1].submit_ns = 60, b[1].start_ns = 100, b[1].end_ns = 110;
  auto q = analyze_command_queues(b);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].count, 2u);
  EXPECT_NEAR(q[0].submit_to_complete_ms.max, 50e-6, kTol);
  EXPECT_NEAR(q[0].queue_wait_ms.mean, 25e-6, kTol);
  EXPECT_NEAR(q[0].utilization, 50.0 / 100, kTol);  // busy 40 + 10 over submit 10 → end 110
}

InferenceEvent request(double latency, std::optional<double> ttft, std::optional<std::uint64_t> tokens, bool ok = true) {
  InferenceEvent e;
  e.model = "m";
  e.latency_ms = latency;
  e.ttft_ms = ttft;
  e.output_tokens = tokens;
  e.ok = ok;
  e.batch_size = 2;
  return e;
}

TEST(Serving, ThroughputTpotItlAndGoodput) {
  std::vector<InferenceEvent> rs = {request(110, 10, 11), request(50, 20, 4), request(30, 30, 1),
                                    request(500, 100, 5, false)};
  ServingSlo slo;
  slo.latency_ms = 100;
  slo.ttft_ms = 25;
  auto m = serving_metrics(rs, 2.0, slo);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].requests, 4u);
  EXPECT_EQ(m[0].errors, 1u);
  EXPECT_NEAR(m[0].requests_per_second, 2, kTol);
  EXPECT_NEAR(m[0].inferences_per_second, 4, kTol);  // batch-aware
  EXPECT_NEAR(m[0].output_tokens_per_second, 21 / 2.0, kTol);
  // TPOT: 10, 10, (request with 1 token left out), 100.
  EXPECT_EQ(m[0].tpot_ms.count, 3u);
  EXPECT_NEAR(m[0].tpot_ms.max, 100, kTol);
  // ITL pooled: (100 + 30 + 400) / (10 + 3 + 4).
  ASSERT_TRUE(m[0].itl_ms);
  EXPECT_NEAR(*m[0].itl_ms, 530.0 / 17, kTol);
  // Goodput: request 2 (50 ms, ttft 20) only; request 1 is over 100 ms, 3 has ttft 30, 4 failed.
  ASSERT_TRUE(m[0].goodput_ratio);
  EXPECT_NEAR(*m[0].goodput_ratio, 0.25, kTol);
  EXPECT_NEAR(*m[0].goodput_per_second, 0.5, kTol);
}

TEST(Trend, SlopeAndSignificance) {
  std::vector<double> t, line, noise, ramp;
  std::mt19937_64 rng(2);
  std::normal_distribution<double> n(0, 1);
  for (int i = 0; i < 200; ++i) {
    t.push_back(i * 0.5);
    line.push_back(3 + 2 * i * 0.5);
    noise.push_back(10 + n(rng));
    ramp.push_back(10 + 0.05 * i * 0.5 + n(rng));
  }
  Trend exact = linear_trend(t, line);
  EXPECT_NEAR(exact.slope_per_second, 2, kTol);
  EXPECT_NEAR(exact.intercept, 3, 1e-9);
  EXPECT_EQ(exact.p_value, 0);
  EXPECT_FALSE(linear_trend(t, noise).significant());
  Trend up = linear_trend(t, ramp);
  EXPECT_TRUE(up.significant());
  EXPECT_NEAR(up.slope_per_second, 0.05, 0.02);
  EXPECT_EQ(linear_trend(std::vector<double>{1}, std::vector<double>{1}).p_value, 1);
}

const Finding& find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.id == id) return f;
  }
  throw std::runtime_error("no finding " + id);
}

TEST(Bottlenecks, EveryRuleFiresOnCraftedInputAndStaysQuietWhenIdle) {
  const Inputs busy = {{"gpu_utilization_avg", 0.97},        {"gpu_dram_bandwidth_utilization_avg", 0.2},
                       {"gpu_memory_used_ratio_peak", 0.98}, {"gpu_thermal_throttle_seconds", 3},
                       {"gpu_power_cap_throttle_seconds", 1}, {"host_cpu_utilization_avg", 0.95},
                       {"kernel_count", 5000},               {"kernel_max_ms", 250},
                       {"kernel_busy_ratio", 0.3},           {"kernel_avg_gap_ms", 0.05},
                       {"kernel_short_share", 0.8},          {"kernel_host_wait_share", 0.7},
                       {"latency_p99_ms", 120},              {"sla_target_ms", 100},
                       {"operator_cpu_fallback_share", 0.4},  {"device_target_of_minimum_worst", 0.5},
                       {"collective_matched", 70},           {"collective_straggler_extra_share", 0.4},
                       {"collective_straggler_rank", 1},      {"collective_straggler_extra_ms", 1.6}};
  auto fired = detect_bottlenecks(busy);
  for (const char* id : {"gpu_compute_bound", "high_memory_usage", "long_kernel_execution", "launch_overhead_bound",
                         "host_bound_input_pipeline", "thermal_throttling", "power_capping", "sla_at_risk",
                         "operators_cpu_fallback", "device_below_minimum", "straggler"}) {
    const Finding& f = find(fired, id);
    EXPECT_EQ(f.status, "fired") << id;
    EXPECT_FALSE(f.recommendations.empty()) << id;
    EXPECT_FALSE(f.evidence.empty()) << id;
  }
  EXPECT_EQ(find(fired, "high_memory_usage").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "sla_at_risk").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "launch_overhead_bound").severity, Severity::kCritical);
  EXPECT_EQ(find(fired, "operators_cpu_fallback").severity, Severity::kCritical);
  // The straggler's rank and extra time ride along as evidence; a tenth of a step is a note.
  EXPECT_EQ(find(fired, "straggler").severity, Severity::kWarning);
  EXPECT_EQ(find(fired, "straggler").evidence.at("collective_straggler_rank"), 1);
  EXPECT_EQ(find(fired, "straggler").evidence.at("collective_straggler_extra_ms"), 1.6);
  EXPECT_EQ(find(detect_bottlenecks({{"collective_matched", 70}, {"collective_straggler_extra_share", 0.1}}), "straggler")
                .severity,
            Severity::kInfo);
  EXPECT_EQ(find(detect_bottlenecks({{"operator_cpu_fallback_share", 0.15}}), "operators_cpu_fallback").severity,
            Severity::kWarning);
  EXPECT_EQ(fired.front().severity, Severity::kCritical);  // most severe first
  // The other two GPU rules, each on its own input.
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_dram_bandwidth_utilization_avg", 0.85}}), "memory_bandwidth_bound").severity,
            Severity::kWarning);
  // Saturation: bandwidth stayed at 90% of peak or more.
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_dram_bandwidth_utilization_avg", 0.93}}), "memory_bandwidth_bound").severity,
            Severity::kCritical);
  EXPECT_EQ(find(detect_bottlenecks({{"gpu_utilization_avg", 0.1}}), "low_gpu_utilization").status, "fired");

  // An idle machine with a GPU: measured, nothing fires.
  const Inputs idle = {{"gpu_utilization_avg", 0.5},         {"gpu_dram_bandwidth_utilization_avg", 0.1},
                       {"gpu_memory_used_ratio_peak", 0.05}, {"gpu_thermal_throttle_seconds", 0},
                       {"gpu_power_cap_throttle_seconds", 0}, {"host_cpu_utilization_avg", 0.02},
                       {"kernel_count", 10},                 {"kernel_max_ms", 1},
                       {"kernel_busy_ratio", 0.1},           {"kernel_avg_gap_ms", 100},
                       {"kernel_short_share", 0},            {"kernel_host_wait_share", 0.1},
                       {"latency_p99_ms", 10},               {"sla_target_ms", 100},
                       {"operator_cpu_fallback_share", 0.02}, {"device_target_of_minimum_worst", 0.9},
                       {"collective_matched", 70},           {"collective_straggler_extra_share", 0}};
  for (const auto& f : detect_bottlenecks(idle)) EXPECT_EQ(f.status, "ok") << f.id;

  // Nothing measured: every rule says what it lacks.
  for (const auto& f : detect_bottlenecks({})) {
    EXPECT_EQ(f.status, "not_evaluated") << f.id;
    EXPECT_NE(f.reason.find("not measured here: "), std::string::npos);
  }
}

TEST(ChangePoints, FindsAPlantedTenPercentStepAndNothingInNoise) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> noise(0, 0.02);  // 2% noise around 1.0
  std::vector<double> step, flat;
  for (int i = 0; i < 120; ++i) {
    step.push_back((i < 70 ? 1.0 : 1.1) * (1 + noise(rng)));
    flat.push_back(1 + noise(rng));
  }
  auto found = find_change_points(step);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(static_cast<double>(found[0].index), 70, 2);
  EXPECT_NEAR(found[0].change, 0.10, 0.03);
  EXPECT_LT(found[0].p_value, 0.001);
  EXPECT_TRUE(find_change_points(flat).empty());
  // A noiseless step is found too; one under the magnitude floor is not.
  std::vector<double> clean(40, 5.0), tiny(40, 5.0);
  for (int i = 20; i < 40; ++i) {
    clean[static_cast<std::size_t>(i)] = 4.0;
    tiny[static_cast<std::size_t>(i)] = 5.05;
  }
  auto c = find_change_points(clean);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].index, 20u);
  EXPECT_NEAR(c[0].change, -0.2, kTol);
  EXPECT_TRUE(find_change_points(tiny).empty());
}

TEST(Anomalies, ScoresASpikeAndStaysQuietOnNoise) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> noise(50, 2);
  AnomalyDetector d;
  std::size_t false_alarms = 0;
  for (int i = 0; i < 5000; ++i) false_alarms += d.observe(noise(rng)).has_value();
  EXPECT_LE(false_alarms, 2u);
  EXPECT_NEAR(d.center(), 50, 1);
  // A one-sample blip is not reported; three in a row are, once.
  EXPECT_FALSE(d.observe(90).has_value());
  EXPECT_FALSE(d.observe(51).has_value());
  EXPECT_FALSE(d.observe(90).has_value());
  EXPECT_FALSE(d.observe(91).has_value());
  auto spike = d.observe(92);
  ASSERT_TRUE(spike.has_value());
  EXPECT_GT(*spike, 10);
  EXPECT_FALSE(d.observe(51).has_value());
  EXPECT_NEAR(d.center(), 50, 1);  // a short excursion barely moves the center
  AnomalyDetector flat;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(flat.observe(7.0).has_value());
  EXPECT_FALSE(flat.observe(8.0).has_value());
  EXPECT_FALSE(flat.observe(8.0).has_value());
  EXPECT_TRUE(flat.observe(8.0).has_value());
  // One excursion, one alert: the next points of it are inside the cooldown.
  EXPECT_FALSE(flat.observe(8.5).has_value());
  // A very steady series: a move of 2% is many MADs but too small to matter; 20% is not.
  AnomalyDetector steady;
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(steady.observe(i % 2 ? 10.01 : 10.0).has_value());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(steady.observe(10.2).has_value());
  EXPECT_FALSE(steady.observe(12.0).has_value());
  EXPECT_FALSE(steady.observe(12.0).has_value());
  EXPECT_TRUE(steady.observe(12.0).has_value());
}

TEST(AnomalyMonitor, KeepsAnomaliesOfEachSeriesWithTheirKeys) {
  SeriesStore store(100);
  SeriesId steady = store.intern(SeriesKey("queue_depth", {{"q", "a"}}));
  SeriesId other = store.intern(SeriesKey("temp_celsius", {}));
  AnomalyDetector::Options options;
  options.cooldown = 0;  // every anomalous point counts here
  AnomalyMonitor monitor(store, 3, options);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(10, 1);
  for (int i = 0; i < 200; ++i) {
    SampleBatch b{1000 + i, {{steady, noise(rng)}, {other, 40 + noise(rng)}}};
    EXPECT_TRUE(monitor.observe(b).empty()) << i;
  }
  EXPECT_TRUE(monitor.observe(SampleBatch{4998, {{steady, 10.2}, {other, 95}}}).empty());
  EXPECT_TRUE(monitor.observe(SampleBatch{4999, {{steady, 10.2}, {other, 95}}}).empty());
  auto found = monitor.observe(SampleBatch{5000, {{steady, 10.2}, {other, 95}}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].key.canonical(), "temp_celsius");
  EXPECT_DOUBLE_EQ(found[0].value, 95);
  EXPECT_GT(found[0].score, 6);
  EXPECT_NEAR(found[0].center, 40 + 10, 1.5);
  for (int i = 0; i < 9; ++i) monitor.observe(SampleBatch{6000 + i, {{steady, 1000.0 + i * 1000}}});
  auto kept = monitor.recent(0, 10'000);
  EXPECT_EQ(kept.size(), 3u);  // bounded
  EXPECT_TRUE(monitor.recent(0, 10).empty());

  // Counters are not scored: their every sample is new by construction.
  store.declare({"bytes_total", "bytes", MetricType::kCounter, ""});
  SeriesId counter = store.intern(SeriesKey("bytes_total", {}));
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(monitor.observe(SampleBatch{20'000 + i, {{counter, i < 400 ? i * 1.0 : i * 1000.0}}}).empty());
  }
}

TEST(GpuAlerts, PowerTargetAndThermalThrottlingOncePerExcursion) {
  SeriesStore store(10);
  SeriesId power = store.intern(SeriesKey("gpu_power_watts", {{"gpu", "0"}, {"uuid", "GPU-a"}}));
  SeriesId thermal = store.intern(SeriesKey("gpu_throttle_active", {{"gpu", "0"}, {"reason", "hw_thermal_slowdown"}, {"uuid", "GPU-a"}}));
  SeriesId idle = store.intern(SeriesKey("gpu_throttle_active", {{"gpu", "0"}, {"reason", "gpu_idle"}, {"uuid", "GPU-a"}}));
  GpuAlerts alerts(store, 600.0);
  EXPECT_TRUE(alerts.observe(SampleBatch{1, {{power, 550}, {thermal, 0}, {idle, 1}}}).empty());
  auto up = alerts.observe(SampleBatch{2, {{power, 650}, {thermal, 0}, {idle, 1}}});
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].kind, "power_target");
  EXPECT_DOUBLE_EQ(up[0].threshold, 600);
  EXPECT_EQ(up[0].message, "GPU 0 draws 650 W, above the 600 W power target");
  EXPECT_TRUE(alerts.observe(SampleBatch{3, {{power, 690}}}).empty());  // still above: no repeat
  EXPECT_TRUE(alerts.observe(SampleBatch{4, {{power, 500}}}).empty());
  EXPECT_EQ(alerts.observe(SampleBatch{5, {{power, 610}}}).size(), 1u);  // a new excursion
  auto hot = alerts.observe(SampleBatch{6, {{thermal, 1}}});
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot[0].kind, "thermal_throttling");
  EXPECT_EQ(hot[0].message, "GPU 0 is thermally throttled (hw_thermal_slowdown)");
  EXPECT_EQ(alerts.recent(0, 10).size(), 3u);
  GpuAlerts no_target(store, std::nullopt);
  EXPECT_TRUE(no_target.observe(SampleBatch{1, {{power, 5000}}}).empty());
}

// The drawn timeline: raw executions in start order with the gap before each and its cause.
TEST(TimelineView, RawExecutionsCarryTheirGapAndItsCause) {
  KernelTrace t;
  t.names = {"gemm", "norm"};
  t.devices = {"0"};
  t.streams = {"7"};
  // Out of order on purpose. [100,200], then [200,300] touching it (no gap); [5000,6000]
  // launched at 4000, after 300 ended → host_wait; [9000,9500] launched before 6000 → other.
  t.kernels = {{5000, 6000, 4000, 4100, 1, 0, 0},
               {100, 200, 10, 50, 0, 0, 0},
               {9000, 9500, 5500, 5600, 0, 0, 0},
               {200, 300, 150, 160, 1, 0, 0}};
  const TimelineView v = timeline_view(t, {0, 10'000});
  ASSERT_TRUE(v.raw);
  EXPECT_EQ(v.events, 4u);
  ASSERT_EQ(v.tracks.size(), 1u);
  const TimelineTrack& s = v.tracks[0];
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_EQ(s.events[0].start_ns, 100);
  EXPECT_EQ(s.events[0].gap, GapCause::kNone);
  EXPECT_EQ(s.events[1].gap, GapCause::kNone);  // touches the one before: no gap
  EXPECT_EQ(s.events[2].gap, GapCause::kHostWait);
  EXPECT_EQ(s.events[2].gap_ns, 4700);
  EXPECT_EQ(s.events[2].launch_start_ns, 4000);
  EXPECT_EQ(s.events[3].gap, GapCause::kOther);
  EXPECT_EQ(s.events[3].gap_ns, 3000);
  EXPECT_EQ(s.busy_ns, 100 + 100 + 1000 + 500);
  EXPECT_EQ(s.host_wait_ns, 4700);
  EXPECT_EQ(s.other_idle_ns, 3000);
  // A gap of at most a microsecond between kernels is back to back.
  t.kernels = {{0, 100, kNoLaunch, kNoLaunch, 0, 0, 0}, {600, 700, kNoLaunch, kNoLaunch, 0, 0, 0}};
  EXPECT_EQ(timeline_view(t, {0, 1000}).tracks[0].events[1].gap, GapCause::kKernelWait);
}

// Zoomed out: buckets of busy time (clipped), counts by start, the kernel with most time, and
// idle time by cause spread over the buckets it covers; executions outside the window left out.
TEST(TimelineView, AggregatedBucketsSumTimeByCause) {
  KernelTrace t;
  t.names = {"gemm", "norm"};
  t.devices = {"0", "1"};
  t.streams = {"a", "b"};
  t.kernels = {{0, 150, kNoLaunch, kNoLaunch, 0, 0, 0},       // bucket 0 (100) and half of 1
               {160, 190, 140, 145, 1, 0, 0},                 // bucket 1 after 10 ns: kernel_wait
               {390, 400, 100, 110, 1, 0, 0},                 // 190 → 390 launched early: kernel_wait
               {700, 800, 500, 520, 0, 0, 0},                 // gap 300 (400 → 700): host_wait
               {2000, 2100, kNoLaunch, kNoLaunch, 0, 1, 1}};  // another device, outside the window
  TimelineViewOptions o{0, 1000, 10, /*max_raw=*/1};
  const TimelineView v = timeline_view(t, o);
  ASSERT_FALSE(v.raw);
  EXPECT_EQ(v.bucket_ns, 100);
  EXPECT_EQ(v.events, 4u);
  ASSERT_EQ(v.tracks.size(), 1u);  // device 1 has nothing in the window
  const TimelineBuckets& b = v.tracks[0].buckets;
  ASSERT_EQ(b.busy_ns.size(), 10u);
  EXPECT_EQ(b.busy_ns[0], 100);
  EXPECT_EQ(b.busy_ns[1], 50 + 30);
  EXPECT_EQ(b.busy_ns[3], 10);
  EXPECT_EQ(b.busy_ns[7], 100);
  EXPECT_EQ(b.count[0], 1u);
  EXPECT_EQ(b.count[1], 1u);
  EXPECT_EQ(b.count[7], 1u);
  EXPECT_EQ(b.top[0], 0);
  EXPECT_EQ(b.top[1], 0);  // gemm's 50 ns beat norm's 30
  EXPECT_EQ(b.top[3], 1);
  EXPECT_EQ(b.top[5], -1);
  // Idle not waiting for the host: 150 → 160 in bucket 1, then 190 → 390 (10 in 1, 100 in 2, 90 in 3).
  EXPECT_EQ(b.other_idle_ns[1], 10 + 10);
  EXPECT_EQ(b.other_idle_ns[2], 100);
  EXPECT_EQ(b.other_idle_ns[3], 90);
  // host wait 400 → 700.
  EXPECT_EQ(b.host_wait_ns[4], 100);
  EXPECT_EQ(b.host_wait_ns[5], 100);
  EXPECT_EQ(b.host_wait_ns[6], 100);
  EXPECT_EQ(b.launch_ns[1], 5 + 10);  // [140,145] and [100,110]
  EXPECT_EQ(b.launch_ns[5], 20);
  EXPECT_EQ(v.tracks[0].host_wait_ns, 300);
}

// Records a producer may send that overlap on one stream (20,000 of a week each, as ingest
// allows) cannot wrap a track's or a bucket's busy time: each is held at its span.
TEST(TimelineView, OverlappingWeekLongKernelsCannotWrapTheBusyTime) {
  constexpr TimestampNs kWeek = TimestampNs{7} * 24 * 3600 * 1'000'000'000;
  KernelTrace t;
  t.names = {"k"};
  t.devices = {"0"};
  t.streams = {"s"};
  for (int i = 0; i < 20000; ++i) t.kernels.push_back({i, kWeek + i, kNoLaunch, kNoLaunch, 0, 0, 0});
  TimelineViewOptions o{0, kWeek * 2, 10, /*max_raw=*/1};
  const TimelineView v = timeline_view(t, o);
  ASSERT_EQ(v.tracks.size(), 1u);
  EXPECT_GT(v.tracks[0].busy_ns, 0);
  EXPECT_LE(v.tracks[0].busy_ns, kWeek * 2);
  for (TimestampNs b : v.tracks[0].buckets.busy_ns) {
    EXPECT_GE(b, 0);
    EXPECT_LE(b, v.bucket_ns);
  }
}

// Summed over a stream, the drawn gaps are the timeline analysis' idle breakdown.
TEST(TimelineView, GapsAgreeWithTheTimelineAnalysis) {
  std::mt19937_64 rng(5);
  KernelTrace t;
  t.names = {"a", "b", "c"};
  t.devices = {"0"};
  t.streams = {"s"};
  TimestampNs at = 1000;
  for (int i = 0; i < 2000; ++i) {
    const TimestampNs gap = static_cast<TimestampNs>(rng() % 3000);
    const TimestampNs dur = 1 + static_cast<TimestampNs>(rng() % 5000);
    const bool late = rng() % 3 == 0;  // launched after the GPU went idle
    const TimestampNs call = late ? at + gap / 2 : at - 2000;
    at += gap;
    t.kernels.push_back({at, at + dur, call, call + 100, static_cast<std::uint32_t>(rng() % 3), 0, 0});
    at += dur;
  }
  std::shuffle(t.kernels.begin(), t.kernels.end(), rng);
  const QueueTimeline q = analyze_timeline(t)[1];
  const TimelineView raw = timeline_view(t, {0, at + 1, 1000, 1'000'000});
  const TimelineView agg = timeline_view(t, {0, at + 1, 997, 0});
  ASSERT_TRUE(raw.raw);
  ASSERT_FALSE(agg.raw);
  for (const TimelineView* v : {&raw, &agg}) {
    EXPECT_NEAR(static_cast<double>(v->tracks[0].host_wait_ns) / 1e6, q.idle_host_wait_ms, 1e-9);
    EXPECT_NEAR(static_cast<double>(v->tracks[0].other_idle_ns) / 1e6, q.idle_kernel_wait_ms + q.idle_other_ms, 1e-9);
    EXPECT_NEAR(static_cast<double>(v->tracks[0].busy_ns) / 1e6, q.busy_ms, 1e-9);
  }
  TimestampNs host_wait = 0, busy = 0;
  for (std::size_t i = 0; i < 997; ++i) {
    host_wait += agg.tracks[0].buckets.host_wait_ns[i];
    busy += agg.tracks[0].buckets.busy_ns[i];
  }
  EXPECT_EQ(host_wait, agg.tracks[0].host_wait_ns);
  EXPECT_EQ(busy, agg.tracks[0].busy_ns);
}

}  // namespace
}  // namespace perfscope::analysis
