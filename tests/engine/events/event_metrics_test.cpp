#include "engine/events/event_metrics.hpp"

#include <gtest/gtest.h>

namespace perfscope {
namespace {

const EventMetricFamily& family(const std::vector<EventMetricFamily>& all, const std::string& name) {
  for (const auto& f : all) {
    if (f.family.name == name) return f;
  }
  throw std::runtime_error("no family " + name);
}

KernelEvent kernel(const std::string& name, TimestampNs duration_ns) {
  KernelEvent k;
  k.name = name;
  k.start_ns = 1000;
  k.end_ns = 1000 + duration_ns;
  return k;
}

TEST(EventMetrics, BucketsAreUpperInclusiveAndCumulative) {
  EventMetrics m;
  // 1 µs lands in le=1e-06 exactly; 1.5 µs in le=2.5e-06; 20 s only in +Inf.
  m.observe({kernel("k", 1000), kernel("k", 1500), kernel("k", 20'000'000'000)});
  auto all = m.snapshot();
  const auto& d = family(all, "kernel_duration_seconds");
  ASSERT_EQ(d.histograms.size(), 1u);
  const auto& h = d.histograms[0];
  ASSERT_EQ(h.cumulative.size(), kernel_duration_buckets().size() + 1);
  EXPECT_EQ(h.cumulative[0], 1u);
  EXPECT_EQ(h.cumulative[1], 2u);
  EXPECT_EQ(h.cumulative[h.cumulative.size() - 2], 2u);
  EXPECT_EQ(h.cumulative.back(), 3u);
  EXPECT_EQ(h.count, 3u);
  EXPECT_NEAR(h.sum, 20.0000025, 1e-9);
  EXPECT_EQ(family(all, "kernel_executions_total").counters[0].value, 3);
}

TEST(EventMetrics, InferenceCountsTtftAndTpot) {
  EventMetrics m;
  InferenceEvent a;
  a.model = "llm";
  a.latency_ms = 1000;
  a.ttft_ms = 100;
  a.output_tokens = 10;  // TPOT (1000 - 100) / 9 = 100 ms
  InferenceEvent b = a;
  b.output_tokens = 1;  // no TPOT: one token
  b.ok = false;
  m.observe({a, b});
  auto all = m.snapshot();
  const auto& tpot = family(all, "inference_time_per_output_token_seconds");
  ASSERT_EQ(tpot.histograms.size(), 1u);
  EXPECT_EQ(tpot.histograms[0].count, 1u);
  EXPECT_NEAR(tpot.histograms[0].sum, 0.1, 1e-12);
  EXPECT_EQ(family(all, "inference_time_to_first_token_seconds").histograms[0].count, 2u);
  const auto& requests = family(all, "inference_requests_total").counters;
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].labels, (Labels{{"model", "llm"}, {"status", "error"}}));
  EXPECT_EQ(requests[0].value, 1);
  EXPECT_EQ(family(all, "inference_output_tokens_total").counters[0].value, 11);
}

TEST(EventMetrics, LabelSetsAreCappedUnderOther) {
  EventMetrics m(EventMetricsOptions{2});
  m.observe({kernel("a", 10), kernel("b", 10), kernel("c", 10), kernel("d", 10), kernel("a", 10)});
  auto all = m.snapshot();
  const auto& d = family(all, "kernel_duration_seconds");
  ASSERT_EQ(d.histograms.size(), 3u);  // a, b, __other__
  std::uint64_t other = 0;
  for (const auto& h : d.histograms) {
    for (const auto& [k, v] : h.labels) {
      if (k == "kernel" && v == "__other__") other = h.count;
    }
  }
  EXPECT_EQ(other, 2u);
  EXPECT_EQ(m.overflowed(), 2u);
}

}  // namespace
}  // namespace perfscope
