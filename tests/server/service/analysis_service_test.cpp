// The analysis service over a real database: what GET /api/v1/analysis renders, computed
// without HTTP — runs' timelines and rules, a duty-cycled run's kernels scaled to its span, a
// run's own span as the window, gauges into the rules, leak suspects.
#include "server/service/analysis_service.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/service_fixture.hpp"

namespace perfscope::service {
namespace {

using testing::kMs;
using testing::kS;

KernelEvent kernel(const std::string& name, const std::string& run, TimestampNs start, TimestampNs duration) {
  return testing::kernel_event(name, start, duration, run);
}
RunEvent run(const std::string& name, TimestampNs start, TimestampNs end) { return testing::run_event(name, start, end); }

class AnalysisServiceTest : public testing::ServiceFixture {
 protected:
  Result<AnalysisDocument> analyze(db::EventScope scope, server::TimeWindow window, TimestampNs now,
                                   std::size_t leak_age_s = 60) {
    AnalysisService service(sources());
    AnalysisQuery q;
    q.scope = std::move(scope);
    q.window = window;
    q.now = now;
    q.leak_age_s = leak_age_s;
    return service.analyze(q);
  }
};

TEST_F(AnalysisServiceTest, RunsHaveTheirOwnTimelinesAndADutyCycledRunIsScaledToItsSpan) {
  // "full": 100 kernels of 1 ms every 2 ms, traced throughout. "sampled": traced 1 s in every
  // 4 s over [10 s, 20 s] (windows at 10, 14 and 18 s: 3 s of 10), 10 kernels of 2 ms per window.
  std::vector<Event> batch{run("full", 1 * kS, 3 * kS)};
  for (int i = 0; i < 100; ++i) batch.push_back(kernel("gemm", "full", 1 * kS + i * 2 * kMs, 1 * kMs));
  RunEvent sampled = run("sampled", 10 * kS, 20 * kS);
  sampled.trace_window_ns = 1 * kS;
  sampled.trace_every_ns = 4 * kS;
  batch.push_back(sampled);
  for (TimestampNs window : {10 * kS, 14 * kS, 18 * kS}) {
    for (int i = 0; i < 10; ++i) batch.push_back(kernel("reduce", "sampled", window + i * 10 * kMs, 2 * kMs));
  }
  testing::commit(*writer_, batch);
  samples({"trace_window_seconds", "seconds", MetricType::kGauge, ""}, {{"run", "sampled"}},
          {{10 * kS, 1.0}, {14 * kS, 1.0}, {18 * kS, 1.0}});
  samples({"gpu_utilization_ratio", "ratio", MetricType::kGauge, ""}, {{"gpu", "0"}}, {{2 * kS, 0.2}, {12 * kS, 0.4}});

  auto doc = analyze({}, {0, 30 * kS, false}, 30 * kS);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc->timelines.size(), 2u);
  auto full = std::find_if(doc->timelines.begin(), doc->timelines.end(), [](const RunTimeline& t) { return t.run == "full"; });
  auto part = std::find_if(doc->timelines.begin(), doc->timelines.end(), [](const RunTimeline& t) { return t.run == "sampled"; });
  ASSERT_NE(full, doc->timelines.end());
  ASSERT_NE(part, doc->timelines.end());
  EXPECT_FALSE(full->traced);
  ASSERT_TRUE(part->traced && part->report);
  EXPECT_NEAR(part->traced->fraction, 0.3, 1e-9);
  ASSERT_FALSE(full->queues.empty());
  EXPECT_EQ(full->queues[0].kernel_count, 100u);
  EXPECT_NEAR(full->queues[0].busy_ratio, 100.0 / 199.0, 1e-6) << "100 ms busy over the 199 ms the kernels span";
  ASSERT_TRUE(doc->sampled_fraction);
  EXPECT_NEAR(*doc->sampled_fraction, 0.3, 1e-9);

  // Observed 30 executions in 30 % of the span: 100 estimated; durations as observed.
  auto reduce = std::find_if(doc->kernels.begin(), doc->kernels.end(), [](const db::KernelSummary& k) { return k.name == "reduce"; });
  ASSERT_NE(reduce, doc->kernels.end());
  EXPECT_EQ(reduce->count, 100u);
  EXPECT_NEAR(reduce->total_ms, 200, 1e-6);
  EXPECT_NEAR(reduce->max_ms, 2, 1e-9);
  EXPECT_EQ(doc->kernels.front().name, "reduce") << "most total time first, after scaling";
  double total = 0;
  for (const auto& k : doc->kernels) total += k.total_ms;
  EXPECT_DOUBLE_EQ(doc->kernel_total_ms, total);

  // Each run's rules beside the window's; the gauges reached the rules.
  ASSERT_EQ(doc->run_findings.size(), 2u);
  auto gpu_rule = std::find_if(doc->findings.begin(), doc->findings.end(), [](const analysis::Finding& f) {
    return f.evidence.contains("gpu_utilization_avg");
  });
  ASSERT_NE(gpu_rule, doc->findings.end());
  EXPECT_NEAR(gpu_rule->evidence.at("gpu_utilization_avg"), 0.3, 1e-9);
  ASSERT_EQ(doc->gauges.size(), 2u) << "gpu_utilization_ratio and trace_window_seconds";
}

TEST_F(AnalysisServiceTest, ARunWithoutAWindowIsAnalysedOverItsOwnSpan) {
  testing::commit(*writer_, {run("r", 5 * kS, 8 * kS), kernel("k", "r", 6 * kS, kMs), kernel("k", "", 20 * kS, kMs)});
  auto doc = analyze({"", "r"}, {}, 30 * kS);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_FALSE(doc->window.all);
  EXPECT_EQ(doc->window.from_ns, 5 * kS);
  EXPECT_EQ(doc->window.to_ns, 8 * kS);
  ASSERT_EQ(doc->kernels.size(), 1u);
  EXPECT_EQ(doc->kernels[0].count, 1u) << "only the run's kernel";
  EXPECT_EQ(doc->run, "r");

  auto missing = analyze({"", "nope"}, {}, 30 * kS);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().field(), "run");
  EXPECT_EQ(missing.status().message(), no_run_message("nope"));
}

TEST_F(AnalysisServiceTest, GrowingMemoryNamesItsOldestAllocationsAsLeakSuspects) {
  std::vector<Event> batch;
  for (int i = 0; i < 30; ++i) {
    MemoryEvent m;
    m.op = MemoryOp::kAlloc;
    m.address = "0x" + std::to_string(1000 + i);
    m.size_bytes = 1 << 20;
    m.ts_ns = (i + 1) * kS;
    batch.push_back(m);
  }
  testing::commit(*writer_, batch);
  const TimestampNs now = 100 * kS;
  auto doc = analyze({}, {0, now, false}, now, 75);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_TRUE(doc->memory.growth.significant());
  EXPECT_GT(doc->memory.growth.slope_per_second, 0);
  EXPECT_EQ(doc->memory.statistics.all.current_bytes, 30u << 20);
  // Older than 75 s at t = 100 s: the allocations of t = 1 … 25 s, oldest first.
  ASSERT_EQ(doc->memory.leak_suspects.size(), 20u) << "the 20 oldest are examined";
  EXPECT_EQ(doc->memory.leak_suspects[0].allocation.address, "0x1000");
  EXPECT_DOUBLE_EQ(doc->memory.leak_suspects[0].age_s, 99);

  auto young = analyze({}, {0, now, false}, now, 90);
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(young->memory.leak_suspects.size(), 10u) << "t = 1 … 10 s are older than 90 s";
}

}  // namespace
}  // namespace perfscope::service
