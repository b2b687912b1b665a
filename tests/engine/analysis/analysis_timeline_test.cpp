// Kernel timeline, serving metrics and trends on crafted inputs (the bottleneck rules: bottlenecks_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "engine/analysis/serving.hpp"
#include "engine/analysis/timeline.hpp"
#include "engine/analysis/timeline_view.hpp"

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

TEST(Timeline, NamesTheLongestKernelOfEachQueue) {
  KernelTrace trace;
  trace.names = {"short", "long", "medium"};
  trace.devices = {"0"};
  trace.streams = {"7"};
  trace.kernels = {{0, 10, kNoLaunch, kNoLaunch, 0, 0, 0}, {20, 920, kNoLaunch, kNoLaunch, 1, 0, 0},
                   {1000, 1500, kNoLaunch, kNoLaunch, 2, 0, 0}, {1600, 1610, kNoLaunch, kNoLaunch, 0, 0, 0}};
  const auto queues = analyze_timeline(trace);
  ASSERT_FALSE(queues.empty());
  for (const auto& q : queues) EXPECT_EQ(q.longest_kernel, "long") << q.stream;
}

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

// Operators as a track: [completion − duration, completion], raw while few, else buckets that
// sum their busy time and count their starts.
TEST(TimelineView, OperatorsAsATrackRawOrInBuckets) {
  std::vector<OperatorExecution> ops = {
      {"aten::mm", "mm", "CUDA", "m", "", 0.002, 5000},   // [3000, 5000]
      {"aten::add", "add", "host", "m", "", 0.001, 2000},  // [1000, 2000]
      {"aten::mm", "mm", "CUDA", "m", "", 0.001, 90000},   // outside [0, 10000]
  };
  TimelineViewOptions o{0, 10000, 10, 10};
  OperatorTrack raw = operator_track(ops, o);
  ASSERT_TRUE(raw.raw);
  ASSERT_EQ(raw.slices.size(), 2u);
  EXPECT_EQ(raw.count, 2u);
  EXPECT_EQ(raw.slices[0].start_ns, 1000);  // in start order
  EXPECT_EQ(raw.slices[0].end_ns, 2000);
  EXPECT_EQ(raw.names[raw.slices[0].name], "aten::add");
  EXPECT_EQ(raw.providers[raw.slices[1].provider], "CUDA");
  o.max_raw = 1;
  OperatorTrack agg = operator_track(ops, o);
  ASSERT_FALSE(agg.raw);
  EXPECT_EQ(agg.bucket_ns, 1000);
  ASSERT_EQ(agg.busy_ns.size(), 10u);
  EXPECT_EQ(agg.busy_ns[1], 1000);
  EXPECT_EQ(agg.busy_ns[3] + agg.busy_ns[4], 2000);
  EXPECT_EQ(agg.started[1] + agg.started[3], 2u);
}

}  // namespace
}  // namespace perfscope::analysis
