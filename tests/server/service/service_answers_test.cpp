// The service's answers below the API, over a real database: percentiles (exact, SLA, slices,
// warnings), regressions, run against run, A/B and A/B/n evaluation, a report's figures and each
// model's serving rates — the typed values the endpoints render.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "server/service/ab_tests.hpp"
#include "server/service/analysis_service.hpp"
#include "server/service/models.hpp"
#include "server/service/percentiles.hpp"
#include "server/service/regressions.hpp"
#include "server/service/report.hpp"
#include "server/service/runs.hpp"
#include "support/service_fixture.hpp"

namespace perfscope::service {
namespace {

using testing::kMs;
using testing::kS;

KernelEvent kernel(const std::string& name, TimestampNs start, double duration_ms, const std::string& run = "",
                   const std::string& variant = "") {
  return testing::kernel_event(name, start, static_cast<TimestampNs>(duration_ms * 1e6), run, variant);
}
RunEvent run(const std::string& name, TimestampNs start, TimestampNs end) { return testing::run_event(name, start, end); }

InferenceEvent request(const std::string& model, TimestampNs ts, double latency_ms) {
  InferenceEvent e;
  e.model = model;
  e.ts_ns = ts;
  e.latency_ms = latency_ms;
  return e;
}

class ServiceAnswersTest : public testing::ServiceFixture {
 protected:
  void gauge(const std::string& family, const Labels& labels, const std::vector<std::pair<TimestampNs, double>>& points) {
    samples({family, "ratio", MetricType::kGauge, ""}, labels, points);
  }
};

TEST_F(ServiceAnswersTest, PercentilesAreExactWithTheSlaTheirSlicesAndWarnings) {
  std::vector<Event> batch;
  for (int i = 1; i <= 10; ++i) batch.push_back(kernel("gemm", i * kS, i));  // 1..10 ms, one a second
  testing::commit(*writer_, batch);
  PercentileQuery q;
  q.selector.kernel.name = "gemm";
  q.quantiles = {50, 99};
  q.sla_ms = 5;
  q.window = {0, 20 * kS, false};
  q.step_ns = 10 * kS;
  auto answer = percentiles(sources(), q, 20 * kS);
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  const auto* r = std::get_if<ReportedPercentiles>(&*answer);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->moments.n, 10u);
  EXPECT_NEAR(r->moments.mean, 5.5, 1e-9);
  ASSERT_EQ(r->percentiles.size(), 2u);
  EXPECT_NEAR(r->percentiles[0], 5, 1e-9) << "nearest rank: ceil(0.5 * 10) = 5th";
  EXPECT_NEAR(r->percentiles[1], 10, 1e-9);
  ASSERT_TRUE(r->sla);
  EXPECT_EQ(r->sla->violations, 5u);
  EXPECT_NEAR(r->sla->compliance_rate, 0.5, 1e-12);
  EXPECT_FALSE(r->rolled);
  EXPECT_TRUE(std::any_of(r->warnings.begin(), r->warnings.end(),
                          [](const std::string& w) { return w.starts_with("p99 needs at least"); }));
  // Slices [0, 10 s), [10 s, 20 s) and the window's closing instant; every kernel in one.
  ASSERT_EQ(r->over_time.size(), 3u);
  EXPECT_EQ(r->over_time[0].count + r->over_time[1].count + r->over_time[2].count, 10u);
  EXPECT_EQ(r->over_time[2].from_ns, 20 * kS);
  ASSERT_TRUE(r->over_time[0].sla_compliance_rate);
  EXPECT_FALSE(r->over_time[2].sla_compliance_rate) << "an empty slice has no share";

  PercentileQuery none = q;
  none.selector.kernel.name = "absent";
  auto empty = percentiles(sources(), none, 20 * kS);
  ASSERT_TRUE(empty.ok());
  const auto& e = std::get<ReportedPercentiles>(*empty);
  EXPECT_TRUE(e.percentiles.empty());
  EXPECT_EQ(e.warnings.back(), "no samples in the window");
}

TEST_F(ServiceAnswersTest, ARegressionIsFoundWhereAKernelDoubled) {
  std::vector<Event> batch;
  for (int interval = 0; interval < 120; ++interval) {
    for (int j = 0; j < 3; ++j) batch.push_back(kernel("conv", interval * kS + j * 100 * kMs, interval < 60 ? 1.0 : 2.0));
  }
  testing::commit(*writer_, batch);
  RegressionQuery q;
  q.window = {0, 200 * kS, false};
  q.interval_ns = kS;
  auto found = find_regressions(sources(), q, 200 * kS);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->subjects, 1u);
  ASSERT_FALSE(found->found.empty());
  const Regression& r = found->found.front();
  EXPECT_EQ(r.kind, "kernel");
  EXPECT_EQ(r.subject, "conv");
  EXPECT_EQ(r.at_ns, 60 * kS);
  EXPECT_NEAR(r.change.change, 1.0, 0.01) << "the mean doubled";
}

TEST_F(ServiceAnswersTest, RunAgainstRunComparesKernelsTotalsAndGivesAVerdict) {
  std::vector<Event> batch{run("a", 0, 10 * kS), run("b", 20 * kS, 30 * kS)};
  for (int i = 0; i < 40; ++i) {
    batch.push_back(kernel("attn", i * 10 * kMs, 1.0 + 0.01 * (i % 5), "a"));
    batch.push_back(kernel("attn", 20 * kS + i * 10 * kMs, 2.0 + 0.01 * (i % 5), "b"));
  }
  testing::commit(*writer_, batch);
  auto c = compare_runs(sources(), "a", "b", {}, 40 * kS);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->a.kernel_count, 40u);
  ASSERT_EQ(c->kernels.size(), 1u);
  EXPECT_EQ(c->kernels[0].verdict, "slower");
  ASSERT_TRUE(c->kernel_ms.change);
  EXPECT_NEAR(*c->kernel_ms.change, c->b.kernel_ms / c->a.kernel_ms - 1, 1e-12);
  EXPECT_NEAR(*c->kernel_ms.change, 0.98, 0.02);
  EXPECT_EQ(c->verdict.verdict, "slower");

  auto missing = compare_runs(sources(), "a", "nope", {}, 40 * kS);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().field(), "b");
  auto unnamed = compare_runs(sources(), "", "b", {}, 40 * kS);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().field(), "a");
}

TEST_F(ServiceAnswersTest, AbAndAbnTestsAreEvaluatedOnTheirWindow) {
  std::vector<Event> batch;
  for (int i = 0; i < 60; ++i) {
    const double jitter = 0.01 * (i % 7);
    batch.push_back(kernel("k", i * 10 * kMs, 1.0 + jitter, "", "a"));
    batch.push_back(kernel("k", i * 10 * kMs, 1.5 + jitter, "", "b"));
    batch.push_back(kernel("k", i * 10 * kMs, 1.0 + jitter, "", "c"));
  }
  testing::commit(*writer_, batch);
  auto side = [](const char* variant) {
    Selector s;
    s.kernel.name = "k";
    s.kernel.variant = variant;
    return s;
  };
  AbDefinition pair{"pair", {side("a"), side("b")}, false, {}, "all"};
  pair.options.bootstrap_resamples = 500;
  auto e = evaluate_abtest(sources(), pair, 10 * kS);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_EQ(e->results.size(), 1u);
  EXPECT_EQ(e->results[0].a.n, 60u);
  EXPECT_EQ(e->results[0].verdict, analysis::Verdict::kAFaster);
  EXPECT_TRUE(e->p_values_adjusted.empty());
  EXPECT_FALSE(e->energy) << "kernel sides have no energy per inference";
  EXPECT_TRUE(e->scraped.empty());

  AbDefinition three{"three", {side("a"), side("b"), side("c")}, true, {}, "all"};
  three.options.bootstrap_resamples = 500;
  auto n = evaluate_abtest(sources(), three, 10 * kS);
  ASSERT_TRUE(n.ok()) << n.status().message();
  ASSERT_EQ(n->results.size(), 2u);
  ASSERT_EQ(n->p_values_adjusted.size(), 2u);
  EXPECT_EQ(n->results[0].verdict, analysis::Verdict::kAFaster);
  EXPECT_EQ(n->results[1].verdict, analysis::Verdict::kNoSignificantDifference);
  EXPECT_GE(n->p_values_adjusted[1], n->results[1].mann_whitney.p_value) << "adjusted p is never smaller";

  AbDefinition unknown = pair;
  unknown.sides[0].run = "nope";
  auto refused = evaluate_abtest(sources(), unknown, 10 * kS);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().field(), "a.run");
}

TEST_F(ServiceAnswersTest, AReportSummarizesGaugesOverGpusAndLatencyPerModel) {
  gauge("gpu_utilization_ratio", {{"gpu", "0"}}, {{1 * kS, 0.1}, {2 * kS, 0.3}});
  gauge("gpu_utilization_ratio", {{"gpu", "1"}}, {{1 * kS, 0.5}, {2 * kS, 0.7}});
  std::vector<Event> batch;
  for (int i = 1; i <= 20; ++i) batch.push_back(request("llm", i * 100 * kMs, 10.0 * i));
  testing::commit(*writer_, batch);
  const Sources& s = sources();
  AnalysisService service(s);
  AnalysisQuery q;
  q.window = {0, 10 * kS, false};
  q.now = 10 * kS;
  q.slo.latency_ms = 100;
  auto doc = service.analyze(q);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto figures = report_figures(s, *doc, q.scope, {0, 10 * kS});
  ASSERT_TRUE(figures.ok()) << figures.status().message();
  const SummaryFigure& util = figures->summary.front();
  EXPECT_STREQ(util.key, "gpu_utilization");
  ASSERT_TRUE(util.figures);
  EXPECT_NEAR(util.figures->avg, 0.4, 1e-9) << "the mean of the GPUs' means, 0.2 and 0.6";
  EXPECT_NEAR(util.figures->peak, 0.7, 1e-9);
  EXPECT_EQ(util.figures->series.size(), 2u);
  const auto bandwidth = std::find_if(figures->summary.begin(), figures->summary.end(),
                                      [](const SummaryFigure& f) { return std::string(f.key) == "memory_bandwidth"; });
  ASSERT_NE(bandwidth, figures->summary.end());
  EXPECT_FALSE(bandwidth->figures) << "no samples: no figure, not zero";
  ASSERT_EQ(figures->latency.size(), 1u);
  const LatencyFigures& l = figures->latency[0];
  EXPECT_EQ(l.model, "llm");
  EXPECT_EQ(l.moments.n, 20u);
  ASSERT_EQ(l.percentiles.size(), std::size(kReportQuantiles));
  EXPECT_NEAR(l.percentiles[0], 100, 1e-9) << "p50 of 10..200 ms, nearest rank";
  ASSERT_TRUE(l.sla);
  EXPECT_EQ(l.sla->violations, 10u);
  EXPECT_FALSE(l.warnings.empty()) << "20 requests back no p99";
  EXPECT_EQ(figures->charts.size(), 2u) << "one chart series per GPU";
}

TEST_F(ServiceAnswersTest, AModelsRatesAreOverTheSpanItServedAndOneModelCanBeAskedFor) {
  testing::commit(*writer_, {request("m", 50 * kS, 5), request("m", 60 * kS, 7), request("other", 70 * kS, 9)});
  auto serving = models_serving(sources(), {0, 100 * kS, false}, {}, {}, true, 100 * kS, {"m", ""});
  ASSERT_TRUE(serving.ok()) << serving.status().message();
  ASSERT_EQ(serving->reported.size(), 1u) << "model m alone";
  const ModelServing& m = serving->reported[0];
  EXPECT_NEAR(m.span_s, 50, 1e-9) << "from its first request to the window's end";
  ASSERT_TRUE(m.requests_per_second);
  EXPECT_NEAR(*m.requests_per_second, 2.0 / 50, 1e-12);
  ASSERT_TRUE(m.latency);
  EXPECT_EQ(m.latency->requests, 2u);
  EXPECT_TRUE(serving->scraped.empty());
  auto both = models_serving(sources(), {0, 100 * kS, false}, {}, {}, false, 100 * kS);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->reported.size(), 2u);
}

TEST_F(ServiceAnswersTest, OperatorsAreSummarizedPerModelAndNarrowedByProvider) {
  std::vector<Event> batch;
  for (int i = 0; i < 10; ++i) {
    OperatorEvent op;
    op.op_type = "MatMul";
    op.name = "mm" + std::to_string(i % 2);
    op.provider = i < 8 ? "CUDAExecutionProvider" : "CPUExecutionProvider";
    op.duration_ms = 1 + i;
    op.model = "bert";
    op.ts_ns = (i + 1) * kS;
    batch.push_back(op);
  }
  testing::commit(*writer_, batch);
  auto all = operators(sources(), {}, {0, 20 * kS}, "", "", {50, 99}, analysis::PercentileConvention::kNearestRank);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->models.size(), 1u);
  EXPECT_EQ(all->models[0].model, "bert");
  ASSERT_FALSE(all->by_type.empty());
  EXPECT_EQ(all->by_type[0].count, 10u);
  auto cpu = operators(sources(), {}, {0, 20 * kS}, "", "CPUExecutionProvider", {50}, analysis::PercentileConvention::kNearestRank);
  ASSERT_TRUE(cpu.ok());
  ASSERT_FALSE(cpu->by_type.empty());
  EXPECT_EQ(cpu->by_type[0].count, 2u) << "the provider narrows the rows";
}

}  // namespace
}  // namespace perfscope::service
