// Percentiles and A/B tests over HTTP against the real server and its database.
#include <gtest/gtest.h>

#include <random>

#include "engine/base/clock.hpp"
#include "support/live_server.hpp"

namespace perfscope::server {
namespace {

using namespace perfscope::testing;

class AnalysisApiTest : public ServerTest {
 protected:
  Reply post(const std::string& path, const std::string& body, const std::string& type) {
    return request(http::verb::post, path, {{"Content-Type", type}}, body);
  }
  // Kernel executions with the given durations (ms), one per millisecond from t = 1 s, in
  // requests small enough for the fixture's 4 KiB body limit.
  void kernels(const std::string& name, const std::string& variant, const std::vector<double>& ms) {
    std::string body;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      if (i % 20 == 0 && !body.empty()) {
        ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
        body.clear();
      }
      long long start = 1'000'000'000LL + static_cast<long long>(i) * 1'000'000;
      body += R"({"type":"kernel","name":")" + name + R"(","variant":")" + variant + R"(","start_ns":)" +
              std::to_string(start) + R"(,"end_ns":)" + std::to_string(start + std::llround(ms[i] * 1e6)) + "}\n";
    }
    ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
  }
};

TEST_F(AnalysisApiTest, PercentilesOfKernelsWithBothConventionsAndAnSla) {
  kernels("gemm", "", {7, 1, 10, 3, 5, 2, 9, 4, 8, 6});
  json r = get("/api/v1/percentiles?kernel=gemm&q=50,90,99&sla_ms=8").body_json();
  EXPECT_EQ(r["count"], 10);
  EXPECT_EQ(r["method"], "exact");
  EXPECT_EQ(r["convention"], "nearest_rank");
  EXPECT_EQ(r["unit"], "ms");
  EXPECT_DOUBLE_EQ(r["percentiles"]["p50"].get<double>(), 5);
  EXPECT_DOUBLE_EQ(r["percentiles"]["p90"].get<double>(), 9);
  EXPECT_DOUBLE_EQ(r["percentiles"]["p99"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(r["mean"].get<double>(), 5.5);
  EXPECT_EQ(r["std_kind"], "sample");
  EXPECT_NEAR(r["std"].get<double>(), 3.0276503540974917, 1e-9);
  EXPECT_EQ(r["sla"]["violations"], 2);
  EXPECT_DOUBLE_EQ(r["sla"]["compliance_rate"].get<double>(), 0.8);
  // 10 samples: both tail percentiles get a warning.
  ASSERT_EQ(r["warnings"].size(), 2u);
  EXPECT_NE(r["warnings"][1].get<std::string>().find("662"), std::string::npos);

  json lin = get("/api/v1/percentiles?kernel=gemm&q=50,90,99&method=linear").body_json();
  EXPECT_NEAR(lin["percentiles"]["p50"].get<double>(), 5.5, 1e-9);
  EXPECT_NEAR(lin["percentiles"]["p90"].get<double>(), 9.1, 1e-9);
  EXPECT_NEAR(lin["percentiles"]["p99"].get<double>(), 9.91, 1e-9);
  json defaults = get("/api/v1/percentiles?kernel=gemm").body_json();
  for (const char* key : {"p50", "p90", "p95", "p99", "p99.9"}) EXPECT_TRUE(defaults["percentiles"].contains(key)) << key;

  json none = get("/api/v1/percentiles?kernel=missing").body_json();
  EXPECT_EQ(none["count"], 0);
  EXPECT_TRUE(none["percentiles"]["p50"].is_null());
  EXPECT_EQ(none["warnings"][0], "no samples in the window");
}

TEST_F(AnalysisApiTest, PercentilesOfInferenceFieldsAndTpot) {
  std::string body;
  // TPOT = (latency − ttft) / (output_tokens − 1); the 1-token request is left out.
  body += R"({"type":"inference","model":"llm","latency_ms":110,"ttft_ms":10,"output_tokens":11,"ts_ns":1000})" "\n";
  body += R"({"type":"inference","model":"llm","latency_ms":50,"ttft_ms":20,"output_tokens":4,"ts_ns":2000})" "\n";
  body += R"({"type":"inference","model":"llm","latency_ms":30,"ttft_ms":30,"output_tokens":1,"ts_ns":3000})" "\n";
  ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
  json tpot = get("/api/v1/percentiles?model=llm&field=tpot_ms&q=50,100&method=linear").body_json();
  EXPECT_EQ(tpot["count"], 2);
  EXPECT_NEAR(tpot["percentiles"]["p100"].get<double>(), 10, 1e-9);
  EXPECT_NEAR(tpot["percentiles"]["p50"].get<double>(), 10, 1e-9);
  json ttft = get("/api/v1/percentiles?model=llm&field=ttft_ms&q=50").body_json();
  EXPECT_EQ(ttft["count"], 3);
  EXPECT_DOUBLE_EQ(ttft["percentiles"]["p50"].get<double>(), 20);
  EXPECT_EQ(get("/api/v1/percentiles?model=llm").body_json()["count"], 3);
}

TEST_F(AnalysisApiTest, PercentilesOverTimeSliceTheWindow) {
  // Six seconds of requests, slower in the second half; TTFT over 2 s slices against an SLO.
  for (int batch = 0; batch < 6; ++batch) {
    std::string body;
    for (int i = batch * 10; i < batch * 10 + 10; ++i) {
      const long long ts = 1'000'000'000LL + i * 100'000'000LL;
      const int ttft = i < 30 ? 10 + i % 5 : 40 + i % 5;
      body += R"({"type":"inference","model":"llm","latency_ms":100,"ttft_ms":)" + std::to_string(ttft) +
              R"(,"output_tokens":8,"ts_ns":)" + std::to_string(ts) + "}\n";
    }
    Reply posted = post("/api/v1/events", body, "application/x-ndjson");
    ASSERT_EQ(posted.status, 200u) << posted.body;
  }
  json r = get("/api/v1/percentiles?model=llm&field=ttft_ms&q=50,99&from=1000000000&to=6999999999&step=2s&sla_ms=30")
               .body_json();
  EXPECT_EQ(r["count"], 60);
  EXPECT_EQ(r["step_ns"], 2'000'000'000LL);
  const json& slices = r["over_time"];
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0]["from_ns"], 1'000'000'000LL);
  EXPECT_EQ(slices[0]["to_ns"], 2'999'999'999LL);
  EXPECT_EQ(slices[2]["to_ns"], 6'999'999'999LL);
  EXPECT_EQ(slices[0]["count"], 20);
  EXPECT_EQ(slices[1]["count"], 20);
  EXPECT_EQ(slices[2]["count"], 20);
  // Nearest rank of 10..14 repeated: p50 12; the last slice is all over the SLO.
  EXPECT_DOUBLE_EQ(slices[0]["percentiles"]["p50"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(slices[2]["percentiles"]["p50"].get<double>(), 42);
  EXPECT_DOUBLE_EQ(slices[0]["sla_compliance_rate"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(slices[1]["sla_compliance_rate"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(slices[2]["sla_compliance_rate"].get<double>(), 0.0);
  // An empty slice says so with nulls.
  json empty = get("/api/v1/percentiles?model=llm&field=ttft_ms&from=7000000000&to=8999999999&step=1s").body_json();
  ASSERT_EQ(empty["over_time"].size(), 2u);
  EXPECT_EQ(empty["over_time"][0]["count"], 0);
  EXPECT_TRUE(empty["over_time"][0]["percentiles"]["p50"].is_null());
  // Bad steps name the field.
  for (const char* q : {"step=0s", "step=abc", "step=1ns"}) {
    Reply bad = get(std::string("/api/v1/percentiles?model=llm&from=0&to=8000000000&") + q);
    EXPECT_EQ(bad.status, 400u) << q;
    EXPECT_EQ(bad.body_json()["error"]["field"], "step") << q;
  }
}

TEST_F(AnalysisApiTest, BadPercentileQueriesNameTheirField) {
  auto field = [&](const std::string& q) {
    Reply r = get("/api/v1/percentiles?" + q);
    EXPECT_EQ(r.status, 400u) << q;
    return r.body_json()["error"]["field"].get<std::string>();
  };
  EXPECT_EQ(field("q=50"), "kernel");
  EXPECT_EQ(field("kernel=a&model=b"), "kernel");
  EXPECT_EQ(field("kernel=a&q=101"), "q");
  EXPECT_EQ(field("kernel=a&q=5x"), "q");
  EXPECT_EQ(field("kernel=a&method=median"), "method");
  EXPECT_EQ(field("kernel=a&sla_ms=-1"), "sla_ms");
  EXPECT_EQ(field("kernel=a&field=ttft_ms"), "field");
  EXPECT_EQ(field("model=a&field=tokens"), "field");
  EXPECT_EQ(field("kernel=a&window=forever"), "window");
  EXPECT_EQ(field("series=x&field=ttft_ms"), "field");
  EXPECT_EQ(field("command_queue=q&series=x"), "kernel");
}

// One set of selector rules behind the query string and the A/B definitions: what one form
// takes the other takes (command queues and itl_ms were once the query's alone), and a field
// that does not apply is refused in both instead of ignored in one.
TEST_F(AnalysisApiTest, QueriesAndAbTestsReadSelectorsByOneRule) {
  std::string body;
  for (int i = 0; i < 40; ++i) {
    const long long enq = 1'000'000'000LL + i * 10'000'000LL;
    const long long dur = (i % 2 ? 2'000'000 : 3'000'000) + i * 1000;
    body += R"({"type":"command_buffer","id":"cb)" + std::to_string(i) + R"(","queue":")" + (i % 2 ? "fast" : "slow") +
            R"(","enqueue_ns":)" + std::to_string(enq) + R"(,"submit_ns":)" + std::to_string(enq + 1000) +
            R"(,"start_ns":)" + std::to_string(enq + 2000) + R"(,"end_ns":)" + std::to_string(enq + 2000 + dur) + "}\n";
    if (i % 10 == 9) {
      ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
      body.clear();
    }
  }
  EXPECT_EQ(get("/api/v1/percentiles?command_queue=slow").body_json()["count"], 20);
  Reply queues = post("/api/v1/abtests", R"({"name":"queues","a":{"command_queue":"slow"},"b":{"command_queue":"fast"}})",
                      "application/json");
  ASSERT_EQ(queues.status, 201u) << queues.body;
  json r = get(queues.body_json()["url"].get<std::string>()).body_json();
  EXPECT_EQ(r["a"]["n"], 20);
  EXPECT_EQ(r["b"]["n"], 20);
  EXPECT_EQ(r["verdict"], "b_faster");
  // Tags narrow model and operator sides as they do kernel sides, and stay with the stored test.
  Reply tagged = post("/api/v1/abtests",
                      R"({"name":"tagged","a":{"model":"m","tags":{"pool":"a"}},"b":{"operator":"Conv","tags":{"pool":"b"}}})",
                      "application/json");
  ASSERT_EQ(tagged.status, 201u) << tagged.body;
  json stored = get(tagged.body_json()["url"].get<std::string>()).body_json();
  EXPECT_EQ(stored["definition"]["a"]["tags"], json({{"pool", "a"}})) << stored;
  EXPECT_EQ(stored["definition"]["b"]["tags"], json({{"pool", "b"}})) << stored;
  Reply itl = post("/api/v1/abtests", R"({"name":"itl","a":{"model":"m","field":"itl_ms"},"b":{"model":"n","field":"itl_ms"}})",
                   "application/json");
  EXPECT_EQ(itl.status, 201u) << itl.body;

  auto field = [&](const std::string& definition) {
    Reply refused = post("/api/v1/abtests", definition, "application/json");
    EXPECT_EQ(refused.status, 400u) << definition;
    return refused.body_json()["error"].value("field", std::string());
  };
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k","field":"ttft_ms"},"b":{"kernel":"k"}})"), "a.field");
  EXPECT_EQ(field(R"({"name":"x","a":{"command_queue":"q","run":"r"},"b":{"command_queue":"q"}})"), "a.run");
  EXPECT_EQ(field(R"({"name":"x","a":{"series":"s"},"b":{"series":"t"}})"), "a.series");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"},"b":{"command_queue":"q","series":"s"}})"), "b");
}

TEST_F(AnalysisApiTest, AbTestIsStoredAndEvaluatedOnCurrentData) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> slow(1.0, 0.05), fast(0.8, 0.05);
  std::vector<double> a(300), b(300);
  for (double& x : a) x = slow(rng);
  for (double& x : b) x = fast(rng);
  kernels("gemm", "naive", a);
  kernels("gemm", "tiled", b);

  Reply created = post("/api/v1/abtests",
                       R"({"name":"tiling","a":{"kernel":"gemm","variant":"naive"},"b":{"kernel":"gemm","variant":"tiled"},"seed":7})",
                       "application/json");
  ASSERT_EQ(created.status, 201u) << created.body;
  const std::string url = created.body_json()["url"];
  EXPECT_EQ(created.headers["Location"], url);

  json r = get(url).body_json();
  EXPECT_EQ(r["verdict"], "b_faster");
  EXPECT_EQ(r["a"]["n"], 300);
  EXPECT_EQ(r["b"]["n"], 300);
  EXPECT_GT(r["speedup"].get<double>(), 1.2);
  EXPECT_LT(r["speedup_ci95"][0].get<double>(), r["speedup"].get<double>());
  EXPECT_GT(r["speedup_ci95"][1].get<double>(), r["speedup"].get<double>());
  EXPECT_EQ(r["mann_whitney"]["method"], "asymptotic");
  EXPECT_LT(r["mann_whitney"]["p_value"].get<double>(), 1e-6);
  EXPECT_LT(r["hodges_lehmann_shift_ms"].get<double>(), -0.1);
  EXPECT_FALSE(r["recommendation"].get<std::string>().empty());
  // Seeded: the same interval every time.
  EXPECT_EQ(get(url).body_json()["speedup_ci95"], r["speedup_ci95"]);

  json list = get("/api/v1/abtests").body_json();
  ASSERT_EQ(list["abtests"].size(), 1u);
  EXPECT_EQ(list["abtests"][0]["name"], "tiling");

  // A/B/n against the first variant, corrected together.
  Reply multi = post("/api/v1/abtests",
                     R"({"name":"n","variants":[{"kernel":"gemm","variant":"naive"},{"kernel":"gemm","variant":"tiled"},
                         {"kernel":"gemm","variant":"naive"}]})",
                     "application/json");
  ASSERT_EQ(multi.status, 201u) << multi.body;
  json m = get(multi.body_json()["url"].get<std::string>()).body_json();
  EXPECT_EQ(m["correction"], "benjamini_hochberg");
  ASSERT_EQ(m["comparisons"].size(), 2u);
  EXPECT_EQ(m["comparisons"][0]["verdict"], "b_faster");
  EXPECT_EQ(m["comparisons"][1]["verdict"], "no_significant_difference");
  EXPECT_GE(m["comparisons"][0]["p_value_adjusted"].get<double>(), m["comparisons"][0]["mann_whitney"]["p_value"].get<double>());

  // Too few samples to ever be significant.
  kernels("tiny", "x", {1, 2, 3});
  kernels("tiny", "y", {4, 5, 6});
  Reply tiny = post("/api/v1/abtests", R"({"name":"t","a":{"kernel":"tiny","variant":"x"},"b":{"kernel":"tiny","variant":"y"}})",
                    "application/json");
  ASSERT_EQ(tiny.status, 201u);
  json t = get(tiny.body_json()["url"].get<std::string>()).body_json();
  EXPECT_EQ(t["verdict"], "insufficient_samples");
  EXPECT_EQ(t["mann_whitney"]["method"], "exact");
  EXPECT_NEAR(t["mann_whitney"]["p_value"].get<double>(), 0.1, 1e-12);
}

TEST_F(AnalysisApiTest, BadAbTestDefinitionsAreRefusedAndNothingIsStored) {
  auto field = [&](const std::string& body) {
    Reply r = post("/api/v1/abtests", body, "application/json");
    EXPECT_EQ(r.status, 400u) << body;
    return r.body_json()["error"].value("field", std::string());
  };
  EXPECT_EQ(field(R"({"a":{"kernel":"k"},"b":{"kernel":"k"}})"), "name");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"}})"), "b");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"},"b":{"kernel":"k","model":"m"}})"), "b");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":""},"b":{"kernel":"k"}})"), "a.kernel");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"},"b":{"model":"m","field":"tokens"}})"), "b.field");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"},"b":{"kernel":"k"},"alpha":1.5})"), "alpha");
  EXPECT_EQ(field(R"({"name":"x","a":{"kernel":"k"},"b":{"kernel":"k"},"window":"soon"})"), "window");
  EXPECT_EQ(field(R"({"name":"x","variants":[{"kernel":"k"}]})"), "variants");
  EXPECT_EQ(field(R"({"name":"x","variants":[{"kernel":"k"},{"kernel":"k","tags":{"run":1}}]})"), "variants[1].tags.run");
  EXPECT_EQ(post("/api/v1/abtests", "{", "application/json").status, 400u);
  EXPECT_EQ(post("/api/v1/abtests", "{}", "text/plain").status, 415u);
  EXPECT_EQ(request(http::verb::delete_, "/api/v1/abtests").status, 405u);
  EXPECT_EQ(get("/api/v1/abtests/99").status, 404u);
  EXPECT_EQ(get("/api/v1/abtests/x").status, 404u);
  EXPECT_EQ(get("/api/v1/abtests").body_json()["abtests"].size(), 0u);
}

TEST_F(AnalysisApiTest, AnalysisDocumentCoversTheWindow) {
  // 200 tiny kernels 50 µs apart with launch calls longer than the kernels: a launch-bound
  // timeline. A slow model against a 100 ms SLA. Times are recent so that window=1h holds them.
  const long long base = perfscope::now_ns() - 10'000'000'000LL;
  std::string body;
  for (int i = 0; i < 200; ++i) {
    long long s = base + i * 50'000LL;
    body += R"({"type":"kernel","name":"tiny","stream":"1","start_ns":)" + std::to_string(s) + R"(,"end_ns":)" +
            std::to_string(s + 2'000) + R"(,"launch_start_ns":)" + std::to_string(s - 9'000) +
            R"(,"launch_end_ns":)" + std::to_string(s - 1'000) + "}\n";
    if (body.size() > 3500) {
      ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
      body.clear();
    }
  }
  for (int i = 0; i < 20; ++i) {
    body += R"({"type":"inference","model":"slow","latency_ms":)" + std::to_string(90 + i) + R"(,"ts_ns":)" +
            std::to_string(base + i * 1'000'000) + "}\n";
  }
  ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);

  json a = get("/api/v1/analysis?window=1h&sla_ms=100").body_json();
  EXPECT_EQ(a["schema_version"], 1);
  ASSERT_GE(a["timeline"].size(), 2u);
  const json& dev = a["timeline"][0];
  EXPECT_EQ(dev["kernel_count"], 200);
  EXPECT_TRUE(dev["stream"].is_null());
  EXPECT_NEAR(dev["busy_ratio"].get<double>(), 200 * 2'000.0 / (199 * 50'000.0 + 2'000), 1e-9);
  EXPECT_DOUBLE_EQ(dev["short_kernel_share"].get<double>(), 1.0);
  EXPECT_EQ(a["timeline"][1]["stream"], "1");
  ASSERT_EQ(a["inference"].size(), 1u);
  EXPECT_DOUBLE_EQ(a["inference"][0]["latency_ms"]["p99"].get<double>(), 109);
  EXPECT_DOUBLE_EQ(a["inference"][0]["goodput_ratio"].get<double>(), 11 / 20.0);
  EXPECT_EQ(a["kernels"]["top"][0]["name"], "tiny");
  std::map<std::string, json> findings;
  for (const json& f : a["bottlenecks"]) findings[f["id"]] = f;
  EXPECT_EQ(findings["launch_overhead_bound"]["status"], "fired");
  EXPECT_EQ(findings["launch_overhead_bound"]["severity"], "critical");
  EXPECT_EQ(findings["sla_at_risk"]["status"], "fired");
  EXPECT_EQ(findings["long_kernel_execution"]["status"], "ok");
  // No GPU collector in this test: the GPU rules say so instead of guessing.
  EXPECT_EQ(findings["thermal_throttling"]["status"], "not_evaluated");
  EXPECT_NE(findings["thermal_throttling"]["reason"].get<std::string>().find("gpu_thermal_throttle_seconds"), std::string::npos);
  EXPECT_TRUE(a["methods"].contains("timeline"));

  EXPECT_EQ(get("/api/v1/analysis?sla_ms=0").body_json()["error"]["field"], "sla_ms");
  EXPECT_EQ(get("/api/v1/analysis?window=x").body_json()["error"]["field"], "window");
  EXPECT_EQ(get("/api/v1/analysis?leak_age_s=0").body_json()["error"]["field"], "leak_age_s");
}

TEST_F(AnalysisApiTest, RegressionsFindAPlantedStepPerInterval) {
  // 60 one-second intervals of 5 executions each; from interval 30 the kernel is 20% slower.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(0, 0.01);
  std::string body;
  for (int interval = 0; interval < 60; ++interval) {
    for (int i = 0; i < 5; ++i) {
      const double ms = (interval < 30 ? 1.0 : 1.2) * (1 + noise(rng));
      const long long start = 1'000'000'000'000LL + interval * 1'000'000'000LL + i * 100'000'000LL;
      body += R"({"type":"kernel","name":"gemm","start_ns":)" + std::to_string(start) + R"(,"end_ns":)" +
              std::to_string(start + std::llround(ms * 1e6)) + "}\n";
      if (body.size() > 3500) {
        ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
        body.clear();
      }
    }
  }
  ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
  json r = get("/api/v1/regressions?window=all&interval=1s").body_json();
  EXPECT_EQ(r["subjects"], 1);
  ASSERT_GE(r["regressions"].size(), 1u);
  const json& p50 = r["regressions"][0];
  EXPECT_EQ(p50["kernel"], "gemm");
  EXPECT_EQ(p50["statistic"], "p50");
  EXPECT_EQ(p50["direction"], "regression");
  EXPECT_EQ(p50["at_ns"], 1'000'000'000'000LL + 30 * 1'000'000'000LL);
  EXPECT_NEAR(p50["change"].get<double>(), 0.2, 0.03);
  // Asked for one subject, the others are not examined.
  EXPECT_EQ(get("/api/v1/regressions?window=all&interval=1s&kernel=gemm").body_json()["regressions"], r["regressions"]);
  json other = get("/api/v1/regressions?window=all&interval=1s&kernel=other").body_json();
  EXPECT_EQ(other["subjects"], 0);
  EXPECT_EQ(get("/api/v1/regressions?window=all&interval=1s&model=m").body_json()["subjects"], 0);
  EXPECT_EQ(get("/api/v1/regressions?interval=0s").status, 400u);
  EXPECT_EQ(get("/api/v1/regressions?min_change=-1").body_json()["error"]["field"], "min_change");
  json a = get("/api/v1/anomalies").body_json();
  EXPECT_TRUE(a["anomalies"].is_array());
}

TEST_F(AnalysisApiTest, ReportAndTraceRefuseBadParametersByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"/api/v1/report?format=pdf", "format"},
      {"/api/v1/report?format=csv&table=users", "table"},
      {"/api/v1/report?format=csv&table=kernels&compress=zip", "compress"},
      {"/api/v1/report?format=html&auto_refresh=yes", "auto_refresh"},
      {"/api/v1/report?format=html&auto_refresh=true&refresh_interval_ms=5", "refresh_interval_ms"},
      {"/api/v1/report?window=fortnight", "window"},
      {"/api/v1/trace?max_events=-1", "max_events"},
      {"/api/v1/timeline?buckets=0", "buckets"},
      {"/api/v1/timeline?max_raw=lots", "max_raw"},
      {"/api/v1/timeline?from=2000&to=1000", "from"},
      {"/api/v1/timeline?from=2000&to=2000", "to"},
  };
  for (const auto& [path, field] : cases) {
    Reply r = get(path);
    EXPECT_EQ(r.status, 400u) << path;
    EXPECT_EQ(r.body_json()["error"]["field"], field) << path << ": " << r.body;
  }
}

// The timeline at the level of detail asked: raw executions with launch calls and gap causes
// relative to an exact origin, or buckets when the window holds more than max_raw.
TEST_F(AnalysisApiTest, TimelineIsRawWhenFewAndBucketedWhenMany) {
  const long long t0 = 1'700'000'000'123'456'789LL;  // beyond a double's exact integers
  auto kernel = [&](const char* name, const char* stream, long long start, long long end, long long call) {
    return R"({"type":"kernel","name":")" + std::string(name) + R"(","device":"0","stream":")" + stream +
           R"(","start_ns":)" + std::to_string(t0 + start) + R"(,"end_ns":)" + std::to_string(t0 + end) +
           R"(,"launch_start_ns":)" + std::to_string(t0 + call) + R"(,"launch_end_ns":)" +
           std::to_string(t0 + call + 3000) + "}\n";
  };
  std::string body = kernel("gemm", "7", 0, 10'000, -5000) + kernel("norm", "7", 10'000, 12'000, 1000) +
                     kernel("gemm", "7", 50'000, 60'000, 40'000) + kernel("copy", "9", 5000, 8000, 0);
  ASSERT_EQ(post("/api/v1/events", body, "application/x-ndjson").status, 200u);
  const std::string window = "from=" + std::to_string(t0) + "&to=" + std::to_string(t0 + 100'000);
  json raw = get("/api/v1/timeline?" + window).body_json();
  EXPECT_EQ(raw["mode"], "raw");
  EXPECT_EQ(raw["origin"], std::to_string(t0));
  EXPECT_EQ(raw["events"], 4);
  ASSERT_EQ(raw["tracks"].size(), 2u);
  const json& s7 = raw["tracks"][0];
  EXPECT_EQ(s7["stream"], "7");
  EXPECT_EQ(s7["start"], json({0, 10'000, 50'000}));
  EXPECT_EQ(s7["end"], json({10'000, 12'000, 60'000}));
  EXPECT_EQ(s7["launch_start"], json({-5000, 1000, 40'000}));
  const auto names = raw["names"].get<std::vector<std::string>>();
  EXPECT_EQ(names[s7["name"][1].get<std::size_t>()], "norm");
  // 12,000 → 50,000: the launch call began at 40,000, after the GPU went idle.
  EXPECT_EQ(raw["gap_causes"][s7["gap"][2].get<std::size_t>()], "host_wait");
  EXPECT_EQ(s7["gap_ns"][2], 38'000);
  EXPECT_EQ(s7["host_wait_ns"], 38'000);
  EXPECT_EQ(s7["busy_ns"], 22'000);

  json agg = get("/api/v1/timeline?" + window + "&max_raw=2&buckets=10").body_json();
  EXPECT_EQ(agg["mode"], "aggregate");
  EXPECT_EQ(agg["bucket_ns"], 10'000);
  const json& a7 = agg["tracks"][0];
  EXPECT_EQ(a7["busy"][0], 10'000);
  EXPECT_EQ(a7["busy"][1], 2000);
  EXPECT_EQ(a7["count"][5], 1);
  EXPECT_EQ(names[a7["top"][5].get<std::size_t>()], "gemm");
  EXPECT_EQ(a7["host_wait"][2], 10'000);
  EXPECT_EQ(a7["top"][8], -1);
  // A device picked: only its tracks; nothing there is an empty answer, not an error.
  EXPECT_EQ(get("/api/v1/timeline?" + window + "&device=3").body_json()["tracks"].size(), 0u);
}

TEST_F(AnalysisApiTest, LiveHtmlReportRefreshesItselfWhenAsked) {
  kernels("gemm", "", {1, 2, 3});
  Reply live = get("/api/v1/report?format=html&auto_refresh=true&refresh_interval_ms=2000");
  ASSERT_EQ(live.status, 200u);
  EXPECT_NE(live.body.find("<meta http-equiv=\"refresh\" content=\"2\">"), std::string::npos);
  Reply still = get("/api/v1/report?format=html");
  EXPECT_EQ(still.body.find("http-equiv=\"refresh\""), std::string::npos);
  // Nothing is fetched from elsewhere: no src= or href= to another document.
  EXPECT_EQ(still.body.find("<script src="), std::string::npos);
  EXPECT_EQ(still.body.find("<link "), std::string::npos);
}

}  // namespace
}  // namespace perfscope::server
